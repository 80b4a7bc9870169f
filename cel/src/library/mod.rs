//! The libraries Kubernetes adds to CEL (k8s.io/apiserver's `library` package), on top of the
//! standard library and the `strings` and `base64` extensions:
//! [`lists`] (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`), [`regex`] (`find`,
//! `findAll`), [`urls`] (`url`, `isURL`, `getScheme`, ...), [`quantity`] (`quantity`,
//! `isQuantity`, `compareTo`, `add`, ...), [`ip`] (`ip`, `cidr`, `isIP`, `containsIP`, ...),
//! [`authz`] (the `authorizer` variable of admission policies) and [`sets`]
//! (`sets.contains`, `sets.equivalent`, `sets.intersects`) and [`format`] (`format.named`,
//! `format.dns1123Label()`, ..., `<format>.validate(s)`).
//!
//! Each function is an overload of the shared [`cel::Env`]; values of the Kubernetes types
//! (quantities, IPs, CIDRs, URLs, authorizer checks) are opaque values.

pub mod authz;
pub mod format;
pub mod ip;
pub mod lists;
pub mod quantity;
pub mod regex;
pub mod sets;
pub mod urls;

use std::sync::Arc;

use cel::common::types::{CelInt, Type, DYN_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{Env, ExecutionError, Value};

use crate::budget;

/// What an overload returns.
pub(crate) type Out<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// The environment of every program.
pub(crate) fn env() -> Env {
    let mut env = Env::stdlib();
    let built = (|| {
        env.add_extension(cel::extensions::strings)?;
        env.add_extension(cel::extensions::encoders)?;
        env.add_overload("@cost", "@cost(dyn)", vec![DYN_TYPE], budget::cost_of)?;
        env.add_overload("@range", "@range(dyn)", vec![DYN_TYPE], budget::range_of)?;
        env.add_overload(
            "@replace",
            "@replace(string,string,string)",
            vec![STRING_TYPE, STRING_TYPE, STRING_TYPE],
            replace,
        )?;
        env.add_overload(
            "@replace",
            "@replace(string,string,string,int)",
            vec![STRING_TYPE, STRING_TYPE, STRING_TYPE, cel::common::types::INT_TYPE],
            replace,
        )?;
        lists::register(&mut env)?;
        regex::register(&mut env)?;
        urls::register(&mut env)?;
        quantity::register(&mut env)?;
        ip::register(&mut env)?;
        authz::register(&mut env)?;
        sets::register(&mut env)?;
        format::register(&mut env)
    })();
    built.expect("the Kubernetes libraries declare no overload twice");
    env
}

/// `s.replace(old, new[, n])`, charged for the size of its result before it is made (an
/// empty `old` inserts `new` between every character).
fn replace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let s = string(&args[0])?;
    let (old, new) = (string(&args[1])?, string(&args[2])?);
    let n = match args.get(3) {
        Some(n) => int(n)?,
        None => -1,
    };
    let places =
        if old.is_empty() { s.chars().count() as u64 + 1 } else { s.matches(old).count() as u64 };
    let places = if n < 0 { places } else { places.min(n as u64) };
    let size = (s.len() as u64).saturating_add(places.saturating_mul(new.len() as u64));
    budget::charge(size / 10)?;
    let replaced = if n < 0 { s.replace(old, new) } else { s.replacen(old, new, n as usize) };
    ok(Value::String(Arc::new(replaced)))
}

/// An argument as a string.
pub(crate) fn string<'a>(v: &'a CowVal<'_, '_>) -> Result<&'a str, ExecutionError> {
    <&str>::try_from(v.as_ref()).map_err(|v| unexpected(v, "string"))
}

/// An argument as an int.
pub(crate) fn int(v: &CowVal<'_, '_>) -> Result<i64, ExecutionError> {
    v.downcast_ref::<CelInt>().map(|i| *i.inner()).ok_or_else(|| unexpected(v.as_ref(), "int"))
}

/// An argument as a value.
pub(crate) fn value(v: &CowVal<'_, '_>) -> Result<Value, ExecutionError> {
    Value::try_from(v.as_ref())
}

/// An argument as one of our opaque types.
pub(crate) fn opaque<T: Opaque + Clone>(v: &CowVal<'_, '_>) -> Result<T, ExecutionError> {
    match Value::try_from(v.as_ref()) {
        Ok(Value::Opaque(o)) => o.downcast_ref::<T>().cloned(),
        _ => None,
    }
    .ok_or_else(|| unexpected(v.as_ref(), "opaque"))
}

/// A result.
pub(crate) fn ok<'b, 'v>(v: Value) -> Out<'b, 'v> {
    let boxed: Box<dyn Val> = v.try_into()?;
    Ok(CowVal::Owned(boxed))
}

/// An opaque result.
pub(crate) fn ok_opaque<'b, 'v>(v: impl Opaque) -> Out<'b, 'v> {
    ok(Value::Opaque(Arc::new(v)))
}

pub(crate) fn unexpected(v: &dyn Val, want: &str) -> ExecutionError {
    ExecutionError::UnexpectedType { got: v.get_type().name().to_owned(), want: want.to_owned() }
}

/// An error of function `name` with cel-go's text.
pub(crate) fn fail(name: &str, message: impl ToString) -> ExecutionError {
    ExecutionError::function_error(name, message)
}

/// The type of our opaque values named `name`.
pub(crate) fn opaque_type(name: &'static str) -> Type {
    Type::new_opaque_type(name)
}
