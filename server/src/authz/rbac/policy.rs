//! Upstream's bootstrap RBAC policy: the ClusterRoles, ClusterRoleBindings, Roles and
//! RoleBindings every Kubernetes cluster has (`cluster-admin`, `admin`/`edit`/`view`,
//! `system:discovery`, `system:node`, the `system:controller:*` roles, ...), with the
//! labels and the `autoupdate` annotation upstream gives them. [`super::reconcile`] writes
//! them at every start.
//!
//! The rules are written in a compact form: `rule("get,list,watch", ",apps", "pods,pods/log")`
//! is one PolicyRule (comma-separated verbs, API groups where `""` is the core group, and
//! resources).

use serde_json::{json, Value};

/// The label every bootstrap object carries.
pub const BOOTSTRAP_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// Objects with this annotation set to `"true"` (or without it) are brought back to the
/// policy at every start; `"false"` leaves an administrator's changes alone.
pub const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

const READ: &str = "get,list,watch";
const WRITE: &str = "create,delete,deletecollection,patch,update";
const READ_WRITE: &str = "create,delete,deletecollection,get,list,patch,update,watch";
const EVENTS: &str = ",events.k8s.io";

fn split(list: &str) -> Vec<&str> {
    list.split(',').collect()
}

/// One resource rule.
fn rule(verbs: &str, groups: &str, resources: &str) -> Value {
    json!({"verbs": split(verbs), "apiGroups": split(groups), "resources": split(resources)})
}

/// One resource rule limited to some object names.
fn named(verbs: &str, groups: &str, resources: &str, names: &str) -> Value {
    let mut r = rule(verbs, groups, resources);
    r["resourceNames"] = json!(split(names));
    r
}

/// One non-resource rule.
fn paths(verbs: &str, urls: &str) -> Value {
    json!({"verbs": split(verbs), "nonResourceURLs": split(urls)})
}

fn events() -> Value {
    rule("create,patch,update", EVENTS, "events")
}

fn metadata(name: &str, namespace: Option<&str>, labels: &[(&str, &str)]) -> Value {
    let mut labels: serde_json::Map<String, Value> =
        labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    labels.insert(BOOTSTRAP_LABEL.0.into(), json!(BOOTSTRAP_LABEL.1));
    let mut meta = json!({
        "name": name,
        "labels": labels,
        "annotations": {AUTOUPDATE: "true"},
    });
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    meta
}

fn cluster_role(name: &str, labels: &[(&str, &str)], rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": metadata(name, None, labels),
        "rules": rules,
    })
}

/// A ClusterRole whose rules the aggregation controller fills from the roles labelled
/// `rbac.authorization.k8s.io/aggregate-to-<to>`.
fn aggregated(name: &str, labels: &[(&str, &str)], to: &str) -> Value {
    let mut role = cluster_role(name, labels, Vec::new());
    role["aggregationRule"] = json!({"clusterRoleSelectors": [
        {"matchLabels": {format!("rbac.authorization.k8s.io/aggregate-to-{to}"): "true"}}
    ]});
    role
}

fn role(namespace: &str, name: &str, rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": metadata(name, Some(namespace), &[]),
        "rules": rules,
    })
}

/// A subject: `User:name`, `Group:name` or `ServiceAccount:namespace/name`.
fn subject(spec: &str) -> Value {
    let (kind, name) = spec.split_once(':').expect("kind:name");
    match kind {
        "ServiceAccount" => {
            let (ns, name) = name.split_once('/').expect("namespace/name");
            json!({"kind": kind, "name": name, "namespace": ns})
        }
        _ => json!({"kind": kind, "apiGroup": "rbac.authorization.k8s.io", "name": name}),
    }
}

fn cluster_binding(name: &str, role: &str, subjects: &[&str]) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": metadata(name, None, &[]),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects.iter().map(|s| subject(s)).collect::<Vec<_>>(),
    })
}

fn binding(namespace: &str, name: &str, role: &str, subjects: &[&str]) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": metadata(name, Some(namespace), &[]),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
        "subjects": subjects.iter().map(|s| subject(s)).collect::<Vec<_>>(),
    })
}

const TO_ADMIN: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-admin", "true");
const TO_EDIT: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-edit", "true");
const TO_VIEW: (&str, &str) = ("rbac.authorization.k8s.io/aggregate-to-view", "true");

/// What the kubelet may do beyond its own objects (upstream's `NodeRules`, the rules of
/// `system:node`); the Node authorizer grants them to every node.
pub fn node_rules() -> Vec<Value> {
    vec![
        rule("create", "authentication.k8s.io", "tokenreviews"),
        rule("create", "authorization.k8s.io", "localsubjectaccessreviews,subjectaccessreviews"),
        rule(READ, "", "services"),
        rule("create,get,list,watch", "", "nodes"),
        rule("patch,update", "", "nodes/status"),
        rule("patch,update", "", "nodes"),
        rule("create,patch,update", "", "events"),
        rule(READ, "", "pods"),
        rule("create,delete", "", "pods"),
        rule("patch,update", "", "pods/status"),
        rule("create", "", "pods/eviction"),
        rule(READ, "", "configmaps,secrets"),
        rule("get", "", "persistentvolumeclaims,persistentvolumes"),
        rule("get", "", "endpoints"),
        rule("create,get,list,watch", "certificates.k8s.io", "certificatesigningrequests"),
        rule("create,delete,get,patch,update", "coordination.k8s.io", "leases"),
        rule("get", "storage.k8s.io", "volumeattachments"),
        rule("create", "", "serviceaccounts/token"),
        rule("get,patch,update", "", "persistentvolumeclaims/status"),
        rule(READ, "storage.k8s.io", "csidrivers"),
        rule("create,delete,get,patch,update", "storage.k8s.io", "csinodes"),
        rule(READ, "node.k8s.io", "runtimeclasses"),
    ]
}

/// The default ClusterRoles.
pub fn cluster_roles() -> Vec<Value> {
    let mut roles = vec![
        cluster_role(
            "cluster-admin",
            &[],
            vec![rule("*", "*", "*"), paths("*", "*")],
        ),
        aggregated("admin", &[], "admin"),
        aggregated("edit", &[TO_ADMIN], "edit"),
        aggregated("view", &[TO_EDIT], "view"),
        cluster_role(
            "system:aggregate-to-admin",
            &[TO_ADMIN],
            vec![
                rule("create", "authorization.k8s.io", "localsubjectaccessreviews"),
                rule(READ_WRITE, "rbac.authorization.k8s.io", "rolebindings,roles"),
            ],
        ),
        cluster_role(
            "system:aggregate-to-edit",
            &[TO_EDIT],
            vec![
                rule(READ, "", "pods/attach,pods/exec,pods/portforward,pods/proxy,secrets,services/proxy"),
                rule("impersonate", "", "serviceaccounts"),
                rule(WRITE, "", "pods,pods/attach,pods/exec,pods/portforward,pods/proxy"),
                rule("create", "", "pods/eviction"),
                rule(WRITE, "", "configmaps,events,persistentvolumeclaims,replicationcontrollers,replicationcontrollers/scale,secrets,serviceaccounts,services,services/proxy"),
                rule("create", "", "serviceaccounts/token"),
                rule(WRITE, "apps", "daemonsets,deployments,deployments/rollback,deployments/scale,replicasets,replicasets/scale,statefulsets,statefulsets/scale"),
                rule(WRITE, "autoscaling", "horizontalpodautoscalers"),
                rule(WRITE, "batch", "cronjobs,jobs"),
                rule(WRITE, "extensions", "daemonsets,deployments,deployments/rollback,deployments/scale,ingresses,networkpolicies,replicasets,replicasets/scale,replicationcontrollers/scale"),
                rule(WRITE, "policy", "poddisruptionbudgets"),
                rule(WRITE, "networking.k8s.io", "ingresses,networkpolicies"),
                rule(READ_WRITE, "coordination.k8s.io", "leases"),
            ],
        ),
        cluster_role(
            "system:aggregate-to-view",
            &[TO_VIEW],
            vec![
                rule(READ, "", "configmaps,endpoints,persistentvolumeclaims,persistentvolumeclaims/status,pods,replicationcontrollers,replicationcontrollers/scale,serviceaccounts,services,services/status"),
                rule(READ, "", "bindings,events,limitranges,namespaces/status,pods/log,pods/status,replicationcontrollers/status,resourcequotas,resourcequotas/status"),
                rule(READ, "", "namespaces"),
                rule(READ, "discovery.k8s.io", "endpointslices"),
                rule(READ, "apps", "controllerrevisions,daemonsets,daemonsets/status,deployments,deployments/scale,deployments/status,replicasets,replicasets/scale,replicasets/status,statefulsets,statefulsets/scale,statefulsets/status"),
                rule(READ, "autoscaling", "horizontalpodautoscalers,horizontalpodautoscalers/status"),
                rule(READ, "batch", "cronjobs,cronjobs/status,jobs,jobs/status"),
                rule(READ, "extensions", "daemonsets,daemonsets/status,deployments,deployments/scale,deployments/status,ingresses,ingresses/status,networkpolicies,replicasets,replicasets/scale,replicasets/status,replicationcontrollers/scale"),
                rule(READ, "policy", "poddisruptionbudgets,poddisruptionbudgets/status"),
                rule(READ, "networking.k8s.io", "ingresses,ingresses/status,networkpolicies"),
            ],
        ),
        cluster_role(
            "system:auth-delegator",
            &[],
            vec![
                rule("create", "authentication.k8s.io", "tokenreviews"),
                rule("create", "authorization.k8s.io", "subjectaccessreviews"),
            ],
        ),
        cluster_role(
            "system:basic-user",
            &[],
            vec![
                rule("create", "authorization.k8s.io", "selfsubjectaccessreviews,selfsubjectrulesreviews"),
                rule("create", "authentication.k8s.io", "selfsubjectreviews"),
            ],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            &[],
            vec![rule("create", "certificates.k8s.io", "certificatesigningrequests/nodeclient")],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            &[],
            vec![rule("create", "certificates.k8s.io", "certificatesigningrequests/selfnodeclient")],
        ),
    ];
    for signer in [
        "kube-apiserver-client",
        "kube-apiserver-client-kubelet",
        "kubelet-serving",
        "legacy-unknown",
    ] {
        roles.push(cluster_role(
            &format!("system:certificates.k8s.io:{signer}-approver"),
            &[],
            vec![named(
                "approve",
                "certificates.k8s.io",
                "signers",
                &format!("kubernetes.io/{signer}"),
            )],
        ));
    }
    roles.extend([
        cluster_role(
            "system:discovery",
            &[],
            vec![paths("get", "/api,/api/*,/apis,/apis/*,/healthz,/livez,/openapi,/openapi/*,/readyz,/version,/version/")],
        ),
        cluster_role(
            "system:heapster",
            &[],
            vec![rule(READ, "", "events,namespaces,nodes,pods"), rule(READ, "extensions", "deployments")],
        ),
        cluster_role("system:kube-aggregator", &[], vec![rule(READ, "", "endpoints,services")]),
        cluster_role(
            "system:kube-controller-manager",
            &[],
            vec![
                events(),
                rule("create", "coordination.k8s.io", "leases"),
                named("get,update", "coordination.k8s.io", "leases", "kube-controller-manager"),
                rule("create", "", "secrets,serviceaccounts"),
                rule("delete", "", "secrets"),
                rule("get", "", "configmaps,namespaces,secrets,serviceaccounts"),
                rule("update", "", "secrets,serviceaccounts"),
                rule("create", "authentication.k8s.io", "tokenreviews"),
                rule("create", "authorization.k8s.io", "subjectaccessreviews"),
                rule("list,watch", "*", "*"),
                rule("create", "", "serviceaccounts/token"),
            ],
        ),
        cluster_role("system:kube-dns", &[], vec![rule("list,watch", "", "endpoints,services")]),
        cluster_role(
            "system:kube-scheduler",
            &[],
            vec![
                events(),
                rule("create", "coordination.k8s.io", "leases"),
                named("get,update", "coordination.k8s.io", "leases", "kube-scheduler"),
                rule(READ, "", "nodes"),
                rule("delete,get,list,watch", "", "pods"),
                rule("create", "", "bindings,pods/binding"),
                rule("patch,update", "", "pods/status"),
                rule(READ, "", "replicationcontrollers,services"),
                rule(READ, "apps,extensions", "replicasets"),
                rule(READ, "apps", "statefulsets"),
                rule(READ, "policy", "poddisruptionbudgets"),
                rule(READ, "", "persistentvolumeclaims,persistentvolumes"),
                rule("create", "authentication.k8s.io", "tokenreviews"),
                rule("create", "authorization.k8s.io", "subjectaccessreviews"),
                rule(READ, "storage.k8s.io", "csinodes"),
                rule(READ, "", "namespaces"),
                rule(READ, "storage.k8s.io", "csidrivers"),
                rule(READ, "storage.k8s.io", "csistoragecapacities"),
            ],
        ),
        cluster_role(
            "system:kubelet-api-admin",
            &[],
            vec![
                rule(READ, "", "nodes"),
                rule("proxy", "", "nodes"),
                rule("*", "", "nodes/log,nodes/metrics,nodes/proxy,nodes/stats"),
            ],
        ),
        cluster_role(
            "system:monitoring",
            &[],
            vec![paths("get", "/healthz,/healthz/*,/livez,/livez/*,/metrics,/metrics/slis,/readyz,/readyz/*")],
        ),
        cluster_role("system:node", &[], node_rules()),
        cluster_role(
            "system:node-bootstrapper",
            &[],
            vec![rule("create,get,list,watch", "certificates.k8s.io", "certificatesigningrequests")],
        ),
        cluster_role(
            "system:node-problem-detector",
            &[],
            vec![rule("get", "", "nodes"), rule("patch", "", "nodes/status"), events()],
        ),
        cluster_role(
            "system:node-proxier",
            &[],
            vec![
                rule("list,watch", "", "endpoints,services"),
                rule(READ, "", "nodes"),
                events(),
                rule("list,watch", "discovery.k8s.io", "endpointslices"),
            ],
        ),
        cluster_role(
            "system:persistent-volume-provisioner",
            &[],
            vec![
                rule("create,delete,get,list,watch", "", "persistentvolumes"),
                rule("get,list,update,watch", "", "persistentvolumeclaims"),
                rule(READ, "storage.k8s.io", "storageclasses"),
                rule("watch", "", "events"),
                events(),
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            vec![paths("get", "/healthz,/livez,/readyz,/version,/version/")],
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            &[],
            vec![paths("get", "/.well-known/openid-configuration,/openid/v1/jwks")],
        ),
        cluster_role(
            "system:volume-scheduler",
            &[],
            vec![
                rule("get,list,patch,update,watch", "", "persistentvolumes"),
                rule(READ, "storage.k8s.io", "storageclasses"),
                rule("get,list,patch,update,watch", "", "persistentvolumeclaims"),
            ],
        ),
    ]);
    // rkube's own: what the node's cluster DNS reads (CoreDNS's role in kubeadm's add-on).
    roles.push(cluster_role(
        "system:rkube-dns",
        &[],
        vec![
            rule("list,watch", "", "namespaces,services"),
            rule("list,watch", "discovery.k8s.io", "endpointslices"),
            rule("get", "", "nodes"),
        ],
    ));
    // rkube's own: what each node's local-path provisioner does (k3s's provisioner role).
    roles.push(cluster_role(
        "system:rkube-local-path-provisioner",
        &[],
        vec![
            rule(READ, "", "persistentvolumeclaims"),
            rule("create,delete,get,list,watch", "", "persistentvolumes"),
            rule(READ, "storage.k8s.io", "storageclasses"),
            rule("get", "", "nodes"),
            events(),
        ],
    ));
    roles.extend(
        controller_roles()
            .into_iter()
            .map(|(name, rules)| cluster_role(&format!("system:controller:{name}"), &[], rules)),
    );
    roles
}

/// The roles of the controllers that run with their own service accounts (in kube-system,
/// named as the controller), by controller name.
pub fn controller_roles() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "attachdetach-controller",
            vec![
                rule("list,watch", "", "persistentvolumeclaims,persistentvolumes"),
                rule(READ, "", "nodes"),
                rule("patch,update", "", "nodes/status"),
                rule("list,watch", "", "pods"),
                events(),
                rule("create,delete,get,list,watch", "storage.k8s.io", "volumeattachments"),
                rule(READ, "storage.k8s.io", "csidrivers"),
                rule(READ, "storage.k8s.io", "csinodes"),
            ],
        ),
        (
            "certificate-controller",
            vec![
                rule("delete,get,list,watch", "certificates.k8s.io", "certificatesigningrequests"),
                rule("update", "certificates.k8s.io", "certificatesigningrequests/approval,certificatesigningrequests/status"),
                named("approve", "certificates.k8s.io", "signers", "kubernetes.io/kube-apiserver-client-kubelet"),
                named("sign", "certificates.k8s.io", "signers", "kubernetes.io/kube-apiserver-client,kubernetes.io/kube-apiserver-client-kubelet,kubernetes.io/kubelet-serving,kubernetes.io/legacy-unknown"),
                rule("create", "authorization.k8s.io", "subjectaccessreviews"),
                events(),
            ],
        ),
        (
            "clusterrole-aggregation-controller",
            vec![rule("escalate,get,list,patch,update,watch", "rbac.authorization.k8s.io", "clusterroles")],
        ),
        (
            "cronjob-controller",
            vec![
                rule("get,list,update,watch", "batch", "cronjobs"),
                rule("create,delete,get,list,patch,update,watch", "batch", "jobs"),
                rule("update", "batch", "cronjobs/status"),
                rule("update", "batch", "cronjobs/finalizers"),
                rule("delete,list,watch", "", "pods"),
                events(),
            ],
        ),
        (
            "daemon-set-controller",
            vec![
                rule(READ, "apps,extensions", "daemonsets"),
                rule("update", "apps,extensions", "daemonsets/status"),
                rule("update", "apps,extensions", "daemonsets/finalizers"),
                rule("list,watch", "", "nodes"),
                rule("create,delete,list,patch,watch", "", "pods"),
                rule("create", "", "pods/binding"),
                rule("create,delete,get,list,patch,update,watch", "apps", "controllerrevisions"),
                events(),
            ],
        ),
        (
            "deployment-controller",
            vec![
                rule("get,list,update,watch", "apps,extensions", "deployments"),
                rule("update", "apps,extensions", "deployments/status"),
                rule("update", "apps,extensions", "deployments/finalizers"),
                rule("create,delete,get,list,patch,update,watch", "apps,extensions", "replicasets"),
                rule("get,list,update,watch", "", "pods"),
                events(),
            ],
        ),
        (
            "disruption-controller",
            vec![
                rule(READ, "apps,extensions", "deployments"),
                rule(READ, "apps,extensions", "replicasets"),
                rule(READ, "", "replicationcontrollers"),
                rule(READ, "policy", "poddisruptionbudgets"),
                rule(READ, "apps", "statefulsets"),
                rule("update", "policy", "poddisruptionbudgets/status"),
                rule("patch,update", "", "pods/status"),
                rule("get", "*", "*/scale"),
                events(),
            ],
        ),
        (
            "endpoint-controller",
            vec![
                rule(READ, "", "pods,services"),
                rule("create,delete,get,list,update,watch", "", "endpoints"),
                rule("create", "", "endpoints/restricted"),
                events(),
            ],
        ),
        (
            "endpointslice-controller",
            vec![
                rule(READ, "", "nodes,pods,services"),
                rule("update", "", "services/finalizers"),
                rule("create,delete,get,list,update,watch", "discovery.k8s.io", "endpointslices"),
                events(),
            ],
        ),
        (
            "endpointslicemirroring-controller",
            vec![
                rule(READ, "", "endpoints,services"),
                rule("update", "", "services/finalizers"),
                rule("update", "", "endpoints/finalizers"),
                rule("create,delete,get,list,update,watch", "discovery.k8s.io", "endpointslices"),
                events(),
            ],
        ),
        (
            "ephemeral-volume-controller",
            vec![
                rule(READ, "", "pods"),
                rule("update", "", "pods/finalizers"),
                rule("create,get,list,watch", "", "persistentvolumeclaims"),
                events(),
            ],
        ),
        (
            "expand-controller",
            vec![
                rule("get,list,patch,update,watch", "", "persistentvolumes"),
                rule("patch,update", "", "persistentvolumeclaims/status"),
                rule(READ, "", "persistentvolumeclaims"),
                events(),
            ],
        ),
        ("generic-garbage-collector", vec![rule("delete,get,list,patch,update,watch", "*", "*"), events()]),
        (
            "horizontal-pod-autoscaler",
            vec![
                rule(READ, "autoscaling", "horizontalpodautoscalers"),
                rule("update", "autoscaling", "horizontalpodautoscalers/status"),
                rule("get,update", "*", "*/scale"),
                rule("list,watch", "", "pods"),
                rule("list,watch", "metrics.k8s.io", "pods"),
                rule(READ, "custom.metrics.k8s.io", "*"),
                rule(READ, "external.metrics.k8s.io", "*"),
                events(),
            ],
        ),
        (
            "job-controller",
            vec![
                rule("get,list,patch,update,watch", "batch", "jobs"),
                rule("update", "batch", "jobs/status"),
                rule("update", "batch", "jobs/finalizers"),
                rule("create,delete,list,patch,watch", "", "pods"),
                events(),
            ],
        ),
        (
            "legacy-service-account-token-cleaner",
            vec![
                named("get", "", "configmaps", "kube-apiserver-legacy-service-account-token-tracking"),
                rule("delete,patch", "", "secrets"),
            ],
        ),
        (
            "namespace-controller",
            vec![
                rule("delete,get,list,watch", "", "namespaces"),
                rule("update", "", "namespaces/finalize,namespaces/status"),
                rule("delete,deletecollection,get,list,watch", "*", "*"),
            ],
        ),
        (
            "node-controller",
            vec![
                rule("delete,get,list,patch,update,watch", "", "nodes"),
                rule("patch,update", "", "nodes/status"),
                rule("patch,update", "", "pods/status"),
                rule("delete,get,list,watch", "", "pods"),
                events(),
            ],
        ),
        (
            "persistent-volume-binder",
            vec![
                rule("create,delete,get,list,update,watch", "", "persistentvolumes"),
                rule("update", "", "persistentvolumes/status"),
                rule("get,list,update,watch", "", "persistentvolumeclaims"),
                rule("update", "", "persistentvolumeclaims/status"),
                rule("create,delete,get,list,watch", "", "pods"),
                rule(READ, "storage.k8s.io", "storageclasses"),
                rule("list,watch", "", "nodes"),
                events(),
                rule("watch", "", "events"),
            ],
        ),
        (
            "pod-garbage-collector",
            vec![
                rule("delete,list,watch", "", "pods"),
                rule(READ, "", "nodes"),
                rule("patch", "", "pods/status"),
            ],
        ),
        ("pv-protection-controller", vec![rule("get,list,update,watch", "", "persistentvolumes"), events()]),
        (
            "pvc-protection-controller",
            vec![
                rule("get,list,update,watch", "", "persistentvolumeclaims"),
                rule("update", "", "persistentvolumeclaims/status"),
                rule(READ, "", "pods"),
                events(),
            ],
        ),
        (
            "replicaset-controller",
            vec![
                rule("get,list,update,watch", "apps,extensions", "replicasets"),
                rule("update", "apps,extensions", "replicasets/status"),
                rule("update", "apps,extensions", "replicasets/finalizers"),
                rule("create,delete,list,patch,watch", "", "pods"),
                events(),
            ],
        ),
        (
            "replication-controller",
            vec![
                rule("get,list,update,watch", "", "replicationcontrollers"),
                rule("update", "", "replicationcontrollers/status"),
                rule("update", "", "replicationcontrollers/finalizers"),
                rule("create,delete,list,patch,watch", "", "pods"),
                events(),
            ],
        ),
        (
            "resourcequota-controller",
            vec![rule("list,watch", "*", "*"), rule("update", "", "resourcequotas/status"), events()],
        ),
        ("root-ca-cert-publisher", vec![rule("create,update", "", "configmaps"), events()]),
        (
            "route-controller",
            vec![rule("list,watch", "", "nodes"), rule("patch", "", "nodes/status"), events()],
        ),
        ("service-account-controller", vec![rule("create", "", "serviceaccounts"), events()]),
        (
            "service-controller",
            vec![
                rule(READ, "", "services"),
                rule("patch,update", "", "services/status"),
                rule("list,watch", "", "nodes"),
                events(),
            ],
        ),
        (
            "statefulset-controller",
            vec![
                rule("list,watch", "", "pods"),
                rule(READ, "apps", "statefulsets"),
                rule("update", "apps", "statefulsets/status"),
                rule("update", "apps", "statefulsets/finalizers"),
                rule("create,delete,get,patch,update", "", "pods"),
                rule("create,delete,get,list,patch,update,watch", "apps", "controllerrevisions"),
                rule("create,get,list,watch", "", "persistentvolumeclaims"),
                rule("delete,update", "", "persistentvolumeclaims"),
                rule("update", "", "pods/finalizers"),
                events(),
            ],
        ),
        ("ttl-after-finished-controller", vec![rule("delete,get,list,watch", "batch", "jobs"), events()]),
        ("ttl-controller", vec![rule("list,patch,update,watch", "", "nodes"), events()]),
        (
            "validatingadmissionpolicy-status-controller",
            vec![
                rule("get,list,watch", "admissionregistration.k8s.io", "validatingadmissionpolicies"),
                rule("patch,update", "admissionregistration.k8s.io", "validatingadmissionpolicies/status"),
            ],
        ),
    ]
}

/// The default ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    let mut bindings = vec![
        cluster_binding("cluster-admin", "cluster-admin", &["Group:system:masters"]),
        cluster_binding("system:basic-user", "system:basic-user", &["Group:system:authenticated"]),
        cluster_binding("system:discovery", "system:discovery", &["Group:system:authenticated"]),
        cluster_binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            &["Group:system:authenticated", "Group:system:unauthenticated"],
        ),
        cluster_binding(
            "system:kube-controller-manager",
            "system:kube-controller-manager",
            &["User:system:kube-controller-manager"],
        ),
        cluster_binding(
            "system:kube-dns",
            "system:kube-dns",
            &["ServiceAccount:kube-system/kube-dns"],
        ),
        cluster_binding(
            "system:kube-scheduler",
            "system:kube-scheduler",
            &["User:system:kube-scheduler"],
        ),
        cluster_binding(
            "system:volume-scheduler",
            "system:volume-scheduler",
            &["User:system:kube-scheduler"],
        ),
        cluster_binding("system:monitoring", "system:monitoring", &["Group:system:monitoring"]),
        // No subjects: nodes are authorized by the Node authorizer (upstream keeps the binding).
        cluster_binding("system:node", "system:node", &[]),
        cluster_binding("system:node-proxier", "system:node-proxier", &["User:system:kube-proxy"]),
        cluster_binding(
            "system:service-account-issuer-discovery",
            "system:service-account-issuer-discovery",
            &["Group:system:serviceaccounts"],
        ),
    ];
    // rkube's own, as k3s's: the API server's client certificate for kubelets may use their API.
    bindings.push(cluster_binding(
        "kube-apiserver-kubelet-admin",
        "system:kubelet-api-admin",
        &["User:kube-apiserver-kubelet-client"],
    ));
    bindings.push(cluster_binding(
        "system:rkube-dns",
        "system:rkube-dns",
        &["User:system:rkube-dns"],
    ));
    bindings.push(cluster_binding(
        "system:rkube-local-path-provisioner",
        "system:rkube-local-path-provisioner",
        &["User:system:rkube-local-path-provisioner"],
    ));
    for (name, _) in controller_roles() {
        let role = format!("system:controller:{name}");
        bindings.push(cluster_binding(
            &role,
            &role,
            &[&format!("ServiceAccount:kube-system/{name}")],
        ));
    }
    bindings
}

/// The default Roles (in kube-system and kube-public).
pub fn roles() -> Vec<Value> {
    let leader_locking = |component: &str| {
        vec![rule("watch", "", "configmaps"), named("get,update", "", "configmaps", component)]
    };
    vec![
        role(
            "kube-system",
            "extension-apiserver-authentication-reader",
            vec![named(READ, "", "configmaps", "extension-apiserver-authentication")],
        ),
        role(
            "kube-system",
            "system::leader-locking-kube-controller-manager",
            leader_locking("kube-controller-manager"),
        ),
        role(
            "kube-system",
            "system::leader-locking-kube-scheduler",
            leader_locking("kube-scheduler"),
        ),
        role("kube-system", "system:controller:bootstrap-signer", vec![rule(READ, "", "secrets")]),
        role(
            "kube-system",
            "system:controller:cloud-provider",
            vec![rule("create,get,list,watch", "", "configmaps")],
        ),
        role(
            "kube-system",
            "system:controller:token-cleaner",
            vec![rule("delete,get,list,watch", "", "secrets"), events()],
        ),
        // rkube's own: each node's DNS publishes its address in a kube-dns EndpointSlice.
        role(
            "kube-system",
            "system:rkube-dns",
            vec![rule("create,get,patch,update", "discovery.k8s.io", "endpointslices")],
        ),
        role(
            "kube-public",
            "system:controller:bootstrap-signer",
            vec![
                rule(READ, "", "configmaps"),
                named("update", "", "configmaps", "cluster-info"),
                events(),
            ],
        ),
    ]
}

/// The default RoleBindings.
pub fn role_bindings() -> Vec<Value> {
    vec![
        binding(
            "kube-system",
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            &["User:system:kube-controller-manager", "User:system:kube-scheduler"],
        ),
        binding(
            "kube-system",
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
            &[
                "User:system:kube-controller-manager",
                "ServiceAccount:kube-system/kube-controller-manager",
            ],
        ),
        binding(
            "kube-system",
            "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
            &["User:system:kube-scheduler", "ServiceAccount:kube-system/kube-scheduler"],
        ),
        binding(
            "kube-system",
            "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            &["ServiceAccount:kube-system/bootstrap-signer"],
        ),
        binding(
            "kube-system",
            "system:controller:cloud-provider",
            "system:controller:cloud-provider",
            &["ServiceAccount:kube-system/cloud-provider"],
        ),
        binding(
            "kube-system",
            "system:controller:token-cleaner",
            "system:controller:token-cleaner",
            &["ServiceAccount:kube-system/token-cleaner"],
        ),
        binding("kube-system", "system:rkube-dns", "system:rkube-dns", &["User:system:rkube-dns"]),
        binding(
            "kube-public",
            "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            &["ServiceAccount:kube-system/bootstrap-signer"],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_binding_names_a_role_of_the_policy() {
        let cluster: Vec<String> = cluster_roles()
            .iter()
            .map(|r| r["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        for b in cluster_role_bindings() {
            let role = b["roleRef"]["name"].as_str().unwrap();
            assert!(cluster.iter().any(|r| r == role), "{role}");
        }
        let namespaced: Vec<(String, String)> = roles()
            .iter()
            .map(|r| {
                (
                    r["metadata"]["namespace"].as_str().unwrap().into(),
                    r["metadata"]["name"].as_str().unwrap().into(),
                )
            })
            .collect();
        for b in role_bindings() {
            let key = (
                b["metadata"]["namespace"].as_str().unwrap().to_string(),
                b["roleRef"]["name"].as_str().unwrap().to_string(),
            );
            assert!(namespaced.contains(&key), "{key:?}");
        }
        // Names are unique.
        let mut sorted = cluster.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), cluster.len());
    }

    #[test]
    fn rules_read_as_upstream_writes_them() {
        assert_eq!(
            rule("create,patch,update", EVENTS, "events"),
            json!({"verbs": ["create", "patch", "update"], "apiGroups": ["", "events.k8s.io"], "resources": ["events"]})
        );
        let admin = &cluster_roles()[0];
        assert_eq!(admin["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
        assert_eq!(admin["metadata"]["annotations"][AUTOUPDATE], "true");
    }
}
