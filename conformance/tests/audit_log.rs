//! The audit log end to end: the real rkube started with `--audit-policy-file` and
//! `--audit-log-*`, driven by stock kubectl and raw HTTPS (curl), and its log file read back
//! as the `audit.k8s.io/v1` events kube-apiserver writes: levels and stages by the policy,
//! objectRef, response status, request and response objects (protobuf answers included),
//! the authorizer's decision, impersonation, failed authentication, watches' two events, the
//! `Audit-Id` header, a private file that rotates, the legacy format, and bad flags refused.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rkube_conformance::cluster::{refused_start, RkubeServer};
use serde_json::{json, Value};

/// The policy of the first test: the cluster's own components not recorded, Secrets only as
/// metadata, ConfigMaps with their bodies, watches of pods at Request, the rest as metadata.
const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: [system:kube-scheduler, system:kube-controller-manager, system:kube-proxy]
- level: None
  userGroups: [system:nodes, system:serviceaccounts]
- level: None
  nonResourceURLs: [/readyz, /healthz*, /livez]
- level: Metadata
  resources: [{group: "", resources: [secrets]}]
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
  omitManagedFields: true
- level: Request
  verbs: [watch]
  resources: [{group: "", resources: [pods]}]
- level: Metadata
"#;

/// A policy and a log path in a directory of their own.
fn audit_files(policy: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let policy_path = dir.path().join("policy.yaml");
    std::fs::write(&policy_path, policy).unwrap();
    let log = dir.path().join("logs/audit.log");
    (dir, policy_path, log)
}

fn start(policy: &Path, log: &Path, extra: &[&str]) -> RkubeServer {
    let (policy, log) = (policy.to_str().unwrap(), log.to_str().unwrap());
    let mut args = vec!["--audit-policy-file", policy, "--audit-log-path", log];
    args.extend_from_slice(extra);
    RkubeServer::start_with(&args)
}

/// Every event in the log so far.
fn events(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON event ({e}): {l}")))
        .collect()
}

/// The events `pick` selects, waiting (up to 15 s) until there are at least `n`.
fn wait_events(log: &Path, n: usize, pick: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let found: Vec<Value> = events(log).into_iter().filter(|e| pick(e)).collect();
        if found.len() >= n || Instant::now() > deadline {
            assert!(found.len() >= n, "{n} events wanted, found {}: {found:#?}", found.len());
            return found;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The one event of a request with this verb and URI prefix.
fn event(log: &Path, verb: &str, uri: &str) -> Value {
    let found =
        wait_events(log, 1, |e| e["verb"] == verb && text(e, "requestURI").starts_with(uri));
    assert_eq!(found.len(), 1, "{found:#?}");
    found.into_iter().next().unwrap()
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

#[test]
fn requests_are_recorded_as_kube_apiserver_records_them() {
    let (_dir, policy, log) = audit_files(POLICY);
    let s = start(&policy, &log, &[]);
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode(&log), 0o600, "the log holds request bodies: its owner's only");
    assert_eq!(mode(log.parent().unwrap()), 0o700);

    // A ConfigMap at RequestResponse: both bodies, managedFields left out.
    s.ok(&["create", "configmap", "c1", "--from-literal=k=v"]);
    let e = event(&log, "create", "/api/v1/namespaces/default/configmaps");
    assert_eq!(e["kind"], "Event");
    assert_eq!(e["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(e["level"], "RequestResponse");
    assert_eq!(e["stage"], "ResponseComplete");
    assert_eq!(e["user"]["username"], "system:admin");
    assert_eq!(e["user"]["groups"], json!(["system:masters", "system:authenticated"]));
    assert_eq!(e["sourceIPs"], json!(["127.0.0.1"]));
    assert!(text(&e, "userAgent").starts_with("kubectl/"), "{e}");
    assert_eq!(
        e["objectRef"],
        json!({"resource": "configmaps", "namespace": "default", "name": "c1", "apiVersion": "v1"})
    );
    assert_eq!(e["responseStatus"], json!({"metadata": {}, "code": 201}));
    assert_eq!(e["requestObject"]["data"], json!({"k": "v"}));
    assert_eq!(e["responseObject"]["data"], json!({"k": "v"}));
    assert!(e["responseObject"]["metadata"]["uid"].is_string(), "{e}");
    assert!(e["responseObject"]["metadata"].get("managedFields").is_none(), "{e}");
    assert_eq!(e["annotations"]["authorization.k8s.io/decision"], "allow");
    // Upstream's field order, and microsecond timestamps.
    let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "kind",
            "apiVersion",
            "level",
            "auditID",
            "stage",
            "requestURI",
            "verb",
            "user",
            "sourceIPs",
            "userAgent",
            "objectRef",
            "responseStatus",
            "requestObject",
            "responseObject",
            "requestReceivedTimestamp",
            "stageTimestamp",
            "annotations"
        ]
    );
    let stamp = text(&e, "stageTimestamp");
    assert_eq!(stamp.len(), "2026-11-29T10:00:00.000000Z".len(), "{stamp}");
    // RequestReceived is omitted by the policy: one event a request.
    assert!(events(&log).iter().all(|e| e["stage"] != "RequestReceived"));

    // A Secret at Metadata: no bodies, and its data nowhere in the log.
    s.ok(&["create", "secret", "generic", "s1", "--from-literal=password=hunter2"]);
    let e = event(&log, "create", "/api/v1/namespaces/default/secrets");
    assert_eq!(e["level"], "Metadata");
    assert!(e.get("requestObject").is_none() && e.get("responseObject").is_none(), "{e}");
    let whole = std::fs::read_to_string(&log).unwrap();
    assert!(!whole.contains("hunter2") && !whole.contains("aHVudGVyMg=="));

    // An error answer: its Status in responseStatus.
    s.fails(&["get", "configmap", "nope"]);
    let e = event(&log, "get", "/api/v1/namespaces/default/configmaps/nope");
    assert_eq!(
        e["responseStatus"],
        json!({"metadata": {}, "status": "Failure", "message": "configmaps \"nope\" not found",
               "reason": "NotFound", "details": {"name": "nope", "kind": "configmaps"}, "code": 404})
    );

    // The client's audit ID is kept and answered; a protobuf answer is recorded as JSON.
    let c = s.curl(
        &[
            "-o",
            "/dev/null",
            "-H",
            "Audit-ID: test-audit-id-1",
            "-H",
            "Accept: application/vnd.kubernetes.protobuf",
        ],
        "/api/v1/namespaces/default/configmaps/c1",
    );
    assert_eq!(c.code, 200);
    assert_eq!(c.header("audit-id"), ["test-audit-id-1"]);
    let found = wait_events(&log, 1, |e| e["auditID"] == "test-audit-id-1");
    assert_eq!(found[0]["responseObject"]["kind"], "ConfigMap");
    assert_eq!(found[0]["responseObject"]["data"], json!({"k": "v"}));
    // Every answer has an ID, recorded or not.
    let c = s.curl(&[], "/readyz");
    assert_eq!(c.header("audit-id").len(), 1);
    assert_eq!(c.header("audit-id")[0].len(), 36, "a UUID");
    assert!(events(&log).iter().all(|e| e["requestURI"] != "/readyz"));

    // Impersonation: who asked, and as whom; a refusal's decision.
    s.fails(&["get", "pods", "--as=jane", "--as-group=dev"]);
    let e = event(&log, "list", "/api/v1/namespaces/default/pods");
    assert_eq!(e["user"]["username"], "system:admin");
    assert_eq!(
        e["impersonatedUser"],
        json!({"username": "jane", "groups": ["dev", "system:authenticated"]})
    );
    assert_eq!(e["responseStatus"]["code"], 403);
    assert_eq!(e["responseStatus"]["reason"], "Forbidden");
    assert_eq!(e["annotations"]["authorization.k8s.io/decision"], "forbid");

    // Credentials that fail: no user, the credential tried, 401 (and an ID).
    let pki = s.data_dir.path().join("pki");
    let out = Command::new("curl")
        .args(["-s", "--max-time", "10", "-D", "/dev/stderr", "-o", "/dev/null"])
        .arg("--cacert")
        .arg(pki.join("ca.crt"))
        .args(["-H", "Authorization: Bearer not-a-token", "-H", "Audit-ID: failed-auth-1"])
        .arg(format!("https://127.0.0.1:{}/api/v1/nodes", s.port))
        .output()
        .unwrap();
    let headers = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(headers.starts_with("http/1.1 401") || headers.starts_with("http/2 401"), "{headers}");
    assert!(headers.contains("audit-id: failed-auth-1"), "{headers}");
    let e = &wait_events(&log, 1, |e| e["auditID"] == "failed-auth-1")[0];
    assert_eq!(e["stage"], "ResponseStarted");
    assert_eq!(e["user"], json!({}));
    assert_eq!(
        e["responseStatus"],
        json!({"metadata": {}, "message": "Authentication failed, attempted: bearer", "code": 401})
    );

    // A watch: ResponseStarted when it starts, ResponseComplete when it ends.
    let out = s.kubectl(&["get", "pods", "--watch", "--request-timeout=2s"]);
    drop(out);
    let watch = wait_events(&log, 2, |e| e["verb"] == "watch");
    assert_eq!(watch[0]["stage"], "ResponseStarted");
    assert_eq!(watch[1]["stage"], "ResponseComplete");
    assert_eq!(watch[0]["auditID"], watch[1]["auditID"]);
    assert_eq!(watch[0]["level"], "Request");
    assert_eq!(watch[0]["responseStatus"]["code"], 200);

    // The server's own components are not recorded by this policy.
    let users: std::collections::BTreeSet<String> =
        events(&log).iter().map(|e| text(&e["user"], "username").to_string()).collect();
    assert_eq!(users, ["", "system:admin"].map(String::from).into(), "{users:?}");
}

#[test]
fn the_log_rotates_and_writes_the_legacy_format() {
    let policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n\
                  - level: RequestResponse\n  resources: [{group: \"\", resources: [configmaps]}]\n\
                  - level: Metadata\n  users: [system:admin]\n";
    let (dir, policy, log) = audit_files(policy);
    let mut s = start(&policy, &log, &["--audit-log-maxsize=1", "--audit-log-maxbackup=1"]);
    // Each create's events hold the 400 KB value twice (request and response): the 1 MB
    // file is rotated more than once, and one backup is kept.
    let value = "x".repeat(400 * 1024);
    for i in 0..4 {
        let manifest = json!({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": format!("big-{i}")}, "data": {"v": value}});
        s.ok_stdin(&["create", "-f", "-"], &manifest.to_string());
    }
    let names = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(log.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let files = names();
    assert_eq!(files.len(), 2, "the log and one backup: {files:?}");
    assert!(files[0].starts_with("audit-") && files[0].ends_with(".log"), "{files:?}");
    assert_eq!(files[1], "audit.log");
    for file in &files {
        let path = log.parent().unwrap().join(file);
        assert!(std::fs::metadata(&path).unwrap().len() <= 1024 * 1024 + 1024, "{file}");
    }

    // The legacy format: upstream's text line.
    let legacy = dir.path().join("legacy.log");
    let (policy, legacy_path) = (policy.to_str().unwrap(), legacy.to_str().unwrap());
    s.restart_with(&[
        "--audit-policy-file",
        policy,
        "--audit-log-path",
        legacy_path,
        "--audit-log-format=legacy",
    ]);
    s.ok(&["get", "namespaces", "kube-system"]);
    let text = std::fs::read_to_string(&legacy).unwrap();
    let line = text
        .lines()
        .find(|l| {
            l.contains("uri=\"/api/v1/namespaces/kube-system\"") && l.contains("ResponseComplete")
        })
        .unwrap_or_else(|| panic!("no line for the get: {text}"));
    let (time, rest) = line.split_once(" AUDIT: ").unwrap();
    assert!(time.ends_with('Z') && time.contains('T'), "{line}");
    assert!(rest.starts_with("id=\""), "{line}");
    assert!(
        rest.contains(
            "stage=\"ResponseComplete\" ip=\"127.0.0.1\" method=\"get\" user=\"system:admin\" \
             groups=\"\\\"system:masters\\\",\\\"system:authenticated\\\"\" as=\"<self>\" \
             asgroups=\"<lookup>\" user-agent=\"kubectl/"
        ),
        "{line}"
    );
    assert!(
        rest.ends_with(
            "namespace=\"kube-system\" uri=\"/api/v1/namespaces/kube-system\" response=\"200\""
        ),
        "{line}"
    );
}

#[test]
fn bad_audit_flags_stop_startup_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    let run = |extra: &[&str]| refused_start(&dir.path().join("data"), extra).trim().to_string();
    let (p, log) = (policy.to_str().unwrap(), dir.path().join("audit.log"));
    let log = log.to_str().unwrap();
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: All\n")
        .unwrap();
    assert_eq!(
        run(&["--audit-policy-file", p, "--audit-log-path", log]),
        format!(
            "rkube: --audit-policy-file: rules[0].level: Unsupported value: \"All\": supported \
             values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\": from file {p}"
        )
    );
    std::fs::write(&policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n").unwrap();
    assert_eq!(
        run(&["--audit-policy-file", p, "--audit-log-path", log]),
        format!("rkube: --audit-policy-file: loaded illegal policy with 0 rules: from file {p}")
    );
    assert_eq!(
        run(&["--audit-policy-file", p, "--audit-log-path", log, "--audit-log-format", "xml"]),
        "rkube: --audit-log-format: invalid audit log format xml, allowed formats are \"legacy,json\""
    );
    // A log the server cannot write is refused at startup, not at the first request.
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap();
    let blocked = dir.path().join("file");
    std::fs::write(&blocked, "").unwrap();
    let under_a_file = blocked.join("audit.log");
    let err = run(&["--audit-policy-file", p, "--audit-log-path", under_a_file.to_str().unwrap()]);
    assert!(err.starts_with("rkube: --audit-log-path: cannot open the audit log "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn events_are_posted_to_the_webhook_as_event_lists() {
    use rkube_conformance::webhook::{write_webhook_kubeconfig, Answer, TestCa, WebhookServer};
    let ca = TestCa::new("audit-receiver-ca");
    let receiver =
        WebhookServer::start(&ca, &["audit.example"], std::sync::Arc::new(|_, _| Answer::allow()));
    let (dir, policy, _) = audit_files(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n\
         - level: Request\n  resources: [{group: \"\", resources: [configmaps]}]\n",
    );
    let kubeconfig = dir.path().join("audit-webhook.kubeconfig");
    write_webhook_kubeconfig(&kubeconfig, &receiver.url("/audit/events"), &ca, "audit-token");
    let s = RkubeServer::start_with(&[
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-webhook-config-file",
        kubeconfig.to_str().unwrap(),
        "--audit-webhook-batch-max-wait=1s",
    ]);
    s.ok(&["create", "configmap", "sent", "--from-literal=k=v"]);
    // Within the batch wait (1 s) and a margin: an EventList holding both stages.
    let deadline = Instant::now() + Duration::from_secs(15);
    let items = loop {
        let items: Vec<Value> = receiver
            .reviews_to("/audit/events")
            .iter()
            .inspect(|list| {
                assert_eq!(list["kind"], "EventList");
                assert_eq!(list["apiVersion"], "audit.k8s.io/v1");
            })
            .flat_map(|list| list["items"].as_array().cloned().unwrap_or_default())
            .filter(|e| e["verb"] == "create" && e["user"]["username"] == "system:admin")
            .collect();
        if items.len() >= 2 || Instant::now() > deadline {
            break items;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stages: Vec<&str> = items.iter().map(|e| text(e, "stage")).collect();
    assert_eq!(stages, ["RequestReceived", "ResponseComplete"], "{items:#?}");
    // The name is known once the body is read: not yet when the request arrives.
    assert_eq!(items[0]["objectRef"].get("name"), None);
    assert_eq!(items[1]["objectRef"]["name"], "sent");
    assert_eq!(items[1]["requestObject"]["data"], json!({"k": "v"}));
    assert_eq!(items[1]["responseStatus"]["code"], 201);
    assert_eq!(items[0]["auditID"], items[1]["auditID"]);
    // With the credential of the kubeconfig's user.
    let sent_with = receiver.authorizations.lock().unwrap().clone();
    assert!(sent_with.iter().all(|a| a == "Bearer audit-token"), "{sent_with:?}");
}
