//! cel-go's sets extension, which Kubernetes enables: `sets.contains(a, b)` (every element of
//! `b` is in `a`), `sets.equivalent(a, b)` and `sets.intersects(a, b)`.

use cel::common::types::LIST_TYPE;
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, Value};

use super::{ok, Out};

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(
        "sets.contains",
        "list_sets_contains_list",
        vec![LIST_TYPE, LIST_TYPE],
        contains,
    )?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        vec![LIST_TYPE, LIST_TYPE],
        equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        vec![LIST_TYPE, LIST_TYPE],
        intersects,
    )?;
    Ok(())
}

fn elements(v: &CowVal<'_, '_>) -> Vec<Box<dyn Val>> {
    match Value::try_from(v.as_ref()) {
        Ok(Value::List(items)) => {
            items.iter().filter_map(|i| Box::<dyn Val>::try_from(i.clone()).ok()).collect()
        }
        _ => Vec::new(),
    }
}

fn all_in(a: &[Box<dyn Val>], b: &[Box<dyn Val>]) -> bool {
    b.iter().all(|x| a.iter().any(|y| y.as_ref() == x.as_ref()))
}

fn contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (a, b) = (elements(&args[0]), elements(&args[1]));
    ok(Value::Bool(all_in(&a, &b)))
}

fn equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (a, b) = (elements(&args[0]), elements(&args[1]));
    ok(Value::Bool(all_in(&a, &b) && all_in(&b, &a)))
}

fn intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let (a, b) = (elements(&args[0]), elements(&args[1]));
    ok(Value::Bool(b.iter().any(|x| a.iter().any(|y| y.as_ref() == x.as_ref()))))
}
