//! A real `rkube server` for system tests: the built binary, started on a free loopback port
//! with its own data dir, driven with stock kubectl, killed when dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rkube_store::testing::free_port;

/// The `rkube` binary: `$RKUBE_BIN`, else next to the test binary's `deps/` directory (where
/// `cargo test --workspace` and nextest build it).
pub fn rkube_binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("RKUBE_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().expect("deps dir");
    let dir = if dir.ends_with("deps") { dir.parent().expect("target dir") } else { dir };
    dir.join("rkube")
}

/// The stock kubectl: `$KUBECTL`, else `/usr/bin/kubectl` (1.32 on the project's machines).
pub fn kubectl_binary() -> PathBuf {
    std::env::var_os("KUBECTL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/kubectl"))
}

/// kubectl's `-o` argument for a JSONPath template.
pub fn jsonpath(path: &str) -> String {
    format!("jsonpath={path}")
}

/// A resource for kube-rs's dynamic objects (`Api::<DynamicObject>::all_with`): group
/// (empty for the core group), version, kind and plural.
pub fn api_resource(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> kube::api::ApiResource {
    let api_version =
        if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    kube::api::ApiResource {
        group: group.into(),
        version: version.into(),
        api_version,
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// A running `rkube server`.
pub struct RkubeServer {
    child: Child,
    pub port: u16,
    pub data_dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub kubectl: PathBuf,
    /// From spawning the process to `/readyz` answering `ok` (polled with kubectl, so an upper
    /// bound by one kubectl run).
    pub ready_after: Duration,
    log: PathBuf,
    extra_args: Vec<String>,
}

impl RkubeServer {
    /// Starts the server with extra arguments and waits (up to 60 s) until `/readyz` answers.
    pub fn start_with(extra_args: &[&str]) -> RkubeServer {
        let extra_args: Vec<String> = extra_args.iter().map(|a| a.to_string()).collect();
        let spawned = Instant::now();
        let deadline = spawned + Duration::from_secs(60);
        // A free port can be taken by another test (or a client's ephemeral port) before the
        // server binds it: then another one, a few times, each on a fresh data dir and log so
        // that an attempt is judged by what it wrote itself.
        let mut attempts = 0;
        let (child, kubeconfig, port, data_dir, log) = loop {
            let data_dir =
                tempfile::Builder::new().prefix("rkube-test-").tempdir().expect("temp dir");
            let log = data_dir.path().join("server.log");
            let port = free_port();
            match launch(data_dir.path(), port, &extra_args, &log, deadline) {
                Ok((child, kubeconfig)) => break (child, kubeconfig, port, data_dir, log),
                Err(out) if out.contains("Address already in use") && attempts < 3 => attempts += 1,
                Err(out) => panic!("rkube server exited:\n{out}"),
            }
        };
        let mut server = RkubeServer {
            child,
            port,
            data_dir,
            kubeconfig,
            kubectl: kubectl_binary(),
            ready_after: Duration::ZERO,
            log,
            extra_args,
        };
        server.wait_ready(deadline);
        server.ready_after = spawned.elapsed();
        server
    }

    /// Stops the server (SIGKILL) and starts it again on the same data dir and port.
    pub fn restart(&mut self) {
        let extra_args = std::mem::take(&mut self.extra_args);
        self.relaunch(extra_args);
    }

    /// [`RkubeServer::restart`], with other extra arguments (which later restarts keep).
    pub fn restart_with(&mut self, extra_args: &[&str]) {
        self.relaunch(extra_args.iter().map(|a| a.to_string()).collect());
    }

    fn relaunch(&mut self, extra_args: Vec<String>) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.extra_args = extra_args;
        let deadline = Instant::now() + Duration::from_secs(60);
        let (child, kubeconfig) =
            launch(self.data_dir.path(), self.port, &self.extra_args, &self.log, deadline)
                .unwrap_or_else(|log| panic!("rkube server exited:\n{log}"));
        self.child = child;
        self.kubeconfig = kubeconfig;
        self.wait_ready(deadline);
    }

    pub fn start() -> RkubeServer {
        Self::start_with(&[])
    }

    /// A kube-rs client of the admin kubeconfig.
    pub async fn kube_client(&self) -> anyhow::Result<kube::Client> {
        use anyhow::Context;
        let kubeconfig = kube::config::Kubeconfig::read_from(&self.kubeconfig)
            .with_context(|| format!("reading {}", self.kubeconfig.display()))?;
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
        Ok(kube::Client::try_from(config)?)
    }

    fn wait_ready(&self, deadline: Instant) {
        loop {
            let out = self.kubectl(&["get", "--raw", "/readyz"]);
            if out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok" {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "rkube server not ready within 60 s: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kills the server (SIGKILL) and waits for it to end.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The last `lines` lines of the server's log (for failure messages).
    pub fn log_tail(&self, lines: usize) -> String {
        let log = self.log();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// What a failed wait needs to be understood: the nodes' conditions and taints, every
    /// pod's phase and node, and the latest events (for failure messages; never fails).
    pub fn cluster_state(&self) -> String {
        let nodes = "jsonpath={range .items[*]}{.metadata.name}: {range .status.conditions[*]}{.type}={.status} {end}taints={.spec.taints}{\"\\n\"}{end}";
        let queries: [&[&str]; 3] = [
            &["get", "nodes", "-o", nodes],
            &["get", "pods", "-A", "-o", "wide"],
            &["get", "events", "-A", "--sort-by=.lastTimestamp"],
        ];
        let mut out = String::new();
        for args in queries {
            let got = self.kubectl(args);
            out += &format!("$ kubectl {}\n{}{}", args.join(" "), stdout_of(&got), stderr_of(&got));
        }
        out
    }

    /// Calls `check` every 250 ms until it says done, returning what it saw last; after
    /// `timeout` fails the test with that, the end of the server's log and the cluster's state.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut check: impl FnMut() -> (bool, String),
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let (done, seen) = check();
            if done {
                return seen;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not within {timeout:?}; last seen:\n{seen}\nserver log:\n{}\ncluster:\n{}",
                self.log_tail(40),
                self.cluster_state()
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The pod `name` in the default namespace as JSON (Null when it does not exist).
    pub fn pod(&self, name: &str) -> serde_json::Value {
        let out = self.kubectl(&["get", "pod", name, "-o", "json"]);
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    /// Waits (up to `secs`) until `check` accepts the pod `name`, failing the test with its
    /// status otherwise; returns the pod.
    pub fn wait_pod(
        &self,
        name: &str,
        secs: u64,
        check: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let mut last = serde_json::Value::Null;
        self.wait_until(&format!("pod {name}"), Duration::from_secs(secs), || {
            last = self.pod(name);
            (check(&last), serde_json::to_string_pretty(&last["status"]).unwrap_or_default())
        });
        last
    }

    /// Applies a CustomResourceDefinition (`manifest`, named `crd_name`, i.e.
    /// `<plural>.<group>`) and waits until it is Established and kubectl finds its resource
    /// through discovery.
    pub fn define_crd(&self, manifest: &str, crd_name: &str) {
        self.ok_stdin(&["apply", "-f", "-"], manifest);
        let crd = format!("crd/{crd_name}");
        self.ok(&["wait", "--for=condition=Established", "--timeout=20s", &crd]);
        self.wait_until(&format!("{crd_name} served"), Duration::from_secs(20), || {
            let out = self.kubectl(&["get", crd_name]);
            (out.status.success(), format!("{}{}", stdout_of(&out), stderr_of(&out)))
        });
    }

    /// Runs kubectl against this server (60 s at most).
    /// kubectl with another kubeconfig: whether it succeeded, its stdout and stderr.
    pub fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
        let mut all = vec!["--kubeconfig", kubeconfig.to_str().expect("UTF-8 path")];
        all.extend_from_slice(args);
        let out = self.kubectl(&all);
        (out.status.success(), stdout_of(&out), stderr_of(&out))
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with(&self.kubectl, args, None)
    }

    /// Runs a given kubectl binary, with `stdin` fed when given (60 s at most).
    pub fn kubectl_with(&self, kubectl: &Path, args: &[&str], stdin: Option<&str>) -> Output {
        run_command(self.kubectl_command(kubectl).args(args), stdin.map(str::as_bytes))
    }

    /// A `kubectl` (this binary) command set up to talk to this server and nothing else: its
    /// kubeconfig, a HOME of its own (kubectl's cache), no in-cluster configuration.
    pub fn kubectl_command(&self, kubectl: &Path) -> Command {
        let mut command = Command::new(kubectl);
        command
            .env("KUBECONFIG", &self.kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env("HOME", self.data_dir.path());
        command
    }

    /// A raw HTTPS request to this server with the admin certificate, by curl with `args`
    /// (method, headers, data): what only the wire shows, bytes as they came.
    pub fn curl(&self, args: &[&str], path: &str) -> Curl {
        self.curl_with(args, path, None)
    }

    /// [`RkubeServer::curl`] sending `body` (JSON) from curl's stdin: bodies of any size.
    pub fn curl_body(&self, args: &[&str], path: &str, body: &[u8]) -> Curl {
        let data = ["-H", "Content-Type: application/json", "--data-binary", "@-"];
        self.curl_with(&[args, &data[..]].concat(), path, Some(body))
    }

    fn curl_with(&self, args: &[&str], path: &str, body: Option<&[u8]>) -> Curl {
        let pki = self.data_dir.path().join("pki");
        let mut command = Command::new("curl");
        command
            .args(["-s", "--max-time", "30", "-D", "/dev/stderr", "-w", "\n%{http_code}"])
            .arg("--cacert")
            .arg(pki.join("ca.crt"))
            .arg("--cert")
            .arg(pki.join("admin.crt"))
            .arg("--key")
            .arg(pki.join("admin.key"))
            .args(args)
            .arg(format!("https://127.0.0.1:{}{path}", self.port));
        let out = run_command(&mut command, body);
        let text = String::from_utf8(out.stdout).expect("a UTF-8 body");
        let (body, code) = text.rsplit_once('\n').expect("curl wrote the status code");
        Curl {
            code: code.parse().unwrap_or(0),
            headers: String::from_utf8_lossy(&out.stderr).into_owned(),
            body: body.to_string(),
        }
    }

    /// kubectl that must succeed; returns its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_with(&self.kubectl, args, None)
    }

    /// kubectl with stdin that must succeed.
    pub fn ok_stdin(&self, args: &[&str], stdin: &str) -> String {
        self.ok_with(&self.kubectl, args, Some(stdin))
    }

    /// A given kubectl binary, with `stdin` fed when given, that must succeed; returns its
    /// stdout. A failure shows kubectl's output and the end of the server's log.
    pub fn ok_with(&self, kubectl: &Path, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.kubectl_with(kubectl, args, stdin);
        assert!(
            out.status.success(),
            "{} {} failed ({}):\n{}\n{}\nserver log:\n{}\ncluster:\n{}",
            kubectl.display(),
            args.join(" "),
            out.status,
            stdout_of(&out),
            stderr_of(&out),
            self.log_tail(40),
            self.cluster_state()
        );
        stdout_of(&out)
    }

    /// kubectl with stdin that must fail; returns its stderr.
    pub fn fails_stdin(&self, args: &[&str], stdin: &str) -> String {
        self.fails_with(args, Some(stdin))
    }

    /// kubectl that must fail; returns its stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        self.fails_with(args, None)
    }

    fn fails_with(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.kubectl_with(&self.kubectl, args, stdin);
        assert!(
            !out.status.success(),
            "kubectl {} succeeded:\n{}",
            args.join(" "),
            stdout_of(&out)
        );
        stderr_of(&out)
    }
}

/// A finished command's stdout, as text.
/// Runs `rkube server` on `data_dir` with `extra_args`, expecting it to refuse to start
/// (within 30 s): what it wrote to stderr.
pub fn refused_start(data_dir: &Path, extra_args: &[&str]) -> String {
    let child = Command::new(rkube_binary())
        .args(["server", "--secure-port", "1", "--data-dir"])
        .arg(data_dir)
        .args(extra_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("rkube");
    let out = wait_with_timeout(child, Duration::from_secs(30));
    assert!(!out.status.success(), "rkube server {extra_args:?} started");
    stderr_of(&out)
}

pub fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A finished command's stderr, as text.
pub fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `command` to its end (60 s at most) and collects its output. `stdin` is fed from a
/// thread when given (else the command gets none), so a command that writes while it reads
/// never blocks on a full pipe.
pub fn run_command(command: &mut Command, stdin: Option<&[u8]>) -> Output {
    let mut child = command
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", command.get_program()));
    if let Some(input) = stdin {
        use std::io::Write;
        let mut pipe = child.stdin.take().expect("stdin");
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    wait_with_timeout(child, Duration::from_secs(60))
}

/// Waits for a child, killing it after `timeout`. Its output is read while it runs, so a
/// child that prints a lot never blocks on a full pipe.
pub fn wait_with_timeout(child: Child, timeout: Duration) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(timeout) {
        Ok(output) => output.expect("collect output"),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            let out = rx.recv().expect("child output").expect("collect output");
            panic!(
                "command timed out after {timeout:?}:\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// What [`RkubeServer::curl`] got: the status code (0 without an answer), the response's
/// header lines and its body.
#[derive(Debug)]
pub struct Curl {
    pub code: u16,
    pub headers: String,
    pub body: String,
}

impl Curl {
    /// The values of the header `name` (case-insensitive), in order.
    pub fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .lines()
            .filter_map(|line| line.split_once(':'))
            .filter(|(n, _)| n.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
            .collect()
    }
}

/// `--scheduler-secure-port` and `--controller-manager-secure-port` on free ports, each unless
/// `extra_args` has it.
fn health_ports(extra_args: &[String]) -> Vec<String> {
    ["--scheduler-secure-port", "--controller-manager-secure-port"]
        .into_iter()
        .filter(|flag| !extra_args.iter().any(|a| a == flag))
        .flat_map(|flag| [flag.to_string(), free_port().to_string()])
        .collect()
}

/// Starts `rkube server` and waits for its `export KUBECONFIG=` line.
fn launch(
    data_dir: &Path,
    port: u16,
    extra_args: &[String],
    log: &Path,
    deadline: Instant,
) -> Result<(Child, PathBuf), String> {
    let log_file =
        std::fs::OpenOptions::new().create(true).append(true).open(log).expect("log file");
    let binary = rkube_binary();
    assert!(binary.exists(), "no rkube binary at {} (build the workspace first)", binary.display());
    let mut child = Command::new(&binary)
        .arg("server")
        .arg("--data-dir")
        .arg(data_dir)
        // Loopback only, unless the test binds elsewhere (pods reaching the API server).
        .args(match extra_args.iter().any(|a| a == "--bind-address") {
            true => &[][..],
            false => &["--bind-address", "127.0.0.1"][..],
        })
        .args(["--secure-port", &port.to_string()])
        // The components' /healthz on ports of their own, unless the test names them, so
        // that servers running side by side do not answer for each other.
        .args(health_ports(extra_args))
        .args(extra_args)
        // Only the tests that ask for a node (with --node-name) get a kubelet on Docker, and
        // only those that name chains of their own (--iptables-chain-prefix) a service
        // proxy: servers running side by side must not write each other's chains.
        .args(
            match (
                extra_args.iter().any(|a| a == "--node-name"),
                extra_args.iter().any(|a| a == "--iptables-chain-prefix"),
            ) {
                (true, true) => &[][..],
                (true, false) => &["--disable", "proxy"][..],
                (false, _) => &["--disable", "kubelet,proxy"][..],
            },
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log_file)
        .spawn()
        .expect("start rkube server");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    loop {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            if let Some(path) = line.strip_prefix("export KUBECONFIG=") {
                return Ok((child, PathBuf::from(path)));
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{status}\n{}", std::fs::read_to_string(log).unwrap_or_default()));
        }
        assert!(Instant::now() < deadline, "rkube server did not print its kubeconfig within 60 s");
    }
}

impl Drop for RkubeServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
