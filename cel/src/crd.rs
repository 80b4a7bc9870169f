//! CustomResourceDefinition validation rules (`x-kubernetes-validations`), as
//! apiextensions-apiserver runs them: [`Engine`] is the [`RuleEngine`] the API server
//! installs. A version's rules are compiled once, when its definition is served, into a tree
//! that follows the schema only where rules are ([`Node`]); each create and update walks the
//! object along that tree, evaluates each rule with `self` (and, for transition rules,
//! `oldSelf`, only where the old object has a value to correlate), and reports failures with
//! upstream's field paths and messages. A definition's rules are checked when it is written:
//! compile errors, type errors of rules and `messageExpression`s against their schema (a rule
//! must give a bool, a message expression a string), and an estimated cost over upstream's
//! limits, refuse it.

use std::collections::BTreeMap;
use std::sync::Arc;

use rkube_apis::validation::rules::{CompiledRules, RuleEngine, RuleProblem};
use rkube_apis::validation::FieldError;
use serde_json::Value;

use crate::check;
use crate::estimate::{over_limit_message, Sizes};
use crate::{compile, Activation, EvalError, Program, PER_CALL_LIMIT, RUNTIME_BUDGET};

/// Upstream's limit on one rule's estimated cost (`StaticEstimatedCostLimit`).
pub const ESTIMATED_RULE_LIMIT: u64 = 10_000_000;
/// Upstream's limit on all of a definition's rules (`StaticEstimatedCRDCostLimit`).
pub const ESTIMATED_TOTAL_LIMIT: u64 = 100_000_000;
/// Upstream's largest request (3 MiB): what unbounded lists, maps and strings are sized by.
const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;
/// Upstream's longest evaluated `messageExpression`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// The engine the API server installs.
#[derive(Debug, Default)]
pub struct Engine;

/// One rule, compiled.
#[derive(Debug)]
struct Rule {
    source: Value,
    rule: String,
    message: String,
    message_expression: Option<Program>,
    reason: Option<String>,
    field_path: String,
    optional_old_self: bool,
    program: Result<Program, String>,
}

impl Rule {
    fn new(r: &Value) -> Rule {
        let text = |k: &str| r[k].as_str().unwrap_or_default().to_string();
        let rule = text("rule");
        let message_expression = Some(text("messageExpression"))
            .filter(|m| !m.trim().is_empty())
            .and_then(|m| compile(&m, &["self", "oldSelf"]).ok());
        Rule {
            source: r.clone(),
            program: compile(&rule, &["self", "oldSelf"]).map_err(|e| e.to_string()),
            rule,
            message: text("message"),
            message_expression,
            reason: r["reason"].as_str().map(String::from),
            field_path: text("fieldPath"),
            optional_old_self: r["optionalOldSelf"] == true,
        }
    }

    fn is_transition(&self) -> bool {
        self.program.as_ref().is_ok_and(|p| p.uses("oldSelf"))
    }

    /// What upstream names a rule by in its errors (`ruleErrorString`).
    fn shown(&self) -> &str {
        match self.message.trim() {
            "" => self.rule.trim(),
            message => message,
        }
    }
}

/// A schema node with rules, or with descendants that have some.
#[derive(Debug, Default)]
pub struct Node {
    type_name: String,
    /// The node's whole schema, to read `fieldPath`s against.
    schema: Value,
    /// An object's metadata shows only `name` and `generateName` to rules here.
    object_meta: bool,
    rules: Vec<Rule>,
    properties: BTreeMap<String, Node>,
    items: Option<Box<Node>>,
    /// The key fields of a `map` list, by which old items are found.
    list_map_keys: Option<Vec<String>>,
    additional: Option<Box<Node>>,
}

impl Node {
    /// The tree of `schema`; `None` when no rule is in it.
    fn of(schema: &Value, root: bool) -> Option<Node> {
        if !schema.is_object() {
            return None;
        }
        let mut node = Node {
            type_name: schema["type"].as_str().unwrap_or_default().to_string(),
            schema: schema.clone(),
            object_meta: root || schema["x-kubernetes-embedded-resource"] == true,
            rules: schema["x-kubernetes-validations"]
                .as_array()
                .map(|rules| rules.iter().map(Rule::new).collect())
                .unwrap_or_default(),
            ..Node::default()
        };
        for (name, sub) in schema["properties"].as_object().into_iter().flatten() {
            if let Some(child) = Node::of(sub, false) {
                node.properties.insert(name.clone(), child);
            }
        }
        node.items = Node::of(&schema["items"], false).map(Box::new);
        if node.items.is_some() && schema["x-kubernetes-list-type"] == "map" {
            node.list_map_keys = schema["x-kubernetes-list-map-keys"]
                .as_array()
                .map(|keys| keys.iter().filter_map(Value::as_str).map(String::from).collect());
        }
        if schema["additionalProperties"].is_object() {
            node.additional = Node::of(&schema["additionalProperties"], false).map(Box::new);
        }
        let empty = node.rules.is_empty()
            && node.properties.is_empty()
            && node.items.is_none()
            && node.additional.is_none();
        (!empty).then_some(node)
    }
}

/// A version's rules, compiled.
#[derive(Debug)]
pub struct Rules {
    root: Node,
}

impl Rules {
    /// The rules of `schema` (a version's `openAPIV3Schema`); `None` without any.
    pub fn compile(schema: &Value) -> Option<Rules> {
        Node::of(schema, true).map(|root| Rules { root })
    }

    /// The errors of `obj` (and `old`, on update).
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut walk = Walk { budget: RUNTIME_BUDGET, errors: Vec::new(), stopped: false };
        walk.node(&self.root, obj, old, None);
        walk.errors
    }
}

impl CompiledRules for Rules {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        Rules::validate(self, obj, old)
    }
}

/// One validation's state: what is left of the budget, the errors so far.
struct Walk {
    budget: u64,
    errors: Vec<FieldError>,
    stopped: bool,
}

/// A field path as upstream's `field.Path` prints it (`None` is the root, `<nil>`).
fn child(path: Option<&str>, name: &str) -> String {
    match path {
        None => name.to_string(),
        Some(p) => format!("{p}.{name}"),
    }
}

fn shown(path: Option<&str>) -> String {
    path.unwrap_or("<nil>").to_string()
}

impl Walk {
    fn node(&mut self, node: &Node, value: &Value, old: Option<&Value>, path: Option<&str>) {
        if self.stopped || value.is_null() {
            return;
        }
        if !node.rules.is_empty() {
            self.rules(node, value, old, path);
        }
        if let Value::Object(fields) = value {
            for (name, sub) in &node.properties {
                if let Some(v) = fields.get(name) {
                    let old_v = old.and_then(|o| o.get(name));
                    self.node(sub, v, old_v, Some(&child(path, name)));
                }
            }
            if let Some(additional) = &node.additional {
                for (key, v) in fields {
                    let old_v = old.and_then(|o| o.get(key));
                    self.node(additional, v, old_v, Some(&format!("{}[{key}]", shown(path))));
                }
            }
        }
        if let (Some(items), Value::Array(list)) = (&node.items, value) {
            for (i, v) in list.iter().enumerate() {
                // Only items of a map list correlate with old ones (by their keys).
                let old_v = node.list_map_keys.as_ref().and_then(|keys| {
                    old?.as_array()?.iter().find(|o| keys.iter().all(|k| o.get(k) == v.get(k)))
                });
                self.node(items, v, old_v, Some(&format!("{}[{i}]", shown(path))));
            }
        }
    }

    fn rules(&mut self, node: &Node, value: &Value, old: Option<&Value>, path: Option<&str>) {
        let mut activation = Activation::new();
        let typed = |v: &Value| crate::convert::from_json_typed(v, &node.schema);
        let own = typed(&rule_view(value, node.object_meta));
        let unreadable = crate::convert::unreadable_in(&own);
        activation.value("self", own);
        let old_view = old.map(|o| rule_view(o, node.object_meta));
        let invalid = |detail: &str| {
            FieldError::invalid(shown(path), &Value::String(node.type_name.clone()), detail)
        };
        for rule in &node.rules {
            if self.budget == 0 {
                self.errors.push(invalid(
                    "validation failed due to running out of cost budget, no further validation rules will be run",
                ));
                self.stopped = true;
                return;
            }
            let program = match &rule.program {
                Ok(p) => p,
                Err(e) => {
                    self.errors.push(invalid(&format!("rule compile error: {e}")));
                    continue;
                }
            };
            let transition = rule.is_transition();
            match (&old_view, transition, rule.optional_old_self) {
                (None, true, false) => continue,
                (None, true, true) => {
                    activation.value("oldSelf", optional(None));
                }
                (Some(o), true, true) => {
                    activation.value("oldSelf", optional(Some(typed(o))));
                }
                (Some(o), true, false) => {
                    activation.value("oldSelf", typed(o));
                }
                _ => {}
            }
            let limit = PER_CALL_LIMIT.min(self.budget);
            match program.evaluate_bool(&activation, limit) {
                Err(EvalError::CostLimit) if limit < PER_CALL_LIMIT => {
                    self.errors.push(invalid(
                        "validation failed due to running out of cost budget, no further validation rules will be run",
                    ));
                    self.stopped = true;
                    return;
                }
                Err(EvalError::CostLimit) => {
                    self.errors.push(invalid(&format!(
                        "'{}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        EvalError::CostLimit,
                        rule.shown()
                    )));
                    self.stopped = true;
                    return;
                }
                // A value its format cannot read fails the rule with its own error, as
                // upstream's error values do (the one the rule names, else the first).
                Err(e) if is_type_error(&e) && !unreadable.is_empty() => {
                    let named =
                        unreadable.iter().find(|(field, _)| rule.rule.contains(field.as_str()));
                    let (_, message) = named.unwrap_or(&unreadable[0]);
                    self.errors
                        .push(invalid(&format!("{message} evaluating rule: {}", rule.shown())));
                }
                Err(e @ EvalError::WrongType { .. }) | Err(e @ EvalError::Failed(_))
                    if e.to_string().starts_with("no such overload")
                        || matches!(e, EvalError::WrongType { .. }) =>
                {
                    self.errors.push(invalid(&format!(
                        "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
                        rule.shown()
                    )));
                }
                Err(e) => {
                    self.errors.push(invalid(&format!("{e} evaluating rule: {}", rule.shown())));
                }
                Ok((true, cost)) => self.budget = self.budget.saturating_sub(cost),
                Ok((false, cost)) => {
                    self.budget = self.budget.saturating_sub(cost);
                    let detail = self.message(rule, &activation);
                    self.errors.push(failure(node, rule, path, &detail));
                }
            }
        }
    }

    /// The message of a failed rule: its `messageExpression`'s value when that evaluates to
    /// a usable string, else its message, else `failed rule: <rule>`.
    fn message(&mut self, rule: &Rule, activation: &Activation) -> String {
        let fallback = || match rule.message.trim() {
            "" => format!("failed rule: {}", rule.rule.trim()),
            message => message.to_string(),
        };
        let Some(expression) = &rule.message_expression else { return fallback() };
        match expression.evaluate_string(activation, PER_CALL_LIMIT.min(self.budget)) {
            Ok((text, cost)) => {
                self.budget = self.budget.saturating_sub(cost);
                let text = text.trim();
                if text.is_empty() || text.len() > MAX_MESSAGE_BYTES || text.contains('\n') {
                    fallback()
                } else {
                    text.to_string()
                }
            }
            Err(_) => fallback(),
        }
    }
}

/// Whether an evaluation failed on a value of the wrong type (as an unreadable value makes
/// every use of it fail).
fn is_type_error(e: &EvalError) -> bool {
    match e {
        EvalError::WrongType { .. } => true,
        EvalError::Failed(text) => {
            text.starts_with("no such overload")
                || text.contains("nexpected type")
                || text.contains("can not be compared")
        }
        EvalError::CostLimit => false,
    }
}

/// The error of a rule that evaluated to false, at its `fieldPath` and of its `reason`.
fn failure(node: &Node, rule: &Rule, path: Option<&str>, detail: &str) -> FieldError {
    let at = match rule.field_path.trim() {
        "" => shown(path),
        field_path => {
            resolve_field_path(&node.schema, field_path, path).unwrap_or_else(|| shown(path))
        }
    };
    let value = Value::String(node.type_name.clone());
    match rule.reason.as_deref() {
        Some("FieldValueForbidden") => FieldError::forbidden(at, detail),
        Some("FieldValueRequired") => FieldError::required(at, detail),
        Some("FieldValueDuplicate") => FieldError::duplicate(at, &value),
        _ => FieldError::invalid(at, &value, detail),
    }
}

/// A rule's `fieldPath` (`.spec.replicas`, `['a.b']`) as a field path under `path`: named
/// fields of objects with properties as `.name`, keys of maps as `[key]`; `None` when it
/// names no field of the schema.
fn resolve_field_path(schema: &Value, field_path: &str, path: Option<&str>) -> Option<String> {
    let mut at = path.map(String::from);
    let mut schema = schema;
    let mut rest = field_path;
    while !rest.is_empty() {
        let (name, next) = if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']")?;
            (&r[..end], &r[end + 2..])
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            (&r[..end], &r[end..])
        } else {
            return None;
        };
        if let Some(sub) = schema["properties"].get(name) {
            at = Some(child(at.as_deref(), name));
            schema = sub;
        } else if schema["additionalProperties"].is_object() {
            at = Some(format!("{}[{name}]", shown(at.as_deref())));
            schema = &schema["additionalProperties"];
        } else {
            return None;
        }
        rest = next;
    }
    at
}

/// What a rule sees of a value: at the root and in embedded resources, `metadata` holds only
/// `name` and `generateName`.
fn rule_view(value: &Value, object_meta: bool) -> Value {
    if !object_meta {
        return value.clone();
    }
    let mut view = value.clone();
    if let Some(meta) = view.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.retain(|k, _| k == "name" || k == "generateName");
    }
    view
}

fn optional(v: Option<cel::Value>) -> cel::Value {
    use cel::objects::OptionalValue;
    let o = match v {
        Some(v) => OptionalValue::of(v),
        None => OptionalValue::none(),
    };
    cel::Value::Opaque(Arc::new(o))
}

impl RuleEngine for Engine {
    fn compile(&self, schema: &Value) -> Option<Arc<dyn CompiledRules>> {
        Rules::compile(schema).map(|r| Arc::new(r) as Arc<dyn CompiledRules>)
    }

    fn check(&self, schema: &Value, at: &str) -> Vec<RuleProblem> {
        let mut check = Check { problems: Vec::new(), total: 0 };
        check.schema(schema, at, 1);
        if check.total > ESTIMATED_TOTAL_LIMIT {
            check.problems.push(RuleProblem::Forbidden {
                field: at.to_string(),
                detail: over_limit_message(
                    "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                    check.total,
                    ESTIMATED_TOTAL_LIMIT,
                )
                .replace(" (try simplifying the rule(s), or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)", ""),
            });
        }
        check.problems
    }
}

/// A definition's rules being checked.
struct Check {
    problems: Vec<RuleProblem>,
    total: u64,
}

impl Check {
    /// The rules of `schema` at `at`, whose values occur up to `cardinality` times in an object.
    fn schema(&mut self, schema: &Value, at: &str, cardinality: u64) {
        for (i, r) in
            schema["x-kubernetes-validations"].as_array().into_iter().flatten().enumerate()
        {
            let field = format!("{at}.x-kubernetes-validations[{i}]");
            let rule = Rule::new(r);
            if rule.rule.trim().is_empty() {
                continue;
            }
            match &rule.program {
                Err(e) => self.problems.push(RuleProblem::Invalid {
                    field: format!("{field}.rule"),
                    rule: rule.source.clone(),
                    detail: format!("compilation failed: {e}"),
                }),
                Ok(program) => {
                    if let Some(detail) = type_problem(&rule.rule, schema) {
                        self.problems.push(RuleProblem::Invalid {
                            field: format!("{field}.rule"),
                            rule: rule.source.clone(),
                            detail,
                        });
                    }
                    let cost = program.estimated_cost(&SchemaSizes { schema });
                    if cost > ESTIMATED_RULE_LIMIT {
                        self.problems.push(RuleProblem::Forbidden {
                            field: format!("{field}.rule"),
                            detail: over_limit_message(
                                "estimated rule cost",
                                cost,
                                ESTIMATED_RULE_LIMIT,
                            ),
                        });
                    }
                    self.total = self.total.saturating_add(cost.saturating_mul(cardinality));
                }
            }
            let message_expression = r["messageExpression"].as_str().unwrap_or_default();
            if !message_expression.trim().is_empty() {
                let problem = match compile(message_expression, &["self", "oldSelf"]) {
                    Err(e) => Some(format!("messageExpression compilation failed: {e}")),
                    Ok(_) => message_type_problem(message_expression, schema),
                };
                if let Some(detail) = problem {
                    self.problems.push(RuleProblem::Invalid {
                        field: format!("{field}.messageExpression"),
                        rule: rule.source.clone(),
                        detail,
                    });
                }
            }
        }
        for (name, sub) in schema["properties"].as_object().into_iter().flatten() {
            self.schema(sub, &format!("{at}.properties[{name}]"), cardinality);
        }
        if schema["items"].is_object() {
            let n = max_size(schema).unwrap_or(1);
            self.schema(&schema["items"], &format!("{at}.items"), cardinality.saturating_mul(n));
        }
        if schema["additionalProperties"].is_object() {
            let n = max_size(schema).unwrap_or(1);
            self.schema(
                &schema["additionalProperties"],
                &format!("{at}.additionalProperties"),
                cardinality.saturating_mul(n),
            );
        }
    }
}

/// What cel-go's checker says of `rule` on a value of `schema`, if it refuses it: a type
/// error, or a result that is not a bool.
fn type_problem(rule: &str, schema: &Value) -> Option<String> {
    let own = check::Type::of_schema(schema);
    match crate::type_check(rule, &[("self", own.clone()), ("oldSelf", own)]) {
        Err(e) => Some(format!("compilation failed: {e}")),
        Ok(t) if t.is_known() && t != check::Type::Bool => {
            Some("cel expression must evaluate to a bool".to_string())
        }
        Ok(_) => None,
    }
}

/// What cel-go's checker says of a `messageExpression` on a value of `schema`, if it refuses
/// it: a type error, or a result that is not a string.
fn message_type_problem(expression: &str, schema: &Value) -> Option<String> {
    let own = check::Type::of_schema(schema);
    match crate::type_check(expression, &[("self", own.clone()), ("oldSelf", own)]) {
        Err(e) => Some(format!("messageExpression compilation failed: {e}")),
        Ok(t) if t.is_known() && t != check::Type::String => {
            Some("messageExpression must evaluate to a string".to_string())
        }
        Ok(_) => None,
    }
}

/// The most elements, entries or characters a value of `schema` holds: its declared bound,
/// else as many as the largest request could carry (upstream's estimate).
fn max_size(schema: &Value) -> Option<u64> {
    let declared = |k: &str| schema[k].as_u64();
    let smallest_element = |element: &Value| match element["type"].as_str() {
        Some("string") | Some("object") | Some("array") => 2,
        Some("boolean") => 4,
        _ => 1,
    };
    match schema["type"].as_str() {
        Some("array") => declared("maxItems")
            .or(Some((MAX_REQUEST_BYTES - 2) / (smallest_element(&schema["items"]) + 1))),
        Some("object") if schema["additionalProperties"].is_object() => declared("maxProperties")
            .or(Some(
                (MAX_REQUEST_BYTES - 2) / (smallest_element(&schema["additionalProperties"]) + 4),
            )),
        Some("string") => declared("maxLength").or(Some(MAX_REQUEST_BYTES - 2)),
        _ => None,
    }
}

/// Sizes read from the schema a rule is attached to (`self`, `oldSelf`).
struct SchemaSizes<'a> {
    schema: &'a Value,
}

impl Sizes for SchemaSizes<'_> {
    fn max_size(&self, path: &[String]) -> Option<u64> {
        let (first, rest) = path.split_first()?;
        if first != "self" && first != "oldSelf" {
            return None;
        }
        let mut schema = self.schema;
        for step in rest {
            schema = if step == "[*]" {
                if schema["items"].is_object() {
                    &schema["items"]
                } else {
                    &schema["additionalProperties"]
                }
            } else if let Some(sub) =
                crate::escaping::unescape(step).and_then(|name| schema["properties"].get(name))
            {
                sub
            } else if schema["additionalProperties"].is_object() {
                &schema["additionalProperties"]
            } else {
                return None;
            };
        }
        max_size(schema)
    }
}
