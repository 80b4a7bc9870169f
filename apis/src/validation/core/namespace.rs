//! Namespaces: their finalizer names, with upstream's (v1.33) messages
//! (`ValidateNamespace[Update]`).

use serde_json::Value;

use crate::validation::values::{items, str_of};
use crate::validation::{qualified_name_problems, FieldError};

/// `ValidateNamespace`: the finalizer names (qualified, or one of the standard ones).
/// Upstream ignores spec changes in a plain update (only `/finalize` may change them), so
/// unchanged finalizers are not checked again.
pub fn namespace(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let finalizers = &obj["spec"]["finalizers"];
    if old.is_some_and(|o| &o["spec"]["finalizers"] == finalizers) {
        return errors;
    }
    for f in items(finalizers) {
        let name = str_of(f);
        for p in qualified_name_problems(name) {
            errors.push(FieldError::invalid("spec.finalizers", f, &p));
        }
        if !name.contains('/') && !matches!(name, "kubernetes" | "orphan" | "foregroundDeletion") {
            errors.push(FieldError::invalid(
                "spec.finalizers",
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    #[test]
    fn namespace_finalizers() {
        let ns = |f: Value| json!({"metadata": {"name": "dev"}, "spec": {"finalizers": f}});
        assert!(namespace(&ns(json!(["kubernetes", "example.com/cleanup"])), None).is_empty());
        assert_eq!(
            lines(namespace(&ns(json!(["cleanup", "a/b/c"])), None)),
            [
                "spec.finalizers: Invalid value: \"cleanup\": name is neither a standard finalizer name nor is it fully qualified",
                "spec.finalizers: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            ]
        );
        let bad = ns(json!(["cleanup"]));
        assert!(namespace(&bad, Some(&bad)).is_empty());
    }
}
