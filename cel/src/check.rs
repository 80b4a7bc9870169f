//! Type checking of a parsed expression against the types of its variables, as cel-go's
//! checker refuses a CRD rule before any object is written, each problem with cel-go's words
//! and `ERROR: <input>:L:C:` and the source line under it:
//! - a field its object type does not have (`undefined field 'x'`; properties are named as
//!   upstream escapes them, `__namespace__`, `a__dash__b`), a field of a scalar or list
//!   (`type 'int' does not support field selection`);
//! - an operator or function applied to types it has no overload for (`found no matching
//!   overload for '_+_' applied to '(int, string)'`, `... for 'startsWith' applied to
//!   'string.(int)'`): calls resolve against the signatures of `signatures` (the
//!   standard functions, conversions, timestamp and duration accessors, the strings and base64
//!   extensions and Kubernetes' lists, regex, URL, quantity, IP/CIDR, sets and format
//!   libraries), and
//!   their results take the overloads' result types, so errors further out are found
//!   (`self.name.size() + 'x'`);
//! - a function the environment does not have (`undeclared reference to 'f' (in container '')`);
//! - a comprehension (`all`, `exists`, `exists_one`, `map`, `filter`) over a value that is
//!   neither list nor map; its variable takes the element (or key) type and `map`/`filter`
//!   give lists of what they make;
//! - list and map literals whose elements differ in type (`expected type 'int' but found
//!   'string'`), as with `HomogeneousAggregateLiterals`, which Kubernetes turns on.
//!
//! The types come from the variables' schema ([`Type::of_schema`]): objects with declared
//! properties, maps (`additionalProperties`), lists, strings (`date-time` and `date`, `duration` and
//! `byte` formats as timestamps, durations and bytes), integers, numbers and booleans. What
//! the schema leaves open (int-or-string, preserved unknown fields, an absent schema) is
//! `dyn`, and `dyn` fits any parameter, as in cel-go. Not followed (so accepted): objects as
//! function arguments or comprehension ranges, null, the authorizer's functions, optionals
//! and `type()` values (their results are `dyn`), and equality across numeric types. The
//! checker so refuses less than cel-go, never more, and what it refuses, cel-go refuses with
//! the same words, all of them, in the order of their positions, as cel-go lists them.

use cel::common::ast::operators as op;
use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, SourceInfo};
use serde_json::{json, Value};

use crate::signatures::{self, Overload, Pattern};

/// A type as the checker knows it. Objects keep their schema, to find their fields' types.
#[derive(Clone, Debug, PartialEq)]
pub enum Type<'a> {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Timestamp,
    Duration,
    List(Box<Type<'a>>),
    Map(Box<Type<'a>>, Box<Type<'a>>),
    /// An object with declared properties (its schema).
    Object(&'a Value),
    /// A value of a Kubernetes library's opaque type (`kubernetes.Quantity`, `net.IP`).
    Opaque(&'static str),
    /// The element type of an empty list or map literal: whatever it is joined with.
    Free,
    Dyn,
}

impl Type<'_> {
    /// The type of a value of `schema` (OpenAPI v3, structural).
    pub fn of_schema(schema: &Value) -> Type<'_> {
        if schema.is_null() || schema["x-kubernetes-int-or-string"] == true {
            return Type::Dyn;
        }
        match schema["type"].as_str() {
            Some("object") => {
                let extra = &schema["additionalProperties"];
                if schema["properties"].as_object().is_some_and(|p| !p.is_empty()) {
                    Type::Object(schema)
                } else if extra.is_object() {
                    Type::Map(Box::new(Type::String), Box::new(Type::of_schema(extra)))
                } else {
                    Type::Dyn
                }
            }
            Some("array") => Type::List(Box::new(Type::of_schema(&schema["items"]))),
            Some("string") => match schema["format"].as_str() {
                Some("date-time" | "date") => Type::Timestamp,
                Some("duration") => Type::Duration,
                Some("byte") => Type::Bytes,
                _ => Type::String,
            },
            Some("integer") => Type::Int,
            Some("number") => Type::Double,
            Some("boolean") => Type::Bool,
            _ => Type::Dyn,
        }
    }

    /// Its name as cel-go prints it, when it has one free of objects.
    fn name(&self) -> Option<String> {
        Some(match self {
            Type::Bool => "bool".into(),
            Type::Int => "int".into(),
            Type::Uint => "uint".into(),
            Type::Double => "double".into(),
            Type::String => "string".into(),
            Type::Bytes => "bytes".into(),
            Type::Null => "null_type".into(),
            Type::Timestamp => "google.protobuf.Timestamp".into(),
            Type::Duration => "google.protobuf.Duration".into(),
            Type::List(t) => format!("list({})", t.name()?),
            Type::Map(k, v) => format!("map({}, {})", k.name()?, v.name()?),
            Type::Dyn => "dyn".into(),
            Type::Opaque(name) => (*name).into(),
            Type::Object(_) | Type::Free => return None,
        })
    }

    /// A schema whose values have this type ([`Type::of_schema`] of it gives it back, except
    /// for types no schema spells, which come back `dyn`): what a caller declares a composite
    /// variable of computed types with (a policy's `variables`).
    pub fn to_schema(&self) -> Value {
        match self {
            Type::Bool => json!({"type": "boolean"}),
            Type::Int => json!({"type": "integer"}),
            Type::Double => json!({"type": "number"}),
            Type::String => json!({"type": "string"}),
            Type::Bytes => json!({"type": "string", "format": "byte"}),
            Type::Timestamp => json!({"type": "string", "format": "date-time"}),
            Type::Duration => json!({"type": "string", "format": "duration"}),
            Type::List(t) => json!({"type": "array", "items": t.to_schema()}),
            Type::Map(k, v) if **k == Type::String => {
                json!({"type": "object", "additionalProperties": v.to_schema()})
            }
            Type::Object(schema) => (*schema).clone(),
            _ => json!({}),
        }
    }

    /// Whether the type is known (not `dyn`): a rule of any other type than bool is refused.
    pub fn is_known(&self) -> bool {
        *self != Type::Dyn
    }

    /// Whether the type is fully known (no `dyn` or null anywhere in it).
    fn concrete(&self) -> bool {
        match self {
            Type::Dyn | Type::Null | Type::Free => false,
            Type::List(t) => t.concrete(),
            Type::Map(k, v) => k.concrete() && v.concrete(),
            _ => true,
        }
    }

    fn numeric(&self) -> bool {
        matches!(self, Type::Int | Type::Uint | Type::Double)
    }
}

/// The most problems cel-go lists.
const MAX_ERRORS: usize = 100;

/// A variable and its type.
pub type Variable<'a> = (&'a str, Type<'a>);

/// Checks `expr` (parsed from the source `info` holds) with `variables` declared; its
/// problems as cel-go prints them (in the order of their positions, one after another), and
/// otherwise the expression's type.
pub fn check<'a>(
    expr: &IdedExpr,
    info: &SourceInfo,
    variables: &[Variable<'a>],
) -> Result<Type<'a>, String> {
    let scope = variables.iter().map(|(n, t)| (n.to_string(), t.clone())).collect();
    let mut checker = Checker { scope, problems: Vec::new() };
    let t = checker.expr(expr);
    if checker.problems.is_empty() {
        return Ok(t);
    }
    let mut shown: Vec<((usize, usize), String)> =
        checker.problems.iter().map(|(id, message)| located(info, *id, message)).collect();
    shown.sort_by_key(|(position, _)| *position);
    let count = shown.len();
    let mut texts: Vec<String> = shown.into_iter().take(MAX_ERRORS).map(|(_, text)| text).collect();
    if count > MAX_ERRORS {
        texts.push(format!("{} more errors were truncated", count - MAX_ERRORS));
    }
    Err(texts.join("\n"))
}

/// `message` at the position of the node `id`, with the line and a caret under it; and the
/// position (line, column).
fn located(info: &SourceInfo, id: u64, message: &str) -> ((usize, usize), String) {
    let source = info.source.as_str();
    let start = info.offset_for(id).map_or(0, |(start, _)| start as usize).min(source.len());
    let before = &source[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = source[line_start..start].chars().count() + 1;
    let text = source[line_start..].lines().next().unwrap_or("").replace('\t', " ");
    let shown = format!(
        "ERROR: <input>:{line}:{column}: {message}\n | {text}\n | {}^",
        ".".repeat(column - 1)
    );
    ((line, column), shown)
}

struct Checker<'a> {
    /// Variables in scope, innermost last.
    scope: Vec<(String, Type<'a>)>,
    /// The problems found: the node and the message. What a problem makes is `dyn`, so
    /// nothing further out is refused for it (as cel-go's error type).
    problems: Vec<(u64, String)>,
}

impl<'a> Checker<'a> {
    fn fail(&mut self, id: u64, message: String) -> Type<'a> {
        self.problems.push((id, message));
        Type::Dyn
    }

    fn variable(&self, name: &str) -> Option<&Type<'a>> {
        self.scope.iter().rev().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    fn expr(&mut self, e: &IdedExpr) -> Type<'a> {
        match &e.expr {
            Expr::Literal(literal) => match literal {
                LiteralValue::Boolean(_) => Type::Bool,
                LiteralValue::Bytes(_) => Type::Bytes,
                LiteralValue::Double(_) => Type::Double,
                LiteralValue::Int(_) => Type::Int,
                LiteralValue::Null => Type::Null,
                LiteralValue::String(_) => Type::String,
                LiteralValue::UInt(_) => Type::Uint,
            },
            Expr::Ident(name) => self.variable(name).cloned().unwrap_or(Type::Dyn),
            Expr::Select(select) => {
                let operand = self.expr(&select.operand);
                let field = self.field(operand, &select.field, e.id);
                if select.test {
                    return Type::Bool;
                }
                field
            }
            Expr::List(list) => {
                let mut element = Type::Free;
                for x in &list.elements {
                    let t = self.expr(x);
                    element = self.aggregate(element, t, x.id);
                }
                Type::List(Box::new(element))
            }
            Expr::Map(map) => {
                let (mut key, mut value) = (Type::Free, Type::Free);
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        let k = self.expr(&entry.key);
                        key = self.aggregate(key, k, entry.key.id);
                        let v = self.expr(&entry.value);
                        value = self.aggregate(value, v, entry.value.id);
                    }
                }
                Type::Map(Box::new(key), Box::new(value))
            }
            Expr::Struct(_) | Expr::Unspecified => Type::Dyn,
            Expr::Comprehension(c) => {
                let range = self.expr(&c.iter_range);
                let (first, second) = match (&range, c.iter_var2.is_some()) {
                    (Type::List(t), false) => ((**t).clone(), Type::Dyn),
                    (Type::List(t), true) => (Type::Int, (**t).clone()),
                    (Type::Map(k, v), _) => ((**k).clone(), (**v).clone()),
                    (t, _) => {
                        if let Some(name) = t.name().filter(|_| *t != Type::Dyn) {
                            self.fail(
                                c.iter_range.id,
                                format!("expression of type '{name}' cannot be range of a comprehension (must be list, map, or dynamic)"),
                            );
                        }
                        (Type::Dyn, Type::Dyn)
                    }
                };
                let init = self.expr(&c.accu_init);
                let depth = self.scope.len();
                self.scope.push((c.iter_var.clone(), first));
                if let Some(second_var) = &c.iter_var2 {
                    self.scope.push((second_var.clone(), second));
                }
                self.scope.push((c.accu_var.clone(), init.clone()));
                self.expr(&c.loop_cond);
                let step = self.expr(&c.loop_step);
                // The accumulator of `map` and `filter` starts as an empty list: its type is
                // what the step makes of it.
                let accumulator = join(&init, &step).unwrap_or(Type::Dyn);
                if let Some(slot) = self.scope.last_mut() {
                    slot.1 = accumulator;
                }
                let result = self.expr(&c.result);
                self.scope.truncate(depth);
                result
            }
            Expr::Call(call) => {
                let qualified = call
                    .target
                    .as_ref()
                    .and_then(|t| self.qualified(t))
                    .map(|prefix| format!("{prefix}.{}", call.func_name))
                    .filter(|name| signatures::lookup(name).is_some());
                let (name, target) = match qualified {
                    Some(name) => (name, None),
                    None => (call.func_name.clone(), call.target.as_ref().map(|t| self.expr(t))),
                };
                let args: Vec<Type<'a>> = call.args.iter().map(|a| self.expr(a)).collect();
                self.call(&name, target, args, e.id)
            }
        }
    }

    /// The dotted name `e` spells (`sets`, `a.b`) when it is not a variable: the namespace of
    /// a function (`sets.contains(...)`).
    fn qualified(&self, e: &IdedExpr) -> Option<String> {
        match &e.expr {
            Expr::Ident(name) if self.variable(name).is_none() => Some(name.clone()),
            Expr::Select(select) if !select.test => {
                Some(format!("{}.{}", self.qualified(&select.operand)?, select.field))
            }
            _ => None,
        }
    }

    /// The element type of a literal after one more element, of type `next` (node `id`): as
    /// with cel-go's `HomogeneousAggregateLiterals`, which Kubernetes turns on, elements of
    /// different types are refused.
    fn aggregate(&mut self, so_far: Type<'a>, next: Type<'a>, id: u64) -> Type<'a> {
        match join(&so_far, &next) {
            Some(t) => t,
            None => match (so_far.name(), next.name()) {
                (Some(expected), Some(found)) => {
                    self.fail(id, format!("expected type '{expected}' but found '{found}'"))
                }
                _ => Type::Dyn,
            },
        }
    }

    /// The type of `operand.field`.
    fn field(&mut self, operand: Type<'a>, field: &str, id: u64) -> Type<'a> {
        match operand {
            // Properties are reached by their escaped names (`__namespace__`, `a__dash__b`).
            Type::Object(schema) => match crate::escaping::unescape(field)
                .and_then(|name| schema["properties"].get(name))
            {
                Some(sub) => Type::of_schema(sub),
                None if schema["x-kubernetes-preserve-unknown-fields"] == true => Type::Dyn,
                // An embedded resource's (and the root's) type and object metadata.
                None if matches!(field, "apiVersion" | "kind") => Type::String,
                None if field == "metadata" => Type::Dyn,
                None => self.fail(id, format!("undefined field '{field}'")),
            },
            Type::Map(_, value) => match *value {
                Type::Free => Type::Dyn,
                value => value,
            },
            Type::Dyn | Type::Free => Type::Dyn,
            other => match other.name() {
                Some(name) => {
                    self.fail(id, format!("type '{name}' does not support field selection"))
                }
                None => Type::Dyn,
            },
        }
    }

    fn call(
        &mut self,
        function: &str,
        target: Option<Type<'a>>,
        args: Vec<Type<'a>>,
        id: u64,
    ) -> Type<'a> {
        match (function, target.as_ref(), args.as_slice()) {
            (op::LOGICAL_AND | op::LOGICAL_OR, None, [a, b]) => {
                if [a, b].iter().any(|t| t.concrete() && **t != Type::Bool) {
                    return self.no_overload(function, None, &args, id);
                }
                Type::Bool
            }
            (op::LOGICAL_NOT, None, [a]) => {
                if a.concrete() && *a != Type::Bool {
                    return self.no_overload(function, None, &args, id);
                }
                Type::Bool
            }
            (op::NEGATE, None, [a]) => match a {
                Type::Int | Type::Double => a.clone(),
                t if t.concrete() => self.no_overload(function, None, &args, id),
                _ => Type::Dyn,
            },
            (op::CONDITIONAL, None, [condition, a, b]) => {
                let condition_fine = !condition.concrete() || *condition == Type::Bool;
                match join(a, b) {
                    Some(t) if condition_fine => t,
                    _ => self.no_overload(function, None, &args, id),
                }
            }
            (op::INDEX, None, [collection, index]) => {
                let fine = match collection {
                    Type::List(_) => !index.concrete() || index.numeric(),
                    Type::Map(key, _) => {
                        join(key, index).is_some() || (key.numeric() && index.numeric())
                    }
                    t => !t.concrete() || matches!(t, Type::Object(_)),
                };
                if !fine {
                    return self.no_overload(function, None, &args, id);
                }
                match collection {
                    Type::List(t) | Type::Map(_, t) if **t != Type::Free => (**t).clone(),
                    _ => Type::Dyn,
                }
            }
            (op::IN, None, [element, collection]) => {
                let fine = match collection {
                    Type::List(t) | Type::Map(t, _) => {
                        join(element, t).is_some() || (element.numeric() && t.numeric())
                    }
                    t => !t.concrete() || matches!(t, Type::Object(_)),
                };
                if !fine {
                    return self.no_overload(function, None, &args, id);
                }
                Type::Bool
            }
            (op::EQUALS | op::NOT_EQUALS, None, [a, b]) => {
                let comparable = !a.concrete()
                    || !b.concrete()
                    || a == b
                    || (a.numeric() && b.numeric())
                    || (matches!(a, Type::List(_)) && matches!(b, Type::List(_)))
                    || (matches!(a, Type::Map(..)) && matches!(b, Type::Map(..)));
                if !comparable {
                    return self.no_overload(function, None, &args, id);
                }
                Type::Bool
            }
            (op::LESS | op::LESS_EQUALS | op::GREATER | op::GREATER_EQUALS, None, [a, b]) => {
                let ordered = |t: &Type| {
                    matches!(
                        t,
                        Type::Bool
                            | Type::Int
                            | Type::Uint
                            | Type::Double
                            | Type::String
                            | Type::Bytes
                            | Type::Timestamp
                            | Type::Duration
                    )
                };
                let fine = !a.concrete()
                    || !b.concrete()
                    || (ordered(a) && a == b)
                    || (a.numeric() && b.numeric());
                if !fine {
                    return self.no_overload(function, None, &args, id);
                }
                Type::Bool
            }
            (op::ADD, None, [Type::List(a), Type::List(b)]) => match join(a, b) {
                Some(t) => Type::List(Box::new(t)),
                None => self.no_overload(function, None, &args, id),
            },
            (op::ADD | op::SUBSTRACT | op::MULTIPLY | op::DIVIDE | op::MODULO, None, [a, b]) => {
                if !a.concrete() || !b.concrete() {
                    return Type::Dyn;
                }
                match arithmetic(function, a, b) {
                    Some(t) => t,
                    None => self.no_overload(function, None, &args, id),
                }
            }
            ("@not_strictly_false", None, _) => Type::Bool,
            // Other operators (`_?._`, `_[?_]`) and the environment's internal functions.
            (f, _, _) if f.starts_with('_') || f.starts_with('@') => Type::Dyn,
            _ => match signatures::lookup(function) {
                None => {
                    self.fail(id, format!("undeclared reference to '{function}' (in container '')"))
                }
                Some(None) => Type::Dyn,
                Some(Some(overloads)) => self.resolve(function, overloads, target, args, id),
            },
        }
    }

    /// The result of a call of a declared function: the joined results of the overloads its
    /// arguments fit, as cel-go resolves them; none fitting is an error.
    fn resolve(
        &mut self,
        function: &str,
        overloads: &[Overload],
        target: Option<Type<'a>>,
        args: Vec<Type<'a>>,
        id: u64,
    ) -> Type<'a> {
        let mut results: Vec<Type<'a>> = Vec::new();
        for overload in overloads {
            if overload.receiver.is_some() != target.is_some() || overload.args.len() != args.len()
            {
                continue;
            }
            let mut params = Vec::new();
            let receiver_fits = match (&overload.receiver, &target) {
                (Some(p), Some(t)) => bind(p, t, &mut params),
                _ => true,
            };
            if receiver_fits
                && overload.args.iter().zip(&args).all(|(p, a)| bind(p, a, &mut params))
            {
                results.push(substitute(&overload.result, &params));
            }
        }
        let Some(first) = results.first().cloned() else {
            return self.no_overload(function, target.as_ref(), &args, id);
        };
        if results.iter().all(|r| *r == first) {
            first
        } else {
            Type::Dyn
        }
    }

    fn no_overload(
        &mut self,
        function: &str,
        target: Option<&Type<'a>>,
        args: &[Type<'a>],
        id: u64,
    ) -> Type<'a> {
        let names: Option<Vec<String>> = args.iter().map(Type::name).collect();
        let receiver = match target {
            Some(t) => t.name().map(|n| format!("{n}.")),
            None => Some(String::new()),
        };
        match (receiver, names) {
            (Some(receiver), Some(names)) => self.fail(
                id,
                format!(
                    "found no matching overload for '{function}' applied to '{receiver}({})'",
                    names.join(", ")
                ),
            ),
            _ => Type::Dyn,
        }
    }
}

/// Whether a value of type `actual` fits `pattern`, binding its type parameters; `dyn` fits
/// anything, as in cel-go.
fn bind<'a>(pattern: &Pattern, actual: &Type<'a>, params: &mut Vec<(char, Type<'a>)>) -> bool {
    match (pattern, actual) {
        (Pattern::Param(p), t) => match params.iter_mut().find(|(q, _)| q == p) {
            None => {
                params.push((*p, t.clone()));
                true
            }
            Some((_, bound)) => match join(bound, t) {
                Some(joined) => {
                    *bound = joined;
                    true
                }
                None => false,
            },
        },
        (_, Type::Dyn | Type::Free) | (Pattern::Dyn, _) => true,
        (Pattern::List(p), Type::List(t)) => bind(p, t, params),
        (Pattern::Map(pk, pv), Type::Map(k, v)) => bind(pk, k, params) && bind(pv, v, params),
        (Pattern::Opaque(p), Type::Opaque(t)) => p == t,
        (Pattern::Bool, Type::Bool)
        | (Pattern::Int, Type::Int)
        | (Pattern::Uint, Type::Uint)
        | (Pattern::Double, Type::Double)
        | (Pattern::String, Type::String)
        | (Pattern::Bytes, Type::Bytes)
        | (Pattern::Null, Type::Null)
        | (Pattern::Timestamp, Type::Timestamp)
        | (Pattern::Duration, Type::Duration) => true,
        _ => false,
    }
}

/// A signature's result with its type parameters replaced by what they were bound to.
fn substitute<'a>(pattern: &Pattern, params: &[(char, Type<'a>)]) -> Type<'a> {
    match pattern {
        Pattern::Bool => Type::Bool,
        Pattern::Int => Type::Int,
        Pattern::Uint => Type::Uint,
        Pattern::Double => Type::Double,
        Pattern::String => Type::String,
        Pattern::Bytes => Type::Bytes,
        Pattern::Null => Type::Null,
        Pattern::Timestamp => Type::Timestamp,
        Pattern::Duration => Type::Duration,
        Pattern::Dyn => Type::Dyn,
        Pattern::Opaque(name) => Type::Opaque(name),
        Pattern::Param(p) => match params.iter().find(|(q, _)| q == p) {
            Some((_, Type::Free)) | None => Type::Dyn,
            Some((_, t)) => t.clone(),
        },
        Pattern::List(p) => Type::List(Box::new(substitute(p, params))),
        Pattern::Map(k, v) => {
            Type::Map(Box::new(substitute(k, params)), Box::new(substitute(v, params)))
        }
    }
}

/// The result of an arithmetic operator on two known types, if it has an overload.
fn arithmetic<'a>(function: &str, a: &Type<'a>, b: &Type<'a>) -> Option<Type<'a>> {
    use Type::*;
    let same_number = a == b && matches!(a, Int | Uint | Double);
    match function {
        op::ADD => match (a, b) {
            _ if same_number => Some(a.clone()),
            (String, String) | (Bytes, Bytes) | (Duration, Duration) => Some(a.clone()),
            (Timestamp, Duration) | (Duration, Timestamp) => Some(Timestamp),
            _ => None,
        },
        op::SUBSTRACT => match (a, b) {
            _ if same_number => Some(a.clone()),
            (Timestamp, Timestamp) | (Duration, Duration) => Some(Duration),
            (Timestamp, Duration) => Some(Timestamp),
            _ => None,
        },
        op::MULTIPLY | op::DIVIDE => same_number.then(|| a.clone()),
        op::MODULO => (a == b && matches!(a, Int | Uint)).then(|| a.clone()),
        _ => None,
    }
}

/// One type for two values, as cel-go unifies them: theirs when they agree, the other's
/// where one is an empty literal's, `dyn` where either is `dyn` (or an object or null, which
/// the checker does not follow that far); `None` when two known types differ.
fn join<'a>(a: &Type<'a>, b: &Type<'a>) -> Option<Type<'a>> {
    match (a, b) {
        _ if a == b => Some(a.clone()),
        (Type::Free, t) | (t, Type::Free) => Some(t.clone()),
        (Type::Dyn, _) | (_, Type::Dyn) => Some(Type::Dyn),
        (Type::Object(_), _) | (_, Type::Object(_)) | (Type::Null, _) | (_, Type::Null) => {
            Some(Type::Dyn)
        }
        (Type::List(x), Type::List(y)) => Some(Type::List(Box::new(join(x, y)?))),
        (Type::Map(k1, v1), Type::Map(k2, v2)) => {
            Some(Type::Map(Box::new(join(k1, k2)?), Box::new(join(v1, v2)?)))
        }
        _ => None,
    }
}
