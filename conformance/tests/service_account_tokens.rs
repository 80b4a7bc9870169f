//! Service-account tokens end to end, through stock kubectl: `kubectl create token` gets an
//! RS256 JWT from the TokenRequest API with upstream's claims, the token authenticates as
//! the service account (`kubectl auth whoami`), bad tokens get 401, bound tokens stop
//! working once their object is gone, and the kubelet fills projected `serviceAccountToken`
//! volumes with pod-bound tokens the API server accepts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::node::NodeServer;
use serde_json::Value;

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// One part of a JWT, decoded (base64url without padding).
fn jwt_part(token: &str, index: usize) -> Value {
    let part = token.trim().split('.').nth(index).expect("a JWT has three parts");
    let mut standard: String = part
        .chars()
        .map(|c| {
            if c == '-' {
                '+'
            } else if c == '_' {
                '/'
            } else {
                c
            }
        })
        .collect();
    while !standard.len().is_multiple_of(4) {
        standard.push('=');
    }
    json(&String::from_utf8(openssl::base64::decode_block(&standard).expect("base64")).unwrap())
}

fn claims(token: &str) -> Value {
    assert_eq!(token.trim().split('.').count(), 3, "not a JWT: {token}");
    jwt_part(token, 1)
}

/// A kubeconfig that reaches the server with this bearer token and nothing else (no client
/// certificate, which would authenticate first).
fn token_kubeconfig(s: &RkubeServer, name: &str, token: &str) -> PathBuf {
    let ca = s.data_dir.path().join("pki/ca.crt");
    assert!(ca.exists(), "no CA at {}", ca.display());
    let path = s.data_dir.path().join(format!("{name}.kubeconfig"));
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: {}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n",
        s.port,
        ca.display(),
        token.trim()
    );
    std::fs::write(&path, config).unwrap();
    path
}

/// kubectl with a token kubeconfig: its exit status, stdout and stderr.
fn as_token(s: &RkubeServer, kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let mut full = vec!["--kubeconfig", kubeconfig.to_str().unwrap()];
    full.extend_from_slice(args);
    let out = s.kubectl(&full);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const UNAUTHORIZED: &str = "error: You must be logged in to the server (Unauthorized)";

fn assert_unauthorized(s: &RkubeServer, kubeconfig: &Path, what: &str) {
    let (ok, out, err) = as_token(s, kubeconfig, &["get", "pods"]);
    assert!(!ok, "{what}: the token was accepted: {out}");
    assert!(err.contains(UNAUTHORIZED), "{what}: {err}");
}

#[test]
fn create_token_gives_jwts_that_authenticate_as_the_service_account() {
    let s = RkubeServer::start();
    s.ok(&["create", "sa", "bot"]);
    // RBAC: the account may read pods, nothing more.
    s.ok(&["create", "role", "pod-reader", "--verb=get,list", "--resource=pods"]);
    s.ok(&[
        "create",
        "rolebinding",
        "bot-reads-pods",
        "--role=pod-reader",
        "--serviceaccount=default:bot",
    ]);
    let sa_uid = s.ok(&["get", "sa", "bot", "-o", "jsonpath={.metadata.uid}"]);

    // The token and its claims, as upstream's.
    let token = s.ok(&["create", "token", "bot"]);
    let token = token.trim();
    let header = jwt_part(token, 0);
    assert_eq!(header["alg"], "RS256");
    assert!(header["kid"].as_str().is_some_and(|k| k.len() == 43), "{header}");
    let c = claims(token);
    assert_eq!(c["iss"], ISSUER);
    assert_eq!(c["sub"], "system:serviceaccount:default:bot");
    assert_eq!(c["aud"], serde_json::json!([ISSUER]));
    let iat = c["iat"].as_i64().unwrap();
    assert_eq!(c["exp"].as_i64().unwrap() - iat, 3600);
    assert_eq!(c["nbf"].as_i64().unwrap(), iat);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    assert!((iat - now.as_secs() as i64).abs() < 120, "iat {iat} is not now");
    let jti = c["jti"].as_str().unwrap();
    assert_eq!(jti.len(), 36);
    assert_eq!(
        c["kubernetes.io"],
        serde_json::json!({"namespace": "default", "serviceaccount": {"name": "bot", "uid": sa_uid}})
    );

    // It authenticates as the service account.
    let bot = token_kubeconfig(&s, "bot", token);
    let (ok, out, err) = as_token(&s, &bot, &["get", "pods"]);
    assert!(ok, "{out}{err}");
    assert!(err.contains("No resources found"), "{err}");
    let (ok, who, err) = as_token(&s, &bot, &["auth", "whoami", "-o", "json"]);
    assert!(ok, "{err}");
    let who = json(&who)["status"]["userInfo"].clone();
    assert_eq!(who["username"], "system:serviceaccount:default:bot");
    assert_eq!(who["uid"], sa_uid.as_str());
    assert_eq!(
        who["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    assert_eq!(
        who["extra"]["authentication.kubernetes.io/credential-id"],
        serde_json::json!([format!("JTI={jti}")])
    );
    // The admin's client certificate still wins over nothing.
    let admin = json(&s.ok(&["auth", "whoami", "-o", "json"]));
    assert_eq!(admin["status"]["userInfo"]["username"], "system:admin");

    // Garbage, and a token signed by someone else, get 401.
    assert_unauthorized(&s, &token_kubeconfig(&s, "garbage", "garbage"), "garbage");
    let mut parts: Vec<&str> = token.split('.').collect();
    let other = s.ok(&["create", "token", "bot"]);
    let other_signature = other.trim().split('.').nth(2).unwrap().to_string();
    parts[2] = &other_signature;
    assert_unauthorized(&s, &token_kubeconfig(&s, "forged", &parts.join(".")), "bad signature");

    // Durations and audiences.
    let ten = claims(&s.ok(&["create", "token", "bot", "--duration", "10m"]));
    assert_eq!(ten["exp"].as_i64().unwrap() - ten["iat"].as_i64().unwrap(), 600);
    let err = s.fails(&["create", "token", "bot", "--duration", "5m"]);
    assert!(
        err.contains(
            "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"
        ),
        "{err}"
    );
    let vault = s.ok(&["create", "token", "bot", "--audience", "vault"]);
    assert_eq!(claims(&vault)["aud"], serde_json::json!(["vault"]));
    assert_unauthorized(&s, &token_kubeconfig(&s, "vault", &vault), "another audience");
    // ... which a TokenReview for that audience accepts.
    let review = format!(
        r#"{{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","metadata":{{}},"spec":{{"token":"{}","audiences":["vault"]}}}}"#,
        vault.trim()
    );
    let reviewed = json(&s.ok_stdin(&["create", "-f", "-", "-o", "json"], &review));
    assert_eq!(reviewed["status"]["authenticated"], true, "{reviewed}");
    assert_eq!(reviewed["status"]["user"]["username"], "system:serviceaccount:default:bot");
    assert_eq!(reviewed["status"]["audiences"], serde_json::json!(["vault"]));

    // Errors as upstream's.
    let err = s.fails(&["create", "token", "nobody"]);
    assert!(err.contains("serviceaccounts \"nobody\" not found"), "{err}");
    let err = s.fails(&[
        "create",
        "token",
        "bot",
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "ghost",
    ]);
    assert!(err.contains("pods \"ghost\" not found"), "{err}");

    // A token bound to a pod works while the pod exists, and not after.
    s.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  serviceAccountName: bot\n  containers: [{name: c, image: \"busybox:1.36\"}]\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: other}\nspec:\n  containers: [{name: c, image: \"busybox:1.36\"}]\n",
    );
    let pod_uid = s.ok(&["get", "pod", "p", "-o", "jsonpath={.metadata.uid}"]);
    let err = s.fails(&[
        "create",
        "token",
        "bot",
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "other",
    ]);
    assert!(
        err.contains("cannot bind token for serviceaccount \"bot\" to pod running with different serviceaccount name."),
        "{err}"
    );
    let err = s.fails(&[
        "create",
        "token",
        "bot",
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "p",
        "--bound-object-uid",
        "0000",
    ]);
    assert!(err.contains("the UID in the bound object reference (0000) does not match"), "{err}");
    let bound =
        s.ok(&["create", "token", "bot", "--bound-object-kind", "Pod", "--bound-object-name", "p"]);
    assert_eq!(
        claims(&bound)["kubernetes.io"]["pod"],
        serde_json::json!({"name": "p", "uid": pod_uid})
    );
    let bound_config = token_kubeconfig(&s, "bound", &bound);
    let (ok, who, err) = as_token(&s, &bound_config, &["auth", "whoami", "-o", "json"]);
    assert!(ok, "{err}");
    let extra = &json(&who)["status"]["userInfo"]["extra"];
    assert_eq!(extra["authentication.kubernetes.io/pod-name"], serde_json::json!(["p"]));
    assert_eq!(extra["authentication.kubernetes.io/pod-uid"], serde_json::json!([pod_uid]));
    s.ok(&["delete", "pod", "p", "--grace-period=0", "--force"]);
    assert_unauthorized(&s, &bound_config, "bound to a deleted pod");

    // Bound to a secret: the same.
    s.ok(&["create", "secret", "generic", "s", "--from-literal=k=v"]);
    let bound = s.ok(&[
        "create",
        "token",
        "bot",
        "--bound-object-kind",
        "Secret",
        "--bound-object-name",
        "s",
    ]);
    let secret_config = token_kubeconfig(&s, "secret", &bound);
    assert!(as_token(&s, &secret_config, &["get", "pods"]).0);
    s.ok(&["delete", "secret", "s"]);
    assert_unauthorized(&s, &secret_config, "bound to a deleted secret");

    // The service account deleted and made again: its old tokens are not the new one's.
    s.ok(&["delete", "sa", "bot"]);
    s.ok(&["create", "sa", "bot"]);
    assert_unauthorized(&s, &bot, "a recreated service account");
}

#[test]
fn projected_token_volumes_hold_pod_bound_tokens_the_api_accepts() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok(&["create", "sa", "bot"]);
    // `ghost` goes once its pod is admitted (admission refuses a pod naming a missing account)
    // and before the pod is scheduled (a scheduling gate holds it back).
    s.ok(&["create", "sa", "ghost"]);
    // RBAC: the account may read pods, nothing more.
    s.ok(&["create", "role", "pod-reader", "--verb=get,list", "--resource=pods"]);
    s.ok(&[
        "create",
        "rolebinding",
        "bot-reads-pods",
        "--role=pod-reader",
        "--serviceaccount=default:bot",
    ]);
    let manifest = r#"
apiVersion: v1
kind: Pod
metadata: {name: tok}
spec:
  serviceAccountName: bot
  automountServiceAccountToken: false
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts: [{name: tokens, mountPath: /var/run/secrets/tokens, readOnly: true}]
  volumes:
  - name: tokens
    projected:
      sources:
      - serviceAccountToken: {path: t, expirationSeconds: 600}
      - serviceAccountToken: {path: vault, audience: vault}
---
apiVersion: v1
kind: Pod
metadata: {name: ghostly}
spec:
  serviceAccountName: ghost
  automountServiceAccountToken: false
  schedulingGates: [{name: example.com/hold}]
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts: [{name: tokens, mountPath: /var/run/secrets/tokens}]
  volumes:
  - name: tokens
    projected:
      sources:
      - serviceAccountToken: {path: t}
"#;
    s.ok_stdin(&["apply", "-f", "-"], manifest);
    s.ok(&["delete", "sa", "ghost"]);
    let ungate = r#"[{"op": "remove", "path": "/spec/schedulingGates"}]"#;
    s.ok(&["patch", "pod", "ghostly", "--type=json", "-p", ungate]);
    s.ok(&["wait", "--for=condition=Ready", "pod/tok", "--timeout=60s"]);
    let pod_uid = s.ok(&["get", "pod", "tok", "-o", "jsonpath={.metadata.uid}"]);
    let node_uid = s.ok(&["get", "node", &n.node, "-o", "jsonpath={.metadata.uid}"]);
    let sa_uid = s.ok(&["get", "sa", "bot", "-o", "jsonpath={.metadata.uid}"]);

    let token = s.ok(&["exec", "tok", "--", "cat", "/var/run/secrets/tokens/t"]);
    assert!(!token.trim().is_empty(), "an empty token file");
    let c = claims(&token);
    assert_eq!(c["sub"], "system:serviceaccount:default:bot");
    assert_eq!(c["aud"], serde_json::json!([ISSUER]));
    assert_eq!(c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(), 600);
    assert_eq!(
        c["kubernetes.io"],
        serde_json::json!({
            "namespace": "default",
            "node": {"name": n.node, "uid": node_uid},
            "pod": {"name": "tok", "uid": pod_uid},
            "serviceaccount": {"name": "bot", "uid": sa_uid},
        })
    );
    let vault = claims(&s.ok(&["exec", "tok", "--", "cat", "/var/run/secrets/tokens/vault"]));
    assert_eq!(vault["aud"], serde_json::json!(["vault"]));
    assert_eq!(vault["exp"].as_i64().unwrap() - vault["iat"].as_i64().unwrap(), 3600);

    // The API server accepts it, as the pod's service account on behalf of the pod.
    let config = token_kubeconfig(s, "pod", &token);
    let (ok, who, err) = as_token(s, &config, &["auth", "whoami", "-o", "json"]);
    assert!(ok, "{err}");
    let who = json(&who)["status"]["userInfo"].clone();
    assert_eq!(who["username"], "system:serviceaccount:default:bot");
    assert_eq!(who["extra"]["authentication.kubernetes.io/pod-name"], serde_json::json!(["tok"]));
    assert_eq!(
        who["extra"]["authentication.kubernetes.io/node-name"],
        serde_json::json!([n.node.as_str()])
    );
    let (ok, pods, err) = as_token(s, &config, &["get", "pods", "-o", "name"]);
    assert!(ok && pods.contains("pod/tok"), "{pods}{err}");

    // No such service account: the volume cannot be set up, as upstream says.
    n.wait_for(
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=ghostly,reason=FailedMount",
            "-o",
            "jsonpath={.items[*].message}",
        ],
        Duration::from_secs(60),
        |m| m.contains("failed to fetch token: serviceaccounts \"ghost\" not found"),
    );
    let phase = s.ok(&["get", "pod", "ghostly", "-o", "jsonpath={.status.phase}"]);
    assert_eq!(phase, "Pending");

    // Once the pod is gone, so is its token's validity.
    s.ok(&["delete", "pod", "tok", "--grace-period=1", "--timeout=60s"]);
    assert_unauthorized(s, &config, "the token of a deleted pod");
}
