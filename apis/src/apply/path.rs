//! The steps of a path into an object, as server-side apply names them: a field or map key
//! (`f:spec`), an associative-list item by its key fields (`k:{"name":"c"}`), a set item by its
//! value (`v:"x"`) or a list item by index (`i:0`). This module orders them as upstream does
//! (that order is the order of `fieldsV1` keys and of conflict lists), prints paths the way
//! conflicts show them (`.spec.containers[name="c"].image`) and compares JSON values the way
//! upstream compares them (numbers by value, whatever their JSON spelling).

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Value};

use crate::gofmt::{go_quote, go_v};

/// One step of a path into an object.
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A struct field or a map key: `f:<name>`, printed `.name`.
    Field(String),
    /// The item of an associative list with these key fields, sorted by name:
    /// `k:{"port":80,"protocol":"TCP"}`, printed `[port=80,protocol="TCP"]`.
    Key(Vec<(String, Value)>),
    /// The item of a set with this scalar value: `v:"x"`, printed `[="x"]`.
    Value(Value),
    /// The item at this index of a list: `i:0`, printed `[0]`.
    Index(usize),
}

impl PathElement {
    /// An associative-list item element; the key fields are sorted by name, as upstream
    /// keeps them.
    pub fn key(mut fields: Vec<(String, Value)>) -> PathElement {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    /// The element as a `fieldsV1` key: `f:name`, `k:{...}`, `v:...`, `i:3`.
    pub fn to_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let object: Map<String, Value> =
                    fields.iter().map(|(name, value)| (name.clone(), value.clone())).collect();
                format!("k:{}", crate::gofmt::go_json(&Value::Object(object)))
            }
            PathElement::Value(value) => format!("v:{}", crate::gofmt::go_json(value)),
            PathElement::Index(index) => format!("i:{index}"),
        }
    }

    /// Reads a `fieldsV1` key.
    pub fn from_key(key: &str) -> Result<PathElement, String> {
        let (kind, rest) = match key.split_once(':') {
            Some((kind, rest)) if kind.len() == 1 => (kind, rest),
            _ => return Err(format!("invalid path element {key:?}: missing colon")),
        };
        let json = || {
            serde_json::from_str::<Value>(rest)
                .map_err(|e| format!("invalid path element {key:?}: {e}"))
        };
        match kind {
            "f" => Ok(PathElement::Field(rest.to_string())),
            "v" => Ok(PathElement::Value(json()?)),
            "k" => match json()? {
                Value::Object(fields) => Ok(PathElement::key(fields.into_iter().collect())),
                _ => Err(format!("invalid path element {key:?}: keys must be an object")),
            },
            "i" => rest
                .parse()
                .map(PathElement::Index)
                .map_err(|_| format!("invalid path element {key:?}: bad index")),
            _ => Err(format!("invalid path element {key:?}: unknown path element type")),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }
}

/// Fields first, then keyed items, set items and indices; within a kind, by name, key
/// fields, value or index.
impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b) {
                    let order = an.cmp(bn).then_with(|| compare_values(av, bv));
                    if order != Ordering::Equal {
                        return order;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

/// Upstream's printed form, as conflicts show it.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(name, value)| format!("{name}={}", value_string(value)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(value) => write!(f, "[={}]", value_string(value)),
            PathElement::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// A whole path in upstream's printed form: `.spec.template.spec.containers[name="c"].image`.
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A value inside a printed path element: strings quoted as Go's `%q`, other scalars as `%v`.
fn value_string(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(value_string).collect();
            format!("[{}]", items.join(","))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            keys.into_iter().map(|k| format!("{k}={}", value_string(&map[k]))).collect()
        }
        other => go_v(other),
    }
}

/// Upstream's total order of values: numbers (by value), strings, booleans, lists, maps, null.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x.cmp(&y),
            _ => {
                let (x, y) = (x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN));
                x.partial_cmp(&y).unwrap_or(Ordering::Equal)
            }
        },
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (x, y) in x.iter().zip(y) {
                let order = compare_values(x, y);
                if order != Ordering::Equal {
                    return order;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xs: Vec<(&String, &Value)> = x.iter().collect();
            let mut ys: Vec<(&String, &Value)> = y.iter().collect();
            xs.sort_by(|a, b| a.0.cmp(b.0));
            ys.sort_by(|a, b| a.0.cmp(b.0));
            for ((xk, xv), (yk, yv)) in xs.iter().zip(&ys) {
                let order = xk.cmp(yk).then_with(|| compare_values(xv, yv));
                if order != Ordering::Equal {
                    return order;
                }
            }
            xs.len().cmp(&ys.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

/// Whether two values are equal as upstream sees them: numbers by value (`1` equals `1.0`),
/// objects whatever their key order.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => compare_values(a, b) == Ordering::Equal,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| values_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, xv)| y.get(k).is_some_and(|yv| values_equal(xv, yv)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(fields: Value) -> PathElement {
        PathElement::key(fields.as_object().unwrap().clone().into_iter().collect())
    }

    #[test]
    fn elements_serialise_as_fields_v1_keys() {
        let port = key(json!({"protocol": "TCP", "port": 80}));
        assert_eq!(port.to_key(), r#"k:{"port":80,"protocol":"TCP"}"#);
        assert_eq!(PathElement::from_key(&port.to_key()).unwrap(), port);
        assert_eq!(PathElement::Value(json!("a<b")).to_key(), r#"v:"a\u003cb""#);
        assert_eq!(PathElement::from_key("f:a:b").unwrap(), PathElement::Field("a:b".into()));
        assert_eq!(PathElement::from_key("i:3").unwrap(), PathElement::Index(3));
        assert!(PathElement::from_key("x:1").is_err());
        assert!(PathElement::from_key("name").is_err());
        assert!(PathElement::from_key("k:[1]").is_err());
    }

    #[test]
    fn elements_print_as_upstream_paths() {
        let path = [
            PathElement::Field("spec".into()),
            PathElement::Field("ports".into()),
            key(json!({"port": 80, "protocol": "TCP"})),
            PathElement::Field("targetPort".into()),
        ];
        assert_eq!(path_string(&path), r#".spec.ports[port=80,protocol="TCP"].targetPort"#);
        assert_eq!(PathElement::Value(json!("x")).to_string(), r#"[="x"]"#);
        assert_eq!(PathElement::Index(2).to_string(), "[2]");
    }

    #[test]
    fn elements_order_as_upstream() {
        let mut elements = [
            PathElement::Index(0),
            PathElement::Value(json!("b")),
            PathElement::Value(json!(2)),
            key(json!({"name": "a"})),
            PathElement::Field("b".into()),
            PathElement::Field("a".into()),
        ];
        elements.sort();
        let keys: Vec<String> = elements.iter().map(PathElement::to_key).collect();
        assert_eq!(keys, ["f:a", "f:b", r#"k:{"name":"a"}"#, "v:2", r#"v:"b""#, "i:0"]);
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(values_equal(&json!({"a": 1, "b": [1.0]}), &json!({"b": [1], "a": 1.0})));
        assert!(!values_equal(&json!(1), &json!("1")));
        assert_eq!(compare_values(&json!(2), &json!(10.5)), Ordering::Less);
        assert_eq!(compare_values(&json!(null), &json!("x")), Ordering::Greater);
    }
}
