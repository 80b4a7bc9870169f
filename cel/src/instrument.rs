//! Rewrites a parsed program so that evaluating it pays for what it does (see [`crate::budget`]),
//! and finds the variables it reads.
//!
//! Every function call, list and map literal becomes `@cost(<it>)`, every comprehension range
//! `@range(<range>)`, and `s.replace(a, b)` (whose result can be far larger than its inputs)
//! becomes `@replace(s, a, b)`, which charges for the result before making it; `s.matches(re)`
//! becomes `@matches(s, re)`, which compiles each pattern once per thread (cel-rust's
//! compiles it on every call). The shapes the
//! interpreter recognises in a comprehension's step (`@result && x`, `@result + [x]`,
//! `c ? @result + [x] : @result`) are kept as they are, only their operands are rewritten.

use std::collections::BTreeSet;

use cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr};

/// Names that read as identifiers but are not variables: function namespaces and type names.
const NOT_VARIABLES: &[&str] = &[
    "base64",
    "bool",
    "bytes",
    "cel",
    "double",
    "duration",
    "dyn",
    "format",
    "int",
    "ip",
    "list",
    "lists",
    "map",
    "math",
    "null_type",
    "optional",
    "sets",
    "string",
    "strings",
    "timestamp",
    "type",
    "uint",
];

/// The free variables `expr` reads (comprehension variables excluded).
pub(crate) fn free_variables(expr: &IdedExpr) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    walk_free(expr, &mut Vec::new(), &mut found);
    found
}

fn walk_free(expr: &IdedExpr, bound: &mut Vec<String>, found: &mut BTreeSet<String>) {
    match &expr.expr {
        Expr::Ident(name) => {
            if !bound.iter().any(|b| b == name)
                && !NOT_VARIABLES.contains(&name.as_str())
                && !name.starts_with('@')
            {
                found.insert(name.clone());
            }
        }
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                walk_free(target, bound, found);
            }
            for arg in &call.args {
                walk_free(arg, bound, found);
            }
        }
        Expr::Select(select) => walk_free(&select.operand, bound, found),
        Expr::List(list) => list.elements.iter().for_each(|e| walk_free(e, bound, found)),
        Expr::Map(map) => map.entries.iter().for_each(|e| walk_entry(&e.expr, bound, found)),
        Expr::Struct(s) => s.entries.iter().for_each(|e| walk_entry(&e.expr, bound, found)),
        Expr::Comprehension(c) => {
            walk_free(&c.iter_range, bound, found);
            walk_free(&c.accu_init, bound, found);
            let before = bound.len();
            bound.push(c.accu_var.clone());
            bound.push(c.iter_var.clone());
            bound.extend(c.iter_var2.clone());
            walk_free(&c.loop_cond, bound, found);
            walk_free(&c.loop_step, bound, found);
            walk_free(&c.result, bound, found);
            bound.truncate(before);
        }
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn walk_entry(entry: &EntryExpr, bound: &mut Vec<String>, found: &mut BTreeSet<String>) {
    match entry {
        EntryExpr::MapEntry(e) => {
            walk_free(&e.key, bound, found);
            walk_free(&e.value, bound, found);
        }
        EntryExpr::StructField(f) => walk_free(&f.value, bound, found),
    }
}

/// Ids for the nodes added: far above any the parser gives.
struct Ids(u64);

impl Ids {
    fn wrap(&mut self, func: &str, args: Vec<IdedExpr>) -> IdedExpr {
        self.0 += 1;
        IdedExpr {
            id: self.0,
            expr: Expr::Call(CallExpr { func_name: func.to_string(), target: None, args }),
        }
    }
}

/// `expr`, rewritten to be charged for as it runs.
pub(crate) fn metered(expr: IdedExpr) -> IdedExpr {
    let mut ids = Ids(u64::MAX / 2);
    meter(expr, &mut ids)
}

fn meter(mut expr: IdedExpr, ids: &mut Ids) -> IdedExpr {
    match expr.expr {
        Expr::Call(call) => {
            let call = meter_call(call, ids);
            expr.expr = Expr::Call(call);
            ids.wrap("@cost", vec![expr])
        }
        Expr::List(mut list) => {
            list.elements = list.elements.into_iter().map(|e| meter(e, ids)).collect();
            expr.expr = Expr::List(list);
            ids.wrap("@cost", vec![expr])
        }
        Expr::Map(mut map) => {
            for entry in &mut map.entries {
                meter_entry(&mut entry.expr, ids);
            }
            expr.expr = Expr::Map(map);
            ids.wrap("@cost", vec![expr])
        }
        Expr::Struct(mut s) => {
            for entry in &mut s.entries {
                meter_entry(&mut entry.expr, ids);
            }
            expr.expr = Expr::Struct(s);
            expr
        }
        Expr::Select(mut select) => {
            let operand = std::mem::take(&mut *select.operand);
            *select.operand = meter(operand, ids);
            expr.expr = Expr::Select(select);
            expr
        }
        Expr::Comprehension(mut c) => {
            let range = std::mem::take(&mut c.iter_range);
            let range = meter(range, ids);
            c.iter_range = ids.wrap("@range", vec![range]);
            c.accu_init = meter(std::mem::take(&mut c.accu_init), ids);
            c.loop_cond = meter(std::mem::take(&mut c.loop_cond), ids);
            let accu = c.accu_var.clone();
            c.loop_step = meter_step(std::mem::take(&mut c.loop_step), &accu, ids);
            c.result = meter(std::mem::take(&mut c.result), ids);
            expr.expr = Expr::Comprehension(c);
            expr
        }
        other => {
            expr.expr = other;
            expr
        }
    }
}

/// The operands of a call, rewritten; `s.replace(a, b)` becomes `@replace(s, a, b)`.
fn meter_call(mut call: CallExpr, ids: &mut Ids) -> CallExpr {
    if let Some(target) = call.target.take() {
        let target = meter(*target, ids);
        let renamed = match (call.func_name.as_str(), call.args.len()) {
            ("replace", 2 | 3) => Some("@replace"),
            ("matches", 1) => Some("@matches"),
            _ => None,
        };
        if let Some(name) = renamed {
            let mut args = vec![target];
            args.extend(call.args.into_iter().map(|a| meter(a, ids)));
            return CallExpr { func_name: name.to_string(), target: None, args };
        }
        call.target = Some(Box::new(target));
    }
    if call.func_name == "matches" && call.args.len() == 2 {
        call.func_name = "@matches".to_string();
    }
    call.args = call.args.into_iter().map(|a| meter(a, ids)).collect();
    call
}

/// A comprehension's step keeps the shapes the interpreter's fast paths match on
/// (`@result && x`, `@result || x`, `@result + [x]`, `c ? @result + [x] : @result`): only
/// the operands other than the accumulator and the appended list are metered.
fn meter_step(mut expr: IdedExpr, accu: &str, ids: &mut Ids) -> IdedExpr {
    let is_accu = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(n) if n == accu);
    let Expr::Call(mut call) = expr.expr else {
        return meter(expr, ids);
    };
    let shaped = call.target.is_none()
        && match (call.func_name.as_str(), call.args.as_slice()) {
            ("_&&_" | "_||_" | "_+_", [first, _]) => is_accu(first),
            ("_?_:_", [_, _, last]) => is_accu(last),
            _ => false,
        };
    if !shaped {
        expr.expr = Expr::Call(call);
        return meter(expr, ids);
    }
    let name = call.func_name.clone();
    call.args = call
        .args
        .into_iter()
        .enumerate()
        .map(|(i, arg)| match (name.as_str(), i, arg.expr) {
            (_, _, Expr::Ident(n)) => IdedExpr { id: arg.id, expr: Expr::Ident(n) },
            ("_+_", 1, Expr::List(mut list)) => {
                list.elements = list.elements.into_iter().map(|e| meter(e, ids)).collect();
                IdedExpr { id: arg.id, expr: Expr::List(list) }
            }
            ("_?_:_", 1, other) => meter_step(IdedExpr { id: arg.id, expr: other }, accu, ids),
            (_, _, other) => meter(IdedExpr { id: arg.id, expr: other }, ids),
        })
        .collect();
    expr.expr = Expr::Call(call);
    expr
}

fn meter_entry(entry: &mut EntryExpr, ids: &mut Ids) {
    match entry {
        EntryExpr::MapEntry(e) => {
            e.key = meter(std::mem::take(&mut e.key), ids);
            e.value = meter(std::mem::take(&mut e.value), ids);
        }
        EntryExpr::StructField(f) => f.value = meter(std::mem::take(&mut f.value), ids),
    }
}
