//! The `default`s of a CustomResourceDefinition's schema, checked when the definition is
//! written, as apiextensions-apiserver's `ValidateDefaults` checks them: each default must be
//! pruned already (`must not have unknown fields`), hold against the schema it sits in (its
//! errors under `<path>.default`, with kube-openapi's messages naming paths from the default
//! itself: `Invalid value: "boolean":  in body must be of type string: "boolean"`), and pass
//! that schema's `x-kubernetes-validations` rules (on create, and as an update to itself).
//!
//! Defaults are not followed into `additionalProperties` (they are forbidden there). Left
//! out: the ObjectMeta checks of defaults inside an embedded resource's `metadata`,
//! `apiVersion` and `kind` (upstream coerces them into a surrounding object); those are
//! not checked.

use serde_json::Value;

use super::rules;
use super::FieldError;
use crate::gofmt::go_field_value;
use crate::structural::Schema;

/// The problems of the defaults in the `openAPIV3Schema` `schema`, found at field path `at`
/// (e.g. `spec.validation.openAPIV3Schema`). `require_pruned`: a default with fields its
/// schema does not know is refused (upstream lets an update keep one a definition already
/// had).
pub(crate) fn problems(schema: &Value, at: &str, require_pruned: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    walk(schema, at, true, false, require_pruned, &mut errors);
    errors
}

/// Whether any default in `schema` has fields its schema would prune.
pub(crate) fn has_unpruned_default(schema: &Value) -> bool {
    let mut errors = Vec::new();
    walk(schema, "", true, false, true, &mut errors);
    errors.iter().any(|e| e.message.ends_with("must not have unknown fields"))
}

/// One schema node at `at`: its own default, then its items and properties. `embedded`: the
/// node stands for a whole object (the root, or an `x-kubernetes-embedded-resource`), whose
/// `metadata`, `apiVersion` and `kind` are ObjectMeta and TypeMeta (`inside_meta` below).
fn walk(
    s: &Value,
    at: &str,
    root: bool,
    inside_meta: bool,
    require_pruned: bool,
    errors: &mut Vec<FieldError>,
) {
    if !s.is_object() {
        return;
    }
    let embedded = root || s["x-kubernetes-embedded-resource"] == true;
    if let Some(default) = s.get("default").filter(|_| !inside_meta) {
        check(s, default, &format!("{at}.default"), embedded, require_pruned, errors);
    }
    walk(&s["items"], &format!("{at}.items"), false, inside_meta, require_pruned, errors);
    if let Some(properties) = s["properties"].as_object() {
        let mut names: Vec<&String> = properties.keys().collect();
        names.sort();
        for name in names {
            let meta = inside_meta
                || (embedded && matches!(name.as_str(), "metadata" | "apiVersion" | "kind"));
            let child = format!("{at}.properties[{name}]");
            walk(&properties[name], &child, false, meta, require_pruned, errors);
        }
    }
}

/// One default, at field path `at` (`....default`).
fn check(
    s: &Value,
    default: &Value,
    at: &str,
    embedded: bool,
    require_pruned: bool,
    errors: &mut Vec<FieldError>,
) {
    let schema = Schema::new(s);
    if require_pruned {
        let mut pruned = default.clone();
        if !schema.prune_value(&mut pruned, embedded).is_empty() {
            errors.push(FieldError::invalid_shown(
                at,
                &go_field_value(default),
                "must not have unknown fields",
            ));
        }
    }
    let invalid = schema.validate_value(default, at);
    if !invalid.is_empty() {
        errors.extend(invalid);
        return;
    }
    let Some(compiled) = rules::engine().and_then(|engine| engine.compile(s)) else { return };
    let mut failed = compiled.validate(default, Some(default));
    if failed.is_empty() {
        // A rule with `optionalOldSelf` must also let the default in where nothing was.
        failed = compiled.validate(default, None);
    }
    errors.extend(failed.into_iter().map(|mut e| {
        // The rules name the value's own root `<nil>`, as upstream's root field path prints.
        e.field = match e.field.as_str() {
            "" | "<nil>" => at.to_string(),
            relative => format!("{at}.{relative}"),
        };
        e
    }));
}
