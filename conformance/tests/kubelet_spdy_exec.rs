//! Exec and attach with old kubectl versions, which speak SPDY/3.1 for them instead of
//! WebSockets: with 1.29 and 1.27, `kubectl exec` (output, stderr, exit codes, a refused
//! upgrade, stdin, a TTY and its size), `kubectl attach`, `kubectl cp` both ways and `kubectl
//! run -i --rm`; with 1.28 the basics of exec. All through the real API server (which passes
//! the upgrade through) to the kubelet on Docker. The newest kubectl's WebSocket path is
//! `kubelet_streaming.rs`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use rkube_conformance::cluster::{jsonpath, run_command, stderr_of, stdout_of, RkubeServer};
use rkube_conformance::node::{NodeServer, ATTACH_PODS, EXEC_PODS};
use rkube_conformance::streaming::Streaming;

/// An old kubectl as the machine ships it.
fn old_kubectl(version: &str) -> PathBuf {
    let path = PathBuf::from(format!("/usr/lib/google-cloud-sdk/bin/kubectl.{version}"));
    assert!(path.exists(), "kubectl {version} is missing: {} is not there", path.display());
    path
}

/// A kubectl command for this server, on SPDY: 1.29 may be asked for WebSockets by this
/// variable (an alpha feature then), so it is turned off explicitly.
fn command(s: &RkubeServer, kubectl: &Path) -> Command {
    let mut command = s.kubectl_command(kubectl);
    command.env("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false");
    command
}

/// Runs kubectl (60 s at most) with `stdin` fed when given.
fn run(s: &RkubeServer, kubectl: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    run_command(command(s, kubectl).args(args), stdin)
}

/// kubectl that must succeed; its stdout.
fn ok(s: &RkubeServer, kubectl: &Path, args: &[&str]) -> String {
    let out = run(s, kubectl, args, None);
    assert!(
        out.status.success(),
        "{} {} failed ({}):\n{}\n{}",
        kubectl.display(),
        args.join(" "),
        out.status,
        stdout_of(&out),
        stderr_of(&out)
    );
    stdout_of(&out)
}

/// Runs `kubectl ...` inside `script`, which gives it a terminal of the given size; returns
/// everything the terminal showed and kubectl's exit code.
fn on_a_terminal(s: &RkubeServer, kubectl: &Path, args: &str, size: (u16, u16)) -> Output {
    let (rows, cols) = size;
    let line = format!("stty rows {rows} cols {cols}; exec {} {args}", kubectl.display());
    run_command(command(s, Path::new("script")).args(["-qec", &line, "/dev/null"]), None)
}

/// Everything a user does with exec and attach, with one kubectl.
fn exec_attach_cp_and_run(version: &str) {
    let kubectl = old_kubectl(version);
    let k = kubectl.as_path();
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], EXEC_PODS);
    s.ok_stdin(&["apply", "-f", "-"], ATTACH_PODS);
    s.ok(&[
        "wait",
        "--for=condition=Ready",
        "pod/shell",
        "pod/counter",
        "pod/reader",
        "--timeout=60s",
    ]);

    // Output, and stdout and stderr kept apart.
    assert_eq!(ok(s, k, &["exec", "shell", "--", "echo", "hi"]), "hi\n");
    let out = run(s, k, &["exec", "shell", "--", "sh", "-c", "echo out; echo err >&2"], None);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "out\n");
    assert!(stderr_of(&out).contains("err"), "{}", stderr_of(&out));

    // A non-zero exit is kubectl's exit code (from v4's status on the error stream).
    let out = run(s, k, &["exec", "shell", "--", "sh", "-c", "echo before; exit 3"], None);
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out), "before\n");
    assert!(stderr_of(&out).contains("command terminated with exit code 3"), "{}", stderr_of(&out));

    // A container that is not running: the kubelet refuses the upgrade, and kubectl says why.
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
    let out = run(s, k, &["exec", "waiting", "--", "true"], None);
    assert!(!out.status.success());
    assert!(stderr_of(&out).contains(r#"container not found ("app")"#), "{}", stderr_of(&out));

    // stdin round-trips, and its end ends the command.
    let big: String = (0..2000).map(|i| format!("line {i} of the piped input\n")).collect();
    let out = run(s, k, &["exec", "-i", "shell", "--", "cat"], Some(big.as_bytes()));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out) == big, "{} bytes back of {}", out.stdout.len(), big.len());
    let out = run(s, k, &["exec", "-i", "shell", "--", "wc", "-l"], Some(big.as_bytes()));
    assert_eq!(stdout_of(&out).trim(), "2000", "{}", stderr_of(&out));

    // A terminal: one stream, its size from the resize stream (which arrives as the command
    // starts, so the command looks a few times), and still the exit code.
    let script = "[ -t 1 ] && echo on-a-tty; \
                  for i in $(seq 50); do s=$(stty size 2>/dev/null); [ \"$s\" = \"33 101\" ] && break; sleep 0.1; done; \
                  echo size-$s; echo to-stderr >&2; exit 5";
    let out = on_a_terminal(s, k, &format!("exec -it shell -- sh -c '{script}'"), (33, 101));
    let text = stdout_of(&out);
    assert!(text.contains("on-a-tty") && text.contains("to-stderr"), "{text}");
    assert!(text.contains("size-33 101"), "the terminal's size reaches the container: {text}");
    assert!(text.contains("command terminated with exit code 5"), "{text}");
    assert_eq!(out.status.code(), Some(5), "{text}");

    // Attach: the main process's output from now on, for as long as kubectl stays.
    let mut attached = Streaming::start(command(s, k).args(["attach", "counter"]));
    attached.wait_for_line(|l| l.starts_with("tick-"), Duration::from_secs(30));
    assert!(attached.still_running(), "kubectl attach ended while the process runs");
    drop(attached);
    // With stdin: the process reads it, answers and ends; kubectl ends with it.
    let out = run(s, k, &["attach", "-i", "reader"], Some(b"hello\n"));
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(stdout_of(&out).contains("got-hello"), "{}", stdout_of(&out));

    // cp: a tree with a text and a binary file goes in (tar over exec with stdin) and comes
    // back out the same (tar over exec with stdout).
    let local = tempfile::tempdir().unwrap();
    let tree = local.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("a.txt"), "alpha\n").unwrap();
    let binary: Vec<u8> =
        (0..300_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(tree.join("sub/b.bin"), &binary).unwrap();
    ok(s, k, &["cp", tree.to_str().unwrap(), "shell:/tmp/tree"]);
    assert_eq!(ok(s, k, &["exec", "shell", "--", "cat", "/tmp/tree/a.txt"]), "alpha\n");
    let size = ok(s, k, &["exec", "shell", "--", "stat", "-c", "%s", "/tmp/tree/sub/b.bin"]);
    assert_eq!(size.trim(), binary.len().to_string());
    let back = local.path().join("back");
    ok(s, k, &["cp", "shell:/tmp/tree", back.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(back.join("a.txt")).unwrap(), "alpha\n");
    assert!(std::fs::read(back.join("sub/b.bin")).unwrap() == binary, "the binary file differs");

    // `run -i --rm`: stdin reaches the pod's process, its output comes back, and the pod is
    // deleted afterwards.
    let out = run(
        s,
        k,
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
        Some(b"abc\n"),
    );
    let text = format!("{}{}", stdout_of(&out), stderr_of(&out));
    assert!(out.status.success(), "{text}");
    assert!(stdout_of(&out).contains("got-abc"), "{text}");
    assert!(text.contains("pod \"once\" deleted"), "{text}");
    n.wait_for(
        &["get", "pods", "-o", &jsonpath("{.items[*].metadata.name}")],
        Duration::from_secs(30),
        |names| !names.split_whitespace().any(|n| n == "once"),
    );
}

#[test]
fn kubectl_1_29_execs_attaches_copies_and_runs_over_spdy() {
    exec_attach_cp_and_run("1.29");
}

#[test]
fn kubectl_1_27_execs_attaches_copies_and_runs_over_spdy() {
    exec_attach_cp_and_run("1.27");
}

#[test]
fn kubectl_1_28_execs_over_spdy() {
    let k = old_kubectl("1.28");
    let k = k.as_path();
    let n = NodeServer::start();
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], EXEC_PODS);
    s.ok_stdin(&["apply", "-f", "-"], ATTACH_PODS);
    s.ok(&["wait", "--for=condition=Ready", "pod/shell", "--timeout=60s"]);
    assert_eq!(ok(s, k, &["exec", "shell", "--", "echo", "hi"]), "hi\n");
    let out = run(s, k, &["exec", "shell", "--", "sh", "-c", "exit 3"], None);
    assert_eq!(out.status.code(), Some(3), "{}", stderr_of(&out));
    let text = "one\ntwo\n";
    let out = run(s, k, &["exec", "-i", "shell", "--", "cat"], Some(text.as_bytes()));
    assert_eq!(stdout_of(&out), text, "{}", stderr_of(&out));
}
