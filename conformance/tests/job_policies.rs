//! Jobs on a real node (Docker, busybox), as upstream's conformance tests of the Job
//! controller drive them (`test/e2e/apps/job.go`): pods adopted and released by their Job, the
//! `/status` subresource, a Job deleted with its running pods, in-place restarts, pod failure
//! policies (FailJob on an exit code, Ignore on an eviction's DisruptionTarget, FailIndex),
//! per-index back-off limits, `maxFailedIndexes` and success policies. Each test starts all
//! its Jobs at once on one node and then checks them one by one, so they run side by side.

use std::time::Duration;

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::node::{ensure_busybox_variant, NodeServer, BUSYBOX};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(150);

/// busybox with its image's usual default command (`sh`, which exits 0 on an empty stdin):
/// upstream's "succeeded" Jobs give their container no command.
const DEFAULT_CMD_IMAGE: &str = "rkube-test-busybox-sh:1";

// The containers' scripts, as upstream's e2e job fixtures name them.
const NOT_TERMINATE: &str = "sleep 1000000";
const FAIL: &str = "exit 1";
const FAIL_ONCE: &str = "if [[ -r /data/foo ]] ; then exit 0 ; else touch /data/foo ; exit 1 ; fi";
const FAIL_ODD_SUCCEED_EVEN: &str =
    "if [ $(expr ${JOB_COMPLETION_INDEX} % 2) -ne 0 ]; then exit 1; else exit 0; fi";
const NOT_TERMINATE_ONCE_PER_INDEX: &str = "if [[ -r /data/foo-$JOB_COMPLETION_INDEX ]]; then exit 0; else touch /data/foo-$JOB_COMPLETION_INDEX; sleep 1000000; fi";

/// A Job as upstream's `NewTestJob` makes it: container `c` running `script` in `sh -c`
/// (the image's default command without one), an emptyDir `data` at `/data`, restart policy
/// Never, and `spec` merged into its spec. The grace period is 1 s (upstream keeps the
/// default 30 s) because `sh` ignores SIGTERM and the tests delete running pods.
fn job(name: &str, script: Option<&str>, spec: Value) -> Value {
    let mut container = json!({"name": "c", "image": BUSYBOX, "imagePullPolicy": "IfNotPresent",
        "volumeMounts": [{"name": "data", "mountPath": "/data"}]});
    match script {
        Some(script) => container["command"] = json!(["sh", "-c", script]),
        None => container["image"] = json!(DEFAULT_CMD_IMAGE),
    }
    let mut job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1, "containers": [container],
            "volumes": [{"name": "data", "emptyDir": {}}]}}}});
    for (key, value) in spec.as_object().expect("a spec object") {
        job["spec"][key] = value.clone();
    }
    job
}

/// The same Job with its `/data` a hostPath directory of the node (upstream's
/// `NewTestJobOnNode`), so that a retried pod sees what an earlier one wrote.
fn on_host(mut job: Value, dir: &std::path::Path) -> Value {
    job["spec"]["template"]["spec"]["volumes"] = json!([{"name": "data",
        "hostPath": {"path": dir.to_str().unwrap(), "type": "DirectoryOrCreate"}}]);
    job
}

fn create(s: &RkubeServer, jobs: Vec<Value>) {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": jobs});
    s.ok_stdin(&["create", "-f", "-"], &list.to_string());
}

fn get(s: &RkubeServer, what: &[&str]) -> Value {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend(["-o", "json"]);
    serde_json::from_str(&s.ok(&args)).expect("kubectl's JSON")
}

/// A status counter as a Go client reads it: absent is 0.
fn counter(job: &Value, field: &str) -> i64 {
    job["status"][field].as_i64().unwrap_or(0)
}

/// The Job's condition of `kind` when it is True.
fn condition<'a>(job: &'a Value, kind: &str) -> Option<&'a Value> {
    job["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind && c["status"] == "True")
}

/// Waits for the Job's condition `kind` (True) and returns the Job.
fn wait_condition(s: &RkubeServer, name: &str, kind: &str) -> Value {
    let seen = s.wait_until(&format!("job {name} {kind}"), WAIT, || {
        let job = get(s, &["job", name]);
        (condition(&job, kind).is_some(), job.to_string())
    });
    serde_json::from_str(&seen).unwrap()
}

/// The Job's pods (by its `job-name` label).
fn pods_of(s: &RkubeServer, job: &str) -> Vec<Value> {
    let list = get(s, &["pods", "-l", &format!("job-name={job}")]);
    list["items"].as_array().cloned().unwrap_or_default()
}

/// Upstream's `WaitForAllJobPodsRunning`: waits until exactly `count` of the Job's pods are
/// Running, and returns them.
fn wait_running(s: &RkubeServer, job: &str, count: usize) -> Vec<Value> {
    let seen = s.wait_until(&format!("{count} running pods of {job}"), WAIT, || {
        let pods = pods_of(s, job);
        let running: Vec<Value> =
            pods.into_iter().filter(|p| p["status"]["phase"] == "Running").collect();
        (running.len() == count, Value::Array(running).to_string())
    });
    serde_json::from_str::<Vec<Value>>(&seen).unwrap()
}

/// A GET, `change`, and a PUT of what came (`kubectl replace`), again on a conflict as
/// upstream's update helpers do (the controllers and the kubelet write the same objects).
/// `what` names the object for kubectl get, e.g. `["pod", name]`, with
/// `--subresource=status` for the status. Returns the object the PUT returned.
fn update(s: &RkubeServer, what: &[&str], change: impl Fn(&mut Value)) -> Value {
    let subresource: Vec<&str> =
        what.iter().copied().filter(|a| a.starts_with("--subresource")).collect();
    let seen = s.wait_until(&format!("PUT {}", what.join(" ")), WAIT, || {
        let mut object = get(s, what);
        change(&mut object);
        let mut args = vec!["replace", "-f", "-", "-o", "json"];
        args.extend(&subresource);
        let out = s.kubectl_with(&s.kubectl, &args, Some(&object.to_string()));
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success() || stderr.contains("Conflict"), "{stderr}");
        (out.status.success(), String::from_utf8_lossy(&out.stdout).to_string())
    });
    serde_json::from_str(&seen).expect("the replaced object")
}

fn controller_of(pod: &Value) -> Option<&Value> {
    pod["metadata"]["ownerReferences"].as_array()?.iter().find(|r| r["controller"] == true)
}

#[test]
fn jobs_adopt_release_report_delete_and_restart_their_pods_on_a_node() {
    let node = NodeServer::start();
    let s = &node.server;
    let host = s.data_dir.path().join("host");
    let sleepy = json!({"parallelism": 2, "completions": 4, "backoffLimit": 6});
    create(
        s,
        vec![
            job("adopt-release", Some(NOT_TERMINATE), sleepy.clone()),
            job("status", Some(NOT_TERMINATE), sleepy.clone()),
            job("foo", Some(NOT_TERMINATE), sleepy),
            {
                let mut local = job(
                    "fail-once-local",
                    Some(FAIL_ONCE),
                    json!({"parallelism": 2, "completions": 4, "backoffLimit": 6}),
                );
                local["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
                local
            },
            on_host(
                job(
                    "fail-early",
                    Some(FAIL_ONCE),
                    json!({"parallelism": 2, "completions": 4, "backoffLimit": 6,
                        "podFailurePolicy": {"rules": [{"action": "FailJob",
                            "onExitCodes": {"operator": "In", "values": [1]}}]}}),
                ),
                &host.join("fail-early"),
            ),
            on_host(
                job(
                    "evicted",
                    Some(NOT_TERMINATE_ONCE_PER_INDEX),
                    json!({"parallelism": 3, "completions": 3, "backoffLimit": 2,
                        "completionMode": "Indexed",
                        "podFailurePolicy": {"rules": [{"action": "Ignore",
                            "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}}),
                ),
                &host.join("evicted"),
            ),
        ],
    );

    // Ensure pod failure policy allows to ignore failure matching on the DisruptionTarget
    // condition: three evicted pods would exceed the back-off limit 2, but their failures
    // are ignored and the indexes' new pods complete. (The new pods come after the failure
    // back-off, 40 s for three failures, as upstream's controller delays them: the other Jobs
    // are checked meanwhile.)
    s.wait_until("evicted ready 3", WAIT, || {
        let job = get(s, &["job", "evicted"]);
        (counter(&job, "ready") == 3, job["status"].to_string())
    });
    let names: Vec<String> = pods_of(s, "evicted")
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    // A watch of the pods from before the evictions: each evicted pod's versions, with the
    // reason of its DisruptionTarget condition.
    let template = "jsonpath={.metadata.name} {.status.conditions[?(@.type==\"DisruptionTarget\")].reason}{\"\\n\"}";
    let mut watch = s
        .kubectl_command(&s.kubectl)
        .args(["get", "pods", "-l", "job-name=evicted", "-w", "-o", template])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("kubectl get -w");
    std::thread::scope(|scope| {
        for name in &names {
            scope.spawn(move || {
                let body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": name, "namespace": "default"}});
                let evicted = s.curl_body(
                    &["-X", "POST"],
                    &format!("/api/v1/namespaces/default/pods/{name}/eviction"),
                    body.to_string().as_bytes(),
                );
                assert_eq!(evicted.code, 201, "{}", evicted.body);
            });
        }
    });
    s.wait_until("the evicted pods gone", WAIT, || {
        let left: Vec<String> = pods_of(s, "evicted")
            .iter()
            .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
            .filter(|n| names.contains(n))
            .collect();
        (left.is_empty(), left.join(" "))
    });
    // The eviction adds the condition before it deletes, as upstream's does: the watch saw
    // it on each evicted pod.
    let _ = watch.kill();
    let seen = rkube_conformance::cluster::stdout_of(&watch.wait_with_output().unwrap());
    for name in &names {
        let marked = format!("{name} EvictionByEvictionAPI");
        assert!(seen.lines().any(|l| l == marked), "{name} never marked:\n{seen}");
    }
    // Verify Pod Failure policy allows to fail job early on exit code: the first pod's exit
    // code 1 fails the Job, far below its back-off limit, although a retry would succeed.
    let early = wait_condition(s, "fail-early", "Failed");
    let failed = condition(&early, "Failed").unwrap();
    assert_eq!(failed["reason"], "PodFailurePolicy", "{early}");
    let message = failed["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Container c for pod ")
            && message.ends_with(" failed with exit code 1 matching FailJob rule at index 0"),
        "{message}"
    );
    assert!(condition(&early, "FailureTarget").is_some(), "{early}");
    assert!(condition(&early, "Complete").is_none(), "{early}");
    assert!((1..=2).contains(&counter(&early, "failed")), "{early}");

    // Jobs, orphan pods, re-adoption: a pod without owner is adopted again, a pod whose
    // labels no longer match is released.
    let adopt = get(s, &["job", "adopt-release"]);
    let uid = adopt["metadata"]["uid"].as_str().unwrap().to_string();
    let pods = wait_running(s, "adopt-release", 2);
    let pod = pods[0]["metadata"]["name"].as_str().unwrap().to_string();
    update(s, &["pod", &pod], |p| {
        p["metadata"].as_object_mut().unwrap().remove("ownerReferences");
    });
    s.wait_until("the orphan adopted again", WAIT, || {
        let pod = get(s, &["pod", &pod]);
        let owner = controller_of(&pod).cloned().unwrap_or(Value::Null);
        if !owner.is_null() {
            assert_eq!(
                (&owner["kind"], &owner["name"], &owner["uid"]),
                (&json!("Job"), &json!("adopt-release"), &json!(uid)),
                "adopted by the wrong owner"
            );
        }
        (!owner.is_null(), pod["metadata"].to_string())
    });
    update(s, &["pod", &pod], |p| {
        p["metadata"].as_object_mut().unwrap().remove("labels");
    });
    let released = s.wait_until("the unlabelled pod released", WAIT, || {
        let pod = get(s, &["pod", &pod]);
        (controller_of(&pod).is_none(), pod["metadata"].to_string())
    });
    // Released as upstream's ref manager does, by one patch that also takes the Job's
    // tracking finalizer off: the pod no longer waits for the Job to count it.
    assert!(!released.contains("batch.kubernetes.io/job-tracking"), "{released}");

    // Jobs, apply changes to status: a merge patch, a PUT and a GET of /status.
    let status_job = get(s, &["job", "status"]);
    wait_running(s, "status", 2);
    let now1 = "2026-01-02T03:04:05Z";
    let patch = json!({"metadata": {"annotations": {"patchedstatus": "true"}},
        "status": {"startTime": now1}});
    let patched: Value = serde_json::from_str(&s.ok(&[
        "patch",
        "job",
        "status",
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch.to_string(),
        "-o",
        "json",
    ]))
    .unwrap();
    assert_eq!(patched["status"]["startTime"], now1, "{patched}");
    assert_eq!(patched["metadata"]["annotations"]["patchedstatus"], "true", "{patched}");
    let now2 = "2026-02-03T04:05:06Z";
    let updated = update(s, &["job", "status", "--subresource=status"], |job| {
        job["status"]["startTime"] = json!(now2)
    });
    assert_eq!(updated["status"]["startTime"], now2, "{updated}");
    let path = "/apis/batch/v1/namespaces/default/jobs/status/status";
    let got: Value = serde_json::from_str(&s.ok(&["get", "--raw", path])).unwrap();
    assert_eq!(got["metadata"]["uid"], status_job["metadata"]["uid"], "{got}");
    assert_eq!(got["kind"], "Job");

    // Jobs, active pods, graceful termination: the Job is deleted, and its running pods with
    // it (kubectl's background propagation, then waiting as upstream's
    // DeleteResourceAndWaitForGC does).
    wait_running(s, "foo", 2);
    s.ok(&["delete", "job", "foo", "--wait=false"]);
    s.wait_until("foo's pods gone", WAIT, || {
        let pods = pods_of(s, "foo");
        (pods.is_empty(), Value::Array(pods).to_string())
    });
    let gone = s.kubectl(&["get", "job", "foo"]);
    let stderr = String::from_utf8_lossy(&gone.stderr);
    assert!(
        !gone.status.success() && stderr.contains("NotFound") && stderr.contains("\"foo\""),
        "{stderr}"
    );

    let evicted = wait_condition(s, "evicted", "Complete");
    assert_eq!(condition(&evicted, "Complete").unwrap()["reason"], "CompletionsReached");
    assert_eq!(counter(&evicted, "succeeded"), 3, "{evicted}");
    assert_eq!(counter(&evicted, "failed"), 0, "ignored failures are not counted: {evicted}");
    assert_eq!(evicted["status"]["completedIndexes"], "0-2", "{evicted}");
    // As upstream's check of an Indexed Job's pods: each succeeded pod has its index in the
    // annotation and `<job>-<index>` as hostname, and every index succeeded.
    let mut indexes: Vec<String> = Vec::new();
    for pod in pods_of(s, "evicted").iter().filter(|p| p["status"]["phase"] == "Succeeded") {
        let index = pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
            .as_str()
            .expect("the completion index annotation")
            .to_string();
        assert_eq!(pod["spec"]["hostname"], format!("evicted-{index}"), "{}", pod["spec"]);
        indexes.push(index);
    }
    indexes.sort();
    assert_eq!(indexes, ["0", "1", "2"]);

    // Jobs, completion after task failure: each pod's container fails once and is restarted
    // in place (restartPolicy OnFailure), and the Job completes.
    let local = wait_condition(s, "fail-once-local", "Complete");
    assert_eq!(counter(&local, "succeeded"), 4, "{local}");
    assert_eq!(counter(&local, "failed"), 0, "{local}");
    let pods = pods_of(s, "fail-once-local");
    assert_eq!(pods.len(), 4, "one pod per completion, none replaced");
    for pod in &pods {
        let status = &pod["status"];
        assert_eq!(status["phase"], "Succeeded", "{status}");
        assert_eq!(status["containerStatuses"][0]["restartCount"], 1, "{status}");
    }
}

#[test]
fn indexed_jobs_fail_indexes_and_succeed_by_policy_on_a_node() {
    ensure_busybox_variant(DEFAULT_CMD_IMAGE, &[r#"CMD ["sh"]"#]);
    let node = NodeServer::start();
    let s = &node.server;
    let indexed = |completions: i32, parallelism: i32, extra: Value| {
        let mut spec = json!({"completionMode": "Indexed", "completions": completions,
            "parallelism": parallelism});
        for (key, value) in extra.as_object().unwrap() {
            spec[key] = value.clone();
        }
        spec
    };
    create(
        s,
        vec![
            job(
                "fail-index",
                Some(FAIL_ODD_SUCCEED_EVEN),
                indexed(
                    2,
                    2,
                    json!({"backoffLimitPerIndex": 1, "podFailurePolicy": {"rules": [
                        {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]}}),
                ),
            ),
            job(
                "per-index",
                Some(FAIL_ODD_SUCCEED_EVEN),
                indexed(4, 2, json!({"backoffLimitPerIndex": 1})),
            ),
            job(
                "max-failed",
                Some(FAIL),
                indexed(4, 1, json!({"backoffLimitPerIndex": 0, "maxFailedIndexes": 0})),
            ),
            job(
                "success-all",
                None,
                indexed(
                    2,
                    2,
                    json!({"backoffLimit": 6,
                        "successPolicy": {"rules": [{"succeededCount": 2}]}}),
                ),
            ),
            job(
                "success-indexes",
                Some(FAIL_ODD_SUCCEED_EVEN),
                indexed(
                    5,
                    2,
                    json!({"backoffLimit": 6,
                        "successPolicy": {"rules": [{"succeededIndexes": "0"}]}}),
                ),
            ),
            job(
                "success-count",
                Some(FAIL_ODD_SUCCEED_EVEN),
                indexed(
                    5,
                    2,
                    json!({"backoffLimit": i32::MAX,
                        "successPolicy": {"rules": [{"succeededCount": 1}]}}),
                ),
            ),
        ],
    );

    // Terminate job execution when the maxFailedIndexes is exceeded: index 0 fails, the Job
    // fails, and no other index ever ran.
    let max = wait_condition(s, "max-failed", "Failed");
    assert_eq!(condition(&max, "Failed").unwrap()["reason"], "MaxFailedIndexesExceeded");
    assert_eq!(max["status"]["failedIndexes"], "0", "{max}");
    assert_eq!(counter(&max, "failed"), 1, "{max}");
    let indexes: Vec<Value> = pods_of(s, "max-failed")
        .iter()
        .map(|p| p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"].clone())
        .collect();
    assert_eq!(indexes, [json!("0")], "only index 0 ran");

    // Mark indexes as failed when the FailIndex action is matched in podFailurePolicy: index
    // 1 fails without a retry despite its per-index limit of 1.
    let fail_index = wait_condition(s, "fail-index", "Failed");
    assert_eq!(condition(&fail_index, "Failed").unwrap()["reason"], "FailedIndexes");
    assert_eq!(fail_index["status"]["failedIndexes"], "1", "{fail_index}");
    assert_eq!(fail_index["status"]["completedIndexes"], "0", "{fail_index}");
    assert_eq!(counter(&fail_index, "failed"), 1, "{fail_index}");
    assert_eq!(counter(&fail_index, "succeeded"), 1, "{fail_index}");

    // Ensure that job with successPolicy succeeded when all indexes succeeded.
    for name in ["success-all", "success-indexes", "success-count"] {
        let done = wait_condition(s, name, "Complete");
        let conditions = done["status"]["conditions"].as_array().unwrap();
        let kinds: Vec<&Value> = conditions.iter().map(|c| &c["type"]).collect();
        assert_eq!(kinds, ["SuccessCriteriaMet", "Complete"], "{name}: {done}");
        for c in conditions {
            assert_eq!((&c["status"], &c["reason"]), (&json!("True"), &json!("SuccessPolicy")));
        }
        // The final state: nothing active, ready or terminating (upstream reads ready and
        // terminating as set to 0, not absent), and nothing failed.
        let status = &done["status"];
        assert_eq!(counter(&done, "active"), 0, "{name}: {status}");
        assert_eq!((&status["ready"], &status["terminating"]), (&json!(0), &json!(0)), "{name}");
        if name == "success-all" {
            assert_eq!(counter(&done, "failed"), 0, "{status}");
            assert_eq!(counter(&done, "succeeded"), 2, "{status}");
            assert_eq!(status["completedIndexes"], "0,1", "{status}");
        } else {
            // Ensure that job with successPolicy succeededIndexes (succeededCount) rule
            // succeeded even when some indexes remain pending: index 0 was enough.
            assert_eq!(status["completedIndexes"], "0", "{name}: {status}");
            assert_eq!(counter(&done, "succeeded"), 1, "{name}: {status}");
        }
    }

    // Ensure that all indexes are executed for an indexed job with backoffLimitPerIndex
    // despite some failing: the odd indexes fail twice each, the even ones succeed.
    let per_index = wait_condition(s, "per-index", "Failed");
    assert_eq!(condition(&per_index, "Failed").unwrap()["reason"], "FailedIndexes");
    assert_eq!(per_index["status"]["failedIndexes"], "1,3", "{per_index}");
    assert_eq!(per_index["status"]["completedIndexes"], "0,2", "{per_index}");
    assert_eq!(counter(&per_index, "failed"), 4, "{per_index}");
    assert_eq!(counter(&per_index, "succeeded"), 2, "{per_index}");
}
