//! The seam for CustomResourceDefinition validation rules (`x-kubernetes-validations`,
//! CEL): this crate has no CEL, so the API server installs an engine ([`install`], the
//! `rkube-cel` crate's) that compiles a version's rules once when the definition is served
//! ([`RuleEngine::compile`], kept in the custom resource strategy) and checks a definition's
//! rules when it is written ([`RuleEngine::check`]: compile errors, estimated costs).
//! Without an engine (unit tests of this crate) rules are neither checked nor run. Admission
//! configurations' expressions are checked through a second seam, [`ExpressionChecker`].

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::FieldError;

/// The reserved words of CEL's grammar: no variable is named so, and a property so named
/// is reached as `__{word}__`.
pub const CEL_RESERVED_WORDS: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// What compiles and checks rules.
pub trait RuleEngine: Send + Sync {
    /// The compiled rules of one version's `openAPIV3Schema`; `None` when it has none.
    fn compile(&self, schema: &Value) -> Option<Arc<dyn CompiledRules>>;

    /// What is wrong with the rules of the schema found at field path `at` (e.g.
    /// `spec.validation.openAPIV3Schema`).
    fn check(&self, schema: &Value, at: &str) -> Vec<RuleProblem>;
}

/// One version's rules, compiled.
pub trait CompiledRules: Send + Sync + std::fmt::Debug {
    /// The errors of an object on create (`old` is `None`) or update.
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError>;
}

/// A problem with a definition's rule.
#[derive(Clone, Debug, PartialEq)]
pub enum RuleProblem {
    /// `Invalid value: <the rule, as Go prints it>: <detail>` (a compile error).
    Invalid { field: String, rule: Value, detail: String },
    /// `Forbidden: <detail>` (an estimated cost over the limit).
    Forbidden { field: String, detail: String },
}

static ENGINE: OnceLock<Arc<dyn RuleEngine>> = OnceLock::new();

/// Installs the engine; a second call changes nothing.
pub fn install(engine: Arc<dyn RuleEngine>) {
    let _ = ENGINE.set(engine);
}

/// The installed engine.
pub fn engine() -> Option<&'static dyn RuleEngine> {
    ENGINE.get().map(|e| e.as_ref())
}

/// What an admission expression must evaluate to (upstream's `ReturnTypes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Returns {
    /// Validations and match conditions.
    Bool,
    /// Message expressions.
    String,
    /// Audit annotations' values.
    StringOrNull,
    /// Variables.
    Any,
}

/// What checks the CEL expressions of admission configurations (webhooks' and policies'
/// match conditions, policies' validations, messages, audit annotations and variables) when
/// they are written, as upstream compiles them in their validation.
pub trait ExpressionChecker: Send + Sync {
    /// Upstream's detail when `expression` does not compile in a context declaring
    /// `variables` (`compilation failed: ERROR: <input>:1:5: ...`) or evaluates to a type
    /// `returns` does not take (`must evaluate to bool`); `None` when it is fine.
    fn problem(&self, expression: &str, variables: &[&str], returns: Returns) -> Option<String>;
}

static EXPRESSIONS: OnceLock<Arc<dyn ExpressionChecker>> = OnceLock::new();

/// Installs the expression checker; a second call changes nothing.
pub fn install_expression_checker(checker: Arc<dyn ExpressionChecker>) {
    let _ = EXPRESSIONS.set(checker);
}

/// The installed expression checker (none in this crate's own tests: expressions are then
/// checked for presence only).
pub fn expression_checker() -> Option<&'static dyn ExpressionChecker> {
    EXPRESSIONS.get().map(|c| c.as_ref())
}
