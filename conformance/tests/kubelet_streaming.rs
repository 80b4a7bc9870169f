//! The kubelet's own API on a real Docker engine, reached as a user reaches it: stock kubectl
//! through `rkube server`, which proxies to the kubelet over HTTPS with its kubelet-client
//! certificate. `kubectl logs` (tail, containers, previous, follow), `kubectl exec` (output,
//! stderr, exit codes, stdin), `kubectl attach`, and `nodes/proxy` to `/healthz` and `/pods`.

use std::path::Path;
use std::time::Duration;

use rkube_conformance::cluster::{jsonpath, run_command, stderr_of, stdout_of};
use rkube_conformance::node::{NodeServer, ATTACH_PODS, EXEC_PODS};
use rkube_conformance::streaming::Streaming;

#[test]
fn kubectl_logs_tail_containers_previous_and_follow() {
    let n = NodeServer::start();
    let s = &n.server;
    let manifest = r#"
apiVersion: v1
kind: Pod
metadata: {name: echo}
spec:
  containers:
  - {name: echo, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo one; echo two; echo three; exec sleep 3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: pair}
spec:
  containers:
  - {name: a, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo from-a; exec sleep 3600"]}
  - {name: b, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo from-b; exec sleep 3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    volumeMounts: [{name: data, mountPath: /data}]
    # The first attempt fails; the second stays up.
    command: ["sh", "-c", "n=$(cat /data/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > /data/n; echo attempt-$n; if [ $n -ge 2 ]; then exec sleep 3600; fi; exit 1"]
---
apiVersion: v1
kind: Pod
metadata: {name: ticker}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo first; while [ ! -f /tmp/go ]; do sleep 0.2; done; echo second; exec sleep 3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: waiting}
spec:
  containers:
  - {name: app, image: "busybox:not-here", imagePullPolicy: Never}
"#;
    s.ok_stdin(&["apply", "-f", "-"], manifest);
    let minute = Duration::from_secs(60);

    // What the container wrote, all of it and the last line.
    n.wait_for(&["logs", "echo"], minute, |l| l == "one\ntwo\nthree\n");
    assert_eq!(s.ok(&["logs", "echo", "--tail=1"]), "three\n");
    assert_eq!(s.ok(&["logs", "echo", "--limit-bytes=6"]), "one\ntw");
    let stamped = s.ok(&["logs", "echo", "--timestamps"]);
    let first = stamped.lines().next().unwrap_or("");
    let (stamp, text) = first.split_once(' ').unwrap_or(("", ""));
    assert_eq!(text, "one", "{stamped}");
    assert!(stamp.contains('T') && stamp.ends_with('Z'), "an RFC 3339 time: {stamped}");
    let since = s.ok(&["logs", "echo", "--since=1h"]);
    assert_eq!(since, "one\ntwo\nthree\n");

    // One container of two, by name.
    n.wait_for(&["logs", "pair", "-c", "b"], minute, |l| l == "from-b\n");
    assert_eq!(s.ok(&["logs", "pair", "-c", "a"]), "from-a\n");
    let e = s.fails(&["logs", "pair", "-c", "c"]);
    assert!(e.contains("container c is not valid for pod pair"), "{e}");

    // No previous attempt yet: upstream's BadRequest.
    let e = s.fails(&["logs", "echo", "--previous"]);
    assert!(e.contains(r#"previous terminated container "echo" in pod "echo" not found"#), "{e}");
    // After a restart, the attempt before.
    n.wait_for(
        &[
            "get",
            "pod",
            "crash",
            "-o",
            &jsonpath(
                "{.status.containerStatuses[0].restartCount}/{.status.containerStatuses[0].ready}",
            ),
        ],
        Duration::from_secs(90),
        |v| v == "1/true",
    );
    assert_eq!(s.ok(&["logs", "crash", "--previous"]), "attempt-1\n");
    n.wait_for(&["logs", "crash"], minute, |l| l == "attempt-2\n");

    // A container that never started.
    n.wait_for(
        &[
            "get",
            "pod",
            "waiting",
            "-o",
            &jsonpath("{.status.containerStatuses[0].state.waiting.reason}"),
        ],
        minute,
        |r| r == "ErrImageNeverPull",
    );
    let e = s.fails(&["logs", "waiting"]);
    assert!(
        e.contains(r#"container "app" in pod "waiting" is waiting to start: ErrImageNeverPull"#),
        "{e}"
    );

    // `-f` streams: a line written after kubectl started arrives while it runs.
    n.wait_for(&["logs", "ticker"], minute, |l| l.contains("first"));
    let mut follow = Streaming::start(s.kubectl_command(&s.kubectl).args(["logs", "-f", "ticker"]));
    follow.wait_for_line(|l| l == "first", Duration::from_secs(30));
    assert!(follow.still_running(), "kubectl logs -f ended early");
    s.ok(&["exec", "ticker", "--", "touch", "/tmp/go"]);
    follow.wait_for_line(|l| l == "second", Duration::from_secs(30));
    assert!(follow.still_running(), "kubectl logs -f ended while the container runs");
}

#[test]
fn kubectl_exec_streams_output_exit_codes_and_stdin() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], EXEC_PODS);
    s.ok(&["wait", "--for=condition=Ready", "pod/shell", "--timeout=50s"]);

    assert_eq!(s.ok(&["exec", "shell", "--", "echo", "hi"]), "hi\n");

    // stdout and stderr stay apart.
    let out = s.kubectl(&["exec", "shell", "--", "sh", "-c", "echo out; echo err >&2"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "out\n");
    assert!(stderr_of(&out).contains("err"), "{}", stderr_of(&out));

    // A non-zero exit is kubectl's exit code, with upstream's message.
    let out = s.kubectl(&["exec", "shell", "--", "sh", "-c", "echo before; exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "before\n");
    assert!(stderr_of(&out).contains("command terminated with exit code 3"), "{}", stderr_of(&out));

    // stdin reaches the command, and its end ends `cat`.
    let text = "hello\nworld\n";
    let out = s.kubectl_with(&s.kubectl, &["exec", "-i", "shell", "--", "cat"], Some(text));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), text);
    let big: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    let out = s.kubectl_with(&s.kubectl, &["exec", "-i", "shell", "--", "wc", "-l"], Some(&big));
    assert_eq!(stdout_of(&out).trim(), "2000", "{}", stderr_of(&out));

    // What the command changes stays in the container.
    s.ok(&["exec", "shell", "--", "sh", "-c", "echo kept > /tmp/f"]);
    assert_eq!(s.ok(&["exec", "shell", "--", "cat", "/tmp/f"]), "kept\n");

    // With a TTY (kubectl given one by `script`): one stream, and still the exit code.
    let command = format!(
        "{} exec -it shell -- sh -c '[ -t 1 ] && echo on-a-tty; echo to-stderr >&2; exit 5'",
        s.kubectl.display()
    );
    let out = run_command(
        s.kubectl_command(Path::new("script")).args(["-qec", &command, "/dev/null"]),
        None,
    );
    let text = stdout_of(&out);
    assert!(text.contains("on-a-tty") && text.contains("to-stderr"), "{text}");
    assert!(text.contains("command terminated with exit code 5"), "{text}");
    assert_eq!(out.status.code(), Some(5), "{text}");

    // A container the pod does not have: the API server's BadRequest.
    let e = s.fails(&["exec", "shell", "-c", "nope", "--", "true"]);
    assert!(e.contains("container nope is not valid for pod shell"), "{e}");
    // A container that is not running: the kubelet's error, as kubectl shows upstream's.
    n.wait_for(
        &[
            "get",
            "pod",
            "waiting",
            "-o",
            &jsonpath("{.status.containerStatuses[0].state.waiting.reason}"),
        ],
        Duration::from_secs(60),
        |r| r == "ErrImageNeverPull",
    );
    let e = s.fails(&["exec", "waiting", "--", "true"]);
    assert!(e.contains(r#"container not found ("app")"#), "{e}");
}

#[test]
fn kubectl_attach_and_the_node_proxy() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], ATTACH_PODS);
    s.ok(&["wait", "--for=condition=Ready", "pod/counter", "pod/reader", "--timeout=50s"]);

    // The kubelet's health and pods, through the API server's node proxy.
    let path = format!("/api/v1/nodes/{}/proxy/healthz", n.node);
    assert_eq!(s.ok(&["get", "--raw", &path]), "ok");
    let path = format!("/api/v1/nodes/{}/proxy/pods", n.node);
    let list: serde_json::Value = serde_json::from_str(&s.ok(&["get", "--raw", &path])).unwrap();
    assert_eq!(list["kind"], "PodList");
    let mut names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    names.sort();
    assert_eq!(names, ["counter", "reader"]);

    // Attach: the main process's output from now on.
    let mut attached = Streaming::start(s.kubectl_command(&s.kubectl).args(["attach", "counter"]));
    attached.wait_for_line(|l| l.starts_with("tick-"), Duration::from_secs(30));
    assert!(attached.still_running());
    drop(attached);

    // Attach with stdin: the process reads it, answers and ends; kubectl ends with it.
    let out = s.kubectl_with(&s.kubectl, &["attach", "-i", "reader"], Some("hello\n"));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("got-hello"), "{}", stdout_of(&out));
    n.wait_for(
        &["get", "pod", "reader", "-o", &jsonpath("{.status.phase}")],
        Duration::from_secs(60),
        |p| p == "Succeeded",
    );
}

#[test]
fn kubectl_cp_both_ways_and_run_with_rm() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok(&[
        "run",
        "box",
        "--image=busybox:1.36",
        "--image-pull-policy=IfNotPresent",
        "--",
        "sleep",
        "3600",
    ]);
    s.ok(&["wait", "--for=condition=Ready", "pod/box", "--timeout=50s"]);

    // A directory with a text file and a binary one goes in (tar over exec with stdin)...
    let local = tempfile::tempdir().unwrap();
    let tree = local.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("a.txt"), "alpha\n").unwrap();
    let binary: Vec<u8> =
        (0..300_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(tree.join("sub/b.bin"), &binary).unwrap();
    s.ok(&["cp", tree.to_str().unwrap(), "box:/tmp/tree"]);
    assert_eq!(s.ok(&["exec", "box", "--", "cat", "/tmp/tree/a.txt"]), "alpha\n");
    let size = s.ok(&["exec", "box", "--", "stat", "-c", "%s", "/tmp/tree/sub/b.bin"]);
    assert_eq!(size.trim(), binary.len().to_string());

    // ... and comes back out the same (tar over exec with stdout).
    let back = local.path().join("back");
    s.ok(&["cp", "box:/tmp/tree", back.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(back.join("a.txt")).unwrap(), "alpha\n");
    assert_eq!(std::fs::read(back.join("sub/b.bin")).unwrap(), binary);
    // A single file.
    let single = local.path().join("single.txt");
    s.ok(&["cp", "box:/tmp/tree/a.txt", single.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&single).unwrap(), "alpha\n");

    // `kubectl run -i --rm`: stdin reaches the pod's process, its output comes back, and the
    // pod is deleted afterwards.
    let out = s.kubectl_with(
        &s.kubectl,
        &[
            "run",
            "once",
            "-i",
            "--rm",
            "--restart=Never",
            "--image=busybox:1.36",
            "--image-pull-policy=IfNotPresent",
            "--",
            "sh",
            "-c",
            "read x; echo got-$x",
        ],
        Some("abc\n"),
    );
    assert!(out.status.success(), "{}\n{}", stdout_of(&out), stderr_of(&out));
    let text = stdout_of(&out);
    assert!(text.contains("got-abc"), "{text}");
    assert!(text.contains("pod \"once\" deleted"), "{text}");
    n.wait_for(&["get", "pods", "-o", "name"], Duration::from_secs(30), |out| {
        !out.contains("pod/once")
    });
}
