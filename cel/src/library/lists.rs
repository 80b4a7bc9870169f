//! Kubernetes' list library: `isSorted()`, `sum()`, `min()`, `max()`, `indexOf(e)` and
//! `lastIndexOf(e)` on lists.

use std::cmp::Ordering;

use cel::common::types::{DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, Value};

use super::{fail, ok, value, Out};

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload("indexOf", "list_index_of", LIST_TYPE, vec![DYN_TYPE], index_of)?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    Ok(())
}

fn items(v: &CowVal<'_, '_>) -> Result<std::sync::Arc<Vec<Value>>, cel::ExecutionError> {
    match value(v)? {
        Value::List(items) => Ok(items),
        _ => Err(super::unexpected(v.as_ref(), "list")),
    }
}

/// The order of two elements, or the error cel-go gives for elements that have none.
fn order(a: &Value, b: &Value) -> Result<Ordering, cel::ExecutionError> {
    let ordering = match (a, b) {
        (Value::Int(a), Value::Int(b)) => a.partial_cmp(b),
        (Value::UInt(a), Value::UInt(b)) => a.partial_cmp(b),
        (Value::Float(a), Value::Float(b)) => a.partial_cmp(b),
        (Value::String(a), Value::String(b)) => a.partial_cmp(b),
        (Value::Bool(a), Value::Bool(b)) => a.partial_cmp(b),
        (Value::Bytes(a), Value::Bytes(b)) => a.partial_cmp(b),
        (Value::Duration(a), Value::Duration(b)) => a.partial_cmp(b),
        (Value::Timestamp(a), Value::Timestamp(b)) => a.partial_cmp(b),
        _ => None,
    };
    ordering.ok_or_else(|| fail("compare", "no such overload"))
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let items = items(&args[0])?;
    for pair in items.windows(2) {
        if order(&pair[0], &pair[1])? == Ordering::Greater {
            return ok(Value::Bool(false));
        }
    }
    ok(Value::Bool(true))
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let items = items(&args[0])?;
    let overflow = || fail("sum", "integer overflow");
    let total = match items.first() {
        None | Some(Value::Int(_)) => {
            let mut total = 0i64;
            for v in items.iter() {
                let Value::Int(i) = v else { return Err(fail("sum", "no such overload")) };
                total = total.checked_add(*i).ok_or_else(overflow)?;
            }
            Value::Int(total)
        }
        Some(Value::UInt(_)) => {
            let mut total = 0u64;
            for v in items.iter() {
                let Value::UInt(u) = v else { return Err(fail("sum", "no such overload")) };
                total = total.checked_add(*u).ok_or_else(overflow)?;
            }
            Value::UInt(total)
        }
        Some(Value::Float(_)) => {
            let mut total = 0f64;
            for v in items.iter() {
                let Value::Float(f) = v else { return Err(fail("sum", "no such overload")) };
                total += f;
            }
            Value::Float(total)
        }
        Some(Value::Duration(_)) => {
            let mut total = chrono::Duration::zero();
            for v in items.iter() {
                let Value::Duration(d) = v else { return Err(fail("sum", "no such overload")) };
                total = total.checked_add(d).ok_or_else(overflow)?;
            }
            Value::Duration(total)
        }
        Some(_) => return Err(fail("sum", "no such overload")),
    };
    ok(total)
}

fn extreme<'b, 'v>(args: Vec<CowVal<'b, 'v>>, name: &str, keep: Ordering) -> Out<'b, 'v> {
    let items = items(&args[0])?;
    let Some(mut best) = items.first() else {
        return Err(fail(name, format!("{name} called on empty list")));
    };
    for v in items.iter().skip(1) {
        if order(v, best)? == keep {
            best = v;
        }
    }
    ok(best.clone())
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    extreme(args, "min", Ordering::Less)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    extreme(args, "max", Ordering::Greater)
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (items, wanted) = (items(&args[0])?, &args[1]);
    let at = items.iter().position(|v| element_is(v, wanted));
    ok(Value::Int(at.map_or(-1, |i| i as i64)))
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (items, wanted) = (items(&args[0])?, &args[1]);
    let at = items.iter().rposition(|v| element_is(v, wanted));
    ok(Value::Int(at.map_or(-1, |i| i as i64)))
}

/// CEL equality of a list element and the value looked for.
fn element_is(v: &Value, wanted: &CowVal<'_, '_>) -> bool {
    let Ok(boxed) = Box::<dyn cel::common::value::Val>::try_from(v.clone()) else { return false };
    boxed.as_ref() == wanted.as_ref()
}
