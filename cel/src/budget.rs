//! The cost of one evaluation, counted while it runs. The interpreter has no hook of its
//! own, so the program is rewritten when compiled (see `instrument.rs`) to call two functions
//! of this module: `@cost(x)` around every function call and every list or map built, which
//! charges one plus the size of what was made, and `@range(x)` around every comprehension's
//! range, which charges one per element before the loop starts. The count lives in a
//! thread-local cell: evaluation is synchronous, so the thread is the evaluation. Once the
//! limit is passed every further charge fails, which ends the evaluation within one step.

use std::cell::Cell;

use cel::common::types::{CelBytes, CelList, CelMap, CelString};
use cel::common::value::{CowVal, Val};
use cel::ExecutionError;

thread_local! {
    /// (spent, limit) of the evaluation running on this thread; `None` outside one.
    static METER: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// The message cel-go gives when an evaluation passes its limit.
pub const CANCELLED: &str = "operation cancelled: actual cost limit exceeded";

/// Runs `f` with a budget of `limit`; what it returned and the cost it spent.
pub fn metered<T>(limit: u64, f: impl FnOnce() -> T) -> (T, u64) {
    let outer = METER.with(|m| m.replace(Some((0, limit))));
    let result = f();
    let spent = METER.with(|m| m.replace(outer)).map_or(0, |(spent, _)| spent);
    (result, spent)
}

/// Whether an evaluation that spent `spent` passed `limit`.
pub fn exceeded(spent: u64, limit: u64) -> bool {
    spent > limit
}

/// Charges `cost` to the running evaluation; fails once it is over its limit.
pub fn charge(cost: u64) -> Result<(), ExecutionError> {
    METER.with(|m| match m.get() {
        None => Ok(()),
        Some((spent, limit)) => {
            let spent = spent.saturating_add(cost);
            m.set(Some((spent, limit)));
            if spent > limit {
                Err(ExecutionError::function_error("@cost", CANCELLED))
            } else {
                Ok(())
            }
        }
    })
}

/// What a value costs to make: strings and bytes by their length (a tenth, as cel-go
/// charges string work), lists and maps by their elements.
pub fn size_cost(v: &dyn Val) -> u64 {
    if let Some(s) = v.downcast_ref::<CelString>() {
        return s.inner().len() as u64 / 10;
    }
    if let Some(b) = v.downcast_ref::<CelBytes>() {
        return b.inner().len() as u64 / 10;
    }
    if let Some(l) = v.downcast_ref::<CelList>() {
        return l.inner().len() as u64;
    }
    if let Some(m) = v.downcast_ref::<CelMap>() {
        return m.inner().len() as u64;
    }
    0
}

/// `@cost(x)`: charges for `x` and gives it back unchanged.
pub(crate) fn cost_of<'b, 'v>(
    mut args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let v = args.pop().ok_or_else(|| ExecutionError::invalid_argument_count(1, 0))?;
    charge(1 + size_cost(v.as_ref()))?;
    Ok(v)
}

/// `@range(x)`: charges one per element of the range `x` and gives it back unchanged.
pub(crate) fn range_of<'b, 'v>(
    mut args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let v = args.pop().ok_or_else(|| ExecutionError::invalid_argument_count(1, 0))?;
    let size = v.as_sizer().map_or(0, |s| (*s.size().inner()).max(0) as u64);
    charge(1 + size)?;
    Ok(v)
}
