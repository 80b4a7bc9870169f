//! Events, of both Event APIs (core/v1 and events.k8s.io/v1), with upstream's (v1.33)
//! messages and field paths (`ValidateEvent{Create,Update}`, in upstream's core validation for
//! both).
//!
//! Upstream validates both APIs on its internal Event type, so errors name the internal
//! fields whatever the request's version: a core/v1 Event's `reportingComponent` is
//! `reportingController`, an events.k8s.io/v1 Event's `regarding` is `involvedObject`, `note`
//! is `message`, `deprecatedSource` is `source`, and so on. Metadata is checked by the
//! caller.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::gofmt::go_quote;
use crate::validation::values::{problems_at, qualified_name, str_of, text, IMMUTABLE};
use crate::validation::{name_problems, FieldError, NameRule};

const EVENT_FIELD_LIMIT: usize = 128;
const EVENT_NOTE_LIMIT: usize = 1024;

/// A core/v1 Event: only upstream's legacy checks, on create and update alike (upstream
/// applies nothing more to requests through the v1 API).
pub fn core_event(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    legacy_event(&internal_from_core(obj))
}

/// An events.k8s.io/v1 Event: the legacy checks, then the stricter ones of the newer API (on
/// create: a series of at least 2, eventTime set, type Normal or Warning, the deprecated
/// fields unset; on update: a changed series checked again and nearly every field immutable).
pub fn event(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let new = internal_from_events(obj);
    let mut errors = legacy_event(&new);
    match old {
        None => {
            errors.extend(event_series(&new));
            if is_zero_time(&new["eventTime"]) {
                errors.push(FieldError::required("eventTime", ""));
            }
            let kind = str_of(&new["type"]);
            if kind != "Normal" && kind != "Warning" {
                errors.push(FieldError::invalid(
                    "type",
                    &text(""),
                    &format!("has invalid value: {kind}"),
                ));
            }
            for field in ["firstTimestamp", "lastTimestamp"] {
                if !is_zero_time(&new[field]) {
                    errors.push(FieldError::invalid(field, &text(""), "needs to be unset"));
                }
            }
            if new["count"].as_i64().unwrap_or(0) != 0 {
                errors.push(FieldError::invalid("count", &text(""), "needs to be unset"));
            }
            let source = &new["source"];
            if !str_of(&source["component"]).is_empty() || !str_of(&source["host"]).is_empty() {
                errors.push(FieldError::invalid("source", &text(""), "needs to be unset"));
            }
        }
        Some(old) => {
            let old = internal_from_events(old);
            if some(&new["series"]) != some(&old["series"]) {
                errors.extend(event_series(&new));
            }
            errors.extend(immutable_event_fields(&new, &old));
        }
    }
    errors
}

/// A field that is unset when null.
fn some(v: &Value) -> Option<&Value> {
    (!v.is_null()).then_some(v)
}

/// A core/v1 Event with upstream's internal field names (only the reporting controller is
/// named differently).
fn internal_from_core(obj: &Value) -> Value {
    let mut e = obj.clone();
    e["reportingController"] = obj["reportingComponent"].clone();
    e
}

/// An events.k8s.io/v1 Event with upstream's internal (core) field names.
fn internal_from_events(obj: &Value) -> Value {
    json!({
        "metadata": obj["metadata"],
        "involvedObject": obj["regarding"],
        "related": obj["related"],
        "reason": obj["reason"],
        "message": obj["note"],
        "type": obj["type"],
        "action": obj["action"],
        "source": obj["deprecatedSource"],
        "firstTimestamp": obj["deprecatedFirstTimestamp"],
        "lastTimestamp": obj["deprecatedLastTimestamp"],
        "count": obj["deprecatedCount"],
        "eventTime": obj["eventTime"],
        "series": obj["series"],
        "reportingController": obj["reportingController"],
        "reportingInstance": obj["reportingInstance"],
    })
}

/// Upstream's `legacyValidateEvent`, on an Event with internal field names: the involved
/// object's namespace against the Event's, and for Events with an eventTime the reporting
/// fields, action and reason (required, at most 128 bytes) and the message (at most 1024).
fn legacy_event(e: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let namespace = str_of(&e["metadata"]["namespace"]);
    let involved_namespace = str_of(&e["involvedObject"]["namespace"]);
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            &text(involved_namespace),
            "does not match event.namespace",
        )
    };
    if is_zero_time(&e["eventTime"]) {
        let matches = if involved_namespace.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_namespace
        };
        if !matches {
            errors.push(mismatch());
        }
    } else {
        if involved_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
            errors.push(mismatch());
        }
        let controller = str_of(&e["reportingController"]);
        if controller.is_empty() {
            errors.push(FieldError::required("reportingController", ""));
        }
        errors.extend(qualified_name("reportingController", controller));
        for field in ["reportingInstance", "action", "reason"] {
            let value = str_of(&e[field]);
            if value.is_empty() {
                errors.push(FieldError::required(field, ""));
            }
            if value.len() > EVENT_FIELD_LIMIT {
                errors.push(at_most(field, EVENT_FIELD_LIMIT));
            }
        }
        if str_of(&e["message"]).len() > EVENT_NOTE_LIMIT {
            errors.push(at_most("message", EVENT_NOTE_LIMIT));
        }
    }
    errors.extend(problems_at(
        "namespace",
        namespace,
        name_problems(namespace, NameRule::Subdomain),
    ));
    errors
}

fn at_most(field: &str, limit: usize) -> FieldError {
    FieldError::invalid(field, &text(""), &format!("can have at most {limit} characters"))
}

/// `validateV1EventSeries`: a series counts at least 2 and has a last observed time.
fn event_series(e: &Value) -> Vec<FieldError> {
    let series = &e["series"];
    let mut errors = Vec::new();
    if series.is_null() {
        return errors;
    }
    if series["count"].as_i64().unwrap_or(0) < 2 {
        errors.push(FieldError::invalid("series.count", &text(""), "should be at least 2"));
    }
    if is_zero_time(&series["lastObservedTime"]) {
        errors.push(FieldError::required("series.lastObservedTime", ""));
    }
    errors
}

/// What an update of an events.k8s.io/v1 Event may not change, in upstream's order (reason
/// twice, as upstream checks it twice), each shown as Go prints the internal field's value.
fn immutable_event_fields(new: &Value, old: &Value) -> Vec<FieldError> {
    enum Kind {
        Reference,
        OptionalReference,
        Source,
        Text,
        Time,
        Count,
    }
    let fields = [
        ("involvedObject", Kind::Reference),
        ("reason", Kind::Text),
        ("message", Kind::Text),
        ("source", Kind::Source),
        ("firstTimestamp", Kind::Time),
        ("lastTimestamp", Kind::Time),
        ("count", Kind::Count),
        ("reason", Kind::Text),
        ("type", Kind::Text),
        ("eventTime", Kind::Time),
        ("action", Kind::Text),
        ("related", Kind::OptionalReference),
        ("reportingController", Kind::Text),
        ("reportingInstance", Kind::Text),
    ];
    let mut errors = Vec::new();
    for (field, kind) in fields {
        let (a, b) = (&new[field], &old[field]);
        let (same, shown) = match kind {
            Kind::Reference => (same_reference(a, b), go_object_reference(a)),
            Kind::OptionalReference => {
                let same = match (a.is_null(), b.is_null()) {
                    (true, true) => true,
                    (false, false) => same_reference(a, b),
                    _ => false,
                };
                let shown = if a.is_null() { go_quote("null") } else { go_object_reference(a) };
                (same, shown)
            }
            Kind::Source => (
                ["component", "host"].iter().all(|k| str_of(&a[k]) == str_of(&b[k])),
                format!(
                    "core.EventSource{{Component:{}, Host:{}}}",
                    go_quote(str_of(&a["component"])),
                    go_quote(str_of(&a["host"]))
                ),
            ),
            Kind::Text => (str_of(a) == str_of(b), go_quote(str_of(a))),
            Kind::Time => (same_time(a, b), go_time_string(a)),
            Kind::Count => {
                let n = a.as_i64().unwrap_or(0);
                (n == b.as_i64().unwrap_or(0), n.to_string())
            }
        };
        if !same {
            errors.push(FieldError::invalid_shown(field, &shown, IMMUTABLE));
        }
    }
    errors
}

const REFERENCE_FIELDS: [(&str, &str); 7] = [
    ("kind", "Kind"),
    ("namespace", "Namespace"),
    ("name", "Name"),
    ("uid", "UID"),
    ("apiVersion", "APIVersion"),
    ("resourceVersion", "ResourceVersion"),
    ("fieldPath", "FieldPath"),
];

fn same_reference(a: &Value, b: &Value) -> bool {
    REFERENCE_FIELDS.iter().all(|(k, _)| str_of(&a[k]) == str_of(&b[k]))
}

/// An internal `core.ObjectReference` as `%#v` prints it.
fn go_object_reference(r: &Value) -> String {
    let fields: Vec<String> = REFERENCE_FIELDS
        .iter()
        .map(|(k, go)| format!("{go}:{}", go_quote(str_of(&r[k]))))
        .collect();
    format!("core.ObjectReference{{{}}}", fields.join(", "))
}

/// A `metav1.Time` or `MicroTime` as the instant it names; Go's zero time when unset (or
/// empty), `None` when it is not a timestamp at all.
fn parse_time(v: &Value) -> Option<DateTime<Utc>> {
    match v.as_str() {
        None | Some("") => zero_time(),
        Some(s) => DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc)),
    }
}

/// Go's `time.Time{}`: January 1 of year 1, UTC.
fn zero_time() -> Option<DateTime<Utc>> {
    let naive = chrono::NaiveDate::from_ymd_opt(1, 1, 1)?.and_hms_opt(0, 0, 0)?;
    Some(DateTime::from_naive_utc_and_offset(naive, Utc))
}

fn is_zero_time(v: &Value) -> bool {
    parse_time(v) == zero_time()
}

/// Upstream compares times as instants (`Semantic.DeepEqual`).
fn same_time(a: &Value, b: &Value) -> bool {
    match (parse_time(a), parse_time(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Go's `time.Time.String()` of a parsed timestamp (the API server's zone taken to be UTC):
/// `2006-01-02 15:04:05.999999999 +0000 UTC`, the fraction without trailing zeros.
fn go_time_string(v: &Value) -> String {
    let Some(t) = parse_time(v).or_else(zero_time) else {
        return go_quote(str_of(v));
    };
    let mut out = t.format("%Y-%m-%d %H:%M:%S").to_string();
    let nanos = t.timestamp_subsec_nanos();
    if nanos > 0 {
        let frac = format!("{nanos:09}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out.push_str(" +0000 UTC");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    /// A core/v1 Event as rkube's scheduler, controllers and kubelet write them.
    fn core_v1(namespace: &str, involved_namespace: Option<&str>) -> Value {
        let mut involved = json!({"apiVersion": "v1", "kind": "Pod", "name": "web-0", "uid": "u1"});
        if let Some(ns) = involved_namespace {
            involved["namespace"] = json!(ns);
        }
        json!({"metadata": {"name": "web-0.17a", "namespace": namespace},
            "involvedObject": involved, "reason": "Scheduled", "message": "assigned",
            "type": "Normal", "source": {"component": "default-scheduler"},
            "reportingComponent": "default-scheduler", "reportingInstance": "default-scheduler",
            "firstTimestamp": "2025-05-01T10:00:00Z", "lastTimestamp": "2025-05-01T10:00:00Z",
            "count": 1})
    }

    #[test]
    fn core_events() {
        assert!(core_event(&core_v1("team-a", Some("team-a")), None).is_empty());
        // Cluster-scoped objects: events in default (or with no namespace at all).
        assert!(core_event(&core_v1("default", None), None).is_empty());
        let moved = core_v1("team-b", Some("team-a"));
        assert_eq!(
            lines(core_event(&moved, Some(&core_v1("team-a", Some("team-a"))))),
            ["involvedObject.namespace: Invalid value: \"team-a\": does not match event.namespace"]
        );
        assert_eq!(
            lines(core_event(&core_v1("kube-system", None), None)),
            ["involvedObject.namespace: Invalid value: \"\": does not match event.namespace"]
        );
        // With an eventTime: the reporting fields, action and reason are required.
        let mut newer = core_v1("kube-system", None);
        newer["eventTime"] = json!("2025-05-01T10:00:00.000000Z");
        newer["action"] = json!("Binding");
        assert!(core_event(&newer, None).is_empty());
        let newer = json!({"metadata": {"name": "e", "namespace": "team-a"},
            "involvedObject": {"kind": "Node", "name": "n"},
            "eventTime": "2025-05-01T10:00:00.123456Z", "reason": "x".repeat(129),
            "reportingInstance": "i".repeat(129), "message": "m".repeat(1025)});
        assert_eq!(
            lines(core_event(&newer, None)),
            [
                "involvedObject.namespace: Invalid value: \"\": does not match event.namespace",
                "reportingController: Required value",
                "reportingController: Invalid value: \"\": name part must be non-empty",
                "reportingController: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "reportingInstance: Invalid value: \"\": can have at most 128 characters",
                "action: Required value",
                "reason: Invalid value: \"\": can have at most 128 characters",
                "message: Invalid value: \"\": can have at most 1024 characters",
            ]
        );
    }

    fn events_v1() -> Value {
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "web-0.17a", "namespace": "team-a"},
            "eventTime": "2025-05-01T10:00:00.123456Z",
            "reportingController": "example.com/operator", "reportingInstance": "operator-7d9",
            "action": "Reconcile", "reason": "Synced", "note": "all good", "type": "Normal",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": "team-a", "name": "web-0", "uid": "u1"}})
    }

    #[test]
    fn events_k8s_io_create() {
        let good = events_v1();
        assert!(event(&good, None).is_empty());
        let mut series = good.clone();
        series["series"] = json!({"count": 2, "lastObservedTime": "2025-05-01T10:05:00.000000Z"});
        assert!(event(&series, None).is_empty());

        let bad = json!({"metadata": {"name": "e", "namespace": "team-a"},
            "regarding": {"kind": "Pod", "namespace": "team-a", "name": "p"},
            "type": "Info", "series": {"count": 1},
            "deprecatedSource": {"component": "kubelet"}, "deprecatedCount": 3,
            "deprecatedFirstTimestamp": "2025-05-01T10:00:00Z",
            "deprecatedLastTimestamp": "2025-05-01T10:00:00Z"});
        assert_eq!(
            lines(event(&bad, None)),
            [
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Info",
                "firstTimestamp: Invalid value: \"\": needs to be unset",
                "lastTimestamp: Invalid value: \"\": needs to be unset",
                "count: Invalid value: \"\": needs to be unset",
                "source: Invalid value: \"\": needs to be unset",
            ]
        );
        let mut no_reporter = good.clone();
        no_reporter["regarding"]["namespace"] = json!("team-b");
        for field in ["reportingController", "reportingInstance", "action", "reason"] {
            no_reporter.as_object_mut().unwrap().remove(field);
        }
        assert_eq!(
            lines(event(&no_reporter, None))
                .iter()
                .filter(|l| !l.contains("name part"))
                .cloned()
                .collect::<Vec<_>>(),
            [
                "reportingController: Required value",
                "reportingInstance: Required value",
                "action: Required value",
                "reason: Required value",
            ]
        );
    }

    #[test]
    fn events_k8s_io_update() {
        let old = events_v1();
        assert!(event(&old, Some(&old)).is_empty());
        let mut new = old.clone();
        new["series"] = json!({"count": 1, "lastObservedTime": "2025-05-01T10:05:00.5Z"});
        new["regarding"]["resourceVersion"] = json!("12");
        new["note"] = json!("changed");
        new["reason"] = json!("Other");
        new["eventTime"] = json!("2025-05-01T10:00:01.500000Z");
        new["deprecatedSource"] = json!({"component": "c", "host": "h"});
        new["deprecatedFirstTimestamp"] = json!("2025-05-01T10:00:00Z");
        new["deprecatedCount"] = json!(4);
        new["related"] = json!({"kind": "Node", "name": "n1"});
        new["reportingInstance"] = json!("operator-2");
        assert_eq!(
            lines(event(&new, Some(&old))),
            [
                "series.count: Invalid value: \"\": should be at least 2",
                "involvedObject: Invalid value: core.ObjectReference{Kind:\"Pod\", Namespace:\"team-a\", Name:\"web-0\", UID:\"u1\", APIVersion:\"v1\", ResourceVersion:\"12\", FieldPath:\"\"}: field is immutable",
                "reason: Invalid value: \"Other\": field is immutable",
                "message: Invalid value: \"changed\": field is immutable",
                "source: Invalid value: core.EventSource{Component:\"c\", Host:\"h\"}: field is immutable",
                "firstTimestamp: Invalid value: 2025-05-01 10:00:00 +0000 UTC: field is immutable",
                "count: Invalid value: 4: field is immutable",
                "reason: Invalid value: \"Other\": field is immutable",
                "eventTime: Invalid value: 2025-05-01 10:00:01.5 +0000 UTC: field is immutable",
                "related: Invalid value: core.ObjectReference{Kind:\"Node\", Namespace:\"\", Name:\"n1\", UID:\"\", APIVersion:\"\", ResourceVersion:\"\", FieldPath:\"\"}: field is immutable",
                "reportingInstance: Invalid value: \"operator-2\": field is immutable",
            ]
        );
        let mut dropped = old.clone();
        dropped["related"] = json!({"kind": "Node", "name": "n1"});
        let mut unset = old.clone();
        unset["deprecatedLastTimestamp"] = json!("2025-05-01T10:00:00Z");
        assert_eq!(
            lines(event(&old, Some(&dropped))),
            ["related: Invalid value: \"null\": field is immutable"]
        );
        assert_eq!(
            lines(event(&old, Some(&unset))),
            ["lastTimestamp: Invalid value: 0001-01-01 00:00:00 +0000 UTC: field is immutable"]
        );
    }
}
