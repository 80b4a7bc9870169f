//! JSON to CEL values, as upstream's unstructured values read: objects are maps with string
//! keys, arrays lists, integers `int` (a `uint` only past `int`'s range), other numbers
//! `double`.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::Value;

pub(crate) fn from_json(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(from_json).collect()))
        }
        serde_json::Value::Object(fields) => {
            let map: HashMap<Key, Value> = fields
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), from_json(v)))
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}
