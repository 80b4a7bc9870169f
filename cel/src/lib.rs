//! CEL as Kubernetes uses it: the expressions of CustomResourceDefinition validation rules
//! (`x-kubernetes-validations`), ValidatingAdmissionPolicies and admission webhooks'
//! `matchConditions`, built on the `cel` crate (cel-rust), with the Kubernetes libraries
//! those expressions call and a cost bound so that no expression can hang the server.
//!
//! Start at [`compile`]: it parses an expression once (with upstream's `ERROR: <input>:L:C:`
//! messages), refuses references to variables the caller does not declare, and prepares the
//! program for metered evaluation. Evaluate it as often as needed with
//! [`Program::evaluate`] (any value) or [`Program::evaluate_bool`], against an
//! [`Activation`]: the variables, set from JSON ([`Activation::json`], objects as CEL maps,
//! arrays as lists, integers as `int`), from values, or the `authorizer`
//! ([`Activation::authorizer`]).
//!
//! | file | what |
//! |---|---|
//! | [`budget`] | the cost of an evaluation, counted while it runs and stopped at its limit |
//! | `instrument.rs` | rewrites a parsed program so that evaluating it charges the budget |
//! | [`estimate`] | a compile-time estimate of a program's worst cost from the sizes of its inputs |
//! | [`check`] | type checking against the types of the variables (a CRD rule's schema): undefined fields, operators and functions without an overload, undeclared functions, mixed literals |
//! | `signatures.rs` | the overloads of every function, as the checker resolves calls |
//! | `convert.rs` | JSON to CEL values |
//! | [`escaping`] | object property names as CEL identifiers (`__namespace__`, `a__dash__b`) |
//! | [`library`] | the Kubernetes libraries: lists, regex, URLs, quantities, IPs and CIDRs, the authorizer, sets |
//! | [`crd`] | CRD validation rules: compiled per definition, evaluated per object |
//!
//! Upstream's cost model (cel-go's) is not reproduced unit for unit: here each function call,
//! list or map built and comprehension element costs one, and strings and lists produced cost
//! by their size, which bounds time and memory alike. The limits keep upstream's numbers
//! ([`PER_CALL_LIMIT`], [`RUNTIME_BUDGET`]).

pub mod admission_expressions;
pub mod budget;
pub mod check;
mod convert;
pub mod crd;
pub mod escaping;
pub mod estimate;
mod instrument;
pub mod library;
mod signatures;

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};

use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, ExecutionError, IdedExpr};

pub use cel::Value;
pub use library::authz::{Authorizer, AuthorizerValue, Decision, ResourceAttributes};

/// Upstream's limit on one evaluation (`PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Upstream's limit on all the evaluations of one request (`RuntimeCELCostBudget`).
pub const RUNTIME_BUDGET: u64 = 10_000_000;

/// The environment every program runs in: the standard library, the extensions Kubernetes
/// enables and its own libraries.
static ENV: LazyLock<Arc<cel::Env>> = LazyLock::new(|| Arc::new(library::env()));

/// Why an expression does not compile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// A syntax error, as cel-go prints them (`ERROR: <input>:1:5: ...`).
    #[error("{0}")]
    Syntax(String),
    /// A variable that the expression's context does not declare.
    #[error("ERROR: <input>:1:1: undeclared reference to '{0}' (in container '')")]
    Undeclared(String),
}

/// Why an evaluation failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// The evaluation reached its cost limit and was stopped.
    #[error("operation cancelled: actual cost limit exceeded")]
    CostLimit,
    /// The expression failed (a missing key, a function on the wrong type, ...), worded as
    /// cel-go words it where the two differ only in words.
    #[error("{0}")]
    Failed(String),
    /// The expression gave a value of another type than the caller needs.
    #[error("expected {want} but got {got}")]
    WrongType { want: &'static str, got: String },
}

/// A compiled expression: parse once, evaluate many times (programs are `Send + Sync`).
#[derive(Debug)]
pub struct Program {
    source: String,
    expr: IdedExpr,
    variables: BTreeSet<String>,
}

/// Compiles `source` for a context that declares `variables` (e.g. `self` and `oldSelf`);
/// any other free identifier is refused as cel-go's checker refuses it.
pub fn compile(source: &str, variables: &[&str]) -> Result<Program, CompileError> {
    let parsed = ENV.parser().parse(source).map_err(|e| CompileError::Syntax(e.to_string()))?;
    let used = instrument::free_variables(&parsed);
    if let Some(unknown) = used.iter().find(|v| !variables.contains(&v.as_str())) {
        return Err(CompileError::Undeclared(unknown.clone()));
    }
    Ok(Program { source: source.to_string(), expr: instrument::metered(parsed), variables: used })
}

/// Type-checks `source` with `variables` of the given types ([`check`]): its type, or the
/// first problem as cel-go prints it (`ERROR: <input>:L:C: ...` and the line under it).
pub fn type_check<'a>(
    source: &str,
    variables: &[check::Variable<'a>],
) -> Result<check::Type<'a>, String> {
    let (parsed, info) = ENV.parser().parse_with_source_info(source).map_err(|e| e.to_string())?;
    check::check(&parsed, &info, variables)
}

impl Program {
    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the expression reads the variable `name` (e.g. `oldSelf`: a transition rule).
    pub fn uses(&self, name: &str) -> bool {
        self.variables.contains(name)
    }

    /// The worst cost of an evaluation, estimated before any runs from the most the inputs
    /// can hold (see [`estimate`]).
    pub fn estimated_cost(&self, sizes: &dyn estimate::Sizes) -> u64 {
        estimate::cost(&self.expr, sizes)
    }

    /// Evaluates the expression against `activation`, stopping it once its cost passes
    /// `limit`; the value and the cost spent.
    pub fn evaluate(&self, activation: &Activation, limit: u64) -> Result<(Value, u64), EvalError> {
        let mut ctx = Context::with_env(ENV.clone());
        ctx.set_variable_resolver(activation);
        let (result, cost) = budget::metered(limit, || {
            let value = Value::resolve_val(&self.expr, &ctx)?;
            Value::try_from(value.as_ref())
        });
        match result {
            Ok(value) => Ok((value, cost)),
            Err(_) if cost > limit => Err(EvalError::CostLimit),
            Err(e) => Err(EvalError::Failed(go_words(&e))),
        }
        .and_then(|(value, cost)| {
            // A limit passed inside a branch whose error another operand absorbed
            // (`expensive || true`) still counts: the work was done.
            if budget::exceeded(cost, limit) {
                Err(EvalError::CostLimit)
            } else {
                Ok((value, cost))
            }
        })
    }

    /// [`Program::evaluate`] for an expression that must give a `bool`.
    pub fn evaluate_bool(
        &self,
        activation: &Activation,
        limit: u64,
    ) -> Result<(bool, u64), EvalError> {
        match self.evaluate(activation, limit)? {
            (Value::Bool(b), cost) => Ok((b, cost)),
            (other, _) => {
                Err(EvalError::WrongType { want: "bool", got: other.type_of().to_string() })
            }
        }
    }

    /// [`Program::evaluate`] for an expression that must give a `string`.
    pub fn evaluate_string(
        &self,
        activation: &Activation,
        limit: u64,
    ) -> Result<(String, u64), EvalError> {
        match self.evaluate(activation, limit)? {
            (Value::String(s), cost) => Ok((s.to_string(), cost)),
            (other, _) => {
                Err(EvalError::WrongType { want: "string", got: other.type_of().to_string() })
            }
        }
    }
}

/// cel-rust's error texts in cel-go's words where upstream's callers read them (CRD rule
/// errors print them; `no such overload` is matched on).
fn go_words(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::NoSuchOverload(_) => "no such overload".to_string(),
        ExecutionError::DivisionByZero(_) => "division by zero".to_string(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_string(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of range: {}", plain(i)),
        ExecutionError::UndeclaredReference(name) => format!("no such attribute: {name}"),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

fn plain(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

/// The variables of one evaluation, by name.
#[derive(Default)]
pub struct Activation {
    variables: Vec<(String, Box<dyn Val>)>,
}

impl std::fmt::Debug for Activation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.variables.iter().map(|(n, _)| n)).finish()
    }
}

impl Activation {
    pub fn new() -> Activation {
        Activation::default()
    }

    /// Sets `name` to a JSON value: objects are maps, arrays lists, integers `int`, other
    /// numbers `double`, `null` is `null`.
    pub fn json(&mut self, name: &str, value: &serde_json::Value) -> &mut Activation {
        self.value(name, convert::from_json(value))
    }

    /// Sets `name` to a CEL value.
    pub fn value(&mut self, name: &str, value: Value) -> &mut Activation {
        let boxed = Box::<dyn Val>::try_from(value).unwrap_or_else(|_| Box::new(NullVal));
        self.set(name, boxed)
    }

    /// Sets `name` to the `authorizer` of a request (see [`library::authz`]).
    pub fn authorizer(&mut self, name: &str, authorizer: AuthorizerValue) -> &mut Activation {
        self.value(name, Value::Opaque(Arc::new(authorizer)))
    }

    /// Sets `name` to a CEL value already made.
    fn set(&mut self, name: &str, value: Box<dyn Val>) -> &mut Activation {
        match self.variables.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.variables.push((name.to_string(), value)),
        }
        self
    }

    /// Whether `name` is set.
    pub fn has(&self, name: &str) -> bool {
        self.variables.iter().any(|(n, _)| n == name)
    }
}

impl VariableResolver for Activation {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        self.variables
            .iter()
            .find(|(n, _)| n == variable)
            .map(|(_, v)| CowVal::Borrowed(v.as_ref()))
    }
}

/// A CEL map with string keys: what a caller builds composite variables from (a policy's
/// `variables`).
pub fn map_value(entries: impl IntoIterator<Item = (String, Value)>) -> Value {
    use cel::objects::{Key, Map};
    let map = entries.into_iter().map(|(k, v)| (Key::String(Arc::new(k)), v)).collect();
    Value::Map(Map { map: Arc::new(map) })
}

/// What a value that cannot be made stands as (never in practice: every `Value` converts).
#[derive(Debug, Clone)]
struct NullVal;

impl Val for NullVal {
    fn get_type(&self) -> &cel::common::types::Type {
        &cel::common::types::NULL_TYPE
    }
    fn cel_type() -> &'static cel::common::types::Type {
        &cel::common::types::NULL_TYPE
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(NullVal)
    }
}

#[cfg(test)]
mod tests;
