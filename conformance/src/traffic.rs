//! Traffic to a Service from the test process on the node: one TCP connection or UDP
//! datagram at a time, each answered by the endpoint's name (the pods run `socat ...
//! SYSTEM:hostname`), and a bounded poll for what takes the proxy a moment to follow.
//! Callers check every address with [`crate::node::assert_route_is_local`] first.

use std::io::Read;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

/// The name a TCP endpoint answers with, through `addr` (None when nothing answers in 2 s).
pub fn ask_tcp(addr: SocketAddr) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer.trim().to_string()).filter(|a| !a.is_empty())
}

/// The names `count` TCP connections through `addr` reach.
pub fn spread(addr: SocketAddr, count: usize) -> Vec<String> {
    (0..count).filter_map(|_| ask_tcp(addr)).collect()
}

/// The name a UDP endpoint answers with to a datagram from `socket` (whose read timeout
/// bounds the wait).
pub fn ask_udp(socket: &UdpSocket, addr: SocketAddr) -> Option<String> {
    socket.send_to(b"who\n", addr).ok()?;
    let mut buffer = [0u8; 256];
    let (n, _) = socket.recv_from(&mut buffer).ok()?;
    Some(String::from_utf8_lossy(&buffer[..n]).trim().to_string())
}

/// Polls `check` every 200 ms until it holds (at most `timeout`).
pub fn eventually(timeout: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
