//! The expressions of admission configurations (webhooks' and policies' match conditions,
//! policies' validations, messages, audit annotations and variables) checked when the
//! configuration is written: the API server installs [`Expressions`] as the
//! [`ExpressionChecker`] of `rkube_apis`' validation, which refuses what upstream's
//! compiler refuses there: a syntax or type error, an undeclared variable, and a result of
//! the wrong type (each variable is `dyn`, so only a result the checker knows is refused).

use rkube_apis::validation::rules::{ExpressionChecker, Returns};

use crate::check::Type;

/// rkube-cel's checker for admission expressions.
pub struct Expressions;

impl ExpressionChecker for Expressions {
    fn problem(&self, expression: &str, variables: &[&str], returns: Returns) -> Option<String> {
        let typed: Vec<crate::check::Variable<'_>> =
            variables.iter().map(|v| (*v, Type::Dyn)).collect();
        let result = match crate::type_check(expression, &typed) {
            Ok(result) => result,
            Err(e) => return Some(format!("compilation failed: {e}")),
        };
        if let Err(e) = crate::compile(expression, variables) {
            return Some(format!("compilation failed: {e}"));
        }
        if !result.is_known() {
            return None;
        }
        let wrong = match returns {
            Returns::Bool => (result != Type::Bool).then_some("must evaluate to bool"),
            Returns::String => (result != Type::String).then_some("must evaluate to string"),
            Returns::StringOrNull => (!matches!(result, Type::String | Type::Null))
                .then_some("must evaluate to one of [string null_type]"),
            Returns::Any => None,
        };
        wrong.map(String::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VARIABLES: [&str; 3] = ["object", "oldObject", "request"];

    #[test]
    fn refuses_what_upstreams_compiler_refuses() {
        let problem = |e: &str, r: Returns| Expressions.problem(e, &VARIABLES, r);
        assert_eq!(problem("object.spec.replicas <= 5", Returns::Bool), None);
        assert_eq!(problem("object.spec.x", Returns::Bool), None, "dyn passes");
        assert_eq!(problem("'replicas: ' + string(object.spec.replicas)", Returns::String), None);
        assert_eq!(problem("1 + 1", Returns::Bool).as_deref(), Some("must evaluate to bool"));
        assert_eq!(problem("true", Returns::String).as_deref(), Some("must evaluate to string"));
        assert_eq!(
            problem("1", Returns::StringOrNull).as_deref(),
            Some("must evaluate to one of [string null_type]")
        );
        assert_eq!(problem("null", Returns::StringOrNull), None);
        assert_eq!(problem("1", Returns::Any), None);
        let syntax = problem("object.spec ==", Returns::Bool).unwrap();
        assert!(syntax.starts_with("compilation failed: ERROR: <input>:1:"), "{syntax}");
        let undeclared = problem("params.max > 1", Returns::Bool).unwrap();
        assert!(undeclared.contains("undeclared reference to 'params'"), "{undeclared}");
    }
}
