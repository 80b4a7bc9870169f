//! Service accounts and their legacy tokens end to end, through stock kubectl, on a server
//! without a node: every namespace gets the `default` ServiceAccount and the
//! `kube-root-ca.crt` ConfigMap (and gets them back after a delete or an edit); a
//! `kubernetes.io/service-account-token` Secret gets a legacy token, which authenticates as
//! the account until the Secret or the account goes (the Secret goes with its account); a
//! tampered token is refused; an aggregated ClusterRole gathers the rules of the roles its
//! selectors match.

use std::path::Path;
use std::time::Duration;

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::identity::{jwt_part, token_kubeconfig};
use serde_json::Value;

/// How long a controller may take to react (they are informer-driven: well under this).
const REACT: Duration = Duration::from_secs(15);

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// An object as JSON, or None when it does not exist.
fn get(s: &RkubeServer, args: &[&str]) -> Option<Value> {
    let out = s.kubectl(&[args, &["-o", "json"]].concat());
    out.status.success().then(|| json(&String::from_utf8_lossy(&out.stdout)))
}

fn decode_base64(text: &str) -> Vec<u8> {
    openssl::base64::decode_block(text).expect("base64")
}

/// `kubectl auth whoami` with a token kubeconfig: the userInfo, or the error.
fn whoami(s: &RkubeServer, kubeconfig: &Path) -> Result<Value, String> {
    let out =
        s.kubectl(&["--kubeconfig", kubeconfig.to_str().unwrap(), "auth", "whoami", "-o", "json"]);
    match out.status.success() {
        true => Ok(json(&String::from_utf8_lossy(&out.stdout))["status"]["userInfo"].clone()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

const UNAUTHORIZED: &str = "error: You must be logged in to the server (Unauthorized)";

fn assert_unauthorized(s: &RkubeServer, kubeconfig: &Path, what: &str) {
    match whoami(s, kubeconfig) {
        Ok(user) => panic!("{what}: the token was accepted as {user}"),
        Err(err) => assert!(err.contains(UNAUTHORIZED), "{what}: {err}"),
    }
}

/// Waits until the token is refused (the API server's cache of accounts may lag a delete
/// by a moment).
fn wait_unauthorized(s: &RkubeServer, kubeconfig: &Path, what: &str) {
    s.wait_until(what, REACT, || match whoami(s, kubeconfig) {
        Ok(user) => (false, format!("accepted as {user}")),
        Err(err) => (err.contains(UNAUTHORIZED), err),
    });
}

/// Waits until `get` finds the object and `check` accepts it; returns it.
fn wait_for(s: &RkubeServer, what: &str, args: &[&str], check: impl Fn(&Value) -> bool) -> Value {
    let mut found = None;
    s.wait_until(what, REACT, || {
        let obj = get(s, args);
        let done = obj.as_ref().is_some_and(&check);
        let seen = format!("{obj:?}");
        found = obj;
        (done, seen)
    });
    found.unwrap()
}

fn wait_gone(s: &RkubeServer, what: &str, args: &[&str]) {
    s.wait_until(what, REACT, || {
        let obj = get(s, args);
        (obj.is_none(), format!("{obj:?}"))
    });
}

fn uid(obj: &Value) -> String {
    obj["metadata"]["uid"].as_str().unwrap_or("").to_string()
}

#[test]
fn every_namespace_gets_the_default_account_and_the_root_ca_back_after_deletes_and_edits() {
    let s = RkubeServer::start();
    let ca = std::fs::read_to_string(s.data_dir.path().join("pki/ca.crt")).unwrap();
    // The namespaces made at start get them too.
    for ns in ["default", "kube-system"] {
        wait_for(&s, "default account at start", &["get", "sa", "default", "-n", ns], |_| true);
        wait_for(&s, "root CA at start", &["get", "cm", "kube-root-ca.crt", "-n", ns], |_| true);
    }
    s.ok(&["create", "namespace", "team"]);
    let sa = wait_for(&s, "default account", &["get", "sa", "default", "-n", "team"], |_| true);
    let cm = wait_for(&s, "root CA", &["get", "cm", "kube-root-ca.crt", "-n", "team"], |_| true);
    assert_eq!(cm["data"], serde_json::json!({"ca.crt": ca}));
    let description = cm["metadata"]["annotations"]["kubernetes.io/description"].as_str();
    assert!(
        description
            .is_some_and(|d| d
                .starts_with("Contains a CA bundle that can be used to verify the kube-apiserver")),
        "{cm}"
    );

    // Deleted: made again (a new object).
    s.ok(&["delete", "sa", "default", "-n", "team"]);
    let again =
        wait_for(&s, "default account again", &["get", "sa", "default", "-n", "team"], |o| {
            uid(o) != uid(&sa)
        });
    assert_eq!(again["metadata"]["name"], "default");
    s.ok(&["delete", "cm", "kube-root-ca.crt", "-n", "team"]);
    wait_for(&s, "root CA again", &["get", "cm", "kube-root-ca.crt", "-n", "team"], |o| {
        uid(o) != uid(&cm) && o["data"]["ca.crt"] == ca.as_str()
    });

    // Edited: put back, what else was added kept.
    s.ok(&[
        "patch",
        "cm",
        "kube-root-ca.crt",
        "-n",
        "team",
        "--type=merge",
        "-p",
        r#"{"data":{"ca.crt":"forged"},"metadata":{"labels":{"kept":"yes"}}}"#,
    ]);
    let fixed =
        wait_for(&s, "root CA restored", &["get", "cm", "kube-root-ca.crt", "-n", "team"], |o| {
            o["data"]["ca.crt"] == ca.as_str()
        });
    assert_eq!(fixed["metadata"]["labels"]["kept"], "yes");
    s.ok(&["annotate", "cm", "kube-root-ca.crt", "-n", "team", "kubernetes.io/description-"]);
    wait_for(&s, "description restored", &["get", "cm", "kube-root-ca.crt", "-n", "team"], |o| {
        o["metadata"]["annotations"]["kubernetes.io/description"].is_string()
    });
}

fn token_secret(name: &str, account: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: build\n  annotations:\n    kubernetes.io/service-account.name: {account}\ntype: kubernetes.io/service-account-token\n"
    )
}

/// Waits for the token controller to fill the Secret; returns it.
fn filled(s: &RkubeServer, name: &str) -> Value {
    wait_for(s, "token secret filled", &["get", "secret", name, "-n", "build"], |o| {
        o["data"]["token"].is_string()
    })
}

#[test]
fn token_secrets_get_legacy_tokens_that_work_until_the_secret_or_account_goes() {
    let s = RkubeServer::start();
    let ca = std::fs::read_to_string(s.data_dir.path().join("pki/ca.crt")).unwrap();
    s.ok(&["create", "namespace", "build"]);
    s.ok(&["create", "sa", "builder", "-n", "build"]);
    let sa_uid = s.ok(&["get", "sa", "builder", "-n", "build", "-o", "jsonpath={.metadata.uid}"]);
    s.ok_stdin(&["apply", "-f", "-"], &token_secret("builder-token", "builder"));
    let secret = filled(&s, "builder-token");
    let data = &secret["data"];
    assert_eq!(decode_base64(data["ca.crt"].as_str().unwrap()), ca.as_bytes());
    assert_eq!(decode_base64(data["namespace"].as_str().unwrap()), b"build");
    assert_eq!(
        secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"],
        sa_uid.as_str()
    );
    let token = String::from_utf8(decode_base64(data["token"].as_str().unwrap())).unwrap();

    // Upstream's legacy claims, RS256 with a key id.
    let header = jwt_part(&token, 0);
    assert_eq!(header["alg"], "RS256");
    assert!(header["kid"].as_str().is_some_and(|k| k.len() == 43), "{header}");
    assert_eq!(
        jwt_part(&token, 1),
        serde_json::json!({
            "iss": "kubernetes/serviceaccount",
            "kubernetes.io/serviceaccount/namespace": "build",
            "kubernetes.io/serviceaccount/secret.name": "builder-token",
            "kubernetes.io/serviceaccount/service-account.name": "builder",
            "kubernetes.io/serviceaccount/service-account.uid": sa_uid,
            "sub": "system:serviceaccount:build:builder",
        })
    );

    // It authenticates as the account.
    let builder = token_kubeconfig(&s, "builder", &token);
    let user = whoami(&s, &builder).unwrap();
    assert_eq!(user["username"], "system:serviceaccount:build:builder");
    assert_eq!(user["uid"], sa_uid.as_str());
    assert_eq!(
        user["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:build",
            "system:authenticated"
        ])
    );
    assert!(user["extra"].get("authentication.kubernetes.io/credential-id").is_none(), "{user}");
    // Its use is recorded on the Secret, by the day.
    let used = get(&s, &["get", "secret", "builder-token", "-n", "build"]).unwrap();
    let day =
        used["metadata"]["labels"]["kubernetes.io/legacy-token-last-used"].as_str().unwrap_or("");
    assert_eq!(day.len(), 10, "{used}");

    // A tampered token (another account named in the payload, the signature kept) is refused.
    let mut parts: Vec<String> = token.split('.').map(String::from).collect();
    let mut claims = jwt_part(&token, 1);
    claims["sub"] = "system:serviceaccount:kube-system:default".into();
    claims["kubernetes.io/serviceaccount/namespace"] = "kube-system".into();
    parts[1] = openssl::base64::encode_block(claims.to_string().as_bytes())
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_");
    let tampered = token_kubeconfig(&s, "tampered", &parts.join("."));
    assert_unauthorized(&s, &tampered, "a tampered token");
    // As is one whose Secret now holds another token.
    s.ok_stdin(&["apply", "-f", "-"], &token_secret("second-token", "builder"));
    let second = filled(&s, "second-token");
    let second_token =
        String::from_utf8(decode_base64(second["data"]["token"].as_str().unwrap())).unwrap();
    assert_ne!(second_token, token);
    let second = token_kubeconfig(&s, "second", &second_token);
    assert_eq!(whoami(&s, &second).unwrap()["username"], "system:serviceaccount:build:builder");

    // The Secret deleted: the token no longer works.
    s.ok(&["delete", "secret", "builder-token", "-n", "build"]);
    wait_unauthorized(&s, &builder, "the token of a deleted secret");

    // The account deleted: its token Secrets go, their tokens stop working.
    s.ok(&["delete", "sa", "builder", "-n", "build"]);
    wait_unauthorized(&s, &second, "the token of a deleted account");
    wait_gone(
        &s,
        "the deleted account's token secret",
        &["get", "secret", "second-token", "-n", "build"],
    );
    // A Secret for an account that does not exist is deleted too.
    s.ok_stdin(&["apply", "-f", "-"], &token_secret("orphan-token", "nobody"));
    wait_gone(
        &s,
        "a token secret without account",
        &["get", "secret", "orphan-token", "-n", "build"],
    );
}

#[test]
fn aggregated_cluster_roles_gather_the_rules_of_the_roles_they_select() {
    let s = RkubeServer::start();
    s.ok_stdin(
        &["apply", "-f", "-"],
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: test-aggregate
aggregationRule:
  clusterRoleSelectors:
  - matchLabels:
      rkube.test/aggregate-to-test: "true"
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: test-source-b
  labels:
    rkube.test/aggregate-to-test: "true"
rules:
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: test-source-a
  labels:
    rkube.test/aggregate-to-test: "true"
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["watch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: test-unrelated
rules:
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["delete"]
"#,
    );
    let rules = |o: &Value| o["rules"].clone();
    let args = ["get", "clusterrole", "test-aggregate"];
    // By source name, each rule once.
    let want = serde_json::json!([
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["watch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
    ]);
    wait_for(&s, "aggregated rules", &args, |o| rules(o) == want);

    // A source's rules change: so do the aggregate's.
    s.ok(&[
        "patch",
        "clusterrole",
        "test-source-a",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/rules/0"}]"#,
    ]);
    let want = serde_json::json!([
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]},
    ]);
    wait_for(&s, "rules after a source changed", &args, |o| rules(o) == want);

    // The labels go: so do the rules.
    s.ok(&["label", "clusterrole", "test-source-b", "rkube.test/aggregate-to-test-"]);
    let want =
        serde_json::json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]);
    wait_for(&s, "rules after a label went", &args, |o| rules(o) == want);
    s.ok(&["label", "clusterrole", "test-source-a", "rkube.test/aggregate-to-test-"]);
    wait_for(&s, "no rules left", &args, |o| {
        o["rules"].is_null() || o["rules"] == serde_json::json!([])
    });
}
