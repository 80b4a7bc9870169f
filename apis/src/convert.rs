//! Conversion between the served versions of one resource. Objects are stored in one version
//! (see `ResourceInfo::storage_version`) and served in any: each pair of versions that differ
//! in shape has its functions in [`CONVERSIONS`]; versions that do not need none. A resource
//! upstream serves in two groups from one storage (`ResourceInfo::storage_resource`) is
//! converted the same way: events.k8s.io/v1 Events are core v1 Events ([`events`]).
//!
//! HorizontalPodAutoscaler v1 and v2 are converted as upstream does for the fields v1 has.
//! What v1 cannot say is kept in the annotations upstream uses, in
//! upstream's shapes: metrics other than the CPU target and all current metrics as
//! autoscaling/v1's (v2beta1-like) `MetricSpec` and `MetricStatus`, conditions as v1's
//! `HorizontalPodAutoscalerCondition`, and `behavior` as upstream's internal type, which has
//! no json tags: its keys are Go field names (`ScaleUp`, `StabilizationWindowSeconds`, ...).
//! The annotations are read back as Go's `encoding/json` reads them: keys match field names
//! whatever their case (so camel-case behaviors are understood too), and an annotation with a
//! value of the wrong type is ignored as a whole.

mod events;

use serde_json::{json, Map, Value};

use crate::quantity::Quantity;
use crate::resources::ResourceInfo;

/// Metrics (v1 `MetricSpec`s) other than the CPU utilization target.
pub(crate) const METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// Every current metric (v1 `MetricStatus`es), the CPU one included.
const CURRENT_METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// The status conditions (v1 `HorizontalPodAutoscalerCondition`s).
const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// The scaling behavior, keyed by Go field names.
pub(crate) const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";
/// What a v2 object never keeps: they only carry v2 fields through v1.
const ROUND_TRIP_ANNOTATIONS: [&str; 4] =
    [METRICS_ANNOTATION, BEHAVIOR_ANNOTATION, CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION];
/// The CPU utilization a v1 HPA without any target converts to.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// The annotations in which an autoscaling/v1 HPA carries status (current metrics and
/// conditions) are status: like status, a create or a main-resource update does not set
/// them. `new` gets `old`'s (none on create), as upstream's strategy puts back the old status
/// after converting the v1 object.
pub fn keep_hpa_v1_status(new: &mut Value, old: Option<&Value>) {
    for key in [CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION] {
        let kept = old.and_then(|o| o["metadata"]["annotations"].get(key)).cloned();
        match kept {
            Some(value) => {
                annotations(new).insert(key.into(), value);
            }
            None => {
                if let Some(a) =
                    new["metadata"].get_mut("annotations").and_then(Value::as_object_mut)
                {
                    a.remove(key);
                }
            }
        }
    }
    drop_empty_annotations(new);
}

/// `obj` (of any served form of `to`'s resource) in `to`'s form: the resource's strategy
/// converts what differs in shape ([`crate::strategy::Strategy::convert_from`], also
/// asked when the forms are the same).
pub fn convert(obj: Value, to: &ResourceInfo) -> Value {
    if !obj.is_object() {
        return obj;
    }
    let to_version = to.api_version();
    let from = obj["apiVersion"].as_str().unwrap_or("").to_string();
    let mut obj = to.strategy.convert_from(obj, &from);
    obj["apiVersion"] = json!(to_version);
    obj["kind"] = json!(to.kind);
    obj
}

/// An autoscaling/v2 HPA from `from`: v1 objects are converted; a v2 one never keeps the
/// annotations that carry v2 fields through v1.
pub fn hpa_to_v2(obj: Value, from: &str) -> Value {
    match from {
        "autoscaling/v1" => hpa_v1_to_v2(obj),
        _ => {
            let mut obj = obj;
            drop_round_trip_annotations(&mut obj);
            obj
        }
    }
}

/// An autoscaling/v1 HPA from `from` (v2, the stored form).
pub fn hpa_to_v1(obj: Value, from: &str) -> Value {
    match from {
        "autoscaling/v2" => hpa_v2_to_v1(obj),
        _ => obj,
    }
}

/// An events.k8s.io/v1 Event from a core v1 one.
pub fn event_from_core(obj: Value, from: &str) -> Value {
    match from {
        "v1" => events::from_core(obj),
        _ => obj,
    }
}

/// A core v1 Event from an events.k8s.io/v1 one.
pub fn event_to_core(obj: Value, from: &str) -> Value {
    match from {
        "events.k8s.io/v1" => events::to_core(obj),
        _ => obj,
    }
}

/// The metrics a v1 `metrics` annotation holds, as v2 metrics; `None` when Go could not
/// decode it into v1 `MetricSpec`s.
pub(crate) fn hpa_metrics_from_annotation(text: &str) -> Option<Vec<Value>> {
    decode_list(text, metric_spec_from_v1)
}

/// The v1 `metrics` annotation holding these v2 metrics.
pub(crate) fn hpa_metrics_annotation(metrics: &[Value]) -> String {
    crate::gofmt::go_json(&Value::Array(metrics.iter().map(metric_spec_to_v1).collect()))
}

/// The v2 `behavior` a v1 `behavior` annotation holds; `None` when Go could not decode it,
/// or when it sets neither direction (upstream then leaves the behavior unset).
pub(crate) fn hpa_behavior_from_annotation(text: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(text).ok()?;
    let behavior = Fields::of(Some(&value)).ok()?;
    let mut out = Map::new();
    for (go, v2) in [("ScaleUp", "scaleUp"), ("ScaleDown", "scaleDown")] {
        if let Some(rules) = behavior.pointer(go).ok()? {
            out.insert(v2.into(), scaling_rules_from_go(rules).ok()?);
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// The v1 `behavior` annotation of a v2 `behavior`: upstream's internal type marshalled, so
/// Go field names, every field present (`null` for what is unset).
pub(crate) fn hpa_behavior_annotation(behavior: &Value) -> String {
    crate::gofmt::go_json(&json!({
        "ScaleUp": scaling_rules_to_go(&behavior["scaleUp"]),
        "ScaleDown": scaling_rules_to_go(&behavior["scaleDown"]),
    }))
}

fn annotations(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj["metadata"]["annotations"].is_object() {
        obj["metadata"]["annotations"] = json!({});
    }
    obj["metadata"]["annotations"].as_object_mut().expect("annotations object")
}

fn annotation(obj: &Value, key: &str) -> Option<String> {
    obj["metadata"]["annotations"][key].as_str().map(str::to_string)
}

/// `section.field` of `obj`, removed (keeping the order of the rest).
fn take(obj: &mut Value, section: &str, field: &str) -> Option<Value> {
    obj.get_mut(section)?.as_object_mut()?.shift_remove(field)
}

/// Whether a section of `obj` may be written into (it is an object, or missing).
fn writable(obj: &Value, section: &str) -> bool {
    obj.get(section).is_none_or(|s| s.is_object() || s.is_null())
}

fn drop_round_trip_annotations(obj: &mut Value) {
    let annotations = obj.get_mut("metadata").and_then(|m| m.get_mut("annotations"));
    if let Some(annotations) = annotations.and_then(Value::as_object_mut) {
        for key in ROUND_TRIP_ANNOTATIONS {
            annotations.shift_remove(key);
        }
    }
    drop_empty_annotations(obj);
}

fn drop_empty_annotations(obj: &mut Value) {
    if obj["metadata"]["annotations"].as_object().is_some_and(|a| a.is_empty()) {
        if let Some(meta) = obj["metadata"].as_object_mut() {
            meta.shift_remove("annotations");
        }
    }
}

fn cpu_metric(utilization: Value) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": utilization}}})
}

/// A v2 metric (`side` "target") or current metric (`side` "current") giving the CPU
/// utilization, which v1 has a field for.
fn is_cpu_utilization(metric: &Value, side: &str) -> bool {
    metric["type"] == "Resource"
        && metric["resource"]["name"] == "cpu"
        && !metric["resource"][side]["averageUtilization"].is_null()
}

fn hpa_v1_to_v2(mut obj: Value) -> Value {
    // The annotation's metrics come first, then the CPU target; with neither, the CPU
    // utilization v1 always had by default.
    let cpu = take(&mut obj, "spec", "targetCPUUtilizationPercentage").filter(|c| !c.is_null());
    let mut metrics = annotation(&obj, METRICS_ANNOTATION)
        .and_then(|text| hpa_metrics_from_annotation(&text))
        .unwrap_or_default();
    metrics.extend(cpu.map(cpu_metric));
    if metrics.is_empty() {
        metrics.push(cpu_metric(json!(DEFAULT_CPU_UTILIZATION)));
    }
    if writable(&obj, "spec") {
        obj["spec"]["metrics"] = Value::Array(metrics);
        let behavior = annotation(&obj, BEHAVIOR_ANNOTATION)
            .and_then(|text| hpa_behavior_from_annotation(&text));
        if let Some(behavior) = behavior {
            obj["spec"]["behavior"] = behavior;
        }
    }
    // The annotation's current metrics (when it decodes) replace the CPU one.
    let cpu = take(&mut obj, "status", "currentCPUUtilizationPercentage").filter(|c| !c.is_null());
    let mut current = cpu.map(|cpu| {
        vec![json!({"type": "Resource", "resource": {"name": "cpu",
            "current": {"averageUtilization": cpu}}})]
    });
    if let Some(kept) = annotation(&obj, CURRENT_METRICS_ANNOTATION)
        .and_then(|text| decode_list(&text, metric_status_from_v1))
    {
        current = Some(kept);
    }
    let conditions = annotation(&obj, CONDITIONS_ANNOTATION)
        .and_then(|text| decode_list(&text, condition_from_v1));
    if writable(&obj, "status") {
        if let Some(current) = current.filter(|c| !c.is_empty()) {
            obj["status"]["currentMetrics"] = Value::Array(current);
        }
        if let Some(conditions) = conditions.filter(|c| !c.is_empty()) {
            obj["status"]["conditions"] = Value::Array(conditions);
        }
    }
    drop_round_trip_annotations(&mut obj);
    obj
}

fn hpa_v2_to_v1(mut obj: Value) -> Value {
    // Only what this conversion writes: whatever the object carried is dropped.
    drop_round_trip_annotations(&mut obj);
    let mut kept: Vec<(&str, String)> = Vec::new();
    if let Some(metrics) = take(&mut obj, "spec", "metrics") {
        let metrics = metrics.as_array().map(Vec::as_slice).unwrap_or_default();
        if let Some(cpu) = metrics.iter().find(|m| is_cpu_utilization(m, "target")) {
            obj["spec"]["targetCPUUtilizationPercentage"] =
                cpu["resource"]["target"]["averageUtilization"].clone();
        }
        let other: Vec<Value> =
            metrics.iter().filter(|m| !is_cpu_utilization(m, "target")).cloned().collect();
        if !other.is_empty() {
            kept.push((METRICS_ANNOTATION, hpa_metrics_annotation(&other)));
        }
    }
    if let Some(current) = take(&mut obj, "status", "currentMetrics") {
        let current = current.as_array().map(Vec::as_slice).unwrap_or_default();
        // The last CPU utilization; the annotation keeps them all, the CPU one with its raw
        // value.
        if let Some(cpu) = current.iter().rfind(|m| is_cpu_utilization(m, "current")) {
            obj["status"]["currentCPUUtilizationPercentage"] =
                cpu["resource"]["current"]["averageUtilization"].clone();
        }
        if !current.is_empty() {
            let statuses = current.iter().map(metric_status_to_v1).collect();
            kept.push((CURRENT_METRICS_ANNOTATION, crate::gofmt::go_json(&Value::Array(statuses))));
        }
    }
    if let Some(behavior) = take(&mut obj, "spec", "behavior").filter(|b| !b.is_null()) {
        kept.push((BEHAVIOR_ANNOTATION, hpa_behavior_annotation(&behavior)));
    }
    if let Some(conditions) = take(&mut obj, "status", "conditions") {
        let conditions = conditions.as_array().map(Vec::as_slice).unwrap_or_default();
        if !conditions.is_empty() {
            let conditions = conditions.iter().map(condition_to_v1).collect();
            kept.push((CONDITIONS_ANNOTATION, crate::gofmt::go_json(&Value::Array(conditions))));
        }
    }
    if !kept.is_empty() {
        let annotations = annotations(&mut obj);
        for (key, text) in kept {
            annotations.insert(key.into(), json!(text));
        }
    }
    obj
}

// --- v2 to the annotations ------------------------------------------------------------
//
// The v2 object is well formed (it was decoded and validated when written); values are
// read as they are, quantities printed in canonical form as Go prints them.

fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        map.insert(key.into(), value);
    }
}

fn string_out(v: &Value) -> Value {
    json!(v.as_str().unwrap_or_default())
}

/// A string field with `omitempty`.
fn nonempty_string_out(v: &Value) -> Option<Value> {
    v.as_str().filter(|s| !s.is_empty()).map(|s| json!(s))
}

fn int_out(v: &Value) -> Option<Value> {
    v.is_number().then(|| v.clone())
}

/// A quantity as Go prints it; `None` when unset.
fn quantity_out(v: &Value) -> Option<Value> {
    (!v.is_null()).then(|| Quantity::parse(v).map_or_else(|| v.clone(), |q| json!(q.canonical())))
}

/// A quantity that is not a pointer: unset, it is zero.
fn zero_quantity() -> Value {
    json!("0")
}

fn selector_out(v: &Value) -> Option<Value> {
    (!v.is_null()).then(|| label_selector(v).unwrap_or_else(|_| v.clone()))
}

fn time_out(v: &Value) -> Value {
    match v {
        Value::String(s) => go_time(s).unwrap_or_else(|| v.clone()),
        _ => Value::Null,
    }
}

/// v1 `CrossVersionObjectReference` of a v2 one.
fn reference_out(r: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), string_out(&r["kind"]));
    out.insert("name".into(), string_out(&r["name"]));
    put(&mut out, "apiVersion", nonempty_string_out(&r["apiVersion"]));
    Value::Object(out)
}

/// How a v1 metric names the v2 `target` (a `MetricSpec`) or `current` (a `MetricStatus`)
/// values, and which of them v1 holds as plain (not pointer) quantities, written as "0"
/// when unset.
struct Side {
    from: &'static str,
    value: &'static str,
    average_value: &'static str,
    average_utilization: &'static str,
    resource_average_required: bool,
    external_value_required: bool,
}

const SPEC: Side = Side {
    from: "target",
    value: "targetValue",
    average_value: "targetAverageValue",
    average_utilization: "targetAverageUtilization",
    resource_average_required: false,
    external_value_required: false,
};

const STATUS: Side = Side {
    from: "current",
    value: "currentValue",
    average_value: "currentAverageValue",
    average_utilization: "currentAverageUtilization",
    resource_average_required: true,
    external_value_required: true,
};

/// v1 `MetricSpec` of a v2 metric.
fn metric_spec_to_v1(m: &Value) -> Value {
    metric_to_v1(m, &SPEC)
}

/// v1 `MetricStatus` of a v2 current metric.
fn metric_status_to_v1(m: &Value) -> Value {
    metric_to_v1(m, &STATUS)
}

/// A v2 metric or current metric in v1's shape, keys in the v1 structs' order.
fn metric_to_v1(m: &Value, side: &Side) -> Value {
    let required = |v: &Value| quantity_out(v).unwrap_or_else(zero_quantity);
    let mut out = Map::new();
    out.insert("type".into(), string_out(&m["type"]));
    if let Some(o) = m.get("object").filter(|o| o.is_object()) {
        let values = &o[side.from];
        let mut object = Map::new();
        object.insert("target".into(), reference_out(&o["describedObject"]));
        object.insert("metricName".into(), string_out(&o["metric"]["name"]));
        object.insert(side.value.into(), required(&values["value"]));
        put(&mut object, "selector", selector_out(&o["metric"]["selector"]));
        put(&mut object, "averageValue", quantity_out(&values["averageValue"]));
        out.insert("object".into(), Value::Object(object));
    }
    if let Some(p) = m.get("pods").filter(|p| p.is_object()) {
        let mut pods = Map::new();
        pods.insert("metricName".into(), string_out(&p["metric"]["name"]));
        pods.insert(side.average_value.into(), required(&p[side.from]["averageValue"]));
        put(&mut pods, "selector", selector_out(&p["metric"]["selector"]));
        out.insert("pods".into(), Value::Object(pods));
    }
    for kind in ["resource", "containerResource"] {
        if let Some(r) = m.get(kind).filter(|r| r.is_object()) {
            let values = &r[side.from];
            let mut resource = Map::new();
            resource.insert("name".into(), string_out(&r["name"]));
            put(&mut resource, side.average_utilization, int_out(&values["averageUtilization"]));
            let average = &values["averageValue"];
            match side.resource_average_required {
                true => {
                    resource.insert(side.average_value.into(), required(average));
                }
                false => put(&mut resource, side.average_value, quantity_out(average)),
            }
            if kind == "containerResource" {
                resource.insert("container".into(), string_out(&r["container"]));
            }
            out.insert(kind.into(), Value::Object(resource));
        }
    }
    if let Some(e) = m.get("external").filter(|e| e.is_object()) {
        let values = &e[side.from];
        let mut external = Map::new();
        external.insert("metricName".into(), string_out(&e["metric"]["name"]));
        put(&mut external, "metricSelector", selector_out(&e["metric"]["selector"]));
        match side.external_value_required {
            true => {
                external.insert(side.value.into(), required(&values["value"]));
            }
            false => put(&mut external, side.value, quantity_out(&values["value"])),
        }
        put(&mut external, side.average_value, quantity_out(&values["averageValue"]));
        out.insert("external".into(), Value::Object(external));
    }
    Value::Object(out)
}

/// v1 `HorizontalPodAutoscalerCondition` of a v2 condition (the time is a struct, so an
/// unset one is `null` rather than left out).
fn condition_to_v1(c: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), string_out(&c["type"]));
    out.insert("status".into(), string_out(&c["status"]));
    out.insert("lastTransitionTime".into(), time_out(&c["lastTransitionTime"]));
    put(&mut out, "reason", nonempty_string_out(&c["reason"]));
    put(&mut out, "message", nonempty_string_out(&c["message"]));
    Value::Object(out)
}

/// Upstream's internal `HPAScalingRules` of a v2 one, as `encoding/json` writes it.
fn scaling_rules_to_go(rules: &Value) -> Value {
    if !rules.is_object() {
        return Value::Null;
    }
    let policies = match &rules["policies"] {
        Value::Array(policies) => Value::Array(
            policies
                .iter()
                .map(|p| {
                    json!({
                        "Type": string_out(&p["type"]),
                        "Value": int_out(&p["value"]).unwrap_or(json!(0)),
                        "PeriodSeconds": int_out(&p["periodSeconds"]).unwrap_or(json!(0)),
                    })
                })
                .collect(),
        ),
        _ => Value::Null,
    };
    json!({
        "StabilizationWindowSeconds": int_out(&rules["stabilizationWindowSeconds"]),
        "SelectPolicy": rules["selectPolicy"].as_str(),
        "Policies": policies,
        "Tolerance": quantity_out(&rules["tolerance"]),
    })
}

// --- The annotations back to v2 -------------------------------------------------------
//
// As `encoding/json` decodes into the Go types: any case of a field's name matches it, the
// last key wins, unknown keys are ignored, and a value of the wrong type fails the whole
// annotation (upstream then ignores it).

/// A value of the wrong type somewhere in an annotation.
struct Bad;

type Decoded<T> = Result<T, Bad>;

/// The fields of a JSON object decoded into a Go struct (`None`: `null`, the zero struct).
#[derive(Clone, Copy)]
struct Fields<'a>(Option<&'a Map<String, Value>>);

impl<'a> Fields<'a> {
    fn of(v: Option<&'a Value>) -> Decoded<Self> {
        match v {
            None | Some(Value::Null) => Ok(Fields(None)),
            Some(Value::Object(map)) => Ok(Fields(Some(map))),
            Some(_) => Err(Bad),
        }
    }

    /// The value the Go field `name` ends up with: the last key naming it in any case; a
    /// `null` resets a pointer, slice or map (`nullable`) and leaves anything else as it was.
    fn raw(&self, name: &str, nullable: bool) -> Option<&'a Value> {
        let mut found = None;
        for (key, value) in self.0.into_iter().flatten() {
            if key.eq_ignore_ascii_case(name) {
                if !value.is_null() {
                    found = Some(value);
                } else if nullable {
                    found = None;
                }
            }
        }
        found
    }

    fn string(&self, name: &str) -> Decoded<String> {
        match self.raw(name, false) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(Bad),
        }
    }

    fn string_pointer(&self, name: &str) -> Decoded<Option<String>> {
        match self.raw(name, true) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Bad),
        }
    }

    /// An `int32` (`pointer`: `*int32`); `None` when unset.
    fn int32(&self, name: &str, pointer: bool) -> Decoded<Option<i64>> {
        let int32 = |v: &Value| v.as_i64().filter(|n| i32::try_from(*n).is_ok()).ok_or(Bad);
        self.raw(name, pointer).map(int32).transpose()
    }

    /// A `resource.Quantity` (`pointer`: `*resource.Quantity`) in canonical form; `None`
    /// when unset.
    fn quantity(&self, name: &str, pointer: bool) -> Decoded<Option<Value>> {
        self.raw(name, pointer).map(quantity_from).transpose()
    }

    /// A struct field.
    fn structure(&self, name: &str) -> Decoded<Fields<'a>> {
        Fields::of(self.raw(name, false))
    }

    /// A pointer to a struct; `None` when nil.
    fn pointer(&self, name: &str) -> Decoded<Option<Fields<'a>>> {
        self.raw(name, true).map(|v| Fields::of(Some(v))).transpose()
    }

    /// A slice; `None` when nil.
    fn list(&self, name: &str) -> Decoded<Option<&'a Vec<Value>>> {
        match self.raw(name, true) {
            None => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(_) => Err(Bad),
        }
    }

    /// A `*metav1.LabelSelector`; `None` when nil.
    fn selector(&self, name: &str) -> Decoded<Option<Value>> {
        self.raw(name, true).map(label_selector).transpose()
    }

    /// A `metav1.Time`: `null` when zero.
    fn time(&self, name: &str) -> Decoded<Value> {
        match self.raw(name, false) {
            None => Ok(Value::Null),
            Some(Value::String(s)) => go_time(s).ok_or(Bad),
            Some(_) => Err(Bad),
        }
    }
}

/// A JSON array annotation decoded item by item (`null` is an empty list).
fn decode_list(text: &str, item: fn(&Value) -> Decoded<Value>) -> Option<Vec<Value>> {
    match serde_json::from_str(text).ok()? {
        Value::Null => Some(Vec::new()),
        Value::Array(items) => items.iter().map(item).collect::<Decoded<Vec<_>>>().ok(),
        _ => None,
    }
}

/// A quantity as `resource.Quantity` reads it (a string or a number, spaces trimmed), in
/// canonical form.
fn quantity_from(v: &Value) -> Decoded<Value> {
    let parsed = match v {
        Value::String(s) => Quantity::parse(&json!(s.trim())),
        Value::Number(_) => Quantity::parse(v),
        _ => None,
    };
    parsed.map(|q| json!(q.canonical())).ok_or(Bad)
}

/// An RFC 3339 time as `metav1.Time` writes it: UTC, whole seconds; `null` for the zero time.
fn go_time(s: &str) -> Option<Value> {
    let time = chrono::DateTime::parse_from_rfc3339(s).ok()?.with_timezone(&chrono::Utc);
    let text = time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    Some(if text == "0001-01-01T00:00:00Z" { Value::Null } else { json!(text) })
}

/// A `metav1.LabelSelector` as Go writes it: empty parts left out, labels sorted.
fn label_selector(v: &Value) -> Decoded<Value> {
    let selector = Fields::of(Some(v))?;
    let mut out = Map::new();
    match selector.raw("matchLabels", true) {
        None => {}
        Some(Value::Object(labels)) => {
            let mut labels = labels
                .iter()
                .map(|(key, value)| match value {
                    Value::String(s) => Ok((key.clone(), json!(s))),
                    Value::Null => Ok((key.clone(), json!(""))),
                    _ => Err(Bad),
                })
                .collect::<Decoded<Vec<_>>>()?;
            labels.sort_by(|a, b| a.0.cmp(&b.0));
            if !labels.is_empty() {
                out.insert("matchLabels".into(), Value::Object(labels.into_iter().collect()));
            }
        }
        Some(_) => return Err(Bad),
    }
    if let Some(expressions) = selector.list("matchExpressions")? {
        let expressions = expressions.iter().map(label_requirement).collect::<Decoded<Vec<_>>>()?;
        if !expressions.is_empty() {
            out.insert("matchExpressions".into(), Value::Array(expressions));
        }
    }
    Ok(Value::Object(out))
}

fn label_requirement(v: &Value) -> Decoded<Value> {
    let requirement = Fields::of(Some(v))?;
    let mut out = Map::new();
    out.insert("key".into(), json!(requirement.string("key")?));
    out.insert("operator".into(), json!(requirement.string("operator")?));
    if let Some(values) = requirement.list("values")? {
        let values = values
            .iter()
            .map(|v| match v {
                Value::String(_) => Ok(v.clone()),
                Value::Null => Ok(json!("")),
                _ => Err(Bad),
            })
            .collect::<Decoded<Vec<_>>>()?;
        if !values.is_empty() {
            out.insert("values".into(), Value::Array(values));
        }
    }
    Ok(Value::Object(out))
}

/// v2 `CrossVersionObjectReference` of a v1 one.
fn reference_from(r: Fields) -> Decoded<Value> {
    let mut out = Map::new();
    out.insert("kind".into(), json!(r.string("kind")?));
    out.insert("name".into(), json!(r.string("name")?));
    let api_version = r.string("apiVersion")?;
    if !api_version.is_empty() {
        out.insert("apiVersion".into(), json!(api_version));
    }
    Ok(Value::Object(out))
}

/// v2 `MetricIdentifier`.
fn metric_identifier(name: String, selector: Option<Value>) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(name));
    put(&mut out, "selector", selector);
    Value::Object(out)
}

/// v2 `MetricTarget` (or, without `kind`, `MetricValueStatus`).
fn metric_value(
    kind: Option<&str>,
    value: Option<Value>,
    average_value: Option<Value>,
    average_utilization: Option<i64>,
) -> Value {
    let mut out = Map::new();
    put(&mut out, "type", kind.map(|k| json!(k)));
    put(&mut out, "value", value);
    put(&mut out, "averageValue", average_value);
    put(&mut out, "averageUtilization", average_utilization.map(Value::from));
    Value::Object(out)
}

/// v2 metric of a v1 `MetricSpec`.
fn metric_spec_from_v1(v: &Value) -> Decoded<Value> {
    let metric = Fields::of(Some(v))?;
    let mut out = Map::new();
    out.insert("type".into(), json!(metric.string("type")?));
    if let Some(o) = metric.pointer("object")? {
        let value = o.quantity("targetValue", false)?.unwrap_or_else(zero_quantity);
        let average = o.quantity("averageValue", true)?;
        let kind = if average.is_none() { "Value" } else { "AverageValue" };
        out.insert(
            "object".into(),
            json!({
                "describedObject": reference_from(o.structure("target")?)?,
                "target": metric_value(Some(kind), Some(value), average, None),
                "metric": metric_identifier(o.string("metricName")?, o.selector("selector")?),
            }),
        );
    }
    if let Some(p) = metric.pointer("pods")? {
        let average = p.quantity("targetAverageValue", false)?.unwrap_or_else(zero_quantity);
        out.insert(
            "pods".into(),
            json!({
                "metric": metric_identifier(p.string("metricName")?, p.selector("selector")?),
                "target": metric_value(Some("AverageValue"), None, Some(average), None),
            }),
        );
    }
    for kind in ["resource", "containerResource"] {
        if let Some(r) = metric.pointer(kind)? {
            let utilization = r.int32("targetAverageUtilization", true)?;
            let average = r.quantity("targetAverageValue", true)?;
            let target = if utilization.is_none() { "AverageValue" } else { "Utilization" };
            let mut resource = Map::new();
            resource.insert("name".into(), json!(r.string("name")?));
            let target = metric_value(Some(target), None, average, utilization);
            resource.insert("target".into(), target);
            if kind == "containerResource" {
                resource.insert("container".into(), json!(r.string("container")?));
            }
            out.insert(kind.into(), Value::Object(resource));
        }
    }
    if let Some(e) = metric.pointer("external")? {
        let value = e.quantity("targetValue", true)?;
        let average = e.quantity("targetAverageValue", true)?;
        let kind = if value.is_none() { "AverageValue" } else { "Value" };
        let selector = e.selector("metricSelector")?;
        out.insert(
            "external".into(),
            json!({
                "metric": metric_identifier(e.string("metricName")?, selector),
                "target": metric_value(Some(kind), value, average, None),
            }),
        );
    }
    Ok(Value::Object(out))
}

/// v2 current metric of a v1 `MetricStatus`.
fn metric_status_from_v1(v: &Value) -> Decoded<Value> {
    let metric = Fields::of(Some(v))?;
    let mut out = Map::new();
    out.insert("type".into(), json!(metric.string("type")?));
    if let Some(o) = metric.pointer("object")? {
        let value = o.quantity("currentValue", false)?.unwrap_or_else(zero_quantity);
        let average = o.quantity("averageValue", true)?;
        out.insert(
            "object".into(),
            json!({
                "metric": metric_identifier(o.string("metricName")?, o.selector("selector")?),
                "current": metric_value(None, Some(value), average, None),
                "describedObject": reference_from(o.structure("target")?)?,
            }),
        );
    }
    if let Some(p) = metric.pointer("pods")? {
        let average = p.quantity("currentAverageValue", false)?.unwrap_or_else(zero_quantity);
        out.insert(
            "pods".into(),
            json!({
                "metric": metric_identifier(p.string("metricName")?, p.selector("selector")?),
                "current": metric_value(None, None, Some(average), None),
            }),
        );
    }
    for kind in ["resource", "containerResource"] {
        if let Some(r) = metric.pointer(kind)? {
            let utilization = r.int32("currentAverageUtilization", true)?;
            let average = r.quantity("currentAverageValue", false)?.unwrap_or_else(zero_quantity);
            let mut resource = Map::new();
            resource.insert("name".into(), json!(r.string("name")?));
            let current = metric_value(None, None, Some(average), utilization);
            resource.insert("current".into(), current);
            if kind == "containerResource" {
                resource.insert("container".into(), json!(r.string("container")?));
            }
            out.insert(kind.into(), Value::Object(resource));
        }
    }
    if let Some(e) = metric.pointer("external")? {
        let value = e.quantity("currentValue", false)?.unwrap_or_else(zero_quantity);
        let average = e.quantity("currentAverageValue", true)?;
        let selector = e.selector("metricSelector")?;
        out.insert(
            "external".into(),
            json!({
                "metric": metric_identifier(e.string("metricName")?, selector),
                "current": metric_value(None, Some(value), average, None),
            }),
        );
    }
    Ok(Value::Object(out))
}

/// v2 condition of a v1 `HorizontalPodAutoscalerCondition`.
fn condition_from_v1(v: &Value) -> Decoded<Value> {
    let condition = Fields::of(Some(v))?;
    let mut out = Map::new();
    out.insert("type".into(), json!(condition.string("type")?));
    out.insert("status".into(), json!(condition.string("status")?));
    out.insert("lastTransitionTime".into(), condition.time("lastTransitionTime")?);
    for field in ["reason", "message"] {
        let text = condition.string(field)?;
        if !text.is_empty() {
            out.insert(field.into(), json!(text));
        }
    }
    Ok(Value::Object(out))
}

/// v2 `HPAScalingRules` of upstream's internal one (any case of its field names).
fn scaling_rules_from_go(rules: Fields) -> Decoded<Value> {
    let mut out = Map::new();
    let window = rules.int32("StabilizationWindowSeconds", true)?;
    put(&mut out, "stabilizationWindowSeconds", window.map(Value::from));
    put(&mut out, "selectPolicy", rules.string_pointer("SelectPolicy")?.map(Value::from));
    if let Some(policies) = rules.list("Policies")? {
        let policies = policies
            .iter()
            .map(|p| {
                let policy = Fields::of(Some(p))?;
                Ok(json!({
                    "type": policy.string("Type")?,
                    "value": policy.int32("Value", false)?.unwrap_or(0),
                    "periodSeconds": policy.int32("PeriodSeconds", false)?.unwrap_or(0),
                }))
            })
            .collect::<Decoded<Vec<_>>>()?;
        // An empty list is still set: the defaults do not replace it.
        out.insert("policies".into(), Value::Array(policies));
    }
    put(&mut out, "tolerance", rules.quantity("Tolerance", true)?);
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;

    fn v1_info() -> &'static ResourceInfo {
        Resources::builtin().get("autoscaling", "v1", "horizontalpodautoscalers").unwrap()
    }

    fn v2_info() -> &'static ResourceInfo {
        Resources::builtin().get("autoscaling", "v2", "horizontalpodautoscalers").unwrap()
    }

    fn ingress() -> Value {
        json!({"kind": "Ingress", "name": "main", "apiVersion": "networking.k8s.io/v1"})
    }

    /// An HPA using every kind of metric, with status and a completed behavior, its keys in
    /// upstream's order and the CPU target last (where a conversion from v1 puts it).
    fn full_v2() -> Value {
        json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "default", "annotations": {"team": "web"}},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [
                    {"type": "Pods", "pods": {"metric": {"name": "x"},
                        "target": {"type": "AverageValue", "averageValue": "850m"}}},
                    {"type": "Resource", "resource": {"name": "memory",
                        "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                    {"type": "Object", "object": {"describedObject": ingress(),
                        "target": {"type": "Value", "value": "10k"},
                        "metric": {"name": "rps", "selector": {"matchLabels": {"a": "1", "b": "2"}}}}},
                    {"type": "External", "external": {"metric": {"name": "queue",
                            "selector": {"matchExpressions": [{"key": "q", "operator": "In", "values": ["a"]}]}},
                        "target": {"type": "AverageValue", "averageValue": "30"}}},
                    {"type": "ContainerResource", "containerResource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 60}, "container": "app"}},
                    {"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 70}}},
                ],
                "behavior": {
                    "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                        {"type": "Pods", "value": 4, "periodSeconds": 15},
                        {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                    "scaleDown": {"selectPolicy": "Max", "policies": [
                        {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                },
            },
            "status": {
                "currentReplicas": 2, "desiredReplicas": 2,
                "currentMetrics": [
                    {"type": "Resource", "resource": {"name": "cpu",
                        "current": {"averageValue": "120m", "averageUtilization": 60}}},
                    {"type": "Pods", "pods": {"metric": {"name": "x"}, "current": {"averageValue": "900m"}}},
                    {"type": "Object", "object": {"metric": {"name": "rps"}, "current": {"value": "9k"},
                        "describedObject": ingress()}},
                    {"type": "External", "external": {"metric": {"name": "queue"},
                        "current": {"value": "12", "averageValue": "3"}}},
                ],
                "conditions": [
                    {"type": "AbleToScale", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z",
                        "reason": "ReadyForNewScale", "message": "recommended size matches current size"},
                    {"type": "ScalingActive", "status": "False", "lastTransitionTime": "2024-05-01T10:00:05Z",
                        "reason": "FailedGetResourceMetric", "message": "a < b & c"},
                ],
            },
        })
    }

    const METRICS: &str = concat!(
        r#"[{"type":"Pods","pods":{"metricName":"x","targetAverageValue":"850m"}},"#,
        r#"{"type":"Resource","resource":{"name":"memory","targetAverageValue":"100Mi"}},"#,
        r#"{"type":"Object","object":{"target":{"kind":"Ingress","name":"main","apiVersion":"networking.k8s.io/v1"},"#,
        r#""metricName":"rps","targetValue":"10k","selector":{"matchLabels":{"a":"1","b":"2"}}}},"#,
        r#"{"type":"External","external":{"metricName":"queue","#,
        r#""metricSelector":{"matchExpressions":[{"key":"q","operator":"In","values":["a"]}]},"targetAverageValue":"30"}},"#,
        r#"{"type":"ContainerResource","containerResource":{"name":"cpu","targetAverageUtilization":60,"container":"app"}}]"#,
    );
    const CURRENT_METRICS: &str = concat!(
        r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":60,"currentAverageValue":"120m"}},"#,
        r#"{"type":"Pods","pods":{"metricName":"x","currentAverageValue":"900m"}},"#,
        r#"{"type":"Object","object":{"target":{"kind":"Ingress","name":"main","apiVersion":"networking.k8s.io/v1"},"#,
        r#""metricName":"rps","currentValue":"9k"}},"#,
        r#"{"type":"External","external":{"metricName":"queue","currentValue":"12","currentAverageValue":"3"}}]"#,
    );
    const BEHAVIOR: &str = concat!(
        r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":["#,
        r#"{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,"PeriodSeconds":15}],"#,
        r#""Tolerance":null},"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":"Max","#,
        r#""Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null}}"#,
    );
    const CONDITIONS: &str = concat!(
        r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2024-05-01T10:00:00Z","#,
        r#""reason":"ReadyForNewScale","message":"recommended size matches current size"},"#,
        r#"{"type":"ScalingActive","status":"False","lastTransitionTime":"2024-05-01T10:00:05Z","#,
        r#""reason":"FailedGetResourceMetric","message":"a \u003c b \u0026 c"}]"#,
    );

    fn full_v1() -> Value {
        json!({
            "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "default", "annotations": {"team": "web",
                METRICS_ANNOTATION: METRICS, CURRENT_METRICS_ANNOTATION: CURRENT_METRICS,
                BEHAVIOR_ANNOTATION: BEHAVIOR, CONDITIONS_ANNOTATION: CONDITIONS}},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 70,
            },
            "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentCPUUtilizationPercentage": 60},
        })
    }

    fn annotation_of(obj: &Value, key: &str) -> String {
        obj["metadata"]["annotations"][key]
            .as_str()
            .unwrap_or_else(|| panic!("{key} in {obj}"))
            .into()
    }

    #[test]
    fn hpa_round_trips_through_v1() {
        let original = full_v2();
        let as_v1 = convert(original.clone(), v1_info());
        assert_eq!(as_v1, full_v1());
        let back = convert(as_v1, v2_info());
        // Key order included.
        assert_eq!(back.to_string(), original.to_string());
        // And from v1.
        let back = convert(convert(full_v1(), v2_info()), v1_info());
        assert_eq!(back, full_v1());
    }

    #[test]
    fn the_metrics_annotation_holds_v1_metric_specs() {
        let as_v1 = convert(full_v2(), v1_info());
        assert_eq!(annotation_of(&as_v1, METRICS_ANNOTATION), METRICS);
        // Unset non-pointer quantities are zero; label selectors as Go writes them.
        let metrics = [
            json!({"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "s"},
                "target": {"type": "AverageValue", "averageValue": "1.5"},
                "metric": {"name": "m", "selector": {"matchLabels": {"z": "1", "a": "2"}, "matchExpressions": []}}}}),
            json!({"type": "Pods", "pods": {"metric": {"name": "p", "selector": {}}, "target": {"type": "AverageValue"}}}),
            json!({"type": "External", "external": {"metric": {"name": "e"}, "target": {"type": "Value", "value": 2}}}),
        ];
        assert_eq!(
            hpa_metrics_annotation(&metrics),
            concat!(
                r#"[{"type":"Object","object":{"target":{"kind":"Service","name":"s"},"metricName":"m","#,
                r#""targetValue":"0","selector":{"matchLabels":{"a":"2","z":"1"}},"averageValue":"1500m"}},"#,
                r#"{"type":"Pods","pods":{"metricName":"p","targetAverageValue":"0","selector":{}}},"#,
                r#"{"type":"External","external":{"metricName":"e","targetValue":"2"}}]"#,
            )
        );
    }

    #[test]
    fn the_current_metrics_annotation_holds_every_v1_metric_status() {
        let as_v1 = convert(full_v2(), v1_info());
        assert_eq!(annotation_of(&as_v1, CURRENT_METRICS_ANNOTATION), CURRENT_METRICS);
        assert_eq!(as_v1["status"]["currentCPUUtilizationPercentage"], 60);
        // Only CPU: still kept, for its raw value.
        let hpa = json!({"apiVersion": "autoscaling/v2", "metadata": {"name": "h"},
            "status": {"desiredReplicas": 1, "currentMetrics": [{"type": "ContainerResource",
                "containerResource": {"name": "cpu", "container": "app", "current": {"averageUtilization": 5}}}]}});
        let as_v1 = convert(hpa, v1_info());
        assert_eq!(
            annotation_of(&as_v1, CURRENT_METRICS_ANNOTATION),
            r#"[{"type":"ContainerResource","containerResource":{"name":"cpu","currentAverageUtilization":5,"currentAverageValue":"0","container":"app"}}]"#
        );
        assert!(as_v1["status"].get("currentCPUUtilizationPercentage").is_none());
    }

    #[test]
    fn the_conditions_annotation_holds_v1_conditions() {
        let as_v1 = convert(full_v2(), v1_info());
        assert_eq!(annotation_of(&as_v1, CONDITIONS_ANNOTATION), CONDITIONS);
        assert!(as_v1["status"].get("conditions").is_none());
        // Times in UTC, whole seconds; an unset one is null; empty reason and message left out.
        let hpa = json!({"apiVersion": "autoscaling/v2", "metadata": {"name": "h"},
            "status": {"conditions": [
                {"type": "AbleToScale", "status": "True", "lastTransitionTime": "2024-05-01T12:00:00.5+02:00", "reason": ""},
                {"type": "ScalingLimited", "status": "False"}]}});
        assert_eq!(
            annotation_of(&convert(hpa, v1_info()), CONDITIONS_ANNOTATION),
            concat!(
                r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2024-05-01T10:00:00Z"},"#,
                r#"{"type":"ScalingLimited","status":"False","lastTransitionTime":null}]"#,
            )
        );
        // No conditions, no annotation.
        let hpa = json!({"apiVersion": "autoscaling/v2", "metadata": {"name": "h"}, "status": {"conditions": []}});
        assert!(convert(hpa, v1_info())["metadata"].get("annotations").is_none());
    }

    #[test]
    fn the_behavior_annotation_has_go_field_names() {
        let as_v1 = convert(full_v2(), v1_info());
        assert_eq!(annotation_of(&as_v1, BEHAVIOR_ANNOTATION), BEHAVIOR);
        assert_eq!(
            hpa_behavior_annotation(
                &json!({"scaleDown": {"stabilizationWindowSeconds": 60, "tolerance": "0.05"}})
            ),
            concat!(
                r#"{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":null,"#,
                r#""Policies":null,"Tolerance":"50m"}}"#,
            )
        );
    }

    #[test]
    fn behavior_annotations_are_read_in_any_case() {
        let camel = r#"{"scaleUp":{"stabilizationWindowSeconds":30,"policies":[{"type":"Pods","value":2,"periodSeconds":60}]},"scaleDown":null}"#;
        let expected = json!({"scaleUp": {"stabilizationWindowSeconds": 30,
            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]}});
        assert_eq!(hpa_behavior_from_annotation(camel), Some(expected.clone()));
        let go = r#"{"ScaleUp":{"StabilizationWindowSeconds":30,"SelectPolicy":null,"Policies":[{"Type":"Pods","Value":2,"PeriodSeconds":60}],"Tolerance":null},"ScaleDown":null}"#;
        assert_eq!(hpa_behavior_from_annotation(go), Some(expected));
        let mixed = r#"{"SCALEDOWN":{"selectpolicy":"Disabled","Tolerance":"0.1","extra":1}}"#;
        assert_eq!(
            hpa_behavior_from_annotation(mixed),
            Some(json!({"scaleDown": {"selectPolicy": "Disabled", "tolerance": "100m"}}))
        );
        // Not applied: a value of the wrong type, nothing set, not JSON.
        for bad in [
            r#"{"ScaleUp":{"Policies":[{"Value":"4"}]}}"#,
            r#"{"ScaleUp":{"StabilizationWindowSeconds":1.5}}"#,
            "{}",
            r#"{"ScaleUp":null}"#,
            "[]",
            "null",
            "nope",
        ] {
            assert_eq!(hpa_behavior_from_annotation(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_v1_hpa_becomes_a_cpu_metric() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
            "spec": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 50}});
        let out = convert(v1, v2_info());
        assert_eq!(out["spec"]["metrics"], json!([cpu_metric(json!(50))]));
        assert!(out["metadata"].get("annotations").is_none());
        // Without any target, the CPU utilization v1 always meant.
        let v1 = json!({"apiVersion": "autoscaling/v1", "metadata": {"name": "h"}, "spec": {"maxReplicas": 3}});
        assert_eq!(convert(v1, v2_info())["spec"]["metrics"], json!([cpu_metric(json!(80))]));
    }

    #[test]
    fn the_annotations_metrics_come_before_the_cpu_target() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "metadata": {"name": "h", "annotations": {
                METRICS_ANNOTATION: r#"[{"Type":"Pods","Pods":{"MetricName":"x","TargetAverageValue":"0.5"}}]"#}},
            "spec": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 50},
            "status": {"currentCPUUtilizationPercentage": 40}});
        let out = convert(v1, v2_info());
        assert_eq!(
            out["spec"]["metrics"],
            json!([{"type": "Pods", "pods": {"metric": {"name": "x"},
                "target": {"type": "AverageValue", "averageValue": "500m"}}}, cpu_metric(json!(50))])
        );
        assert_eq!(
            out["status"]["currentMetrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}])
        );
        assert!(out["metadata"].get("annotations").is_none());
        // So a v2 HPA whose CPU target is not last comes back with it last.
        let mut v2 = full_v2();
        let metrics = v2["spec"]["metrics"].as_array_mut().unwrap();
        metrics.rotate_right(1);
        let back = convert(convert(v2, v1_info()), v2_info());
        assert_eq!(back["spec"]["metrics"], full_v2()["spec"]["metrics"]);
    }

    #[test]
    fn v1_status_annotations_are_status() {
        let r = Resources::builtin();
        let v1 = r.get("autoscaling", "v1", "horizontalpodautoscalers").unwrap();
        let sent = json!({"metadata": {"name": "h", "annotations": {
            CONDITIONS_ANNOTATION: "[]", CURRENT_METRICS_ANNOTATION: "[]", "team": "a"}}});
        let mut created = sent.clone();
        keep_hpa_v1_status(&mut created, None);
        assert_eq!(created["metadata"]["annotations"], json!({"team": "a"}));
        let old =
            json!({"metadata": {"name": "h", "annotations": {CONDITIONS_ANNOTATION: "[{}]"}}});
        let mut updated = sent.clone();
        keep_hpa_v1_status(&mut updated, Some(&old));
        assert_eq!(
            updated["metadata"]["annotations"],
            json!({"team": "a", CONDITIONS_ANNOTATION: "[{}]"})
        );
        // v2 objects have no such annotations to keep.
        let v2 = r.get("autoscaling", "v2", "horizontalpodautoscalers").unwrap();
        let mut untouched = sent.clone();
        crate::strategy::prepare_for_create(v2, &mut untouched);
        assert_eq!(untouched["metadata"], sent["metadata"]);
        // v1's strategy keeps them as status.
        let mut created = sent.clone();
        crate::strategy::prepare_for_create(v1, &mut created);
        assert_eq!(created["metadata"]["annotations"], json!({"team": "a"}));
    }

    #[test]
    fn annotations_go_does_not_decode_are_ignored_and_dropped() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "metadata": {"name": "h", "annotations": {
                METRICS_ANNOTATION: r#"[{"type":"Pods","pods":{"targetAverageValue":true}}]"#,
                CURRENT_METRICS_ANNOTATION: "{}",
                CONDITIONS_ANNOTATION: r#"[{"type":"AbleToScale","lastTransitionTime":"yesterday"}]"#,
                BEHAVIOR_ANNOTATION: "{}",
                "other": "kept"}},
            "spec": {"maxReplicas": 3},
            "status": {"currentCPUUtilizationPercentage": 40}});
        let out = convert(v1, v2_info());
        assert_eq!(out["metadata"]["annotations"], json!({"other": "kept"}));
        assert_eq!(out["spec"], json!({"maxReplicas": 3, "metrics": [cpu_metric(json!(80))]}));
        assert_eq!(
            out["status"],
            json!({"currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}]})
        );
        // Conditions decoded: a missing time is null.
        let v1 = json!({"apiVersion": "autoscaling/v1", "metadata": {"name": "h", "annotations": {
                CONDITIONS_ANNOTATION: r#"[{"Type":"AbleToScale","Status":"True","Reason":""}]"#}},
            "spec": {"maxReplicas": 3}});
        assert_eq!(
            convert(v1, v2_info())["status"]["conditions"],
            json!([{"type": "AbleToScale", "status": "True", "lastTransitionTime": null}])
        );
    }

    #[test]
    fn v2_objects_never_carry_the_round_trip_annotations() {
        let mut v2 = full_v2();
        v2["metadata"]["annotations"][METRICS_ANNOTATION] = json!("stale");
        v2["metadata"]["annotations"][CONDITIONS_ANNOTATION] = json!("stale");
        let read = convert(v2.clone(), v2_info());
        assert_eq!(read, full_v2());
        // Read as v1, only what the conversion writes.
        v2["spec"]["metrics"] = json!([cpu_metric(json!(70))]);
        v2["status"] = json!({"desiredReplicas": 1});
        let as_v1 = convert(v2, v1_info());
        assert_eq!(
            as_v1["metadata"]["annotations"],
            json!({"team": "web", BEHAVIOR_ANNOTATION: BEHAVIOR})
        );
    }
}
