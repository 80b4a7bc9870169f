//! The rules written into the real iptables of this machine (root needed, as the proxy
//! needs it), under a chain prefix of the test's own so that nothing else's rules are
//! touched, with a service CIDR routed to the test's own dummy device: a cluster IP with an
//! endpoint on loopback is reached through the rules, one without endpoints refuses at
//! once, a removed Service's chains go, and the clean-up leaves nothing behind.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use rkube_proxy::device;
use rkube_proxy::iptables::{self, Writer};
use rkube_proxy::model::{Endpoint, Protocol, ServicePort, ServicePortName};
use rkube_proxy::rules::{self, RuleConfig};
use rkube_proxy::ruleset::RuleSet;

fn port(name: &str, cluster_ip: Ipv4Addr, endpoints: Vec<Endpoint>) -> ServicePort {
    ServicePort {
        name: ServicePortName { namespace: "test".into(), name: name.into(), port: String::new() },
        protocol: Protocol::Tcp,
        port: 80,
        cluster_ip: Some(cluster_ip),
        node_port: None,
        external_ips: Vec::new(),
        load_balancer_ips: Vec::new(),
        affinity_seconds: None,
        external_local: false,
        internal_local: false,
        endpoints,
    }
}

fn save() -> String {
    let out = Command::new("iptables-save").output().expect("iptables-save");
    assert!(out.status.success(), "iptables-save: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Fails unless `ip route get` sends `addr` to our own dummy device.
fn assert_routed_locally(addr: Ipv4Addr, dev: &str) {
    let out = Command::new("ip").args(["route", "get", &addr.to_string()]).output().unwrap();
    let route = String::from_utf8_lossy(&out.stdout);
    assert!(
        route.contains(&format!("dev {dev}")) && !route.contains(" via "),
        "{addr} is not routed to {dev}: {route}"
    );
}

struct Cleanup(RuleConfig, String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = iptables::cleanup(&self.0);
        let _ = device::remove(&self.1);
    }
}

#[test]
fn rules_are_written_used_and_removed() {
    let id = std::process::id() % 100_000;
    let prefix = format!("RK{id:05}");
    let config = RuleConfig::new(&prefix, None).unwrap();
    let dev = device::device_name(&prefix);
    let _cleanup = Cleanup(config.clone(), dev.clone());
    // A /24 of its own in 10.254.0.0/16, by pid, routed to the test's dummy device.
    let third = (id % 250) as u8;
    let cidr = format!("10.254.{third}.0/24").parse().unwrap();
    device::route_to_dummy(&dev, cidr).expect("dummy device");
    let served = Ipv4Addr::new(10, 254, third, 10);
    let empty = Ipv4Addr::new(10, 254, third, 11);
    assert_routed_locally(served, &dev);
    assert_routed_locally(empty, &dev);

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let backend = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.write_all(b"hello from the endpoint\n");
        }
    });
    let endpoint = Endpoint {
        ip: Ipv4Addr::LOCALHOST,
        port: backend,
        ready: true,
        serving: true,
        terminating: false,
        local: true,
    };
    let ports = vec![port("web", served, vec![endpoint]), port("nobody", empty, Vec::new())];
    let mut writer = Writer::new(config.clone());
    let stats = writer.sync(&rules::render(&config, &ports), false).expect("first sync");
    assert_eq!(stats.stale_chains, 0);
    let saved = save();
    for jump in [
        format!("-A PREROUTING -m comment --comment \"kubernetes service portals\" -j {prefix}-SERVICES"),
        format!("-A OUTPUT -m comment --comment \"kubernetes service portals\" -j {prefix}-SERVICES"),
        format!("-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j {prefix}-POSTROUTING"),
    ] {
        assert!(saved.contains(&jump), "no {jump} in\n{saved}");
    }
    assert!(saved.contains(&format!(
        "-d {served}/32 -p tcp -m comment --comment \"test/web cluster IP\" -m tcp --dport 80 -j {prefix}-SVC-"
    )));
    assert!(saved.contains(&format!("-j DNAT --to-destination 127.0.0.1:{backend}")));
    assert!(saved.contains("\"test/nobody has no endpoints\""));

    // Through the rules to the endpoint.
    let mut stream =
        TcpStream::connect_timeout(&SocketAddr::from((served, 80)), Duration::from_secs(3))
            .expect("connect through the cluster IP");
    stream.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert_eq!(answer, "hello from the endpoint\n");

    // No endpoints: refused at once, not left to time out.
    let started = Instant::now();
    let refused =
        TcpStream::connect_timeout(&SocketAddr::from((empty, 80)), Duration::from_secs(3));
    let error = refused.expect_err("a port without endpoints must refuse");
    assert_eq!(error.kind(), std::io::ErrorKind::ConnectionRefused, "{error}");
    assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());

    // The second Service goes; its rules go with it. A second writer (a restarted proxy)
    // finds what the first one wrote.
    let before: BTreeSet<String> = chains_of(&save(), &prefix);
    let mut restarted = Writer::new(config.clone());
    let stats = restarted.sync(&rules::render(&config, &ports[..1]), false).unwrap();
    assert_eq!(stats.stale_chains, 0, "nobody had no chains of its own");
    let mut with_one = ports[..1].to_vec();
    with_one[0].endpoints.clear();
    let stats = restarted.sync(&rules::render(&config, &with_one), false).unwrap();
    assert_eq!(stats.stale_chains, 2, "web's SVC and SEP chains");
    let after = chains_of(&save(), &prefix);
    assert_eq!(before.difference(&after).count(), 2);
    assert!(!save().contains("nobody has no endpoints"));

    // Clean-up removes every chain and jump.
    let removed = iptables::cleanup(&config).unwrap();
    assert!(removed.iter().any(|r| r.contains("PREROUTING")), "{removed:?}");
    assert!(!save().contains(&prefix), "left behind:\n{}", save());
    assert!(device::remove(&dev).unwrap());
}

/// A listener on loopback answering `text` to each connection (a few at most).
fn serve(text: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.write_all(text.as_bytes());
        }
    });
    port
}

fn ask(ip: Ipv4Addr) -> String {
    let mut stream =
        TcpStream::connect_timeout(&SocketAddr::from((ip, 80)), Duration::from_secs(3))
            .unwrap_or_else(|e| panic!("connect to {ip}:80: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

fn local(port: u16) -> Endpoint {
    Endpoint {
        ip: Ipv4Addr::LOCALHOST,
        port,
        ready: true,
        serving: true,
        terminating: false,
        local: true,
    }
}

/// The packet counter of the first rule of `saved` (`iptables-save -c`) containing `text`.
fn packets(saved: &str, text: &str) -> u64 {
    let line = saved.lines().find(|l| l.contains(text)).unwrap_or_else(|| panic!("no {text}"));
    line.trim_start_matches('[').split(':').next().unwrap().parse().unwrap()
}

#[test]
fn a_partial_sync_rewrites_only_what_changed() {
    let id = std::process::id() % 100_000;
    let prefix = format!("RK{id:05}");
    let config = RuleConfig::new(&prefix, None).unwrap();
    let dev = device::device_name(&prefix);
    let _cleanup = Cleanup(config.clone(), dev.clone());
    let third = (id % 250) as u8;
    device::route_to_dummy(&dev, format!("10.253.{third}.0/24").parse().unwrap()).unwrap();
    let (a, b) = (Ipv4Addr::new(10, 253, third, 10), Ipv4Addr::new(10, 253, third, 11));
    assert_routed_locally(a, &dev);
    assert_routed_locally(b, &dev);
    let (a_port, b_old, b_new) = (serve("a\n"), serve("b old\n"), serve("b new\n"));

    let mut set = RuleSet::new(config.clone());
    set.update(("test".into(), "a".into()), vec![port("a", a, vec![local(a_port)])]);
    set.update(("test".into(), "b".into()), vec![port("b", b, vec![local(b_old)])]);
    let mut writer = Writer::new(config.clone());
    writer.sync(&set.full(), false).expect("full sync");
    set.synced();
    assert_eq!(ask(a), "a\n");
    assert_eq!(ask(b), "b old\n");
    let a_dnat = format!("--to-destination 127.0.0.1:{a_port}");
    let saved = save_counters();
    assert_eq!(packets(&saved, &a_dnat), 1, "{saved}");

    // b's endpoint moves: only b's SVC chain and its new SEP chain are written, its old SEP
    // chain deleted; a's chains (and their counters) and the shared chains stay as they are.
    set.update(("test".into(), "b".into()), vec![port("b", b, vec![local(b_new)])]);
    let partial = set.partial();
    let stats =
        writer.sync_partial(&partial.tables, &partial.deleted, false).expect("partial sync");
    set.synced();
    assert_eq!(
        (stats.chains, stats.stale_chains),
        (2, 1),
        "{stats:?} {:?}",
        partial.tables.chains()
    );
    let saved = save_counters();
    assert_eq!(packets(&saved, &a_dnat), 1, "a's rules were rewritten:\n{saved}");
    assert!(!saved.contains(&format!("127.0.0.1:{b_old}")), "{saved}");
    assert_eq!(ask(b), "b new\n");
    assert_eq!(ask(a), "a\n");

    // Nothing changed: nothing written.
    let partial = set.partial();
    let stats = writer.sync_partial(&partial.tables, &partial.deleted, false).unwrap();
    assert_eq!((stats.chains, stats.stale_chains, stats.restore_bytes), (0, 0, 0));
    // b goes: its chains are deleted and its jump leaves the shared chain.
    set.update(("test".into(), "b".into()), Vec::new());
    let partial = set.partial();
    let stats = writer.sync_partial(&partial.tables, &partial.deleted, false).unwrap();
    assert_eq!(stats.stale_chains, 2, "{stats:?}");
    let saved = save();
    assert!(!saved.contains("test/b"), "{saved}");
    assert_eq!(chains_of(&saved, &prefix).len(), 7 + 2, "the shared chain names and a's two");
}

fn save_counters() -> String {
    let out = Command::new("iptables-save").args(["-c", "-t", "nat"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn chains_of(saved: &str, prefix: &str) -> BTreeSet<String> {
    saved
        .lines()
        .filter_map(|l| l.strip_prefix(':'))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| c.starts_with(prefix))
        .map(String::from)
        .collect()
}

/// SCTP and UDP ports are written as TCP ones are (this machine's kernel has no SCTP, so
/// only the rules are checked, not traffic).
#[test]
fn sctp_and_udp_ports_are_written() {
    let id = std::process::id() % 100_000;
    let prefix = format!("RK{id:05}");
    let config = RuleConfig::new(&prefix, None).unwrap();
    let _cleanup = Cleanup(config.clone(), device::device_name(&prefix));
    let third = (id % 250) as u8;
    let ip = Ipv4Addr::new(10, 252, third, 10);
    let endpoint = Endpoint {
        ip: Ipv4Addr::new(10, 252, third, 20),
        port: 9000,
        ready: true,
        serving: true,
        terminating: false,
        local: true,
    };
    let mut sctp = port("signal", ip, vec![endpoint.clone()]);
    sctp.protocol = Protocol::Sctp;
    let mut udp = port("dns", ip, vec![endpoint]);
    udp.protocol = Protocol::Udp;
    Writer::new(config.clone()).sync(&rules::render(&config, &[sctp, udp]), false).unwrap();
    let saved = save();
    assert!(saved.contains(&format!("-d {ip}/32 -p sctp -m comment --comment \"test/signal cluster IP\" -m sctp --dport 80 -j {prefix}-SVC-")), "{saved}");
    assert!(saved.contains(&format!("-d {ip}/32 -p udp -m comment --comment \"test/dns cluster IP\" -m udp --dport 80 -j {prefix}-SVC-")), "{saved}");
    let dnat = format!("DNAT --to-destination 10.252.{third}.20:9000");
    assert!(
        saved
            .lines()
            .any(|l| l.contains("-p sctp") && l.contains("test/signal") && l.contains(&dnat)),
        "{saved}"
    );
    iptables::cleanup(&config).unwrap();
}
