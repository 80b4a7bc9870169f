//! ComponentStatus as upstream still serves it: `kubectl get componentstatuses` lists the
//! scheduler, the controller-manager and etcd-0 with their health, probed afresh on each read
//! (the components' own `/healthz` over HTTPS, the store answering a read), with the
//! deprecation warning; unknown names, selectors and a component that is down answer as
//! kube-apiserver's do.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rkube_conformance::cluster::{rkube_binary, stderr_of, stdout_of, RkubeServer};
use rkube_store::testing::free_port;

const WARNING: &str = "Warning: v1 ComponentStatus is deprecated in v1.19+";

/// The rows of `kubectl get cs` (without the header), each as its whitespace-separated
/// columns.
fn rows(table: &str) -> Vec<Vec<String>> {
    table.lines().skip(1).map(|l| l.split_whitespace().map(String::from).collect()).collect()
}

#[test]
fn the_control_plane_reports_its_health() {
    let scheduler_port = free_port().to_string();
    let s = RkubeServer::start_with(&["--scheduler-secure-port", &scheduler_port]);

    // The table kubectl prints, with the warning on stderr.
    let out = s.kubectl(&["get", "componentstatuses"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stderr_of(&out).contains(WARNING), "{}", stderr_of(&out));
    let table = stdout_of(&out);
    assert!(table.starts_with("NAME "), "{table}");
    assert!(table
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .eq(["NAME", "STATUS", "MESSAGE", "ERROR"]));
    assert_eq!(
        rows(&table),
        [
            ["scheduler", "Healthy", "ok"],
            ["controller-manager", "Healthy", "ok"],
            ["etcd-0", "Healthy", "ok"]
        ],
        "{table}"
    );

    // One component, in full.
    let one: serde_json::Value =
        serde_json::from_str(&s.ok(&["get", "cs", "etcd-0", "-o", "json"])).unwrap();
    assert_eq!(one["kind"], "ComponentStatus");
    assert_eq!(one["metadata"]["name"], "etcd-0");
    assert_eq!(
        one["conditions"],
        serde_json::json!([{"type": "Healthy", "status": "True", "message": "ok"}])
    );

    // Selectors filter (the objects have no labels).
    assert_eq!(rows(&s.ok(&["get", "cs", "--field-selector", "metadata.name=scheduler"])).len(), 1);
    let none = s.kubectl(&["get", "cs", "-l", "tier=control-plane"]);
    assert!(stderr_of(&none).contains("No resources found"), "{}", stderr_of(&none));

    // An unknown name: upstream's plain error, a 500 without a reason.
    let err = s.fails(&["get", "cs", "nope"]);
    assert!(err.contains("Error from server: Component not found: nope"), "{err}");
    let raw = s.curl(&[], "/api/v1/componentstatuses/nope");
    assert_eq!(raw.code, 500, "{raw:?}");
    assert_eq!(
        raw.body,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
         \"message\":\"Component not found: nope\",\"code\":500}\n"
    );
    // On the wire: the list and its warning header; no watch, no writes.
    let list = s.curl(&[], "/api/v1/componentstatuses");
    assert_eq!(list.code, 200);
    assert!(
        list.body.starts_with(
            "{\"kind\":\"ComponentStatusList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":["
        ),
        "{}",
        list.body
    );
    assert_eq!(
        list.header("warning"),
        ["299 - \"v1 ComponentStatus is deprecated in v1.19+\""],
        "{}",
        list.headers
    );
    assert_eq!(s.curl(&[], "/api/v1/componentstatuses?watch=true").code, 405);
    let create = s.curl(
        &["-X", "POST", "-H", "Content-Type: application/json", "--data", "{}"],
        "/api/v1/componentstatuses",
    );
    assert_eq!(create.code, 405, "{create:?}");

    // The scheduler's own /healthz, which the probe reads: HTTPS, no credentials needed.
    let health = Command::new("curl")
        .args(["-sk", "--max-time", "10"])
        .arg(format!("https://127.0.0.1:{scheduler_port}/healthz"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&health.stdout), "ok");
}

/// A standalone `rkube scheduler` against the server, serving /healthz on `port`.
struct Scheduler(Child);

impl Drop for Scheduler {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_component_that_is_down_is_unhealthy_until_it_runs() {
    let port = free_port();
    let port_text = port.to_string();
    let s =
        RkubeServer::start_with(&["--disable", "scheduler", "--scheduler-secure-port", &port_text]);
    let out = s.ok(&["get", "cs"]);
    let scheduler = rows(&out).into_iter().find(|r| r[0] == "scheduler").expect("a scheduler row");
    // Upstream's prober: the dial error as the message, nothing as the error.
    assert_eq!(scheduler[1], "Unhealthy", "{out}");
    assert_eq!(
        scheduler[2..].join(" "),
        format!(
            "Get \"https://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        ),
        "{out}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&s.ok(&["get", "cs", "scheduler", "-o", "json"])).unwrap();
    assert_eq!(json["conditions"][0]["status"], "False");

    // The scheduler started on its own answers for itself.
    let _scheduler = Scheduler(
        Command::new(rkube_binary())
            .args(["scheduler", "--secure-port", &port_text, "--kubeconfig"])
            .arg(&s.kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start rkube scheduler"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = s.ok(&["get", "cs", "scheduler"]);
        if rows(&out).first().is_some_and(|r| r[1] == "Healthy" && r[2] == "ok") {
            break;
        }
        assert!(Instant::now() < deadline, "the standalone scheduler never became healthy:\n{out}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_reads_them_typed() {
    use k8s_openapi::api::core::v1::ComponentStatus;
    let server = tokio::task::spawn_blocking(RkubeServer::start).await.unwrap();
    let api: kube::Api<ComponentStatus> = kube::Api::all(server.kube_client().await.unwrap());
    let list = api.list(&Default::default()).await.unwrap();
    let names: Vec<_> = list.items.iter().filter_map(|c| c.metadata.name.as_deref()).collect();
    assert_eq!(names, ["scheduler", "controller-manager", "etcd-0"]);
    for item in &list.items {
        let condition = &item.conditions.as_ref().unwrap()[0];
        assert_eq!((condition.type_.as_str(), condition.status.as_str()), ("Healthy", "True"));
    }
    let etcd = api.get("etcd-0").await.unwrap();
    assert_eq!(etcd.conditions.unwrap()[0].message.as_deref(), Some("ok"));
    match api.get("nope").await.unwrap_err() {
        kube::Error::Api(status) => assert_eq!(status.code, 500),
        other => panic!("expected an API error, got {other}"),
    }
}
