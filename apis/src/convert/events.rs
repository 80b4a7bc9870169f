//! events.k8s.io/v1 Events are core v1 Events under other names, as upstream converts them
//! (`pkg/apis/events/v1`): `regarding` is `involvedObject`, `note` is `message`,
//! `reportingController` is `reportingComponent`, and the fields the newer API deprecated
//! (`deprecatedSource`, `deprecatedFirstTimestamp`, `deprecatedLastTimestamp`,
//! `deprecatedCount`) are `source`, `firstTimestamp`, `lastTimestamp` and `count`; the rest
//! (`eventTime`, `series`, `action`, `reason`, `related`, `reportingInstance`, `type`) keep
//! their names. Fields come out in the order of the target's Go struct, and what its Go type
//! leaves out when empty (`omitempty` strings and counts) is left out.

use serde_json::{Map, Value};

/// How a field is written when its value is empty.
#[derive(Clone, Copy)]
enum Empty {
    /// Written as it is.
    Keep,
    /// `omitempty`: an empty string or a zero number is left out.
    Omit,
}

use Empty::{Keep, Omit};

/// (core v1 name, events.k8s.io/v1 name, how core writes it empty, how events writes it).
/// `metadata` comes first in both; the rest in core's order.
const FIELDS: &[(&str, &str, Empty, Empty)] = &[
    ("involvedObject", "regarding", Keep, Keep),
    ("reason", "reason", Omit, Omit),
    ("message", "note", Omit, Omit),
    ("source", "deprecatedSource", Keep, Keep),
    ("firstTimestamp", "deprecatedFirstTimestamp", Keep, Keep),
    ("lastTimestamp", "deprecatedLastTimestamp", Keep, Keep),
    ("count", "deprecatedCount", Omit, Omit),
    ("type", "type", Omit, Omit),
    ("eventTime", "eventTime", Keep, Keep),
    ("series", "series", Keep, Keep),
    ("action", "action", Omit, Omit),
    ("related", "related", Keep, Keep),
    ("reportingComponent", "reportingController", Keep, Omit),
    ("reportingInstance", "reportingInstance", Keep, Omit),
];

/// The order of events.k8s.io/v1 Event's Go struct, after `metadata`.
const EVENTS_ORDER: &[&str] = &[
    "eventTime",
    "series",
    "reportingController",
    "reportingInstance",
    "action",
    "reason",
    "regarding",
    "related",
    "note",
    "type",
    "deprecatedSource",
    "deprecatedFirstTimestamp",
    "deprecatedLastTimestamp",
    "deprecatedCount",
];

/// A core v1 Event as an events.k8s.io/v1 Event.
pub(super) fn from_core(obj: Value) -> Value {
    let mut renamed = Map::new();
    let Value::Object(mut core) = obj else { return obj };
    for &(core_name, events_name, _, empty) in FIELDS {
        if let Some(value) = core.shift_remove(core_name) {
            put(&mut renamed, events_name, value, empty);
        }
    }
    let mut out = head(&mut core);
    for name in EVENTS_ORDER {
        if let Some(value) = renamed.shift_remove(*name) {
            out.insert((*name).into(), value);
        }
    }
    Value::Object(out)
}

/// An events.k8s.io/v1 Event as a core v1 Event.
pub(super) fn to_core(obj: Value) -> Value {
    let Value::Object(mut events) = obj else { return obj };
    let mut out = head(&mut events);
    for &(core_name, events_name, empty, _) in FIELDS {
        if let Some(value) = events.shift_remove(events_name) {
            put(&mut out, core_name, value, empty);
        }
    }
    Value::Object(out)
}

/// `apiVersion`, `kind` and `metadata`, taken out of `obj`, in that order (the caller sets
/// the first two).
fn head(obj: &mut Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for field in ["apiVersion", "kind", "metadata"] {
        if let Some(value) = obj.shift_remove(field) {
            out.insert(field.into(), value);
        }
    }
    out
}

fn put(out: &mut Map<String, Value>, name: &str, value: Value, empty: Empty) {
    let is_empty = match &value {
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_i64() == Some(0),
        Value::Null => true,
        _ => false,
    };
    if matches!(empty, Omit) && is_empty {
        return;
    }
    out.insert(name.into(), value);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::convert::convert;
    use crate::resources::Resources;

    fn core_event() -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u1", "apiVersion": "v1"},
            "reason": "Started",
            "message": "Started container c",
            "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": "2026-01-01T00:00:00Z",
            "lastTimestamp": "2026-01-01T00:00:05Z",
            "count": 2,
            "type": "Normal",
            "eventTime": null,
            "reportingComponent": "kubelet",
            "reportingInstance": "n1"
        })
    }

    #[test]
    fn core_events_read_as_events_k8s_io_and_back() {
        let r = Resources::builtin();
        let events = r.get("events.k8s.io", "v1", "events").unwrap();
        let core = r.get("", "v1", "events").unwrap();
        let v1 = convert(core_event(), events);
        assert_eq!(
            v1,
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "web.1", "namespace": "default"},
                "eventTime": null,
                "reportingController": "kubelet",
                "reportingInstance": "n1",
                "reason": "Started",
                "regarding": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u1", "apiVersion": "v1"},
                "note": "Started container c",
                "type": "Normal",
                "deprecatedSource": {"component": "kubelet", "host": "n1"},
                "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
                "deprecatedLastTimestamp": "2026-01-01T00:00:05Z",
                "deprecatedCount": 2
            })
        );
        // The Go struct's order, not the input's.
        let keys: Vec<&String> = v1.as_object().unwrap().keys().collect();
        assert_eq!(keys[3..5], ["eventTime", "reportingController"]);
        assert_eq!(convert(v1, core), core_event());
    }

    #[test]
    fn events_k8s_io_events_read_as_core_events() {
        let core = Resources::builtin().get("", "v1", "events").unwrap();
        let v1 = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "x", "namespace": "ns"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "series": {"count": 3, "lastObservedTime": "2026-01-01T00:01:00.000000Z"},
            "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1",
            "action": "Reconcile",
            "reason": "Done",
            "regarding": {"kind": "Node", "name": "n1"},
            "note": "all good",
            "type": "Normal"
        });
        let out = convert(v1, core);
        assert_eq!(
            out,
            json!({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "x", "namespace": "ns"},
                "involvedObject": {"kind": "Node", "name": "n1"},
                "reason": "Done",
                "message": "all good",
                "type": "Normal",
                "eventTime": "2026-01-01T00:00:00.000000Z",
                "series": {"count": 3, "lastObservedTime": "2026-01-01T00:01:00.000000Z"},
                "action": "Reconcile",
                "reportingComponent": "example.com/ctl",
                "reportingInstance": "ctl-1"
            })
        );
        // Empty omitempty fields of the newer API are left out; core keeps its own.
        let sparse = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "s"},
            "reportingComponent": "", "reportingInstance": "", "count": 0, "message": ""});
        let events = Resources::builtin().get("events.k8s.io", "v1", "events").unwrap();
        assert_eq!(
            convert(sparse, events),
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "s"}})
        );
    }
}
