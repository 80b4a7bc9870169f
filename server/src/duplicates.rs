//! Duplicate fields in a JSON body (`{"replicas": 1, "replicas": 2}`): parsing into a value
//! keeps the last one silently, so they are looked for separately, for `fieldValidation`.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The names of the fields that occur more than once in one object of `body`, in order.
pub fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    let _ = Finder { found: &mut found }.deserialize(&mut de);
    found
}

struct Finder<'a> {
    found: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Finder<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Finder<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !keys.insert(key.clone()) && !self.found.contains(&key) {
                self.found.push(key);
            }
            map.next_value_seed(Finder { found: self.found })?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Finder { found: self.found })?.is_some() {}
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
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
}
