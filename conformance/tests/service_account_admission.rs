//! The ServiceAccount and NodeRestriction admission plugins, seen with stock kubectl.
//!
//! ServiceAccount, on a real node: a pod gets the `default` account and the
//! `kube-api-access-<rand>` projected volume mounted read-only at
//! /var/run/secrets/kubernetes.io/serviceaccount in every container, field for field as
//! upstream writes them; inside the container the token is a JWT bound to the pod, `ca.crt`
//! is the cluster CA and `namespace` the pod's; `automountServiceAccountToken: false` gives
//! none; the account's pull secrets are copied; a pod naming a missing account is refused
//! with upstream's message.
//!
//! NodeRestriction: with a client certificate for `system:node:n1` (group `system:nodes`)
//! minted with the cluster CA, the node writes its own Node, its pods' status, its pods'
//! tokens and its Lease, and is refused, with upstream's messages, the same writes to another
//! node's (and evictions, deletes and non-mirror pods). The writes are made as a kubelet makes
//! them, with no read first (RBAC's `system:node` role does not let a node read
//! `nodes/status`, which `kubectl patch --subresource` would).
//!
//! Until the service-account and root-CA controllers create them, the tests create the
//! `default` account and the `kube-root-ca.crt` ConfigMap themselves (with `apply`, which
//! keeps working once the controllers do it).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rkube_conformance::cluster::{stderr_of, stdout_of, RkubeServer};
use rkube_conformance::identity::{jwt_part, Identity};
use rkube_conformance::node::{ensure_tools_image, NodeServer};
use serde_json::{json, Value};

const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The `default` account and the CA ConfigMap of `default`, as the controllers would make them.
fn account_and_ca(s: &RkubeServer) {
    let ca = std::fs::read_to_string(s.data_dir.path().join("pki/ca.crt")).expect("the CA");
    let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-root-ca.crt", "namespace": "default"},
         "data": {"ca.crt": ca}}
    ]});
    s.ok_stdin(&["apply", "-f", "-"], &objects.to_string());
}

const CREDENTIALED: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: credentialed}
spec:
  initContainers:
  - {name: init, image: "rkube-test-tools:1", imagePullPolicy: IfNotPresent, command: ["true"]}
  containers:
  - name: app
    image: "rkube-test-tools:1"
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes: [{name: scratch, emptyDir: {}}]
"#;

#[test]
fn pods_get_their_account_and_its_credentials_as_upstream() {
    ensure_tools_image();
    let node = NodeServer::start();
    let s = &node.server;
    account_and_ca(s);
    s.ok_stdin(&["apply", "-f", "-"], CREDENTIALED);
    let pod = json(&s.ok(&["get", "pod", "credentialed", "-o", "json"]));
    let spec = &pod["spec"];
    assert_eq!(spec["serviceAccountName"], "default", "{pod:#}");
    assert_eq!(spec["serviceAccount"], "default");
    // The pod's own volume stays first; the credentials come after, named by upstream's rule.
    let volumes = spec["volumes"].as_array().expect("volumes");
    assert_eq!(volumes.len(), 2, "{volumes:#?}");
    assert_eq!(volumes[0], json!({"name": "scratch", "emptyDir": {}}));
    let name = volumes[1]["name"].as_str().unwrap().to_string();
    let suffix = name.strip_prefix("kube-api-access-").expect("upstream's volume name");
    assert!(
        suffix.len() == 5 && suffix.bytes().all(|c| b"bcdfghjklmnpqrstvwxz2456789".contains(&c)),
        "{name}"
    );
    assert_eq!(
        volumes[1]["projected"],
        json!({
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ],
            "defaultMode": 420
        })
    );
    let mount = json!({"name": name, "readOnly": true, "mountPath": MOUNT_PATH});
    assert_eq!(spec["initContainers"][0]["volumeMounts"], json!([mount]));
    assert_eq!(
        spec["containers"][0]["volumeMounts"],
        json!([{"name": "scratch", "mountPath": "/scratch"}, mount])
    );

    // Inside: the bound token, the CA, the namespace; read-only.
    node.wait_for(
        &["get", "pod", "credentialed", "-o", "jsonpath={.status.phase}"],
        Duration::from_secs(90),
        |phase| phase == "Running",
    );
    let cat =
        |file: &str| s.ok(&["exec", "credentialed", "--", "cat", &format!("{MOUNT_PATH}/{file}")]);
    let token = jwt_part(&cat("token"), 1);
    let bound = &token["kubernetes.io"];
    assert_eq!(bound["namespace"], "default", "{token:#}");
    assert_eq!(bound["pod"]["name"], "credentialed");
    assert_eq!(bound["pod"]["uid"], pod["metadata"]["uid"]);
    assert_eq!(bound["serviceaccount"]["name"], "default");
    assert_eq!(token["sub"], "system:serviceaccount:default:default");
    let lifetime = token["exp"].as_i64().unwrap() - token["iat"].as_i64().unwrap();
    assert!(lifetime >= 3607, "the admission plugin's lifetime (or longer): {lifetime}");
    let ca = std::fs::read_to_string(s.data_dir.path().join("pki/ca.crt")).unwrap();
    assert_eq!(cat("ca.crt"), ca);
    assert_eq!(cat("namespace"), "default");
    // defaultMode 420: every file 0644.
    let modes = s.ok(&[
        "exec",
        "credentialed",
        "--",
        "sh",
        "-c",
        &format!("cd {MOUNT_PATH} && stat -L -c '%n %a' token ca.crt namespace"),
    ]);
    assert_eq!(modes, "token 644\nca.crt 644\nnamespace 644\n");
    let write = s.kubectl(&["exec", "credentialed", "--", "touch", &format!("{MOUNT_PATH}/x")]);
    assert!(!write.status.success(), "the mount is writable");
    assert!(stderr_of(&write).contains("Read-only file system"), "{}", stderr_of(&write));

    // automountServiceAccountToken: false on the pod, and on the account.
    let quiet = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "quiet"},
        "spec": {"automountServiceAccountToken": false,
                 "containers": [{"name": "app", "image": "rkube-test-tools:1"}]}}"#;
    let admitted =
        json(&s.ok_stdin(&["create", "--dry-run=server", "-o", "json", "-f", "-"], quiet));
    assert_eq!(admitted["spec"]["serviceAccountName"], "default");
    assert!(admitted["spec"]["volumes"].is_null(), "{admitted:#}");
    assert!(admitted["spec"]["containers"][0]["volumeMounts"].is_null(), "{admitted:#}");
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "puller"},
        "automountServiceAccountToken": false, "imagePullSecrets": [{"name": "registry"}]});
    s.ok_stdin(&["apply", "-f", "-"], &account.to_string());
    let puller = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "puller"},
        "spec": {"serviceAccountName": "puller", "containers": [{"name": "app", "image": "rkube-test-tools:1"}]}}"#;
    let admitted =
        json(&s.ok_stdin(&["create", "--dry-run=server", "-o", "json", "-f", "-"], puller));
    assert!(admitted["spec"]["volumes"].is_null(), "{admitted:#}");
    assert_eq!(admitted["spec"]["imagePullSecrets"], json!([{"name": "registry"}]));

    // A missing account.
    let ghost = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "haunted"},
        "spec": {"serviceAccountName": "ghost", "containers": [{"name": "app", "image": "rkube-test-tools:1"}]}}"#;
    let refused = s.fails_stdin(&["create", "-f", "-"], ghost);
    assert_eq!(
        refused.trim(),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"haunted\" is forbidden: error looking up service account default/ghost: serviceaccount \"ghost\" not found"
    );
    // The Status on the wire, as kube-apiserver writes it.
    let got = s.curl_body(&["-X", "POST"], "/api/v1/namespaces/default/pods", ghost.as_bytes());
    assert_eq!(got.code, 403);
    assert_eq!(
        json(&got.body),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "pods \"haunted\" is forbidden: error looking up service account default/ghost: serviceaccount \"ghost\" not found",
            "reason": "Forbidden", "details": {"name": "haunted", "kind": "pods"}, "code": 403})
    );
}

/// A client certificate for `cn` in `groups`, signed by the cluster CA, and a kubeconfig
/// that uses it (the admin kubeconfig with the user replaced).
fn certificate_kubeconfig(s: &RkubeServer, cn: &str, groups: &[&str]) -> PathBuf {
    Identity::issue(s, cn, groups).kubeconfig(s, &cn.replace(':', "-"))
}

/// A request with a client certificate (as a kubelet makes it: no read before the write):
/// the status code and the body.
fn request_as(
    s: &RkubeServer,
    (cert, key): (&Path, &Path),
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> (u16, Value) {
    let out = std::process::Command::new("curl")
        .args(["-s", "--max-time", "30", "-w", "\n%{http_code}", "-X", method])
        .arg("--cacert")
        .arg(s.data_dir.path().join("pki/ca.crt"))
        .arg("--cert")
        .arg(cert)
        .arg("--key")
        .arg(key)
        .args(["-H", &format!("Content-Type: {content_type}"), "--data-binary", body])
        .arg(format!("https://127.0.0.1:{}{path}", s.port))
        .output()
        .expect("curl");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let (body, code) = text.rsplit_once('\n').expect("curl wrote the status code");
    (code.parse().unwrap_or(0), serde_json::from_str(body).unwrap_or(Value::Null))
}

#[test]
fn a_node_writes_only_what_is_its_own() {
    let s = RkubeServer::start();
    account_and_ca(&s);
    for name in ["n1", "n2"] {
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}});
        s.ok_stdin(&["create", "-f", "-"], &node.to_string());
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("on-{name}")},
            "spec": {"nodeName": name, "automountServiceAccountToken": false,
                     "containers": [{"name": "app", "image": "rkube-test-tools:1"}]}});
        s.ok_stdin(&["create", "-f", "-"], &pod.to_string());
    }
    let kubeconfig = certificate_kubeconfig(&s, "system:node:n1", &["system:nodes"]);
    let dir = s.data_dir.path();
    let (cert, key) = (dir.join("system-node-n1.crt"), dir.join("system-node-n1.key"));
    let n1 = |method: &str, path: &str, content_type: &str, body: &str| {
        request_as(&s, (&cert, &key), method, path, content_type, body)
    };
    const MERGE: &str = "application/merge-patch+json";
    const JSON: &str = "application/json";
    let allowed = |(code, body): (u16, Value), what: &str| {
        assert!((200..300).contains(&code), "{what}: {code} {body:#}");
    };
    let refused = |(code, body): (u16, Value), message: &str| {
        assert_eq!((code, body["message"].as_str().unwrap_or("")), (403, message), "{body:#}");
        assert_eq!(body["reason"], "Forbidden");
    };
    let pods = "/api/v1/namespaces/default/pods";
    let nodes = "/api/v1/nodes";

    // Its own Node: labels outside the restricted domains, and its status.
    let label = |key: &str| json!({"metadata": {"labels": {key: "x"}}}).to_string();
    allowed(n1("PATCH", &format!("{nodes}/n1"), MERGE, &label("example.com/rack")), "own label");
    let status = json!({"status": {"conditions": [{"type": "Ready", "status": "True",
        "reason": "KubeletReady", "message": "ok"}]}})
    .to_string();
    allowed(n1("PATCH", &format!("{nodes}/n1/status"), MERGE, &status), "own node status");
    let other_node = "nodes \"n2\" is forbidden: node \"n1\" is not allowed to modify node \"n2\"";
    refused(n1("PATCH", &format!("{nodes}/n2"), MERGE, &label("example.com/rack")), other_node);
    refused(n1("PATCH", &format!("{nodes}/n2/status"), MERGE, &status), other_node);
    refused(
        n1("PATCH", &format!("{nodes}/n1"), MERGE, &label("node-restriction.kubernetes.io/pool")),
        "nodes \"n1\" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/pool",
    );
    let taint =
        json!({"spec": {"taints": [{"key": "dedicated", "value": "me", "effect": "NoSchedule"}]}});
    refused(
        n1("PATCH", &format!("{nodes}/n1"), MERGE, &taint.to_string()),
        "nodes \"n1\" is forbidden: node \"n1\" is not allowed to modify taints",
    );

    // Its pods' status only.
    let message = json!({"status": {"message": "seen by n1"}}).to_string();
    allowed(n1("PATCH", &format!("{pods}/on-n1/status"), MERGE, &message), "own pod status");
    assert_eq!(s.ok(&["get", "pod", "on-n1", "-o", "jsonpath={.status.message}"]), "seen by n1");
    let not_its_pod = "pods \"on-n2\" is forbidden: node \"n1\" can only update pod status for pods with spec.nodeName set to itself";
    refused(n1("PATCH", &format!("{pods}/on-n2/status"), MERGE, &message), not_its_pod);
    // A server-side apply of the status is the same write.
    let applied = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "on-n2"},
        "status": {"message": "applied by n1"}});
    refused(
        n1(
            "PATCH",
            &format!("{pods}/on-n2/status?fieldManager=n1"),
            "application/apply-patch+yaml",
            &applied.to_string(),
        ),
        not_its_pod,
    );
    refused(
        n1("DELETE", &format!("{pods}/on-n2"), JSON, ""),
        "pods \"on-n2\" is forbidden: node \"n1\" can only delete pods with spec.nodeName set to itself",
    );
    let sneaky = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sneaky"},
        "spec": {"nodeName": "n1", "automountServiceAccountToken": false,
                 "containers": [{"name": "app", "image": "rkube-test-tools:1"}]}});
    refused(
        n1("POST", pods, JSON, &sneaky.to_string()),
        "pods \"sneaky\" is forbidden: pod does not have \"kubernetes.io/config.mirror\" annotation, node \"n1\" can only create mirror pods",
    );
    let eviction = |pod: &str| {
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": "default"}})
            .to_string()
    };
    refused(
        n1("POST", &format!("{pods}/on-n2/eviction"), JSON, &eviction("on-n2")),
        "pods \"on-n2\" is forbidden: node n1 can only evict pods with spec.nodeName set to itself",
    );

    // Tokens only for its own pods, bound to them (stock kubectl, as a node would ask).
    let uid = |pod: &str| s.ok(&["get", "pod", pod, "-o", "jsonpath={.metadata.uid}"]);
    let token_for = |pod: &str, uid: &str| {
        let out = s.kubectl(&[
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "create",
            "token",
            "default",
            "--bound-object-kind=Pod",
            &format!("--bound-object-name={pod}"),
            &format!("--bound-object-uid={uid}"),
        ]);
        let text = if out.status.success() { stdout_of(&out) } else { stderr_of(&out) };
        (out.status.success(), text.trim().to_string())
    };
    let (ok, token) = token_for("on-n1", &uid("on-n1"));
    assert!(ok, "{token}");
    assert_eq!(jwt_part(&token, 1)["kubernetes.io"]["pod"]["name"], "on-n1");
    let token_refused = |(ok, text): (bool, String), message: &str| {
        assert!(!ok, "a token was given: {text}");
        let kubectl_says =
            "error: failed to create token: serviceaccounts \"default\" is forbidden";
        assert_eq!(text, format!("{kubectl_says}: {message}"));
    };
    token_refused(
        token_for("on-n2", &uid("on-n2")),
        "node requested token bound to a pod scheduled on a different node",
    );
    token_refused(
        token_for("on-n1", "0000"),
        "the UID in the bound object reference (0000) does not match the UID in record. The object might have been deleted and then recreated",
    );
    let unbound =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    refused(
        n1(
            "POST",
            "/api/v1/namespaces/default/serviceaccounts/default/token",
            JSON,
            &unbound.to_string(),
        ),
        "serviceaccounts \"default\" is forbidden: node requested token not bound to a pod",
    );

    // Its own Lease, in kube-node-lease.
    let lease = |name: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": name, "namespace": "kube-node-lease"},
               "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}})
        .to_string()
    };
    let leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases";
    allowed(n1("POST", leases, JSON, &lease("n1")), "own lease");
    refused(
        n1("POST", leases, JSON, &lease("n2")),
        "leases.coordination.k8s.io \"n2\" is forbidden: can only access node lease with the same name as the requesting node",
    );

    // The admin is not a node: the same writes go through.
    s.ok(&["label", "node", "n2", "node-restriction.kubernetes.io/pool=gpu"]);
    s.ok(&["delete", "pod", "on-n2", "--wait=false"]);
    // Its own pod, the node may delete.
    allowed(n1("DELETE", &format!("{pods}/on-n1"), JSON, ""), "own pod delete");
}
