//! A real etcd for tests and benchmarks: Debian's `etcd-server` started on free loopback
//! ports with a temporary data dir, killed when dropped.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running etcd, stopped (and its data dir removed) on drop.
pub struct EtcdServer {
    child: Child,
    client_url: String,
    _data_dir: tempfile::TempDir,
}

/// The etcd binary: `$RKUBE_ETCD_BIN`, else `etcd` on the `PATH`.
pub fn etcd_binary() -> PathBuf {
    std::env::var_os("RKUBE_ETCD_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("etcd"))
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free loopback port")
}

impl EtcdServer {
    /// Starts etcd and waits (up to 20 s) until it serves. Panics with a hint when the binary
    /// is missing: the test command installs it (`apt-get install etcd-server`).
    pub fn start() -> EtcdServer {
        let mut last_error = String::new();
        for _attempt in 0..3 {
            match Self::try_start() {
                Ok(server) => return server,
                Err(e) => last_error = e,
            }
        }
        panic!("could not start etcd: {last_error}");
    }

    fn try_start() -> Result<EtcdServer, String> {
        let data_dir = tempfile::Builder::new()
            .prefix("rkube-etcd-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let (client, peer) = (free_port(), free_port());
        let client_url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let mut child = Command::new(etcd_binary())
            .arg("--name=rkube-test")
            .arg(format!("--data-dir={}", data_dir.path().display()))
            .arg(format!("--listen-client-urls={client_url}"))
            .arg(format!("--advertise-client-urls={client_url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=rkube-test={peer_url}"))
            .arg("--initial-cluster-state=new")
            // rkube stores values up to 3 MiB (etcd's default limit is 1.5 MiB).
            .arg("--max-request-bytes=4194304")
            .arg("--log-level=error")
            .env("ETCD_UNSUPPORTED_ARCH", std::env::consts::ARCH)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot run {}: {e} (install it with `apt-get install etcd-server`, or set \
                     RKUBE_ETCD_BIN)",
                    etcd_binary().display()
                )
            })?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                let mut stderr = String::new();
                if let Some(mut pipe) = child.stderr.take() {
                    use std::io::Read;
                    let _ = pipe.read_to_string(&mut stderr);
                }
                return Err(format!("etcd exited with {status}: {stderr}"));
            }
            if health_ok(client) {
                // Nobody reads etcd's stderr from here on: stop it blocking on a full pipe.
                drop(child.stderr.take());
                return Ok(EtcdServer { child, client_url, _data_dir: data_dir });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        Err("etcd did not become healthy within 20 s".into())
    }

    /// The client URL, `http://127.0.0.1:PORT`.
    pub fn client_url(&self) -> &str {
        &self.client_url
    }
}

/// `GET /health` on etcd's client port answers `{"health":"true"}` once it serves.
fn health_ok(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut conn) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(1)));
    if conn.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = conn.read_to_string(&mut response);
    response.contains("\"health\":\"true\"")
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
