//! Kubernetes' regex library: `s.find(re)` (the first match, `""` without one) and
//! `s.findAll(re[, n])` (every match, or the first `n`). Compiled patterns are kept per
//! thread, so a rule that runs per object compiles its pattern once.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::{INT_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::{fail, int, ok, string, Out};

/// How many patterns a thread keeps compiled.
const CACHED: usize = 256;

thread_local! {
    static COMPILED: RefCell<HashMap<String, Arc<regex::Regex>>> = RefCell::new(HashMap::new());
}

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("find", "string_find_string", STRING_TYPE, vec![STRING_TYPE], find)?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all,
    )?;
    Ok(())
}

/// The compiled `pattern`.
pub(crate) fn compiled(name: &str, pattern: &str) -> Result<Arc<regex::Regex>, ExecutionError> {
    COMPILED.with(|cache| {
        if let Some(re) = cache.borrow().get(pattern) {
            return Ok(re.clone());
        }
        let re = Arc::new(regex::Regex::new(pattern).map_err(|e| fail(name, e))?);
        let mut cache = cache.borrow_mut();
        if cache.len() >= CACHED {
            cache.clear();
        }
        cache.insert(pattern.to_string(), re.clone());
        Ok(re)
    })
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let re = compiled("find", string(&args[1])?)?;
    let found = re.find(string(&args[0])?).map_or("", |m| m.as_str());
    ok(Value::String(Arc::new(found.to_string())))
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let re = compiled("findAll", string(&args[1])?)?;
    let limit = match args.get(2) {
        Some(n) => int(n)?,
        None => -1,
    };
    let matches =
        re.find_iter(string(&args[0])?).map(|m| Value::String(Arc::new(m.as_str().into())));
    let found: Vec<Value> = match usize::try_from(limit) {
        Ok(n) => matches.take(n).collect(),
        Err(_) => matches.collect(),
    };
    ok(Value::List(Arc::new(found)))
}
