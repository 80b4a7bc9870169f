//! LimitRanges: each item's type, resource names and the order of its min, default request,
//! default and max (and their ratio), with upstream's (v1.33) messages and field paths
//! (`ValidateLimitRange`). A Container item's absent `default` and `defaultRequest` are
//! taken from `max` and `min` as upstream's defaulting fills them; a `resource.Quantity`
//! shown as the bad value is rendered the way Go's `%#v` prints it.

use serde_json::{json, Map, Value};

use crate::gofmt::go_quantity;
use crate::quantity::Quantity;
use crate::validation::values::{
    container_resource_name, is_hugepages, is_native_resource, items, milli, resource_name, str_of,
};
use crate::validation::{qualified_name_problems, FieldError};

const NANOS: i128 = 1_000_000_000;

/// `ceil(q)`, as upstream's `Value`.
fn units(q: &Quantity) -> i128 {
    ceil_div(q.nanos, NANOS)
}

fn ceil_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b > 0 {
        q + 1
    } else {
        q
    }
}

/// One of a LimitRange item's resource maps, as `(name, quantity as sent)`.
type Limits = Map<String, Value>;

fn limits(v: &Value) -> Limits {
    v.as_object().cloned().unwrap_or_default()
}

/// `ValidateLimitRange`: each item's type (standard or qualified, no repeats), resource
/// names, and that min <= defaultRequest <= default <= max and the ratio fit. A Container
/// item's `default` is first filled from `max`, and its `defaultRequest` from `default` and
/// then `min`, as upstream's defaulting does.
pub fn limit_range(obj: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, item) in items(&obj["spec"]["limits"]).iter().enumerate() {
        let at = format!("spec.limits[{i}]");
        let kind = str_of(&item["type"]);
        limit_type(kind, &format!("{at}.type"), &mut errors);
        if seen.contains(&kind) {
            errors.push(FieldError::duplicate(format!("{at}.type"), &json!(kind)));
        }
        seen.push(kind);
        let (max, min, ratio) =
            (limits(&item["max"]), limits(&item["min"]), limits(&item["maxLimitRequestRatio"]));
        let (mut default, mut default_request) =
            (limits(&item["default"]), limits(&item["defaultRequest"]));
        if kind == "Container" {
            for (k, v) in &max {
                default.entry(k.clone()).or_insert_with(|| v.clone());
            }
            for (k, v) in default.iter().chain(&min) {
                default_request.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let name_check = |name: &str, at: &str, errors: &mut Vec<FieldError>| {
            if matches!(kind, "Pod" | "Container") {
                container_resource_name(name, at, errors);
            } else {
                resource_name(name, at, errors);
            }
        };
        for (field, map) in [("max", &max), ("min", &min)] {
            for k in map.keys() {
                name_check(k, &format!("{at}.{field}[{k}]"), &mut errors);
            }
        }
        if kind == "Pod" {
            for field in ["default", "defaultRequest"] {
                if item[field].as_object().is_some_and(|m| !m.is_empty()) {
                    errors.push(FieldError::forbidden(
                        format!("{at}.{field}"),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
            }
            default.clear();
            default_request.clear();
        } else {
            for (field, map) in [("default", &default), ("defaultRequest", &default_request)] {
                for k in map.keys() {
                    name_check(k, &format!("{at}.{field}[{k}]"), &mut errors);
                }
            }
        }
        if kind == "PersistentVolumeClaim"
            && !min.contains_key("storage")
            && !max.contains_key("storage")
        {
            errors.push(FieldError::required(
                format!("{at}.limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
        for k in ratio.keys() {
            name_check(k, &format!("{at}.maxLimitRequestRatio[{k}]"), &mut errors);
        }
        let mut keys: Vec<&String> = max
            .keys()
            .chain(min.keys())
            .chain(default.keys())
            .chain(default_request.keys())
            .collect();
        keys.extend(ratio.keys());
        keys.sort();
        keys.dedup();
        for k in keys {
            let get =
                |m: &Limits| m.get(k).and_then(|v| Quantity::parse(v).map(|q| (v.clone(), q)));
            let q = LimitQuantities {
                min: get(&min),
                max: get(&max),
                default: get(&default),
                request: get(&default_request),
                ratio: get(&ratio),
            };
            limit_relations(&q, k, &at, &mut errors);
        }
    }
    errors
}

type Found = Option<(Value, Quantity)>;

struct LimitQuantities {
    min: Found,
    max: Found,
    default: Found,
    request: Found,
    ratio: Found,
}

fn limit_relations(q: &LimitQuantities, k: &str, at: &str, errors: &mut Vec<FieldError>) {
    let c = |f: &(Value, Quantity)| f.1.canonical();
    let mut push = |field: &str, bad: &(Value, Quantity), detail: String| {
        errors.push(FieldError::invalid_shown(
            format!("{at}.{field}[{k}]"),
            &go_quantity(&bad.0, true),
            &detail,
        ));
    };
    // Each pair must be in order (lower <= upper); upstream reports the field named last, with
    // the value named third (its "bad value" is not always the field's own).
    let ordered: [(&Found, &str, &Found, &str, &str, &Found); 6] = [
        (&q.min, "min", &q.max, "max", "min", &q.min),
        (&q.min, "min", &q.request, "default request", "defaultRequest", &q.request),
        (&q.request, "default request", &q.max, "max", "defaultRequest", &q.request),
        (&q.request, "default request", &q.default, "default limit", "defaultRequest", &q.request),
        (&q.min, "min", &q.default, "default", "default", &q.min),
        (&q.default, "default", &q.max, "max", "default", &q.max),
    ];
    for (lower, lower_name, upper, upper_name, field, shown) in ordered {
        if let (Some(lo), Some(hi), Some(bad)) = (lower, upper, shown) {
            if lo.1.nanos > hi.1.nanos {
                let detail = format!(
                    "{lower_name} value {} is greater than {upper_name} value {}",
                    c(lo),
                    c(hi)
                );
                push(field, bad, detail);
            }
        }
    }
    if let Some(ratio) = &q.ratio {
        if ratio.1.nanos < NANOS {
            push("maxLimitRequestRatio", ratio, format!("ratio {} is less than 1", c(ratio)));
        }
        if let (Some(min), Some(max)) = (&q.min, &q.max) {
            const MAX_MILLI: i128 = (i64::MAX / 1000) as i128;
            let (r, lo, hi) = (units(&ratio.1), units(&min.1), units(&max.1));
            let (r, lo, hi) = if r < MAX_MILLI && lo < MAX_MILLI && hi < MAX_MILLI {
                (milli(&ratio.1) as f64 / 1000.0, milli(&min.1), milli(&max.1))
            } else {
                (r as f64, lo, hi)
            };
            let limit = hi as f64 / lo as f64;
            if r > limit {
                let detail =
                    format!("ratio {} is greater than max/min = {}", c(ratio), go_f(limit));
                push("maxLimitRequestRatio", ratio, detail);
            }
        }
    }
    // Resources that cannot be overcommitted: the default request is the default limit.
    let overcommit = is_native_resource(k) && !is_hugepages(k);
    if let (false, Some(default), Some(request)) = (overcommit, &q.default, &q.request) {
        if default.1.nanos != request.1.nanos {
            let detail = format!(
                "default value {} must equal to defaultRequest value {} in {k}",
                c(default),
                c(request)
            );
            push("defaultRequest", request, detail);
        }
    }
}

/// Go's `%f`.
fn go_f(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{f:.6}")
    }
}

fn limit_type(kind: &str, at: &str, errors: &mut Vec<FieldError>) {
    let value = json!(kind);
    let problems = qualified_name_problems(kind);
    if !problems.is_empty() {
        errors.extend(problems.iter().map(|p| FieldError::invalid(at, &value, p)));
        return;
    }
    if !kind.contains('/') && !matches!(kind, "Pod" | "Container" | "PersistentVolumeClaim") {
        errors.push(FieldError::invalid(
            at,
            &value,
            "must be a standard limit type or fully qualified",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    fn limit_range_of(item: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "LimitRange",
            "metadata": {"name": "limits", "namespace": "default"}, "spec": {"limits": [item]}})
    }

    #[test]
    fn typical_limit_ranges_are_valid() {
        let lr = json!({"spec": {"limits": [
            {"type": "Container", "default": {"cpu": "500m", "memory": "512Mi"},
                "defaultRequest": {"cpu": "250m", "memory": "256Mi"},
                "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "memory": "64Mi"},
                "maxLimitRequestRatio": {"cpu": "4"}},
            {"type": "Pod", "max": {"cpu": "4", "memory": "2Gi"}},
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}},
        ]}});
        assert!(limit_range(&lr, None).is_empty());
        // Only a max: default and defaultRequest are taken from it.
        assert!(limit_range(
            &limit_range_of(json!({"type": "Container", "max": {"cpu": "1"}})),
            None
        )
        .is_empty());
    }

    #[test]
    fn limit_range_errors_read_like_upstream() {
        assert_eq!(
            lines(limit_range(
                &limit_range_of(json!({"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}})),
                None
            )),
            [
                "spec.limits[0].min[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:2, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"2\", Format:\"DecimalSI\"}: min value 2 is greater than max value 1",
                "spec.limits[0].defaultRequest[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1\", Format:\"DecimalSI\"}: min value 2 is greater than default request value 1",
                "spec.limits[0].default[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:2, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"2\", Format:\"DecimalSI\"}: min value 2 is greater than default value 1",
            ]
        );
        assert_eq!(
            lines(limit_range(
                &limit_range_of(json!({"type": "Container", "default": {"memory": "256Mi"},
                    "defaultRequest": {"memory": "512Mi"}, "max": {"memory": "128Mi"}})),
                None
            )),
            [
                "spec.limits[0].defaultRequest[memory]: Invalid value: resource.Quantity{i:resource.int64Amount{value:536870912, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"512Mi\", Format:\"BinarySI\"}: default request value 512Mi is greater than max value 128Mi",
                "spec.limits[0].defaultRequest[memory]: Invalid value: resource.Quantity{i:resource.int64Amount{value:536870912, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"512Mi\", Format:\"BinarySI\"}: default request value 512Mi is greater than default limit value 256Mi",
                "spec.limits[0].default[memory]: Invalid value: resource.Quantity{i:resource.int64Amount{value:134217728, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"128Mi\", Format:\"BinarySI\"}: default value 256Mi is greater than max value 128Mi",
            ]
        );
        assert_eq!(
            lines(limit_range(
                &limit_range_of(json!({"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"},
                    "maxLimitRequestRatio": {"cpu": "500m"}})),
                None
            )),
            ["spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"500m\", Format:\"DecimalSI\"}: ratio 500m is less than 1"]
        );
        assert_eq!(
            lines(limit_range(
                &limit_range_of(json!({"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"},
                    "maxLimitRequestRatio": {"cpu": "3"}})),
                None
            )),
            ["spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:3, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"3\", Format:\"DecimalSI\"}: ratio 3 is greater than max/min = 2.000000"]
        );
        assert_eq!(
            lines(limit_range(
                &limit_range_of(
                    json!({"type": "Pod", "max": {"cpu": "1"}, "default": {"cpu": "1"}})
                ),
                None
            )),
            ["spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"]
        );
        assert_eq!(
            lines(limit_range(&limit_range_of(json!({"type": "PersistentVolumeClaim", "max": {"cpu": "1"}})), None)),
            ["spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided"]
        );
        assert_eq!(
            lines(limit_range(&limit_range_of(json!({"type": "Node", "max": {"cpus": "1"}})), None)),
            [
                "spec.limits[0].type: Invalid value: \"Node\": must be a standard limit type or fully qualified",
                "spec.limits[0].max[cpus]: Invalid value: \"cpus\": must be a standard resource type or fully qualified",
            ]
        );
        let two = json!({"spec": {"limits": [{"type": "Pod"}, {"type": "Pod"}]}});
        assert_eq!(
            lines(limit_range(&two, None)),
            ["spec.limits[1].type: Duplicate value: \"Pod\""]
        );
        assert_eq!(
            lines(limit_range(
                &limit_range_of(json!({"type": "Container", "default": {"example.com/gpu": "2"},
                    "defaultRequest": {"example.com/gpu": "1"}})),
                None
            )),
            ["spec.limits[0].defaultRequest[example.com/gpu]: Invalid value: resource.Quantity{i:resource.int64Amount{value:1, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1\", Format:\"DecimalSI\"}: default value 2 must equal to defaultRequest value 1 in example.com/gpu"]
        );
    }

    #[test]
    fn quantities_print_as_go_structs() {
        let shown = |v: Value, stringified| go_quantity(&v, stringified);
        assert_eq!(
            shown(json!("1000"), false),
            "resource.Quantity{i:resource.int64Amount{value:1000, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", Format:\"DecimalSI\"}"
        );
        assert_eq!(
            shown(json!("1000"), true),
            "resource.Quantity{i:resource.int64Amount{value:1000, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1k\", Format:\"DecimalSI\"}"
        );
        assert_eq!(
            shown(json!("2G"), false),
            "resource.Quantity{i:resource.int64Amount{value:2, scale:9}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"2G\", Format:\"DecimalSI\"}"
        );
        assert_eq!(
            shown(json!("400Mi"), false),
            "resource.Quantity{i:resource.int64Amount{value:419430400, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"\", Format:\"BinarySI\"}"
        );
        assert_eq!(
            shown(json!("0.5Gi"), false),
            "resource.Quantity{i:resource.int64Amount{value:0, scale:0}, d:resource.infDecAmount{Dec:(*inf.Dec)(0xc000a1c000)}, s:\"\", Format:\"BinarySI\"}"
        );
    }
}
