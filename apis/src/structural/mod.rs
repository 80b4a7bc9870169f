//! Structural schemas: a CustomResourceDefinition version's `openAPIV3Schema` as one typed
//! tree ([`Props`]), read once when the definition is loaded, and what the custom resources
//! of that version go through with it, as apiextensions-apiserver v1.33 does:
//!
//! | file | what |
//! |------|------|
//! | `schema.rs` | the model (upstream's `JSONSchemaProps`), also what the definition's own validation checks |
//! | `validate.rs` | validation of an object against the schema, with kube-openapi's messages |
//! | `formats.rs` | the string formats validation checks |
//! | `prune.rs` | dropping the fields the schema does not know, reporting their paths |
//! | `defaults.rs` | filling in the schema's `default`s |
//!
//! Start at [`Schema`]: the model with its regular expressions compiled.

mod defaults;
mod formats;
mod prune;
mod schema;
mod validate;

use std::collections::HashMap;

use regex::Regex;
use serde_json::Value;

pub use schema::{Dependency, Items, OrBool, Props, Rule};

use crate::validation::FieldError;

/// One version's schema, ready for its objects: the model and every `pattern` in it
/// compiled, built once when the definition is loaded.
#[derive(Debug, Clone)]
pub struct Schema {
    root: Props,
    /// `pattern` -> its regular expression; a pattern that does not compile is left out
    /// (the definition's validation refuses it before it is served).
    patterns: HashMap<String, Regex>,
}

impl Schema {
    /// The schema of an `openAPIV3Schema` value; a missing one (`null`) keeps every field.
    pub fn new(openapi: &Value) -> Schema {
        let root = match openapi {
            Value::Object(_) => Props::parse(openapi),
            _ => Props { preserve_unknown: Some(true), ..Props::default() },
        };
        let mut patterns = HashMap::new();
        collect_patterns(&root, &mut patterns);
        Schema { root, patterns }
    }

    /// The model.
    pub fn props(&self) -> &Props {
        &self.root
    }

    /// The object's problems against the schema, as kube-apiserver reports them for a
    /// custom resource (kube-openapi's validation, then the list-type uniqueness checks).
    pub fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate::object(self, obj)
    }

    /// Drops the fields the schema does not know (but the root's `apiVersion`, `kind` and
    /// `metadata`, and what `x-kubernetes-preserve-unknown-fields` keeps) and answers their
    /// paths (`spec.foo`), for `fieldValidation`.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        prune::prune(&self.root, obj)
    }

    /// Fills in the schema's `default`s, and drops the `null`s of fields that are neither
    /// nullable nor defaulted, as upstream's defaulter does on every decode.
    pub fn default(&self, obj: &mut Value) {
        defaults::default(&self.root, obj);
    }

    /// The problems of a value of this schema that is not an object's root (a `default`), as
    /// upstream's validator rooted at the schema reports them: messages name paths from the
    /// value, each error's field is under `at`.
    pub fn validate_value(&self, value: &Value, at: &str) -> Vec<FieldError> {
        validate::value(self, value, at)
    }

    /// Prunes a value of this schema (see [`Schema::prune`]); `embedded` when it stands for a
    /// whole object.
    pub fn prune_value(&self, value: &mut Value, embedded: bool) -> Vec<String> {
        prune::value(&self.root, value, embedded)
    }

    fn pattern(&self, pattern: &str) -> Option<&Regex> {
        self.patterns.get(pattern)
    }
}

fn collect_patterns(p: &Props, out: &mut HashMap<String, Regex>) {
    if !p.pattern.is_empty() && !out.contains_key(&p.pattern) {
        if let Ok(re) = Regex::new(&p.pattern) {
            out.insert(p.pattern.clone(), re);
        }
    }
    for child in p.children() {
        collect_patterns(child, out);
    }
}

#[cfg(test)]
mod tests;
