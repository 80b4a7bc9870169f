//! The controller manager, leader-elected as kube-controller-manager is through the
//! `kube-system/kube-controller-manager` Lease: two `rkube controller-manager` processes
//! against one server, one acts; when it dies the other takes over within the lease
//! duration; one that is stopped gives the Lease up at once. Inside `rkube server` the
//! controller manager holds the Lease too, and takes it back at once after a restart.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rkube_conformance::cluster::{jsonpath, rkube_binary, stderr_of, stdout_of, RkubeServer};

const LEASE: [&str; 5] = ["get", "lease", "kube-controller-manager", "-n", "kube-system"];

/// A field of the controller manager's Lease ("" while there is none).
fn lease(s: &RkubeServer, path: &str) -> String {
    let mut args = LEASE.to_vec();
    let path = jsonpath(path);
    args.extend(["-o", &path]);
    stdout_of(&s.kubectl(&args))
}

/// Polls `check` (every 250 ms) until it gives a value, at most `limit`.
fn poll<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The number of pods with `app=<app>` that are not being deleted.
fn live_pods(s: &RkubeServer, app: &str) -> usize {
    let path =
        jsonpath("{range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{\"\\n\"}{end}");
    let out = s.ok(&["get", "pods", "-l", &format!("app={app}"), "-o", &path]);
    out.lines().filter(|l| l.split_whitespace().count() == 1).count()
}

/// An `rkube controller-manager` process, its stderr in a file.
struct ControllerManager {
    child: Child,
    log: PathBuf,
}

impl ControllerManager {
    fn start(s: &RkubeServer, name: &str) -> ControllerManager {
        let log = s.data_dir.path().join(format!("{name}.log"));
        let file = std::fs::File::create(&log).unwrap();
        // Its /healthz on a port of its own: two run side by side here.
        let port = rkube_store::testing::free_port().to_string();
        let child = Command::new(rkube_binary())
            .args(["controller-manager", "--secure-port", &port, "--kubeconfig"])
            .arg(&s.kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start rkube controller-manager");
        ControllerManager { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The identity it elects with, from its first line about the Lease.
    fn identity(&self) -> String {
        poll(Duration::from_secs(30), "the controller manager's identity", || {
            let log = self.log();
            let line = log.lines().find(|l| l.contains("waits for the leader Lease"))?;
            let rest = line.strip_prefix("rkube: controller manager ")?;
            Some(rest.split_whitespace().next()?.to_string())
        })
    }

    /// Sends SIGTERM, as a service manager stopping it would.
    fn terminate(&mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "controller manager did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for ControllerManager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `<hostname>_<uuid>`, upstream's identity format.
fn is_upstream_identity(identity: &str) -> bool {
    let Some((host, uuid)) = identity.rsplit_once('_') else { return false };
    let groups: Vec<usize> = uuid.split('-').map(str::len).collect();
    !host.is_empty() && groups == [8, 4, 4, 4, 12]
}

#[test]
fn one_of_two_controller_managers_acts_and_the_other_takes_over() {
    let s = RkubeServer::start_with(&["--disable", "controllers,kubelet"]);
    let mut first = ControllerManager::start(&s, "first");
    let first_id = first.identity();
    assert!(is_upstream_identity(&first_id), "{first_id}");
    let holder = poll(Duration::from_secs(30), "a Lease holder", || {
        Some(lease(&s, "{.spec.holderIdentity}")).filter(|h| !h.is_empty())
    });
    assert_eq!(holder, first_id);
    assert_eq!(lease(&s, "{.spec.leaseDurationSeconds}"), "15");

    let mut second = ControllerManager::start(&s, "second");
    let second_id = second.identity();
    assert_ne!(first_id, second_id);

    // The controllers work: a Deployment gets its ReplicaSet and pods.
    s.ok(&["create", "deployment", "web", "--image=busybox:1.36", "--replicas=2"]);
    poll(Duration::from_secs(30), "2 pods of the Deployment", || {
        (live_pods(&s, "web") == 2).then_some(())
    });
    // Only the holder acts; the other still waits.
    assert_eq!(lease(&s, "{.spec.holderIdentity}"), first_id);
    assert!(first.log().contains("successfully acquired lease"), "{}", first.log());
    assert!(!second.log().contains("successfully acquired lease"), "{}", second.log());

    // The leader dies without giving the Lease up: the other takes it after its duration.
    let died = Instant::now();
    let _ = first.child.kill();
    let _ = first.child.wait();
    poll(Duration::from_secs(45), "the second controller manager to take the Lease", || {
        (lease(&s, "{.spec.holderIdentity}") == second_id).then_some(())
    });
    let took = died.elapsed();
    assert!(took >= Duration::from_secs(8), "taken over before the lease ran out: {took:?}");
    assert_eq!(lease(&s, "{.spec.leaseTransitions}"), "1");
    // And its controllers work.
    s.ok(&["scale", "deployment", "web", "--replicas=3"]);
    poll(Duration::from_secs(30), "3 pods of the Deployment", || {
        (live_pods(&s, "web") == 3).then_some(())
    });

    // Stopped (SIGTERM), it gives the Lease up at once for a successor.
    let stopped = Instant::now();
    second.terminate();
    poll(Duration::from_secs(5), "the Lease given up", || {
        lease(&s, "{.spec.holderIdentity}").is_empty().then_some(())
    });
    assert!(stopped.elapsed() < Duration::from_secs(10));
    assert!(second.log().contains("shutting down"), "{}", second.log());

    // Bad leader-election flags are refused before anything starts.
    let out = Command::new(rkube_binary())
        .args(["controller-manager", "--leader-elect-lease-duration", "5s", "--kubeconfig"])
        .arg(&s.kubeconfig)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr_of(&out);
    assert!(err.contains("leaseDuration: must be greater than renewDeadline"), "{err}");
}

#[test]
fn the_embedded_controller_manager_holds_the_lease_and_takes_it_back_after_a_restart() {
    let mut s = RkubeServer::start_with(&["--disable", "kubelet,scheduler"]);
    let holder = poll(Duration::from_secs(30), "a Lease holder", || {
        Some(lease(&s, "{.spec.holderIdentity}")).filter(|h| !h.is_empty())
    });
    assert!(is_upstream_identity(&holder), "{holder}");
    // Killed and started again: the same identity, so it renews its own Lease at once
    // instead of waiting out its duration.
    s.restart();
    let restarted = Instant::now();
    s.ok(&["create", "deployment", "again", "--image=busybox:1.36", "--replicas=1"]);
    poll(Duration::from_secs(30), "the Deployment's pod", || {
        (live_pods(&s, "again") == 1).then_some(())
    });
    assert!(
        restarted.elapsed() < Duration::from_secs(10),
        "the controllers waited for the Lease: {:?}",
        restarted.elapsed()
    );
    assert_eq!(lease(&s, "{.spec.holderIdentity}"), holder);
    assert_eq!(lease(&s, "{.spec.leaseTransitions}"), "0");
}
