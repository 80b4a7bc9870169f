//! The seam for CustomResourceDefinition validation rules (`x-kubernetes-validations`,
//! CEL): this crate has no CEL, so the API server installs an engine ([`install`], the
//! `rkube-cel` crate's) that compiles a version's rules once when the definition is served
//! ([`RuleEngine::compile`], kept in the custom resource strategy) and checks a definition's
//! rules when it is written ([`RuleEngine::check`]: compile errors, estimated costs).
//! Without an engine (unit tests of this crate) rules are neither checked nor run.

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::FieldError;

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
