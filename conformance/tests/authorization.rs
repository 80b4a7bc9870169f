//! Authorization end to end, through stock kubectl and raw HTTPS: the default mode
//! (`AllowAuthenticated`: authenticated users may do anything, anonymous ones only the
//! public endpoints), `--authorization-mode=AlwaysDeny` (everyone refused with upstream's
//! message, except `system:masters`, as kube-apiserver), `AlwaysAllow` (anonymous requests
//! too), the access reviews behind `kubectl auth can-i` answering what a request would get,
//! and an unknown, unimplemented or missing mode refused at startup.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use rkube_conformance::cluster::{
    rkube_binary, stderr_of, stdout_of, wait_with_timeout, RkubeServer,
};
use serde_json::{json, Value};

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// An anonymous request (no client certificate, no token): status code and body.
fn anonymous(s: &RkubeServer, method: &str, path: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "30", "-w", "\n%{http_code}", "-X", method, "--cacert"])
        .arg(s.data_dir.path().join("pki/ca.crt"))
        .arg(format!("https://127.0.0.1:{}{path}", s.port))
        .output()
        .expect("curl");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let (body, code) = text.rsplit_once('\n').expect("curl wrote the status code");
    (code.parse().unwrap_or(0), body.to_string())
}

/// A kubeconfig for the service account `default/<name>`'s token, and nothing else (a client
/// certificate would authenticate first).
fn service_account_kubeconfig(s: &RkubeServer, name: &str) -> PathBuf {
    s.ok(&["create", "serviceaccount", name]);
    let token = s.ok(&["create", "token", name]);
    let path = s.data_dir.path().join(format!("{name}.kubeconfig"));
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: {}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n",
        s.port,
        s.data_dir.path().join("pki/ca.crt").display(),
        token.trim()
    );
    std::fs::write(&path, config).unwrap();
    path
}

/// kubectl with another kubeconfig: success, stdout, stderr.
fn kubectl_as(s: &RkubeServer, kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let mut full = vec!["--kubeconfig", kubeconfig.to_str().unwrap()];
    full.extend_from_slice(args);
    let out = s.kubectl(&full);
    (out.status.success(), stdout_of(&out), stderr_of(&out))
}

/// A SubjectAccessReview created by the admin about `user` listing pods in `default`.
fn review_about(s: &RkubeServer, user: &str) -> Value {
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
        "spec": {"user": user, "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}},
    });
    json(&s.ok_stdin(&["create", "-f", "-", "-o", "json"], &review.to_string()))
}

#[test]
fn by_default_authenticated_users_may_do_anything_and_anonymous_ones_only_public_paths() {
    let s = RkubeServer::start();
    // The admin, and a service account (no system:masters).
    assert_eq!(s.ok(&["auth", "can-i", "list", "pods"]).trim(), "yes");
    let list = s.ok(&["auth", "can-i", "--list"]);
    assert!(
        list.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["*.*", "[]", "[]", "[*]"]),
        "{list}"
    );
    let bot = service_account_kubeconfig(&s, "bot");
    let (ok, out, err) = kubectl_as(&s, &bot, &["auth", "can-i", "delete", "nodes"]);
    assert!(ok && out.trim() == "yes", "{out}{err}");
    let (ok, out, err) = kubectl_as(&s, &bot, &["get", "configmaps", "-n", "kube-system"]);
    assert!(ok, "{out}{err}");

    // Anonymous requests: refused under /api and /apis as before, public endpoints served.
    let (code, body) = anonymous(&s, "GET", "/api/v1/namespaces/default/pods");
    let status = json(&body);
    assert_eq!((code, &status["code"], &status["reason"]), (403, &json!(403), &json!("Forbidden")));
    assert_eq!(
        status["message"],
        "pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    let (code, body) = anonymous(&s, "GET", "/apis/apps/v1/namespaces/ns/deployments/d/scale");
    assert_eq!(code, 403);
    assert_eq!(
        json(&body)["message"],
        "deployments.apps \"d\" is forbidden: User \"system:anonymous\" cannot get resource \"deployments/scale\" in API group \"apps\" in the namespace \"ns\""
    );
    let (code, body) = anonymous(&s, "GET", "/apis");
    assert_eq!(code, 403);
    assert_eq!(
        json(&body)["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/apis\""
    );
    for path in ["/healthz", "/livez", "/readyz"] {
        assert_eq!(anonymous(&s, "GET", path), (200, "ok".to_string()), "{path}");
    }
    let (code, body) = anonymous(&s, "GET", "/version");
    assert_eq!((code, json(&body)["major"].as_str()), (200, Some("1")));

    // The access reviews ask the same authorizer.
    assert_eq!(review_about(&s, "jane")["status"], json!({"allowed": true}));
    assert_eq!(review_about(&s, "system:anonymous")["status"], json!({"allowed": false}));
}

#[test]
fn always_deny_refuses_everyone_but_system_masters_with_upstreams_message() {
    let s = RkubeServer::start_with(&["--authorization-mode", "AlwaysDeny"]);
    // system:masters is allowed before any mode is asked, as kube-apiserver; it lists no
    // rules of its own, and AlwaysDeny lists none.
    assert_eq!(s.ok(&["auth", "can-i", "list", "pods"]).trim(), "yes");
    let list = s.ok(&["auth", "can-i", "--list"]);
    assert!(!list.contains("[*]"), "{list}");
    let bot = service_account_kubeconfig(&s, "bot");

    // Everyone else: 403 and upstream's wording, AlwaysDeny's reason after it.
    let (ok, out, err) = kubectl_as(&s, &bot, &["get", "pods"]);
    assert!(!ok, "{out}");
    assert_eq!(
        err.trim(),
        "Error from server (Forbidden): pods is forbidden: User \"system:serviceaccount:default:bot\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\": Everything is forbidden."
    );
    // Asking is refused too: creating the SelfSubjectAccessReview is a request.
    let (ok, out, err) = kubectl_as(&s, &bot, &["auth", "can-i", "list", "pods"]);
    assert!(!ok, "{out}");
    assert!(
        err.contains("selfsubjectaccessreviews.authorization.k8s.io is forbidden: User \"system:serviceaccount:default:bot\" cannot create resource \"selfsubjectaccessreviews\" in API group \"authorization.k8s.io\" at the cluster scope: Everything is forbidden."),
        "{err}"
    );
    let (code, body) = anonymous(&s, "GET", "/healthz");
    assert_eq!(code, 403);
    assert_eq!(
        json(&body)["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/healthz\": Everything is forbidden."
    );
    // A review by the admin about someone else gets the same answer, with the reason.
    assert_eq!(
        review_about(&s, "jane")["status"],
        json!({"allowed": false, "reason": "Everything is forbidden."})
    );
}

#[test]
fn always_allow_lets_anonymous_requests_in() {
    let s = RkubeServer::start_with(&["--authorization-mode", "AlwaysDeny,AlwaysAllow"]);
    // AlwaysDeny has no opinion, so AlwaysAllow, asked next, decides.
    let (code, body) = anonymous(&s, "GET", "/api/v1/namespaces/default/configmaps");
    assert_eq!((code, json(&body)["kind"].as_str()), (200, Some("ConfigMapList")), "{body}");
    assert_eq!(review_about(&s, "system:anonymous")["status"], json!({"allowed": true}));
}

#[test]
fn an_unknown_unimplemented_or_missing_mode_stops_the_server_with_one_line() {
    for (mode, message) in [
        ("Magic", "rkube: authorization-mode \"Magic\" is not a valid mode"),
        ("AlwaysAllow,RBAC", "rkube: authorization-mode \"RBAC\" is not implemented in rkube yet"),
        ("Node", "rkube: authorization-mode \"Node\" is not implemented in rkube yet"),
        ("", "rkube: at least one authorization-mode must be passed"),
    ] {
        let data_dir = tempfile::tempdir().unwrap();
        let child = Command::new(rkube_binary())
            .args(["server", "--secure-port", "1", "--authorization-mode", mode, "--data-dir"])
            .arg(data_dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rkube");
        let out = wait_with_timeout(child, Duration::from_secs(30));
        assert!(!out.status.success(), "{mode}: the server started");
        let err = stderr_of(&out);
        assert_eq!(err.trim().lines().count(), 1, "{mode}: {err}");
        assert!(err.starts_with(message), "{mode}: {err}");
        // Nothing was set up before the flag was read.
        assert!(!data_dir.path().join("db").exists(), "{mode}");
    }
}
