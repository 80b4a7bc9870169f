//! What upstream's CronJob and ReplicationController conformance tests check of rkube's
//! controllers, on a server without a scheduler (a Job whose pods are never scheduled stays
//! active, which is all the concurrency policies need):
//! - four `*/1` CronJobs side by side over two schedule times: a suspended one makes no Job,
//!   `Allow` keeps two Jobs active at once, `Forbid` keeps its one Job and makes no other,
//!   `Replace` deletes its Job for a new one (upstream's Suspend, AllowConcurrent,
//!   ForbidConcurrent and ReplaceConcurrent tests);
//! - a ReplicationController's `/scale` (autoscaling/v1 Scale) read and replaced, the
//!   controller following, and a pod relabelled out of its selector released (its controller
//!   reference removed) and replaced (upstream's "get and update ReplicationController scale"
//!   and "release pods").

use std::time::{Duration, Instant};

use rkube_conformance::cluster::{jsonpath, RkubeServer};
use serde_json::{json, Value};

fn cron_job(name: &str, policy: &str, suspend: bool) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "*/1 * * * ?",
            "concurrencyPolicy": policy,
            "suspend": suspend,
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "300"]}]}}}}
        }
    })
}

/// The names of the Jobs that `cron_job` owns and that are not being deleted.
fn jobs_of(server: &RkubeServer, cron_job: &str) -> Vec<String> {
    let path = jsonpath(
        "{range .items[*]}{.metadata.name} {.metadata.ownerReferences[0].name} {.metadata.deletionTimestamp}{\"\\n\"}{end}",
    );
    let listed = server.ok(&["get", "jobs", "-o", &path]);
    let mut jobs: Vec<String> = listed
        .lines()
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            (words.len() == 2 && words[1] == cron_job).then(|| words[0].to_string())
        })
        .collect();
    jobs.sort();
    jobs
}

fn active_of(server: &RkubeServer, cron_job: &str) -> Vec<String> {
    let active =
        server.ok(&["get", "cronjob", cron_job, "-o", "jsonpath={.status.active[*].name}"]);
    let mut names: Vec<String> = active.split_whitespace().map(String::from).collect();
    names.sort();
    names
}

#[test]
fn cron_jobs_keep_to_suspend_and_their_concurrency_policies() {
    let server = RkubeServer::start_with(&["--disable", "scheduler"]);
    for (name, policy, suspend) in [
        ("suspended", "Allow", true),
        ("allow", "Allow", false),
        ("forbid", "Forbid", false),
        ("replace", "Replace", false),
    ] {
        server.ok_stdin(&["create", "-f", "-"], &cron_job(name, policy, suspend).to_string());
    }
    // The first schedule time: each unsuspended CronJob has one active Job (at most 75 s).
    let first = poll(&server, Duration::from_secs(75), "a Job of each CronJob", || {
        let all: Vec<Vec<String>> =
            ["allow", "forbid", "replace"].iter().map(|c| active_of(&server, c)).collect();
        all.iter().all(|a| a.len() == 1).then_some(all)
    });
    let (forbid_first, replace_first) = (first[1][0].clone(), first[2][0].clone());
    // The second: Allow has two at once, Replace a new one in place of the first (at most
    // 75 s more).
    poll(&server, Duration::from_secs(75), "the second schedule time", || {
        let allow = active_of(&server, "allow");
        let replace = active_of(&server, "replace");
        (allow.len() == 2 && replace.len() == 1 && replace[0] != replace_first).then_some(())
    });
    assert_eq!(jobs_of(&server, "allow").len(), 2);
    // Replace's first Job is deleted (with its pods: background propagation).
    poll(&server, Duration::from_secs(30), "the replaced Job gone", || {
        (!jobs_of(&server, "replace").contains(&replace_first)).then_some(())
    });
    // Forbid still has its first Job and no other; the suspended one never had any.
    assert_eq!(active_of(&server, "forbid"), std::slice::from_ref(&forbid_first));
    assert_eq!(jobs_of(&server, "forbid"), [forbid_first]);
    assert!(jobs_of(&server, "suspended").is_empty());
    assert!(active_of(&server, "suspended").is_empty());
    let last =
        server.ok(&["get", "cronjob", "suspended", "-o", "jsonpath={.status.lastScheduleTime}"]);
    assert!(last.is_empty(), "{last}");
}

/// Polls `check` every 250 ms until it gives a value (at most `timeout`), then fails with
/// the server's log and the cluster's state.
fn poll<T>(
    server: &RkubeServer,
    timeout: Duration,
    what: &str,
    mut check: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {timeout:?}\n{}\n{}",
            server.log_tail(40),
            server.cluster_state()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn json_of(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

#[test]
fn an_rc_is_scaled_through_its_scale_subresource_and_releases_a_relabelled_pod() {
    let server = RkubeServer::start_with(&["--disable", "scheduler"]);
    let rc = json!({
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "rc-test"},
        "spec": {"replicas": 1, "selector": {"name": "rc-test"},
                 "template": {"metadata": {"labels": {"name": "rc-test"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}
    });
    server.ok_stdin(&["create", "-f", "-"], &rc.to_string());
    let replicas = |want: &str| {
        poll(&server, Duration::from_secs(30), &format!("status.replicas {want}"), || {
            let got = server.ok(&["get", "rc", "rc-test", "-o", "jsonpath={.status.replicas}"]);
            (got == want).then_some(())
        })
    };
    replicas("1");

    // The Scale: read, then replaced with 2 replicas; the controller follows.
    let path = "/api/v1/namespaces/default/replicationcontrollers/rc-test/scale";
    let read = server.curl(&[], path);
    assert_eq!(read.code, 200, "{}", read.body);
    let mut scale = json_of(&read.body);
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 1);
    assert_eq!(scale["status"]["replicas"], 1);
    assert_eq!(scale["status"]["selector"], "name=rc-test");
    scale["spec"]["replicas"] = json!(2);
    let put = server.curl_body(&["-X", "PUT"], path, scale.to_string().as_bytes());
    assert_eq!(put.code, 200, "{}", put.body);
    assert_eq!(json_of(&put.body)["spec"]["replicas"], 2);
    replicas("2");

    // A pod relabelled out of the selector is released and replaced.
    let pods = server.ok(&[
        "get",
        "pods",
        "-l",
        "name=rc-test",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    let pod = pods.split_whitespace().next().expect("a pod").to_string();
    server.ok(&["label", "pod", &pod, "name=released", "--overwrite"]);
    poll(&server, Duration::from_secs(30), "the pod released", || {
        let owners = server.ok(&["get", "pod", &pod, "-o", "jsonpath={.metadata.ownerReferences}"]);
        owners.is_empty().then_some(())
    });
    poll(&server, Duration::from_secs(30), "a replacement", || {
        let owned = server.ok(&[
            "get",
            "pods",
            "-l",
            "name=rc-test",
            "-o",
            "jsonpath={.items[*].metadata.ownerReferences[0].name}",
        ]);
        (owned.split_whitespace().filter(|o| *o == "rc-test").count() == 2).then_some(())
    });
}
