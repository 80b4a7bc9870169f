//! What a pod references by name, as upstream's pod visitors (`VisitPodSecretNames`,
//! `VisitPodConfigmapNames`) see it: the plugins that keep pods from reaching other objects
//! (ServiceAccount for mirror pods and mountable secrets, NodeRestriction for the pods a node
//! creates) ask here rather than walk the pod themselves.

use serde_json::Value;

/// Every container of the pod: init containers, containers, then ephemeral containers.
pub fn all_containers(pod: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |list| pod["spec"][list].as_array().into_iter().flatten())
}

/// The volumes of the pod.
pub fn volumes(pod: &Value) -> impl Iterator<Item = &Value> {
    pod["spec"]["volumes"].as_array().into_iter().flatten()
}

fn named(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(String::from)
}

/// The Secrets the pod names: pull secrets, environment of every container, and volumes
/// (secret, projected secrets, and the volume plugins that take a secret reference).
pub fn secret_names(pod: &Value) -> Vec<String> {
    let mut names = Vec::new();
    for pull in pod["spec"]["imagePullSecrets"].as_array().into_iter().flatten() {
        names.extend(named(&pull["name"]));
    }
    for container in all_containers(pod) {
        for from in container["envFrom"].as_array().into_iter().flatten() {
            names.extend(named(&from["secretRef"]["name"]));
        }
        for env in container["env"].as_array().into_iter().flatten() {
            names.extend(named(&env["valueFrom"]["secretKeyRef"]["name"]));
        }
    }
    for volume in volumes(pod) {
        names.extend(named(&volume["secret"]["secretName"]));
        names.extend(named(&volume["azureFile"]["secretName"]));
        names.extend(named(&volume["csi"]["nodePublishSecretRef"]["name"]));
        for plugin in ["cephfs", "cinder", "flexVolume", "rbd", "scaleIO", "iscsi", "storageos"] {
            names.extend(named(&volume[plugin]["secretRef"]["name"]));
        }
        for source in volume["projected"]["sources"].as_array().into_iter().flatten() {
            names.extend(named(&source["secret"]["name"]));
        }
    }
    names
}

/// The ConfigMaps the pod names: environment of every container, and volumes.
pub fn config_map_names(pod: &Value) -> Vec<String> {
    let mut names = Vec::new();
    for container in all_containers(pod) {
        for from in container["envFrom"].as_array().into_iter().flatten() {
            names.extend(named(&from["configMapRef"]["name"]));
        }
        for env in container["env"].as_array().into_iter().flatten() {
            names.extend(named(&env["valueFrom"]["configMapKeyRef"]["name"]));
        }
    }
    for volume in volumes(pod) {
        names.extend(named(&volume["configMap"]["name"]));
        for source in volume["projected"]["sources"].as_array().into_iter().flatten() {
            names.extend(named(&source["configMap"]["name"]));
        }
    }
    names
}

/// Whether a projected volume of the pod has a source of `kind` (`serviceAccountToken`,
/// `clusterTrustBundle`, ...).
pub fn has_projection(pod: &Value, kind: &str) -> bool {
    volumes(pod).any(|v| {
        v["projected"]["sources"].as_array().into_iter().flatten().any(|s| !s[kind].is_null())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_are_found_wherever_a_pod_makes_them() {
        let pod = json!({"spec": {
            "imagePullSecrets": [{"name": "pull"}],
            "initContainers": [{"envFrom": [{"secretRef": {"name": "init-env"}}]}],
            "containers": [{"env": [
                {"name": "A", "valueFrom": {"secretKeyRef": {"name": "key", "key": "k"}}},
                {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "cm-key", "key": "k"}}}
            ]}],
            "ephemeralContainers": [{"envFrom": [{"configMapRef": {"name": "debug"}}]}],
            "volumes": [
                {"name": "s", "secret": {"secretName": "vol"}},
                {"name": "c", "configMap": {"name": "cm-vol"}},
                {"name": "r", "rbd": {"secretRef": {"name": "ceph"}}},
                {"name": "p", "projected": {"sources": [
                    {"secret": {"name": "proj"}}, {"configMap": {"name": "cm-proj"}},
                    {"serviceAccountToken": {"path": "token"}}
                ]}}
            ]
        }});
        assert_eq!(secret_names(&pod), ["pull", "init-env", "key", "vol", "ceph", "proj"]);
        assert_eq!(config_map_names(&pod), ["cm-key", "debug", "cm-vol", "cm-proj"]);
        assert!(has_projection(&pod, "serviceAccountToken"));
        assert!(!has_projection(&pod, "clusterTrustBundle"));
        assert!(secret_names(&json!({"spec": {"containers": [{}]}})).is_empty());
    }
}
