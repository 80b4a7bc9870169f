//! JSON -> protobuf message, writing what go-to-protobuf would for the same object: fields in
//! tag order, map entries sorted by key, repeated scalars unpacked.

use base64::Engine as _;
use serde_json::Value;

use super::schema::{Field, Fields, Kind, MessageId, Schema, Shape, Special};
use super::wire::{self, put_bytes, put_key, put_varint};
use super::{Failure, MAX_DEPTH};

pub(crate) struct Encoder<'s> {
    pub(crate) schema: &'s Schema,
}

impl Encoder<'_> {
    pub(crate) fn message(
        &self,
        id: MessageId,
        value: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), Failure> {
        if depth > MAX_DEPTH {
            return Err(Failure::new(format!("objects nested more than {MAX_DEPTH} deep")));
        }
        match &self.schema.messages[id].shape {
            Shape::Special(special) => self.special(*special, value, out, depth),
            Shape::Fields(fields) => self.fields(fields, value, out, depth),
        }
    }

    fn fields(
        &self,
        fields: &Fields,
        value: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), Failure> {
        let object = match value {
            Value::Object(object) => object,
            Value::Null => return Ok(()),
            other => return Err(expected("an object", other)),
        };
        for field in fields.in_wire_order() {
            if field.inline {
                // An embedded Go struct: a nested message made of this same object's fields.
                if let Kind::Message(id) = field.kind {
                    let mut inner = Vec::new();
                    self.message(id, value, &mut inner, depth + 1)?;
                    put_bytes(out, field.tag, &inner);
                }
                continue;
            }
            match object.get(&field.json) {
                None | Some(Value::Null) => {}
                Some(value) => {
                    self.field(field, value, out, depth).map_err(|e| e.at_field(&field.json))?
                }
            }
        }
        Ok(())
    }

    fn field(
        &self,
        field: &Field,
        value: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), Failure> {
        if field.map {
            let Value::Object(map) = value else { return Err(expected("an object", value)) };
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            for (key, value) in entries {
                let mut entry = Vec::new();
                put_bytes(&mut entry, 1, key.as_bytes());
                self.value(field.kind, 2, value, &mut entry, depth).map_err(|e| e.at_key(key))?;
                put_bytes(out, field.tag, &entry);
            }
            return Ok(());
        }
        if field.repeated {
            let Value::Array(items) = value else { return Err(expected("an array", value)) };
            for (index, item) in items.iter().enumerate() {
                self.value(field.kind, field.tag, item, out, depth)
                    .map_err(|e| e.at_index(index))?;
            }
            return Ok(());
        }
        self.value(field.kind, field.tag, value, out, depth)
    }

    /// One value with its key. A null (in a list or map) is the zero value, as in Go.
    fn value(
        &self,
        kind: Kind,
        tag: u32,
        value: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), Failure> {
        match kind {
            Kind::Message(id) => {
                let mut inner = Vec::new();
                self.message(id, value, &mut inner, depth + 1)?;
                put_bytes(out, tag, &inner);
            }
            Kind::String => put_bytes(out, tag, string(value)?.as_bytes()),
            Kind::Bytes => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(string(value)?)
                    .map_err(|e| Failure::new(format!("invalid base64: {e}")))?;
                put_bytes(out, tag, &bytes);
            }
            Kind::Bool => {
                let b = match value {
                    Value::Bool(b) => *b,
                    Value::Null => false,
                    other => return Err(expected("a boolean", other)),
                };
                put_key(out, tag, wire::VARINT);
                put_varint(out, u64::from(b));
            }
            Kind::Int32 | Kind::Enum => {
                let n = integer(value)?;
                let n = i32::try_from(n)
                    .map_err(|_| Failure::new(format!("{n} does not fit in 32 bits")))?;
                put_key(out, tag, wire::VARINT);
                // Negative int32 values are sign-extended to 64 bits on the wire.
                put_varint(out, i64::from(n) as u64);
            }
            Kind::Int64 => {
                put_key(out, tag, wire::VARINT);
                put_varint(out, integer(value)? as u64);
            }
            Kind::Double => {
                put_key(out, tag, wire::FIXED64);
                out.extend_from_slice(&float(value)?.to_le_bytes());
            }
            Kind::Float => {
                put_key(out, tag, wire::FIXED32);
                out.extend_from_slice(&(float(value)? as f32).to_le_bytes());
            }
        }
        Ok(())
    }

    fn special(
        &self,
        special: Special,
        value: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), Failure> {
        if value.is_null() {
            // Go's zero Time, an absent schema, an empty RawExtension: no fields at all.
            return Ok(());
        }
        match special {
            Special::Time | Special::MicroTime => {
                let text = string(value)?;
                let (seconds, nanos) = super::special::parse_time(text)
                    .ok_or_else(|| Failure::new(format!("{text:?} is not an RFC 3339 time")))?;
                put_key(out, 1, wire::VARINT);
                put_varint(out, seconds as u64);
                put_key(out, 2, wire::VARINT);
                put_varint(out, i64::from(nanos) as u64);
            }
            Special::Duration => {
                let text = string(value)?;
                let nanos = super::special::parse_duration(text)
                    .ok_or_else(|| Failure::new(format!("{text:?} is not a duration")))?;
                put_key(out, 1, wire::VARINT);
                put_varint(out, nanos as u64);
            }
            Special::IntOrString => {
                let (kind, int, text) = match value {
                    Value::Number(_) => {
                        let n = integer(value)?;
                        let n = i32::try_from(n)
                            .map_err(|_| Failure::new(format!("{n} does not fit in 32 bits")))?;
                        (0, n, "")
                    }
                    Value::String(text) => (1, 0, text.as_str()),
                    other => return Err(expected("an integer or a string", other)),
                };
                put_key(out, 1, wire::VARINT);
                put_varint(out, kind);
                put_key(out, 2, wire::VARINT);
                put_varint(out, i64::from(int) as u64);
                put_bytes(out, 3, text.as_bytes());
            }
            Special::Quantity => {
                let text = match value {
                    Value::String(text) => text.clone(),
                    Value::Number(n) => n.to_string(),
                    other => return Err(expected("a quantity string", other)),
                };
                put_bytes(out, 1, text.as_bytes());
            }
            Special::RawExtension | Special::FieldsV1 | Special::Json => {
                let raw = serde_json::to_vec(value)
                    .map_err(|e| Failure::new(format!("cannot serialise embedded JSON: {e}")))?;
                put_bytes(out, 1, &raw);
            }
            Special::OrArray(props) => match value {
                Value::Array(items) => {
                    for (index, item) in items.iter().enumerate() {
                        self.value(Kind::Message(props), 2, item, out, depth)
                            .map_err(|e| e.at_index(index))?;
                    }
                }
                _ => self.value(Kind::Message(props), 1, value, out, depth)?,
            },
            Special::OrBool(props) => match value {
                Value::Bool(allows) => {
                    put_key(out, 1, wire::VARINT);
                    put_varint(out, u64::from(*allows));
                }
                _ => {
                    put_key(out, 1, wire::VARINT);
                    put_varint(out, 1);
                    self.value(Kind::Message(props), 2, value, out, depth)?;
                }
            },
            Special::OrStringArray(props) => match value {
                Value::Array(items) => {
                    for (index, item) in items.iter().enumerate() {
                        self.value(Kind::String, 2, item, out, depth)
                            .map_err(|e| e.at_index(index))?;
                    }
                }
                _ => self.value(Kind::Message(props), 1, value, out, depth)?,
            },
            Special::StringArray => {
                let Value::Array(items) = value else { return Err(expected("an array", value)) };
                for (index, item) in items.iter().enumerate() {
                    self.value(Kind::String, 1, item, out, depth).map_err(|e| e.at_index(index))?;
                }
            }
        }
        Ok(())
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn expected(what: &str, found: &Value) -> Failure {
    Failure::new(format!("expected {what}, found {}", type_name(found)))
}

fn string(value: &Value) -> Result<&str, Failure> {
    match value {
        Value::String(s) => Ok(s),
        Value::Null => Ok(""),
        other => Err(expected("a string", other)),
    }
}

fn integer(value: &Value) -> Result<i64, Failure> {
    match value {
        Value::Number(n) => {
            n.as_i64().ok_or_else(|| Failure::new(format!("{n} is not a 64-bit integer")))
        }
        Value::Null => Ok(0),
        other => Err(expected("an integer", other)),
    }
}

fn float(value: &Value) -> Result<f64, Failure> {
    match value {
        Value::Number(n) => n.as_f64().ok_or_else(|| Failure::new(format!("{n} is not a number"))),
        Value::Null => Ok(0.0),
        other => Err(expected("a number", other)),
    }
}
