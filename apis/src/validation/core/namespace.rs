//! Namespaces: their finalizer names, with upstream's (v1.33) messages
//! (`ValidateNamespace[Update]`).

use serde_json::Value;

use crate::validation::values::{items, str_of};
use crate::validation::{qualified_name_problems, FieldError};

/// `ValidateNamespace` and `ValidateNamespaceFinalizeUpdate`: the finalizer names
/// (qualified, or one of the standard ones). Upstream ignores spec changes in a plain update
/// (only `/finalize` may change them), so unchanged finalizers are not checked again, and
/// changed ones are a `/finalize` write's, whose errors name each finalizer's index
/// (`spec.finalizers[1]`; a create's name the list).
pub fn namespace(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let finalizers = &obj["spec"]["finalizers"];
    if old.is_some_and(|o| &o["spec"]["finalizers"] == finalizers) {
        return errors;
    }
    for (i, f) in items(finalizers).iter().enumerate() {
        let name = str_of(f);
        let path = match old {
            Some(_) => format!("spec.finalizers[{i}]"),
            None => "spec.finalizers".to_string(),
        };
        for p in qualified_name_problems(name) {
            errors.push(FieldError::invalid(&path, f, &p));
        }
        if !name.contains('/') && !matches!(name, "kubernetes" | "orphan" | "foregroundDeletion") {
            errors.push(FieldError::invalid(
                &path,
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errors
}

/// `ValidateNamespaceStatusUpdate`: the phase says whether the namespace is being deleted.
pub fn namespace_status(obj: &Value) -> Vec<FieldError> {
    let phase = &obj["status"]["phase"];
    let deleting = !obj["metadata"]["deletionTimestamp"].is_null();
    match (deleting, str_of(phase)) {
        (false, "Active") | (true, "Terminating") => Vec::new(),
        (false, _) => vec![FieldError::invalid(
            "status.Phase",
            phase,
            "may only be 'Active' if `deletionTimestamp` is empty",
        )],
        (true, _) => vec![FieldError::invalid(
            "status.Phase",
            phase,
            "may only be 'Terminating' if `deletionTimestamp` is not empty",
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    #[test]
    fn namespace_status_phases() {
        let ns = |deleted: bool, phase: &str| {
            let mut ns = json!({"metadata": {"name": "dev"}, "status": {"phase": phase}});
            if deleted {
                ns["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            ns
        };
        assert!(namespace_status(&ns(false, "Active")).is_empty());
        assert!(namespace_status(&ns(true, "Terminating")).is_empty());
        assert_eq!(
            lines(namespace_status(&ns(false, "Terminating"))),
            ["status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"]
        );
        assert_eq!(
            lines(namespace_status(&ns(true, "Active"))),
            ["status.Phase: Invalid value: \"Active\": may only be 'Terminating' if `deletionTimestamp` is not empty"]
        );
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
        // A /finalize write names each finalizer by its index.
        let old = ns(json!(["kubernetes"]));
        assert_eq!(
            lines(namespace(&ns(json!(["kubernetes", "cleanup"])), Some(&old))),
            ["spec.finalizers[1]: Invalid value: \"cleanup\": name is neither a standard finalizer name nor is it fully qualified"]
        );
    }
}
