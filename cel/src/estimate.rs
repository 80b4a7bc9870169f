//! A compile-time estimate of the most an evaluation can cost, from the most its inputs can
//! hold, as upstream refuses CRD rules whose estimate passes its limit before any object is
//! written. The estimate follows the shape of the metering (see [`crate::budget`]): one per
//! call, select, list and map built; comprehensions cost their range's most elements times
//! their body; string functions a tenth of their receiver's longest length.

use cel::common::ast::{EntryExpr, Expr, IdedExpr};

/// How large the values at paths can be: a path starts at a variable (`self`) and goes
/// through field names and `[*]` (any element of a list or map).
pub trait Sizes {
    /// The most elements of the list or map, or characters of the string, at `path`; `None`
    /// when unknown (counted as one).
    fn max_size(&self, path: &[String]) -> Option<u64>;
}

/// Sizes for expressions without a schema: every size unknown.
pub struct Unknown;

impl Sizes for Unknown {
    fn max_size(&self, _: &[String]) -> Option<u64> {
        None
    }
}

/// String functions whose work grows with their receiver's length.
const SCANS: &[&str] = &[
    "matches",
    "contains",
    "startsWith",
    "endsWith",
    "find",
    "findAll",
    "split",
    "@replace",
    "lowerAscii",
    "upperAscii",
    "trim",
    "indexOf",
    "lastIndexOf",
    "substring",
    "url",
    "isURL",
    "quantity",
    "isQuantity",
    "ip",
    "cidr",
    "isIP",
    "isCIDR",
    "join",
    "format",
    "size",
];

pub(crate) fn cost(expr: &IdedExpr, sizes: &dyn Sizes) -> u64 {
    Estimator { sizes, bound: Vec::new() }.cost(expr)
}

struct Estimator<'a> {
    sizes: &'a dyn Sizes,
    /// Comprehension variables and the path each stands for.
    bound: Vec<(String, Option<Vec<String>>)>,
}

impl Estimator<'_> {
    fn path(&self, expr: &IdedExpr) -> Option<Vec<String>> {
        match &expr.expr {
            Expr::Ident(name) => match self.bound.iter().rev().find(|(n, _)| n == name) {
                Some((_, path)) => path.clone(),
                None => Some(vec![name.clone()]),
            },
            Expr::Select(s) => {
                let mut path = self.path(&s.operand)?;
                path.push(s.field.clone());
                Some(path)
            }
            Expr::Call(c) if c.func_name.starts_with('@') && c.args.len() == 1 => {
                self.path(&c.args[0])
            }
            Expr::Call(c) if c.func_name == "_[_]" && c.args.len() == 2 => {
                let mut path = self.path(&c.args[0])?;
                path.push("[*]".to_string());
                Some(path)
            }
            _ => None,
        }
    }

    fn size(&self, expr: &IdedExpr) -> u64 {
        self.path(expr).and_then(|p| self.sizes.max_size(&p)).unwrap_or(1)
    }

    fn cost(&mut self, expr: &IdedExpr) -> u64 {
        match &expr.expr {
            Expr::Ident(_) => 1,
            Expr::Literal(_) | Expr::Unspecified => 0,
            Expr::Select(s) => 1 + self.cost(&s.operand),
            // The metering's own calls cost nothing: they stand for what they wrap.
            Expr::Call(c) if matches!(c.func_name.as_str(), "@cost" | "@range") => {
                c.args.iter().fold(0, |t, a| t.saturating_add(self.cost(a)))
            }
            Expr::Call(c) => {
                let mut total: u64 = 1;
                if let Some(target) = &c.target {
                    total = total.saturating_add(self.cost(target));
                    if SCANS.contains(&c.func_name.as_str()) {
                        total = total.saturating_add(self.size(target) / 10);
                    }
                } else if SCANS.contains(&c.func_name.as_str()) {
                    if let Some(first) = c.args.first() {
                        total = total.saturating_add(self.size(first) / 10);
                    }
                }
                c.args.iter().fold(total, |t, a| t.saturating_add(self.cost(a)))
            }
            Expr::List(l) => l.elements.iter().fold(1, |t, e| t.saturating_add(self.cost(e))),
            Expr::Map(m) => m.entries.iter().fold(1, |t, e| t.saturating_add(self.entry(&e.expr))),
            Expr::Struct(s) => {
                s.entries.iter().fold(1, |t, e| t.saturating_add(self.entry(&e.expr)))
            }
            Expr::Comprehension(c) => {
                let n = self.size(&c.iter_range);
                let element = self.path(&c.iter_range).map(|mut p| {
                    p.push("[*]".to_string());
                    p
                });
                let outside = self.cost(&c.iter_range).saturating_add(self.cost(&c.accu_init));
                let before = self.bound.len();
                self.bound.push((c.iter_var.clone(), element));
                if let Some(second) = &c.iter_var2 {
                    self.bound.push((second.clone(), None));
                }
                self.bound.push((c.accu_var.clone(), None));
                let step = self.cost(&c.loop_cond).saturating_add(self.cost(&c.loop_step)) + 1;
                let result = self.cost(&c.result);
                self.bound.truncate(before);
                outside.saturating_add(n.saturating_mul(step)).saturating_add(result)
            }
        }
    }

    fn entry(&mut self, entry: &EntryExpr) -> u64 {
        match entry {
            EntryExpr::MapEntry(e) => self.cost(&e.key).saturating_add(self.cost(&e.value)),
            EntryExpr::StructField(f) => self.cost(&f.value),
        }
    }
}

/// Upstream's words for an estimate over its limit (`getCostErrorMessage`).
pub fn over_limit_message(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule(s), or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}
