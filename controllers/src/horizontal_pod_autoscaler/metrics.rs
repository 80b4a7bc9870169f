//! Where the HPA's metrics come from, through the API server only, as upstream's REST
//! metrics client reads them:
//!
//! - resource metrics (`cpu`, `memory`, of whole pods or one container) from
//!   `metrics.k8s.io/v1beta1` PodMetrics, which rkube's API server serves from the kubelets'
//!   stats;
//! - custom metrics (of pods, or of one object) from `custom.metrics.k8s.io`, at the version
//!   discovery offers (`v1beta2` or `v1beta1`): when no server provides that group (rkube
//!   serves none itself), the request fails as upstream's does, with "no custom metrics API
//!   (custom.metrics.k8s.io) registered";
//! - external metrics from `external.metrics.k8s.io/v1beta1`, asked for directly (as upstream:
//!   when no server provides it, the API server's 404 is the error).
//!
//! Values are read in thousandths (upstream's `MilliValue`, rounded up).

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
use kube::Client;
use rkube_apis::quantity::parse_milli;
use serde_json::Value;

use super::replica_calculator::{PodMetric, PodMetrics};
use crate::api_errors::message;

const CUSTOM_GROUP: &str = "custom.metrics.k8s.io";
/// The custom metrics versions upstream's client speaks, preferred first.
const CUSTOM_VERSIONS: [&str; 2] = ["v1beta2", "v1beta1"];
const EXTERNAL_API: &str = "external.metrics.k8s.io/v1beta1";

/// Why metrics could not be read, in upstream's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MetricsError {
    #[error("unable to fetch metrics from resource metrics API: {0}")]
    ResourceApi(String),
    #[error("no metrics returned from resource metrics API")]
    NoResourceMetrics,
    #[error("unable to fetch metrics from custom metrics API: {0}")]
    CustomApi(String),
    #[error("no metrics returned from custom metrics API")]
    NoCustomMetrics,
    #[error("unable to fetch metrics from external metrics API: {0}")]
    ExternalApi(String),
    #[error("no metrics returned from external metrics API")]
    NoExternalMetrics,
}

/// Reads metrics as the HPA controller's account.
pub struct MetricsClient {
    client: Client,
}

/// The object a custom object metric describes, resolved to its resource.
pub struct DescribedObject<'a> {
    pub kind: &'a str,
    pub group: &'a str,
    pub name: &'a str,
    /// The resource's plural and whether it is namespaced (`None` when the kind is unknown).
    pub resource: Option<(String, bool)>,
}

impl MetricsClient {
    pub fn new(client: Client) -> MetricsClient {
        MetricsClient { client }
    }

    /// `resource` usage of the pods `selector` selects in `namespace` (of `container` only,
    /// when named), and the first sample's time.
    pub async fn resource_metric(
        &self,
        namespace: &str,
        selector: &str,
        resource: &str,
        container: &str,
    ) -> Result<(PodMetrics, Option<Timestamp>), MetricsError> {
        let api_resource = ApiResource {
            group: "metrics.k8s.io".into(),
            version: "v1beta1".into(),
            api_version: "metrics.k8s.io/v1beta1".into(),
            kind: "PodMetrics".into(),
            plural: "pods".into(),
        };
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &api_resource);
        let listed = api
            .list(&ListParams::default().labels(selector))
            .await
            .map_err(|e| MetricsError::ResourceApi(message(&e)))?;
        let items: Vec<Value> =
            listed.items.iter().filter_map(|o| serde_json::to_value(o).ok()).collect();
        if items.is_empty() {
            return Err(MetricsError::NoResourceMetrics);
        }
        let timestamp = parse_time(&items[0]["timestamp"]);
        Ok((pod_metrics(&items, resource, container), timestamp))
    }

    /// The custom metrics API's version, as upstream's client chooses it from discovery.
    async fn custom_version(&self) -> Result<String, MetricsError> {
        let groups = self
            .client
            .list_api_groups()
            .await
            .map_err(|e| MetricsError::CustomApi(message(&e)))?;
        let group = groups.groups.iter().find(|g| g.name == CUSTOM_GROUP).ok_or_else(|| {
            MetricsError::CustomApi(format!("no custom metrics API ({CUSTOM_GROUP}) registered"))
        })?;
        let known = |gv: &str| {
            CUSTOM_VERSIONS.iter().find(|v| gv == format!("{CUSTOM_GROUP}/{v}")).copied()
        };
        group
            .preferred_version
            .as_ref()
            .and_then(|p| known(&p.group_version))
            .or_else(|| group.versions.iter().find_map(|v| known(&v.group_version)))
            .map(String::from)
            .ok_or_else(|| {
                MetricsError::CustomApi("no known available metric versions found".into())
            })
    }

    async fn get_json(&self, path: &str, query: &[(&str, &str)]) -> Result<Value, kube::Error> {
        let mut url = path.to_string();
        let pairs: Vec<(&str, &str)> =
            query.iter().filter(|(_, v)| !v.is_empty()).copied().collect();
        if !pairs.is_empty() {
            let mut encoded = form_urlencoded::Serializer::new(String::new());
            encoded.extend_pairs(pairs);
            url = format!("{url}?{}", encoded.finish());
        }
        let request = http::Request::get(url).body(Vec::new()).map_err(kube::Error::HttpError)?;
        self.client.request::<Value>(request).await
    }

    /// A custom metric of every pod `selector` selects (upstream's `GetRawMetric`).
    pub async fn pods_metric(
        &self,
        metric: &str,
        namespace: &str,
        selector: &str,
        metric_selector: &str,
    ) -> Result<PodMetrics, MetricsError> {
        let version = self.custom_version().await?;
        let path = format!("/apis/{CUSTOM_GROUP}/{version}/namespaces/{namespace}/pods/*/{metric}");
        let query = [("labelSelector", selector), ("metricLabelSelector", metric_selector)];
        let list =
            self.get_json(&path, &query).await.map_err(|e| MetricsError::CustomApi(message(&e)))?;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        if items.is_empty() {
            return Err(MetricsError::NoCustomMetrics);
        }
        let mut metrics = PodMetrics::new();
        for item in &items {
            let Some(name) = item["describedObject"]["name"].as_str() else { continue };
            let value = milli(&item["value"]).unwrap_or_default();
            let window =
                item["windowSeconds"].as_u64().map_or(Duration::from_secs(60), Duration::from_secs);
            let timestamp = parse_time(&item["timestamp"]).unwrap_or(Timestamp::UNIX_EPOCH);
            metrics.insert(name.to_string(), PodMetric { timestamp, window, value });
        }
        Ok(metrics)
    }

    /// A custom metric of one object (upstream's `GetObjectMetric`): in thousandths.
    pub async fn object_metric(
        &self,
        metric: &str,
        namespace: &str,
        object: &DescribedObject<'_>,
        metric_selector: &str,
    ) -> Result<i64, MetricsError> {
        let version = self.custom_version().await?;
        let base = format!("/apis/{CUSTOM_GROUP}/{version}");
        let path = if object.kind == "Namespace" && object.group.is_empty() {
            // The HPA's own namespace, whatever the reference names.
            format!("{base}/namespaces/{namespace}/metrics/{metric}")
        } else {
            let Some((plural, namespaced)) = &object.resource else {
                return Err(MetricsError::CustomApi(format!(
                    "no matches for kind {} in group {}",
                    rkube_apis::go_quote(object.kind),
                    rkube_apis::go_quote(object.group)
                )));
            };
            let resource = if object.group.is_empty() {
                plural.clone()
            } else {
                format!("{plural}.{}", object.group)
            };
            match namespaced {
                true => {
                    format!("{base}/namespaces/{namespace}/{resource}/{}/{metric}", object.name)
                }
                false => format!("{base}/{resource}/{}/{metric}", object.name),
            }
        };
        let value = self
            .get_json(&path, &[("metricLabelSelector", metric_selector)])
            .await
            .map_err(|e| MetricsError::CustomApi(message(&e)))?;
        // The API answers a list of one.
        let item = value["items"].as_array().and_then(|i| i.first()).cloned().unwrap_or(value);
        milli(&item["value"]).ok_or(MetricsError::NoCustomMetrics)
    }

    /// An external metric's values (upstream's `GetExternalMetric`), in thousandths.
    pub async fn external_metric(
        &self,
        metric: &str,
        namespace: &str,
        selector: &str,
    ) -> Result<Vec<i64>, MetricsError> {
        let path = format!("/apis/{EXTERNAL_API}/namespaces/{namespace}/{metric}");
        let list = self
            .get_json(&path, &[("labelSelector", selector)])
            .await
            .map_err(|e| MetricsError::ExternalApi(message(&e)))?;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        if items.is_empty() {
            return Err(MetricsError::NoExternalMetrics);
        }
        Ok(items.iter().map(|i| milli(&i["value"]).unwrap_or_default()).collect())
    }
}

fn milli(v: &Value) -> Option<i64> {
    match v {
        Value::String(s) => parse_milli(s),
        Value::Number(n) => parse_milli(&n.to_string()),
        _ => None,
    }
}

fn parse_time(v: &Value) -> Option<Timestamp> {
    v.as_str()?.parse().ok()
}

/// A Go duration (`10s`, `1m30s`, `500ms`); `None` when it is not one.
fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut rest = text;
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let (number, tail) = rest.split_at(number_end);
        let number: f64 = number.parse().ok()?;
        let unit_end = tail.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * seconds;
        rest = tail;
    }
    Some(Duration::from_secs_f64(total))
}

/// Each pod's usage of `resource` from PodMetrics items: the sum over its containers (a pod
/// lacking the resource in any container, or without containers, has no sample), or
/// `container`'s alone when named (a pod without it has no sample).
pub fn pod_metrics(items: &[Value], resource: &str, container: &str) -> PodMetrics {
    let mut metrics = PodMetrics::new();
    for item in items {
        let Some(name) = item["metadata"]["name"].as_str() else { continue };
        let containers = item["containers"].as_array().map(Vec::as_slice).unwrap_or_default();
        let value = if container.is_empty() {
            if containers.is_empty() {
                continue;
            }
            let values: Option<Vec<i64>> =
                containers.iter().map(|c| milli(&c["usage"][resource])).collect();
            let Some(values) = values else { continue };
            values.iter().sum()
        } else {
            let Some(value) = containers
                .iter()
                .find(|c| c["name"] == container)
                .and_then(|c| milli(&c["usage"][resource]))
            else {
                continue;
            };
            value
        };
        let timestamp = parse_time(&item["timestamp"]).unwrap_or(Timestamp::UNIX_EPOCH);
        let window = item["window"].as_str().and_then(parse_go_duration).unwrap_or_default();
        metrics.insert(name.to_string(), PodMetric { timestamp, window, value });
    }
    metrics
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pod_metrics_sum_containers_or_take_one() {
        let items = vec![
            json!({"metadata": {"name": "a"}, "timestamp": "2024-01-01T00:00:00Z", "window": "10s",
                "containers": [{"name": "app", "usage": {"cpu": "150m", "memory": "1Mi"}},
                               {"name": "side", "usage": {"cpu": "1500000n", "memory": "1Ki"}}]}),
            json!({"metadata": {"name": "b"}, "timestamp": "2024-01-01T00:00:00Z", "window": "1m30s",
                "containers": [{"name": "app", "usage": {"memory": "1Mi"}}]}),
            json!({"metadata": {"name": "c"}, "containers": []}),
        ];
        let cpu = pod_metrics(&items, "cpu", "");
        assert_eq!(cpu.keys().collect::<Vec<_>>(), ["a"], "b lacks cpu, c has no containers");
        assert_eq!(cpu["a"].value, 152);
        assert_eq!(cpu["a"].window, Duration::from_secs(10));
        assert_eq!(cpu["a"].timestamp, "2024-01-01T00:00:00Z".parse::<Timestamp>().unwrap());
        let memory = pod_metrics(&items, "memory", "app");
        assert_eq!(memory["a"].value, 1024 * 1024 * 1000);
        assert_eq!(memory["b"].window, Duration::from_secs(90));
        let side = pod_metrics(&items, "cpu", "side");
        assert_eq!(
            side.keys().collect::<Vec<_>>(),
            ["a"],
            "a pod without the container is missing"
        );
        assert_eq!(side["a"].value, 2, "1.5m rounds up");
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("10s"), Some(Duration::from_secs(10)));
        assert_eq!(parse_go_duration("1m0s"), Some(Duration::from_secs(60)));
        assert_eq!(parse_go_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_go_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("10"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn errors_read_as_upstream_s() {
        let e = MetricsError::CustomApi(
            "no custom metrics API (custom.metrics.k8s.io) registered".into(),
        );
        assert_eq!(
            e.to_string(),
            "unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"
        );
        assert_eq!(
            MetricsError::NoResourceMetrics.to_string(),
            "no metrics returned from resource metrics API"
        );
    }
}
