//! A ValidatingAdmissionPolicy's expressions, compiled once per version of the policy:
//! its `variables`, `matchConditions`, `validations` (with their `messageExpression`s) and
//! `auditAnnotations`, each with the variables upstream declares for policies.

use rkube_cel::{compile, CompileError, Program};
use serde_json::Value;

/// The variables a policy's expressions may read.
pub(crate) const VARIABLES: &[&str] =
    &["object", "oldObject", "request", "params", "namespaceObject", "authorizer", "variables"];

/// One expression, or why it did not compile.
#[derive(Debug)]
pub(crate) struct Expression {
    pub source: String,
    pub program: Result<Program, CompileError>,
}

impl Expression {
    fn new(source: &str) -> Expression {
        Expression { source: source.to_string(), program: compile(source, VARIABLES) }
    }
}

#[derive(Debug)]
pub(crate) struct Validation {
    pub expression: Expression,
    pub message: String,
    pub message_expression: Option<Expression>,
    /// `Unauthorized`, `Forbidden`, `Invalid` (the default) or `RequestEntityTooLarge`.
    pub reason: Option<String>,
}

#[derive(Debug)]
pub(crate) struct Named {
    pub name: String,
    pub expression: Expression,
}

/// A policy, compiled.
#[derive(Debug)]
pub(crate) struct Policy {
    pub name: String,
    pub spec: Value,
    pub resource_version: String,
    pub variables: Vec<Named>,
    pub match_conditions: Vec<Named>,
    pub validations: Vec<Validation>,
    pub audit_annotations: Vec<Named>,
    /// `failurePolicy: Ignore` (the default is `Fail`).
    pub ignore_failures: bool,
}

impl Policy {
    pub fn compile(policy: &Value, resource_version: String) -> Policy {
        let spec = &policy["spec"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let named = |key: &str, expression_key: &str| -> Vec<Named> {
            spec[key]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| Named {
                    name: text(&v[if key == "auditAnnotations" { "key" } else { "name" }]),
                    expression: Expression::new(v[expression_key].as_str().unwrap_or_default()),
                })
                .collect()
        };
        Policy {
            name: text(&policy["metadata"]["name"]),
            resource_version,
            variables: named("variables", "expression"),
            match_conditions: named("matchConditions", "expression"),
            audit_annotations: named("auditAnnotations", "valueExpression"),
            validations: spec["validations"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| Validation {
                    expression: Expression::new(v["expression"].as_str().unwrap_or_default()),
                    message: text(&v["message"]),
                    message_expression: v["messageExpression"]
                        .as_str()
                        .filter(|m| !m.trim().is_empty())
                        .map(Expression::new),
                    reason: v["reason"].as_str().map(String::from),
                })
                .collect(),
            ignore_failures: spec["failurePolicy"] == "Ignore",
            spec: spec.clone(),
        }
    }
}
