//! Nodes (`v1`): a kubelet registers its node with its status.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::{SelectableField, Strategy};
use crate::tables::{
    arr, at, boolean, or, or_none, since, st, text, time, wide, TablePrinter, AGE, NAME,
};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Nodes;

impl Strategy for Nodes {
    fn keeps_status_on_create(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::core::node(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::node::node(obj, old)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[("spec.unschedulable", &["spec", "unschedulable"])]
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        text("Status", "The status of the node"),
        text("Roles", "The roles of the node"),
        AGE,
        text("Version", D_NODE_KUBELET),
        wide("Internal-IP", "string", D_NODE_ADDRESSES),
        wide("External-IP", "string", D_NODE_ADDRESSES),
        wide("OS-Image", "string", D_NODE_OS_IMAGE),
        wide("Kernel-Version", "string", D_NODE_KERNEL),
        wide("Container-Runtime", "string", D_NODE_RUNTIME),
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    // The last Ready condition wins, as upstream keys them by type.
    let mut status: Vec<String> = Vec::new();
    if let Some(c) =
        arr(obj, &["status", "conditions"]).iter().rev().find(|c| st(c, &["type"]) == "Ready")
    {
        status.push(if st(c, &["status"]) == "True" { "Ready" } else { "NotReady" }.to_string());
    }
    if status.is_empty() {
        status.push("Unknown".to_string());
    }
    if boolean(obj, &["spec", "unschedulable"]) == Some(true) {
        status.push("SchedulingDisabled".to_string());
    }

    let mut roles: Vec<&str> = Vec::new();
    if let Some(labels) = at(obj, &["metadata", "labels"]).and_then(Value::as_object) {
        for (key, value) in labels {
            if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.push(role);
                }
            } else if key == "kubernetes.io/role" {
                if let Some(v) = value.as_str().filter(|v| !v.is_empty()) {
                    roles.push(v);
                }
            }
        }
    }
    roles.sort_unstable();
    roles.dedup();

    let address = |kind: &str| {
        arr(obj, &["status", "addresses"])
            .iter()
            .find(|a| st(a, &["type"]) == kind)
            .map(|a| st(a, &["address"]).to_string())
            .unwrap_or_else(|| "<none>".to_string())
    };
    let info = |field: &str| or(st(obj, &["status", "nodeInfo", field]), "<unknown>").to_string();
    vec![
        st(obj, &["metadata", "name"]).into(),
        status.join(",").into(),
        or_none(&roles.join(",")).into(),
        since(time(obj, &["metadata", "creationTimestamp"]), now).into(),
        st(obj, &["status", "nodeInfo", "kubeletVersion"]).into(),
        address("InternalIP").into(),
        address("ExternalIP").into(),
        info("osImage").into(),
        info("kernelVersion").into(),
        info("containerRuntimeVersion").into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_NODE_KUBELET: &str = "Kubelet Version reported by the node.";
const D_NODE_ADDRESSES: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";
const D_NODE_OS_IMAGE: &str =
    "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).";
const D_NODE_KERNEL: &str =
    "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).";
const D_NODE_RUNTIME: &str = "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).";
