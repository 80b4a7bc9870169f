//! Where a resource keeps the pod it stands for: a Pod is one, and the workload resources
//! (upstream's list: ReplicationControllers, PodTemplates, ReplicaSets, Deployments,
//! StatefulSets, DaemonSets, Jobs, CronJobs) hold a pod template whose pods they will make.

use serde_json::Value;

/// The resources whose objects carry a pod, by group and resource, with the path of the pod
/// (an object with `metadata` and `spec`) in their objects.
const PODS: &[(&str, &str, &[&str])] = &[
    ("", "pods", &[]),
    ("", "replicationcontrollers", &["spec", "template"]),
    ("", "podtemplates", &["template"]),
    ("apps", "replicasets", &["spec", "template"]),
    ("apps", "deployments", &["spec", "template"]),
    ("apps", "statefulsets", &["spec", "template"]),
    ("apps", "daemonsets", &["spec", "template"]),
    ("batch", "jobs", &["spec", "template"]),
    ("batch", "cronjobs", &["spec", "jobTemplate", "spec", "template"]),
];

/// Whether objects of `resource` may carry a pod.
pub fn has_pod(group: &str, resource: &str) -> bool {
    PODS.iter().any(|(g, r, _)| (*g, *r) == (group, resource))
}

/// The pod (or pod template) in `object` of `resource`; `None` when the object has none (a
/// ReplicationController may leave out its template).
pub fn pod_of<'a>(group: &str, resource: &str, object: &'a Value) -> Option<&'a Value> {
    let (_, _, path) = PODS.iter().find(|(g, r, _)| (*g, *r) == (group, resource))?;
    let pod = path.iter().try_fold(object, |v, key| v.get(key))?;
    (!pod.is_null()).then_some(pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_keeps_its_pod_where_upstream_reads_it() {
        let template = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}});
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": template}}}});
        assert_eq!(pod_of("batch", "cronjobs", &cron), Some(&template));
        let deployment = json!({"spec": {"template": template}});
        assert_eq!(pod_of("apps", "deployments", &deployment), Some(&template));
        assert_eq!(pod_of("", "podtemplates", &json!({"template": template})), Some(&template));
        assert_eq!(pod_of("", "pods", &template), Some(&template));
        assert_eq!(pod_of("", "replicationcontrollers", &json!({"spec": {}})), None);
        assert_eq!(
            pod_of("", "replicationcontrollers", &json!({"spec": {"template": null}})),
            None
        );
        assert!(has_pod("apps", "statefulsets") && !has_pod("apps", "controllerrevisions"));
        assert_eq!(pod_of("", "configmaps", &template), None);
    }
}
