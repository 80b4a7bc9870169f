//! ResourceQuotas as a user meets them: the resource quota controller counts what a namespace
//! uses (so `kubectl describe quota` is right, and a new quota starts to limit), and the
//! ResourceQuota admission plugin refuses what would exceed a quota with kube-apiserver's
//! 403, charging what it admits atomically: many concurrent creators never get more in than
//! the quota allows.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod, ResourceQuota};
use kube::api::{Api, ObjectMeta, PostParams};
use rkube_conformance::cluster::RkubeServer;

/// Polls `jsonpath` of the quota until it reads `want` (30 s at most).
fn wait_for_quota(s: &RkubeServer, ns: &str, name: &str, jsonpath: &str, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = s.ok(&["get", "quota", name, "-n", ns, "-o", &format!("jsonpath={jsonpath}")]);
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "quota {ns}/{name} {jsonpath} is {got:?}, not {want:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn pod_yaml(name: &str, resources: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n{resources}"
    )
}

#[test]
fn a_quota_counts_refuses_with_upstreams_message_and_is_replenished() {
    let s = RkubeServer::start();
    s.ok(&["create", "namespace", "q"]);
    s.ok(&["create", "quota", "objects", "--hard=pods=2,services.nodeports=1", "-n", "q"]);
    // The controller fills the status in; until then the quota limits nothing.
    wait_for_quota(&s, "q", "objects", "{.status.used.pods}/{.status.hard.pods}", "0/2");
    s.ok_stdin(&["create", "-n", "q", "-f", "-"], &pod_yaml("p1", ""));
    s.ok_stdin(&["create", "-n", "q", "-f", "-"], &pod_yaml("p2", ""));
    let err = s.fails_stdin(&["create", "-n", "q", "-f", "-"], &pod_yaml("p3", ""));
    assert_eq!(
        err.trim(),
        "Error from server (Forbidden): error when creating \"STDIN\": pods \"p3\" is forbidden: exceeded quota: objects, requested: pods=1, used: pods=2, limited: pods=2"
    );
    // The charge is in the status at once (admission wrote it).
    assert_eq!(
        s.ok(&["get", "quota", "objects", "-n", "q", "-o", "jsonpath={.status.used.pods}"]),
        "2"
    );
    let describe = s.ok(&["describe", "quota", "objects", "-n", "q"]);
    let rows: Vec<Vec<&str>> = describe
        .lines()
        .map(|l| l.split_whitespace().collect())
        .filter(|r: &Vec<&str>| r.len() == 3)
        .collect();
    assert!(rows.contains(&vec!["pods", "2", "2"]), "{describe}");
    assert!(rows.contains(&vec!["services.nodeports", "0", "1"]), "{describe}");
    // Node ports count per port, as upstream.
    s.ok(&["create", "service", "nodeport", "a", "--tcp=80", "-n", "q"]);
    let err = s.fails(&["create", "service", "nodeport", "b", "--tcp=80", "-n", "q"]);
    assert!(
        err.contains("services \"b\" is forbidden: exceeded quota: objects, requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1"),
        "{err}"
    );
    // A pod that goes gives its share back (the controller recounts).
    s.ok(&["delete", "pod", "p1", "-n", "q", "--wait=false"]);
    wait_for_quota(&s, "q", "objects", "{.status.used.pods}", "1");
    s.ok_stdin(&["create", "-n", "q", "-f", "-"], &pod_yaml("p3", ""));
    // Raising the limit takes effect once the controller copied it to the status.
    s.ok(&["patch", "quota", "objects", "-n", "q", "-p", r#"{"spec":{"hard":{"pods":"3"}}}"#]);
    wait_for_quota(&s, "q", "objects", "{.status.hard.pods}", "3");
    s.ok_stdin(&["create", "-n", "q", "-f", "-"], &pod_yaml("p4", ""));
}

#[test]
fn compute_quotas_need_stated_resources_and_scopes_choose_pods() {
    let s = RkubeServer::start();
    s.ok(&["create", "namespace", "c"]);
    s.ok(&["create", "quota", "compute", "--hard=requests.cpu=1,limits.memory=1Gi", "-n", "c"]);
    s.ok(&["create", "quota", "best-effort", "--hard=pods=1", "--scopes=BestEffort", "-n", "c"]);
    wait_for_quota(&s, "c", "compute", "{.status.used.requests\\.cpu}", "0");
    wait_for_quota(&s, "c", "best-effort", "{.status.used.pods}", "0");
    // A pod that states nothing: BestEffort (the scoped quota counts it), and the compute
    // quota wants its resources stated.
    let err = s.fails_stdin(&["create", "-n", "c", "-f", "-"], &pod_yaml("bare", ""));
    assert!(
        err.contains("pods \"bare\" is forbidden: failed quota: compute: must specify limits.memory for: c; requests.cpu for: c"),
        "{err}"
    );
    let sized = "    resources:\n      requests:\n        cpu: 600m\n      limits:\n        memory: 512Mi\n";
    s.ok_stdin(&["create", "-n", "c", "-f", "-"], &pod_yaml("one", sized));
    let err = s.fails_stdin(&["create", "-n", "c", "-f", "-"], &pod_yaml("two", sized));
    assert!(
        err.contains("exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"),
        "{err}"
    );
    assert_eq!(
        s.ok(&["get", "quota", "compute", "-n", "c", "-o", "jsonpath={.status.used}"]),
        r#"{"limits.memory":"512Mi","requests.cpu":"600m"}"#
    );
    // The BestEffort quota did not count the sized pod.
    assert_eq!(
        s.ok(&["get", "quota", "best-effort", "-n", "c", "-o", "jsonpath={.status.used.pods}"]),
        "0"
    );
    // A pod that is done gives its compute back (the controller recounts on that change,
    // not on every charge), and the next one fits.
    s.ok(&[
        "patch",
        "pod",
        "one",
        "-n",
        "c",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Succeeded"}}"#,
    ]);
    wait_for_quota(&s, "c", "compute", "{.status.used.requests\\.cpu}", "0");
    s.ok_stdin(&["create", "-n", "c", "-f", "-"], &pod_yaml("two", sized));
}

#[test]
fn concurrent_creators_never_exceed_a_quota() {
    const LIMIT: usize = 10;
    const CREATORS: usize = 64;
    const RUNS: usize = 10;
    let s = RkubeServer::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let client = s.kube_client().await.unwrap();
        for run in 0..RUNS {
            let ns = format!("race-{run}");
            let namespace = Namespace {
                metadata: ObjectMeta { name: Some(ns.clone()), ..Default::default() },
                ..Default::default()
            };
            Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await.unwrap();
            let quota: ResourceQuota = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "pods"}, "spec": {"hard": {"pods": LIMIT.to_string()}}
            }))
            .unwrap();
            let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), &ns);
            quotas.create(&PostParams::default(), &quota).await.unwrap();
            // Wait for the controller's first count (bounded).
            let deadline = Instant::now() + Duration::from_secs(30);
            while quotas.get("pods").await.unwrap().status.and_then(|st| st.used).is_none() {
                assert!(Instant::now() < deadline, "quota {ns}/pods never counted");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
            // A burst, then another while the controller recounts after the first: neither
            // gets more in than the quota allows.
            let mut admitted = 0;
            for (wave, creators) in [(0, CREATORS), (1, CREATORS / 4)] {
                let creators: Vec<_> = (0..creators)
                    .map(|i| {
                        let pods = pods.clone();
                        tokio::spawn(async move {
                            let pod: Pod = serde_json::from_value(serde_json::json!({
                                "metadata": {"name": format!("p{wave}-{i}")},
                                "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}
                            }))
                            .unwrap();
                            match pods.create(&PostParams::default(), &pod).await {
                                Ok(_) => true,
                                Err(kube::Error::Api(e)) if e.code == 403 => {
                                    assert!(e.message.contains("exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10"), "{}", e.message);
                                    false
                                }
                                Err(e) => panic!("unexpected error: {e}"),
                            }
                        })
                    })
                    .collect();
                for creator in creators {
                    admitted += usize::from(creator.await.unwrap());
                }
            }
            let stored = pods.list(&Default::default()).await.unwrap().items.len();
            let used = quotas.get("pods").await.unwrap().status.unwrap().used.unwrap();
            assert_eq!((admitted, stored), (LIMIT, LIMIT), "run {run}: over-admission");
            assert_eq!(used["pods"].0, LIMIT.to_string(), "run {run}");
        }
    });
}
