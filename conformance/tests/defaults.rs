//! Defaulting as a user sees it through stock kubectl: minimal manifests of many kinds, applied
//! to the real `rkube server`, read back with upstream's defaults filled in (and quantities in
//! canonical form), and the objects kubectl's own generators make (a Job's generated selector,
//! an HPA's default metric) as on a real cluster; `metadata.generation` only on the kinds
//! upstream gives one.

use rkube_conformance::cluster::RkubeServer;
use serde_json::{json, Value};

const MANIFESTS: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  hostNetwork: true
  containers:
  - name: c
    image: busybox:1.36
    ports:
    - containerPort: 8080
    env:
    - name: NODE
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    resources:
      limits:
        cpu: 0.5
        memory: 2048Mi
  volumes:
  - name: s
    secret:
      secretName: x
  - name: h
    hostPath:
      path: /tmp
  - name: nothing
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
provisioner: example.com/fast
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high
value: 1000
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: rb
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: r
subjects:
- kind: User
  name: alice
- kind: ServiceAccount
  name: default
  namespace: default
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: np
spec:
  podSelector: {}
  egress:
  - ports:
    - port: 53
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: vw
webhooks:
- name: v.example.com
  sideEffects: None
  admissionReviewVersions: [v1]
  clientConfig:
    service:
      name: s
      namespace: default
  rules:
  - operations: [CREATE]
    apiGroups: [""]
    apiVersions: [v1]
    resources: [pods]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: leader
spec:
  holderIdentity: a
  strategy: OldestEmulationVersion
  preferredHolder: b
---
apiVersion: v1
kind: Service
metadata:
  name: sticky
spec:
  selector:
    app: web
  sessionAffinity: ClientIP
  ports:
  - port: 80
"#;

fn get(s: &RkubeServer, what: &[&str]) -> Value {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend(["-o", "json"]);
    serde_json::from_str(&s.ok(&args)).expect("kubectl -o json prints JSON")
}

#[test]
fn kubectl_reads_back_upstreams_defaults() {
    let s = RkubeServer::start_with(&["--disable", "scheduler,controllers"]);
    // The account pods run as (no controller here makes it).
    s.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default}\n",
    );
    s.ok_stdin(&["apply", "-f", "-"], MANIFESTS);

    let pod = get(&s, &["pod", "p"]);
    let c = &pod["spec"]["containers"][0];
    assert_eq!(
        c["env"][0]["valueFrom"]["fieldRef"],
        json!({"apiVersion": "v1", "fieldPath": "spec.nodeName"})
    );
    assert_eq!(c["ports"][0], json!({"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}));
    // Requests default to the limits, and quantities read back in canonical form.
    assert_eq!(
        c["resources"],
        json!({"limits": {"cpu": "500m", "memory": "2Gi"}, "requests": {"cpu": "500m", "memory": "2Gi"}})
    );
    assert_eq!(pod["status"]["qosClass"], "Guaranteed");
    // (Then the ServiceAccount plugin's credentials volume.)
    assert_eq!(
        pod["spec"]["volumes"].as_array().map(|v| &v[..3]),
        Some(
            &json!([
                {"name": "s", "secret": {"defaultMode": 420, "secretName": "x"}},
                {"name": "h", "hostPath": {"path": "/tmp", "type": ""}},
                {"name": "nothing", "emptyDir": {}}
            ])
            .as_array()
            .unwrap()[..]
        )
    );

    let sc = get(&s, &["storageclass", "fast"]);
    assert_eq!(
        (&sc["reclaimPolicy"], &sc["volumeBindingMode"]),
        (&json!("Delete"), &json!("Immediate"))
    );
    assert_eq!(get(&s, &["priorityclass", "high"])["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(
        get(&s, &["rolebinding", "rb"])["subjects"],
        json!([
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"},
            {"kind": "ServiceAccount", "name": "default", "namespace": "default"}
        ])
    );
    assert_eq!(
        get(&s, &["networkpolicy", "np"])["spec"],
        json!({"egress": [{"ports": [{"port": 53, "protocol": "TCP"}]}], "podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
    );
    let webhook = &get(&s, &["validatingwebhookconfiguration", "vw"])["webhooks"][0];
    assert_eq!(
        (&webhook["failurePolicy"], &webhook["matchPolicy"], &webhook["timeoutSeconds"]),
        (&json!("Fail"), &json!("Equivalent"), &json!(10))
    );
    assert_eq!(
        (
            &webhook["namespaceSelector"],
            &webhook["objectSelector"],
            &webhook["clientConfig"]["service"]["port"]
        ),
        (&json!({}), &json!({}), &json!(443))
    );
    assert_eq!(webhook["rules"][0]["scope"], "*");
    // Fields of features v1.33 has off are dropped, as a real cluster drops them.
    assert_eq!(get(&s, &["lease", "leader"])["spec"], json!({"holderIdentity": "a"}));
    let svc = get(&s, &["service", "sticky"]);
    assert_eq!(
        svc["spec"]["sessionAffinityConfig"],
        json!({"clientIP": {"timeoutSeconds": 10800}})
    );
    assert_eq!(svc["spec"]["ports"][0], json!({"port": 80, "protocol": "TCP", "targetPort": 80}));

    // kubectl's generators: a Job selects its pods by its uid; an HPA gets the CPU metric.
    s.ok(&["create", "job", "pi", "--image=busybox:1.36", "--", "echo", "hi"]);
    let job = get(&s, &["job", "pi"]);
    let uid = job["metadata"]["uid"].as_str().expect("a uid").to_string();
    let labels = json!({
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "pi",
        "controller-uid": uid, "job-name": "pi"
    });
    assert_eq!(
        job["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    assert_eq!(job["spec"]["template"]["metadata"]["labels"], labels);
    assert_eq!(job["metadata"]["labels"], labels);
    assert_eq!(
        (
            &job["spec"]["backoffLimit"],
            &job["spec"]["manualSelector"],
            &job["spec"]["podReplacementPolicy"]
        ),
        (&json!(6), &json!(false), &json!("TerminatingOrFailed"))
    );
    let wide = s.ok(&["get", "job", "pi", "-o", "wide", "--no-headers"]);
    assert!(
        wide.trim_end().ends_with(&format!("batch.kubernetes.io/controller-uid={uid}")),
        "{wide}"
    );

    s.ok(&["create", "deployment", "web", "--image=nginx"]);
    s.ok(&["autoscale", "deployment", "web", "--max=3"]);
    // metadata.generation only where upstream's strategies keep one.
    let generation = |what: &[&str]| get(&s, what)["metadata"]["generation"].clone();
    assert_eq!(generation(&["deployment", "web"]), 1);
    assert_eq!(generation(&["pod", "p"]), 1);
    assert_eq!(generation(&["job", "pi"]), 1);
    for untracked in [
        &["service", "sticky"][..],
        &["storageclass", "fast"],
        &["rolebinding", "rb"],
        &["namespace", "default"],
    ] {
        assert_eq!(generation(untracked), Value::Null, "{untracked:?}");
    }
    // A Deployment's annotations count as a change, as upstream.
    s.ok(&["annotate", "deployment", "web", "team=blue"]);
    assert_eq!(generation(&["deployment", "web"]), 2);
    s.ok(&["label", "deployment", "web", "tier=front"]);
    assert_eq!(generation(&["deployment", "web"]), 2);

    let hpa = get(&s, &["hpa.v2.autoscaling", "web"]);
    assert_eq!(hpa["spec"]["minReplicas"], 1);
    assert_eq!(
        hpa["spec"]["metrics"],
        json!([{"resource": {"name": "cpu", "target": {"averageUtilization": 80, "type": "Utilization"}}, "type": "Resource"}])
    );
}
