//! `DefaultTolerationSeconds`: a pod that does not say how long it tolerates its node being
//! not ready or unreachable gets a `NoExecute` toleration of each for a bounded time (300 s
//! unless `--default-not-ready-toleration-seconds` / `--default-unreachable-toleration-seconds`
//! say otherwise). The node lifecycle controller taints a failed node with these keys, and the
//! taint eviction controller then evicts the pod once the time is up instead of at once.

use serde_json::{json, Value};

use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::state::ClusterState;
use crate::MutatingPlugin;

pub const NAME: &str = "DefaultTolerationSeconds";

/// The taint a node gets while its Ready condition is False.
pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The taint a node gets while its Ready condition is Unknown (its kubelet stopped posting).
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

/// How long a pod tolerates each condition by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefaultTolerationSeconds {
    pub not_ready: i64,
    pub unreachable: i64,
}

impl Default for DefaultTolerationSeconds {
    fn default() -> Self {
        DefaultTolerationSeconds { not_ready: 300, unreachable: 300 }
    }
}

/// The plugin: pods (not their subresources) get the tolerations on create and update.
#[async_trait::async_trait]
impl MutatingPlugin for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        _: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if a.is("", "pods")
            && a.subresource.is_empty()
            && matches!(a.operation, Operation::Create | Operation::Update)
        {
            if let Some(pod) = a.object.as_deref_mut() {
                admit(pod, *self);
            }
        }
        Ok(())
    }
}

/// Adds the tolerations the pod lacks. A toleration covers a taint when its key is the
/// taint's or empty (any key) and its effect is `NoExecute` or empty (any effect).
pub fn admit(pod: &mut Value, seconds: DefaultTolerationSeconds) {
    let Some(spec) = pod.get_mut("spec").filter(|s| s.is_object()) else { return };
    let covers = |t: &Value, key: &str| {
        let k = t["key"].as_str().unwrap_or("");
        let effect = t["effect"].as_str().unwrap_or("");
        (k.is_empty() || k == key) && (effect.is_empty() || effect == "NoExecute")
    };
    let existing = spec["tolerations"].as_array().cloned().unwrap_or_default();
    let mut added = Vec::new();
    for (key, secs) in [(NOT_READY, seconds.not_ready), (UNREACHABLE, seconds.unreachable)] {
        if !existing.iter().any(|t| covers(t, key)) {
            added.push(json!({
                "key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": secs
            }));
        }
    }
    if added.is_empty() {
        return;
    }
    if !spec["tolerations"].is_array() {
        spec["tolerations"] = json!([]);
    }
    spec["tolerations"].as_array_mut().expect("tolerations list").extend(added);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tolerations(mut pod: Value) -> Value {
        admit(&mut pod, DefaultTolerationSeconds::default());
        pod["spec"]["tolerations"].clone()
    }

    #[test]
    fn a_pod_gets_both_tolerations_unless_it_has_its_own() {
        assert_eq!(
            tolerations(json!({"spec": {"containers": []}})),
            json!([
                {"key": NOT_READY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            ])
        );
        let own = json!({"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5});
        let got = tolerations(json!({"spec": {"tolerations": [own]}}));
        assert_eq!(got.as_array().unwrap().len(), 2);
        assert_eq!((&got[0], &got[1]["key"]), (&own, &json!(NOT_READY)));
        // A toleration of everything (DaemonSet pods often carry one) covers both.
        let all = json!([{"operator": "Exists"}]);
        assert_eq!(tolerations(json!({"spec": {"tolerations": all.clone()}})), all);
        // A NoSchedule toleration of the key does not cover eviction.
        let no_schedule = json!({"key": NOT_READY, "operator": "Exists", "effect": "NoSchedule"});
        assert_eq!(
            tolerations(json!({"spec": {"tolerations": [no_schedule]}})).as_array().unwrap().len(),
            3
        );
        let mut custom = json!({"spec": {}});
        admit(&mut custom, DefaultTolerationSeconds { not_ready: 60, unreachable: 30 });
        assert_eq!(custom["spec"]["tolerations"][1]["tolerationSeconds"], 30);
    }

    #[tokio::test]
    async fn the_plugin_changes_pods_only_and_not_their_subresources() {
        use crate::attributes::*;
        let state = crate::state::Snapshot::default();
        let plugin = DefaultTolerationSeconds::default();
        for (resource, subresource, operation, changed) in [
            ("pods", "", Operation::Create, true),
            ("pods", "", Operation::Update, true),
            ("pods", "status", Operation::Update, false),
            ("pods", "", Operation::Delete, false),
            ("configmaps", "", Operation::Create, false),
        ] {
            let mut object = json!({"spec": {}});
            let mut a = Attributes {
                operation,
                user: UserInfo::default(),
                resource: GroupVersionResource { group: "", version: "v1", resource },
                subresource,
                kind: GroupVersionKind { group: "", version: "v1", kind: "" },
                namespace: "ns",
                name: "x",
                object: Some(&mut object),
                old_object: None,
                dry_run: false,
                options: OperationOptions::None,
                warnings: Default::default(),
                audit_annotations: Default::default(),
            };
            plugin.admit(&mut a, &state).await.unwrap();
            assert_eq!(
                object["spec"]["tolerations"].is_array(),
                changed,
                "{resource}/{subresource} {operation:?}"
            );
        }
    }
}
