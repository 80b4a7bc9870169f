//! Duplicate fields in a JSON body (`{"replicas": 1, "replicas": 2}`): serde_json's value
//! keeps the last one silently, so bodies are parsed here, into the same value (the last one
//! wins, in the first one's place), noting the duplicates for `fieldValidation` on the way.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// `body` as a JSON value, and the names of the fields that occur more than once in one of
/// its objects, in order.
pub fn parse(body: &[u8]) -> serde_json::Result<(Value, Vec<String>)> {
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = Builder { found: &mut found }.deserialize(&mut de)?;
    de.end()?;
    Ok((value, found))
}

/// The names of the fields that occur more than once in one object of `body`, in order.
#[cfg(test)]
fn duplicate_fields(body: &[u8]) -> Vec<String> {
    parse(body).map(|(_, found)| found).unwrap_or_default()
}

struct Builder<'a> {
    found: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Builder<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Builder<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let value = access.next_value_seed(Builder { found: self.found })?;
            if map.contains_key(&key) && !self.found.contains(&key) {
                self.found.push(key.clone());
            }
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(access.size_hint().unwrap_or(0));
        while let Some(item) = access.next_element_seed(Builder { found: self.found })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_duplicates_at_any_depth() {
        let body =
            br#"{"spec":{"replicas":1,"replicas":2,"template":{"a":[{"x":1,"x":2}]}},"kind":"D"}"#;
        assert_eq!(duplicate_fields(body), vec!["replicas", "x"]);
        assert!(duplicate_fields(br#"{"a":1,"b":{"a":2}}"#).is_empty());
    }

    #[test]
    fn parses_as_serde_json_does() {
        let body = r#" {"b":[1,-2,3.5,true,null,"s\u00e9"],"a":{"x":1,"y":2,"x":3}} "#;
        let (value, found) = parse(body.as_bytes()).unwrap();
        assert_eq!(value, serde_json::from_str::<Value>(body).unwrap());
        assert_eq!(value.to_string(), r#"{"b":[1,-2,3.5,true,null,"sé"],"a":{"x":3,"y":2}}"#);
        assert_eq!(found, vec!["x"]);
        assert!(parse(b"{} x").is_err());
        assert!(parse(b"{\"a\":").is_err());
    }
}
