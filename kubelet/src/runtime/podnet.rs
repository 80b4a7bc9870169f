//! The pod network of a node on Docker, made by the kubelet itself the way upstream's CNI
//! `bridge`, `host-local` and `portmap` plugins make it for sandboxes that start with no
//! network of their own (`--network none`, as dockershim's were):
//!
//! - a Linux bridge per node ([`bridge_name`]) holding the gateway, the first address of the
//!   node's pod CIDR;
//! - per sandbox, a veth pair: one end on the bridge, the other the sandbox's `eth0` with an
//!   address from the node's [`Ipam`] and a default route through the gateway;
//! - iptables: forwarding to and from the bridge accepted (Docker's FORWARD policy drops the
//!   rest), masquerade for pods reaching beyond the node, and hostPorts as DNAT rules in a
//!   chain of the node's ([`hostport_chain`]), with masquerade for connections made from the
//!   node's loopback.
//!
//! Why not a Docker network: a user-defined Docker network starts Docker's embedded DNS
//! resolver in every sandbox (iptables run inside its namespace by a process of dockerd's),
//! which took 50 to 60 ms of each pod's start here; pods get their DNS settings from their
//! spec and have no use for it.
//!
//! Links are made with iproute2's `ip` in batch mode (two processes per sandbox, one of them
//! through `nsenter`), rules with the `iptables` crate. All of it needs root (CAP_NET_ADMIN),
//! as upstream's kubelet does.

use std::net::Ipv4Addr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::{HostPort, Result, RuntimeError};
use crate::net::{gateway, Ipam, Ipv4Net};

/// The comment on the node-wide rules.
const COMMENT: &str = "rkube-pod-network";
/// How long one `ip` or `nsenter` run may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(20);

fn other(message: String) -> RuntimeError {
    RuntimeError::Other(message)
}

fn fnv(text: &str) -> u32 {
    text.bytes().fold(0x811c9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x01000193))
}

/// The bridge of `node`'s pods: `rkbr` and a hash of the name (interface names have at most
/// 15 characters).
pub fn bridge_name(node: &str) -> String {
    format!("rkbr{:08x}", fnv(node))
}

/// The nat chain holding the hostPort rules of `node`'s pods.
pub fn hostport_chain(node: &str) -> String {
    format!("RKUBE-HP-{:08x}", fnv(node))
}

/// The host end of a sandbox's veth pair.
fn veth_name(sandbox_id: &str) -> String {
    format!("rkv{}", &sandbox_id[..sandbox_id.len().min(12)])
}

/// The comment on a sandbox's hostPort rules.
fn sandbox_tag(sandbox_id: &str) -> String {
    format!("rkube-sandbox-{}", &sandbox_id[..sandbox_id.len().min(16)])
}

/// Runs `program args` with `input` on its standard input; its standard error is the error.
async fn run(program: &str, args: &[&str], input: &str) -> Result<()> {
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| other(format!("cannot run {program}: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .await
            .map_err(|e| other(format!("cannot write to {program}: {e}")))?;
    }
    let output = tokio::time::timeout(COMMAND_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| other(format!("{program} {} took over 20 s", args.join(" "))))?
        .map_err(|e| other(format!("{program}: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(other(format!("{program} {}: {}", args.join(" "), stderr.trim())));
    }
    Ok(())
}

/// iproute2 commands, one per line, in one `ip` process.
async fn ip_batch(commands: &[String]) -> Result<()> {
    run("ip", &["-batch", "-"], &commands.join("\n")).await
}

/// iproute2 commands run inside the network namespace of process `pid`.
async fn ip_batch_in(pid: i64, commands: &[String]) -> Result<()> {
    let namespace = format!("--net=/proc/{pid}/ns/net");
    run("nsenter", &[&namespace, "ip", "-batch", "-"], &commands.join("\n")).await
}

/// iptables, run off the async threads (the crate runs the `iptables` program).
async fn iptables<T: Send + 'static>(
    work: impl FnOnce(&iptables::IPTables) -> std::result::Result<T, String> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(move || {
        let tables = iptables::new(false).map_err(|e| format!("cannot run iptables: {e}"))?;
        work(&tables)
    })
    .await
    .map_err(|e| other(format!("iptables task: {e}")))?
    .map_err(other)
}

/// The node-wide rules: (table, chain, rule).
fn node_rules(
    bridge: &str,
    cidr: Ipv4Net,
    chain: &str,
) -> Vec<(&'static str, &'static str, String)> {
    let tag = format!("-m comment --comment {COMMENT}");
    vec![
        ("filter", "FORWARD", format!("-i {bridge} {tag} -j ACCEPT")),
        ("filter", "FORWARD", format!("-o {bridge} {tag} -j ACCEPT")),
        ("nat", "POSTROUTING", format!("-s {cidr} ! -o {bridge} {tag} -j MASQUERADE")),
        // hostPorts reached from the node's loopback leave through the bridge.
        ("nat", "POSTROUTING", format!("-s 127.0.0.0/8 -o {bridge} {tag} -j MASQUERADE")),
        ("nat", "PREROUTING", format!("-m addrtype --dst-type LOCAL {tag} -j {chain}")),
        ("nat", "OUTPUT", format!("-m addrtype --dst-type LOCAL {tag} -j {chain}")),
    ]
}

/// Deletes the rules of the built-in chains that name `bridge` or `chain`, and `chain`.
fn delete_node_rules(
    tables: &iptables::IPTables,
    bridge: &str,
    chain: &str,
) -> std::result::Result<(), String> {
    let names = [bridge.to_string(), chain.to_string()];
    delete_rules_and_chains(tables, &names, &names[1..], false).map(drop)
}

/// Deletes the rules of the built-in chains that name one of `names` (or, with `tagged`,
/// carry the pod network's comment), then the nat `chains`; what it deleted, one line each.
fn delete_rules_and_chains(
    tables: &iptables::IPTables,
    names: &[String],
    chains: &[String],
    tagged: bool,
) -> std::result::Result<Vec<String>, String> {
    let places =
        [("filter", "FORWARD"), ("nat", "POSTROUTING"), ("nat", "PREROUTING"), ("nat", "OUTPUT")];
    let mut removed = Vec::new();
    for (table, builtin) in places {
        let rules = tables.list(table, builtin).map_err(|e| e.to_string())?;
        for rule in rules {
            let words: Vec<&str> = rule.split_whitespace().collect();
            let ours = words.iter().any(|w| names.iter().any(|n| n == w))
                || (tagged && words.contains(&COMMENT));
            if words.first() != Some(&"-A") || !ours {
                continue;
            }
            let spec = words[2..].join(" ");
            tables.delete(table, builtin, &spec).map_err(|e| format!("{table} {spec}: {e}"))?;
            removed.push(format!("{table} rule: {rule}"));
        }
    }
    for chain in chains {
        if tables.chain_exists("nat", chain).map_err(|e| e.to_string())? {
            tables.flush_chain("nat", chain).map_err(|e| e.to_string())?;
            tables.delete_chain("nat", chain).map_err(|e| e.to_string())?;
            removed.push(format!("nat chain: {chain}"));
        }
    }
    Ok(removed)
}

/// The names of the links `ip -o link show ARGS` lists (`rkv0123@if2` as `rkv0123`).
fn link_names(args: &[&str]) -> Vec<String> {
    let output = std::process::Command::new("ip")
        .args(["-o", "link", "show"])
        .args(args)
        .stderr(std::process::Stdio::null())
        .output();
    let Ok(output) = output else { return Vec::new() };
    parse_link_names(&String::from_utf8_lossy(&output.stdout))
}

/// The link names of `ip -o link` output: `5: rkv0123@if2: <...> ...` gives `rkv0123`.
fn parse_link_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| line.split(": ").nth(1))
        .map(|name| name.split('@').next().unwrap_or(name).to_string())
        .collect()
}

fn link_exists(name: &str) -> bool {
    std::path::Path::new(&format!("/sys/class/net/{name}")).exists()
}

/// What rkube's pod networks left on this host: one node's ([`Leftovers::of_node`]) or
/// every one ([`Leftovers::all`]), found while the node's sandboxes still run (their veths
/// go with them) and removed once they are gone ([`Leftovers::remove`]). Only rkube's
/// names are ever touched: bridges `rkbr*`, veths `rkv*`, chains `RKUBE-HP-*` and the rules
/// naming them or carrying the pod network's comment.
#[derive(Debug, Default)]
pub struct Leftovers {
    bridges: Vec<String>,
    veths: Vec<String>,
    chains: Vec<String>,
    /// Every rule with the pod network's comment, whatever it names.
    every_tagged_rule: bool,
}

impl Leftovers {
    /// `node`'s bridge, the veths on it, its hostPort chain and its rules.
    pub fn of_node(node: &str) -> Leftovers {
        let bridge = bridge_name(node);
        let veths = link_names(&["master", &bridge]);
        // Named even when gone: rules naming it may have outlived it.
        let bridges = vec![bridge];
        Leftovers { bridges, veths, chains: vec![hostport_chain(node)], every_tagged_rule: false }
    }

    /// Every node's: each `rkbr` bridge, `rkv` veth and `RKUBE-HP-` chain.
    pub fn all() -> Result<Leftovers> {
        let ours = |prefix: &'static str| move |name: &String| name.starts_with(prefix);
        let bridges = link_names(&["type", "bridge"]).into_iter().filter(ours("rkbr")).collect();
        let veths = link_names(&["type", "veth"]).into_iter().filter(ours("rkv")).collect();
        let tables =
            iptables::new(false).map_err(|e| other(format!("cannot run iptables: {e}")))?;
        let chains = tables.list_chains("nat").map_err(|e| other(e.to_string()))?;
        let chains = chains.into_iter().filter(ours("RKUBE-HP-")).collect();
        Ok(Leftovers { bridges, veths, chains, every_tagged_rule: true })
    }

    /// Removes the veths still there, the rules and chains, then the bridges; what is gone,
    /// one line each (a veth that went with its sandbox too).
    pub fn remove(&self) -> Result<Vec<String>> {
        let mut removed = Vec::new();
        for veth in &self.veths {
            if link_exists(veth) {
                let status =
                    std::process::Command::new("ip").args(["link", "delete", veth]).status();
                if !status.is_ok_and(|s| s.success()) && link_exists(veth) {
                    return Err(other(format!("cannot delete the veth {veth}")));
                }
            }
            removed.push(format!("veth: {veth}"));
        }
        let tables =
            iptables::new(false).map_err(|e| other(format!("cannot run iptables: {e}")))?;
        let names: Vec<String> = self.bridges.iter().chain(&self.chains).cloned().collect();
        removed.extend(
            delete_rules_and_chains(&tables, &names, &self.chains, self.every_tagged_rule)
                .map_err(other)?,
        );
        for bridge in self.bridges.iter().filter(|b| link_exists(b)) {
            let status = std::process::Command::new("ip").args(["link", "delete", bridge]).status();
            if !status.is_ok_and(|s| s.success()) && link_exists(bridge) {
                return Err(other(format!("cannot delete the bridge {bridge}")));
            }
            removed.push(format!("bridge: {bridge}"));
        }
        Ok(removed)
    }
}

/// The IPv4 addresses of an interface, `10.42.0.1/24`; none when it does not exist.
fn bridge_addresses(bridge: &str) -> Vec<String> {
    let output = std::process::Command::new("ip")
        .args(["-o", "-4", "address", "show", "dev", bridge])
        .stderr(std::process::Stdio::null())
        .output();
    let Ok(output) = output else { return Vec::new() };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace().skip_while(|w| *w != "inet");
            words.nth(1).map(str::to_string)
        })
        .collect()
}

fn write_sysctl(path: &str, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(|e| other(format!("cannot set {path}: {e}")))
}

/// One node's pod network.
pub struct PodNetwork {
    bridge: String,
    chain: String,
    cidr: Ipv4Net,
    ipam: Mutex<Ipam>,
}

impl PodNetwork {
    /// Makes (or makes right) the bridge and the node's rules for `cidr`. The hostPort chain
    /// starts empty: [`PodNetwork::add_host_ports`] fills it for running sandboxes.
    pub async fn ensure(node: &str, cidr: Ipv4Net) -> Result<PodNetwork> {
        let bridge = bridge_name(node);
        let chain = hostport_chain(node);
        let bridge_addr = format!("{}/{}", gateway(cidr), cidr.prefix_len());
        let exists = std::path::Path::new(&format!("/sys/class/net/{bridge}")).exists();
        let mut commands = Vec::new();
        if !exists {
            commands.push(format!("link add {bridge} type bridge"));
        }
        if bridge_addresses(&bridge) != [bridge_addr.clone()] {
            // A bridge of an earlier CIDR loses its old address.
            commands.push(format!("address flush dev {bridge}"));
            commands.push(format!("address add {bridge_addr} dev {bridge}"));
        }
        commands.push(format!("link set {bridge} up"));
        ip_batch(&commands).await.map_err(|e| {
            other(format!(
                "cannot make the pod network bridge {bridge} (the kubelet needs root): {e}"
            ))
        })?;
        write_sysctl("/proc/sys/net/ipv4/ip_forward", "1")?;
        write_sysctl(&format!("/proc/sys/net/ipv4/conf/{bridge}/route_localnet"), "1")?;
        let rules = node_rules(&bridge, cidr, &chain);
        let (b, c) = (bridge.clone(), chain.clone());
        iptables(move |tables| {
            delete_node_rules(tables, &b, &c)?;
            tables.new_chain("nat", &c).map_err(|e| format!("nat {c}: {e}"))?;
            for (table, builtin, rule) in rules {
                // Ahead of Docker's rules, whose FORWARD chain ends in a drop.
                let added = if table == "filter" {
                    tables.insert(table, builtin, &rule, 1)
                } else {
                    tables.append(table, builtin, &rule)
                };
                added.map_err(|e| format!("{table} {builtin} {rule}: {e}"))?;
            }
            Ok(())
        })
        .await?;
        Ok(PodNetwork { bridge, chain, cidr, ipam: Mutex::new(Ipam::new(cidr)) })
    }

    pub fn cidr(&self) -> Ipv4Net {
        self.cidr
    }

    fn ipam(&self) -> std::sync::MutexGuard<'_, Ipam> {
        self.ipam.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A free address for `owner`.
    pub fn allocate(&self, owner: &str) -> Result<Ipv4Addr> {
        self.ipam()
            .allocate(owner)
            .ok_or_else(|| other(format!("no free address left in the pod CIDR {}", self.cidr)))
    }

    /// Records the address of a sandbox found running.
    pub fn claim(&self, ip: Ipv4Addr, sandbox_id: &str) -> bool {
        self.ipam().claim(ip, sandbox_id)
    }

    pub fn hand_over(&self, from: &str, to: &str) {
        self.ipam().hand_over(from, to);
    }

    /// Frees the address of `owner` (a sandbox id); whether it had one.
    pub fn release(&self, owner: &str) -> bool {
        self.ipam().release(owner).is_some()
    }

    /// Gives a started sandbox (process `pid`) its `eth0` on the bridge with `ip`.
    pub async fn attach(&self, sandbox_id: &str, pid: i64, ip: Ipv4Addr) -> Result<()> {
        let veth = veth_name(sandbox_id);
        let bridge = &self.bridge;
        ip_batch(&[
            format!("link add {veth} type veth peer name eth0 netns {pid}"),
            format!("link set {veth} master {bridge} up"),
            // Hairpin: a pod reaching itself through a Service's cluster IP is DNATed back
            // out of the port it came in on, which a bridge drops unless the port allows it
            // (CNI's bridge plugin sets it the same way, as kubelet's hairpin-veth did).
            format!("link set {veth} type bridge_slave hairpin on"),
        ])
        .await?;
        let prefix = self.cidr.prefix_len();
        ip_batch_in(
            pid,
            &[
                format!("address add {ip}/{prefix} dev eth0"),
                "link set eth0 up".into(),
                "link set lo up".into(),
                format!("route add default via {}", gateway(self.cidr)),
            ],
        )
        .await
    }

    /// Turns hairpin on for the bridge port of a sandbox made by an earlier kubelet (which
    /// may not have); whether its veth is there.
    pub fn ensure_hairpin(&self, sandbox_id: &str) -> Result<bool> {
        let path = format!("/sys/class/net/{}/brport/hairpin_mode", veth_name(sandbox_id));
        if !std::path::Path::new(&path).exists() {
            return Ok(false);
        }
        write_sysctl(&path, "1")?;
        Ok(true)
    }

    /// DNATs each hostPort to the sandbox at `ip`.
    pub async fn add_host_ports(
        &self,
        sandbox_id: &str,
        ip: Ipv4Addr,
        ports: &[HostPort],
    ) -> Result<()> {
        if ports.is_empty() {
            return Ok(());
        }
        let chain = self.chain.clone();
        let tag = sandbox_tag(sandbox_id);
        let rules: Vec<String> = ports
            .iter()
            .map(|p| {
                let protocol = &p.protocol;
                let only = match p.host_ip.as_str() {
                    "" | "0.0.0.0" => String::new(),
                    address => format!("-d {address}/32 "),
                };
                format!(
                    "{only}-p {protocol} -m {protocol} --dport {} -m comment --comment {tag} \
                     -j DNAT --to-destination {ip}:{}",
                    p.host_port, p.container_port
                )
            })
            .collect();
        iptables(move |tables| {
            for rule in rules {
                tables.append("nat", &chain, &rule).map_err(|e| format!("nat {rule}: {e}"))?;
            }
            Ok(())
        })
        .await
    }

    /// Deletes the hostPort rules of a sandbox.
    pub async fn remove_host_ports(&self, sandbox_id: &str) -> Result<()> {
        let chain = self.chain.clone();
        let tag = sandbox_tag(sandbox_id);
        iptables(move |tables| {
            for rule in tables.list("nat", &chain).map_err(|e| e.to_string())? {
                let words: Vec<&str> = rule.split_whitespace().collect();
                if words.first() == Some(&"-A") && words.contains(&tag.as_str()) {
                    let spec = words[2..].join(" ");
                    tables.delete("nat", &chain, &spec).map_err(|e| format!("{spec}: {e}"))?;
                }
            }
            Ok(())
        })
        .await
    }
}

/// Removes `node`'s bridge and iptables rules (a node taken down; tests and benchmarks
/// clean up with it). Its sandboxes should be gone first. Errors are ignored: whatever is
/// not there is already removed.
pub fn remove(node: &str) {
    let bridge = bridge_name(node);
    let chain = hostport_chain(node);
    if let Ok(tables) = iptables::new(false) {
        let _ = delete_node_rules(&tables, &bridge, &chain);
    }
    let _ = std::process::Command::new("ip")
        .args(["link", "delete", &bridge])
        .stderr(std::process::Stdio::null())
        .status();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_kernel_limits() {
        let bridge = bridge_name("a-very-long-node-name.example.com");
        assert!(bridge.len() <= 15 && bridge.starts_with("rkbr"), "{bridge}");
        assert_ne!(bridge_name("node-a"), bridge_name("node-b"));
        let chain = hostport_chain("node-a");
        assert!(chain.len() <= 28, "{chain}");
        assert_eq!(veth_name(&"0123456789abcdef".repeat(4)).len(), 15);
    }

    #[test]
    fn link_names_are_read_from_ip_link() {
        let text = "1686: rkbra0e5521f: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc noqueue \
                    state DOWN mode DEFAULT group default qlen 1000\\    link/ether 00:00:00:00:00:00\n\
                    1690: rkv5902bb52f90b@if2: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 master \
                    rkbra0e5521f state UP\\    link/ether 6a:1f:00:00:00:01\n";
        assert_eq!(parse_link_names(text), ["rkbra0e5521f", "rkv5902bb52f90b"]);
    }

    #[test]
    fn node_rules_name_the_bridge_and_chain() {
        let cidr = crate::net::parse_pod_cidr("10.9.0.0/24").unwrap();
        let rules = node_rules("rkbr00000001", cidr, "RKUBE-HP-00000001");
        assert!(rules.iter().any(|(t, c, r)| *t == "nat"
            && *c == "POSTROUTING"
            && r.starts_with("-s 10.9.0.0/24 ! -o rkbr00000001")));
        // Every rule can be found again by the words the clean-up looks for.
        for (_, _, rule) in &rules {
            assert!(rule
                .split_whitespace()
                .any(|w| w == "rkbr00000001" || w == "RKUBE-HP-00000001"));
        }
    }
}
