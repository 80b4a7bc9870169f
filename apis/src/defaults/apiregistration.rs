//! Defaults of `apiregistration.k8s.io/v1` (kube-aggregator's `defaults.go`): APIServices.

use serde_json::{json, Value};

use super::{default, field};

/// An APIService's defaults.
pub fn api_service(obj: &mut Value) {
    if let Some(service) = field(obj, "spec").and_then(|s| field(s, "service")) {
        default(service, "port", json!(443));
    }
}
