//! The protobuf form of `/openapi/v2`: the Swagger 2.0 JSON document re-encoded as the gnostic
//! `openapi.v2.Document` message (proto3 wire format).
//!
//! kubectl 1.27 and 1.28 fetch this form (`Accept:
//! application/com.github.proto-openapi.spec.v2@v1.0+protobuf`) for `apply` validation, for the
//! strategic-merge-patch keys and to detect server-side field validation. Start at [`encode`].
//!
//! The encoder walks the JSON and writes each Swagger object as the message gnostic defines for
//! it. Two details matter to kubectl: vendor extensions (`x-...`) become `NamedAny` entries
//! whose `Any` holds the value as YAML text (that is what kube-openapi unmarshals), and a
//! submessage is written whenever its JSON key is present, even when empty, because
//! kube-openapi tells an object kind (`properties: {}`) from a map by the field's presence.
//! Keys gnostic has no field for (`oneOf`, `anyOf`) are left out, as gnostic's schema has none.

use serde_json::{Map, Value};

/// The media type of the protobuf form. kubectl 1.27/1.28 ask for the older spelling
/// `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, but the answer must carry
/// this one: client-go parses the response's Content-Type with Go's `mime`, which rejects `@`.
pub const MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Encodes a Swagger 2.0 document (JSON) as a gnostic `openapi.v2.Document`.
pub fn encode(doc: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    if let Some(d) = doc.as_object() {
        document(&mut w, d);
    }
    w.buf
}

/// A proto3 writer: varints, little-endian doubles and length-delimited fields.
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from(field << 3 | wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, LEN);
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    /// proto3 leaves default values (empty, false, zero) off the wire.
    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn bool(&mut self, field: u32, b: bool) {
        if b {
            self.key(field, VARINT);
            self.varint(1);
        }
    }

    fn int64(&mut self, field: u32, i: i64) {
        if i != 0 {
            self.key(field, VARINT);
            self.varint(i as u64);
        }
    }

    fn double(&mut self, field: u32, d: f64) {
        if d != 0.0 {
            self.key(field, FIXED64);
            self.buf.extend_from_slice(&d.to_le_bytes());
        }
    }

    /// A submessage; always written, so that an empty one still counts as present.
    fn message(&mut self, field: u32, f: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        f(&mut inner);
        self.bytes(field, &inner.buf);
    }
}

type Obj = Map<String, Value>;

fn s(w: &mut Writer, field: u32, o: &Obj, key: &str) {
    if let Some(Value::String(v)) = o.get(key) {
        w.string(field, v);
    }
}

/// A repeated string; a lone string counts as a list of one (`type: string`).
fn strings(w: &mut Writer, field: u32, o: &Obj, key: &str) {
    match o.get(key) {
        Some(Value::String(v)) => w.bytes(field, v.as_bytes()),
        Some(Value::Array(list)) => {
            for v in list.iter().filter_map(Value::as_str) {
                w.bytes(field, v.as_bytes());
            }
        }
        _ => {}
    }
}

fn b(w: &mut Writer, field: u32, o: &Obj, key: &str) {
    w.bool(field, o.get(key).and_then(Value::as_bool).unwrap_or(false));
}

fn i(w: &mut Writer, field: u32, o: &Obj, key: &str) {
    if let Some(n) = o.get(key) {
        w.int64(field, n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).unwrap_or(0));
    }
}

fn d(w: &mut Writer, field: u32, o: &Obj, key: &str) {
    w.double(field, o.get(key).and_then(Value::as_f64).unwrap_or(0.0));
}

fn obj<'a>(o: &'a Obj, key: &str) -> Option<&'a Obj> {
    o.get(key).and_then(Value::as_object)
}

/// A submessage from an object-valued key, when the key is there.
fn sub(w: &mut Writer, field: u32, o: &Obj, key: &str, f: fn(&mut Writer, &Obj)) {
    if let Some(v) = obj(o, key) {
        w.message(field, |w| f(w, v));
    }
}

/// gnostic `Any`: only the YAML text is filled in, as gnostic does when it reads JSON.
fn any(w: &mut Writer, field: u32, v: &Value) {
    w.message(field, |w| w.string(2, &yaml(v)));
}

fn anys(w: &mut Writer, field: u32, o: &Obj, key: &str) {
    for v in o.get(key).and_then(Value::as_array).into_iter().flatten() {
        any(w, field, v);
    }
}

fn is_extension(key: &str) -> bool {
    key.starts_with("x-")
}

/// `repeated NamedAny vendor_extension`: every `x-` key of the object.
fn extensions(w: &mut Writer, field: u32, o: &Obj) {
    for (k, v) in o.iter().filter(|(k, _)| is_extension(k)) {
        w.message(field, |w| {
            w.string(1, k);
            any(w, 2, v);
        });
    }
}

/// A map as `repeated Named<T>` (name = 1, value = 2), leaving out `x-` keys when they go to
/// the vendor extensions instead.
fn named(w: &mut Writer, field: u32, o: &Obj, skip_ext: bool, f: fn(&mut Writer, &Value)) {
    for (k, v) in o.iter().filter(|(k, _)| !(skip_ext && is_extension(k))) {
        w.message(field, |w| {
            w.string(1, k);
            w.message(2, |w| f(w, v));
        });
    }
}

fn document(w: &mut Writer, o: &Obj) {
    s(w, 1, o, "swagger");
    sub(w, 2, o, "info", info);
    s(w, 3, o, "host");
    s(w, 4, o, "basePath");
    strings(w, 5, o, "schemes");
    strings(w, 6, o, "consumes");
    strings(w, 7, o, "produces");
    sub(w, 8, o, "paths", paths);
    sub(w, 9, o, "definitions", |w, o| named(w, 1, o, false, schema));
    sub(w, 10, o, "parameters", |w, o| named(w, 1, o, false, |w, v| on_obj(w, v, parameter)));
    sub(w, 11, o, "responses", |w, o| named(w, 1, o, false, |w, v| on_obj(w, v, response)));
    security(w, 12, o);
    sub(w, 13, o, "securityDefinitions", |w, o| named(w, 1, o, false, security_definition));
    for tag in o.get("tags").and_then(Value::as_array).into_iter().flatten() {
        if let Some(t) = tag.as_object() {
            w.message(14, |w| {
                s(w, 1, t, "name");
                s(w, 2, t, "description");
                sub(w, 3, t, "externalDocs", external_docs);
                extensions(w, 4, t);
            });
        }
    }
    sub(w, 15, o, "externalDocs", external_docs);
    extensions(w, 16, o);
}

fn on_obj(w: &mut Writer, v: &Value, f: fn(&mut Writer, &Obj)) {
    if let Some(o) = v.as_object() {
        f(w, o);
    }
}

fn info(w: &mut Writer, o: &Obj) {
    s(w, 1, o, "title");
    s(w, 2, o, "version");
    s(w, 3, o, "description");
    s(w, 4, o, "termsOfService");
    sub(w, 5, o, "contact", |w, o| {
        s(w, 1, o, "name");
        s(w, 2, o, "url");
        s(w, 3, o, "email");
        extensions(w, 4, o);
    });
    sub(w, 6, o, "license", |w, o| {
        s(w, 1, o, "name");
        s(w, 2, o, "url");
        extensions(w, 3, o);
    });
    extensions(w, 7, o);
}

fn external_docs(w: &mut Writer, o: &Obj) {
    s(w, 1, o, "description");
    s(w, 2, o, "url");
    extensions(w, 3, o);
}

fn paths(w: &mut Writer, o: &Obj) {
    extensions(w, 1, o);
    named(w, 2, o, true, |w, v| on_obj(w, v, path_item));
}

fn path_item(w: &mut Writer, o: &Obj) {
    s(w, 1, o, "$ref");
    for (field, verb) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ] {
        sub(w, field, o, verb, operation);
    }
    parameters(w, 9, o);
    extensions(w, 10, o);
}

fn operation(w: &mut Writer, o: &Obj) {
    strings(w, 1, o, "tags");
    s(w, 2, o, "summary");
    s(w, 3, o, "description");
    sub(w, 4, o, "externalDocs", external_docs);
    s(w, 5, o, "operationId");
    strings(w, 6, o, "produces");
    strings(w, 7, o, "consumes");
    parameters(w, 8, o);
    sub(w, 9, o, "responses", responses);
    strings(w, 10, o, "schemes");
    b(w, 11, o, "deprecated");
    security(w, 12, o);
    extensions(w, 13, o);
}

/// `repeated ParametersItem`: a parameter or a `$ref` to one.
fn parameters(w: &mut Writer, field: u32, o: &Obj) {
    for p in o.get("parameters").and_then(Value::as_array).into_iter().flatten() {
        let Some(p) = p.as_object() else { continue };
        w.message(field, |w| {
            if p.contains_key("$ref") {
                w.message(2, |w| json_reference(w, p));
            } else {
                w.message(1, |w| parameter(w, p));
            }
        });
    }
}

fn json_reference(w: &mut Writer, o: &Obj) {
    s(w, 1, o, "$ref");
    s(w, 2, o, "description");
}

/// `Parameter`: a body parameter, or one of the four non-body kinds chosen by `in`.
fn parameter(w: &mut Writer, o: &Obj) {
    let location = o.get("in").and_then(Value::as_str).unwrap_or("");
    if location == "body" {
        w.message(1, |w| {
            s(w, 1, o, "description");
            s(w, 2, o, "name");
            s(w, 3, o, "in");
            b(w, 4, o, "required");
            sub(w, 5, o, "schema", schema_obj);
            extensions(w, 6, o);
        });
        return;
    }
    // Query and formData parameters have `allowEmptyValue` as field 5, which shifts the rest.
    let (variant, allow_empty) = match location {
        "header" => (1, false),
        "formData" => (2, true),
        "query" => (3, true),
        "path" => (4, false),
        _ => return,
    };
    w.message(2, |w| {
        w.message(variant, |w| {
            b(w, 1, o, "required");
            s(w, 2, o, "in");
            s(w, 3, o, "description");
            s(w, 4, o, "name");
            let base = if allow_empty {
                b(w, 5, o, "allowEmptyValue");
                6
            } else {
                5
            };
            primitive(w, o, base);
            extensions(w, base + 17, o);
        });
    });
}

/// The validation keywords parameters, headers and primitive items share, in the same order
/// in each message, starting at field `base`.
fn primitive(w: &mut Writer, o: &Obj, base: u32) {
    s(w, base, o, "type");
    s(w, base + 1, o, "format");
    sub(w, base + 2, o, "items", primitives_items);
    s(w, base + 3, o, "collectionFormat");
    if let Some(v) = o.get("default") {
        any(w, base + 4, v);
    }
    d(w, base + 5, o, "maximum");
    b(w, base + 6, o, "exclusiveMaximum");
    d(w, base + 7, o, "minimum");
    b(w, base + 8, o, "exclusiveMinimum");
    i(w, base + 9, o, "maxLength");
    i(w, base + 10, o, "minLength");
    s(w, base + 11, o, "pattern");
    i(w, base + 12, o, "maxItems");
    i(w, base + 13, o, "minItems");
    b(w, base + 14, o, "uniqueItems");
    anys(w, base + 15, o, "enum");
    d(w, base + 16, o, "multipleOf");
}

fn primitives_items(w: &mut Writer, o: &Obj) {
    primitive(w, o, 1);
    extensions(w, 18, o);
}

fn responses(w: &mut Writer, o: &Obj) {
    named(w, 1, o, true, |w, v| {
        let Some(r) = v.as_object() else { return };
        if r.contains_key("$ref") {
            w.message(2, |w| json_reference(w, r));
        } else {
            w.message(1, |w| response(w, r));
        }
    });
    extensions(w, 2, o);
}

fn response(w: &mut Writer, o: &Obj) {
    s(w, 1, o, "description");
    if let Some(sch) = obj(o, "schema") {
        w.message(2, |w| {
            if sch.get("type").and_then(Value::as_str) == Some("file") {
                w.message(2, |w| file_schema(w, sch));
            } else {
                w.message(1, |w| schema_obj(w, sch));
            }
        });
    }
    sub(w, 3, o, "headers", |w, o| {
        named(w, 1, o, false, |w, v| {
            on_obj(w, v, |w, h| {
                primitive(w, h, 1);
                s(w, 18, h, "description");
                extensions(w, 19, h);
            })
        })
    });
    sub(w, 4, o, "examples", |w, o| {
        for (k, v) in o {
            w.message(1, |w| {
                w.string(1, k);
                any(w, 2, v);
            });
        }
    });
    extensions(w, 5, o);
}

fn file_schema(w: &mut Writer, o: &Obj) {
    s(w, 1, o, "format");
    s(w, 2, o, "title");
    s(w, 3, o, "description");
    if let Some(v) = o.get("default") {
        any(w, 4, v);
    }
    strings(w, 5, o, "required");
    s(w, 6, o, "type");
    b(w, 7, o, "readOnly");
    sub(w, 8, o, "externalDocs", external_docs);
    if let Some(v) = o.get("example") {
        any(w, 9, v);
    }
    extensions(w, 10, o);
}

fn schema(w: &mut Writer, v: &Value) {
    on_obj(w, v, schema_obj);
}

fn schema_obj(w: &mut Writer, o: &Obj) {
    s(w, 1, o, "$ref");
    s(w, 2, o, "format");
    s(w, 3, o, "title");
    s(w, 4, o, "description");
    if let Some(v) = o.get("default") {
        any(w, 5, v);
    }
    d(w, 6, o, "multipleOf");
    d(w, 7, o, "maximum");
    b(w, 8, o, "exclusiveMaximum");
    d(w, 9, o, "minimum");
    b(w, 10, o, "exclusiveMinimum");
    i(w, 11, o, "maxLength");
    i(w, 12, o, "minLength");
    s(w, 13, o, "pattern");
    i(w, 14, o, "maxItems");
    i(w, 15, o, "minItems");
    b(w, 16, o, "uniqueItems");
    i(w, 17, o, "maxProperties");
    i(w, 18, o, "minProperties");
    strings(w, 19, o, "required");
    anys(w, 20, o, "enum");
    match o.get("additionalProperties") {
        Some(Value::Object(ap)) => w.message(21, |w| w.message(1, |w| schema_obj(w, ap))),
        // A oneof member is written even when false: its presence is the information.
        Some(Value::Bool(flag)) => w.message(21, |w| {
            w.key(2, VARINT);
            w.varint(u64::from(*flag));
        }),
        _ => {}
    }
    if o.contains_key("type") {
        w.message(22, |w| strings(w, 1, o, "type"));
    }
    match o.get("items") {
        Some(Value::Object(item)) => w.message(23, |w| w.message(1, |w| schema_obj(w, item))),
        Some(Value::Array(list)) => w.message(23, |w| {
            for item in list {
                w.message(1, |w| schema(w, item));
            }
        }),
        _ => {}
    }
    for item in o.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        w.message(24, |w| schema(w, item));
    }
    sub(w, 25, o, "properties", |w, o| named(w, 1, o, false, schema));
    s(w, 26, o, "discriminator");
    b(w, 27, o, "readOnly");
    sub(w, 28, o, "xml", |w, o| {
        s(w, 1, o, "name");
        s(w, 2, o, "namespace");
        s(w, 3, o, "prefix");
        b(w, 4, o, "attribute");
        b(w, 5, o, "wrapped");
        extensions(w, 6, o);
    });
    sub(w, 29, o, "externalDocs", external_docs);
    if let Some(v) = o.get("example") {
        any(w, 30, v);
    }
    extensions(w, 31, o);
}

/// `repeated SecurityRequirement`: each a map of scheme name to scopes.
fn security(w: &mut Writer, field: u32, o: &Obj) {
    for req in o.get("security").and_then(Value::as_array).into_iter().flatten() {
        let Some(req) = req.as_object() else { continue };
        w.message(field, |w| {
            for (name, scopes) in req {
                w.message(1, |w| {
                    w.string(1, name);
                    w.message(2, |w| {
                        for scope in
                            scopes.as_array().into_iter().flatten().filter_map(Value::as_str)
                        {
                            w.bytes(1, scope.as_bytes());
                        }
                    });
                });
            }
        });
    }
}

/// `SecurityDefinitionsItem`: one variant per scheme type (and OAuth2 flow).
fn security_definition(w: &mut Writer, v: &Value) {
    let Some(o) = v.as_object() else { return };
    let kind = o.get("type").and_then(Value::as_str).unwrap_or("");
    let flow = o.get("flow").and_then(Value::as_str).unwrap_or("");
    match (kind, flow) {
        ("basic", _) => w.message(1, |w| {
            s(w, 1, o, "type");
            s(w, 2, o, "description");
            extensions(w, 3, o);
        }),
        ("apiKey", _) => w.message(2, |w| {
            s(w, 1, o, "type");
            s(w, 2, o, "name");
            s(w, 3, o, "in");
            s(w, 4, o, "description");
            extensions(w, 5, o);
        }),
        ("oauth2", _) => {
            // (variant, authorizationUrl, tokenUrl, description); extensions come next.
            let (variant, auth, token, desc) = match flow {
                "implicit" => (3, Some(4), None, 5),
                "password" => (4, None, Some(4), 5),
                "application" => (5, None, Some(4), 5),
                "accessCode" => (6, Some(4), Some(5), 6),
                _ => return,
            };
            w.message(variant, |w| {
                s(w, 1, o, "type");
                s(w, 2, o, "flow");
                sub(w, 3, o, "scopes", |w, o| {
                    for (k, v) in o {
                        w.message(1, |w| {
                            w.string(1, k);
                            w.string(2, v.as_str().unwrap_or(""));
                        });
                    }
                });
                if let Some(field) = auth {
                    s(w, field, o, "authorizationUrl");
                }
                if let Some(field) = token {
                    s(w, field, o, "tokenUrl");
                }
                s(w, desc, o, "description");
                extensions(w, desc + 1, o);
            });
        }
        _ => {}
    }
}

/// A JSON value as block-style YAML, the way gnostic stores extension values
/// (`- group: apps\n  kind: Deployment\n  version: v1\n`).
pub fn yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => yaml_map(&mut out, m, 0),
        Value::Array(a) if !a.is_empty() => yaml_seq(&mut out, a, 0),
        _ => {
            out.push_str(&scalar(v));
            out.push('\n');
        }
    }
    out
}

fn is_block(v: &Value) -> bool {
    match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    }
}

/// Keys sorted, as Go's YAML encoder writes maps (and whatever order serde_json keeps).
fn yaml_map(out: &mut String, m: &Obj, indent: usize) {
    let mut entries: Vec<(&String, &Value)> = m.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    for (k, v) in entries {
        out.push_str(&" ".repeat(indent));
        out.push_str(&string_scalar(k));
        out.push(':');
        match v {
            Value::Object(inner) if !inner.is_empty() => {
                out.push('\n');
                yaml_map(out, inner, indent + 2);
            }
            Value::Array(list) if !list.is_empty() => {
                out.push('\n');
                yaml_seq(out, list, indent + 2);
            }
            _ => {
                out.push(' ');
                out.push_str(&scalar(v));
                out.push('\n');
            }
        }
    }
}

fn yaml_seq(out: &mut String, list: &[Value], indent: usize) {
    for v in list {
        if is_block(v) {
            // Render the nested block two deeper, then put the dash in its first indent.
            let mut nested = String::new();
            match v {
                Value::Object(m) => yaml_map(&mut nested, m, indent + 2),
                Value::Array(a) => yaml_seq(&mut nested, a, indent + 2),
                _ => unreachable!("is_block"),
            }
            out.push_str(&" ".repeat(indent));
            out.push_str("- ");
            out.push_str(&nested[indent + 2..]);
        } else {
            out.push_str(&" ".repeat(indent));
            out.push_str("- ");
            out.push_str(&scalar(v));
            out.push('\n');
        }
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(text) => string_scalar(text),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
    }
}

/// Plain when YAML (1.1, as kubectl's yaml.v2 reads it) cannot take it for anything but a
/// string; double-quoted (JSON escapes are valid YAML escapes) otherwise.
fn string_scalar(text: &str) -> String {
    let plain = text.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || "_./- ".contains(c))
        && !text.ends_with(' ')
        && !["y", "yes", "n", "no", "true", "false", "on", "off", "null"]
            .contains(&text.to_ascii_lowercase().as_str());
    if plain {
        text.to_string()
    } else {
        serde_json::to_string(text).expect("a string serializes")
    }
}

#[cfg(test)]
mod tests {
    //! Decodes with `prost` messages written here for the part of the schema the tests read
    //! (prost skips the fields these leave out), so the check does not lean on our own writer.
    use super::*;
    use prost::Message;
    use serde_json::json;

    #[derive(Clone, PartialEq, Message)]
    struct Document {
        #[prost(string, tag = "1")]
        swagger: String,
        #[prost(message, optional, tag = "2")]
        info: Option<Info>,
        #[prost(string, tag = "4")]
        base_path: String,
        #[prost(string, repeated, tag = "7")]
        produces: Vec<String>,
        #[prost(message, optional, tag = "8")]
        paths: Option<Paths>,
        #[prost(message, optional, tag = "9")]
        definitions: Option<Definitions>,
        #[prost(message, repeated, tag = "12")]
        security: Vec<SecurityRequirement>,
        #[prost(message, repeated, tag = "16")]
        vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Info {
        #[prost(string, tag = "1")]
        title: String,
        #[prost(string, tag = "2")]
        version: String,
    }

    #[derive(Clone, PartialEq, Message)]
    struct SecurityRequirement {
        #[prost(message, repeated, tag = "1")]
        additional_properties: Vec<NamedStringArray>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct NamedStringArray {
        #[prost(string, tag = "1")]
        name: String,
        #[prost(message, optional, tag = "2")]
        value: Option<StringArray>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct StringArray {
        #[prost(string, repeated, tag = "1")]
        value: Vec<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Paths {
        #[prost(message, repeated, tag = "1")]
        vendor_extension: Vec<NamedAny>,
        #[prost(message, repeated, tag = "2")]
        path: Vec<NamedPathItem>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct NamedPathItem {
        #[prost(string, tag = "1")]
        name: String,
        #[prost(message, optional, tag = "2")]
        value: Option<PathItem>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct PathItem {
        #[prost(message, optional, tag = "2")]
        get: Option<Operation>,
        #[prost(message, optional, tag = "8")]
        patch: Option<Operation>,
        #[prost(message, repeated, tag = "9")]
        parameters: Vec<ParametersItem>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Operation {
        #[prost(string, tag = "5")]
        operation_id: String,
        #[prost(message, repeated, tag = "8")]
        parameters: Vec<ParametersItem>,
        #[prost(message, optional, tag = "9")]
        responses: Option<Responses>,
        #[prost(message, repeated, tag = "13")]
        vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct ParametersItem {
        #[prost(message, optional, tag = "1")]
        parameter: Option<Parameter>,
        #[prost(message, optional, tag = "2")]
        json_reference: Option<JsonReference>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct JsonReference {
        #[prost(string, tag = "1")]
        r#ref: String,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Parameter {
        #[prost(message, optional, tag = "1")]
        body_parameter: Option<BodyParameter>,
        #[prost(message, optional, tag = "2")]
        non_body_parameter: Option<NonBodyParameter>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct BodyParameter {
        #[prost(string, tag = "2")]
        name: String,
        #[prost(bool, tag = "4")]
        required: bool,
        #[prost(message, optional, tag = "5")]
        schema: Option<Schema>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct NonBodyParameter {
        #[prost(message, optional, tag = "3")]
        query_parameter_sub_schema: Option<QueryParameter>,
        #[prost(message, optional, tag = "4")]
        path_parameter_sub_schema: Option<PathParameter>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct QueryParameter {
        #[prost(string, tag = "2")]
        r#in: String,
        #[prost(string, tag = "4")]
        name: String,
        #[prost(string, tag = "6")]
        r#type: String,
        #[prost(double, tag = "11")]
        maximum: f64,
        #[prost(bool, tag = "20")]
        unique_items: bool,
        #[prost(message, repeated, tag = "21")]
        r#enum: Vec<Any>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct PathParameter {
        #[prost(bool, tag = "1")]
        required: bool,
        #[prost(string, tag = "2")]
        r#in: String,
        #[prost(string, tag = "4")]
        name: String,
        #[prost(string, tag = "5")]
        r#type: String,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Responses {
        #[prost(message, repeated, tag = "1")]
        response_code: Vec<NamedResponseValue>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct NamedResponseValue {
        #[prost(string, tag = "1")]
        name: String,
        #[prost(message, optional, tag = "2")]
        value: Option<ResponseValue>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct ResponseValue {
        #[prost(message, optional, tag = "1")]
        response: Option<Response>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Response {
        #[prost(string, tag = "1")]
        description: String,
        #[prost(message, optional, tag = "2")]
        schema: Option<SchemaItem>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct SchemaItem {
        #[prost(message, optional, tag = "1")]
        schema: Option<Schema>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Definitions {
        #[prost(message, repeated, tag = "1")]
        additional_properties: Vec<NamedSchema>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct NamedSchema {
        #[prost(string, tag = "1")]
        name: String,
        #[prost(message, optional, tag = "2")]
        value: Option<Schema>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Schema {
        #[prost(string, tag = "1")]
        r#ref: String,
        #[prost(string, tag = "2")]
        format: String,
        #[prost(string, tag = "4")]
        description: String,
        #[prost(int64, tag = "11")]
        max_length: i64,
        #[prost(string, repeated, tag = "19")]
        required: Vec<String>,
        #[prost(message, optional, boxed, tag = "21")]
        additional_properties: Option<Box<AdditionalPropertiesItem>>,
        #[prost(message, optional, tag = "22")]
        r#type: Option<TypeItem>,
        #[prost(message, optional, tag = "23")]
        items: Option<ItemsItem>,
        #[prost(message, optional, tag = "25")]
        properties: Option<Properties>,
        #[prost(message, repeated, tag = "31")]
        vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct AdditionalPropertiesItem {
        #[prost(message, optional, tag = "1")]
        schema: Option<Schema>,
        #[prost(bool, optional, tag = "2")]
        boolean: Option<bool>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct TypeItem {
        #[prost(string, repeated, tag = "1")]
        value: Vec<String>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct ItemsItem {
        #[prost(message, repeated, tag = "1")]
        schema: Vec<Schema>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Properties {
        #[prost(message, repeated, tag = "1")]
        additional_properties: Vec<NamedSchema>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct NamedAny {
        #[prost(string, tag = "1")]
        name: String,
        #[prost(message, optional, tag = "2")]
        value: Option<Any>,
    }

    #[derive(Clone, PartialEq, Message)]
    struct Any {
        #[prost(string, tag = "2")]
        yaml: String,
    }

    fn builtin() -> Document {
        let json: Value =
            serde_json::from_slice(&crate::openapi::Documents::builtin().v2).expect("v2 is JSON");
        Document::decode(encode(&json).as_slice()).expect("decodes as openapi.v2.Document")
    }

    fn extension<'a>(list: &'a [NamedAny], name: &str) -> Option<&'a str> {
        list.iter().find(|e| e.name == name).map(|e| e.value.as_ref().unwrap().yaml.as_str())
    }

    fn definition<'a>(doc: &'a Document, name: &str) -> &'a Schema {
        let defs = &doc.definitions.as_ref().unwrap().additional_properties;
        defs.iter().find(|d| d.name == name).and_then(|d| d.value.as_ref()).unwrap()
    }

    fn property<'a>(schema: &'a Schema, name: &str) -> &'a Schema {
        let props = &schema.properties.as_ref().unwrap().additional_properties;
        props.iter().find(|p| p.name == name).and_then(|p| p.value.as_ref()).unwrap()
    }

    fn path<'a>(doc: &'a Document, name: &str) -> &'a PathItem {
        let paths = &doc.paths.as_ref().unwrap().path;
        paths.iter().find(|p| p.name == name).and_then(|p| p.value.as_ref()).unwrap()
    }

    #[test]
    fn kinds_carry_their_group_version_kind_as_yaml() {
        let doc = builtin();
        assert_eq!(doc.swagger, "2.0");
        assert_eq!(doc.info.as_ref().unwrap().title, "Kubernetes");
        assert_eq!(doc.info.as_ref().unwrap().version, crate::KUBERNETES_VERSION);
        let deployment = definition(&doc, "io.k8s.api.apps.v1.Deployment");
        assert_eq!(
            extension(&deployment.vendor_extension, "x-kubernetes-group-version-kind"),
            Some("- group: apps\n  kind: Deployment\n  version: v1\n")
        );
        let pod = definition(&doc, "io.k8s.api.core.v1.Pod");
        assert_eq!(
            extension(&pod.vendor_extension, "x-kubernetes-group-version-kind"),
            Some("- group: \"\"\n  kind: Pod\n  version: v1\n")
        );
        assert_eq!(pod.r#type.as_ref().unwrap().value, ["object"]);
        assert_eq!(
            property(pod, "spec").r#ref,
            "#/definitions/io.k8s.api.core.v1.PodSpec",
            "refs point into the definitions"
        );
    }

    #[test]
    fn properties_keep_items_required_and_patch_keys() {
        let doc = builtin();
        let spec = definition(&doc, "io.k8s.api.core.v1.PodSpec");
        assert!(spec.required.iter().any(|r| r == "containers"));
        let containers = property(spec, "containers");
        assert_eq!(containers.r#type.as_ref().unwrap().value, ["array"]);
        let items = &containers.items.as_ref().unwrap().schema;
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].r#ref, "#/definitions/io.k8s.api.core.v1.Container");
        assert_eq!(
            extension(&containers.vendor_extension, "x-kubernetes-patch-merge-key"),
            Some("name\n")
        );
        assert_eq!(
            extension(&containers.vendor_extension, "x-kubernetes-patch-strategy"),
            Some("merge\n")
        );
        let labels =
            property(definition(&doc, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"), "labels");
        let values = labels.additional_properties.as_ref().unwrap().schema.as_ref().unwrap();
        assert_eq!(values.r#type.as_ref().unwrap().value, ["string"]);
        let int_or_string = definition(&doc, "io.k8s.apimachinery.pkg.util.intstr.IntOrString");
        assert_eq!(
            extension(&int_or_string.vendor_extension, "x-kubernetes-int-or-string"),
            Some("true\n")
        );
    }

    #[test]
    fn patch_operations_offer_field_validation() {
        let doc = builtin();
        let item = path(&doc, "/api/v1/namespaces/{namespace}/configmaps/{name}");
        let patch = item.patch.as_ref().unwrap();
        assert_eq!(patch.operation_id, "patchCoreV1NamespacedConfigMap");
        let gvk = extension(&patch.vendor_extension, "x-kubernetes-group-version-kind").unwrap();
        assert_eq!(gvk, "group: \"\"\nkind: ConfigMap\nversion: v1\n");
        let query: Vec<&QueryParameter> = patch
            .parameters
            .iter()
            .filter_map(|p| p.parameter.as_ref()?.non_body_parameter.as_ref())
            .filter_map(|p| p.query_parameter_sub_schema.as_ref())
            .collect();
        let validation = query.iter().find(|q| q.name == "fieldValidation").unwrap();
        assert_eq!((validation.r#in.as_str(), validation.r#type.as_str()), ("query", "string"));
        assert!(validation.unique_items);
        let name = item
            .parameters
            .iter()
            .filter_map(|p| p.parameter.as_ref()?.non_body_parameter.as_ref())
            .filter_map(|p| p.path_parameter_sub_schema.as_ref())
            .find(|p| p.name == "name")
            .unwrap();
        assert!(name.required);
        assert_eq!((name.r#in.as_str(), name.r#type.as_str()), ("path", "string"));
        let ok = &item.get.as_ref().unwrap().responses.as_ref().unwrap().response_code[0];
        assert_eq!(ok.name, "200");
        let response = ok.value.as_ref().unwrap().response.as_ref().unwrap();
        let schema = response.schema.as_ref().unwrap().schema.as_ref().unwrap();
        assert_eq!(schema.r#ref, "#/definitions/io.k8s.api.core.v1.ConfigMap");
    }

    /// What kube-openapi's `proto.NewOpenAPIData` (kubectl 1.27/1.28) rejects: a `$ref` with a
    /// type or properties, a ref to a missing definition, more than one type, an array without
    /// exactly one item schema, an unknown primitive type.
    #[test]
    fn every_definition_parses_the_way_kubectl_reads_it() {
        let doc = builtin();
        let defs = &doc.definitions.as_ref().unwrap().additional_properties;
        let json: Value = serde_json::from_slice(&crate::openapi::Documents::builtin().v2).unwrap();
        assert_eq!(defs.len(), json["definitions"].as_object().unwrap().len());
        let names: std::collections::HashSet<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        fn check(s: &Schema, at: &str, names: &std::collections::HashSet<&str>) {
            let types = s.r#type.as_ref().map(|t| t.value.clone()).unwrap_or_default();
            if !s.r#ref.is_empty() {
                assert!(types.is_empty() && s.properties.is_none(), "{at}: $ref with a type");
                let target = s.r#ref.strip_prefix("#/definitions/").expect("a definitions ref");
                assert!(names.contains(target), "{at}: dangling ref {target}");
                return;
            }
            assert!(types.len() <= 1, "{at}: {types:?}");
            match types.first().map(String::as_str) {
                Some("array") => {
                    let items = &s.items.as_ref().expect("items").schema;
                    assert_eq!(items.len(), 1, "{at}: array items");
                    check(&items[0], &format!("{at}[]"), names);
                }
                Some("object") | None => {}
                Some(t) => {
                    assert!(["string", "integer", "number", "boolean"].contains(&t), "{at}: {t}")
                }
            }
            for p in s.properties.iter().flat_map(|p| &p.additional_properties) {
                check(p.value.as_ref().unwrap(), &format!("{at}.{}", p.name), names);
            }
            if let Some(ap) = s.additional_properties.as_ref().and_then(|a| a.schema.as_ref()) {
                check(ap, &format!("{at}{{}}"), names);
            }
        }
        for d in defs {
            check(d.value.as_ref().unwrap(), &d.name, &names);
        }
    }

    #[test]
    fn the_rest_of_swagger_round_trips() {
        let doc = json!({
            "swagger": "2.0",
            "basePath": "/",
            "produces": ["application/json", "application/yaml"],
            "security": [{"BearerToken": []}],
            // Keys in sorted order: the map keeps insertion order only with `preserve_order`.
            "x-top": {"empty": {}, "list": [1, 2.5, null, {"a": [true]}], "on": "yes"},
            "paths": {
                "x-paths": "ignored by kubectl",
                "/things": {"post": {
                    "operationId": "createThing",
                    "parameters": [
                        {"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/Thing"}},
                        {"name": "limit", "in": "query", "type": "integer", "maximum": 500, "enum": ["a", ""]},
                        {"$ref": "#/parameters/pretty"},
                    ],
                }},
            },
            "definitions": {"Thing": {
                "type": "object",
                "properties": {},
                "additionalProperties": false,
                "maxLength": 63,
                "format": "",
            }},
        });
        let decoded = Document::decode(encode(&doc).as_slice()).unwrap();
        assert_eq!(decoded.base_path, "/");
        assert_eq!(decoded.produces, ["application/json", "application/yaml"]);
        let bearer = &decoded.security[0].additional_properties[0];
        assert_eq!(bearer.name, "BearerToken");
        assert_eq!(bearer.value, Some(StringArray { value: vec![] }));
        assert_eq!(
            extension(&decoded.vendor_extension, "x-top"),
            Some(concat!(
                "empty: {}\n",
                "list:\n  - 1\n  - 2.5\n  - null\n  - a:\n      - true\n",
                "\"on\": \"yes\"\n",
            ))
        );
        let paths = decoded.paths.as_ref().unwrap();
        assert_eq!(paths.path.len(), 1, "x- keys are extensions, not paths");
        assert_eq!(extension(&paths.vendor_extension, "x-paths"), Some("ignored by kubectl\n"));
        let post = &path(&decoded, "/things");
        assert!(post.get.is_none() && post.patch.is_none());
        let thing = definition(&decoded, "Thing");
        // Present though empty: kubectl takes an object with properties for a kind.
        assert_eq!(thing.properties, Some(Properties { additional_properties: vec![] }));
        assert_eq!(thing.additional_properties.as_ref().unwrap().boolean, Some(false));
        assert_eq!(thing.max_length, 63);

        let mut w = Writer::default();
        path_item(&mut w, doc["paths"]["/things"].as_object().unwrap());
        let item = PathItemWithPost::decode(w.buf.as_slice()).unwrap();
        let params = &item.post.unwrap().parameters;
        let body = params[0].parameter.as_ref().unwrap().body_parameter.as_ref().unwrap();
        assert_eq!((body.name.as_str(), body.required), ("body", true));
        assert_eq!(body.schema.as_ref().unwrap().r#ref, "#/definitions/Thing");
        let limit = params[1].parameter.as_ref().unwrap().non_body_parameter.as_ref().unwrap();
        let limit = limit.query_parameter_sub_schema.as_ref().unwrap();
        assert_eq!(limit.maximum, 500.0);
        let enum_yaml: Vec<&str> = limit.r#enum.iter().map(|a| a.yaml.as_str()).collect();
        assert_eq!(enum_yaml, ["a\n", "\"\"\n"]);
        assert_eq!(params[2].json_reference.as_ref().unwrap().r#ref, "#/parameters/pretty");
    }

    #[derive(Clone, PartialEq, Message)]
    struct PathItemWithPost {
        #[prost(message, optional, tag = "4")]
        post: Option<Operation>,
    }

    #[test]
    fn yaml_quotes_what_yaml_would_read_as_something_else() {
        assert_eq!(yaml(&json!("apps")), "apps\n");
        assert_eq!(yaml(&json!("")), "\"\"\n");
        assert_eq!(yaml(&json!("No")), "\"No\"\n");
        assert_eq!(yaml(&json!("1.5")), "\"1.5\"\n");
        assert_eq!(yaml(&json!("a: b")), "\"a: b\"\n");
        assert_eq!(yaml(&json!("a b ")), "\"a b \"\n");
        assert_eq!(yaml(&json!("line\nbreak")), "\"line\\nbreak\"\n");
        assert_eq!(yaml(&json!([[1, 2], []])), "- - 1\n  - 2\n- []\n");
    }
}
