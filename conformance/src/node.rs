//! A real node for system tests: `rkube server` with its local kubelet on this machine's
//! Docker engine, a busybox image made locally (no registry), and the network-safety checks
//! every test runs before it connects to a pod.

use std::net::IpAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cluster::RkubeServer;

/// The image the tests run: Debian's static busybox in an otherwise empty root filesystem.
pub const BUSYBOX: &str = "busybox:1.36";

fn docker(args: &[&str]) -> std::process::Output {
    Command::new("docker").args(args).output().expect("run the docker CLI")
}

/// An image with more tools than busybox has: this machine's `curl` (Debian's busybox
/// `wget` cannot do TLS) and `socat` (its `nc` has no UDP), with the shared libraries they
/// load.
pub const TOOLS: &str = "rkube-test-tools:1";

/// Makes `busybox:1.36` with `docker import` unless it is there.
pub fn ensure_busybox_image() {
    ensure_image(BUSYBOX, &[]);
}

/// Makes [`TOOLS`] unless it is there.
pub fn ensure_tools_image() {
    ensure_image(TOOLS, &["/usr/bin/curl", "/usr/bin/socat"]);
}

/// Makes `tag` from [`BUSYBOX`] with Dockerfile-style `changes` (`ENTRYPOINT [...]`,
/// `CMD [...]`, `USER 1000`) unless it is there.
pub fn ensure_busybox_variant(tag: &str, changes: &[&str]) {
    ensure_busybox_image();
    if docker(&["image", "inspect", tag]).status.success() {
        return;
    }
    let created = docker(&["create", BUSYBOX, "true"]);
    assert!(created.status.success(), "docker create: {created:?}");
    let id = String::from_utf8_lossy(&created.stdout).trim().to_string();
    let mut args = vec!["commit"];
    for change in changes {
        args.extend(["--change", change]);
    }
    args.extend([id.as_str(), tag]);
    let committed = docker(&args);
    let _ = docker(&["rm", &id]);
    assert!(committed.status.success(), "docker commit {tag}: {committed:?}");
}

/// Makes `tag` unless it is there: Debian's static busybox with its applets, a passwd and
/// group file, and `binaries` of this machine with every library `ldd` says they load, at
/// the same paths.
pub fn ensure_image(tag: &str, binaries: &[&str]) {
    if docker(&["image", "inspect", tag]).status.success() {
        return;
    }
    let root = tempfile::Builder::new().prefix("rkube-image-").tempdir().expect("temp dir");
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin dir");
    std::fs::copy("/bin/busybox", bin.join("busybox")).expect("Debian's static busybox");
    // One link per applet, next to the binary.
    let applets = Command::new("/bin/busybox").arg("--list").output().expect("busybox --list");
    assert!(applets.status.success(), "busybox --list failed");
    for applet in String::from_utf8_lossy(&applets.stdout).lines().filter(|a| *a != "busybox") {
        std::os::unix::fs::symlink("busybox", bin.join(applet)).expect("applet link");
    }
    for dir in ["tmp", "etc", "root", "var/www"] {
        std::fs::create_dir_all(root.path().join(dir)).expect("dir");
    }
    std::fs::write(
        root.path().join("etc/passwd"),
        "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n",
    )
    .expect("passwd");
    std::fs::write(root.path().join("etc/group"), "root:x:0:\nnogroup:x:65534:\n").expect("group");
    std::fs::write(root.path().join("var/www/index.html"), "hello from busybox\n").expect("index");
    for binary in binaries {
        let ldd = Command::new("ldd").arg(binary).output().expect("ldd");
        assert!(ldd.status.success(), "ldd {binary}");
        let libraries = String::from_utf8_lossy(&ldd.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().find(|w| w.starts_with('/')).map(String::from))
            .collect::<Vec<_>>();
        for file in libraries.iter().map(String::as_str).chain([*binary]) {
            let target = root.path().join(file.trim_start_matches('/'));
            std::fs::create_dir_all(target.parent().expect("dir")).expect("lib dir");
            // The file itself, not a link to it.
            std::fs::copy(file, &target).unwrap_or_else(|e| panic!("copy {file}: {e}"));
        }
    }
    let tar =
        Command::new("tar").arg("-C").arg(root.path()).args(["-c", "."]).output().expect("tar");
    assert!(tar.status.success());
    let mut import = Command::new("docker")
        .args(["import", "--change", "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin", "-", tag])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("docker import");
    use std::io::Write;
    import.stdin.take().expect("stdin").write_all(&tar.stdout).expect("send the rootfs");
    assert!(import.wait().expect("docker import").success(), "docker import failed");
}

/// Fails the test unless the route to `ip` stays on this machine (a local bridge, dummy or
/// loopback device, no gateway): tests never send traffic anywhere else.
pub fn assert_route_is_local(ip: &str) {
    let addr: IpAddr = ip.parse().unwrap_or_else(|_| panic!("not an IP address: {ip:?}"));
    let out = Command::new("ip")
        .args(["route", "get", &addr.to_string()])
        .output()
        .expect("ip route get");
    let route = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "ip route get {ip} failed");
    let local = route.starts_with("local ")
        || (!route.contains(" via ")
            && (route.contains(" dev rkbr")
                // A service proxy's own device (`kube-svc`, `rk12345-svc`).
                || (route.contains(" dev rk") && route.contains("-svc "))
                || route.contains(" dev kube-svc ")
                || route.contains(" dev docker")
                || route.contains(" dev lo")));
    assert!(local, "refusing to connect to {ip}: its route is not local ({})", route.trim());
}

/// Two pods for exec: `shell` sleeps; `waiting` never starts (its image is absent, pull
/// policy Never).
pub const EXEC_PODS: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: shell}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: waiting}
spec:
  containers:
  - {name: app, image: "busybox:not-here", imagePullPolicy: Never}
"#;

/// Two pods for attach: `counter` prints `tick-N` every 0.3 s; `reader` (restartPolicy Never,
/// stdin once) reads one line and prints `got-<line>`.
pub const ATTACH_PODS: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: counter}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "i=0; while true; do echo tick-$i; i=$((i+1)); sleep 0.3; done"]}
---
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  restartPolicy: Never
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, stdin: true, stdinOnce: true, command: ["sh", "-c", "read line; echo got-$line"]}
"#;

/// `rkube kubelet --runtime simulated --nodes N` against a server: N nodes in one process
/// that run pods without containers (Running and Ready at once). Killed when dropped.
pub struct SimulatedNodes {
    pub child: std::process::Child,
    /// The kubelets' log (stderr).
    pub log: std::path::PathBuf,
}

impl SimulatedNodes {
    /// Starts `count` simulated nodes (`sim-000`, ...) with `extra` kubelet flags; returns at
    /// once (wait for the nodes to turn Ready where it matters).
    pub fn start(server: &RkubeServer, count: usize, extra: &[&str]) -> SimulatedNodes {
        let root = server.data_dir.path().join("sim");
        let log = server.data_dir.path().join("sim.log");
        let log_file = std::fs::File::create(&log).expect("simulated nodes' log");
        let child = Command::new(crate::cluster::rkube_binary())
            .args(["kubelet", "--runtime", "simulated", "--nodes", &count.to_string()])
            .arg("--kubeconfig")
            .arg(&server.kubeconfig)
            .arg("--root-dir")
            .arg(&root)
            // See NodeServer: a nearly full disk must not taint the nodes.
            .args(["--eviction-hard", "memory.available<100Mi,nodefs.available<100Mi"])
            .args(extra)
            .stdout(std::process::Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("start the simulated nodes");
        SimulatedNodes { child, log }
    }

    /// Waits until all `count` simulated nodes are Ready.
    pub fn wait_ready(&self, server: &RkubeServer, count: usize, timeout: Duration) {
        let path = "jsonpath={range .items[*]}{.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}";
        server.wait_until("simulated nodes Ready", timeout, || {
            let out = server.ok(&["get", "nodes", "-o", path]);
            (out.lines().filter(|l| *l == "True").count() == count, out)
        });
    }
}

impl Drop for SimulatedNodes {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The metrics page of a service proxy serving `/metrics` on 127.0.0.1:`port` (empty when it
/// does not answer).
pub fn proxy_metrics(port: u16) -> String {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n");
    let mut text = String::new();
    let _ = stream.read_to_string(&mut text);
    text
}

/// One unlabelled sample of a metrics page.
pub fn metric_sample(page: &str, name: &str) -> Option<f64> {
    let line = page.lines().find(|l| l.split_whitespace().next() == Some(name))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A server with a local node, and everything its kubelet made removed when dropped.
pub struct NodeServer {
    pub server: RkubeServer,
    pub node: String,
    /// The chain prefix of the node's service proxy, when it runs one.
    pub proxy_prefix: Option<String>,
    /// The loopback port of the proxy's `/metrics`, when it runs one.
    pub proxy_metrics_port: Option<u16>,
}

impl NodeServer {
    /// `rkube server` with its kubelet on Docker, as node `rkube-test-<port>` with a pod CIDR
    /// no other running test has. Waits (60 s at most) until the node is Ready.
    pub fn start() -> NodeServer {
        Self::start_with(&[])
    }

    pub fn start_with(extra: &[&str]) -> NodeServer {
        Self::start_node(extra, false)
    }

    /// [`NodeServer::start_with`], with the node's service proxy: its chains named with a
    /// prefix (`RK` and five digits) and its service CIDR (a /24 in 10.250.0.0/13) that no
    /// other running test has, so that proxies side by side keep to their own. Its rules,
    /// chains and device are removed when dropped.
    pub fn start_with_proxy(extra: &[&str]) -> NodeServer {
        Self::start_node(extra, true)
    }

    fn start_node(extra: &[&str], proxy: bool) -> NodeServer {
        ensure_busybox_image();
        // The kubelet's free port can be taken before it binds it: then other ports.
        for _ in 0..3 {
            let this = Self::start_once(extra, proxy);
            if !this.server.log().contains("for the kubelet API") {
                this.wait_ready(Duration::from_secs(60));
                return this;
            }
        }
        panic!("the kubelet found no free port in 3 tries");
    }

    fn start_once(extra: &[&str], proxy: bool) -> NodeServer {
        let kubelet_port = rkube_store::testing::free_port();
        let node = format!("rkube-test-{kubelet_port}");
        // Free ports are unique among running tests, so the CIDR is too.
        let cidr = format!("10.{}.{}.0/24", 200 + (kubelet_port / 256) % 50, kubelet_port % 256);
        let port = kubelet_port.to_string();
        // The tests share their machine's disk with the build, which may leave only a few GB
        // free: a share-of-disk threshold (10%, even 1% of a large disk) would taint the node
        // with disk-pressure, as upstream's kubelet would, and no pod would be scheduled.
        let mut args = vec![
            "--node-name",
            &node,
            "--kubelet-port",
            &port,
            "--pod-cidr",
            &cidr,
            "--eviction-hard",
            "memory.available<100Mi,nodefs.available<100Mi",
        ];
        let prefix = format!("RK{:05}", kubelet_port as u32 % 100_000);
        let service_cidr =
            format!("10.{}.{}.0/24", 250 + (kubelet_port / 256) % 5, kubelet_port % 256);
        let metrics_port = rkube_store::testing::free_port();
        let metrics = format!("--metrics-bind-address=127.0.0.1:{metrics_port}");
        if proxy {
            args.extend_from_slice(&[
                "--iptables-chain-prefix",
                &prefix,
                "--service-cluster-ip-range",
                &service_cidr,
                "--iptables-min-sync-period",
                "100ms",
                &metrics,
            ]);
        }
        // The node's cluster DNS (with the proxy) forwards names outside the cluster to the
        // resolvers of `--resolv-conf`: unless the test names its own (on loopback), none,
        // so that no pod's lookup leaves the machine.
        let no_resolvers = std::env::temp_dir().join("rkube-test-no-resolvers.conf");
        let no_resolvers = no_resolvers.to_string_lossy().to_string();
        if proxy && !extra.contains(&"--resolv-conf") {
            std::fs::write(&no_resolvers, "# no nameservers: tests reach no resolver outside\n")
                .expect("write the tests' resolv.conf");
            args.extend_from_slice(&["--resolv-conf", &no_resolvers]);
        }
        args.extend_from_slice(extra);
        let server = RkubeServer::start_with(&args);
        NodeServer {
            server,
            node,
            proxy_prefix: proxy.then_some(prefix),
            proxy_metrics_port: proxy.then_some(metrics_port),
        }
    }

    fn wait_ready(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let path = "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}";
        loop {
            let out = self.server.kubectl(&["get", "node", &self.node, "-o", path]);
            if String::from_utf8_lossy(&out.stdout).trim() == "True" {
                return;
            }
            assert!(Instant::now() < deadline, "node not Ready in time: {}", self.server.log());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// One unlabelled sample of the proxy's metrics (None without a proxy or that sample).
    pub fn proxy_metric(&self, name: &str) -> Option<f64> {
        let port = self.proxy_metrics_port?;
        // Another process may have had the port first: then it is not this proxy's.
        assert!(!self.server.log().contains("no proxy metrics"), "{}", self.server.log());
        metric_sample(&proxy_metrics(port), name)
    }

    /// Polls a jsonpath of an object until `check` accepts it (at most `timeout`).
    pub fn wait_for(
        &self,
        args: &[&str],
        timeout: Duration,
        check: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let out = self.server.kubectl(args);
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            if out.status.success() && check(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting on `kubectl {}`: last output {text:?}\n{}\ncluster:\n{}",
                args.join(" "),
                self.server.log(),
                self.server.cluster_state()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The first address of the node's pod CIDR (its pod bridge's, where its cluster DNS
    /// listens), checked local.
    pub fn gateway(&self) -> std::net::Ipv4Addr {
        let cidr = self.server.ok(&["get", "node", &self.node, "-o", "jsonpath={.spec.podCIDR}"]);
        let network: std::net::Ipv4Addr =
            cidr.trim().split('/').next().and_then(|n| n.parse().ok()).expect("a pod CIDR");
        let gateway = std::net::Ipv4Addr::from(u32::from(network) + 1);
        assert_route_is_local(&gateway.to_string());
        gateway
    }

    /// The node's InternalIP, checked local.
    pub fn internal_ip(&self) -> String {
        let path = "jsonpath={.status.addresses[?(@.type==\"InternalIP\")].address}";
        let ip = self.server.ok(&["get", "node", &self.node, "-o", path]).trim().to_string();
        assert_route_is_local(&ip);
        ip
    }

    /// The ids of the Docker containers the kubelet made for a pod (by uid).
    pub fn containers_of(&self, uid: &str) -> Vec<String> {
        let out = docker(&[
            "ps",
            "-a",
            "-q",
            "--no-trunc",
            "--filter",
            &format!("label=io.rkube.node={}", self.node),
            "--filter",
            &format!("label=io.kubernetes.pod.uid={uid}"),
        ]);
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
    }
}

impl Drop for NodeServer {
    fn drop(&mut self) {
        // The kubelet first, so it cannot make containers while they are removed.
        self.server.kill();
        let out =
            docker(&["ps", "-a", "-q", "--filter", &format!("label=io.rkube.node={}", self.node)]);
        let ids: Vec<String> =
            String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
        if !ids.is_empty() {
            let mut args = vec!["rm", "-f", "-v"];
            args.extend(ids.iter().map(String::as_str));
            let _ = docker(&args);
        }
        rkube_kubelet::runtime::podnet::remove(&self.node);
        if let Some(prefix) = &self.proxy_prefix {
            let _ = Command::new(crate::cluster::rkube_binary())
                .args(["proxy", "--cleanup", "--iptables-chain-prefix", prefix])
                .output();
        }
    }
}
