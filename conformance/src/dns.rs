//! DNS from the test process: questions over UDP and TCP to a server on a local address
//! (blocking, with a timeout), and [`Upstream`], a tiny resolver of the test's own on
//! loopback for the cluster DNS to forward to (tests never reach a resolver outside).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, Record, RecordType};

/// How long a question may wait for its answer.
pub const TIMEOUT: Duration = Duration::from_secs(3);

/// A query for `name` (absolute, with or without the final dot) of type `qtype`, with
/// recursion desired as stub resolvers ask, and EDNS with `edns` bytes when given.
pub fn query(id: u16, name: &str, qtype: RecordType, edns: Option<u16>) -> Vec<u8> {
    let mut message = Message::new(id, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    let mut name = Name::from_ascii(name).expect("a DNS name");
    name.set_fqdn(true);
    message.add_query(Query::query(name, qtype));
    if let Some(size) = edns {
        let mut e = Edns::new();
        e.set_max_payload(size);
        message.set_edns(e);
    }
    message.to_vec().expect("encode a query")
}

/// Sends `bytes` over UDP to `server` and returns the reply (and its size).
pub fn exchange_udp(server: SocketAddr, bytes: &[u8]) -> std::io::Result<(usize, Message)> {
    let local: SocketAddr =
        if server.is_ipv4() { "0.0.0.0:0".parse() } else { "[::]:0".parse() }.expect("addr");
    let socket = UdpSocket::bind(local)?;
    socket.set_read_timeout(Some(TIMEOUT))?;
    socket.connect(server)?;
    socket.send(bytes)?;
    let mut buffer = vec![0; 65535];
    let n = socket.recv(&mut buffer)?;
    let message = Message::from_vec(&buffer[..n])
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
    Ok((n, message))
}

/// Sends `bytes` over TCP (length-prefixed) to `server` and returns the reply.
pub fn exchange_tcp(server: SocketAddr, bytes: &[u8]) -> std::io::Result<Message> {
    let mut stream = TcpStream::connect_timeout(&server, TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    let mut framed = (bytes.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(bytes);
    stream.write_all(&framed)?;
    let mut length = [0; 2];
    stream.read_exact(&mut length)?;
    let mut reply = vec![0; usize::from(u16::from_be_bytes(length))];
    stream.read_exact(&mut reply)?;
    Message::from_vec(&reply)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))
}

/// One question over UDP.
pub fn ask(server: SocketAddr, name: &str, qtype: RecordType) -> std::io::Result<Message> {
    exchange_udp(server, &query(0x5151, name, qtype, None)).map(|(_, m)| m)
}

/// One question over TCP.
pub fn ask_tcp(server: SocketAddr, name: &str, qtype: RecordType) -> std::io::Result<Message> {
    exchange_tcp(server, &query(0x5152, name, qtype, None))
}

/// The answer section's data as text (`A 10.0.0.1`, `SRV 0 100 80 x.`), sorted.
pub fn answers(message: &Message) -> Vec<String> {
    let mut got: Vec<String> =
        message.answers.iter().map(|r| format!("{} {}", r.record_type(), r.data)).collect();
    got.sort();
    got
}

/// A resolver of the test's own on `ip` port 53 (UDP and TCP): every A question gets
/// `answer`, TTL 60. Stopped when dropped.
pub struct Upstream {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

fn reply(bytes: &[u8], answer: IpAddr) -> Option<Vec<u8>> {
    let query = Message::from_vec(bytes).ok()?;
    let mut reply = Message::new(query.metadata.id, MessageType::Response, OpCode::Query);
    reply.metadata.recursion_desired = query.metadata.recursion_desired;
    reply.metadata.recursion_available = true;
    for q in &query.queries {
        reply.add_query(q.clone());
        let data = match (q.query_type(), answer) {
            (RecordType::A, IpAddr::V4(v4)) => RData::A(v4.into()),
            _ => continue,
        };
        reply.answers.push(Record::from_rdata(q.name().clone(), 60, data));
    }
    reply.to_vec().ok()
}

impl Upstream {
    /// Serves on `ip`:53 (a loopback address of the test's own).
    pub fn start(ip: IpAddr, answer: IpAddr) -> std::io::Result<Upstream> {
        let addr = SocketAddr::new(ip, 53);
        let udp = UdpSocket::bind(addr)?;
        let tcp = TcpListener::bind(addr)?;
        udp.set_read_timeout(Some(Duration::from_millis(100)))?;
        tcp.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let udp_stop = stop.clone();
        let udp_thread = std::thread::spawn(move || {
            let mut buffer = vec![0; 65535];
            while !udp_stop.load(Ordering::SeqCst) {
                if let Ok((n, from)) = udp.recv_from(&mut buffer) {
                    if let Some(r) = reply(&buffer[..n], answer) {
                        let _ = udp.send_to(&r, from);
                    }
                }
            }
        });
        let tcp_stop = stop.clone();
        let tcp_thread = std::thread::spawn(move || {
            while !tcp_stop.load(Ordering::SeqCst) {
                let Ok((mut stream, _)) = tcp.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                let _ = stream.set_nonblocking(false);
                let _ = stream.set_read_timeout(Some(TIMEOUT));
                let mut length = [0; 2];
                if stream.read_exact(&mut length).is_err() {
                    continue;
                }
                let mut q = vec![0; usize::from(u16::from_be_bytes(length))];
                if stream.read_exact(&mut q).is_err() {
                    continue;
                }
                if let Some(r) = reply(&q, answer) {
                    let mut framed = (r.len() as u16).to_be_bytes().to_vec();
                    framed.extend_from_slice(&r);
                    let _ = stream.write_all(&framed);
                }
            }
        });
        Ok(Upstream { addr, stop, threads: vec![udp_thread, tcp_thread] })
    }

    /// Stops answering and closes the sockets.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop();
    }
}
