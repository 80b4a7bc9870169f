//! Server-side table printing: the `meta.k8s.io/v1 Table` columns and cells `kubectl get`
//! shows for each resource.
//!
//! Each resource's strategy gives its table ([`crate::strategy::Strategy::printer`], a
//! [`TablePrinter`]: its columns and the function building an object's row), in its module in
//! `crate::kinds`; resources without one print [`NAME_AGE`]. This module holds what those
//! share: the [`Column`] type and the common columns, [`columns`] and [`cells`] (what the
//! server's Table responses are built from), and the cell formatting many kinds use (ages,
//! quantities, label maps and selectors, container lists) with the readers of the stored
//! JSON.
//!
//! kubectl asks for a Table and prints what the server sends, so the column names, types,
//! priorities and cell formatting follow kube-apiserver v1.33's printers (the
//! `pkg/printers/internalversion` handlers, the default `Name`/`Created At` convertor for
//! kinds without a printer ([`CREATED_AT`]), and the aggregator's APIService convertor).
//! Like kube-apiserver, [`cells`] always returns the wide (`priority: 1`) cells too; kubectl
//! drops them unless asked for `-o wide`.
//!
//! Objects are the JSON as stored, so every field may be missing: a missing field prints as
//! upstream prints the defaulted or zero value, never a panic.

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use crate::resources::ResourceInfo;
use docs::*;

/// One column of a table, as `meta.k8s.io/v1 TableColumnDefinition` carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub kind: &'static str,
    /// `name` for the column holding the object's name, else empty.
    pub format: &'static str,
    pub description: &'static str,
    /// 0 for default columns, 1 for those kubectl shows only with `-o wide`.
    pub priority: i32,
}

/// A column kubectl always shows.
pub(crate) const fn col(
    name: &'static str,
    kind: &'static str,
    description: &'static str,
) -> Column {
    Column { name, kind, format: "", description, priority: 0 }
}

/// A column kubectl shows only with `-o wide`.
pub(crate) const fn wide(
    name: &'static str,
    kind: &'static str,
    description: &'static str,
) -> Column {
    Column { name, kind, format: "", description, priority: 1 }
}

/// A string column kubectl always shows.
pub(crate) const fn text(name: &'static str, description: &'static str) -> Column {
    col(name, "string", description)
}

/// The columns most tables share: the name, the age, and a pod template's containers and
/// images (wide).
pub(crate) const NAME: Column =
    Column { name: "Name", kind: "string", format: "name", description: D_NAME, priority: 0 };
pub(crate) const AGE: Column = text("Age", D_CREATED);
pub(crate) const CONTAINERS: Column =
    wide("Containers", "string", "Names of each container in the template.");
pub(crate) const IMAGES: Column =
    wide("Images", "string", "Images referenced by each container in the template.");

/// How one resource prints as a table: its columns in order, wide ones included, and the
/// function giving an object's row of cells in that order (`now` is what ages count from).
/// Each resource's strategy names its printer ([`crate::strategy::Strategy::printer`]).
#[derive(Clone, Copy, Debug)]
pub struct TablePrinter {
    pub columns: &'static [Column],
    pub row: fn(&Value, DateTime<Utc>) -> Vec<Value>,
}

/// The table of resources without a printer of their own: name and age.
pub const NAME_AGE: TablePrinter = TablePrinter { columns: &[NAME, AGE], row: name_age_row };

/// kube-apiserver's default convertor for built-in kinds without a printer: name and the
/// creation time.
pub const CREATED_AT: TablePrinter =
    TablePrinter { columns: &[NAME, col("Created At", "date", D_CREATED)], row: created_at_row };

/// The columns of `info`'s table, in order, wide ones included.
pub fn columns(info: &ResourceInfo) -> Vec<Column> {
    info.strategy.table_columns()
}

/// One row's cells for `obj`, in the order of [`columns`]; `now` is what ages count from.
pub fn cells(info: &ResourceInfo, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    info.strategy.table_cells(obj, now)
}

/// The `Name` cell: the object's name.
pub(crate) fn name(obj: &Value) -> Value {
    Value::from(st(obj, &["metadata", "name"]))
}

/// The `Age` cell: the time since the object was created.
pub(crate) fn age(obj: &Value, now: DateTime<Utc>) -> Value {
    Value::from(since(time(obj, &["metadata", "creationTimestamp"]), now))
}

fn name_age_row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(obj), age(obj, now)]
}

fn created_at_row(obj: &Value, _now: DateTime<Utc>) -> Vec<Value> {
    let created = time(obj, &["metadata", "creationTimestamp"])
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".to_string());
    vec![name(obj), created.into()]
}

/// A duration for people, with two or three significant figures, as kubectl shows ages:
/// `59s`, `2m5s`, `10m`, `3h5m`, `20h`, `2d3h`, `400d`, `3y12d`, `9y`. Durations a little
/// below zero (clock skew) print `0s`; more negative ones `<invalid>`.
pub fn human_duration(d: Duration) -> String {
    // Whole units, truncated towards zero.
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = d.num_minutes();
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = d.num_hours();
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

// ---------------------------------------------------------------------------------------
// Cells that several kinds print alike.

/// The load balancer's addresses (IP, else hostname), sorted and unique. kube-apiserver
/// prints tables wide, so they are never clipped.
pub(crate) fn load_balancer_ips(obj: &Value) -> String {
    let mut ips: Vec<&str> = arr(obj, &["status", "loadBalancer", "ingress"])
        .iter()
        .map(|i| or(st(i, &["ip"]), st(i, &["hostname"])))
        .filter(|s| !s.is_empty())
        .collect();
    ips.sort_unstable();
    ips.dedup();
    ips.join(",")
}

/// The first `max` items, then how many more; `<unset>` when there are none.
pub(crate) fn list_with_more(list: Vec<String>, max: usize) -> String {
    match list.len() {
        0 => "<unset>".to_string(),
        n if n > max => format!("{} + {} more...", list[..max].join(","), n - max),
        _ => list.join(","),
    }
}

pub(crate) fn access_modes(modes: Option<&Value>) -> String {
    let modes = strings(modes);
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

// ---------------------------------------------------------------------------------------
// Formatting shared by several kinds.

/// Container names and images of a pod template, each comma-joined.
pub(crate) fn containers(list: Option<&Value>) -> (String, String) {
    let list = list.and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    let names: Vec<&str> = list.iter().map(|c| st(c, &["name"])).collect();
    let images: Vec<&str> = list.iter().map(|c| st(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

/// A label map as `a=b,c=d`, sorted by key; `<none>` when empty.
pub(crate) fn format_labels(labels: Option<&Value>) -> String {
    let Some(labels) = labels.and_then(Value::as_object).filter(|l| !l.is_empty()) else {
        return "<none>".to_string();
    };
    let mut pairs: Vec<String> =
        labels.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
    pairs.sort();
    pairs.join(",")
}

/// A `metav1.LabelSelector` in selector syntax; `<none>` when it selects everything or
/// nothing, `<error>` when it is invalid.
pub(crate) fn format_label_selector(selector: Option<&Value>) -> String {
    match label_selector(selector) {
        Ok(s) if s.is_empty() => "<none>".to_string(),
        Ok(s) => s,
        Err(()) => "<error>".to_string(),
    }
}

/// A `metav1.LabelSelector` in selector syntax (`app=web,tier in (a,b),!canary`), its
/// requirements sorted by key; empty for a missing or empty selector.
pub(crate) fn label_selector(selector: Option<&Value>) -> Result<String, ()> {
    let Some(selector) = selector.filter(|s| s.is_object()) else {
        return Ok(String::new());
    };
    let mut requirements: Vec<(&str, String)> = Vec::new();
    if let Some(labels) = at(selector, &["matchLabels"]).and_then(Value::as_object) {
        for (key, value) in labels {
            requirements.push((key, format!("{key}={}", value.as_str().unwrap_or(""))));
        }
    }
    for e in arr(selector, &["matchExpressions"]) {
        let key = st(e, &["key"]);
        let mut values = strings(at(e, &["values"]));
        values.sort_unstable();
        let requirement = match (st(e, &["operator"]), values.is_empty()) {
            ("In", false) => format!("{key} in ({})", values.join(",")),
            ("NotIn", false) => format!("{key} notin ({})", values.join(",")),
            ("Exists", true) => key.to_string(),
            ("DoesNotExist", true) => format!("!{key}"),
            _ => return Err(()),
        };
        requirements.push((key, requirement));
    }
    requirements.sort_by(|a, b| a.0.cmp(b.0));
    Ok(requirements.into_iter().map(|(_, r)| r).collect::<Vec<_>>().join(","))
}

pub(crate) fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "N/A".to_string(),
    }
}

/// A resource quantity as stored (quantities are strings; tolerate numbers).
pub(crate) fn quantity(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "0".to_string(),
    }
}

/// A quantity that prints `0` when missing, as Go's zero `Quantity` does.
pub(crate) fn quantity_or_zero(v: Option<&Value>) -> String {
    v.map(quantity).unwrap_or_else(|| "0".to_string())
}

/// A `*Quantity` that prints `<nil>` when missing, as Go's does.
pub(crate) fn quantity_or_nil(v: Option<&Value>) -> String {
    v.filter(|v| !v.is_null()).map(quantity).unwrap_or_else(|| "<nil>".to_string())
}

/// Time since `t`, humanized; `<unknown>` without one.
pub(crate) fn since(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    match t {
        Some(t) => human_duration(now - t),
        None => "<unknown>".to_string(),
    }
}

pub(crate) fn or<'a>(s: &'a str, fallback: &'a str) -> &'a str {
    if s.is_empty() {
        fallback
    } else {
        s
    }
}

pub(crate) fn or_none(s: &str) -> String {
    or(s, "<none>").to_string()
}

/// An optional string field: `<unset>` when missing (not when empty).
pub(crate) fn or_unset(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or("<unset>").to_string()
}

// ---------------------------------------------------------------------------------------
// Reading the JSON without panicking.

pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, key| v.get(key))
}

/// A string field, empty when missing or not a string.
pub(crate) fn st<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    at(v, path).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn opt_int(v: &Value, path: &[&str]) -> Option<i64> {
    let v = at(v, path)?;
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}

/// An integer field, 0 when missing.
pub(crate) fn int(v: &Value, path: &[&str]) -> i64 {
    opt_int(v, path).unwrap_or(0)
}

/// An integer field with the default the API server fills in.
pub(crate) fn int_or(v: &Value, path: &[&str], default: i64) -> i64 {
    opt_int(v, path).unwrap_or(default)
}

pub(crate) fn boolean(v: &Value, path: &[&str]) -> Option<bool> {
    at(v, path).and_then(Value::as_bool)
}

pub(crate) fn arr<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    at(v, path).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// The entries of a map (or items of a list) field.
pub(crate) fn len(v: &Value, path: &[&str]) -> usize {
    match at(v, path) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

pub(crate) fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

pub(crate) fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    at(obj, &["metadata", "annotations"]).and_then(|a| a.get(key)).and_then(Value::as_str)
}

/// A `metav1.Time` or `MicroTime`; none when missing, unparsable or Go's zero time.
pub(crate) fn time(v: &Value, path: &[&str]) -> Option<DateTime<Utc>> {
    let t = DateTime::parse_from_rfc3339(st(v, path)).ok()?.with_timezone(&Utc);
    (t != DateTime::<Utc>::from_naive_utc_and_offset(
        chrono::NaiveDate::from_ymd_opt(1, 1, 1)?.and_hms_opt(0, 0, 0)?,
        Utc,
    ))
    .then_some(t)
}

/// Column descriptions: the API field documentation upstream takes them from.
mod docs {
    pub(super) const D_NAME: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
    pub(super) const D_CREATED: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_print_in_selector_syntax_sorted_by_key() {
        let selector = json!({
            "matchLabels": {"tier": "web", "app": "shop"},
            "matchExpressions": [
                {"key": "env", "operator": "NotIn", "values": ["qa", "dev"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "Exists"}
            ]
        });
        assert_eq!(
            format_label_selector(Some(&selector)),
            "app=shop,!canary,env notin (dev,qa),tier=web,zone"
        );
        assert_eq!(format_label_selector(None), "<none>");
        assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
        let invalid = json!({"matchExpressions": [{"key": "a", "operator": "In"}]});
        assert_eq!(format_label_selector(Some(&invalid)), "<error>");
        assert_eq!(label_selector(Some(&invalid)), Err(()));
    }

    #[test]
    fn long_lists_are_cut_after_a_few_items() {
        let items = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>();
        assert_eq!(list_with_more(items(0), 3), "<unset>");
        assert_eq!(list_with_more(items(3), 3), "1,2,3");
        assert_eq!(list_with_more(items(5), 3), "1,2,3 + 2 more...");
    }

    #[test]
    fn timestamps_parse_and_go_zero_time_counts_as_missing() {
        let obj = json!({"a": "2024-06-01T12:00:00Z", "b": "2024-06-01T12:00:00.123456Z",
                         "zero": "0001-01-01T00:00:00Z", "bad": "soon"});
        assert!(time(&obj, &["a"]).is_some());
        assert!(time(&obj, &["b"]).is_some());
        assert_eq!(time(&obj, &["zero"]), None);
        assert_eq!(time(&obj, &["bad"]), None);
        assert_eq!(time(&obj, &["missing"]), None);
    }
}
