//! The checks of a LimitRange's `min`, `max` and `maxLimitRequestRatio`, each producing
//! upstream's message when a container, a pod or a claim falls outside them. Values compare
//! as upstream compares them: in thousandths rounded up (`MilliValue`), or in whole units
//! (`Value`) when a value is too large for thousandths to fit in 64 bits.

use rkube_apis::quantity::Quantity;
use serde_json::Value;

use super::resources::{
    pod_total, LimitRange, Requirements, ResourceList, CONTAINER, PERSISTENT_VOLUME_CLAIM, POD,
};

/// The largest value whose thousandths fit in an `int64` (upstream's `MaxMilliValue`).
const MAX_MILLI_VALUE: i128 = (i64::MAX / 1000) as i128;

/// The request, limit and enforced value at a common precision (upstream's
/// `requestLimitEnforcedValues`): an absent request or limit counts as zero.
fn comparable(
    request: Option<&Quantity>,
    limit: Option<&Quantity>,
    enforced: &Quantity,
) -> [i128; 3] {
    let all =
        [request.map_or(0, Quantity::value), limit.map_or(0, Quantity::value), enforced.value()];
    if all.iter().all(|v| *v <= MAX_MILLI_VALUE) {
        [
            request.map_or(0, Quantity::milli_value),
            limit.map_or(0, Quantity::milli_value),
            enforced.milli_value(),
        ]
    } else {
        all
    }
}

/// `min`: a request must be there and neither it nor the limit may be below the minimum.
fn min(kind: &str, name: &str, enforced: &Quantity, r: &Requirements) -> Option<String> {
    let (request, limit) = (r.requests.get(name), r.limits.get(name));
    let [req, lim, min] = comparable(request, limit, enforced);
    let min_text = enforced.canonical();
    let Some(request) = request else {
        return Some(format!(
            "minimum {name} usage per {kind} is {min_text}.  No request is specified"
        ));
    };
    if req < min {
        return Some(format!(
            "minimum {name} usage per {kind} is {min_text}, but request is {}",
            request.canonical()
        ));
    }
    match limit {
        Some(limit) if lim < min => Some(format!(
            "minimum {name} usage per {kind} is {min_text}, but limit is {}",
            limit.canonical()
        )),
        _ => None,
    }
}

/// `max`: a limit must be there and neither it nor the request may be above the maximum.
fn max(kind: &str, name: &str, enforced: &Quantity, r: &Requirements) -> Option<String> {
    let (request, limit) = (r.requests.get(name), r.limits.get(name));
    let [req, lim, max] = comparable(request, limit, enforced);
    let max_text = enforced.canonical();
    let Some(limit) = limit else {
        return Some(format!(
            "maximum {name} usage per {kind} is {max_text}.  No limit is specified"
        ));
    };
    if lim > max {
        return Some(format!(
            "maximum {name} usage per {kind} is {max_text}, but limit is {}",
            limit.canonical()
        ));
    }
    match request {
        Some(request) if req > max => Some(format!(
            "maximum {name} usage per {kind} is {max_text}, but request is {}",
            request.canonical()
        )),
        _ => None,
    }
}

/// `max` where only requests count (claims: upstream's `maxRequestConstraint`).
fn max_request(
    kind: &str,
    name: &str,
    enforced: &Quantity,
    requests: &ResourceList,
) -> Option<String> {
    let request = requests.get(name);
    let [req, _, max] = comparable(request, None, enforced);
    let max_text = enforced.canonical();
    let Some(request) = request else {
        return Some(format!(
            "maximum {name} usage per {kind} is {max_text}.  No request is specified"
        ));
    };
    (req > max).then(|| {
        format!(
            "maximum {name} usage per {kind} is {max_text}, but request is {}",
            request.canonical()
        )
    })
}

/// `maxLimitRequestRatio`: both must be there and non-zero, and the limit at most the ratio
/// times the request. The ratio is computed and shown as a float, as upstream does.
fn ratio(kind: &str, name: &str, enforced: &Quantity, r: &Requirements) -> Option<String> {
    let (request, limit) = (r.requests.get(name), r.limits.get(name));
    let [req, lim, _] = comparable(request, limit, enforced);
    let shown = enforced.canonical();
    if request.is_none() || req == 0 {
        return Some(format!(
            "{name} max limit to request ratio per {kind} is {shown}, but no request is specified or request is 0"
        ));
    }
    if limit.is_none() || lim == 0 {
        return Some(format!(
            "{name} max limit to request ratio per {kind} is {shown}, but no limit is specified or limit is 0"
        ));
    }
    let observed = lim as f64 / req as f64;
    let (scaled, allowed) = if enforced.value() <= MAX_MILLI_VALUE {
        (observed * 1000.0, enforced.milli_value() as f64)
    } else {
        (observed, enforced.value() as f64)
    };
    (scaled > allowed).then(|| {
        format!("{name} max limit to request ratio per {kind} is {shown}, but provided ratio is {observed:.6}")
    })
}

/// Every check of `item`'s kind on one set of requirements, in upstream's order: the
/// minimums, the maximums, the ratios (each by resource name).
fn check_all(kind: &str, item: &super::resources::Item, r: &Requirements, out: &mut Vec<String>) {
    out.extend(item.min.iter().filter_map(|(name, q)| min(kind, name, q, r)));
    out.extend(item.max.iter().filter_map(|(name, q)| max(kind, name, q, r)));
    out.extend(item.max_limit_request_ratio.iter().filter_map(|(name, q)| ratio(kind, name, q, r)));
}

/// What of the pod falls outside `limit_range` (upstream's `PodValidateLimitFunc`): each
/// container and init container against the Container items, the pod's totals against the
/// Pod items.
pub fn pod_violations(limit_range: &LimitRange, pod: &Value) -> Vec<String> {
    let spec = &pod["spec"];
    let mut out = Vec::new();
    for item in &limit_range.items {
        match item.kind.as_str() {
            CONTAINER => {
                for field in ["containers", "initContainers"] {
                    for container in spec[field].as_array().map(Vec::as_slice).unwrap_or_default() {
                        check_all(CONTAINER, item, &Requirements::of(container), &mut out);
                    }
                }
            }
            POD => {
                let totals = Requirements {
                    requests: pod_total(spec, "requests"),
                    limits: pod_total(spec, "limits"),
                };
                check_all(POD, item, &totals, &mut out);
            }
            _ => {}
        }
    }
    out
}

/// What of the claim falls outside `limit_range` (upstream's
/// `PersistentVolumeClaimValidateLimitFunc`): only its storage requests count.
pub fn claim_violations(limit_range: &LimitRange, claim: &Value) -> Vec<String> {
    let requests = super::resources::resource_list(&claim["spec"]["resources"]["requests"]);
    let only_requests = Requirements { requests: requests.clone(), limits: ResourceList::new() };
    let mut out = Vec::new();
    for item in limit_range.items.iter().filter(|i| i.kind == PERSISTENT_VOLUME_CLAIM) {
        let kind = PERSISTENT_VOLUME_CLAIM;
        out.extend(item.min.iter().filter_map(|(name, q)| min(kind, name, q, &only_requests)));
        out.extend(item.max.iter().filter_map(|(name, q)| max_request(kind, name, q, &requests)));
    }
    out
}

/// The violations as one message, as upstream's error aggregate prints them: alone as they
/// are, several (repeats dropped) in brackets.
pub fn aggregate(violations: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for v in violations {
        if !seen.contains(&v.as_str()) {
            seen.push(v);
        }
    }
    match seen.as_slice() {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limit_range(items: Value) -> LimitRange {
        LimitRange::read(&json!({"spec": {"limits": items}}))
    }

    fn pod(containers: Value) -> Value {
        json!({"spec": {"containers": containers}})
    }

    fn container(requests: Value, limits: Value) -> Value {
        json!({"name": "c", "resources": {"requests": requests, "limits": limits}})
    }

    #[test]
    fn container_min_max_and_ratio_read_as_upstream() {
        let lr = limit_range(json!([{"type": "Container",
            "min": {"cpu": "100m", "memory": "64Mi"}, "max": {"cpu": "1", "memory": "1Gi"},
            "maxLimitRequestRatio": {"cpu": "2"}}]));
        let ok = pod(json!([container(
            json!({"cpu": "500m", "memory": "128Mi"}),
            json!({"cpu": "1", "memory": "1Gi"})
        )]));
        assert_eq!(pod_violations(&lr, &ok), Vec::<String>::new());
        let over = pod(json!([container(
            json!({"cpu": "500m", "memory": "128Mi"}),
            json!({"cpu": "2", "memory": "2Gi"})
        )]));
        assert_eq!(
            pod_violations(&lr, &over),
            [
                "maximum cpu usage per Container is 1, but limit is 2",
                "maximum memory usage per Container is 1Gi, but limit is 2Gi",
                "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000",
            ]
        );
        let under =
            pod(json!([container(json!({"cpu": "50m"}), json!({"cpu": "60m", "memory": "32Mi"}))]));
        assert_eq!(
            pod_violations(&lr, &under),
            [
                "minimum cpu usage per Container is 100m, but request is 50m",
                "minimum memory usage per Container is 64Mi.  No request is specified",
            ]
        );
        let no_limit = pod(json!([container(json!({"cpu": "250m", "memory": "64Mi"}), json!({}))]));
        assert_eq!(
            pod_violations(&lr, &no_limit),
            [
                "maximum cpu usage per Container is 1.  No limit is specified",
                "maximum memory usage per Container is 1Gi.  No limit is specified",
                "cpu max limit to request ratio per Container is 2, but no limit is specified or limit is 0",
            ]
        );
        let ratio = pod(json!([container(json!({"cpu": "400m"}), json!({"cpu": "1"}))]));
        let ratio_only =
            limit_range(json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "2"}}]));
        assert_eq!(
            pod_violations(&ratio_only, &ratio),
            ["cpu max limit to request ratio per Container is 2, but provided ratio is 2.500000"]
        );
    }

    #[test]
    fn values_compare_in_thousandths_rounded_up() {
        let lr = limit_range(json!([{"type": "Container", "max": {"cpu": "100m"}}]));
        // 100.1m rounds up to 101m: over. 99.9999m rounds up to 100m: within.
        let over = pod(json!([container(json!({}), json!({"cpu": "100100u"}))]));
        assert_eq!(
            pod_violations(&lr, &over),
            ["maximum cpu usage per Container is 100m, but limit is 100100u"]
        );
        let within = pod(json!([container(json!({}), json!({"cpu": "99999900n"}))]));
        assert!(pod_violations(&lr, &within).is_empty());
        // Past what thousandths of an int64 can hold, whole units compare.
        let huge = limit_range(json!([{"type": "Container", "max": {"memory": "4Ei"}}]));
        let big = pod(json!([container(json!({}), json!({"memory": "4Ei"}))]));
        assert!(pod_violations(&huge, &big).is_empty());
        let bigger = pod(json!([container(json!({}), json!({"memory": "5Ei"}))]));
        assert_eq!(
            pod_violations(&huge, &bigger),
            ["maximum memory usage per Container is 4Ei, but limit is 5Ei"]
        );
    }

    #[test]
    fn pod_items_check_the_pod_totals() {
        let lr =
            limit_range(json!([{"type": "Pod", "max": {"cpu": "1"}, "min": {"memory": "100Mi"}}]));
        let two = pod(json!([
            container(json!({"cpu": "300m", "memory": "32Mi"}), json!({"cpu": "600m"})),
            container(json!({"cpu": "300m", "memory": "32Mi"}), json!({"cpu": "600m"})),
        ]));
        assert_eq!(
            pod_violations(&lr, &two),
            [
                "minimum memory usage per Pod is 100Mi, but request is 64Mi",
                "maximum cpu usage per Pod is 1, but limit is 1200m",
            ]
        );
        // A container without a limit adds nothing to the pod's total limit (upstream's
        // `podLimits` since sidecars; before, it left the pod without one).
        let one_unlimited = pod(json!([
            container(json!({"cpu": "300m", "memory": "64Mi"}), json!({"cpu": "600m"})),
            container(json!({"cpu": "300m", "memory": "64Mi"}), json!({})),
        ]));
        assert!(pod_violations(&lr, &one_unlimited).is_empty());
    }

    #[test]
    fn claims_check_their_storage_request() {
        let lr = limit_range(json!([{"type": "PersistentVolumeClaim",
            "min": {"storage": "1Gi"}, "max": {"storage": "2Gi"}}]));
        let claim = |size: &str| json!({"spec": {"resources": {"requests": {"storage": size}}}});
        assert!(claim_violations(&lr, &claim("1536Mi")).is_empty());
        assert_eq!(
            claim_violations(&lr, &claim("500Mi")),
            ["minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"]
        );
        assert_eq!(
            claim_violations(&lr, &claim("5Gi")),
            ["maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"]
        );
        assert_eq!(
            claim_violations(&lr, &json!({"spec": {}})),
            [
                "minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified",
                "maximum storage usage per PersistentVolumeClaim is 2Gi.  No request is specified",
            ]
        );
        // Container items do not apply to claims, nor claim items to pods.
        assert!(pod_violations(&lr, &pod(json!([container(json!({}), json!({}))]))).is_empty());
    }

    #[test]
    fn violations_aggregate_as_upstream_errors() {
        let v = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(aggregate(&v(&["a"])), "a");
        assert_eq!(aggregate(&v(&["a", "b", "a"])), "[a, b]");
        assert_eq!(aggregate(&v(&["a", "a"])), "a");
    }
}
