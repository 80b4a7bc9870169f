//! Forwarding of names outside the cluster zone to the node's resolvers, as CoreDNS's
//! `forward . /etc/resolv.conf`: the query goes out as the client sent it (over UDP, or TCP
//! when the client used TCP), to each resolver in turn within one deadline, and the reply
//! comes back parsed for the server to send on. Concurrent forwards are bounded (CoreDNS's
//! `max_concurrent`): past the bound, or when no resolver answers in time, the client gets
//! SERVFAIL at once rather than a hang.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hickory_proto::op::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};
use tokio::sync::Semaphore;
use tokio::time::Instant;

/// The most forwarded queries in flight at once (CoreDNS's Corefile uses 1000); each holds
/// a reply buffer of up to 64 KiB.
pub const MAX_CONCURRENT: usize = 512;

/// Why a forwarded query got no reply.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("no upstream resolvers")]
    NoUpstreams,
    #[error("too many forwarded queries in flight")]
    Busy,
    #[error("no upstream resolver answered within {0:?}")]
    Timeout(Duration),
    #[error("upstream {upstream}: {error}")]
    Io { upstream: SocketAddr, error: std::io::Error },
    #[error("upstream {upstream} sent a malformed reply: {message}")]
    Malformed { upstream: SocketAddr, message: String },
}

/// The node's resolvers, read once from a resolv.conf.
#[derive(Clone, Debug)]
pub struct Forwarder {
    upstreams: Vec<SocketAddr>,
    timeout: Duration,
    in_flight: Arc<Semaphore>,
}

/// The `nameserver` lines of a resolv.conf, as addresses on port 53, leaving out those in
/// `exclude` (the cluster DNS itself: forwarding to it would loop).
pub fn parse_resolv_conf(text: &str, exclude: &[IpAddr]) -> Vec<SocketAddr> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("nameserver")).then(|| words.next()).flatten()
        })
        // A link-local IPv6 resolver's zone (`fe80::1%eth0`) is not kept.
        .filter_map(|addr| addr.split('%').next()?.parse::<IpAddr>().ok())
        .filter(|ip| !exclude.contains(ip))
        .map(|ip| SocketAddr::new(ip, 53))
        .collect()
}

impl Forwarder {
    /// To `upstreams`, each query within `timeout` in all.
    pub fn new(upstreams: Vec<SocketAddr>, timeout: Duration) -> Forwarder {
        Forwarder { upstreams, timeout, in_flight: Arc::new(Semaphore::new(MAX_CONCURRENT)) }
    }

    /// To the resolvers of the resolv.conf at `path` (none when it cannot be read: every
    /// forwarded query then fails, and the caller says so).
    pub fn from_resolv_conf(
        path: &Path,
        exclude: &[IpAddr],
        timeout: Duration,
    ) -> std::io::Result<Forwarder> {
        let text = std::fs::read_to_string(path)?;
        Ok(Forwarder::new(parse_resolv_conf(&text, exclude), timeout))
    }

    pub fn upstreams(&self) -> &[SocketAddr] {
        &self.upstreams
    }

    /// Sends `query` (a whole DNS message) to the resolvers in turn until one answers, over
    /// TCP when `tcp`, and returns its reply.
    pub async fn forward(&self, query: &[u8], tcp: bool) -> Result<Message, ForwardError> {
        if self.upstreams.is_empty() {
            return Err(ForwardError::NoUpstreams);
        }
        let _permit = self.in_flight.try_acquire().map_err(|_| ForwardError::Busy)?;
        let deadline = Instant::now() + self.timeout;
        // Each resolver gets its share of the deadline, so that a dead first one leaves
        // time for the others.
        let share = self.timeout / self.upstreams.len() as u32;
        let mut last = ForwardError::Timeout(self.timeout);
        for upstream in &self.upstreams {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let until = deadline.min(now + share);
            let attempt = async {
                let reply = match tcp {
                    true => exchange_tcp(*upstream, query).await,
                    false => exchange_udp(*upstream, query).await,
                };
                reply.map_err(|error| ForwardError::Io { upstream: *upstream, error })
            };
            match tokio::time::timeout_at(until, attempt).await {
                Ok(Ok(bytes)) => {
                    return Message::from_vec(&bytes).map_err(|e| ForwardError::Malformed {
                        upstream: *upstream,
                        message: e.to_string(),
                    })
                }
                Ok(Err(e)) => last = e,
                Err(_) => last = ForwardError::Timeout(self.timeout),
            }
        }
        Err(last)
    }
}

async fn exchange_udp(upstream: SocketAddr, query: &[u8]) -> std::io::Result<Vec<u8>> {
    let local: SocketAddr = match upstream {
        SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(local).await?;
    // Connected: replies from anywhere else are dropped by the kernel.
    socket.connect(upstream).await?;
    socket.send(query).await?;
    let mut buffer = vec![0u8; 65535];
    loop {
        let n = socket.recv(&mut buffer).await?;
        // A reply to another query (a late one of an earlier id) is not ours.
        if n >= 2 && query.len() >= 2 && buffer[..2] == query[..2] {
            buffer.truncate(n);
            return Ok(buffer);
        }
    }
}

async fn exchange_tcp(upstream: SocketAddr, query: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut stream = TcpStream::connect(upstream).await?;
    let length = u16::try_from(query.len())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "query too long"))?;
    let mut framed = Vec::with_capacity(query.len() + 2);
    framed.extend_from_slice(&length.to_be_bytes());
    framed.extend_from_slice(query);
    stream.write_all(&framed).await?;
    let length = stream.read_u16().await?;
    let mut reply = vec![0u8; usize::from(length)];
    stream.read_exact(&mut reply).await?;
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nameservers_and_leaves_out_the_cluster_dns() {
        let text = "# comment\nsearch example.com\nnameserver 10.0.0.2\nnameserver  fe80::1%eth0\n\
                    nameserver 10.43.0.10\noptions ndots:2\nnameserver bogus\n";
        let exclude = ["10.43.0.10".parse().unwrap()];
        let got = parse_resolv_conf(text, &exclude);
        assert_eq!(
            got,
            vec!["10.0.0.2:53".parse::<SocketAddr>().unwrap(), "[fe80::1]:53".parse().unwrap()]
        );
    }

    #[tokio::test]
    async fn fails_fast_without_resolvers_and_times_out_on_silent_ones() {
        let none = Forwarder::new(Vec::new(), Duration::from_secs(2));
        assert!(matches!(none.forward(&[0; 12], false).await, Err(ForwardError::NoUpstreams)));
        // A bound socket that never answers.
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let forwarder =
            Forwarder::new(vec![silent.local_addr().unwrap()], Duration::from_millis(200));
        let started = std::time::Instant::now();
        let result = forwarder.forward(&[0; 12], false).await;
        assert!(matches!(result, Err(ForwardError::Timeout(_))), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
