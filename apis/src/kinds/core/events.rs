//! Events (`v1`), stored for both groups that serve them (events.k8s.io/v1 is converted
//! from and to this form).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::{SelectableField, Strategy};
use crate::tables::{at, int, or, since, st, text, time, wide, Column, TablePrinter, NAME};
use crate::validation::FieldError;
use crate::{convert, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Events;

impl Strategy for Events {
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::event::core_event(obj, old)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[
            ("involvedObject.kind", &["involvedObject", "kind"]),
            ("involvedObject.namespace", &["involvedObject", "namespace"]),
            ("involvedObject.name", &["involvedObject", "name"]),
            ("involvedObject.uid", &["involvedObject", "uid"]),
            ("involvedObject.apiVersion", &["involvedObject", "apiVersion"]),
            ("involvedObject.resourceVersion", &["involvedObject", "resourceVersion"]),
            ("involvedObject.fieldPath", &["involvedObject", "fieldPath"]),
            ("reason", &["reason"]),
            ("reportingComponent", &["reportingComponent"]),
            ("source", &["source", "component"]),
            ("type", &["type"]),
        ]
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }

    fn convert_from(&self, obj: Value, from: &str) -> Value {
        convert::event_to_core(obj, from)
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter =
    TablePrinter { columns: EVENT_COLUMNS, row: |obj, now| event_row(false, obj, now) };

/// The columns of both Event APIs' tables.
pub(crate) const EVENT_COLUMNS: &[Column] = &[
    text("Last Seen", D_EV_LAST),
    text("Type", D_EV_TYPE),
    text("Reason", D_EV_REASON),
    text("Object", D_EV_OBJECT),
    wide("Subobject", "string", D_EV_FIELD_PATH),
    wide("Source", "string", D_EV_SOURCE),
    text("Message", D_EV_MESSAGE),
    wide("First Seen", "string", D_EV_FIRST),
    wide("Count", "string", D_EV_COUNT),
    Column { priority: 1, ..NAME },
];

/// Core v1 events and events.k8s.io/v1 events print alike; the latter name their fields
/// differently.
pub(crate) fn event_row(v1: bool, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let field = |core: &'static str, events: &'static str| if v1 { events } else { core };
    let involved = field("involvedObject", "regarding");

    let first = match time(obj, &[field("firstTimestamp", "deprecatedFirstTimestamp")]) {
        Some(t) => since(Some(t), now),
        None => since(time(obj, &["eventTime"]), now),
    };
    let mut last = match time(obj, &[field("lastTimestamp", "deprecatedLastTimestamp")]) {
        Some(t) => since(Some(t), now),
        None => first.clone(),
    };
    let mut count = int(obj, &[field("count", "deprecatedCount")]);
    match at(obj, &["series"]).filter(|s| s.is_object()) {
        Some(series) => {
            last = since(time(series, &["lastObservedTime"]), now);
            count = int(series, &["count"]);
        }
        // Singleton events of the new API have no count.
        None if count == 0 => count = 1,
        None => {}
    }

    let kind = st(obj, &[involved, "kind"]).to_lowercase();
    let target = match st(obj, &[involved, "name"]) {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let source = field("source", "deprecatedSource");
    let component = or(
        st(obj, &[source, "component"]),
        st(obj, &[field("reportingComponent", "reportingController")]),
    );
    let host = or(st(obj, &[source, "host"]), st(obj, &["reportingInstance"]));
    let source =
        if host.is_empty() { component.to_string() } else { format!("{component}, {host}") };

    vec![
        last.into(),
        st(obj, &["type"]).into(),
        st(obj, &["reason"]).into(),
        target.into(),
        st(obj, &[involved, "fieldPath"]).into(),
        source.into(),
        st(obj, &[field("message", "note")]).trim().into(),
        first.into(),
        count.into(),
        st(obj, &["metadata", "name"]).into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_EV_LAST: &str = "The time at which the most recent occurrence of this event was recorded.";
const D_EV_TYPE: &str =
    "Type of this event (Normal, Warning), new types could be added in the future";
const D_EV_REASON: &str = "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.";
const D_EV_OBJECT: &str = "The object that this event is about.";
const D_EV_FIELD_PATH: &str = "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers\\[2\\]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers\\[2\\]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.";
const D_EV_SOURCE: &str =
    "The component reporting this event. Should be a short machine understandable string.";
const D_EV_MESSAGE: &str = "A human-readable description of the status of this operation.";
const D_EV_FIRST: &str =
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)";
const D_EV_COUNT: &str = "The number of times this event has occurred.";
