//! JSON written the way kube-apiserver writes it: Go's `encoding/json` over the upstream Go
//! types.
//!
//! Clients see three things of Go's encoder that a plain `serde_json` writer does not give:
//!
//! - **Field order.** Go writes a struct's fields in declaration order: an object starts
//!   `{"kind":...,"apiVersion":...,"metadata":{...}` (the embedded `TypeMeta`), then spec or
//!   data, then status; `metadata` follows `ObjectMeta` (name, generateName, namespace, ...);
//!   Go maps (labels, annotations, a ConfigMap's data) are written with their keys sorted.
//!   The declaration order of every built-in type comes from the protobuf schema
//!   (`apis/data/proto-schema.json`, see [`crate::protobuf`]), which lists each message's
//!   fields in Go struct order. Members the schema does not know keep their place after the
//!   known ones; objects of kinds it does not know (custom resources, and documents the
//!   server builds in their own order such as Tables) are written as they are, except that
//!   built-in objects inside them (a Table row's object, a List's items) get their Go order.
//! - **HTML-safe strings.** `json.Encoder` escapes `<`, `>` and `&` as `\u003c`, `\u003e`,
//!   `\u0026`, and U+2028/U+2029 as `\u2028`/`\u2029` (kube-apiserver keeps the default
//!   `SetEscapeHTML(true)`).
//! - **A trailing newline** after each value ([`to_vec`], [`write_line`]).
//! - **Fields Go always writes.** `omitempty` never leaves out a struct, and fields without
//!   `omitempty` are written when zero. An absent field of that kind is written with its zero
//!   value ([`Always`]): `metadata` (`{}`, and a nested ObjectMeta's `"creationTimestamp":null`),
//!   a kind's `spec` and `status` (a Service's `{"loadBalancer":{}}`, a Pod's `{}`), the
//!   struct-valued fields listed in [`ALWAYS_WRITTEN`] (a container's `resources`, a
//!   workload's pod `template`), and required integer and bool fields (a ReplicaSet's
//!   `status.replicas: 0`).
//!
//! One writer serves responses, watch events and the bytes the server stores ([`Options`]), so
//! lists served straight from stored bytes have the same shape as single objects.

use std::io;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::protobuf::schema::{Field, Fields, Kind, MessageId, Schema, Shape, Special};

/// How an object is written.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Leave out `metadata.resourceVersion` and `metadata.selfLink` of the top-level object:
    /// the form the server stores (the store's revision is the object's version).
    pub stored: bool,
}

/// `value` as Go writes it, with the trailing newline of `json.Encoder`.
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_line(value, &mut out);
    out
}

/// Appends `value` as Go writes it, and a newline.
pub fn write_line(value: &Value, out: &mut Vec<u8>) {
    write(value, Options::default(), out);
    out.push(b'\n');
}

/// Appends `value` as Go writes it, without a newline (for embedding in a larger document).
pub fn write(value: &Value, options: Options, out: &mut Vec<u8>) {
    let mut serializer = serde_json::Serializer::with_formatter(out, GoFormatter);
    let top = Ordered { value, shape: Node::Object, schema: Schema::get(), stored: options.stored };
    // Writing a `Value` into memory cannot fail.
    let _ = top.serialize(&mut serializer);
}

/// Whether objects of this apiVersion and kind have a Go type (and so a Go field order).
pub fn is_typed(api_version: &str, kind: &str) -> bool {
    Schema::get().kind(api_version, kind).is_some()
}

/// Whether `key` comes before `resourceVersion` in an object's `metadata` as written here:
/// ObjectMeta's order for typed objects. Objects without a Go type (custom resources) keep
/// the order they came in, with `resourceVersion` first.
pub fn precedes_resource_version(typed: bool, key: &str) -> bool {
    typed && matches!(key, "name" | "generateName" | "namespace" | "selfLink" | "uid")
}

/// Drops the `null` members of a built-in object's fields, as Go's decoding into its types
/// does (a null is the field's zero value, which Go leaves out or writes as null again), so
/// that an object read back from storage compares equal to the same object decoded from a
/// request. What Go keeps as raw bytes (a RawExtension's content) and members the type does
/// not know are left as they are; objects of kinds without a Go type are not touched.
pub fn drop_nulls(value: &mut Value) {
    let schema = Schema::get();
    let text = |key: &str| value.get(key).and_then(Value::as_str);
    let Some(id) = text("apiVersion").zip(text("kind")).and_then(|(v, k)| schema.kind(v, k)) else {
        return;
    };
    drop_nulls_in(value, Node::Message(id), schema);
}

fn drop_nulls_in(value: &mut Value, node: Node, schema: &Schema) {
    let node = match node {
        Node::Field(kind) => resolve(kind, value, schema),
        other => other,
    };
    match (node, value) {
        (Node::Message(id), Value::Object(map)) => {
            let Shape::Fields(fields) = &schema.messages[id].shape else { return };
            map.retain(|_, v| !v.is_null());
            for (key, member) in map.iter_mut() {
                if let Some(field) = find_field(schema, fields, key) {
                    drop_nulls_in(member, Ordered::field_node(field), schema);
                }
            }
        }
        (Node::Map(kind), Value::Object(map)) => {
            map.values_mut().for_each(|v| drop_nulls_in(v, Node::Field(kind), schema));
        }
        (Node::Array(kind), Value::Array(items)) => {
            items.iter_mut().for_each(|v| drop_nulls_in(v, Node::Field(kind), schema));
        }
        _ => {}
    }
}

/// Go's zero `metav1.Time` as k8s-openapi writes it; Go writes the zero time as `null`.
const ZERO_TIME: &str = "0001-01-01T00:00:00Z";
/// Go's zero `metav1.MicroTime` as k8s-openapi writes it.
const ZERO_MICRO_TIME: &str = "0001-01-01T00:00:00.000000Z";

/// Which way [`zero_times`] goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZeroTimes {
    /// A missing or `null` time that is not a pointer in Go (so Go decodes it as the zero
    /// time) becomes the zero time, which k8s-openapi (where the field is not an `Option`)
    /// can read.
    Fill,
    /// A zero time of such a field is left out again (Go writes it as `null`, and
    /// [`ALWAYS_WRITTEN`] writes it so).
    Drop,
}

/// The non-pointer `metav1.Time`/`MicroTime` fields of a built-in object (a `metav1.Condition`'s
/// `lastTransitionTime`, ...) made readable by k8s-openapi ([`ZeroTimes::Fill`]), or their
/// zero values left out again ([`ZeroTimes::Drop`]): Go decodes `null` or a missing member
/// there as the zero time and writes it back as `null`, where k8s-openapi refuses both.
pub fn zero_times(value: &mut Value, way: ZeroTimes) {
    let schema = Schema::get();
    if let Some(id) = time_holder(value, schema) {
        zero_times_in(value, Node::Message(id), schema, way, TimeHolders::get());
    }
}

/// Whether `value`'s kind can hold a field [`zero_times`] changes (few kinds can: those with
/// a `metav1.Condition` or another required time somewhere), so that the others skip it.
pub fn may_hold_zero_times(value: &Value) -> bool {
    time_holder(value, Schema::get()).is_some()
}

/// The message of `value`'s kind, when that kind can hold a required time.
fn time_holder(value: &Value, schema: &Schema) -> Option<MessageId> {
    let text = |key: &str| value.get(key).and_then(Value::as_str);
    let id = text("apiVersion").zip(text("kind")).and_then(|(v, k)| schema.kind(v, k))?;
    TimeHolders::get().reaches[id].then_some(id)
}

/// For each message, whether it or a message under it has a required (non-pointer) time
/// field: the walk of [`zero_times`] goes only where one can be.
struct TimeHolders {
    reaches: Vec<bool>,
}

impl TimeHolders {
    fn get() -> &'static TimeHolders {
        static HOLDERS: std::sync::OnceLock<TimeHolders> = std::sync::OnceLock::new();
        HOLDERS.get_or_init(|| TimeHolders::build(Schema::get()))
    }

    fn build(schema: &Schema) -> TimeHolders {
        let fields_of = |id: MessageId| match &schema.messages[id].shape {
            Shape::Fields(fields) => fields.list.as_slice(),
            _ => &[],
        };
        let mut reaches: Vec<bool> = (0..schema.messages.len())
            .map(|id| fields_of(id).iter().any(|f| zero_time_of(schema, f).is_some()))
            .collect();
        // Up through the fields that hold such messages, until nothing changes (bounded by
        // the number of messages).
        for _ in 0..schema.messages.len() {
            let mut changed = false;
            for id in 0..schema.messages.len() {
                if reaches[id] {
                    continue;
                }
                let below =
                    fields_of(id).iter().any(|f| matches!(f.kind, Kind::Message(m) if reaches[m]));
                if below {
                    reaches[id] = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        TimeHolders { reaches }
    }
}

/// The zero value of `field` when it is a required, single time (Go decodes a missing or
/// `null` one as the zero time).
fn zero_time_of(schema: &Schema, field: &Field) -> Option<&'static str> {
    if !field.required || field.repeated || field.map {
        return None;
    }
    let Kind::Message(m) = field.kind else { return None };
    match schema.messages[m].shape {
        Shape::Special(Special::Time) => Some(ZERO_TIME),
        Shape::Special(Special::MicroTime) => Some(ZERO_MICRO_TIME),
        _ => None,
    }
}

fn zero_times_in(
    value: &mut Value,
    node: Node,
    schema: &Schema,
    way: ZeroTimes,
    holders: &TimeHolders,
) {
    let node = match node {
        Node::Field(kind) => resolve(kind, value, schema),
        other => other,
    };
    match (node, value) {
        (Node::Message(id), Value::Object(map)) => {
            if !holders.reaches[id] {
                return;
            }
            let Shape::Fields(fields) = &schema.messages[id].shape else { return };
            for f in &fields.list {
                let Some(zero) = zero_time_of(schema, f) else { continue };
                match way {
                    ZeroTimes::Fill if map.get(&f.json).is_none_or(Value::is_null) => {
                        map.insert(f.json.clone(), Value::from(zero));
                    }
                    ZeroTimes::Drop if map.get(&f.json).and_then(Value::as_str) == Some(zero) => {
                        map.remove(&f.json);
                    }
                    _ => {}
                }
            }
            for (key, member) in map.iter_mut() {
                if let Some(field) = find_field(schema, fields, key) {
                    zero_times_in(member, Ordered::field_node(field), schema, way, holders);
                }
            }
        }
        (Node::Map(kind), Value::Object(map)) => {
            for v in map.values_mut() {
                zero_times_in(v, Node::Field(kind), schema, way, holders);
            }
        }
        (Node::Array(kind), Value::Array(items)) => {
            for v in items.iter_mut() {
                zero_times_in(v, Node::Field(kind), schema, way, holders);
            }
        }
        _ => {}
    }
}

/// The field of `fields` (or of an inline member's fields) written as `key`.
fn find_field<'s>(schema: &'s Schema, fields: &'s Fields, key: &str) -> Option<&'s Field> {
    fields.list.iter().find_map(|f| {
        if f.inline {
            match f.kind {
                Kind::Message(id) => match &schema.messages[id].shape {
                    Shape::Fields(inner) => find_field(schema, inner, key),
                    Shape::Special(_) => None,
                },
                _ => None,
            }
        } else {
            (f.json == key).then_some(f)
        }
    })
}

/// The node of a value of `kind`: a message, or how a special message is written.
fn resolve(kind: Kind, value: &Value, schema: &Schema) -> Node {
    match kind {
        Kind::Message(id) => match &schema.messages[id].shape {
            Shape::Fields(_) => Node::Message(id),
            Shape::Special(special) => match special {
                Special::RawExtension => Node::Object,
                Special::OrArray(props) | Special::OrBool(props) => match value {
                    Value::Array(_) => Node::Array(Kind::Message(*props)),
                    _ => Node::Message(*props),
                },
                Special::OrStringArray(props) => match value {
                    Value::Object(_) => Node::Message(*props),
                    _ => Node::Verbatim,
                },
                _ => Node::Verbatim,
            },
        },
        _ => Node::Verbatim,
    }
}

/// How to write one JSON value.
#[derive(Clone, Copy)]
enum Node {
    /// An object that may carry `apiVersion` and `kind` (top level, RawExtension, a member of
    /// a document without a Go type).
    Object,
    /// An instance of a message.
    Message(MessageId),
    /// A value of a field kind (repeated and map fields are unwrapped before).
    Field(Kind),
    /// A Go map: keys sorted, values of the kind.
    Map(Kind),
    /// An array of the kind.
    Array(Kind),
    /// Written as it is.
    Verbatim,
}

struct Ordered<'a> {
    value: &'a Value,
    shape: Node,
    schema: &'static Schema,
    /// Top level only: leave out metadata.resourceVersion and selfLink.
    stored: bool,
}

impl<'a> Ordered<'a> {
    fn child(&self, value: &'a Value, shape: Node) -> Ordered<'a> {
        Ordered { value, shape, schema: self.schema, stored: false }
    }

    /// The node of a field's value.
    fn field_node(field: &Field) -> Node {
        if field.map {
            Node::Map(field.kind)
        } else if field.repeated {
            Node::Array(field.kind)
        } else {
            Node::Field(field.kind)
        }
    }

    fn kind_node(&self, kind: Kind) -> Node {
        resolve(kind, self.value, self.schema)
    }
}

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let shape = match self.shape {
            Node::Field(kind) => self.kind_node(kind),
            other => other,
        };
        match (shape, self.value) {
            (Node::Object, Value::Object(map)) => {
                let text = |key: &str| map.get(key).and_then(Value::as_str);
                let id = match (text("apiVersion"), text("kind")) {
                    (Some(version), Some(kind)) => self.schema.kind(version, kind),
                    _ => None,
                };
                match id {
                    Some(id) => self.message(serializer, map, id, true),
                    None => self.untyped(serializer, map),
                }
            }
            (Node::Message(id), Value::Object(map)) => self.message(serializer, map, id, false),
            (Node::Map(kind), Value::Object(map)) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort_unstable();
                let mut out = serializer.serialize_map(Some(keys.len()))?;
                for key in keys {
                    let value = &map[key];
                    let node = self.child(value, Node::Field(kind));
                    out.serialize_entry(key, &node)?;
                }
                out.end()
            }
            (Node::Array(kind), Value::Array(items)) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&self.child(item, Node::Field(kind)))?;
                }
                out.end()
            }
            (Node::Object | Node::Verbatim, Value::Array(items)) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&self.child(item, Node::Object))?;
                }
                out.end()
            }
            (Node::Verbatim, Value::Object(map)) => self.untyped(serializer, map),
            (_, value) => value.serialize(serializer),
        }
    }
}

impl Ordered<'_> {
    /// A message's fields in Go order; `top` puts `kind` and `apiVersion` (Go's embedded
    /// TypeMeta) first.
    fn message<S: Serializer>(
        &self,
        serializer: S,
        map: &Map<String, Value>,
        id: MessageId,
        top: bool,
    ) -> Result<S::Ok, S::Error> {
        let Shape::Fields(fields) = &self.schema.messages[id].shape else {
            return self.untyped(serializer, map);
        };
        let mut out = serializer.serialize_map(None)?;
        let mut written = 0;
        // Go's embedded TypeMeta comes first: in a typed list's items as at the top, but not
        // in types with fields of those names (ObjectReference).
        let type_meta = top || (map.contains_key("kind") && !self.knows(fields, "kind"));
        if type_meta {
            for key in ["kind", "apiVersion"] {
                if let Some(value) = map.get(key) {
                    out.serialize_entry(key, value)?;
                    written += 1;
                }
            }
        }
        written += self.fields(&mut out, map, id, fields, top, &[])?;
        if written < map.len() {
            // Members the Go type does not have: after the known ones, as they came.
            for (key, value) in map {
                let known = (type_meta && (key == "kind" || key == "apiVersion"))
                    || self.knows(fields, key);
                if !known {
                    out.serialize_entry(key, &self.child(value, Node::Object))?;
                }
            }
        }
        out.end()
    }

    /// Writes the members of `map` that are fields of `fields` (inline fields' members in
    /// their place), but not those in `skip`; returns how many.
    #[allow(clippy::too_many_arguments)]
    fn fields<M: SerializeMap>(
        &self,
        out: &mut M,
        map: &Map<String, Value>,
        id: MessageId,
        fields: &Fields,
        top: bool,
        skip: &[&str],
    ) -> Result<usize, M::Error> {
        let always = Always::get();
        // Few members of a type with many fields (most of a pod's): sort the members by
        // their fields rather than look every field up in the object.
        if !fields.has_inline && map.len() * SPARSE_RATIO < fields.list.len() {
            return self.sparse_fields(out, map, id, fields, top, skip, always);
        }
        let mut written = 0;
        for (index, field) in fields.list.iter().enumerate() {
            if field.inline {
                if let Kind::Message(inner_id) = field.kind {
                    if let Shape::Fields(inner) = &self.schema.messages[inner_id].shape {
                        written += self.fields(out, map, inner_id, inner, false, skip)?;
                    }
                }
                continue;
            }
            let value = map.get(&field.json);
            if value.is_some() || always.written(id, index) {
                written += usize::from(self.member(out, field, value, top, skip)?);
            }
        }
        Ok(written)
    }

    /// [`Self::fields`] for an object with few of its type's fields (and no embedded ones):
    /// the same members in the same order.
    #[allow(clippy::too_many_arguments)]
    fn sparse_fields<M: SerializeMap>(
        &self,
        out: &mut M,
        map: &Map<String, Value>,
        id: MessageId,
        fields: &Fields,
        top: bool,
        skip: &[&str],
        always: &Always,
    ) -> Result<usize, M::Error> {
        // (field index, member value): none for a field written although absent.
        let mut members: Vec<(usize, Option<&Value>)> = map
            .iter()
            .filter_map(|(key, value)| Some((fields.index_of_json(key)?, Some(value))))
            .collect();
        for index in always.indexes(id) {
            if !map.contains_key(&fields.list[index].json) {
                members.push((index, None));
            }
        }
        members.sort_unstable_by_key(|(index, _)| *index);
        let mut written = 0;
        for (index, value) in members {
            written += usize::from(self.member(out, &fields.list[index], value, top, skip)?);
        }
        Ok(written)
    }

    /// Writes one field: its member's value, or (none) the zero value Go writes for it when
    /// absent. Whether a member was written (not a zero, not one of `skip`).
    fn member<M: SerializeMap>(
        &self,
        out: &mut M,
        field: &Field,
        value: Option<&Value>,
        top: bool,
        skip: &[&str],
    ) -> Result<bool, M::Error> {
        let Some(value) = value else {
            out.serialize_entry(&field.json, &Zero::of(field, self.schema))?;
            return Ok(false);
        };
        if skip.contains(&field.json.as_str()) {
            return Ok(false);
        }
        if top && self.stored && field.json == "metadata" {
            if let Value::Object(meta) = value {
                let stored = StoredMeta { map: meta, meta: field.kind, parent: self };
                out.serialize_entry("metadata", &stored)?;
                return Ok(true);
            }
        }
        out.serialize_entry(&field.json, &self.child(value, Self::field_node(field)))?;
        Ok(true)
    }

    fn knows(&self, fields: &Fields, key: &str) -> bool {
        if !fields.has_inline {
            return fields.index_of_json(key).is_some();
        }
        find_field(self.schema, fields, key).is_some()
    }

    /// An object without a Go type: its members as they are, built-in objects inside it in
    /// their Go order.
    fn untyped<S: Serializer>(
        &self,
        serializer: S,
        map: &Map<String, Value>,
    ) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_map(Some(map.len()))?;
        for (key, value) in map {
            out.serialize_entry(key, &self.child(value, Node::Object))?;
        }
        out.end()
    }
}

/// When an object has fewer than 1/SPARSE_RATIO of its type's fields, its members are sorted
/// into Go's order rather than each field looked up in it.
const SPARSE_RATIO: usize = 3;

/// The top-level metadata as stored: ObjectMeta's order without resourceVersion and selfLink.
struct StoredMeta<'a, 'b> {
    map: &'a Map<String, Value>,
    meta: Kind,
    parent: &'b Ordered<'a>,
}

/// What the store does not keep of the top-level metadata.
const NOT_STORED: [&str; 2] = ["resourceVersion", "selfLink"];

impl Serialize for StoredMeta<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let schema = self.parent.schema;
        let (id, fields) = match self.meta {
            Kind::Message(id) => match &schema.messages[id].shape {
                Shape::Fields(fields) => (id, fields),
                Shape::Special(_) => return self.map.serialize(serializer),
            },
            _ => return self.map.serialize(serializer),
        };
        let mut out = serializer.serialize_map(None)?;
        let written = self.parent.fields(&mut out, self.map, id, fields, false, &NOT_STORED)?;
        let skipped = NOT_STORED.iter().filter(|k| self.map.contains_key(**k)).count();
        if written + skipped < self.map.len() {
            for (key, value) in self.map {
                if !NOT_STORED.contains(&key.as_str()) && !self.parent.knows(fields, key) {
                    out.serialize_entry(key, value)?;
                }
            }
        }
        out.end()
    }
}

/// Struct-valued fields that are not pointers in the upstream Go types (so Go's `omitempty`
/// still writes them: a struct as `{}` at least, a `metav1.Time` as `null`), beyond the rules
/// every type follows (`metadata`, a kind's `spec` and `status`): (message, JSON name). Read
/// from the Go types of k8s.io/api 1.33.
pub const ALWAYS_WRITTEN: &[(&str, &str)] = &[
    ("k8s.io.api.core.v1.ServiceStatus", "loadBalancer"),
    ("k8s.io.apimachinery.pkg.apis.meta.v1.Condition", "lastTransitionTime"),
    ("k8s.io.api.core.v1.ContainerStatus", "state"),
    ("k8s.io.api.core.v1.ContainerStatus", "lastState"),
    ("k8s.io.api.core.v1.ContainerStateRunning", "startedAt"),
    ("k8s.io.api.core.v1.ContainerStateTerminated", "startedAt"),
    ("k8s.io.api.core.v1.ContainerStateTerminated", "finishedAt"),
    ("k8s.io.api.core.v1.PodCondition", "lastProbeTime"),
    ("k8s.io.api.core.v1.PodCondition", "lastTransitionTime"),
    ("k8s.io.api.core.v1.NodeStatus", "daemonEndpoints"),
    ("k8s.io.api.core.v1.NodeStatus", "nodeInfo"),
    ("k8s.io.api.core.v1.NodeDaemonEndpoints", "kubeletEndpoint"),
    ("k8s.io.api.core.v1.NodeCondition", "lastHeartbeatTime"),
    ("k8s.io.api.core.v1.NodeCondition", "lastTransitionTime"),
    ("k8s.io.api.core.v1.NamespaceCondition", "lastTransitionTime"),
    ("k8s.io.api.core.v1.PersistentVolumeClaimSpec", "resources"),
    ("k8s.io.api.core.v1.PersistentVolumeClaimCondition", "lastProbeTime"),
    ("k8s.io.api.core.v1.PersistentVolumeClaimCondition", "lastTransitionTime"),
    ("k8s.io.api.core.v1.ReplicationControllerCondition", "lastTransitionTime"),
    ("k8s.io.api.core.v1.Event", "firstTimestamp"),
    ("k8s.io.api.core.v1.Event", "lastTimestamp"),
    ("k8s.io.api.core.v1.Event", "eventTime"),
    ("k8s.io.api.events.v1.Event", "eventTime"),
    ("k8s.io.api.apps.v1.DeploymentCondition", "lastUpdateTime"),
    ("k8s.io.api.apps.v1.DeploymentCondition", "lastTransitionTime"),
    ("k8s.io.api.apps.v1.ReplicaSetCondition", "lastTransitionTime"),
    ("k8s.io.api.apps.v1.StatefulSetCondition", "lastTransitionTime"),
    ("k8s.io.api.apps.v1.DaemonSetCondition", "lastTransitionTime"),
    ("k8s.io.api.batch.v1.JobCondition", "lastProbeTime"),
    ("k8s.io.api.batch.v1.JobCondition", "lastTransitionTime"),
    ("k8s.io.api.certificates.v1.CertificateSigningRequestCondition", "lastUpdateTime"),
    ("k8s.io.api.certificates.v1.CertificateSigningRequestCondition", "lastTransitionTime"),
    ("k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerCondition", "lastTransitionTime"),
    ("k8s.io.api.networking.v1.NetworkPolicySpec", "podSelector"),
    ("k8s.io.api.discovery.v1.Endpoint", "conditions"),
    ("k8s.io.api.networking.v1.IngressStatus", "loadBalancer"),
    ("k8s.io.api.core.v1.Container", "resources"),
    ("k8s.io.api.core.v1.EphemeralContainerCommon", "resources"),
    ("k8s.io.api.core.v1.PodTemplate", "template"),
    ("k8s.io.api.core.v1.PodTemplateSpec", "spec"),
    ("k8s.io.api.core.v1.PersistentVolumeClaimTemplate", "spec"),
    ("k8s.io.api.apps.v1.DeploymentSpec", "template"),
    ("k8s.io.api.apps.v1.DeploymentSpec", "strategy"),
    ("k8s.io.api.apps.v1.ReplicaSetSpec", "template"),
    ("k8s.io.api.apps.v1.DaemonSetSpec", "template"),
    ("k8s.io.api.apps.v1.DaemonSetSpec", "updateStrategy"),
    ("k8s.io.api.apps.v1.StatefulSetSpec", "template"),
    ("k8s.io.api.apps.v1.StatefulSetSpec", "updateStrategy"),
    ("k8s.io.api.batch.v1.JobSpec", "template"),
    ("k8s.io.api.batch.v1.CronJobSpec", "jobTemplate"),
    ("k8s.io.api.batch.v1.JobTemplateSpec", "spec"),
];

/// ObjectMeta's creationTimestamp: a Go `metav1.Time` (a struct), written `null` when zero.
const OBJECT_META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Which absent fields Go writes anyway, by message and field index.
pub struct Always {
    by_message: Vec<Vec<bool>>,
}

impl Always {
    fn get() -> &'static Always {
        static ALWAYS: std::sync::OnceLock<Always> = std::sync::OnceLock::new();
        ALWAYS.get_or_init(|| Always::build(Schema::get()))
    }

    fn build(schema: &Schema) -> Always {
        let top_level: std::collections::HashSet<MessageId> = schema.kind_messages().collect();
        let by_message = schema
            .messages
            .iter()
            .enumerate()
            .map(|(id, message)| {
                let Shape::Fields(fields) = &message.shape else { return Vec::new() };
                fields
                    .list
                    .iter()
                    .map(|f| {
                        let is_struct = matches!(f.kind, Kind::Message(m)
                            if matches!(schema.messages[m].shape, Shape::Fields(_)))
                            && !f.repeated
                            && !f.map;
                        // Fields without omitempty: the OpenAPI document's required ones.
                        let plain = f.required
                            && (f.repeated
                                || f.map
                                || matches!(
                                    f.kind,
                                    Kind::Int32 | Kind::Int64 | Kind::Bool | Kind::String
                                ));
                        // Listed: a struct (`{}` at least) or a Time (`null` when zero).
                        let listed = matches!(f.kind, Kind::Message(_))
                            && !f.repeated
                            && !f.map
                            && ALWAYS_WRITTEN.contains(&(message.name.as_str(), f.json.as_str()));
                        (is_struct
                            && (f.json == "metadata"
                                || (top_level.contains(&id)
                                    && (f.json == "spec" || f.json == "status"))))
                            || listed
                            || plain
                            || (message.name == OBJECT_META && f.json == "creationTimestamp")
                    })
                    .collect()
            })
            .collect();
        Always { by_message }
    }

    fn written(&self, id: MessageId, field: usize) -> bool {
        self.by_message.get(id).and_then(|m| m.get(field)).copied().unwrap_or(false)
    }

    /// The fields of message `id` Go always writes, by index.
    fn indexes(&self, id: MessageId) -> impl Iterator<Item = usize> + '_ {
        let fields = self.by_message.get(id).map(Vec::as_slice).unwrap_or_default();
        fields.iter().enumerate().filter(|(_, always)| **always).map(|(index, _)| index)
    }
}

/// The zero value of a field Go always writes: a struct with its own always-written fields,
/// 0, false, "", or null (a nil slice or map, a zero Time).
struct Zero {
    kind: Kind,
    /// A slice or map.
    nil: bool,
    schema: &'static Schema,
}

impl Zero {
    fn of(field: &Field, schema: &'static Schema) -> Zero {
        Zero { kind: field.kind, nil: field.repeated || field.map, schema }
    }
}

impl Serialize for Zero {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.nil {
            return serializer.serialize_unit();
        }
        match self.kind {
            Kind::String => serializer.serialize_str(""),
            Kind::Int32 | Kind::Int64 => serializer.serialize_i64(0),
            Kind::Bool => serializer.serialize_bool(false),
            Kind::Message(id) => match &self.schema.messages[id].shape {
                Shape::Fields(fields) => {
                    let always = Always::get();
                    let mut out = serializer.serialize_map(None)?;
                    for (index, field) in fields.list.iter().enumerate() {
                        if always.written(id, index) {
                            out.serialize_entry(&field.json, &Zero::of(field, self.schema))?;
                        }
                    }
                    out.end()
                }
                Shape::Special(_) => serializer.serialize_unit(),
            },
            _ => serializer.serialize_unit(),
        }
    }
}

/// serde_json's compact output with Go's HTML-safe string escapes.
struct GoFormatter;

impl serde_json::ser::Formatter for GoFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let bytes = fragment.as_bytes();
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let (escape, len): (&[u8], usize) = match bytes[i] {
                b'<' => (b"\\u003c", 1),
                b'>' => (b"\\u003e", 1),
                b'&' => (b"\\u0026", 1),
                0xE2 if bytes.get(i + 1) == Some(&0x80) && bytes.get(i + 2) == Some(&0xA8) => {
                    (b"\\u2028", 3)
                }
                0xE2 if bytes.get(i + 1) == Some(&0x80) && bytes.get(i + 2) == Some(&0xA9) => {
                    (b"\\u2029", 3)
                }
                _ => {
                    i += 1;
                    continue;
                }
            };
            writer.write_all(&bytes[start..i])?;
            writer.write_all(escape)?;
            i += len;
            start = i;
        }
        writer.write_all(&bytes[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(value: &Value) -> String {
        String::from_utf8(to_vec(value)).unwrap()
    }

    #[test]
    fn objects_follow_the_go_structs() {
        let pod = json!({
            "status": {"phase": "Pending"},
            "spec": {"containers": [{"image": "nginx", "name": "c", "ports": [{"containerPort": 80}]}]},
            "metadata": {"uid": "u", "labels": {"b": "2", "a": "1"}, "name": "p", "namespace": "d",
                         "creationTimestamp": "2024-01-01T00:00:00Z", "resourceVersion": "5"},
            "apiVersion": "v1",
            "kind": "Pod",
        });
        assert_eq!(
            text(&pod),
            concat!(
                r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"d","uid":"u","#,
                r#""resourceVersion":"5","creationTimestamp":"2024-01-01T00:00:00Z","labels":{"a":"1","b":"2"}},"#,
                r#""spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}],"resources":{}}]},"#,
                r#""status":{"phase":"Pending"}}"#,
                "\n"
            )
        );
    }

    #[test]
    fn status_and_lists_follow_their_structs() {
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "m", "reason": "NotFound", "code": 404, "details": {"kind": "pods", "name": "x"}});
        assert_eq!(
            text(&status),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
             \"message\":\"m\",\"reason\":\"NotFound\",\"details\":{\"name\":\"x\",\"kind\":\"pods\"},\
             \"code\":404}\n"
        );
        let list = json!({"items": [{"data": {"k": "v"}, "metadata": {"name": "a"}, "kind": "ConfigMap", "apiVersion": "v1"}],
            "metadata": {"resourceVersion": "3"}, "apiVersion": "v1", "kind": "ConfigMapList"});
        assert_eq!(
            text(&list),
            "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"3\"},\
             \"items\":[{\"metadata\":{\"name\":\"a\",\"creationTimestamp\":null},\"data\":{\"k\":\"v\"}}]}\n"
                .replace("[{\"metadata", "[{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata")
        );
    }

    #[test]
    fn unknown_members_and_kinds_keep_their_place() {
        // A custom resource: as it is.
        let cr = json!({"spec": {"b": 1, "a": 2}, "apiVersion": "x.io/v1", "kind": "Foo"});
        assert_eq!(
            text(&cr),
            "{\"spec\":{\"b\":1,\"a\":2},\"apiVersion\":\"x.io/v1\",\"kind\":\"Foo\"}\n"
        );
        // A member the type does not know follows the known ones.
        let cm = json!({"zzz": 1, "data": {}, "kind": "ConfigMap", "apiVersion": "v1"});
        assert_eq!(
            text(&cm),
            "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"creationTimestamp\":null},\"data\":{},\"zzz\":1}\n"
        );
        // A built-in object inside an untyped document (a Table row) gets its Go order.
        let table = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "rows": [{"cells": [],
            "object": {"metadata": {}, "apiVersion": "v1", "kind": "ConfigMap"}}]});
        assert_eq!(
            text(&table),
            "{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",\"rows\":[{\"cells\":[],\
             \"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"creationTimestamp\":null}}}]}\n"
        );
    }

    #[test]
    fn fields_go_always_writes_are_written() {
        let svc = json!({"kind": "Service", "apiVersion": "v1", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80}]}});
        assert_eq!(
            text(&svc),
            "{\"kind\":\"Service\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"s\",\"creationTimestamp\":null},\
             \"spec\":{\"ports\":[{\"port\":80}]},\"status\":{\"loadBalancer\":{}}}\n"
        );
        let deploy = json!({"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "d",
            "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"selector": {}, "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        assert_eq!(
            text(&deploy),
            "{\"kind\":\"Deployment\",\"apiVersion\":\"apps/v1\",\"metadata\":{\"name\":\"d\",\
             \"creationTimestamp\":\"2024-01-01T00:00:00Z\"},\"spec\":{\"selector\":{},\"template\":{\
             \"metadata\":{\"creationTimestamp\":null,\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":\
             [{\"name\":\"c\",\"image\":\"i\",\"resources\":{}}]}},\"strategy\":{}},\"status\":{}}\n"
        );
        // A bookmark's empty object, as kube-apiserver writes it.
        let pod = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}});
        assert_eq!(
            text(&pod),
            "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"7\",\
             \"creationTimestamp\":null},\"spec\":{\"containers\":null},\"status\":{}}\n"
        );
        let rs = json!({"kind": "ReplicaSet", "apiVersion": "apps/v1", "metadata": {},
            "spec": {"template": {}}, "status": {"readyReplicas": 1}});
        assert!(
            text(&rs).ends_with("\"status\":{\"replicas\":0,\"readyReplicas\":1}}\n"),
            "{}",
            text(&rs)
        );
    }

    #[test]
    fn nulls_are_dropped_where_go_decodes_them_into_its_types() {
        let mut revision = json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": "r", "creationTimestamp": null, "labels": {"a": "b"}},
            "data": {"spec": {"template": {"metadata": {"creationTimestamp": null}}}},
            "revision": 1});
        drop_nulls(&mut revision);
        // Metadata is a Go type; a RawExtension's content is kept as it came.
        assert_eq!(revision["metadata"], json!({"name": "r", "labels": {"a": "b"}}));
        assert_eq!(
            revision["data"]["spec"]["template"]["metadata"]["creationTimestamp"],
            Value::Null
        );
        assert!(revision["data"]["spec"]["template"]["metadata"]
            .get("creationTimestamp")
            .is_some());
        let mut deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template":
            {"metadata": {"creationTimestamp": null}, "spec": {"containers": [{"name": "c", "args": null}]}}}});
        drop_nulls(&mut deploy);
        assert_eq!(
            deploy["spec"]["template"],
            json!({"metadata": {}, "spec": {"containers": [{"name": "c"}]}})
        );
        // A kind without a Go type keeps its nulls.
        let mut custom = json!({"apiVersion": "x.io/v1", "kind": "Foo", "spec": {"a": null}});
        drop_nulls(&mut custom);
        assert_eq!(custom["spec"], json!({"a": null}));
    }

    #[test]
    fn every_always_written_entry_names_a_field_of_a_message() {
        let schema = Schema::get();
        for (message, field) in ALWAYS_WRITTEN {
            let id = schema.message(message).unwrap_or_else(|| panic!("no message {message}"));
            let Shape::Fields(fields) = &schema.messages[id].shape else { panic!("{message}") };
            assert!(find_field(schema, fields, field).is_some(), "{message} has no {field}");
        }
        let pod = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {}, "spec": {"containers": []},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "image": "i", "imageID": ""}]}});
        let t = text(&pod);
        assert!(
            t.contains(
                r#"{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":null}"#
            ),
            "{t}"
        );
        assert!(t.contains(r#"{"name":"c","state":{},"lastState":{},"ready":true,"restartCount":0,"image":"i","imageID":""}"#), "{t}");
    }

    #[test]
    fn strings_are_html_safe_as_go_writes_them() {
        let v = json!({"a<b>": "x & y <z> \u{2028}\u{2029} é \"q\" \n"});
        assert_eq!(
            text(&v),
            "{\"a\\u003cb\\u003e\":\"x \\u0026 y \\u003cz\\u003e \\u2028\\u2029 é \\\"q\\\" \\n\"}\n"
        );
    }

    #[test]
    fn stored_objects_leave_out_their_version() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"resourceVersion": "9", "selfLink": "/x", "name": "a", "uid": "u"}});
        let mut out = Vec::new();
        write(&cm, Options { stored: true }, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"a\",\"uid\":\"u\",\"creationTimestamp\":null}}"
        );
        assert!(precedes_resource_version(true, "uid"));
        assert!(!precedes_resource_version(true, "creationTimestamp"));
        assert!(!precedes_resource_version(false, "name"));
    }

    #[test]
    fn nested_specials_keep_their_json() {
        // A CRD's schema: JSONSchemaProps in Go order, its properties map sorted.
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "spec": {"versions": [{"schema": {"openAPIV3Schema": {"type": "object",
                "properties": {"b": {"type": "string"}, "a": {"type": "integer", "default": {"z": 1, "y": 2}}}}},
                "name": "v1", "served": true, "storage": true}], "group": "x.io"}});
        let t = text(&crd);
        assert!(t.contains("\"spec\":{\"group\":\"x.io\",\"scope\":\"\",\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"default\":{\"z\":1,\"y\":2}},\"b\":{\"type\":\"string\"}}}}}]}"), "{t}");
    }
}
