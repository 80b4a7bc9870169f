//! Validation of the kinds' own fields (beyond metadata): which checks each resource gets.
//! The checks live in one module per area; see docs/features.md for what is covered.

use serde_json::Value;

use super::config::{data_keys, immutable_data};
use super::pod::{pod_spec, pod_update};
use super::service::service;
use super::workloads;
use super::FieldError;
use crate::resources::ResourceInfo;

pub fn validate(info: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    match (info.group, info.plural) {
        ("", "pods") => {
            let mut errors = pod_spec(&obj["spec"], "spec");
            if let Some(old) = old {
                errors.extend(pod_update(obj, old));
            }
            errors
        }
        ("", "podtemplates") => pod_spec(&obj["template"]["spec"], "template.spec"),
        ("", "replicationcontrollers") => workloads::replication_controller(obj),
        ("apps", "deployments") => workloads::deployment(obj, old),
        ("apps", "replicasets") => workloads::replica_set(obj, old),
        ("apps", "statefulsets") => workloads::stateful_set(info, obj, old),
        ("apps", "daemonsets") => workloads::daemon_set(obj, old),
        ("batch", "jobs") => workloads::job(info, obj, old),
        ("batch", "cronjobs") => workloads::cron_job(obj, old),
        ("", "services") => service(obj, old),
        ("", "configmaps") | ("", "secrets") => {
            let mut errors = data_keys(obj);
            if let Some(old) = old {
                errors.extend(immutable_data(obj, old));
                if info.plural == "secrets" && obj["type"] != old["type"] {
                    errors.push(FieldError::invalid("type", &obj["type"], "field is immutable"));
                }
            }
            errors
        }
        _ => Vec::new(),
    }
}
