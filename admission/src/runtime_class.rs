//! `RuntimeClass`: a new pod that names a RuntimeClass (`spec.runtimeClassName`) gets the
//! class's pod overhead (`overhead.podFixed` as `spec.overhead`) and its scheduling
//! constraints (`scheduling.nodeSelector` merged into the pod's node selector,
//! `scheduling.tolerations` into its tolerations). A class that does not exist is refused,
//! and so is a pod that sets an overhead of its own that differs from its class's, or one
//! without a class that defines an overhead, or a node selector that contradicts the class's.
//!
//! As upstream: only pod creates (not their subresources) are looked at.

use serde_json::{Map, Value};

use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::state::{ClusterState, Freshness, GroupResource};
use crate::{tolerations, MutatingPlugin, ValidatingPlugin};
use rkube_apis::quota::list::{from_json as resource_list, ResourceList};

pub const NAME: &str = "RuntimeClass";

const RUNTIME_CLASSES: GroupResource<'static> = GroupResource::new("node.k8s.io", "runtimeclasses");

#[derive(Clone, Copy, Debug, Default)]
pub struct RuntimeClass;

/// Whether this is a pod create the plugin looks at.
fn handles(a: &Attributes<'_>) -> bool {
    a.operation == Operation::Create && a.subresource.is_empty() && a.is("", "pods")
}

/// The class the pod names (`None` when it names none), or the refusal of a class that does
/// not exist.
async fn class_of(
    a: &Attributes<'_>,
    state: &dyn ClusterState,
) -> Result<Option<Value>, AdmissionError> {
    let Some(name) = a.object().and_then(|p| p["spec"]["runtimeClassName"].as_str()) else {
        return Ok(None);
    };
    // A miss is confirmed against the store before it is reported (upstream's live lookup).
    match state.get(RUNTIME_CLASSES, None, name, Freshness::Cached).await? {
        Some(class) => Ok(Some(class.value())),
        None => Err(AdmissionError::forbidden(
            a,
            format!("pod rejected: RuntimeClass {name:?} not found"),
        )),
    }
}

/// The class's overhead (`None` when it defines none).
fn overhead(class: &Value) -> Option<&Value> {
    class.get("overhead").filter(|o| !o.is_null()).map(|o| &o["podFixed"])
}

/// Resource lists equal as upstream's semantic equality sees them: same names, equal
/// quantities (`1Gi` is `1024Mi`), an absent list the same as an empty one.
fn same_resources(a: &Value, b: &Value) -> bool {
    let (a, b): (ResourceList, ResourceList) = (resource_list(a), resource_list(b));
    a == b
}

fn has_overhead(pod: &Value) -> bool {
    pod["spec"]["overhead"].as_object().is_some_and(|o| !o.is_empty())
}

const MISMATCH: &str = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead";

/// Gives the pod the class's overhead (upstream's `setOverhead`).
fn set_overhead(a: &mut Attributes<'_>, class: &Value) -> Result<(), AdmissionError> {
    let Some(fixed) = overhead(class) else { return Ok(()) };
    let Some(pod) = a.object() else { return Ok(()) };
    if has_overhead(pod) && !same_resources(fixed, &pod["spec"]["overhead"]) {
        return Err(AdmissionError::forbidden(a, MISMATCH));
    }
    let Some(spec) = spec_of(a) else { return Ok(()) };
    match fixed.as_object().filter(|f| !f.is_empty()) {
        Some(fixed) => {
            let canonical = fixed.iter().map(|(k, v)| {
                let q = rkube_apis::quantity::Quantity::parse(v);
                (k.clone(), q.map_or_else(|| v.clone(), |q| Value::String(q.canonical())))
            });
            spec.insert("overhead".into(), Value::Object(canonical.collect()));
        }
        None => {
            spec.remove("overhead");
        }
    }
    Ok(())
}

/// Merges the class's node selector and tolerations into the pod's (upstream's
/// `setScheduling`).
fn set_scheduling(a: &mut Attributes<'_>, class: &Value) -> Result<(), AdmissionError> {
    let scheduling = &class["scheduling"];
    if scheduling.is_null() {
        return Ok(());
    }
    let Some(pod) = a.object() else { return Ok(()) };
    let wanted = scheduling["nodeSelector"].as_object();
    let mut selector = pod["spec"]["nodeSelector"].as_object().cloned();
    if let Some(selector) = selector.as_mut() {
        for (key, value) in wanted.into_iter().flatten() {
            let (class_value, pod_value) = (value.as_str().unwrap_or(""), &selector.get(key));
            if let Some(pod_value) = pod_value.and_then(Value::as_str).filter(|v| *v != class_value)
            {
                let reason = format!("conflict: runtimeClass.scheduling.nodeSelector[{key}] = {class_value}; pod.spec.nodeSelector[{key}] = {pod_value}");
                return Err(AdmissionError::forbidden(a, reason));
            }
            selector.insert(key.clone(), value.clone());
        }
    } else {
        selector = wanted.cloned();
    }
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let merged =
        tolerations::merge(&list(&pod["spec"]["tolerations"]), &list(&scheduling["tolerations"]));
    let Some(spec) = spec_of(a) else { return Ok(()) };
    match selector.filter(|s| !s.is_empty()) {
        Some(selector) => spec.insert("nodeSelector".into(), Value::Object(selector)),
        None => spec.remove("nodeSelector"),
    };
    match merged.is_empty() {
        true => spec.remove("tolerations"),
        false => spec.insert("tolerations".into(), Value::Array(merged)),
    };
    Ok(())
}

fn spec_of<'a>(a: &'a mut Attributes<'_>) -> Option<&'a mut Map<String, Value>> {
    a.object.as_deref_mut()?.get_mut("spec")?.as_object_mut()
}

#[async_trait::async_trait]
impl MutatingPlugin for RuntimeClass {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if !handles(a) {
            return Ok(());
        }
        let Some(class) = class_of(a, state).await? else { return Ok(()) };
        set_overhead(a, &class)?;
        set_scheduling(a, &class)
    }
}

#[async_trait::async_trait]
impl ValidatingPlugin for RuntimeClass {
    fn name(&self) -> &'static str {
        NAME
    }

    /// The pod's overhead is its class's, as nothing but this plugin may set it.
    async fn validate(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if !handles(a) {
            return Ok(());
        }
        let class = class_of(a, state).await?;
        let Some(pod) = a.object().filter(|p| has_overhead(p)) else { return Ok(()) };
        match class.as_ref().and_then(overhead) {
            Some(fixed) if same_resources(fixed, &pod["spec"]["overhead"]) => Ok(()),
            Some(_) => Err(AdmissionError::forbidden(a, MISMATCH)),
            None => Err(AdmissionError::forbidden(
                a,
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use crate::state::Snapshot;
    use serde_json::json;

    fn cluster() -> Snapshot {
        Snapshot::default()
            .with(
                "node.k8s.io",
                "runtimeclasses",
                json!({"metadata": {"name": "kata"}, "handler": "kata",
                       "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
                       "scheduling": {"nodeSelector": {"runtime": "kata"},
                                      "tolerations": [{"key": "kata", "operator": "Exists", "effect": "NoSchedule"}]}}),
            )
            .with("node.k8s.io", "runtimeclasses", json!({"metadata": {"name": "runc"}, "handler": "runc"}))
    }

    async fn run(
        state: &Snapshot,
        operation: Operation,
        pod: &mut Value,
    ) -> Result<(), AdmissionError> {
        let mut a = Attributes {
            operation,
            user: UserInfo::default(),
            resource: GroupVersionResource { group: "", version: "v1", resource: "pods" },
            subresource: "",
            kind: GroupVersionKind { group: "", version: "v1", kind: "Pod" },
            namespace: "ns",
            name: "",
            object: Some(pod),
            old_object: None,
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        };
        RuntimeClass.admit(&mut a, state).await?;
        RuntimeClass.validate(&a, state).await
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p"}, "spec": spec})
    }

    #[tokio::test]
    async fn the_class_gives_the_pod_its_overhead_and_scheduling() {
        let state = cluster();
        let mut p = pod(json!({"runtimeClassName": "kata", "containers": [],
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "kata", "operator": "Equal", "value": "x", "effect": "NoSchedule"},
                            {"key": "other", "operator": "Exists"}]}));
        run(&state, Operation::Create, &mut p).await.unwrap();
        assert_eq!(p["spec"]["overhead"], json!({"cpu": "250m", "memory": "120Mi"}));
        assert_eq!(p["spec"]["nodeSelector"], json!({"disk": "ssd", "runtime": "kata"}));
        assert_eq!(
            p["spec"]["tolerations"],
            json!([{"key": "other", "operator": "Exists"},
                   {"key": "kata", "operator": "Exists", "effect": "NoSchedule"}])
        );
        // The same overhead, written otherwise, is accepted.
        let mut same = pod(
            json!({"runtimeClassName": "kata", "overhead": {"cpu": "0.25", "memory": "122880Ki"}}),
        );
        run(&state, Operation::Create, &mut same).await.unwrap();
        // A class without overhead or scheduling changes nothing.
        let mut plain = pod(json!({"runtimeClassName": "runc", "containers": []}));
        run(&state, Operation::Create, &mut plain).await.unwrap();
        assert_eq!(plain, pod(json!({"runtimeClassName": "runc", "containers": []})));
        // Updates are left alone.
        let mut update = pod(json!({"runtimeClassName": "gone"}));
        run(&state, Operation::Update, &mut update).await.unwrap();
    }

    async fn refusal(mut p: Value) -> String {
        run(&cluster(), Operation::Create, &mut p).await.unwrap_err().to_string()
    }

    #[tokio::test]
    async fn refusals_read_as_upstream() {
        assert_eq!(
            refusal(pod(json!({"runtimeClassName": "gvisor"}))).await,
            "pods \"p\" is forbidden: pod rejected: RuntimeClass \"gvisor\" not found"
        );
        assert_eq!(
            refusal(pod(json!({"runtimeClassName": "kata", "overhead": {"cpu": "1"}}))).await,
            "pods \"p\" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
        );
        let without = "pods \"p\" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead";
        assert_eq!(
            refusal(pod(json!({"runtimeClassName": "runc", "overhead": {"cpu": "1"}}))).await,
            without
        );
        assert_eq!(refusal(pod(json!({"overhead": {"cpu": "1"}}))).await, without);
        assert_eq!(
            refusal(pod(json!({"runtimeClassName": "kata", "nodeSelector": {"runtime": "runc"}}))).await,
            "pods \"p\" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime] = kata; pod.spec.nodeSelector[runtime] = runc"
        );
    }
}
