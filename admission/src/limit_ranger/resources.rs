//! What LimitRanger reads and compares: LimitRange items, containers' requirements, and a
//! pod's effective requests and limits.

use serde_json::Value;

pub use rkube_apis::quota::list::{from_json as resource_list, ResourceList};

/// One item of a LimitRange's `spec.limits`.
#[derive(Debug, Default)]
pub struct Item {
    /// `Container`, `Pod` or `PersistentVolumeClaim`.
    pub kind: String,
    pub min: ResourceList,
    pub max: ResourceList,
    /// The limits a container without one gets.
    pub default: ResourceList,
    /// The requests a container without one gets.
    pub default_request: ResourceList,
    pub max_limit_request_ratio: ResourceList,
}

pub const CONTAINER: &str = "Container";
pub const POD: &str = "Pod";
pub const PERSISTENT_VOLUME_CLAIM: &str = "PersistentVolumeClaim";

/// A LimitRange, as its items.
#[derive(Debug, Default)]
pub struct LimitRange {
    pub items: Vec<Item>,
}

impl LimitRange {
    pub fn read(object: &Value) -> LimitRange {
        let items = object["spec"]["limits"].as_array().map(Vec::as_slice).unwrap_or_default();
        LimitRange {
            items: items
                .iter()
                .map(|item| Item {
                    kind: item["type"].as_str().unwrap_or("").to_string(),
                    min: resource_list(&item["min"]),
                    max: resource_list(&item["max"]),
                    default: resource_list(&item["default"]),
                    default_request: resource_list(&item["defaultRequest"]),
                    max_limit_request_ratio: resource_list(&item["maxLimitRequestRatio"]),
                })
                .collect(),
        }
    }

    /// The requests and limits a container without them gets (upstream's
    /// `defaultContainerResourceRequirements`): a later Container item's win.
    pub fn container_defaults(&self) -> (ResourceList, ResourceList) {
        let (mut requests, mut limits) = (ResourceList::new(), ResourceList::new());
        for item in self.items.iter().filter(|i| i.kind == CONTAINER) {
            requests.extend(item.default_request.iter().map(|(k, v)| (k.clone(), *v)));
            limits.extend(item.default.iter().map(|(k, v)| (k.clone(), *v)));
        }
        (requests, limits)
    }
}

/// A container's requests and limits.
pub struct Requirements {
    pub requests: ResourceList,
    pub limits: ResourceList,
}

impl Requirements {
    pub fn of(container: &Value) -> Requirements {
        let resources = &container["resources"];
        Requirements {
            requests: resource_list(&resources["requests"]),
            limits: resource_list(&resources["limits"]),
        }
    }
}

/// What a pod asks for as a whole, of its containers' `requests` or `limits` (`side`):
/// upstream's `podRequests` / `podLimits` in LimitRanger, which leave pod overhead out.
pub fn pod_total(spec: &Value, side: &str) -> ResourceList {
    rkube_apis::quota::evaluator::pod_containers_total(spec, side)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canonical(list: &ResourceList) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.clone(), v.canonical())).collect()
    }

    #[test]
    fn a_pod_counts_sidecars_and_the_largest_init_container() {
        let c = |cpu: &str, memory: &str| json!({"resources": {"requests": {"cpu": cpu, "memory": memory}}});
        let mut sidecar = c("100m", "64Mi");
        sidecar["restartPolicy"] = json!("Always");
        let spec = json!({
            "containers": [c("500m", "128Mi"), c("250m", "128Mi")],
            "initContainers": [c("1", "32Mi"), sidecar, c("700m", "512Mi")],
        });
        let requests = pod_total(&spec, "requests");
        // cpu: containers 750m + sidecar 100m = 850m, below the first init container's 1;
        // memory: 256Mi + 64Mi = 320Mi, below the last init container's 512Mi + 64Mi.
        assert_eq!(
            canonical(&requests),
            [("cpu".to_string(), "1".to_string()), ("memory".to_string(), "576Mi".to_string())]
        );
        assert!(pod_total(&spec, "limits").is_empty());
    }

    #[test]
    fn container_defaults_come_from_container_items() {
        let lr = LimitRange::read(&json!({"spec": {"limits": [
            {"type": "Pod", "max": {"cpu": "2"}},
            {"type": "Container", "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "100m", "memory": "bad"}},
        ]}}));
        let (requests, limits) = lr.container_defaults();
        assert_eq!(canonical(&requests), [("cpu".to_string(), "100m".to_string())]);
        assert_eq!(canonical(&limits), [("cpu".to_string(), "500m".to_string())]);
    }
}
