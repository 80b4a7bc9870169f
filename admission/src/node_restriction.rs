//! `NodeRestriction`: a kubelet (user `system:node:<name>` in group `system:nodes`) may write
//! only what belongs to its own node. The Node authorizer decides which objects a node may
//! touch at all; this plugin looks into the objects, which the authorizer cannot:
//!
//! - pods: create only mirror pods bound to itself, owned (as controller, without
//!   `blockOwnerDeletion`) by its own Node object (uid checked) and referencing no service
//!   account, Secret, ConfigMap, ClusterTrustBundle or PersistentVolumeClaim; delete only
//!   pods bound to itself; update only the status of pods bound to itself, without changing
//!   their labels or resource-claim statuses; evict only pods bound to itself; no other pod
//!   subresource;
//! - nodes: only its own Node, which it may not create with or change to a `configSource`,
//!   whose taints it may not change, and whose labels it may not set, change or remove under
//!   `kubernetes.io` / `k8s.io` (except the kubelet's own labels: hostname, os, arch, zone,
//!   region, instance type, and `kubelet.kubernetes.io/*`, `node.kubernetes.io/*`) nor under
//!   `node-restriction.kubernetes.io`;
//! - persistentvolumeclaims: only their status, and in it only capacity, conditions and the
//!   allocated resources (and their statuses);
//! - serviceaccounts/token: only tokens bound to a pod (by name and uid) scheduled on itself;
//! - leases: only its own, in `kube-node-lease`; csinodes: only its own; resourceslices:
//!   create and delete only its own (`spec.nodeName`).
//!
//! Refusals are upstream's 403s, word for word, except the PVC-status one: upstream appends a
//! Go struct diff, rkube names the fields that changed.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::attributes::{Attributes, Operation, UserInfo};
use crate::error::AdmissionError;
use crate::pod_refs;
use crate::service_account::{is_mirror_pod, MIRROR_ANNOTATION};
use crate::state::{ClusterState, Freshness, GroupResource};
use crate::MutatingPlugin;

pub const NAME: &str = "NodeRestriction";

/// The group every node's user is in.
pub const NODES_GROUP: &str = "system:nodes";
/// A node's user name is this and the node's name.
pub const NODE_USER_PREFIX: &str = "system:node:";
/// The namespace of the nodes' heartbeat Leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// Labels the kubelet sets on its own Node (upstream's `kubeletapis.IsKubeletLabel`).
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];
/// Label prefixes (and their subdomains) the kubelet may set.
const KUBELET_LABEL_NAMESPACES: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];
/// The prefix reserved for labels only administrators set, to steer workloads to nodes.
const NODE_RESTRICTION_NAMESPACE: &str = "node-restriction.kubernetes.io";

const NODES: GroupResource<'static> = GroupResource::new("", "nodes");
const PODS: GroupResource<'static> = GroupResource::new("", "pods");

/// The plugin (no state: everything it needs is in the request and the cluster).
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeRestriction;

/// The node a user is, if the user is a node: `Some("")` for a node user without a name.
pub fn node_identity<'a>(user: &UserInfo<'a>) -> Option<&'a str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

#[async_trait::async_trait]
impl MutatingPlugin for NodeRestriction {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        let Some(node) = node_identity(&a.user) else { return Ok(()) };
        if a.operation == Operation::Connect {
            return Ok(());
        }
        if node.is_empty() {
            let why = format!("could not determine node from user {:?}", a.user.name);
            return Err(AdmissionError::forbidden(a, why));
        }
        let a: &Attributes<'_> = a;
        match (a.resource.group, a.resource.resource) {
            ("", "pods") => match a.subresource {
                "" => admit_pod(node, a, state).await,
                "status" => admit_pod_status(node, a),
                "eviction" => admit_pod_eviction(node, a, state).await,
                other => Err(AdmissionError::forbidden(
                    a,
                    format!("unexpected pod subresource {other:?}, only 'status' and 'eviction' are allowed"),
                )),
            },
            ("", "nodes") => admit_node(node, a),
            ("", "persistentvolumeclaims") => match a.subresource {
                "status" => admit_pvc_status(node, a),
                _ => Err(AdmissionError::forbidden(a, "may only update PVC status")),
            },
            ("", "serviceaccounts") => admit_token_request(node, a, state).await,
            ("coordination.k8s.io", "leases") => admit_lease(node, a),
            ("storage.k8s.io", "csinodes") => admit_csi_node(node, a),
            ("resource.k8s.io", "resourceslices") => admit_resource_slice(node, a),
            _ => Ok(()),
        }
    }
}

fn forbid(a: &Attributes<'_>, why: impl Into<String>) -> Result<(), AdmissionError> {
    Err(AdmissionError::forbidden(a, why))
}

fn object<'v>(a: &'v Attributes<'_>) -> &'v Value {
    static NULL: Value = Value::Null;
    a.object().unwrap_or(&NULL)
}

fn old_object<'v>(a: &'v Attributes<'_>) -> &'v Value {
    static NULL: Value = Value::Null;
    a.old_object.unwrap_or(&NULL)
}

fn node_name_of(pod: &Value) -> &str {
    pod["spec"]["nodeName"].as_str().unwrap_or("")
}

fn operation_name(op: Operation) -> &'static str {
    op.as_str()
}

async fn admit_pod(
    node: &str,
    a: &Attributes<'_>,
    state: &dyn ClusterState,
) -> Result<(), AdmissionError> {
    match a.operation {
        Operation::Create => admit_pod_create(node, a, state).await,
        Operation::Delete => {
            // The registry hands the stored pod to a delete: no need to read it again.
            if node_name_of(old_object(a)) != node {
                return forbid(
                    a,
                    format!("node {node:?} can only delete pods with spec.nodeName set to itself"),
                );
            }
            Ok(())
        }
        op => forbid(
            a,
            format!(
                "unexpected operation {:?}, node {node:?} can only create and delete mirror pods",
                operation_name(op)
            ),
        ),
    }
}

async fn admit_pod_create(
    node: &str,
    a: &Attributes<'_>,
    state: &dyn ClusterState,
) -> Result<(), AdmissionError> {
    let pod = object(a);
    if !is_mirror_pod(pod) {
        return forbid(
            a,
            format!("pod does not have {MIRROR_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"),
        );
    }
    if node_name_of(pod) != node {
        return forbid(
            a,
            format!("node {node:?} can only create pods with spec.nodeName set to itself"),
        );
    }
    let owners = pod["metadata"]["ownerReferences"].as_array().cloned().unwrap_or_default();
    match owners.as_slice() {
        [] => {
            return forbid(
                a,
                format!("node {node:?} can only create pods with an owner reference set to itself"),
            )
        }
        [owner] => {
            let field = |k: &str| owner[k].as_str().unwrap_or("");
            if field("apiVersion") != "v1" || field("kind") != "Node" || field("name") != node {
                return forbid(
                    a,
                    format!(
                        "node {node:?} can only create pods with an owner reference set to itself"
                    ),
                );
            }
            if owner["controller"].as_bool() != Some(true) {
                return forbid(
                    a,
                    format!("node {node:?} can only create pods with a controller owner reference set to itself"),
                );
            }
            if owner["blockOwnerDeletion"].as_bool() == Some(true) {
                return forbid(
                    a,
                    format!("node {node:?} must not set blockOwnerDeletion on an owner reference"),
                );
            }
            let found = state.get(NODES, None, node, Freshness::Cached).await.map_err(|e| {
                AdmissionError::forbidden(
                    a,
                    format!("error looking up node {node} to verify uid: {e}"),
                )
            })?;
            let Some(found) = found else {
                return Err(AdmissionError::not_found("", "nodes", node));
            };
            let uid = found.field("metadata.uid").unwrap_or_default();
            if field("uid") != uid {
                return forbid(
                    a,
                    format!("node {node} UID mismatch: expected {} got {uid}", field("uid")),
                );
            }
        }
        _ => {
            return forbid(
                a,
                format!(
                "node {node:?} can only create pods with a single owner reference set to itself"
            ),
            )
        }
    }
    let names = |field: &str| pod["spec"][field].as_str().filter(|s| !s.is_empty()).is_some();
    if names("serviceAccountName") || names("serviceAccount") {
        return forbid(
            a,
            format!("node {node:?} can not create pods that reference a service account"),
        );
    }
    if !pod_refs::secret_names(pod).is_empty() {
        return forbid(a, format!("node {node:?} can not create pods that reference secrets"));
    }
    if !pod_refs::config_map_names(pod).is_empty() {
        return forbid(a, format!("node {node:?} can not create pods that reference configmaps"));
    }
    if pod_refs::has_projection(pod, "clusterTrustBundle") {
        return forbid(
            a,
            format!("node {node:?} can not create pods that reference clustertrustbundles"),
        );
    }
    if pod_refs::volumes(pod).any(|v| !v["persistentVolumeClaim"].is_null()) {
        return forbid(
            a,
            format!("node {node:?} can not create pods that reference persistentvolumeclaims"),
        );
    }
    Ok(())
}

fn labels(object: &Value) -> BTreeMap<&str, &str> {
    object["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
        .collect()
}

/// A pod's resource-claim statuses as upstream compares them: name and claim name.
fn claim_statuses(pod: &Value) -> Vec<(&str, Option<&str>)> {
    pod["status"]["resourceClaimStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| (s["name"].as_str().unwrap_or(""), s["resourceClaimName"].as_str()))
        .collect()
}

fn admit_pod_status(node: &str, a: &Attributes<'_>) -> Result<(), AdmissionError> {
    if a.operation != Operation::Update {
        return forbid(a, format!("unexpected operation {:?}", operation_name(a.operation)));
    }
    let (old, new) = (old_object(a), object(a));
    if node_name_of(old) != node {
        return forbid(
            a,
            format!("node {node:?} can only update pod status for pods with spec.nodeName set to itself"),
        );
    }
    if labels(old) != labels(new) {
        return forbid(a, format!("node {node:?} cannot update labels through pod status"));
    }
    if claim_statuses(old) != claim_statuses(new) {
        return forbid(a, format!("node {node:?} cannot update resource claim statues"));
    }
    Ok(())
}

async fn admit_pod_eviction(
    node: &str,
    a: &Attributes<'_>,
    state: &dyn ClusterState,
) -> Result<(), AdmissionError> {
    if a.operation != Operation::Create {
        return forbid(a, format!("unexpected operation {}", operation_name(a.operation)));
    }
    let pod_name = match a.name {
        "" => object(a)["metadata"]["name"].as_str().unwrap_or(""),
        name => name,
    };
    if pod_name.is_empty() {
        return forbid(a, "could not determine pod from request data");
    }
    let pod = state
        .get(PODS, Some(a.namespace), pod_name, Freshness::Cached)
        .await
        .map_err(|e| AdmissionError::forbidden(a, e.to_string()))?
        .ok_or_else(|| AdmissionError::not_found("", "pods", pod_name))?;
    if pod.field("spec.nodeName").unwrap_or_default() != node {
        return forbid(
            a,
            format!("node {node} can only evict pods with spec.nodeName set to itself"),
        );
    }
    Ok(())
}

/// Values Go's semantic equality treats alike: null, and empty lists and maps, are absent.
fn semantic(v: &Value) -> Value {
    let value = match v {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), semantic(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(semantic).collect()),
        other => other.clone(),
    };
    if is_empty(&value) {
        Value::Null
    } else {
        value
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        _ => false,
    }
}

fn admit_pvc_status(node: &str, a: &Attributes<'_>) -> Result<(), AdmissionError> {
    if a.operation != Operation::Update {
        return forbid(a, format!("unexpected operation {:?}", operation_name(a.operation)));
    }
    // What a node may change: the resize status (capacity, conditions, allocations).
    let comparable = |pvc: &Value| {
        let mut pvc = pvc.clone();
        if let Some(meta) = pvc["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
            meta.remove("managedFields");
        }
        if let Some(status) = pvc["status"].as_object_mut() {
            for field in
                ["capacity", "conditions", "allocatedResources", "allocatedResourceStatuses"]
            {
                status.remove(field);
            }
        }
        semantic(&pvc)
    };
    let (old, new) = (comparable(old_object(a)), comparable(object(a)));
    if old == new {
        return Ok(());
    }
    let mut changed = BTreeSet::new();
    for part in ["metadata", "spec", "status"] {
        let keys = |v: &Value| {
            v[part].as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default()
        };
        for key in keys(&old).into_iter().chain(keys(&new)) {
            if old[part][&key] != new[part][&key] {
                changed.insert(format!("{part}.{key}"));
            }
        }
    }
    let changed: Vec<String> = changed.into_iter().collect();
    forbid(
        a,
        format!(
            "node {node:?} is not allowed to update fields other than status.quantity and status.conditions: changed {}",
            changed.join(", ")
        ),
    )
}

/// The part of a label key before the `/` (`""` for none).
fn label_namespace(key: &str) -> &str {
    key.split_once('/').map_or("", |(ns, _)| ns)
}

fn in_domain(namespace: &str, domain: &str) -> bool {
    namespace == domain || namespace.strip_suffix(domain).is_some_and(|rest| rest.ends_with('.'))
}

fn is_kubelet_label(key: &str) -> bool {
    KUBELET_LABELS.contains(&key)
        || KUBELET_LABEL_NAMESPACES.iter().any(|d| in_domain(label_namespace(key), d))
}

/// The labels of `changed` a node may not set, change or remove, sorted.
pub fn forbidden_labels<'a>(changed: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let forbidden: BTreeSet<&str> = changed
        .into_iter()
        .filter(|key| {
            let ns = label_namespace(key);
            let kubernetes = in_domain(ns, "kubernetes.io") || in_domain(ns, "k8s.io");
            in_domain(ns, NODE_RESTRICTION_NAMESPACE) || (kubernetes && !is_kubelet_label(key))
        })
        .collect();
    forbidden.into_iter().collect()
}

/// Keys added, removed or changed between two label maps.
fn modified_labels<'a>(
    a: &BTreeMap<&'a str, &'a str>,
    b: &BTreeMap<&'a str, &'a str>,
) -> Vec<&'a str> {
    let keys: BTreeSet<&str> = a.keys().chain(b.keys()).copied().collect();
    keys.into_iter().filter(|k| a.get(k) != b.get(k)).collect()
}

fn admit_node(node: &str, a: &Attributes<'_>) -> Result<(), AdmissionError> {
    if a.name != node {
        return forbid(a, format!("node {node:?} is not allowed to modify node {:?}", a.name));
    }
    let new = object(a);
    match a.operation {
        Operation::Create => {
            if !new["spec"]["configSource"].is_null() {
                return forbid(
                    a,
                    format!(
                        "node {node:?} is not allowed to create pods with a non-nil configSource"
                    ),
                );
            }
            let labels = labels(new);
            let forbidden = forbidden_labels(labels.keys().copied());
            if !forbidden.is_empty() {
                return forbid(
                    a,
                    format!(
                        "node {node:?} is not allowed to set the following labels: {}",
                        forbidden.join(", ")
                    ),
                );
            }
        }
        Operation::Update => {
            let old = old_object(a);
            let source = &new["spec"]["configSource"];
            if !source.is_null() && semantic(source) != semantic(&old["spec"]["configSource"]) {
                return forbid(
                    a,
                    format!("node {node:?} is not allowed to update configSource to a new non-nil configSource"),
                );
            }
            if semantic(&new["spec"]["taints"]) != semantic(&old["spec"]["taints"]) {
                return forbid(a, format!("node {node:?} is not allowed to modify taints"));
            }
            let (new_labels, old_labels) = (labels(new), labels(old));
            let forbidden = forbidden_labels(modified_labels(&new_labels, &old_labels));
            if !forbidden.is_empty() {
                return forbid(
                    a,
                    format!("is not allowed to modify labels: {}", forbidden.join(", ")),
                );
            }
        }
        _ => {}
    }
    Ok(())
}

async fn admit_token_request(
    node: &str,
    a: &Attributes<'_>,
    state: &dyn ClusterState,
) -> Result<(), AdmissionError> {
    if a.operation != Operation::Create || a.subresource != "token" {
        return Ok(());
    }
    let reference = &object(a)["spec"]["boundObjectRef"];
    let field = |k: &str| reference[k].as_str().unwrap_or("");
    if field("apiVersion") != "v1" || field("kind") != "Pod" || field("name").is_empty() {
        return forbid(a, "node requested token not bound to a pod");
    }
    if field("uid").is_empty() {
        return forbid(a, "node requested token with a pod binding without a uid");
    }
    let pod = state
        .get(PODS, Some(a.namespace), field("name"), Freshness::Cached)
        .await
        .map_err(|e| AdmissionError::forbidden(a, e.to_string()))?
        .ok_or_else(|| AdmissionError::not_found("", "pods", field("name")))?;
    if pod.field("metadata.uid").unwrap_or_default() != field("uid") {
        return forbid(
            a,
            format!(
                "the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated",
                field("uid")
            ),
        );
    }
    if pod.field("spec.nodeName").unwrap_or_default() != node {
        return forbid(a, "node requested token bound to a pod scheduled on a different node");
    }
    Ok(())
}

/// The name the request is about: on a create, the object's.
fn target_name<'v>(a: &'v Attributes<'_>) -> &'v str {
    match a.operation {
        Operation::Create => object(a)["metadata"]["name"].as_str().unwrap_or(""),
        _ => a.name,
    }
}

fn admit_lease(node: &str, a: &Attributes<'_>) -> Result<(), AdmissionError> {
    if a.namespace != NODE_LEASE_NAMESPACE {
        return forbid(
            a,
            format!("can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"),
        );
    }
    if target_name(a) != node {
        return forbid(a, "can only access node lease with the same name as the requesting node");
    }
    Ok(())
}

fn admit_csi_node(node: &str, a: &Attributes<'_>) -> Result<(), AdmissionError> {
    if target_name(a) != node {
        return forbid(a, "can only access CSINode with the same name as the requesting node");
    }
    Ok(())
}

fn admit_resource_slice(node: &str, a: &Attributes<'_>) -> Result<(), AdmissionError> {
    let (slice, verb) = match a.operation {
        Operation::Create => (object(a), "create"),
        Operation::Delete => (old_object(a), "delete"),
        _ => return Ok(()),
    };
    if slice["spec"]["nodeName"].as_str().unwrap_or("") != node {
        return forbid(
            a,
            format!("can only {verb} ResourceSlice with the same NodeName as the requesting node"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use crate::state::Snapshot;
    use serde_json::json;

    const NODE_GROUPS: &[&str] = &["system:nodes", "system:authenticated"];

    struct Request<'a> {
        user: &'a str,
        groups: Vec<String>,
        operation: Operation,
        group: &'a str,
        resource: &'a str,
        subresource: &'a str,
        namespace: &'a str,
        name: &'a str,
        object: Option<Value>,
        old: Option<Value>,
    }

    fn request<'a>(operation: Operation, resource: &'a str, name: &'a str) -> Request<'a> {
        Request {
            user: "system:node:n1",
            groups: NODE_GROUPS.iter().map(|g| g.to_string()).collect(),
            operation,
            group: "",
            resource,
            subresource: "",
            namespace: "ns",
            name,
            object: None,
            old: None,
        }
    }

    impl Request<'_> {
        async fn admit(mut self, state: &Snapshot) -> Result<(), AdmissionError> {
            let mut a = Attributes {
                operation: self.operation,
                user: UserInfo { name: self.user, uid: "", groups: &self.groups, extra: None },
                resource: GroupVersionResource {
                    group: self.group,
                    version: "v1",
                    resource: self.resource,
                },
                subresource: self.subresource,
                kind: GroupVersionKind { group: self.group, version: "v1", kind: "" },
                namespace: self.namespace,
                name: self.name,
                object: self.object.as_mut(),
                old_object: self.old.as_ref(),
                dry_run: false,
                options: OperationOptions::None,
                warnings: Default::default(),
                audit_annotations: Default::default(),
            };
            NodeRestriction.admit(&mut a, state).await
        }
    }

    fn refusal(result: Result<(), AdmissionError>) -> String {
        result.unwrap_err().to_string()
    }

    fn pod_on(node: &str) -> Value {
        json!({"metadata": {"namespace": "ns", "name": "p", "uid": "pod-uid", "labels": {"app": "a"}},
               "spec": {"nodeName": node, "containers": [{"name": "c"}]},
               "status": {"phase": "Running"}})
    }

    fn cluster() -> Snapshot {
        Snapshot::default()
            .with("", "nodes", json!({"metadata": {"name": "n1", "uid": "node-uid"}}))
            .with("", "pods", pod_on("n1"))
            .with("", "pods", {
                let mut p = pod_on("n2");
                p["metadata"]["name"] = json!("other");
                p
            })
    }

    #[tokio::test]
    async fn only_node_users_are_restricted() {
        let state = cluster();
        let mut admin = request(Operation::Delete, "pods", "other");
        admin.user = "admin";
        admin.old = Some(pod_on("n2"));
        admin.admit(&state).await.unwrap();
        // The name alone is not enough: the group makes a node.
        let mut not_in_group = request(Operation::Delete, "pods", "other");
        not_in_group.groups = vec!["system:authenticated".into()];
        not_in_group.old = Some(pod_on("n2"));
        not_in_group.admit(&state).await.unwrap();
        let mut nameless = request(Operation::Delete, "pods", "other");
        nameless.user = "system:node:";
        assert_eq!(
            refusal(nameless.admit(&state).await),
            "pods \"other\" is forbidden: could not determine node from user \"system:node:\""
        );
        // Objects no rule covers are the authorizer's business.
        request(Operation::Create, "events", "e").admit(&state).await.unwrap();
    }

    #[tokio::test]
    async fn a_node_writes_only_the_status_of_its_own_pods_and_deletes_only_them() {
        let state = cluster();
        let status = |old: Value, new: Value| {
            let mut r = request(Operation::Update, "pods", "p");
            r.subresource = "status";
            r.old = Some(old);
            r.object = Some(new);
            r
        };
        let mut ready = pod_on("n1");
        ready["status"]["phase"] = json!("Succeeded");
        status(pod_on("n1"), ready).admit(&state).await.unwrap();
        assert_eq!(
            refusal(status(pod_on("n2"), pod_on("n2")).admit(&state).await),
            "pods \"p\" is forbidden: node \"n1\" can only update pod status for pods with spec.nodeName set to itself"
        );
        let mut relabelled = pod_on("n1");
        relabelled["metadata"]["labels"]["app"] = json!("b");
        assert_eq!(
            refusal(status(pod_on("n1"), relabelled).admit(&state).await),
            "pods \"p\" is forbidden: node \"n1\" cannot update labels through pod status"
        );
        let mut claimed = pod_on("n1");
        claimed["status"]["resourceClaimStatuses"] =
            json!([{"name": "gpu", "resourceClaimName": "c"}]);
        assert_eq!(
            refusal(status(pod_on("n1"), claimed).admit(&state).await),
            "pods \"p\" is forbidden: node \"n1\" cannot update resource claim statues"
        );
        let delete = |old: Value| {
            let mut r = request(Operation::Delete, "pods", "p");
            r.old = Some(old);
            r
        };
        delete(pod_on("n1")).admit(&state).await.unwrap();
        assert_eq!(
            refusal(delete(pod_on("n2")).admit(&state).await),
            "pods \"p\" is forbidden: node \"n1\" can only delete pods with spec.nodeName set to itself"
        );
        let mut update = request(Operation::Update, "pods", "p");
        update.old = Some(pod_on("n1"));
        update.object = Some(pod_on("n1"));
        assert_eq!(
            refusal(update.admit(&state).await),
            "pods \"p\" is forbidden: unexpected operation \"UPDATE\", node \"n1\" can only create and delete mirror pods"
        );
        let mut binding = request(Operation::Create, "pods", "p");
        binding.subresource = "binding";
        assert_eq!(
            refusal(binding.admit(&state).await),
            "pods \"p\" is forbidden: unexpected pod subresource \"binding\", only 'status' and 'eviction' are allowed"
        );
        let evict = |name| {
            let mut r = request(Operation::Create, "pods", name);
            r.subresource = "eviction";
            r.object = Some(json!({"metadata": {"name": name}}));
            r
        };
        evict("p").admit(&state).await.unwrap();
        assert_eq!(
            refusal(evict("other").admit(&state).await),
            "pods \"other\" is forbidden: node n1 can only evict pods with spec.nodeName set to itself"
        );
        assert_eq!(refusal(evict("gone").admit(&state).await), "pods \"gone\" not found");
    }

    fn mirror(node: &str) -> Value {
        json!({"metadata": {"name": "static-n1", "annotations": {MIRROR_ANNOTATION: "hash"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": "node-uid", "controller": true}]},
               "spec": {"nodeName": node, "containers": [{"name": "c"}]}})
    }

    #[tokio::test]
    async fn a_node_creates_only_mirror_pods_of_its_own_that_reference_nothing() {
        let state = cluster();
        let create = |pod: Value| {
            let mut r = request(Operation::Create, "pods", "static-n1");
            r.object = Some(pod);
            r
        };
        create(mirror("n1")).admit(&state).await.unwrap();
        let mut plain = mirror("n1");
        plain["metadata"]["annotations"] = json!({});
        let cases: Vec<(Value, &str)> = vec![
            (plain, "pod does not have \"kubernetes.io/config.mirror\" annotation, node \"n1\" can only create mirror pods"),
            ({ let mut p = mirror("n1"); p["spec"]["nodeName"] = json!("n2"); p },
             "node \"n1\" can only create pods with spec.nodeName set to itself"),
            ({ let mut p = mirror("n1"); p["metadata"]["ownerReferences"] = json!([]); p },
             "node \"n1\" can only create pods with an owner reference set to itself"),
            ({ let mut p = mirror("n1"); p["metadata"]["ownerReferences"][0]["name"] = json!("n2"); p },
             "node \"n1\" can only create pods with an owner reference set to itself"),
            ({ let mut p = mirror("n1"); p["metadata"]["ownerReferences"][0]["controller"] = json!(false); p },
             "node \"n1\" can only create pods with a controller owner reference set to itself"),
            ({ let mut p = mirror("n1"); p["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = json!(true); p },
             "node \"n1\" must not set blockOwnerDeletion on an owner reference"),
            ({ let mut p = mirror("n1"); p["metadata"]["ownerReferences"][0]["uid"] = json!("stale"); p },
             "node n1 UID mismatch: expected stale got node-uid"),
            ({ let mut p = mirror("n1"); let o = p["metadata"]["ownerReferences"][0].clone(); p["metadata"]["ownerReferences"] = json!([o.clone(), o]); p },
             "node \"n1\" can only create pods with a single owner reference set to itself"),
            ({ let mut p = mirror("n1"); p["spec"]["serviceAccountName"] = json!("default"); p },
             "node \"n1\" can not create pods that reference a service account"),
            ({ let mut p = mirror("n1"); p["spec"]["volumes"] = json!([{"name": "s", "secret": {"secretName": "s"}}]); p },
             "node \"n1\" can not create pods that reference secrets"),
            ({ let mut p = mirror("n1"); p["spec"]["volumes"] = json!([{"name": "c", "configMap": {"name": "c"}}]); p },
             "node \"n1\" can not create pods that reference configmaps"),
            ({ let mut p = mirror("n1"); p["spec"]["volumes"] = json!([{"name": "b", "projected": {"sources": [{"clusterTrustBundle": {"name": "b", "path": "b"}}]}}]); p },
             "node \"n1\" can not create pods that reference clustertrustbundles"),
            ({ let mut p = mirror("n1"); p["spec"]["volumes"] = json!([{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]); p },
             "node \"n1\" can not create pods that reference persistentvolumeclaims"),
        ];
        for (pod, why) in cases {
            assert_eq!(
                refusal(create(pod).admit(&state).await),
                format!("pods \"static-n1\" is forbidden: {why}")
            );
        }
    }

    fn node(labels: Value, taints: Value) -> Value {
        json!({"metadata": {"name": "n1", "labels": labels}, "spec": {"taints": taints}})
    }

    #[tokio::test]
    async fn a_node_modifies_only_itself_and_not_its_taints_or_restricted_labels() {
        let state = cluster();
        let own = json!({"kubernetes.io/hostname": "n1", "kubernetes.io/os": "linux",
            "node.kubernetes.io/exclude-from-external-load-balancers": "", "example.com/rack": "r1"});
        let write = |operation, name, new: Value, old: Option<Value>| {
            let mut r = request(operation, "nodes", name);
            r.namespace = "";
            r.object = Some(new);
            r.old = old;
            r
        };
        write(Operation::Create, "n1", node(own.clone(), json!(null)), None)
            .admit(&state)
            .await
            .unwrap();
        let old = node(own.clone(), json!([{"key": "k", "effect": "NoSchedule"}]));
        let mut status = old.clone();
        status["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        let mut status_write = write(Operation::Update, "n1", status, Some(old.clone()));
        status_write.subresource = "status";
        status_write.admit(&state).await.unwrap();
        assert_eq!(
            refusal(
                write(
                    Operation::Update,
                    "n2",
                    node(own.clone(), json!(null)),
                    Some(node(own.clone(), json!(null)))
                )
                .admit(&state)
                .await
            ),
            "nodes \"n2\" is forbidden: node \"n1\" is not allowed to modify node \"n2\""
        );
        assert_eq!(
            refusal(write(Operation::Delete, "n2", json!(null), None).admit(&state).await),
            "nodes \"n2\" is forbidden: node \"n1\" is not allowed to modify node \"n2\""
        );
        assert_eq!(
            refusal(
                write(Operation::Update, "n1", node(own.clone(), json!([])), Some(old.clone()))
                    .admit(&state)
                    .await
            ),
            "nodes \"n1\" is forbidden: node \"n1\" is not allowed to modify taints"
        );
        // No taints and an empty list are the same.
        write(
            Operation::Update,
            "n1",
            node(own.clone(), json!([])),
            Some(node(own.clone(), json!(null))),
        )
        .admit(&state)
        .await
        .unwrap();
        let mut restricted = own.clone();
        restricted["node-restriction.kubernetes.io/pool"] = json!("gpu");
        restricted["node-role.kubernetes.io/control-plane"] = json!("");
        restricted["kubernetes.io/hostname"] = json!("elsewhere");
        assert_eq!(
            refusal(write(Operation::Update, "n1", node(restricted.clone(), json!(null)), Some(node(own.clone(), json!(null)))).admit(&state).await),
            "nodes \"n1\" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/pool, node-role.kubernetes.io/control-plane"
        );
        assert_eq!(
            refusal(write(Operation::Create, "n1", node(restricted, json!(null)), None).admit(&state).await),
            "nodes \"n1\" is forbidden: node \"n1\" is not allowed to set the following labels: node-restriction.kubernetes.io/pool, node-role.kubernetes.io/control-plane"
        );
        // Removing a restricted label is changing it too.
        let mut labelled = own.clone();
        labelled["sub.k8s.io/x"] = json!("1");
        assert_eq!(
            refusal(
                write(
                    Operation::Update,
                    "n1",
                    node(own.clone(), json!(null)),
                    Some(node(labelled, json!(null)))
                )
                .admit(&state)
                .await
            ),
            "nodes \"n1\" is forbidden: is not allowed to modify labels: sub.k8s.io/x"
        );
        let mut configured = node(own.clone(), json!(null));
        configured["spec"]["configSource"] = json!({"configMap": {"name": "c"}});
        assert_eq!(
            refusal(write(Operation::Create, "n1", configured.clone(), None).admit(&state).await),
            "nodes \"n1\" is forbidden: node \"n1\" is not allowed to create pods with a non-nil configSource"
        );
        assert_eq!(
            refusal(write(Operation::Update, "n1", configured, Some(node(own, json!(null)))).admit(&state).await),
            "nodes \"n1\" is forbidden: node \"n1\" is not allowed to update configSource to a new non-nil configSource"
        );
    }

    #[test]
    fn kubelet_labels_are_upstreams() {
        assert_eq!(
            forbidden_labels([
                "kubernetes.io/hostname",
                "topology.kubernetes.io/zone",
                "kubelet.kubernetes.io/x",
                "a.node.kubernetes.io/y",
                "example.com/z",
                "plain",
                "kubernetes.io/role",
                "xkubernetes.io/z",
                "k8s.io/a",
                "sub.node-restriction.kubernetes.io/b"
            ]),
            ["k8s.io/a", "kubernetes.io/role", "sub.node-restriction.kubernetes.io/b"]
        );
    }

    #[tokio::test]
    async fn leases_csinodes_slices_claims_and_tokens() {
        let state = cluster();
        let lease = |namespace, name, operation| {
            let mut r = request(operation, "leases", name);
            r.group = "coordination.k8s.io";
            r.namespace = namespace;
            r.object = Some(json!({"metadata": {"name": name}}));
            r
        };
        lease("kube-node-lease", "n1", Operation::Create).admit(&state).await.unwrap();
        lease("kube-node-lease", "n1", Operation::Update).admit(&state).await.unwrap();
        assert_eq!(
            refusal(lease("kube-node-lease", "n2", Operation::Update).admit(&state).await),
            "leases.coordination.k8s.io \"n2\" is forbidden: can only access node lease with the same name as the requesting node"
        );
        assert_eq!(
            refusal(lease("default", "n1", Operation::Create).admit(&state).await),
            "leases.coordination.k8s.io \"n1\" is forbidden: can only access leases in the \"kube-node-lease\" system namespace"
        );
        let mut csi = request(Operation::Update, "csinodes", "n2");
        csi.group = "storage.k8s.io";
        assert_eq!(
            refusal(csi.admit(&state).await),
            "csinodes.storage.k8s.io \"n2\" is forbidden: can only access CSINode with the same name as the requesting node"
        );
        let mut slice = request(Operation::Create, "resourceslices", "s");
        slice.group = "resource.k8s.io";
        slice.object = Some(json!({"metadata": {"name": "s"}, "spec": {"nodeName": "n2"}}));
        assert_eq!(
            refusal(slice.admit(&state).await),
            "resourceslices.resource.k8s.io \"s\" is forbidden: can only create ResourceSlice with the same NodeName as the requesting node"
        );
        // Claims: the status only, and in it the resize fields only.
        let claim = json!({"metadata": {"name": "c", "resourceVersion": "1"}, "spec": {"volumeName": "v"},
            "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}});
        let claim_write = |old: &Value, new: Value, subresource| {
            let mut r = request(Operation::Update, "persistentvolumeclaims", "c");
            r.subresource = subresource;
            r.old = Some(old.clone());
            r.object = Some(new);
            r
        };
        let mut resized = claim.clone();
        resized["status"]["capacity"]["storage"] = json!("2Gi");
        resized["status"]["conditions"] = json!([{"type": "Resizing", "status": "True"}]);
        resized["metadata"]["resourceVersion"] = json!("2");
        claim_write(&claim, resized, "status").admit(&state).await.unwrap();
        let mut lost = claim.clone();
        lost["status"]["phase"] = json!("Lost");
        lost["metadata"]["labels"] = json!({"a": "b"});
        assert_eq!(
            refusal(claim_write(&claim, lost, "status").admit(&state).await),
            "persistentvolumeclaims \"c\" is forbidden: node \"n1\" is not allowed to update fields other than status.quantity and status.conditions: changed metadata.labels, status.phase"
        );
        assert_eq!(
            refusal(claim_write(&claim, claim.clone(), "").admit(&state).await),
            "persistentvolumeclaims \"c\" is forbidden: may only update PVC status"
        );
        // Tokens only for pods on the node, named with their uid.
        let token = |reference: Value| {
            let mut r = request(Operation::Create, "serviceaccounts", "default");
            r.subresource = "token";
            r.object = Some(json!({"spec": {"boundObjectRef": reference}}));
            r
        };
        let bound = |name: &str, uid: &str| json!({"apiVersion": "v1", "kind": "Pod", "name": name, "uid": uid});
        token(bound("p", "pod-uid")).admit(&state).await.unwrap();
        for (reference, why) in [
            (json!(null), "node requested token not bound to a pod"),
            (json!({"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u"}), "node requested token not bound to a pod"),
            (bound("p", ""), "node requested token with a pod binding without a uid"),
            (bound("p", "old"), "the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated"),
            (bound("other", "pod-uid"), "node requested token bound to a pod scheduled on a different node"),
        ] {
            assert_eq!(
                refusal(token(reference).admit(&state).await),
                format!("serviceaccounts \"default\" is forbidden: {why}")
            );
        }
        assert_eq!(
            refusal(token(bound("gone", "u")).admit(&state).await),
            "pods \"gone\" not found"
        );
    }
}
