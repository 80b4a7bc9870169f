//! `rkube killall`: takes rkube off this host, as k3s's `k3s-killall.sh` does for k3s.
//!
//! In order: the rkube processes (server, kubelet, proxy, agent) are stopped first, so that
//! no kubelet makes containers again while they go (k3s's script kills its processes
//! first too; there is nothing to refuse); then the containers of rkube's pods (those with
//! the kubelet's node label, never other Docker containers), the pod network (veths
//! `rkv*`, bridges `rkbr*`, the kubelet's hostPort chains `RKUBE-HP-*` and its rules in the
//! built-in chains) and the proxy's chains (by `--iptables-chain-prefix`) and service
//! device. Each thing removed is one line on standard output. Data directories stay (what
//! k3s's uninstall script removes, not its killall).
//!
//! `--node-name` scopes all of it to one node: its processes (by their `--node-name`, or
//! the host name they default to), containers, bridge and chains; several rkube nodes on one
//! host (tests) keep each other's.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;

#[derive(clap::Args)]
pub struct KillallArgs {
    /// Only this node's processes, containers, pod network and chains (default: every
    /// rkube node's on this host).
    #[arg(long)]
    node_name: Option<String>,
    /// The prefix of the proxy chains to remove (`KUBE`, kube-proxy's names, unless the
    /// proxy was given another).
    #[arg(long, default_value = "KUBE")]
    iptables_chain_prefix: String,
}

/// The subcommands that run a node's parts (and leave them behind).
const NODE_COMMANDS: [&str; 4] = ["server", "kubelet", "proxy", "agent"];
/// How long a process may take to stop after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// One running rkube process of the node's.
struct Process {
    pid: u32,
    args: Vec<String>,
}

/// The value of `--flag V` or `--flag=V` in `args`.
fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    let with_value = format!("{name}=");
    args.iter().enumerate().find_map(|(i, arg)| {
        if arg == name {
            args.get(i + 1).map(String::as_str)
        } else {
            arg.strip_prefix(&with_value)
        }
    })
}

/// Whether `args` (a command line) is an rkube process running a part of `node` (any node
/// without one); `host` is the name a process without `--node-name` takes.
fn is_node_process(args: &[String], node: Option<&str>, host: &str) -> bool {
    let program = args.first().map(|a| Path::new(a).file_name().unwrap_or_default());
    if program != Some(std::ffi::OsStr::new("rkube")) {
        return false;
    }
    let Some(command) = args.get(1).filter(|c| NODE_COMMANDS.contains(&c.as_str())) else {
        return false;
    };
    let Some(node) = node else { return true };
    let name_flag = if command == "proxy" { "--hostname-override" } else { "--node-name" };
    flag(args, name_flag).unwrap_or(host) == node
}

fn rkube_processes(node: Option<&str>, host: &str) -> Vec<Process> {
    let own = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == own || !is_running(pid) {
            continue;
        }
        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let args: Vec<String> = raw
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if is_node_process(&args, node, host) {
            found.push(Process { pid, args });
        }
    }
    found.sort_by_key(|p| p.pid);
    found
}

/// Whether `pid` runs (a zombie has ended: only its parent's wait is missing).
fn is_running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // The state follows the command name, which is in parentheses and may hold spaces.
    let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

fn signal(pid: u32, name: &str) {
    let _ = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status();
}

/// Stops each process: SIGTERM, then SIGKILL after [`STOP_GRACE`].
async fn stop(processes: &[Process]) -> anyhow::Result<()> {
    for process in processes {
        signal(process.pid, "TERM");
    }
    let deadline = Instant::now() + STOP_GRACE;
    while processes.iter().any(|p| is_running(p.pid)) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for process in processes.iter().filter(|p| is_running(p.pid)) {
        signal(process.pid, "KILL");
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while let Some(left) = processes.iter().find(|p| is_running(p.pid)) {
        anyhow::ensure!(Instant::now() < deadline, "process {} does not stop", left.pid);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Whether this process runs as root (its effective uid).
fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid = status.lines().find_map(|l| l.strip_prefix("Uid:"));
    uid.and_then(|u| u.split_whitespace().nth(1)) == Some("0")
}

pub async fn run(args: KillallArgs, host: Option<String>) -> anyhow::Result<()> {
    anyhow::ensure!(
        is_root(),
        "rkube killall must run as root: it stops rkube's processes and containers and removes \
         network links and iptables rules (try sudo)"
    );
    let node = args.node_name.as_deref();
    let mut removed: Vec<String> = Vec::new();

    let processes = rkube_processes(node, host.as_deref().unwrap_or(""));
    stop(&processes).await?;
    removed.extend(processes.iter().map(|p| format!("process: {} ({})", p.pid, p.args.join(" "))));

    // Listed while the sandboxes still hold them: their veths go with them.
    let network = match node {
        Some(node) => rkube_kubelet::runtime::podnet::Leftovers::of_node(node),
        None => rkube_kubelet::runtime::podnet::Leftovers::all()?,
    };
    match rkube_kubelet::runtime::docker::DockerRuntime::connect().await {
        Ok(docker) => {
            let containers = docker.remove_all(node).await?;
            removed.extend(containers.into_iter().map(|c| format!("container: {c}")));
        }
        // Without an engine no container runs; the rest still goes.
        Err(e) => eprintln!("rkube: no containers removed: {e}"),
    }
    let prefix = args.iptables_chain_prefix.clone();
    let rest = tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<String>> {
        let mut removed = network.remove().context("cannot remove the pod network")?;
        removed.extend(crate::proxy_cleanup(&prefix)?);
        Ok(removed)
    })
    .await??;
    removed.extend(rest);
    for line in &removed {
        println!("removed {line}");
    }
    if removed.is_empty() {
        println!("nothing to remove");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn node_processes_are_told_by_program_command_and_node() {
        let server = args("/usr/local/bin/rkube server --data-dir /d --node-name n1");
        assert!(is_node_process(&server, Some("n1"), "host"));
        assert!(is_node_process(&server, None, "host"));
        assert!(!is_node_process(&server, Some("n2"), "host"));
        // Without --node-name a process is the host's node.
        let kubelet = args("rkube kubelet --kubeconfig k");
        assert!(is_node_process(&kubelet, Some("host"), "host"));
        assert!(!is_node_process(&kubelet, Some("n1"), "host"));
        let proxy = args("rkube proxy --kubeconfig k --hostname-override=n1");
        assert!(is_node_process(&proxy, Some("n1"), "host"));
        // Not a node's part, or not rkube.
        assert!(!is_node_process(&args("rkube scheduler --kubeconfig k"), None, "host"));
        assert!(!is_node_process(&args("rkube killall"), None, "host"));
        assert!(!is_node_process(&args("/bin/rkube-helper server"), None, "host"));
        assert!(!is_node_process(&args("k3s server --node-name n1"), Some("n1"), "host"));
    }

    #[test]
    fn this_process_runs_and_a_missing_one_does_not() {
        assert!(is_running(std::process::id()));
        assert!(!is_running(u32::MAX));
    }
}
