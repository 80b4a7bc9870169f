//! The server on the wire: real UDP and TCP sockets on loopback.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hickory_proto::op::{Edns, Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

use super::{serve, Handler, Listening, SharedZone};
use crate::dns::forward::Forwarder;
use crate::dns::records::{Zone, ZoneConfig};

/// A zone with `web` (ClusterIP), `big` (headless, 60 endpoints: more than 512 bytes) and
/// `db` (ExternalName of a name outside the cluster).
fn zone() -> Zone {
    let services: Vec<Arc<Service>> = vec![
        json!({"metadata": {"name": "web", "namespace": "default"},
               "spec": {"clusterIP": "10.43.0.20", "ports": [{"name": "http", "port": 80}]}}),
        json!({"metadata": {"name": "big", "namespace": "default"}, "spec": {"clusterIP": "None"}}),
        json!({"metadata": {"name": "db", "namespace": "default"},
               "spec": {"type": "ExternalName", "externalName": "db.example.org"}}),
    ]
    .into_iter()
    .map(|v| Arc::new(serde_json::from_value(v).unwrap()))
    .collect();
    let endpoints: Vec<_> = (1..=60)
        .map(|i| json!({"addresses": [format!("10.42.1.{i}")], "conditions": {"ready": true}}))
        .collect();
    let slices: Vec<Arc<EndpointSlice>> = vec![Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": "big-a", "namespace": "default",
                         "labels": {"kubernetes.io/service-name": "big"}},
            "addressType": "IPv4", "endpoints": endpoints}))
        .unwrap(),
    )];
    let namespaces: Vec<Arc<Namespace>> =
        vec![Arc::new(serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap())];
    let config = ZoneConfig { domain: Name::from_ascii("cluster.local.").unwrap(), dns_ip: None };
    Zone::build(&config, &services, &slices, &namespaces)
}

async fn server(upstreams: Vec<SocketAddr>, timeout: Duration) -> Listening {
    let handler =
        Handler { zone: SharedZone::new(zone()), forwarder: Forwarder::new(upstreams, timeout) };
    serve("127.0.0.1:0".parse().unwrap(), handler).await.unwrap()
}

fn query(name: &str, qtype: RecordType, edns: Option<u16>) -> Vec<u8> {
    let mut message = Message::new(4242, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(Name::from_ascii(name).unwrap(), qtype));
    if let Some(size) = edns {
        let mut e = Edns::new();
        e.set_max_payload(size);
        message.set_edns(e);
    }
    message.to_vec().unwrap()
}

async fn udp(addr: SocketAddr, bytes: &[u8]) -> (usize, Message) {
    let socket = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    socket.send_to(bytes, addr).await.unwrap();
    let mut buffer = vec![0; 65535];
    let n = tokio::time::timeout(Duration::from_secs(5), socket.recv(&mut buffer))
        .await
        .expect("an answer within 5s")
        .unwrap();
    (n, Message::from_vec(&buffer[..n]).unwrap())
}

async fn tcp(addr: SocketAddr, bytes: &[u8]) -> Message {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut framed = (bytes.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(bytes);
    stream.write_all(&framed).await.unwrap();
    let length = stream.read_u16().await.unwrap();
    let mut reply = vec![0; usize::from(length)];
    stream.read_exact(&mut reply).await.unwrap();
    Message::from_vec(&reply).unwrap()
}

#[tokio::test]
async fn answers_cluster_names_over_udp_and_tcp_authoritatively() {
    let server = server(Vec::new(), Duration::from_secs(2)).await;
    let q = query("web.default.svc.cluster.local.", RecordType::A, None);
    for reply in [udp(server.addr, &q).await.1, tcp(server.addr, &q).await] {
        assert_eq!(reply.metadata.id, 4242);
        assert_eq!(reply.metadata.response_code, ResponseCode::NoError);
        assert!(reply.metadata.authoritative);
        assert!(reply.metadata.recursion_desired);
        assert_eq!(reply.answers.len(), 1);
        assert_eq!(reply.answers[0].data, RData::A("10.43.0.20".parse().unwrap()));
        assert_eq!(reply.answers[0].ttl, 5);
    }
    // NXDOMAIN and NODATA carry the zone's SOA in the authority section.
    let (_, nx) =
        udp(server.addr, &query("nope.default.svc.cluster.local.", RecordType::A, None)).await;
    assert_eq!(nx.metadata.response_code, ResponseCode::NXDomain);
    assert!(nx.answers.is_empty());
    assert_eq!(nx.authorities.len(), 1);
    assert_eq!(nx.authorities[0].record_type(), RecordType::SOA);
    assert_eq!(nx.authorities[0].name.to_string(), "cluster.local.");
    let (_, nodata) =
        udp(server.addr, &query("web.default.svc.cluster.local.", RecordType::AAAA, None)).await;
    assert_eq!(nodata.metadata.response_code, ResponseCode::NoError);
    assert!(nodata.answers.is_empty());
    assert_eq!(nodata.authorities[0].record_type(), RecordType::SOA);
    // SRV with the target's address as an additional record.
    let (_, srv) = udp(
        server.addr,
        &query("_http._tcp.web.default.svc.cluster.local.", RecordType::SRV, None),
    )
    .await;
    assert_eq!(srv.answers.len(), 1);
    assert_eq!(srv.additionals.len(), 1);
}

#[tokio::test]
async fn udp_answers_past_512_bytes_or_the_edns_size_are_truncated_tcp_ones_are_not() {
    let server = server(Vec::new(), Duration::from_secs(2)).await;
    let q = query("big.default.svc.cluster.local.", RecordType::A, None);
    let (n, truncated) = udp(server.addr, &q).await;
    assert!(truncated.metadata.truncation, "60 addresses do not fit 512 bytes");
    assert!(n <= 512, "{n} bytes");
    assert!(truncated.answers.len() < 60);
    // A client announcing 4096 bytes with EDNS gets them all.
    let (n, whole) =
        udp(server.addr, &query("big.default.svc.cluster.local.", RecordType::A, Some(4096))).await;
    assert!(!whole.metadata.truncation);
    assert_eq!(whole.answers.len(), 60, "{n} bytes");
    assert!(whole.edns.is_some(), "EDNS is answered with EDNS");
    let over_tcp = tcp(server.addr, &q).await;
    assert!(!over_tcp.metadata.truncation);
    assert_eq!(over_tcp.answers.len(), 60);
}

#[tokio::test]
async fn malformed_queries_get_formerr_and_other_opcodes_notimp() {
    let server = server(Vec::new(), Duration::from_secs(2)).await;
    // A header announcing one question, then garbage.
    let mut garbage = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    garbage.extend_from_slice(&[0xff; 7]);
    let (_, reply) = udp(server.addr, &garbage).await;
    assert_eq!(reply.metadata.id, 0x1234);
    assert_eq!(reply.metadata.response_code, ResponseCode::FormErr);
    // Two questions in one query.
    let mut two = Message::new(7, MessageType::Query, OpCode::Query);
    two.add_query(Query::query(Name::from_ascii("a.cluster.local.").unwrap(), RecordType::A));
    two.add_query(Query::query(Name::from_ascii("b.cluster.local.").unwrap(), RecordType::A));
    let (_, reply) = udp(server.addr, &two.to_vec().unwrap()).await;
    assert_eq!(reply.metadata.response_code, ResponseCode::FormErr);
    let mut status = Message::new(8, MessageType::Query, OpCode::Status);
    status.add_query(Query::query(Name::from_ascii("cluster.local.").unwrap(), RecordType::SOA));
    let (_, reply) = udp(server.addr, &status.to_vec().unwrap()).await;
    assert_eq!(reply.metadata.response_code, ResponseCode::NotImp);
    // Still serving.
    let (_, ok) =
        udp(server.addr, &query("web.default.svc.cluster.local.", RecordType::A, None)).await;
    assert_eq!(ok.answers.len(), 1);
}

/// A resolver on loopback answering every A question with 192.0.2.7, over UDP and TCP.
async fn upstream() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    // The UDP port's TCP twin may be another test's: take another pair then (bounded).
    let mut tries = 0;
    let (udp, addr, tcp) = loop {
        let udp = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let addr = udp.local_addr().unwrap();
        match tokio::net::TcpListener::bind(addr).await {
            Ok(tcp) => break (udp, addr, tcp),
            Err(_) if tries < 20 => tries += 1,
            Err(e) => panic!("no UDP and TCP port pair on loopback: {e}"),
        }
    };
    fn reply(bytes: &[u8]) -> Vec<u8> {
        let query = Message::from_vec(bytes).unwrap();
        let mut reply = Message::new(query.metadata.id, MessageType::Response, OpCode::Query);
        reply.metadata.recursion_available = true;
        for q in &query.queries {
            reply.add_query(q.clone());
            let a = RData::A("192.0.2.7".parse().unwrap());
            reply.answers.push(Record::from_rdata(q.name().clone(), 60, a));
        }
        reply.to_vec().unwrap()
    }
    let task = tokio::spawn(async move {
        let mut buffer = vec![0; 65535];
        loop {
            tokio::select! {
                Ok((n, from)) = udp.recv_from(&mut buffer) => {
                    let _ = udp.send_to(&reply(&buffer[..n]), from).await;
                }
                Ok((mut stream, _)) = tcp.accept() => {
                    let length = stream.read_u16().await.unwrap();
                    let mut q = vec![0; usize::from(length)];
                    stream.read_exact(&mut q).await.unwrap();
                    let r = reply(&q);
                    let mut framed = (r.len() as u16).to_be_bytes().to_vec();
                    framed.extend_from_slice(&r);
                    stream.write_all(&framed).await.unwrap();
                }
            }
        }
    });
    (addr, task)
}

#[tokio::test]
async fn other_names_are_forwarded_and_get_servfail_quickly_when_upstream_is_gone() {
    let (addr, task) = upstream().await;
    let server = server(vec![addr], Duration::from_millis(500)).await;
    let q = query("www.example.org.", RecordType::A, None);
    for reply in [udp(server.addr, &q).await.1, tcp(server.addr, &q).await] {
        assert_eq!(reply.metadata.id, 4242);
        assert_eq!(reply.metadata.response_code, ResponseCode::NoError);
        assert!(reply.metadata.recursion_available, "the upstream's flags");
        assert_eq!(reply.answers[0].data, RData::A("192.0.2.7".parse().unwrap()));
        assert_eq!(reply.answers[0].ttl, 60);
    }
    task.abort();
    let _ = task.await;
    let started = Instant::now();
    let (_, failed) = udp(server.addr, &q).await;
    assert_eq!(failed.metadata.response_code, ResponseCode::ServFail);
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
}

#[tokio::test]
async fn an_external_names_target_is_resolved_upstream_and_follows_its_cname() {
    let (addr, task) = upstream().await;
    let server = server(vec![addr], Duration::from_millis(500)).await;
    let q = query("db.default.svc.cluster.local.", RecordType::A, None);
    for reply in [udp(server.addr, &q).await.1, tcp(server.addr, &q).await] {
        assert_eq!(reply.metadata.response_code, ResponseCode::NoError);
        let got: Vec<String> = reply
            .answers
            .iter()
            .map(|r| format!("{} {} {}", r.name, r.record_type(), r.data))
            .collect();
        assert_eq!(
            got,
            ["db.default.svc.cluster.local. CNAME db.example.org.", "db.example.org. A 192.0.2.7"]
        );
    }
    // A CNAME question gets the CNAME alone, whatever the upstream does.
    let (_, cname) =
        udp(server.addr, &query("db.default.svc.cluster.local.", RecordType::CNAME, None)).await;
    assert_eq!(cname.answers.len(), 1);
    // No resolver: the chain cannot be completed, NODATA with the zone's SOA (CoreDNS's).
    task.abort();
    let _ = task.await;
    let (_, nodata) = udp(server.addr, &q).await;
    assert_eq!(nodata.metadata.response_code, ResponseCode::NoError);
    assert!(nodata.answers.is_empty(), "{nodata:?}");
    assert_eq!(nodata.authorities[0].record_type(), RecordType::SOA);
}
