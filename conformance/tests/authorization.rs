//! Authorization end to end, through stock kubectl and raw HTTPS: the default modes
//! (`Node,RBAC`: a narrow Role grants exactly what it says, with upstream's refusals; the
//! bootstrap policy; escalation prevention; anonymous users reach only public info),
//! `--authorization-mode=AlwaysDeny` (everyone refused with upstream's
//! message, except `system:masters`, as kube-apiserver), `AlwaysAllow` (anonymous requests
//! too), the access reviews behind `kubectl auth can-i` answering what a request would get,
//! and an unknown, unimplemented or missing mode refused at startup.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rkube_conformance::cluster::{refused_start, stdout_of, RkubeServer};
use rkube_conformance::identity::service_account_kubeconfig;
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

/// A SubjectAccessReview created by the admin about `user` listing pods in `default`.
fn review_about(s: &RkubeServer, user: &str) -> Value {
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
        "spec": {"user": user, "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}},
    });
    json(&s.ok_stdin(&["create", "-f", "-", "-o", "json"], &review.to_string()))
}

/// `kubectl` as `kubeconfig`, expecting a refusal: its one-line error.
fn refused(s: &RkubeServer, kubeconfig: &Path, args: &[&str]) -> String {
    let (ok, out, err) = s.kubectl_as(kubeconfig, args);
    assert!(!ok, "{args:?} was allowed: {out}");
    err.trim().to_string()
}

#[test]
fn by_default_rbac_decides_and_anonymous_users_reach_only_public_info() {
    let s = RkubeServer::start();
    // The admin is system:masters; a service account starts with nothing but discovery and
    // the self-reviews.
    assert_eq!(s.ok(&["auth", "can-i", "list", "pods"]).trim(), "yes");
    let bot = service_account_kubeconfig(&s, "bot");
    let (ok, out, _) = s.kubectl_as(&bot, &["auth", "can-i", "delete", "nodes"]);
    assert!(!ok && out.trim() == "no", "{out}");
    assert_eq!(
        refused(&s, &bot, &["get", "secrets", "-n", "kube-system"]),
        "Error from server (Forbidden): secrets is forbidden: User \"system:serviceaccount:default:bot\" cannot list resource \"secrets\" in API group \"\" in the namespace \"kube-system\""
    );
    // A narrow Role: exactly what it grants, nothing more.
    s.ok(&["create", "role", "pod-reader", "--verb=get,list", "--resource=pods"]);
    s.ok(&[
        "create",
        "rolebinding",
        "bot-reads",
        "--role=pod-reader",
        "--serviceaccount=default:bot",
    ]);
    s.ok(&["run", "web", "--image=rkube-test-tools:1", "--restart=Never"]);
    s.wait_until("the binding reaches the authorizer", Duration::from_secs(10), || {
        let (ok, out, err) = s.kubectl_as(&bot, &["get", "pods"]);
        (ok, out + &err)
    });
    let (ok, out, err) = s.kubectl_as(&bot, &["get", "pod", "web", "-o", "name"]);
    assert!(ok && out.trim() == "pod/web", "{out}{err}");
    assert_eq!(
        refused(&s, &bot, &["delete", "pod", "web"]),
        "Error from server (Forbidden): pods \"web\" is forbidden: User \"system:serviceaccount:default:bot\" cannot delete resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    assert!(refused(&s, &bot, &["get", "pods", "-n", "kube-system"])
        .contains("in the namespace \"kube-system\""));
    // `auth can-i` answers what requests get.
    let (_, out, _) = s.kubectl_as(&bot, &["auth", "can-i", "list", "pods"]);
    assert_eq!(out.trim(), "yes");
    let (_, out, _) = s.kubectl_as(&bot, &["auth", "can-i", "watch", "pods"]);
    assert_eq!(out.trim(), "no");
    let (ok, list, err) = s.kubectl_as(&bot, &["auth", "can-i", "--list"]);
    assert!(ok, "{err}");
    let rows: Vec<Vec<&str>> = list.lines().map(|l| l.split_whitespace().collect()).collect();
    assert!(rows.contains(&vec!["pods", "[]", "[]", "[get", "list]"]), "{list}");
    assert!(rows.contains(&vec!["[/healthz]", "[]", "[get]"]), "{list}");
    assert!(!list.contains("*.*"), "{list}");
    // The admin asks about someone else: RBAC's reason says which binding allowed it.
    assert_eq!(review_about(&s, "jane")["status"], json!({"allowed": false}));
    s.ok(&["create", "rolebinding", "jane-reads", "--role=pod-reader", "--user=jane"]);
    s.wait_until("jane's binding is in force", Duration::from_secs(10), || {
        let status = review_about(&s, "jane")["status"].clone();
        (status["allowed"] == json!(true), status.to_string())
    });
    assert_eq!(
        review_about(&s, "jane")["status"]["reason"],
        "RBAC: allowed by RoleBinding \"jane-reads/default\" of Role \"pod-reader\" to User \"jane\""
    );

    // `kubectl auth can-i --as` asks about another user the same way.
    assert_eq!(s.ok(&["auth", "can-i", "list", "pods", "--as=jane"]).trim(), "yes");
    let out = s.kubectl(&["auth", "can-i", "list", "secrets", "--as=jane"]);
    assert_eq!(stdout_of(&out).trim(), "no");
    // Impersonation as RBAC grants it: the bot may act as jane, and only as jane.
    s.ok(&[
        "create",
        "clusterrole",
        "impersonate-jane",
        "--verb=impersonate",
        "--resource=users",
        "--resource-name=jane",
    ]);
    s.ok(&[
        "create",
        "clusterrolebinding",
        "bot-is-jane",
        "--clusterrole=impersonate-jane",
        "--serviceaccount=default:bot",
    ]);
    s.wait_until("the bot may impersonate jane", Duration::from_secs(10), || {
        let (ok, out, err) = s.kubectl_as(&bot, &["get", "pods", "--as=jane", "-o", "name"]);
        (ok && out.contains("pod/web"), out + &err)
    });
    assert_eq!(
        refused(&s, &bot, &["get", "pods", "--as=joe"]),
        "Error from server (Forbidden): users \"joe\" is forbidden: User \"system:serviceaccount:default:bot\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    // As jane, the bot has jane's rights, not its own.
    assert!(refused(&s, &bot, &["get", "secrets", "--as=jane"])
        .contains("User \"jane\" cannot list resource \"secrets\""));

    // Anonymous requests: only what system:public-info-viewer grants.
    for path in ["/healthz", "/livez", "/readyz"] {
        assert_eq!(anonymous(&s, "GET", path), (200, "ok".to_string()), "{path}");
    }
    let (code, body) = anonymous(&s, "GET", "/version");
    assert_eq!((code, json(&body)["major"].as_str()), (200, Some("1")));
    for path in ["/metrics", "/openapi/v2", "/apis", "/api/v1/namespaces/default/pods"] {
        let (code, body) = anonymous(&s, "GET", path);
        assert_eq!(code, 403, "{path}: {body}");
    }
    let (_, body) = anonymous(&s, "GET", "/api/v1/namespaces/default/pods");
    assert_eq!(
        json(&body)["message"],
        "pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(review_about(&s, "system:anonymous")["status"], json!({"allowed": false}));
}

#[test]
fn nobody_grants_what_they_do_not_hold() {
    let s = RkubeServer::start();
    let bot = service_account_kubeconfig(&s, "bot");
    // The bot may manage Roles and RoleBindings in default, and read pods, nothing else.
    s.ok(&[
        "create",
        "role",
        "rbac-manager",
        "--verb=get,list,create,update,patch,delete",
        "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io,pods",
    ]);
    s.ok(&[
        "create",
        "rolebinding",
        "bot-manages",
        "--role=rbac-manager",
        "--serviceaccount=default:bot",
    ]);
    s.wait_until("the binding reaches the authorizer", Duration::from_secs(10), || {
        let (ok, out, err) = s.kubectl_as(&bot, &["get", "roles"]);
        (ok, out + &err)
    });
    let groups = "(groups=[\"system:serviceaccounts\" \"system:serviceaccounts:default\" \"system:authenticated\"])";
    // A role within what it holds: fine. One beyond: upstream's refusal, listing what is missing.
    let (ok, _, err) =
        s.kubectl_as(&bot, &["create", "role", "readers", "--verb=get", "--resource=pods"]);
    assert!(ok, "{err}");
    assert_eq!(
        refused(&s, &bot, &["create", "role", "greedy", "--verb=get,delete", "--resource=pods,secrets"]),
        format!("Error from server (Forbidden): roles.rbac.authorization.k8s.io \"greedy\" is forbidden: user \"system:serviceaccount:default:bot\" {groups} is attempting to grant RBAC permissions not currently held:\n{{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"delete\"]}}")
    );
    // Binding cluster-admin to itself.
    let err = refused(
        &s,
        &bot,
        &[
            "create",
            "rolebinding",
            "root",
            "--clusterrole=cluster-admin",
            "--serviceaccount=default:bot",
        ],
    );
    assert!(err.contains(&format!("rolebindings.rbac.authorization.k8s.io \"root\" is forbidden: user \"system:serviceaccount:default:bot\" {groups} is attempting to grant RBAC permissions not currently held:")), "{err}");
    assert!(err.contains("{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}"), "{err}");
    // Binding a role it holds all of: fine; a role that does not exist: not found.
    let (ok, _, err) =
        s.kubectl_as(&bot, &["create", "rolebinding", "share", "--role=readers", "--user=jane"]);
    assert!(ok, "{err}");
    assert_eq!(
        refused(&s, &bot, &["create", "rolebinding", "ghost", "--role=nope", "--user=jane"]),
        "error: failed to create rolebinding: role.rbac.authorization.k8s.io \"nope\" not found"
    );
    // The `bind` verb lets it bind what it does not hold; `escalate` lets it write such roles.
    s.ok(&[
        "create",
        "role",
        "binder",
        "--verb=bind,escalate",
        "--resource=roles.rbac.authorization.k8s.io",
    ]);
    s.ok(&["create", "rolebinding", "bot-binds", "--role=binder", "--serviceaccount=default:bot"]);
    s.wait_until("bind and escalate are in force", Duration::from_secs(10), || {
        let (ok, out, err) = s.kubectl_as(
            &bot,
            &["create", "role", "greedy", "--verb=get,delete", "--resource=pods,secrets"],
        );
        (ok, out + &err)
    });
    let (ok, _, err) =
        s.kubectl_as(&bot, &["create", "rolebinding", "greedy", "--role=greedy", "--user=jane"]);
    assert!(ok, "{err}");
    // Nothing was stored by the refused writes.
    let names = s.ok(&["get", "roles,rolebindings", "-o", "name"]);
    assert!(!names.contains("rolebinding.rbac.authorization.k8s.io/root"), "{names}");
}

#[test]
fn the_bootstrap_policy_is_written_and_kept_at_every_start() {
    let mut s = RkubeServer::start();
    let names = s.ok(&["get", "clusterroles", "-o", "name"]);
    for role in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:node",
        "system:kube-scheduler",
        "system:kube-controller-manager",
        "system:controller:deployment-controller",
        "system:service-account-issuer-discovery",
        "system:kubelet-api-admin",
    ] {
        assert!(
            names.lines().any(|l| l == format!("clusterrole.rbac.authorization.k8s.io/{role}")),
            "{role}: {names}"
        );
    }
    let binding = json(&s.ok(&["get", "clusterrolebinding", "cluster-admin", "-o", "json"]));
    assert_eq!(
        binding["subjects"],
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}])
    );
    assert_eq!(binding["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
    let roles = s.ok(&["get", "roles", "-n", "kube-system", "-o", "name"]);
    assert!(
        roles.contains("role.rbac.authorization.k8s.io/extension-apiserver-authentication-reader"),
        "{roles}"
    );
    // An administrator's edit of a role with autoupdate on is undone at the next start;
    // with autoupdate off it stays.
    s.ok(&[
        "patch",
        "clusterrole",
        "system:basic-user",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/rules","value":[]}]"#,
    ]);
    s.ok(&[
        "patch",
        "clusterrole",
        "system:monitoring",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/rules","value":[]}]"#,
    ]);
    s.ok(&[
        "annotate",
        "clusterrole",
        "system:monitoring",
        "--overwrite",
        "rbac.authorization.kubernetes.io/autoupdate=false",
    ]);
    s.restart();
    let basic = json(&s.ok(&["get", "clusterrole", "system:basic-user", "-o", "json"]));
    assert_eq!(basic["rules"].as_array().map(Vec::len), Some(2), "{basic}");
    let monitoring = json(&s.ok(&["get", "clusterrole", "system:monitoring", "-o", "json"]));
    assert_eq!(monitoring["rules"], json!([]), "{monitoring}");
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
    let (ok, out, err) = s.kubectl_as(&bot, &["get", "pods"]);
    assert!(!ok, "{out}");
    assert_eq!(
        err.trim(),
        "Error from server (Forbidden): pods is forbidden: User \"system:serviceaccount:default:bot\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\": Everything is forbidden."
    );
    // Asking is refused too: creating the SelfSubjectAccessReview is a request.
    let (ok, out, err) = s.kubectl_as(&bot, &["auth", "can-i", "list", "pods"]);
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
        (
            "AlwaysAllow,Webhook",
            "rkube: authorization-mode Webhook's authorization config file not passed",
        ),
        ("ABAC", "rkube: authorization-mode \"ABAC\" is not implemented in rkube"),
        (
            "RBAC,Node,RBAC",
            "rkube: authorization-mode \"RBAC,Node,RBAC\" has mode specified more than once",
        ),
        ("", "rkube: at least one authorization-mode must be passed"),
    ] {
        let data_dir = tempfile::tempdir().unwrap();
        let err = refused_start(data_dir.path(), &["--authorization-mode", mode]);
        assert_eq!(err.trim().lines().count(), 1, "{mode}: {err}");
        assert!(err.starts_with(message), "{mode}: {err}");
        // Nothing was set up before the flag was read.
        assert!(!data_dir.path().join("db").exists(), "{mode}");
    }
}

#[test]
fn the_webhook_mode_asks_a_remote_service_after_rbac() {
    use rkube_conformance::webhook::{write_webhook_kubeconfig, TestCa, WebhookServer};
    use std::sync::Arc;
    let ca = TestCa::new("authz-webhook-ca");
    let webhook = WebhookServer::start_raw(
        &ca,
        &["authz.example"],
        Arc::new(|_, review: &Value| {
            let spec = &review["spec"];
            let resource = spec["resourceAttributes"]["resource"].as_str().unwrap_or("");
            let status = match (spec["user"].as_str(), resource) {
                (Some("wanda"), "configmaps") => {
                    json!({"allowed": true, "reason": "webhook says yes"})
                }
                (Some("wanda"), "secrets") => {
                    json!({"allowed": false, "denied": true, "reason": "webhook says no"})
                }
                _ => json!({"allowed": false}),
            };
            json!({"apiVersion": review["apiVersion"], "kind": "SubjectAccessReview", "status": status})
        }),
    );
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("authz-webhook.kubeconfig");
    write_webhook_kubeconfig(&kubeconfig, &webhook.url("/authorize"), &ca, "apiserver-secret");
    let s = RkubeServer::start_with(&[
        "--authorization-mode=Node,RBAC,Webhook",
        "--authorization-webhook-config-file",
        kubeconfig.to_str().unwrap(),
        "--authorization-webhook-version=v1",
    ]);

    // RBAC knows nothing of wanda: the webhook decides.
    for _ in 0..2 {
        s.ok(&["get", "configmaps", "--as=wanda"]);
    }
    let err = s.fails(&["get", "secrets", "--as=wanda"]);
    assert!(
        err.contains(
            "secrets is forbidden: User \"wanda\" cannot list resource \"secrets\" in API group \"\" \
             in the namespace \"default\": webhook says no"
        ),
        "{err}"
    );
    // No opinion: refused, as nobody allowed it.
    let err = s.fails(&["get", "pods", "--as=wanda"]);
    assert!(
        err.contains("pods is forbidden: User \"wanda\" cannot list resource \"pods\""),
        "{err}"
    );
    let out = s.kubectl(&["auth", "can-i", "list", "secrets", "--as=wanda"]);
    assert_eq!(stdout_of(&out).trim(), "no - webhook says no");
    // What was sent: v1 SubjectAccessReviews with the user and the kubeconfig's credential;
    // the allow was remembered (one review for two kubectl runs).
    let sent = webhook.reviews_to("/authorize");
    let lists: Vec<&Value> = sent
        .iter()
        .filter(|r| r["spec"]["resourceAttributes"]["resource"] == "configmaps")
        .collect();
    assert_eq!(lists.len(), 1, "{sent:#?}");
    assert_eq!(lists[0]["apiVersion"], "authorization.k8s.io/v1");
    assert_eq!(
        lists[0]["spec"]["resourceAttributes"],
        json!({"verb": "list", "resource": "configmaps", "namespace": "default", "version": "v1"})
    );
    assert_eq!(lists[0]["spec"]["user"], "wanda");
    assert_eq!(lists[0]["spec"]["groups"], json!(["system:authenticated"]));
    assert!(webhook.authorizations.lock().unwrap().iter().all(|a| a == "Bearer apiserver-secret"));
    // Users RBAC allows never reach the webhook.
    let before = webhook.reviews_to("/authorize").len();
    s.ok(&["get", "pods"]);
    assert_eq!(webhook.reviews_to("/authorize").len(), before);
}

#[test]
fn an_unreachable_authorization_webhook_makes_a_500() {
    use rkube_conformance::webhook::{write_webhook_kubeconfig, TestCa};
    let ca = TestCa::new("authz-webhook-ca");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("authz-webhook.kubeconfig");
    // A loopback port nothing listens on.
    let port = rkube_store::testing::free_port();
    let url = format!("https://127.0.0.1:{port}/authorize");
    write_webhook_kubeconfig(&kubeconfig, &url, &ca, "apiserver-secret");
    let s = RkubeServer::start_with(&[
        "--authorization-mode=RBAC,Webhook",
        "--authorization-webhook-config-file",
        kubeconfig.to_str().unwrap(),
    ]);
    let c = s.curl(&["-H", "Impersonate-User: wanda"], "/api/v1/namespaces/default/configmaps");
    assert_eq!(c.code, 500, "{c:?}");
    assert_eq!(c.header("content-type"), ["text/plain; charset=utf-8"]);
    assert!(
        c.body.starts_with(&format!(
            "Internal Server Error: \"/api/v1/namespaces/default/configmaps\": Post \"{url}\": "
        )),
        "{}",
        c.body
    );
    assert!(c.body.contains("connection refused"), "{}", c.body);
}
