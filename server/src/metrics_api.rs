//! The resource metrics API, `metrics.k8s.io/v1beta1`, as metrics-server serves it behind
//! kube-apiserver: what `kubectl top` and the HorizontalPodAutoscaler read.
//!
//! | request | answer |
//! |---|---|
//! | `GET /apis/metrics.k8s.io/v1beta1/nodes[?labelSelector&fieldSelector]` | `NodeMetricsList` |
//! | `GET /apis/metrics.k8s.io/v1beta1/nodes/{node}` | `NodeMetrics` |
//! | `GET /apis/metrics.k8s.io/v1beta1[/namespaces/{ns}]/pods[?labelSelector&fieldSelector]` | `PodMetricsList` |
//! | `GET /apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods/{pod}` | `PodMetrics` |
//!
//! Nothing is stored: each request asks the kubelets concerned for their
//! `/stats/summary?only_cpu_and_memory=true`, in parallel, [`SCRAPE_TIMEOUT`] each, through
//! the API server's kubelet client ([`crate::kubelet::KubeletClient::get`]). A node that
//! does not answer is left out (and logged), as are pods and nodes without a CPU rate yet
//! (a kubelet needs two readings): metrics-server's behaviour. Usage is the kubelet's
//! `usageNanoCores` and `workingSetBytes`, written as metrics-server writes them (`cpu` in
//! nanocores, `memory` as a binary quantity: `1234567n`, `71628Ki`).
//!
//! Only get and list are served (watch and writes: 405), as metrics-server; tables
//! (`kubectl get podmetrics`) have its columns. Discovery ([`crate::discovery`]) lists the
//! group so `kubectl top` finds it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use futures::StreamExt;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{json, Value};

use crate::api::ApiState;
use crate::cache::{Filter, FilterView};
use crate::negotiate::{self, Output};
use crate::request::{Query, ResourceRequest};
use crate::status::{ApiError, ApiResult};
use crate::table::IncludeObject;

pub const GROUP: &str = "metrics.k8s.io";
pub const VERSION: &str = "v1beta1";

/// How long one kubelet may take to answer.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

/// How many kubelets are asked at once.
const PARALLEL_SCRAPES: usize = 32;

/// The largest summary read from a kubelet.
const MAX_SUMMARY: usize = 16 * 1024 * 1024;

/// The window reported with every usage: the kubelet's default housekeeping interval, the
/// longest a `usageNanoCores` rate of a running kubelet is measured over (a kubelet
/// measures it between its readings, at least a second apart, at most one interval).
pub const WINDOW: &str = "10s";

// ---------------------------------------------------------------------------------------
// Discovery

/// `/apis/metrics.k8s.io` (and its entry in `/apis`).
pub fn api_group() -> Value {
    let gv = json!({"groupVersion": format!("{GROUP}/{VERSION}"), "version": VERSION});
    json!({"name": GROUP, "versions": [gv.clone()], "preferredVersion": gv})
}

/// `/apis/metrics.k8s.io/v1beta1`.
pub fn resource_list() -> Value {
    let resource = |name: &str, namespaced: bool, kind: &str| json!({"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": ["get", "list"]});
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{GROUP}/{VERSION}"),
        "resources": [resource("nodes", false, "NodeMetrics"), resource("pods", true, "PodMetrics")],
    })
}

/// The group's entry in aggregated discovery (`/apis`, `apidiscovery.k8s.io/v2`).
pub fn aggregated_group() -> Value {
    let resource = |name: &str, scope: &str, kind: &str| {
        json!({
            "resource": name,
            "responseKind": {"group": GROUP, "version": VERSION, "kind": kind},
            "scope": scope,
            "singularResource": "",
            "verbs": ["get", "list"],
        })
    };
    json!({
        "metadata": {"name": GROUP, "creationTimestamp": null},
        "versions": [{
            "version": VERSION,
            "resources": [resource("nodes", "Cluster", "NodeMetrics"), resource("pods", "Namespaced", "PodMetrics")],
            "freshness": "Current",
        }],
    })
}

// ---------------------------------------------------------------------------------------
// Quantities, as apimachinery's resource.Quantity writes them

/// `value`·10^`exponent` in canonical DecimalSI form (`1500m`, `2`, `1234567n`, `5k`).
fn decimal_si(mut value: u64, mut exponent: i32) -> String {
    if value == 0 {
        return "0".into();
    }
    while value.is_multiple_of(10) {
        value /= 10;
        exponent += 1;
    }
    // The exponent becomes a multiple of 3 (the suffixes' steps), rounding it down.
    let down = exponent.rem_euclid(3);
    value = value.saturating_mul(10u64.pow(down as u32));
    exponent -= down;
    let suffix = match exponent {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        0 => "",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => return format!("{value}e{exponent}"),
    };
    format!("{value}{suffix}")
}

/// CPU usage in nanocores, as metrics-server writes it.
pub fn cpu_quantity(nano_cores: u64) -> String {
    decimal_si(nano_cores, -9)
}

/// Bytes as a BinarySI quantity: the largest binary suffix that divides it exactly
/// (`71628Ki`), plain bytes otherwise, and small values in decimal form (`1k`).
pub fn memory_quantity(bytes: u64) -> String {
    if bytes < 1024 {
        return decimal_si(bytes, 0);
    }
    let mut value = bytes;
    let mut steps = 0;
    while value.is_multiple_of(1024) && steps < 6 {
        value /= 1024;
        steps += 1;
    }
    let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][steps];
    format!("{value}{suffix}")
}

fn timestamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

// ---------------------------------------------------------------------------------------
// From kubelet summaries to metrics objects

fn usage(cpu: &Value, memory: &Value) -> Option<Value> {
    let nano_cores = cpu["usageNanoCores"].as_u64()?;
    let working_set = memory["workingSetBytes"].as_u64()?;
    Some(json!({"cpu": cpu_quantity(nano_cores), "memory": memory_quantity(working_set)}))
}

fn metadata(obj: &Value, now: &DateTime<Utc>) -> Value {
    let mut metadata = json!({"name": obj["metadata"]["name"]});
    if let Some(ns) = obj["metadata"]["namespace"].as_str() {
        metadata["namespace"] = json!(ns);
    }
    metadata["creationTimestamp"] = json!(timestamp(now));
    if let Some(labels) = obj["metadata"]["labels"].as_object().filter(|l| !l.is_empty()) {
        metadata["labels"] = Value::Object(labels.clone());
    }
    metadata
}

/// A node's `NodeMetrics` (without kind and apiVersion, as list items) from its kubelet's
/// summary; None until the kubelet has a CPU rate.
pub fn node_metrics(node: &Value, summary: &Value, now: &DateTime<Utc>) -> Option<Value> {
    let stats = &summary["node"];
    let usage = usage(&stats["cpu"], &stats["memory"])?;
    Some(json!({
        "metadata": metadata(node, now),
        "timestamp": stats["cpu"]["time"],
        "window": WINDOW,
        "usage": usage,
    }))
}

/// A pod's `PodMetrics` from its node's summary; None when the summary does not have it
/// or any of its containers lacks a CPU rate or working set (not ready yet).
pub fn pod_metrics(pod: &Value, summary: &Value, now: &DateTime<Utc>) -> Option<Value> {
    let name = pod["metadata"]["name"].as_str()?;
    let namespace = pod["metadata"]["namespace"].as_str()?;
    let uid = pod["metadata"]["uid"].as_str().unwrap_or("");
    let stats = summary["pods"].as_array()?.iter().find(|p| {
        let r = &p["podRef"];
        r["name"] == name
            && r["namespace"] == namespace
            && (uid.is_empty() || r["uid"].as_str().is_none_or(|u| u.is_empty() || u == uid))
    })?;
    let mut containers = Vec::new();
    let mut earliest: Option<&str> = None;
    for c in stats["containers"].as_array()? {
        let usage = usage(&c["cpu"], &c["memory"])?;
        containers.push(json!({"name": c["name"], "usage": usage}));
        let time = c["cpu"]["time"].as_str();
        if let Some(t) = time.filter(|t| earliest.is_none_or(|e| t < &e)) {
            earliest = Some(t);
        }
    }
    if containers.is_empty() {
        return None;
    }
    Some(json!({
        "metadata": metadata(pod, now),
        "timestamp": earliest,
        "window": WINDOW,
        "containers": containers,
    }))
}

// ---------------------------------------------------------------------------------------
// Serving

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Node,
    Pod,
}

impl Kind {
    fn plural(self) -> &'static str {
        match self {
            Kind::Node => "nodes",
            Kind::Pod => "pods",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Kind::Node => "NodeMetrics",
            Kind::Pod => "PodMetrics",
        }
    }

    /// The group resource metrics-server names in its errors.
    fn error_resource(self) -> &'static str {
        match self {
            Kind::Node => "nodemetrics",
            Kind::Pod => "podmetrics",
        }
    }
}

/// Serves a request for `metrics.k8s.io` (see the module documentation).
pub async fn serve(
    state: &ApiState,
    method: &Method,
    headers: &HeaderMap,
    query: &Query,
    r: &ResourceRequest,
) -> ApiResult<Response> {
    if r.version != VERSION || r.subresource.is_some() {
        return Err(ApiError::path_not_found());
    }
    let kind = match (r.resource.as_str(), &r.namespace) {
        ("nodes", None) => Kind::Node,
        ("pods", _) => Kind::Pod,
        _ => return Err(ApiError::path_not_found()),
    };
    match r.verb {
        "get" | "list" if matches!(*method, Method::GET | Method::HEAD) => {}
        "watch" => {
            let mut e = ApiError::method_not_allowed(format!(
                "watch is not supported on resources of kind \"{}.{GROUP}\"",
                kind.plural()
            ));
            e.details.group = Some(GROUP.into());
            e.details.kind = Some(kind.plural().into());
            return Err(e);
        }
        _ => {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ))
        }
    }
    let output = negotiate::output(negotiate::accept(headers), false)?;
    let ns = r.namespace.as_deref();
    let now = Utc::now();
    let items = match (&r.name, kind) {
        (Some(name), Kind::Node) => vec![get_node(state, name, &now).await?],
        (Some(name), Kind::Pod) => {
            vec![get_pod(state, ns.unwrap_or_default(), name, &now).await?]
        }
        (None, Kind::Node) => list_nodes(state, &filter(query)?, &now).await?,
        (None, Kind::Pod) => list_pods(state, ns, &filter(query)?, &now).await?,
    };
    let api_version = format!("{GROUP}/{VERSION}");
    if let Output::Table { v1beta1 } = output {
        let include = IncludeObject::parse(query.get("includeObject").map(String::as_str));
        let table = table(kind, &items, include, v1beta1, &api_version);
        return Ok(negotiate::respond(StatusCode::OK, &table, Output::Json, &[]).into_response());
    }
    let body = if r.name.is_some() {
        let mut item = items.into_iter().next().unwrap_or_default();
        if let Some(obj) = item.as_object_mut() {
            let mut typed = serde_json::Map::new();
            typed.insert("kind".into(), json!(kind.kind()));
            typed.insert("apiVersion".into(), json!(api_version));
            typed.append(obj);
            *obj = typed;
        }
        item
    } else {
        json!({
            "kind": format!("{}List", kind.kind()),
            "apiVersion": api_version,
            "metadata": {},
            "items": items,
        })
    };
    Ok(negotiate::respond(StatusCode::OK, &body, output, &[]).into_response())
}

/// The label and field selectors of a list (fields: `metadata.name`, and for pods
/// `metadata.namespace`, as metrics-server).
fn filter(query: &Query) -> ApiResult<Filter> {
    let (labels, fields) = crate::handlers::selectors(query)?;
    Ok(Filter::new(move |view: &FilterView<'_>| {
        if labels.as_ref().is_some_and(|l| !l.matches(view.labels)) {
            return false;
        }
        fields.as_ref().is_none_or(|f| {
            f.matches_with(|field| match field {
                "metadata.name" => Some(view.name.to_string()),
                "metadata.namespace" => view
                    .fields
                    .iter()
                    .find(|(f, _)| *f == "metadata.namespace")
                    .map(|(_, v)| v.clone()),
                _ => None,
            })
        })
    }))
}

fn core(plural: &str) -> &'static rkube_apis::resources::ResourceInfo {
    rkube_apis::resources::Resources::builtin().get("", "v1", plural).expect("built-in resource")
}

/// The objects of a core resource from the watch cache (as they are now: metrics need no
/// consistent read).
fn cached(
    state: &ApiState,
    plural: &str,
    ns: Option<&str>,
    filter: &Filter,
) -> ApiResult<Vec<Value>> {
    let info = core(plural);
    let cache = state.registry.cache(info)?;
    let (objects, _) = cache.list(&state.registry.prefix(info, ns)?, filter);
    Ok(objects.iter().map(|o| o.value()).collect())
}

async fn get_node(state: &ApiState, name: &str, now: &DateTime<Utc>) -> ApiResult<Value> {
    let node = state.registry.get(core("nodes"), None, name).await?;
    let summaries = scrape(state, std::slice::from_ref(&node)).await;
    summaries
        .get(name)
        .and_then(|s| node_metrics(&node, s, now))
        .ok_or_else(|| ApiError::not_found(GROUP, Kind::Node.error_resource(), name))
}

async fn list_nodes(
    state: &ApiState,
    filter: &Filter,
    now: &DateTime<Utc>,
) -> ApiResult<Vec<Value>> {
    let mut nodes = cached(state, "nodes", None, filter)?;
    nodes.sort_by(|a, b| a["metadata"]["name"].as_str().cmp(&b["metadata"]["name"].as_str()));
    let summaries = scrape(state, &nodes).await;
    Ok(nodes
        .iter()
        .filter_map(|node| {
            let summary = summaries.get(node["metadata"]["name"].as_str()?)?;
            node_metrics(node, summary, now)
        })
        .collect())
}

async fn get_pod(state: &ApiState, ns: &str, name: &str, now: &DateTime<Utc>) -> ApiResult<Value> {
    let pod = state.registry.get(core("pods"), Some(ns), name).await?;
    let found = metrics_of_pods(state, std::slice::from_ref(&pod), now).await?;
    found.into_iter().next().ok_or_else(|| {
        ApiError::not_found(GROUP, Kind::Pod.error_resource(), &format!("{ns}/{name}"))
    })
}

async fn list_pods(
    state: &ApiState,
    ns: Option<&str>,
    filter: &Filter,
    now: &DateTime<Utc>,
) -> ApiResult<Vec<Value>> {
    let mut pods = cached(state, "pods", ns, filter)?;
    pods.sort_by(|a, b| {
        let key = |p: &Value| {
            (
                p["metadata"]["namespace"].as_str().unwrap_or("").to_string(),
                p["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        };
        key(a).cmp(&key(b))
    });
    metrics_of_pods(state, &pods, now).await
}

/// The metrics of those of `pods` their kubelets have figures for, in the same order.
async fn metrics_of_pods(
    state: &ApiState,
    pods: &[Value],
    now: &DateTime<Utc>,
) -> ApiResult<Vec<Value>> {
    let wanted: HashSet<&str> = pods
        .iter()
        .filter_map(|p| p["spec"]["nodeName"].as_str())
        .filter(|n| !n.is_empty())
        .collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let all = Filter::everything();
    let nodes: Vec<Value> = cached(state, "nodes", None, &all)?
        .into_iter()
        .filter(|n| n["metadata"]["name"].as_str().is_some_and(|name| wanted.contains(name)))
        .collect();
    let summaries = scrape(state, &nodes).await;
    Ok(pods
        .iter()
        .filter_map(|pod| {
            let summary = summaries.get(pod["spec"]["nodeName"].as_str()?)?;
            pod_metrics(pod, summary, now)
        })
        .collect())
}

/// The summaries of `nodes`' kubelets, by node name; the nodes that fail are logged and
/// left out.
async fn scrape(state: &ApiState, nodes: &[Value]) -> HashMap<String, Value> {
    // The futures made first: a closure in the stream's type trips the handler's `Send`
    // check over lifetimes.
    let pending: Vec<_> = nodes.iter().map(|node| scrape_one(state, node)).collect();
    let results: Vec<(String, Result<Value, String>)> =
        futures::stream::iter(pending).buffer_unordered(PARALLEL_SCRAPES).collect().await;
    let mut out = HashMap::new();
    let mut failed = BTreeMap::new();
    for (name, result) in results {
        match result {
            Ok(summary) => {
                out.insert(name, summary);
            }
            Err(e) => {
                failed.insert(name, e);
            }
        }
    }
    if !failed.is_empty() {
        let some: Vec<String> = failed.iter().take(5).map(|(n, e)| format!("{n}: {e}")).collect();
        tracing::warn!(
            failed = failed.len(),
            "metrics: nodes left out, their kubelets' stats could not be read ({})",
            some.join("; ")
        );
    }
    out
}

async fn scrape_one(state: &ApiState, node: &Value) -> (String, Result<Value, String>) {
    let name = node["metadata"]["name"].as_str().unwrap_or("").to_string();
    let fetched = tokio::time::timeout(SCRAPE_TIMEOUT, summary_of(state, node, &name))
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {SCRAPE_TIMEOUT:?}")));
    (name, fetched)
}

async fn summary_of(state: &ApiState, node: &Value, name: &str) -> Result<Value, String> {
    let (code, body) =
        state.kubelet.get(node, "/stats/summary?only_cpu_and_memory=true", MAX_SUMMARY).await?;
    if code != 200 {
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        return Err(format!("the kubelet answered {code}: {}", text.trim()));
    }
    let summary: Value =
        serde_json::from_slice(&body).map_err(|e| format!("the summary is not JSON: {e}"))?;
    // The address may be another node's kubelet (simulated nodes share one): its figures
    // are not this node's.
    match summary["node"]["nodeName"].as_str() {
        Some(n) if n == name => Ok(summary),
        other => Err(format!("the kubelet there is node {:?}'s", other.unwrap_or(""))),
    }
}

/// metrics-server's table: name, the usage (summed over a pod's containers), the window.
fn table(
    kind: Kind,
    items: &[Value],
    include: IncludeObject,
    v1beta1: bool,
    api_version: &str,
) -> Value {
    let columns = json!([
        {"name": "Name", "type": "string", "format": "name", "description": "Name of the resource", "priority": 0},
        {"name": "cpu", "type": "string", "format": "quantity", "description": "", "priority": 0},
        {"name": "memory", "type": "string", "format": "quantity", "description": "", "priority": 0},
        {"name": "Window", "type": "string", "format": "duration", "description": "", "priority": 0},
    ]);
    let total = |item: &Value, resource: &str, parse: fn(&str) -> Option<i64>| -> i64 {
        match kind {
            Kind::Node => item["usage"][resource].as_str().and_then(parse).unwrap_or(0),
            Kind::Pod => item["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["usage"][resource].as_str().and_then(parse))
                .sum(),
        }
    };
    let rows: Vec<Value> = items
        .iter()
        .map(|item| {
            let nano = total(item, "cpu", nano_of);
            let bytes = total(item, "memory", rkube_apis::quantity::parse_units);
            let cells = json!([
                item["metadata"]["name"],
                cpu_quantity(nano.max(0) as u64),
                memory_quantity(bytes.max(0) as u64),
                item["window"],
            ]);
            let mut object = item.clone();
            object["kind"] = json!(kind.kind());
            object["apiVersion"] = json!(api_version);
            crate::table::row_of(cells, &object, include)
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": if v1beta1 { "meta.k8s.io/v1beta1" } else { "meta.k8s.io/v1" },
        "metadata": {},
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// A CPU quantity in nanocores.
fn nano_of(q: &str) -> Option<i64> {
    let (number, scale) = match q.char_indices().last()? {
        (i, 'n') => (&q[..i], 1),
        (i, 'u') => (&q[..i], 1_000),
        (i, 'm') => (&q[..i], 1_000_000),
        _ => (q, 1_000_000_000),
    };
    number.parse::<i64>().ok().map(|n| n.saturating_mul(scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_are_written_as_metrics_server_writes_them() {
        assert_eq!(cpu_quantity(0), "0");
        assert_eq!(cpu_quantity(1_234_567), "1234567n");
        assert_eq!(cpu_quantity(1_500_000_000), "1500m");
        assert_eq!(cpu_quantity(1_000_000_000), "1");
        assert_eq!(cpu_quantity(250_000_000), "250m");
        assert_eq!(cpu_quantity(2_000), "2u");
        assert_eq!(cpu_quantity(123_450), "123450n");
        assert_eq!(memory_quantity(0), "0");
        assert_eq!(memory_quantity(512), "512");
        assert_eq!(memory_quantity(1000), "1k");
        assert_eq!(memory_quantity(71_628 * 1024), "71628Ki");
        assert_eq!(memory_quantity(64 * 1024 * 1024), "64Mi");
        assert_eq!(memory_quantity(12_345_678), "12345678");
        assert_eq!(nano_of("1500m"), Some(1_500_000_000));
        assert_eq!(nano_of("1234567n"), Some(1_234_567));
        assert_eq!(nano_of("2"), Some(2_000_000_000));
    }

    fn summary() -> Value {
        json!({
            "node": {
                "nodeName": "n1",
                "cpu": {"time": "2025-01-02T03:04:05Z", "usageNanoCores": 250_000_000u64, "usageCoreNanoSeconds": 9},
                "memory": {"time": "2025-01-02T03:04:05Z", "workingSetBytes": 2_097_152u64},
            },
            "pods": [
                {
                    "podRef": {"name": "web", "namespace": "default", "uid": "u1"},
                    "containers": [
                        {"name": "app", "cpu": {"time": "2025-01-02T03:04:06Z", "usageNanoCores": 500_000_000u64}, "memory": {"workingSetBytes": 67_108_864u64}},
                        {"name": "side", "cpu": {"time": "2025-01-02T03:04:05Z", "usageNanoCores": 1_234u64}, "memory": {"workingSetBytes": 4096u64}},
                    ],
                },
                {
                    "podRef": {"name": "fresh", "namespace": "default", "uid": "u2"},
                    "containers": [{"name": "app", "cpu": {"time": "2025-01-02T03:04:06Z"}, "memory": {"workingSetBytes": 1u64}}],
                },
            ],
        })
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2025-01-02T03:04:10Z").unwrap().to_utc()
    }

    #[test]
    fn node_metrics_take_the_nodes_labels_and_the_kubelets_figures() {
        let node = json!({"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}, "uid": "x"}});
        assert_eq!(
            node_metrics(&node, &summary(), &now()).unwrap(),
            json!({
                "metadata": {"name": "n1", "creationTimestamp": "2025-01-02T03:04:10Z", "labels": {"kubernetes.io/hostname": "n1"}},
                "timestamp": "2025-01-02T03:04:05Z",
                "window": "10s",
                "usage": {"cpu": "250m", "memory": "2Mi"},
            })
        );
        // No rate yet: no metrics.
        let mut early = summary();
        early["node"]["cpu"].as_object_mut().unwrap().remove("usageNanoCores");
        assert_eq!(node_metrics(&node, &early, &now()), None);
    }

    #[test]
    fn pod_metrics_list_containers_once_all_have_figures() {
        let pod = json!({"metadata": {"name": "web", "namespace": "default", "uid": "u1", "labels": {"app": "web"}}});
        assert_eq!(
            pod_metrics(&pod, &summary(), &now()).unwrap(),
            json!({
                "metadata": {"name": "web", "namespace": "default", "creationTimestamp": "2025-01-02T03:04:10Z", "labels": {"app": "web"}},
                "timestamp": "2025-01-02T03:04:05Z",
                "window": "10s",
                "containers": [
                    {"name": "app", "usage": {"cpu": "500m", "memory": "64Mi"}},
                    {"name": "side", "usage": {"cpu": "1234n", "memory": "4Ki"}},
                ],
            })
        );
        let fresh = json!({"metadata": {"name": "fresh", "namespace": "default", "uid": "u2"}});
        assert_eq!(pod_metrics(&fresh, &summary(), &now()), None, "a container without a rate");
        // Another pod of the same name (recreated): not its figures.
        let other = json!({"metadata": {"name": "web", "namespace": "default", "uid": "u9"}});
        assert_eq!(pod_metrics(&other, &summary(), &now()), None);
        let elsewhere = json!({"metadata": {"name": "web", "namespace": "other", "uid": "u1"}});
        assert_eq!(pod_metrics(&elsewhere, &summary(), &now()), None);
    }

    #[test]
    fn tables_sum_a_pods_containers() {
        let pod = json!({"metadata": {"name": "web", "namespace": "default", "uid": "u1"}});
        let item = pod_metrics(&pod, &summary(), &now()).unwrap();
        let t = table(Kind::Pod, &[item], IncludeObject::Metadata, false, "metrics.k8s.io/v1beta1");
        assert_eq!(t["rows"][0]["cells"], json!(["web", "500001234n", "65540Ki", "10s"]));
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["Name", "cpu", "memory", "Window"]);
    }

    #[test]
    fn discovery_lists_nodes_and_pods_read_only() {
        let list = resource_list();
        assert_eq!(list["groupVersion"], "metrics.k8s.io/v1beta1");
        assert_eq!(list["resources"][0]["kind"], "NodeMetrics");
        assert_eq!(list["resources"][1]["namespaced"], true);
        assert_eq!(list["resources"][1]["verbs"], json!(["get", "list"]));
        let group = aggregated_group();
        assert_eq!(group["versions"][0]["resources"][1]["scope"], "Namespaced");
        assert_eq!(api_group()["preferredVersion"]["groupVersion"], "metrics.k8s.io/v1beta1");
    }
}
