//! Kubernetes' quantity library over [`rkube_apis::quantity::Quantity`]: `quantity(s)`,
//! `isQuantity(s)`, and on quantities `sign()`, `isInteger()`, `asInteger()`,
//! `asApproximateFloat()`, `add(q|int)`, `sub(q|int)`, `isLessThan(q)`, `isGreaterThan(q)`,
//! `compareTo(q)`; two quantities are `==` when their values are.

use std::sync::Arc;

use cel::common::types::{INT_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, Value};
use rkube_apis::quantity::Quantity;

use super::{fail, int, ok, ok_opaque, opaque, opaque_type, string, Out};

/// A quantity as a CEL value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CelQuantity(pub Quantity);

impl Opaque for CelQuantity {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.Quantity"
    }
}

/// What `resource.ParseQuantity` says of a string that is not a quantity.
const NOT_A_QUANTITY: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

const NANO: i128 = 1_000_000_000;

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let q = || opaque_type("kubernetes.Quantity");
    env.add_overload("quantity", "string_to_quantity", vec![STRING_TYPE], parse)?;
    env.add_overload("isQuantity", "is_quantity_string", vec![STRING_TYPE], is_quantity)?;
    env.add_member_overload("sign", "quantity_sign", q(), vec![], sign)?;
    env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], is_integer)?;
    env.add_member_overload("asInteger", "quantity_as_integer", q(), vec![], as_integer)?;
    env.add_member_overload("asApproximateFloat", "quantity_as_float", q(), vec![], as_float)?;
    env.add_member_overload("add", "quantity_add", q(), vec![q()], add)?;
    env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], add)?;
    env.add_member_overload("sub", "quantity_sub", q(), vec![q()], sub)?;
    env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], sub)?;
    env.add_member_overload("isLessThan", "quantity_less", q(), vec![q()], less)?;
    env.add_member_overload("isGreaterThan", "quantity_greater", q(), vec![q()], greater)?;
    env.add_member_overload("compareTo", "quantity_compare", q(), vec![q()], compare)?;
    Ok(())
}

fn parse_text(s: &str) -> Option<Quantity> {
    Quantity::parse(&serde_json::Value::String(s.to_string()))
}

fn parse<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let q = parse_text(string(&args[0])?).ok_or_else(|| fail("quantity", NOT_A_QUANTITY))?;
    ok_opaque(CelQuantity(q))
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(parse_text(string(&args[0])?).is_some()))
}

fn this(args: &[CowVal<'_, '_>]) -> Result<Quantity, cel::ExecutionError> {
    opaque::<CelQuantity>(&args[0]).map(|q| q.0)
}

/// The other operand: a quantity, or an int as a count.
fn other(args: &[CowVal<'_, '_>]) -> Result<Quantity, cel::ExecutionError> {
    match opaque::<CelQuantity>(&args[1]) {
        Ok(q) => Ok(q.0),
        Err(_) => Ok(Quantity::count(int(&args[1])?)),
    }
}

fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Int(this(&args)?.nanos().signum() as i64))
}

/// The value as an int64, when it is whole and fits (`AsInt64`).
fn whole(q: &Quantity) -> Option<i64> {
    (q.nanos() % NANO == 0).then(|| i64::try_from(q.nanos() / NANO).ok()).flatten()
}

fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(whole(&this(&args)?).is_some()))
}

fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let q = this(&args)?;
    let i = whole(&q).ok_or_else(|| fail("asInteger", "cannot convert value to integer"))?;
    ok(Value::Int(i))
}

fn as_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Float(this(&args)?.nanos() as f64 / NANO as f64))
}

fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok_opaque(CelQuantity(this(&args)?.add(&other(&args)?)))
}

fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok_opaque(CelQuantity(this(&args)?.sub(&other(&args)?)))
}

fn less<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(this(&args)? < other(&args)?))
}

fn greater<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(this(&args)? > other(&args)?))
}

fn compare<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Int(this(&args)?.cmp(&other(&args)?) as i64))
}

/// A quantity made from its string (for callers building values).
pub fn quantity_value(s: &str) -> Option<Value> {
    parse_text(s).map(|q| Value::Opaque(Arc::new(CelQuantity(q))))
}
