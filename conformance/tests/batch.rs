//! Jobs and CronJobs as a user runs them with stock kubectl on a real node (Docker): pods
//! that really exit, so that completions, failures, back-off limits, completion indexes,
//! TTLs and schedules play out as on a real cluster.

use std::time::Duration;

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::node::NodeServer;

const WAIT: Duration = Duration::from_secs(120);

fn jsonpath(server: &RkubeServer, what: &[&str], path: &str) -> String {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    let path = format!("jsonpath={path}");
    args.extend(["-o", &path]);
    server.ok(&args)
}

#[test]
fn jobs_complete_fail_and_index_their_pods() {
    let node = NodeServer::start();
    let s = &node.server;

    // One pod that succeeds: the Job completes and its pod's logs are there.
    s.ok(&["create", "job", "ok", "--image=busybox:1.36", "--", "sh", "-c", "echo done"]);
    s.ok(&["wait", "--for=condition=complete", "job/ok", "--timeout=90s"]);
    assert_eq!(s.ok(&["logs", "job/ok"]).trim(), "done");
    let status = jsonpath(s, &["job", "ok"], "{.status.succeeded} {.status.active} {.status.conditions[*].type} {.status.conditions[?(@.type==\"Complete\")].reason}");
    assert_eq!(status, "1  SuccessCriteriaMet Complete CompletionsReached");
    assert!(!jsonpath(s, &["job", "ok"], "{.status.completionTime}").is_empty());
    let table = s.ok(&["get", "job", "ok"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row[..3], ["ok", "Complete", "1/1"], "{table}");
    // The pod is counted, so the job's tracking finalizer is off it.
    let pod = jsonpath(s, &["pods", "-l", "job-name=ok"], "{.items[0].metadata.finalizers}");
    assert_eq!(pod, "");
    let events =
        s.ok(&["get", "events", "--field-selector", "involvedObject.name=ok,reason=Completed"]);
    assert!(events.contains("Job completed"), "{events}");

    // Three completions, two at a time.
    let parallel = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: para}
spec:
  completions: 3
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - {name: work, image: "busybox:1.36", command: ["sh", "-c", "sleep 1"]}
"#;
    s.ok_stdin(&["apply", "-f", "-"], parallel);
    // Never more than two at once.
    let mut most_active = 0;
    s.wait_until("para complete", WAIT, || {
        let active = jsonpath(s, &["job", "para"], "{.status.active}");
        most_active = most_active.max(active.parse::<u32>().unwrap_or(0));
        let done = jsonpath(s, &["job", "para"], "{.status.succeeded}");
        (done == "3", format!("active {active}, succeeded {done}"))
    });
    assert!(most_active <= 2, "{most_active} pods ran at once");
    s.ok(&["wait", "--for=condition=complete", "job/para", "--timeout=30s"]);

    // Indexed: each pod gets its completion index.
    let indexed = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: idx}
spec:
  completions: 3
  parallelism: 3
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: work, image: "busybox:1.36", command: ["sh", "-c", "echo index=$JOB_COMPLETION_INDEX"]}
"#;
    s.ok_stdin(&["apply", "-f", "-"], indexed);
    s.ok(&["wait", "--for=condition=complete", "job/idx", "--timeout=90s"]);
    assert_eq!(jsonpath(s, &["job", "idx"], "{.status.completedIndexes}"), "0-2");
    let mut logs: Vec<String> = s
        .ok(&["logs", "-l", "job-name=idx", "--prefix=false"])
        .lines()
        .map(str::to_string)
        .collect();
    logs.sort();
    assert_eq!(logs, ["index=0", "index=1", "index=2"]);
    let names = jsonpath(s, &["pods", "-l", "job-name=idx"], "{range .items[*]}{.metadata.annotations.batch\\.kubernetes\\.io/job-completion-index}{\"\\n\"}{end}");
    let mut names: Vec<&str> = names.lines().collect();
    names.sort();
    assert_eq!(names, ["0", "1", "2"]);

    // A pod that fails, twice with a back-off limit of 1: the Job fails.
    let failing = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: bad}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: work, image: "busybox:1.36", command: ["sh", "-c", "exit 3"]}
"#;
    s.ok_stdin(&["apply", "-f", "-"], failing);
    s.ok(&["wait", "--for=condition=failed", "job/bad", "--timeout=120s"]);
    let status = jsonpath(
        s,
        &["job", "bad"],
        "{.status.failed} {.status.conditions[?(@.type==\"Failed\")].reason}",
    );
    assert_eq!(status, "2 BackoffLimitExceeded");
    let table = s.ok(&["get", "job", "bad"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row[..3], ["bad", "Failed", "0/1"], "{table}");

    // A running pod deleted by hand ends Failed (the kubelet says so before its final
    // delete): the Job counts the failure and replaces the pod.
    let long = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: long}
spec:
  backoffLimit: 3
  template:
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: 1
      containers:
      - {name: work, image: "busybox:1.36", command: ["sleep", "3600"]}
"#;
    s.ok_stdin(&["apply", "-f", "-"], long);
    s.wait_until("long running", WAIT, || {
        let ready = jsonpath(s, &["job", "long"], "{.status.ready}");
        (ready == "1", ready)
    });
    s.ok(&["delete", "pods", "-l", "job-name=long", "--wait=false"]);
    s.wait_until("the deleted pod counted as failed and replaced", WAIT, || {
        let got = jsonpath(s, &["job", "long"], "{.status.failed} {.status.active}");
        (got == "1 1", got)
    });
    s.ok(&["delete", "job", "long"]);

    // A finished Job with a TTL of 0 is deleted, and its pods with it.
    let ttl = r#"
apiVersion: batch/v1
kind: Job
metadata: {name: brief}
spec:
  ttlSecondsAfterFinished: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: work, image: "busybox:1.36", command: ["true"]}
"#;
    s.ok_stdin(&["apply", "-f", "-"], ttl);
    s.wait_until("brief deleted after it finished", WAIT, || {
        let out = s.ok(&["get", "job,pods", "-l", "job-name=brief", "-o", "name"]);
        let job = s.ok(&["get", "job", "brief", "--ignore-not-found", "-o", "name"]);
        (out.trim().is_empty() && job.trim().is_empty(), out)
    });
}

#[test]
fn cron_jobs_create_jobs_on_schedule_and_keep_their_history() {
    let node = NodeServer::start();
    let s = &node.server;
    s.ok(&[
        "create",
        "cronjob",
        "tick",
        "--image=busybox:1.36",
        "--schedule=*/1 * * * *",
        "--",
        "sh",
        "-c",
        "echo tick",
    ]);
    // The next minute boundary starts a Job named for its scheduled minute.
    let job = s.wait_until("a job of tick", Duration::from_secs(90), || {
        let names = jsonpath(s, &["jobs"], "{.items[*].metadata.name}");
        (!names.is_empty(), names)
    });
    let job = job.split(' ').next().unwrap().to_string();
    let minutes: i64 = job.strip_prefix("tick-").unwrap().parse().expect("minutes since epoch");
    let scheduled = jsonpath(s, &["job", &job], "{.metadata.annotations.batch\\.kubernetes\\.io/cronjob-scheduled-timestamp} {.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}");
    let (stamp, owner) = scheduled.split_once(' ').unwrap();
    assert_eq!(owner, "CronJob/tick");
    let at: k8s_openapi::jiff::Timestamp = stamp.parse().expect("RFC 3339");
    assert_eq!(at.as_second(), minutes * 60, "{stamp}");
    let last = jsonpath(s, &["cronjob", "tick"], "{.status.lastScheduleTime}");
    assert_eq!(last.parse::<k8s_openapi::jiff::Timestamp>().unwrap(), at);
    // It completes; the CronJob notes its success and no longer lists it as active.
    s.ok(&["wait", "--for=condition=complete", &format!("job/{job}"), "--timeout=90s"]);
    s.wait_until("lastSuccessfulTime", WAIT, || {
        let got =
            jsonpath(s, &["cronjob", "tick"], "{.status.lastSuccessfulTime}|{.status.active}");
        (got.ends_with('|') && got.len() > 1, got)
    });
    // Suspended, it starts nothing more.
    s.ok(&["patch", "cronjob", "tick", "--type=merge", "-p", r#"{"spec":{"suspend":true}}"#]);
    let table = s.ok(&["get", "cronjob", "tick"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row[..2], ["tick", "*/1"], "{table}");
    s.ok(&["delete", "cronjob", "tick"]);
    s.wait_until("its jobs deleted with it", WAIT, || {
        let out = s.ok(&["get", "jobs", "-o", "name"]);
        (out.trim().is_empty(), out)
    });
}
