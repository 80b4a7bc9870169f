//! Authentication end to end, through stock kubectl and raw HTTPS: impersonation
//! (`kubectl --as`, `--as-group`, the `Impersonate-*` headers) checked with the authorizer,
//! `--anonymous-auth=false`, `--token-auth-file` users, bootstrap tokens, and the
//! service-account issuer discovery documents that verify a TokenRequest token.

use std::path::PathBuf;
use std::process::{Command, Output};

use rkube_conformance::cluster::{refused_start, stderr_of, stdout_of, RkubeServer};
use rkube_conformance::identity::base64url;
use serde_json::{json, Value};

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// `alice` (uid a-1, groups dev and ops) by the token `alice-token`.
const TOKEN_FILE: &str = "alice-token,alice,a-1,\"dev,ops\"\n";

/// A token file in a directory of its own (the server's data dir does not exist yet).
fn token_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.csv");
    std::fs::write(&path, TOKEN_FILE).unwrap();
    (dir, path)
}

/// kubectl with only a bearer token (the admin kubeconfig's certificate would authenticate
/// first).
fn kubectl_with_token(s: &RkubeServer, token: &str, args: &[&str]) -> Output {
    let server = format!("https://127.0.0.1:{}", s.port);
    let ca = s.data_dir.path().join("pki/ca.crt");
    let mut full = vec![
        "--kubeconfig=/dev/null".to_string(),
        format!("--server={server}"),
        format!("--certificate-authority={}", ca.display()),
        format!("--token={token}"),
    ];
    full.extend(args.iter().map(|a| a.to_string()));
    let full: Vec<&str> = full.iter().map(String::as_str).collect();
    s.kubectl(&full)
}

/// A raw request without a client certificate (`args`: headers, method): code and body.
fn curl_without_certificate(s: &RkubeServer, args: &[&str], path: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "30", "-w", "\n%{http_code}", "--cacert"])
        .arg(s.data_dir.path().join("pki/ca.crt"))
        .args(args)
        .arg(format!("https://127.0.0.1:{}{path}", s.port))
        .output()
        .expect("curl");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let (body, code) = text.rsplit_once('\n').expect("curl wrote the status code");
    (code.parse().unwrap_or(0), body.to_string())
}

fn whoami(out: &Output) -> Value {
    assert!(out.status.success(), "{}{}", stdout_of(out), stderr_of(out));
    json(&stdout_of(out))["status"]["userInfo"].clone()
}

const SELF_SUBJECT_REVIEW: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
const REVIEW_BODY: &[u8] =
    br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;

#[test]
fn kubectl_as_shows_the_impersonated_identity() {
    let s = RkubeServer::start();
    let me = whoami(&s.kubectl(&["--as=jane", "--as-group=g", "auth", "whoami", "-o", "json"]));
    assert_eq!(me, json!({"username": "jane", "groups": ["g", "system:authenticated"]}));
    let me =
        whoami(&s.kubectl(&["--as=system:serviceaccount:ns1:bot", "auth", "whoami", "-o", "json"]));
    assert_eq!(
        me,
        json!({"username": "system:serviceaccount:ns1:bot",
               "groups": ["system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"]})
    );
    // The uid and extras (keys percent-decoded), by raw headers.
    let out = s.curl_body(
        &[
            "-H",
            "Impersonate-User: jane",
            "-H",
            "Impersonate-Uid: u-7",
            "-H",
            "Impersonate-Extra-Scopes%2Fa: x",
            "-H",
            "Impersonate-Extra-Scopes%2Fa: y",
        ],
        SELF_SUBJECT_REVIEW,
        REVIEW_BODY,
    );
    assert_eq!(out.code, 201, "{out:?}");
    assert_eq!(
        json(&out.body)["status"]["userInfo"],
        json!({"username": "jane", "uid": "u-7", "groups": ["system:authenticated"],
               "extra": {"scopes/a": ["x", "y"]}})
    );
    // Groups without a user: upstream's internal error. Over HTTP/1.1: answered before the
    // body is read, an HTTP/2 stream is then reset with NO_ERROR (RFC 9113 8.1, as Go's
    // server does too), and curl 7.88 fails with error 92 if it is still sending the body.
    let out =
        s.curl_body(&["--http1.1", "-H", "Impersonate-Group: g"], SELF_SUBJECT_REVIEW, REVIEW_BODY);
    assert_eq!(out.code, 500, "{out:?}");
    assert!(out.body.contains("without impersonating a user"), "{}", out.body);
}

#[test]
fn under_always_deny_only_system_masters_may_impersonate_and_anonymous_auth_can_be_off() {
    let (_dir, tokens) = token_file();
    let s = RkubeServer::start_with(&[
        "--authorization-mode",
        "AlwaysDeny",
        "--anonymous-auth=false",
        "--token-auth-file",
        tokens.to_str().unwrap(),
    ]);
    // Without credentials: 401 everywhere, as upstream with --anonymous-auth=false.
    for path in ["/healthz", "/version", "/api/v1/pods"] {
        let (code, body) = curl_without_certificate(&s, &[], path);
        assert_eq!(code, 401, "{path}: {body}");
        let status = json(&body);
        assert_eq!((&status["reason"], &status["code"]), (&json!("Unauthorized"), &json!(401)));
    }
    // alice may not impersonate; upstream's message.
    // (`get --raw`: no discovery first, which would be refused the same way.)
    let pods = "/api/v1/namespaces/default/pods";
    let out = kubectl_with_token(&s, "alice-token", &["--as=jane", "get", "--raw", pods]);
    assert!(!out.status.success());
    assert_eq!(
        stderr_of(&out).trim(),
        "Error from server (Forbidden): users \"jane\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope: Everything is forbidden."
    );
    let out = kubectl_with_token(
        &s,
        "alice-token",
        &["--as=system:serviceaccount:kube-system:x", "get", "--raw", pods],
    );
    assert!(
        stderr_of(&out).contains(
            "serviceaccounts \"x\" is forbidden: User \"alice\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"kube-system\""
        ),
        "{}",
        stderr_of(&out)
    );
    // The admin (system:masters) may; the request then goes on as jane, whom AlwaysDeny refuses.
    let out = s.kubectl(&["--as=jane", "get", "--raw", pods]);
    assert!(
        stderr_of(&out).contains(
            "pods is forbidden: User \"jane\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
        ),
        "{}{}",
        stdout_of(&out),
        stderr_of(&out)
    );
}

#[test]
fn anonymous_requests_are_served_by_default() {
    let s = RkubeServer::start();
    assert_eq!(curl_without_certificate(&s, &[], "/healthz"), (200, "ok".to_string()));
}

#[test]
fn token_file_users_authenticate() {
    let (_dir, tokens) = token_file();
    let s = RkubeServer::start_with(&["--token-auth-file", tokens.to_str().unwrap()]);
    let me = whoami(&kubectl_with_token(&s, "alice-token", &["auth", "whoami", "-o", "json"]));
    assert_eq!(
        me,
        json!({"username": "alice", "uid": "a-1", "groups": ["dev", "ops", "system:authenticated"]})
    );
    // TokenReview asks the same authenticators.
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "metadata": {},
                        "spec": {"token": "alice-token"}});
    let review = json(&s.ok_stdin(&["create", "-f", "-", "-o", "json"], &review.to_string()));
    assert_eq!(
        review["status"],
        json!({"authenticated": true,
               "user": {"username": "alice", "uid": "a-1", "groups": ["dev", "ops", "system:authenticated"]},
               "audiences": ["https://kubernetes.default.svc.cluster.local"]})
    );
    let out = kubectl_with_token(&s, "bob-token", &["auth", "whoami"]);
    assert!(!out.status.success());
    assert!(stderr_of(&out).contains("Unauthorized"), "{}", stderr_of(&out));
}

#[test]
fn a_malformed_token_file_stops_startup_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.csv");
    std::fs::write(&path, "t1,u1,1\nt2,u2\n").unwrap();
    let data_dir = dir.path().join("data");
    let err = refused_start(&data_dir, &["--token-auth-file", path.to_str().unwrap()]);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert_eq!(
        err.trim(),
        format!(
            "rkube: --token-auth-file {}: line 2: must have at least 3 columns (token, user name, user uid), found 2",
            path.display()
        )
    );
}

/// A bootstrap token Secret for `id` with `data` (as stringData).
fn bootstrap_secret(s: &RkubeServer, id: &str, data: Value) {
    let mut string_data = json!({"token-id": id, "token-secret": "0123456789abcdef"});
    for (k, v) in data.as_object().unwrap() {
        string_data[k] = v.clone();
    }
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("bootstrap-token-{id}"), "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "stringData": string_data,
    });
    s.ok_stdin(&["create", "-f", "-"], &secret.to_string());
}

#[test]
fn bootstrap_tokens_authenticate_while_valid_and_marked_for_authentication() {
    let s = RkubeServer::start();
    bootstrap_secret(
        &s,
        "abcdef",
        json!({"usage-bootstrap-authentication": "true",
               "auth-extra-groups": "system:bootstrappers:worker",
               "expiration": "2099-01-01T00:00:00Z"}),
    );
    bootstrap_secret(
        &s,
        "expird",
        json!({"usage-bootstrap-authentication": "true", "expiration": "2020-01-01T00:00:00Z"}),
    );
    bootstrap_secret(&s, "nouse1", json!({"usage-bootstrap-signing": "true"}));
    let me = whoami(&kubectl_with_token(
        &s,
        "abcdef.0123456789abcdef",
        &["auth", "whoami", "-o", "json"],
    ));
    assert_eq!(
        me,
        json!({"username": "system:bootstrap:abcdef",
               "groups": ["system:bootstrappers", "system:bootstrappers:worker", "system:authenticated"]})
    );
    for token in ["expird.0123456789abcdef", "nouse1.0123456789abcdef", "abcdef.0123456789abcdee"] {
        let out = kubectl_with_token(&s, token, &["auth", "whoami"]);
        assert!(!out.status.success(), "{token}");
        assert!(stderr_of(&out).contains("Unauthorized"), "{token}: {}", stderr_of(&out));
        let (code, _) = curl_without_certificate(
            &s,
            &["-H", &format!("Authorization: Bearer {token}")],
            "/api/v1/namespaces",
        );
        assert_eq!(code, 401, "{token}");
    }
}

#[test]
fn issuer_discovery_documents_verify_a_token_request_token() {
    let s = RkubeServer::start();
    let config = s.curl(&[], "/.well-known/openid-configuration");
    assert_eq!(config.code, 200, "{config:?}");
    assert_eq!(config.header("content-type"), ["application/json"]);
    assert_eq!(config.header("cache-control"), ["public, max-age=3600"]);
    assert_eq!(
        json(&config.body),
        json!({
            "issuer": "https://kubernetes.default.svc.cluster.local",
            "jwks_uri": format!("https://127.0.0.1:{}/openid/v1/jwks", s.port),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        })
    );
    let jwks = s.curl(&[], "/openid/v1/jwks");
    assert_eq!(jwks.code, 200, "{jwks:?}");
    assert_eq!(jwks.header("content-type"), ["application/jwk-set+json"]);
    assert_eq!(jwks.header("cache-control"), ["public, max-age=3600"]);
    let keys = json(&jwks.body)["keys"].as_array().expect("keys").clone();
    assert!(!keys.is_empty());

    s.ok(&["create", "serviceaccount", "bot"]);
    let token = s.ok(&["create", "token", "bot"]);
    let token = token.trim();
    let (signed, signature) = token.rsplit_once('.').expect("a JWT");
    let header = json(&String::from_utf8(base64url(signed.split('.').next().unwrap())).unwrap());
    let key = keys
        .iter()
        .find(|k| k["kid"] == header["kid"])
        .unwrap_or_else(|| panic!("the token's kid {} is not in the JWKS {keys:?}", header["kid"]));
    assert_eq!(
        (&key["use"], &key["kty"], &key["alg"]),
        (&json!("sig"), &json!("RSA"), &json!("RS256"))
    );
    let n = openssl::bn::BigNum::from_slice(&base64url(key["n"].as_str().unwrap())).unwrap();
    let e = openssl::bn::BigNum::from_slice(&base64url(key["e"].as_str().unwrap())).unwrap();
    let public =
        openssl::pkey::PKey::from_rsa(openssl::rsa::Rsa::from_public_components(n, e).unwrap())
            .unwrap();
    let mut verifier =
        openssl::sign::Verifier::new(openssl::hash::MessageDigest::sha256(), &public).unwrap();
    verifier.update(signed.as_bytes()).unwrap();
    assert!(verifier.verify(&base64url(signature)).unwrap(), "the JWKS key verifies the token");
}

#[test]
fn a_token_webhook_authenticates_the_tokens_nobody_else_knows() {
    use rkube_conformance::webhook::{write_webhook_kubeconfig, TestCa, WebhookServer};
    use std::sync::Arc;
    let ca = TestCa::new("token-webhook-ca");
    let webhook = WebhookServer::start_raw(
        &ca,
        &["authn.example"],
        Arc::new(|_, review: &Value| {
            let status = if review["spec"]["token"] == "webhook-token" {
                json!({"authenticated": true, "user": {"username": "wanda", "uid": "w-1",
                       "groups": ["webhook-users"], "extra": {"scope": ["all"]}}})
            } else {
                json!({"authenticated": false, "error": "unknown token"})
            };
            json!({"apiVersion": review["apiVersion"], "kind": "TokenReview", "status": status})
        }),
    );
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("token-webhook.kubeconfig");
    write_webhook_kubeconfig(&kubeconfig, &webhook.url("/authenticate"), &ca, "apiserver-secret");
    let s = RkubeServer::start_with(&[
        "--authentication-token-webhook-config-file",
        kubeconfig.to_str().unwrap(),
        "--authentication-token-webhook-version=v1",
    ]);

    // kubectl with the webhook's token is the user the webhook names.
    let out = kubectl_with_token(&s, "webhook-token", &["auth", "whoami", "-o", "json"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let review = json(&stdout_of(&out));
    assert_eq!(
        review["status"]["userInfo"],
        json!({"username": "wanda", "uid": "w-1", "groups": ["webhook-users", "system:authenticated"],
               "extra": {"scope": ["all"]}})
    );
    // What the webhook was sent: a v1 TokenReview for the API's audiences, with the
    // credential of the kubeconfig's user.
    let sent = webhook.reviews_to("/authenticate");
    assert_eq!(sent[0]["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(sent[0]["kind"], "TokenReview");
    assert_eq!(
        sent[0]["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert_eq!(webhook.authorizations.lock().unwrap()[0], "Bearer apiserver-secret");

    // A token the webhook refuses is a 401; its answer is remembered (one review for the
    // several requests of two kubectl runs).
    for _ in 0..2 {
        let out = kubectl_with_token(&s, "wrong-token", &["get", "pods"]);
        assert!(!out.status.success());
        assert!(stderr_of(&out).contains("You must be logged in"), "{}", stderr_of(&out));
    }
    let wrong = webhook.reviews_to("/authenticate");
    assert_eq!(wrong.iter().filter(|r| r["spec"]["token"] == "wrong-token").count(), 1);

    // A TokenReview asks the webhook too.
    let review = s.ok_stdin(
        &["create", "-o", "json", "-f", "-"],
        r#"{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "metadata": {"name": "review"}, "spec": {"token": "webhook-token"}}"#,
    );
    let review = json(&review);
    assert_eq!(review["status"]["authenticated"], true);
    assert_eq!(review["status"]["user"]["username"], "wanda");
    assert_eq!(
        review["status"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
}
