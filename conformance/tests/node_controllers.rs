//! The node controllers inside `rkube server`, on nodes that are only API objects (no
//! kubelet; the test plays the kubelet by renewing Leases and posting conditions): node IPAM
//! gives pod CIDRs in order and frees them, the node lifecycle controller marks a node whose
//! Lease stopped `Unknown` and taints it, the taint eviction controller deletes its pods by
//! their tolerations, and the taints go when the node is back.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use k8s_openapi::jiff::Timestamp;
use rkube_conformance::cluster::{rkube_binary, wait_with_timeout, RkubeServer};

fn now_time() -> String {
    serde_json::to_value(Time(Timestamp::now())).unwrap().as_str().unwrap().to_string()
}

fn now_micro() -> String {
    serde_json::to_value(MicroTime(Timestamp::now())).unwrap().as_str().unwrap().to_string()
}

fn node(name: &str) -> String {
    let now = now_time();
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n    kubernetes.io/hostname: \"{name}\"\nstatus:\n  capacity:\n    cpu: \"4\"\n    memory: 4Gi\n    pods: \"110\"\n  allocatable:\n    cpu: \"4\"\n    memory: 4Gi\n    pods: \"110\"\n  conditions:\n  - type: Ready\n    status: \"True\"\n    reason: KubeletReady\n    message: kubelet is posting ready status\n    lastHeartbeatTime: \"{now}\"\n    lastTransitionTime: \"{now}\"\n"
    )
}

fn lease(name: &str) -> String {
    format!(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: {name}\n  namespace: kube-node-lease\nspec:\n  holderIdentity: {name}\n  leaseDurationSeconds: 40\n  renewTime: \"{}\"\n",
        now_micro()
    )
}

/// A pod bound to `node` from the start (no scheduler involved), with NoExecute tolerations.
fn pod(name: &str, node: &str, tolerations: &[(&str, Option<i64>)]) -> String {
    let mut yaml = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  nodeName: {node}\n  containers:\n  - name: c\n    image: busybox:1.36\n"
    );
    if !tolerations.is_empty() {
        yaml.push_str("  tolerations:\n");
        for (key, seconds) in tolerations {
            yaml.push_str(&format!(
                "  - key: {key}\n    operator: Exists\n    effect: NoExecute\n"
            ));
            if let Some(s) = seconds {
                yaml.push_str(&format!("    tolerationSeconds: {s}\n"));
            }
        }
    }
    yaml
}

/// Polls `kubectl args` until `check` accepts its output, for at most `limit`.
fn poll(
    s: &RkubeServer,
    args: &[&str],
    limit: Duration,
    what: &str,
    check: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let out = s.kubectl(args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && check(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "waited {limit:?} for {what} in `kubectl {}`:\n{text}\n{}\nserver log:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr),
            tail(&s.log(), 40)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn tail(log: &str, lines: usize) -> String {
    let all: Vec<&str> = log.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

const POD_CIDRS: &str =
    "{range .items[*]}{.metadata.name}={.spec.podCIDR},{.spec.podCIDRs[0]}{\"\\n\"}{end}";

/// `name -> podCIDR` of every node (podCIDRs[0] must agree).
fn pod_cidrs(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(name, cidrs)| {
            let (single, first) = cidrs.split_once(',').unwrap_or((cidrs, ""));
            assert_eq!(single, first, "podCIDR and podCIDRs[0] of {name} differ: {cidrs}");
            (name.to_string(), single.to_string())
        })
        .collect()
}

#[test]
fn nodes_get_distinct_pod_cidrs_in_order_and_a_deleted_nodes_cidr_is_reused() {
    // Four /24s in all.
    let s = RkubeServer::start_with(&[
        "--cluster-cidr",
        "10.42.0.0/22",
        "--node-cidr-mask-size",
        "24",
        "--disable",
        "kubelet",
    ]);
    let before = pod_cidrs(&s.ok(&["get", "nodes", "-o", &format!("jsonpath={POD_CIDRS}")]));
    let taken: BTreeSet<String> = before.iter().map(|(_, c)| c.clone()).collect();
    let free: Vec<String> =
        (0..4).map(|i| format!("10.42.{i}.0/24")).filter(|c| !taken.contains(c)).collect();
    assert!(free.len() >= 2, "too few CIDRs left for the test: {before:?}");
    let names: Vec<String> = (0..free.len()).map(|i| format!("node-{i}")).collect();
    for name in &names {
        s.ok_stdin(&["create", "-f", "-"], &node(name));
    }
    let all = poll(
        &s,
        &["get", "nodes", "-o", &format!("jsonpath={POD_CIDRS}")],
        Duration::from_secs(30),
        "a podCIDR on every node",
        |t| {
            pod_cidrs(t).iter().filter(|(n, c)| names.contains(n) && !c.is_empty()).count()
                == names.len()
        },
    );
    let got: Vec<(String, String)> =
        pod_cidrs(&all).into_iter().filter(|(n, _)| names.contains(n)).collect();
    let want: Vec<(String, String)> = names.iter().cloned().zip(free.iter().cloned()).collect();
    assert_eq!(got, want, "CIDRs in creation order");

    // The range is full: the next node waits, with upstream's event.
    s.ok_stdin(&["create", "-f", "-"], &node("extra"));
    let describe = poll(
        &s,
        &["describe", "node", "extra"],
        Duration::from_secs(30),
        "a CIDRNotAvailable event",
        |t| t.contains("CIDRNotAvailable"),
    );
    assert!(describe.contains("Node extra status is now: CIDRNotAvailable"), "{describe}");
    assert_eq!(s.ok(&["get", "node", "extra", "-o", "jsonpath={.spec.podCIDR}"]), "");

    // A deleted node's CIDR goes to the waiting one.
    s.ok(&["delete", "node", &names[1]]);
    poll(
        &s,
        &["get", "node", "extra", "-o", "jsonpath={.spec.podCIDR}"],
        Duration::from_secs(30),
        "the freed CIDR",
        |t| t == free[1],
    );
    let after = pod_cidrs(&s.ok(&["get", "nodes", "-o", &format!("jsonpath={POD_CIDRS}")]));
    let distinct: BTreeSet<&String> = after.iter().map(|(_, c)| c).collect();
    assert_eq!(distinct.len(), after.len(), "a CIDR given twice: {after:?}");
}

#[test]
fn bad_cidr_flags_are_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let port = rkube_store::testing::free_port().to_string();
    let run = |extra: &[&str]| {
        let child = std::process::Command::new(rkube_binary())
            .arg("server")
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--bind-address", "127.0.0.1", "--secure-port", &port, "--disable", "kubelet"])
            .args(extra)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_with_timeout(child, Duration::from_secs(60));
        assert!(!out.status.success(), "rkube server accepted {extra:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(&["--cluster-cidr", "10.42.0.0/33"]);
    assert!(err.contains("invalid CIDR \"10.42.0.0/33\""), "{err}");
    let err = run(&["--cluster-cidr", "fd00::/48"]);
    assert!(err.contains("IPv4 only"), "{err}");
    let err = run(&["--node-cidr-mask-size", "8"]);
    assert!(
        err.contains("--node-cidr-mask-size 8 does not fit in --cluster-cidr 10.42.0.0/16"),
        "{err}"
    );
}

/// Renews the Leases of the named nodes every second (the kubelet's job), at most 5 minutes.
struct Renewer {
    names: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Renewer {
    fn start(s: &RkubeServer, names: &[&str]) -> Renewer {
        let names = Arc::new(Mutex::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()));
        let stop = Arc::new(AtomicBool::new(false));
        let (kubectl, kubeconfig, home): (PathBuf, PathBuf, PathBuf) =
            (s.kubectl.clone(), s.kubeconfig.clone(), s.data_dir.path().to_path_buf());
        let thread = {
            let (names, stop) = (names.clone(), stop.clone());
            std::thread::spawn(move || {
                for _ in 0..300 {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let started = Instant::now();
                    let current = names.lock().unwrap().clone();
                    for name in current {
                        let patch = format!("{{\"spec\":{{\"renewTime\":\"{}\"}}}}", now_micro());
                        let child = std::process::Command::new(&kubectl)
                            .args([
                                "patch",
                                "lease",
                                &name,
                                "-n",
                                "kube-node-lease",
                                "--type",
                                "merge",
                                "-p",
                                &patch,
                            ])
                            .env("KUBECONFIG", &kubeconfig)
                            .env("HOME", &home)
                            .stdin(std::process::Stdio::null())
                            .stdout(std::process::Stdio::piped())
                            .stderr(std::process::Stdio::piped())
                            .spawn()
                            .expect("kubectl");
                        wait_with_timeout(child, Duration::from_secs(30));
                    }
                    std::thread::sleep(Duration::from_secs(1).saturating_sub(started.elapsed()));
                }
            })
        };
        Renewer { names, stop, thread: Some(thread) }
    }

    fn add(&self, name: &str) {
        self.names.lock().unwrap().push(name.to_string());
    }
}

impl Drop for Renewer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

const TAINTS: &str = "{range .spec.taints[*]}{.key}:{.effect}={.timeAdded}{\"\\n\"}{end}";

/// `key:effect` of the node's taints, with their timeAdded.
fn taints(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, t)| (k.to_string(), t.to_string()))
        .collect()
}

fn taint_keys(text: &str) -> BTreeSet<String> {
    taints(text).into_iter().map(|(k, _)| k).collect()
}

fn keys(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn ready(s: &RkubeServer, node: &str, field: &str) -> String {
    s.ok(&[
        "get",
        "node",
        node,
        "-o",
        &format!("jsonpath={{.status.conditions[?(@.type==\"Ready\")].{field}}}"),
    ])
}

/// When the pod was deleted (deletionTimestamp minus the grace period), or None when gone.
fn deleted_at(s: &RkubeServer, pod: &str) -> Option<Timestamp> {
    let out = s.kubectl(&[
        "get",
        "pod",
        pod,
        "-o",
        "jsonpath={.metadata.deletionTimestamp} {.metadata.deletionGracePeriodSeconds}",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (at, grace) = text.split_once(' ')?;
    let at: Timestamp = at.parse().ok()?;
    let grace: i64 = grace.trim().parse().ok()?;
    at.checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(grace)).ok()
}

fn terminating_or_gone(s: &RkubeServer, pod: &str) -> bool {
    let out = s.kubectl(&["get", "pod", pod, "-o", "jsonpath={.metadata.deletionTimestamp}"]);
    !out.status.success() || !String::from_utf8_lossy(&out.stdout).trim().is_empty()
}

#[test]
fn a_node_whose_lease_stops_goes_unknown_is_tainted_and_its_pods_are_evicted() {
    // Long enough for the pods below to be made and one marked Ready before "lost" goes
    // Unknown, on a loaded machine too (a pod not yet Ready when its node goes is not marked).
    let grace = Duration::from_secs(10);
    let s = RkubeServer::start_with(&[
        "--node-monitor-grace-period",
        "10s",
        "--node-monitor-period",
        "1s",
        "--disable",
        "kubelet",
        // A pod that says nothing gets the DefaultTolerationSeconds plugin's tolerations;
        // 0 s of unreachable: evicted at once.
        "--default-unreachable-toleration-seconds",
        "0",
    ]);
    for name in ["alive", "lost"] {
        s.ok_stdin(&["create", "-f", "-"], &node(name));
    }
    s.ok_stdin(&["create", "-f", "-"], &lease("alive"));
    // The last heartbeat "lost" gives (the test cannot know when the controller sees it:
    // not before it was written).
    let lost_renewed = Instant::now();
    s.ok_stdin(&["create", "-f", "-"], &lease("lost"));
    let _renewer = Renewer::start(&s, &["alive"]);
    let renewer = &_renewer;
    let unreachable = "node.kubernetes.io/unreachable";
    let not_ready = "node.kubernetes.io/not-ready";
    s.ok_stdin(&["create", "-f", "-"], &pod("plain", "lost", &[]));
    s.ok_stdin(&["create", "-f", "-"], &pod("brief", "lost", &[(unreachable, Some(3))]));
    s.ok_stdin(
        &["create", "-f", "-"],
        &pod("forever", "lost", &[(unreachable, None), (not_ready, None)]),
    );
    s.ok_stdin(&["create", "-f", "-"], &pod("safe", "alive", &[]));
    let defaulted = s.ok(&[
        "get",
        "pod",
        "plain",
        "-o",
        "jsonpath={range .spec.tolerations[*]}{.key}:{.effect}:{.tolerationSeconds} {end}",
    ]);
    assert_eq!(defaulted, format!("{not_ready}:NoExecute:300 {unreachable}:NoExecute:0 "));
    let own = s.ok(&["get", "pod", "brief", "-o", "jsonpath={.spec.tolerations[*].key}"]);
    assert_eq!(own, format!("{unreachable} {not_ready}"), "brief keeps its own unreachable one");
    // As if a kubelet had started it: Ready.
    let ready_patch = r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#;
    s.ok(&["patch", "pod", "forever", "--subresource=status", "--type=merge", "-p", ready_patch]);

    // "lost" stops: Unknown within the grace period and a bounded margin, not before.
    poll(
        &s,
        &[
            "get",
            "node",
            "lost",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
        ],
        grace + Duration::from_secs(20),
        "Ready=Unknown",
        |t| t == "Unknown",
    );
    let after = lost_renewed.elapsed();
    assert!(after >= grace, "Unknown after {after:?} only");
    assert_eq!(ready(&s, "lost", "reason"), "NodeStatusUnknown");
    assert_eq!(ready(&s, "lost", "message"), "Kubelet stopped posting node status.");
    let conditions = s.ok(&[
        "get",
        "node",
        "lost",
        "-o",
        "jsonpath={range .status.conditions[*]}{.type}={.status}:{.reason} {end}",
    ]);
    for c in ["MemoryPressure", "DiskPressure", "PIDPressure"] {
        assert!(
            conditions.contains(&format!("{c}=Unknown:NodeStatusNeverUpdated")),
            "{conditions}"
        );
    }

    // Its pods are not Ready any more.
    poll(
        &s,
        &[
            "get",
            "pod",
            "forever",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
        ],
        Duration::from_secs(20),
        "pod Ready=False",
        |t| t == "False",
    );
    let describe = s.ok(&["describe", "pod", "forever"]);
    assert!(
        describe.contains("NodeNotReady") && describe.contains("Node is not ready"),
        "{describe}"
    );

    // Tainted unreachable: NoExecute (with timeAdded) and NoSchedule.
    let text = poll(
        &s,
        &["get", "node", "lost", "-o", &format!("jsonpath={TAINTS}")],
        Duration::from_secs(20),
        "the unreachable taints",
        |t| {
            taint_keys(t)
                == keys(&[
                    &format!("{unreachable}:NoExecute"),
                    &format!("{unreachable}:NoSchedule"),
                ])
        },
    );
    let tainted_at: Timestamp = taints(&text)
        .into_iter()
        .find(|(k, _)| k.ends_with(":NoExecute"))
        .and_then(|(_, t)| t.parse().ok())
        .unwrap_or_else(|| panic!("NoExecute taint without timeAdded: {text}"));

    // The healthy node stays Ready and untainted.
    assert_eq!(ready(&s, "alive", "status"), "True");
    assert_eq!(s.ok(&["get", "node", "alive", "-o", "jsonpath={.spec.taints}"]), "");

    // Its pods: the one with the (0 s) default toleration goes at once, the 3 s one after 3 s.
    let deadline = Duration::from_secs(20);
    poll(&s, &["get", "pods"], deadline, "plain deleted", |_| terminating_or_gone(&s, "plain"));
    poll(&s, &["get", "pods"], deadline, "brief deleted", |_| terminating_or_gone(&s, "brief"));
    // Without a kubelet they stay Terminating (as on a real unreachable node).
    {
        let at = deleted_at(&s, "plain").expect("plain is terminating");
        let delay = at.duration_since(tainted_at).as_secs();
        assert!((0..=2).contains(&delay), "plain deleted {delay} s after the taint");
        let reason = s.ok(&[
            "get",
            "pod",
            "plain",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"DisruptionTarget\")].reason}",
        ]);
        assert_eq!(reason, "DeletionByTaintManager");
    }
    {
        let at = deleted_at(&s, "brief").expect("brief is terminating");
        let delay = at.duration_since(tainted_at).as_secs();
        assert!(
            (2..=8).contains(&delay),
            "brief deleted {delay} s after the taint (tolerationSeconds 3)"
        );
    }
    // Tolerating for ever, or on a healthy node: they stay.
    assert!(!terminating_or_gone(&s, "forever"), "forever was deleted");
    assert!(!terminating_or_gone(&s, "safe"), "safe was deleted");

    // What a user sees: the events and `kubectl describe node`.
    let events = s.ok(&[
        "get",
        "events",
        "-o",
        "jsonpath={range .items[*]}{.reason}|{.message}{\"\\n\"}{end}",
    ]);
    for line in [
        "TaintManagerEviction|Marking for deletion Pod default/plain",
        "TaintManagerEviction|Marking for deletion Pod default/brief",
        "RegisteredNode|Node lost event: Registered Node lost in Controller",
        "NodeNotReady|Node lost status is now: NodeNotReady",
    ] {
        assert!(events.lines().any(|l| l == line), "no event {line:?} in:\n{events}");
    }
    assert!(!events.contains("Pod default/forever"), "{events}");
    let describe = s.ok(&["describe", "node", "lost"]);
    assert!(describe.contains(&format!("{unreachable}:NoExecute")), "{describe}");
    assert!(describe.contains("NodeNotReady"), "{describe}");

    // The kubelet comes back but reports NotReady: the taints turn to not-ready.
    renewer.add("lost");
    let patch = |status: &str| {
        let now = now_time();
        format!("{{\"status\":{{\"conditions\":[{{\"type\":\"Ready\",\"status\":\"{status}\",\"reason\":\"Test\",\"message\":\"set by the test\",\"lastHeartbeatTime\":\"{now}\",\"lastTransitionTime\":\"{now}\"}}]}}}}")
    };
    s.ok(&[
        "patch",
        "node",
        "lost",
        "--subresource=status",
        "--type=strategic",
        "-p",
        &patch("False"),
    ]);
    poll(
        &s,
        &["get", "node", "lost", "-o", &format!("jsonpath={TAINTS}")],
        Duration::from_secs(20),
        "the not-ready taints",
        |t| {
            taint_keys(t)
                == keys(&[&format!("{not_ready}:NoExecute"), &format!("{not_ready}:NoSchedule")])
        },
    );
    assert_eq!(ready(&s, "lost", "status"), "False");

    // Ready again: no taint left, and the pod that tolerated them all is still there.
    s.ok(&[
        "patch",
        "node",
        "lost",
        "--subresource=status",
        "--type=strategic",
        "-p",
        &patch("True"),
    ]);
    poll(
        &s,
        &["get", "node", "lost", "-o", "jsonpath={.spec.taints}"],
        Duration::from_secs(20),
        "no taints",
        |t| t.is_empty(),
    );
    assert_eq!(ready(&s, "lost", "status"), "True");
    assert!(!terminating_or_gone(&s, "forever"), "forever was deleted");
    assert_eq!(ready(&s, "alive", "status"), "True");
}
