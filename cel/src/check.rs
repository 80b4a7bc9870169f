//! Type checking of a parsed expression against the types of its variables, as cel-go's
//! checker refuses a CRD rule before any object is written: a field its object type does not
//! have (`undefined field 'x'`) and an operator applied to types it has no overload for
//! (`found no matching overload for '_+_' applied to '(int, string)'`), each with cel-go's
//! `ERROR: <input>:L:C:` and the source line under it.
//!
//! The types come from the variables' schema ([`Types`]): objects with declared properties,
//! maps (`additionalProperties`), lists, strings (`date-time`, `duration` and `byte` formats
//! as timestamps, durations and bytes), integers, numbers and booleans. What the schema
//! leaves open (int-or-string, preserved unknown fields, an absent schema) is `dyn`, and
//! anything involving `dyn` passes, as in cel-go. Functions other than the operators are not
//! checked (their results are `dyn`, `size` gives `int`), so the checker refuses less than
//! cel-go's, never more: what it refuses, cel-go refuses with the same words.

use cel::common::ast::operators as op;
use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, SourceInfo};
use serde_json::Value;

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
                Some("date-time") => Type::Timestamp,
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
            Type::Object(_) => return None,
        })
    }

    /// Whether the type is known (not `dyn`): a rule of any other type than bool is refused.
    pub fn is_known(&self) -> bool {
        *self != Type::Dyn
    }

    /// Whether the type is fully known (no `dyn` or null anywhere in it).
    fn concrete(&self) -> bool {
        match self {
            Type::Dyn | Type::Null => false,
            Type::List(t) => t.concrete(),
            Type::Map(k, v) => k.concrete() && v.concrete(),
            _ => true,
        }
    }

    fn numeric(&self) -> bool {
        matches!(self, Type::Int | Type::Uint | Type::Double)
    }
}

/// A variable and its type.
pub type Variable<'a> = (&'a str, Type<'a>);

/// Checks `expr` (parsed from the source `info` holds) with `variables` declared; the first
/// problem, as cel-go prints it, and otherwise the expression's type.
pub fn check<'a>(
    expr: &IdedExpr,
    info: &SourceInfo,
    variables: &[Variable<'a>],
) -> Result<Type<'a>, String> {
    let scope = variables.iter().map(|(n, t)| (n.to_string(), t.clone())).collect();
    let mut checker = Checker { scope, problem: None };
    let t = checker.expr(expr);
    match checker.problem {
        Some((id, message)) => Err(located(info, id, &message)),
        None => Ok(t),
    }
}

/// `message` at the position of the node `id`, with the line and a caret under it.
fn located(info: &SourceInfo, id: u64, message: &str) -> String {
    let source = info.source.as_str();
    let start = info.offset_for(id).map_or(0, |(start, _)| start as usize).min(source.len());
    let before = &source[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = source[line_start..start].chars().count() + 1;
    let text = source[line_start..].lines().next().unwrap_or("").replace('\t', " ");
    format!("ERROR: <input>:{line}:{column}: {message}\n | {text}\n | {}^", ".".repeat(column - 1))
}

struct Checker<'a> {
    /// Variables in scope, innermost last.
    scope: Vec<(String, Type<'a>)>,
    /// The first problem found: the node and the message.
    problem: Option<(u64, String)>,
}

impl<'a> Checker<'a> {
    fn fail(&mut self, id: u64, message: String) -> Type<'a> {
        if self.problem.is_none() {
            self.problem = Some((id, message));
        }
        Type::Dyn
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
            Expr::Ident(name) => self
                .scope
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map_or(Type::Dyn, |(_, t)| t.clone()),
            Expr::Select(select) => {
                let operand = self.expr(&select.operand);
                if select.test {
                    return Type::Bool;
                }
                self.field(operand, &select.field, e.id)
            }
            Expr::List(list) => {
                let types: Vec<Type<'a>> = list.elements.iter().map(|x| self.expr(x)).collect();
                Type::List(Box::new(joined(types)))
            }
            Expr::Map(map) => {
                let (mut keys, mut values) = (Vec::new(), Vec::new());
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(entry) = &entry.expr {
                        keys.push(self.expr(&entry.key));
                        values.push(self.expr(&entry.value));
                    }
                }
                Type::Map(Box::new(joined(keys)), Box::new(joined(values)))
            }
            Expr::Struct(_) | Expr::Unspecified => Type::Dyn,
            Expr::Comprehension(c) => {
                let range = self.expr(&c.iter_range);
                let (first, second) = match (&range, c.iter_var2.is_some()) {
                    (Type::List(t), false) => ((**t).clone(), Type::Dyn),
                    (Type::List(t), true) => (Type::Int, (**t).clone()),
                    (Type::Map(k, v), _) => ((**k).clone(), (**v).clone()),
                    _ => (Type::Dyn, Type::Dyn),
                };
                let accumulator = self.expr(&c.accu_init);
                let depth = self.scope.len();
                self.scope.push((c.iter_var.clone(), first));
                if let Some(second_var) = &c.iter_var2 {
                    self.scope.push((second_var.clone(), second));
                }
                self.scope.push((c.accu_var.clone(), accumulator));
                self.expr(&c.loop_cond);
                self.expr(&c.loop_step);
                let result = self.expr(&c.result);
                self.scope.truncate(depth);
                result
            }
            Expr::Call(call) => {
                let target = call.target.as_ref().map(|t| self.expr(t));
                let args: Vec<Type<'a>> = call.args.iter().map(|a| self.expr(a)).collect();
                self.call(&call.func_name, target, args, e.id)
            }
        }
    }

    /// The type of `operand.field`.
    fn field(&mut self, operand: Type<'a>, field: &str, id: u64) -> Type<'a> {
        match operand {
            Type::Object(schema) => match schema["properties"].get(field) {
                Some(sub) => Type::of_schema(sub),
                None if schema["x-kubernetes-preserve-unknown-fields"] == true => Type::Dyn,
                // An embedded resource's (and the root's) type and object metadata.
                None if matches!(field, "apiVersion" | "kind") => Type::String,
                None if field == "metadata" => Type::Dyn,
                None => self.fail(id, format!("undefined field '{field}'")),
            },
            Type::Map(_, value) => *value,
            _ => Type::Dyn,
        }
    }

    fn call(
        &mut self,
        function: &str,
        target: Option<Type<'a>>,
        args: Vec<Type<'a>>,
        id: u64,
    ) -> Type<'a> {
        match (function, target, args.as_slice()) {
            (op::LOGICAL_AND | op::LOGICAL_OR, None, [a, b]) => {
                if [a, b].iter().any(|t| t.concrete() && **t != Type::Bool) {
                    return self.no_overload(function, &args, id);
                }
                Type::Bool
            }
            (op::LOGICAL_NOT, None, [a]) => {
                if a.concrete() && *a != Type::Bool {
                    return self.no_overload(function, &args, id);
                }
                Type::Bool
            }
            (op::NEGATE, None, [a]) => match a {
                Type::Int | Type::Double => a.clone(),
                t if t.concrete() => self.no_overload(function, &args, id),
                _ => Type::Dyn,
            },
            (op::CONDITIONAL, None, [_, a, b]) => joined(vec![a.clone(), b.clone()]),
            (op::INDEX, None, [Type::List(t) | Type::Map(_, t), _]) => (**t).clone(),
            (op::IN, None, [_, _]) => Type::Bool,
            (op::EQUALS | op::NOT_EQUALS, None, [a, b]) => {
                let comparable = !a.concrete()
                    || !b.concrete()
                    || a == b
                    || (a.numeric() && b.numeric())
                    || (matches!(a, Type::List(_)) && matches!(b, Type::List(_)))
                    || (matches!(a, Type::Map(..)) && matches!(b, Type::Map(..)));
                if !comparable {
                    return self.no_overload(function, &args, id);
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
                    return self.no_overload(function, &args, id);
                }
                Type::Bool
            }
            (op::ADD | op::SUBSTRACT | op::MULTIPLY | op::DIVIDE | op::MODULO, None, [a, b]) => {
                if !a.concrete() || !b.concrete() {
                    return Type::Dyn;
                }
                match arithmetic(function, a, b) {
                    Some(t) => t,
                    None => self.no_overload(function, &args, id),
                }
            }
            ("size", _, _) => Type::Int,
            ("startsWith" | "endsWith" | "contains" | "matches", Some(Type::String), _) => {
                Type::Bool
            }
            _ => Type::Dyn,
        }
    }

    fn no_overload(&mut self, function: &str, args: &[Type<'a>], id: u64) -> Type<'a> {
        let names: Option<Vec<String>> = args.iter().map(Type::name).collect();
        match names {
            Some(names) => self.fail(
                id,
                format!(
                    "found no matching overload for '{function}' applied to '({})'",
                    names.join(", ")
                ),
            ),
            None => Type::Dyn,
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
            (List(x), List(y)) if x == y => Some(a.clone()),
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

/// One type for several values: theirs when they agree, else `dyn`.
fn joined(types: Vec<Type<'_>>) -> Type<'_> {
    let mut types = types.into_iter();
    let Some(first) = types.next() else { return Type::Dyn };
    if types.all(|t| t == first) {
        first
    } else {
        Type::Dyn
    }
}
