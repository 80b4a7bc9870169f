//! The wire schema: `apis/data/proto-schema.json` (written by `apis/tools/gen-proto-schema.py`
//! from the k8s-pb and k8s-openapi crates), parsed once into tables indexed by message number.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

const DIGEST: &str = include_str!("../../data/proto-schema.json");

/// Index of a message in [`Schema::messages`].
pub(crate) type MessageId = usize;

pub(crate) struct Schema {
    /// "apiVersion/Kind" -> message.
    kinds: HashMap<String, MessageId>,
    /// apiVersion -> Kind -> message: the same, looked up without building a key.
    by_version: HashMap<String, HashMap<String, MessageId>>,
    /// Kind -> message, for the meta/v1 kinds every group version accepts.
    meta_kinds: HashMap<String, MessageId>,
    pub(crate) messages: Vec<Message>,
    #[cfg_attr(not(test), allow(dead_code))]
    by_name: HashMap<String, MessageId>,
}

pub(crate) struct Message {
    pub(crate) name: String,
    pub(crate) shape: Shape,
}

pub(crate) enum Shape {
    /// A JSON object of the fields.
    Fields(Fields),
    /// A type whose JSON form is not an object of its fields.
    Special(Special),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    /// meta/v1 Time {seconds=1, nanos=2}: RFC 3339 with seconds precision, or null.
    Time,
    /// meta/v1 MicroTime {seconds=1, nanos=2}: RFC 3339 with microseconds, or null.
    MicroTime,
    /// meta/v1 Duration {duration=1 (ns)}: a Go duration string.
    Duration,
    /// meta/v1 FieldsV1 {Raw=1}: the embedded JSON.
    FieldsV1,
    /// util/intstr IntOrString {type=1, intVal=2, strVal=3}: a number or a string.
    IntOrString,
    /// api/resource Quantity {string=1}: the string.
    Quantity,
    /// runtime RawExtension {raw=1}: the embedded JSON (or protobuf object).
    RawExtension,
    /// apiextensions JSON {raw=1}: the embedded JSON.
    Json,
    /// JSONSchemaPropsOrArray {schema=1, jSONSchemas=2}: a schema or an array of schemas.
    OrArray(MessageId),
    /// JSONSchemaPropsOrBool {allows=1, schema=2}: a schema or a bool.
    OrBool(MessageId),
    /// JSONSchemaPropsOrStringArray {schema=1, property=2}: a schema or an array of strings.
    OrStringArray(MessageId),
    /// A named string slice (meta/v1 Verbs, ExtraValue) {items=1}: the bare array.
    StringArray,
}

pub(crate) struct Fields {
    /// In declaration order, which is Go's struct order and so the JSON order.
    pub(crate) list: Vec<Field>,
    /// (tag, index into `list`), sorted by tag: the wire order.
    pub(crate) by_tag: Vec<(u32, usize)>,
    /// Indexes into `list` sorted by JSON name: a member's field found without hashing.
    pub(crate) by_json: Vec<usize>,
    /// Whether a field is an embedded struct (its members sit in this object).
    pub(crate) has_inline: bool,
}

impl Fields {
    #[cfg(test)]
    pub(crate) fn find(&self, tag: u32) -> Option<&Field> {
        let at = self.by_tag.binary_search_by_key(&tag, |(t, _)| *t).ok()?;
        Some(&self.list[self.by_tag[at].1])
    }

    pub(crate) fn index(&self, tag: u32) -> Option<usize> {
        let at = self.by_tag.binary_search_by_key(&tag, |(t, _)| *t).ok()?;
        Some(self.by_tag[at].1)
    }

    /// The index into `list` of the (not embedded) field named `json` in JSON.
    pub(crate) fn index_of_json(&self, json: &str) -> Option<usize> {
        let at = self.by_json.binary_search_by(|i| self.list[*i].json.as_str().cmp(json)).ok()?;
        Some(self.by_json[at])
    }

    /// The fields in tag order.
    pub(crate) fn in_wire_order(&self) -> impl Iterator<Item = &Field> {
        self.by_tag.iter().map(|(_, i)| &self.list[*i])
    }
}

pub(crate) struct Field {
    pub(crate) tag: u32,
    pub(crate) json: String,
    pub(crate) kind: Kind,
    pub(crate) repeated: bool,
    /// `map<string, kind>`: repeated entries {key=1, value=2}.
    pub(crate) map: bool,
    /// An embedded Go struct: its fields sit in the parent's JSON object.
    pub(crate) inline: bool,
    /// Not `Option` in k8s-openapi; a zero value is kept.
    pub(crate) required: bool,
    /// A zero value ("", false, 0) read from the wire is left out of the JSON.
    pub(crate) omit_zero: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    String,
    Bool,
    Int32,
    Int64,
    Bytes,
    Double,
    Float,
    /// Kubernetes protos have no enums; tolerated as integers.
    Enum,
    Message(MessageId),
}

impl Kind {
    /// Kinds that may arrive packed (several values in one length-delimited field).
    pub(crate) fn packable(self) -> bool {
        !matches!(self, Kind::String | Kind::Bytes | Kind::Message(_))
    }
}

impl Schema {
    /// The schema compiled into this binary.
    pub(crate) fn get() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| {
            // The digest is generated and checked in with the crate; the tests load it, so a
            // broken digest cannot reach a release.
            let digest: Value = serde_json::from_str(DIGEST).expect("proto-schema.json is JSON");
            Schema::load(&digest).unwrap_or_else(|e| panic!("proto-schema.json: {e}"))
        })
    }

    fn load(digest: &Value) -> Result<Schema, String> {
        let messages_json =
            digest["messages"].as_object().ok_or("no \"messages\" object".to_string())?;
        let by_name: HashMap<String, MessageId> =
            messages_json.keys().enumerate().map(|(i, name)| (name.clone(), i)).collect();
        let id = |name: &str| -> Result<MessageId, String> {
            by_name.get(name).copied().ok_or_else(|| format!("unknown message {name}"))
        };
        let mut messages = Vec::with_capacity(messages_json.len());
        for (name, body) in messages_json {
            let shape = if let Some(special) = body.get("special").and_then(Value::as_str) {
                // The schema messages of JSONSchemaPropsOr* live in the same package.
                let props = || id(&format!("{}.JSONSchemaProps", package(name)));
                Shape::Special(match special {
                    "time" => Special::Time,
                    "microtime" => Special::MicroTime,
                    "duration" => Special::Duration,
                    "fieldsv1" => Special::FieldsV1,
                    "intorstring" => Special::IntOrString,
                    "quantity" => Special::Quantity,
                    "rawextension" => Special::RawExtension,
                    "json" => Special::Json,
                    "orarray" => Special::OrArray(props()?),
                    "orbool" => Special::OrBool(props()?),
                    "orstringarray" => Special::OrStringArray(props()?),
                    "stringarray" => Special::StringArray,
                    other => return Err(format!("{name}: unknown special {other:?}")),
                })
            } else {
                let raw = body["fields"].as_array().ok_or(format!("{name}: no fields"))?;
                let list = raw
                    .iter()
                    .map(|f| load_field(f, &id).map_err(|e| format!("{name}: {e}")))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut by_tag: Vec<(u32, usize)> =
                    list.iter().enumerate().map(|(i, f)| (f.tag, i)).collect();
                by_tag.sort_unstable();
                if by_tag.windows(2).any(|pair| pair[0].0 == pair[1].0) {
                    return Err(format!("{name}: duplicate tag"));
                }
                let mut by_json: Vec<usize> =
                    (0..list.len()).filter(|i| !list[*i].inline).collect();
                by_json.sort_unstable_by(|a, b| list[*a].json.cmp(&list[*b].json));
                let has_inline = list.iter().any(|f| f.inline);
                Shape::Fields(Fields { list, by_tag, by_json, has_inline })
            };
            messages.push(Message { name: name.clone(), shape });
        }
        let table = |key: &str| -> Result<HashMap<String, MessageId>, String> {
            digest[key]
                .as_object()
                .ok_or(format!("no {key:?} object"))?
                .iter()
                .map(|(k, v)| Ok((k.clone(), id(v.as_str().unwrap_or_default())?)))
                .collect()
        };
        let kinds = table("kinds")?;
        let mut by_version: HashMap<String, HashMap<String, MessageId>> = HashMap::new();
        for (key, id) in &kinds {
            if let Some((version, kind)) = key.rsplit_once('/') {
                by_version.entry(version.to_string()).or_default().insert(kind.to_string(), *id);
            }
        }
        Ok(Schema { kinds, by_version, meta_kinds: table("metaKinds")?, messages, by_name })
    }

    /// The message of an object with this apiVersion and kind.
    pub(crate) fn kind(&self, api_version: &str, kind: &str) -> Option<MessageId> {
        self.by_version
            .get(api_version)
            .and_then(|kinds| kinds.get(kind))
            .or_else(|| self.meta_kinds.get(kind))
            .copied()
    }

    #[cfg(test)]
    pub(crate) fn message(&self, name: &str) -> Option<MessageId> {
        self.by_name.get(name).copied()
    }

    /// The messages of the kinds (not the meta/v1 ones every group version accepts).
    pub(crate) fn kind_messages(&self) -> impl Iterator<Item = MessageId> + '_ {
        self.kinds.values().copied()
    }

    #[cfg(test)]
    pub(crate) fn kinds(&self) -> impl Iterator<Item = (&str, MessageId)> {
        self.kinds.iter().map(|(k, v)| (k.as_str(), *v))
    }
}

fn package(name: &str) -> &str {
    name.rsplit_once('.').map_or("", |(package, _)| package)
}

fn load_field(
    raw: &Value,
    id: &dyn Fn(&str) -> Result<MessageId, String>,
) -> Result<Field, String> {
    let parts = raw.as_array().ok_or("field is not an array")?;
    let tag = parts.first().and_then(Value::as_u64).ok_or("field without a tag")?;
    let json = parts.get(1).and_then(Value::as_str).ok_or("field without a name")?;
    let kind = parts.get(2).and_then(Value::as_str).ok_or("field without a kind")?;
    let flags = parts.get(3).and_then(Value::as_str).unwrap_or("");
    let (map, kind) = match kind.strip_prefix("map<string,").and_then(|k| k.strip_suffix('>')) {
        Some(value) => (true, value),
        None => (false, kind),
    };
    let kind = match kind {
        "string" => Kind::String,
        "bool" => Kind::Bool,
        "int32" => Kind::Int32,
        "int64" => Kind::Int64,
        "bytes" => Kind::Bytes,
        "double" => Kind::Double,
        "float" => Kind::Float,
        "enum" => Kind::Enum,
        message => Kind::Message(id(message)?),
    };
    Ok(Field {
        tag: u32::try_from(tag).map_err(|_| "tag out of range")?,
        json: json.to_string(),
        kind,
        repeated: flags.contains('r'),
        map,
        inline: flags.contains('i'),
        required: flags.contains('q'),
        omit_zero: flags.contains('z'),
    })
}
