//! Protobuf message -> the JSON kube-apiserver would serve for it.

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use super::schema::{Field, Fields, Kind, MessageId, Schema, Shape, Special};
use super::wire::{self, Reader};
use super::{Failure, MAX_DEPTH};

/// What one field of a message has collected while its bytes are read.
enum Slot<'a> {
    Scalar(Value),
    List(Vec<Value>),
    Map(Map<String, Value>),
    /// A singular message field may occur more than once; protobuf merges the occurrences,
    /// which is the same as decoding their concatenation.
    Parts(Vec<&'a [u8]>),
}

pub(crate) struct Decoder<'s> {
    pub(crate) schema: &'s Schema,
}

impl Decoder<'_> {
    pub(crate) fn message(
        &self,
        id: MessageId,
        bytes: &[u8],
        depth: usize,
    ) -> Result<Value, Failure> {
        if depth > MAX_DEPTH {
            return Err(Failure::new(format!("messages nested more than {MAX_DEPTH} deep")));
        }
        match &self.schema.messages[id].shape {
            Shape::Special(special) => self.special(*special, bytes, depth),
            Shape::Fields(fields) => self.fields(fields, bytes, depth),
        }
    }

    fn fields(&self, fields: &Fields, bytes: &[u8], depth: usize) -> Result<Value, Failure> {
        let mut slots: Vec<Option<Slot>> = Vec::new();
        slots.resize_with(fields.list.len(), || None);
        let mut reader = Reader::new(bytes);
        while !reader.is_empty() {
            let (tag, wire_type) = reader.key()?;
            let Some(index) = fields.index(tag) else {
                reader.skip(wire_type)?;
                continue;
            };
            let field = &fields.list[index];
            let slot = &mut slots[index];
            self.read_field(field, wire_type, &mut reader, slot, depth)
                .map_err(|e| at(e, field))?;
        }
        let mut out = Map::new();
        for (field, slot) in fields.list.iter().zip(slots) {
            let value = match slot {
                None => continue,
                Some(Slot::Scalar(value)) => {
                    if field.omit_zero && !field.required && is_zero(&value) {
                        continue;
                    }
                    value
                }
                Some(Slot::List(values)) if values.is_empty() => continue,
                Some(Slot::List(values)) => Value::Array(values),
                Some(Slot::Map(map)) => Value::Object(map),
                Some(Slot::Parts(parts)) => {
                    let Kind::Message(id) = field.kind else { continue };
                    let joined;
                    let bytes = match parts.as_slice() {
                        [one] => *one,
                        many => {
                            joined = many.concat();
                            &joined
                        }
                    };
                    self.message(id, bytes, depth + 1).map_err(|e| at(e, field))?
                }
            };
            if field.inline {
                // An embedded Go struct: its fields belong to this object.
                if let Value::Object(inner) = value {
                    out.extend(inner);
                }
            } else {
                out.insert(field.json.clone(), value);
            }
        }
        Ok(Value::Object(out))
    }

    fn read_field<'a>(
        &self,
        field: &Field,
        wire_type: u8,
        reader: &mut Reader<'a>,
        slot: &mut Option<Slot<'a>>,
        depth: usize,
    ) -> Result<(), Failure> {
        if field.map {
            let entry = expect_len(reader, wire_type)?;
            let (key, value) = self.map_entry(field.kind, entry, depth)?;
            match slot.get_or_insert_with(|| Slot::Map(Map::new())) {
                Slot::Map(map) => {
                    map.insert(key, value);
                }
                _ => return Err(unreachable_slot()),
            }
            return Ok(());
        }
        if field.repeated {
            let list = match slot.get_or_insert_with(|| Slot::List(Vec::new())) {
                Slot::List(list) => list,
                _ => return Err(unreachable_slot()),
            };
            if wire_type == wire::LEN && field.kind.packable() {
                let mut packed = Reader::new(reader.bytes()?);
                while !packed.is_empty() {
                    let value = scalar(field.kind, element_wire_type(field.kind), &mut packed)
                        .map_err(|e| e.at_index(list.len()))?;
                    list.push(value);
                }
                return Ok(());
            }
            let value = match field.kind {
                Kind::Message(id) => {
                    let bytes = expect_len(reader, wire_type)?;
                    self.message(id, bytes, depth + 1)
                }
                kind => scalar(kind, wire_type, reader),
            }
            .map_err(|e| e.at_index(list.len()))?;
            list.push(value);
            return Ok(());
        }
        match field.kind {
            Kind::Message(_) => {
                let bytes = expect_len(reader, wire_type)?;
                match slot.get_or_insert_with(|| Slot::Parts(Vec::new())) {
                    Slot::Parts(parts) => parts.push(bytes),
                    _ => return Err(unreachable_slot()),
                }
            }
            kind => *slot = Some(Slot::Scalar(scalar(kind, wire_type, reader)?)),
        }
        Ok(())
    }

    /// One entry of a `map<string, V>`: {key=1, value=2}. A missing key or value is the zero
    /// value, as protobuf defines.
    fn map_entry(
        &self,
        kind: Kind,
        entry: &[u8],
        depth: usize,
    ) -> Result<(String, Value), Failure> {
        let mut key = String::new();
        let mut value = None;
        let mut parts: Vec<&[u8]> = Vec::new();
        let mut reader = Reader::new(entry);
        while !reader.is_empty() {
            match reader.key()? {
                (1, wire_type) => key = string(expect_len(&mut reader, wire_type)?),
                (2, wire_type) => match kind {
                    Kind::Message(_) => parts.push(expect_len(&mut reader, wire_type)?),
                    kind => {
                        value =
                            Some(scalar(kind, wire_type, &mut reader).map_err(|e| e.at_key(&key))?)
                    }
                },
                (_, wire_type) => reader.skip(wire_type)?,
            }
        }
        let value = match (kind, value) {
            (Kind::Message(id), _) => {
                self.message(id, &parts.concat(), depth + 1).map_err(|e| e.at_key(&key))?
            }
            (_, Some(value)) => value,
            (kind, None) => zero(kind),
        };
        Ok((key, value))
    }

    fn special(&self, special: Special, bytes: &[u8], depth: usize) -> Result<Value, Failure> {
        match special {
            Special::Time | Special::MicroTime => {
                // An empty message is Go's zero time, which marshals as null.
                if bytes.is_empty() {
                    return Ok(Value::Null);
                }
                let (mut seconds, mut nanos) = (0i64, 0i64);
                read_fields(bytes, |tag, wire_type, reader| {
                    match tag {
                        1 => seconds = varint(reader, wire_type)? as i64,
                        2 => nanos = i64::from(varint(reader, wire_type)? as i32),
                        _ => reader.skip(wire_type)?,
                    }
                    Ok(())
                })?;
                let text = if special == Special::Time {
                    super::special::format_time(seconds, nanos)
                } else {
                    super::special::format_micro_time(seconds, nanos)
                };
                text.map(Value::String).ok_or_else(|| {
                    Failure::new(format!("timestamp {seconds}s {nanos}ns is out of range"))
                })
            }
            Special::Duration => {
                let mut nanos = 0i64;
                read_fields(bytes, |tag, wire_type, reader| {
                    match tag {
                        1 => nanos = varint(reader, wire_type)? as i64,
                        _ => reader.skip(wire_type)?,
                    }
                    Ok(())
                })?;
                Ok(Value::String(super::special::format_duration(nanos)))
            }
            Special::IntOrString => {
                let (mut kind, mut int, mut text) = (0u64, 0i32, String::new());
                read_fields(bytes, |tag, wire_type, reader| {
                    match tag {
                        1 => kind = varint(reader, wire_type)?,
                        2 => int = varint(reader, wire_type)? as i32,
                        3 => text = string(expect_len(reader, wire_type)?),
                        _ => reader.skip(wire_type)?,
                    }
                    Ok(())
                })?;
                match kind {
                    0 => Ok(Value::from(int)),
                    1 => Ok(Value::String(text)),
                    other => Err(Failure::new(format!(
                        "IntOrString type {other} is neither 0 (int) nor 1 (string)"
                    ))),
                }
            }
            Special::Quantity => {
                // No string is Go's zero Quantity, which prints as "0".
                let mut text = "0".to_string();
                read_fields(bytes, |tag, wire_type, reader| {
                    match tag {
                        1 => text = string(expect_len(reader, wire_type)?),
                        _ => reader.skip(wire_type)?,
                    }
                    Ok(())
                })?;
                Ok(Value::String(text))
            }
            Special::RawExtension | Special::FieldsV1 | Special::Json => {
                let mut raw: &[u8] = &[];
                read_fields(bytes, |tag, wire_type, reader| {
                    match tag {
                        1 => raw = expect_len(reader, wire_type)?,
                        _ => reader.skip(wire_type)?,
                    }
                    Ok(())
                })?;
                self.embedded(raw, special == Special::RawExtension, depth)
            }
            Special::OrArray(props) | Special::OrStringArray(props) => {
                let mut schema: Vec<&[u8]> = Vec::new();
                let mut items = Vec::new();
                read_fields(bytes, |tag, wire_type, reader| {
                    match tag {
                        1 => schema.push(expect_len(reader, wire_type)?),
                        2 => {
                            let item = expect_len(reader, wire_type)?;
                            let index = items.len();
                            items.push(if matches!(special, Special::OrArray(_)) {
                                self.message(props, item, depth + 1)
                                    .map_err(|e| e.at_index(index))?
                            } else {
                                Value::String(string(item))
                            });
                        }
                        _ => reader.skip(wire_type)?,
                    }
                    Ok(())
                })?;
                if !items.is_empty() {
                    Ok(Value::Array(items))
                } else if !schema.is_empty() {
                    self.message(props, &schema.concat(), depth + 1)
                } else {
                    Ok(Value::Null)
                }
            }
            Special::OrBool(props) => {
                let mut allows = false;
                let mut schema: Vec<&[u8]> = Vec::new();
                read_fields(bytes, |tag, wire_type, reader| {
                    match tag {
                        1 => allows = varint(reader, wire_type)? != 0,
                        2 => schema.push(expect_len(reader, wire_type)?),
                        _ => reader.skip(wire_type)?,
                    }
                    Ok(())
                })?;
                if schema.is_empty() {
                    Ok(Value::Bool(allows))
                } else {
                    self.message(props, &schema.concat(), depth + 1)
                }
            }
            Special::StringArray => {
                let mut items = Vec::new();
                read_fields(bytes, |tag, wire_type, reader| {
                    match tag {
                        1 => items.push(Value::String(string(expect_len(reader, wire_type)?))),
                        _ => reader.skip(wire_type)?,
                    }
                    Ok(())
                })?;
                Ok(Value::Array(items))
            }
        }
    }

    /// The raw bytes of a RawExtension, FieldsV1 or apiextensions JSON: JSON text, or (in a
    /// RawExtension) a whole protobuf object with its own envelope.
    fn embedded(&self, raw: &[u8], may_be_protobuf: bool, depth: usize) -> Result<Value, Failure> {
        if raw.is_empty() {
            return Ok(Value::Null);
        }
        if may_be_protobuf && raw.starts_with(&super::MAGIC) {
            return super::decode_envelope(self.schema, raw, depth + 1).map_err(Failure::nested);
        }
        serde_json::from_slice(raw)
            .map_err(|e| Failure::new(format!("embedded JSON is invalid: {e}")))
    }
}

fn at(failure: Failure, field: &Field) -> Failure {
    if field.inline {
        failure
    } else {
        failure.at_field(&field.json)
    }
}

fn unreachable_slot() -> Failure {
    // A field's slot only ever holds the variant its schema chooses.
    Failure::new("internal error: field decoded in two shapes")
}

fn read_fields<'a>(
    bytes: &'a [u8],
    mut each: impl FnMut(u32, u8, &mut Reader<'a>) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut reader = Reader::new(bytes);
    while !reader.is_empty() {
        let (tag, wire_type) = reader.key()?;
        each(tag, wire_type, &mut reader)?;
    }
    Ok(())
}

fn wrong_wire_type(found: u8, expected: u8) -> Failure {
    Failure::new(format!(
        "wire type {found} ({}) where {} was expected",
        wire::wire_type_name(found),
        wire::wire_type_name(expected)
    ))
}

fn expect_len<'a>(reader: &mut Reader<'a>, wire_type: u8) -> Result<&'a [u8], Failure> {
    if wire_type != wire::LEN {
        return Err(wrong_wire_type(wire_type, wire::LEN));
    }
    reader.bytes()
}

fn varint(reader: &mut Reader, wire_type: u8) -> Result<u64, Failure> {
    if wire_type != wire::VARINT {
        return Err(wrong_wire_type(wire_type, wire::VARINT));
    }
    reader.varint()
}

fn element_wire_type(kind: Kind) -> u8 {
    match kind {
        Kind::Double => wire::FIXED64,
        Kind::Float => wire::FIXED32,
        _ => wire::VARINT,
    }
}

/// Go's JSON keeps invalid UTF-8 as U+FFFD, so do we.
fn string(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scalar(kind: Kind, wire_type: u8, reader: &mut Reader) -> Result<Value, Failure> {
    Ok(match kind {
        Kind::String => Value::String(string(expect_len(reader, wire_type)?)),
        Kind::Bytes => Value::String(
            base64::engine::general_purpose::STANDARD.encode(expect_len(reader, wire_type)?),
        ),
        Kind::Bool => Value::Bool(varint(reader, wire_type)? != 0),
        // int32 values travel sign-extended to 64 bits; the low 32 bits are the value.
        Kind::Int32 | Kind::Enum => Value::from(varint(reader, wire_type)? as i32),
        Kind::Int64 => Value::from(varint(reader, wire_type)? as i64),
        Kind::Double => {
            if wire_type != wire::FIXED64 {
                return Err(wrong_wire_type(wire_type, wire::FIXED64));
            }
            number(f64::from_le_bytes(reader.fixed64()?))?
        }
        Kind::Float => {
            if wire_type != wire::FIXED32 {
                return Err(wrong_wire_type(wire_type, wire::FIXED32));
            }
            number(f64::from(f32::from_le_bytes(reader.fixed32()?)))?
        }
        Kind::Message(_) => return Err(Failure::new("internal error: message read as a scalar")),
    })
}

fn number(value: f64) -> Result<Value, Failure> {
    Number::from_f64(value)
        .map(Value::Number)
        .ok_or_else(|| Failure::new(format!("{value} cannot be represented in JSON")))
}

fn zero(kind: Kind) -> Value {
    match kind {
        Kind::String | Kind::Bytes => Value::String(String::new()),
        Kind::Bool => Value::Bool(false),
        Kind::Double | Kind::Float => Value::from(0.0),
        Kind::Int32 | Kind::Int64 | Kind::Enum | Kind::Message(_) => Value::from(0),
    }
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}
