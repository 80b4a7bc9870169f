//! The DNS server: hickory-server's UDP and TCP listeners (message framing, FORMERR for
//! what does not parse, truncation to 512 bytes or the client's EDNS size with the TC bit)
//! with a handler that answers cluster names from the current [`Zone`] (an ExternalName's
//! CNAME followed to addresses, [`chase`]) and forwards the rest ([`Forwarder`]).

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use hickory_proto::op::{Edns, Message, Metadata, OpCode, ResponseCode};
use hickory_proto::rr::{DNSClass, Record};
use hickory_server::net::runtime::Time;
use hickory_server::net::xfer::Protocol;
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::MessageResponseBuilder;

use super::chase;
use super::forward::Forwarder;
use super::records::{Answer, Zone};

/// The largest UDP answer offered to EDNS clients (the DNS flag day's 1232 is what most
/// resolvers advertise; more is not needed for cluster names).
const MAX_UDP_PAYLOAD: u16 = 4096;

/// How long a TCP connection may sit idle between queries.
const TCP_IDLE: Duration = Duration::from_secs(10);

/// The zone the handler answers from, swapped whole when the cluster changes. Readers hold
/// the lock only to clone the `Arc`, never across an await.
#[derive(Clone)]
pub struct SharedZone(Arc<RwLock<Arc<Zone>>>);

impl SharedZone {
    pub fn new(zone: Zone) -> SharedZone {
        SharedZone(Arc::new(RwLock::new(Arc::new(zone))))
    }

    pub fn get(&self) -> Arc<Zone> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set(&self, zone: Zone) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(zone);
    }
}

/// Answers cluster names from the zone, forwards the others.
pub struct Handler {
    pub zone: SharedZone,
    pub forwarder: Forwarder,
}

/// A running server; dropping it closes its sockets.
pub struct Listening {
    pub addr: SocketAddr,
    _server: hickory_server::Server<Handler>,
}

/// Serves `handler` over UDP and TCP on `addr` (a port 0 takes one free port for both).
pub async fn serve(addr: SocketAddr, handler: Handler) -> std::io::Result<Listening> {
    let tcp = tokio::net::TcpListener::bind(addr).await?;
    let addr = tcp.local_addr()?;
    let udp = tokio::net::UdpSocket::bind(addr).await?;
    let mut server = hickory_server::Server::new(handler);
    server.register_socket(udp);
    server.register_listener(tcp, TCP_IDLE, 64);
    Ok(Listening { addr, _server: server })
}

#[async_trait::async_trait]
impl RequestHandler for Handler {
    async fn handle_request<R: ResponseHandler, T: Time>(
        &self,
        request: &Request,
        mut response: R,
    ) -> ResponseInfo {
        // The response's EDNS states the client's size, which bounds a UDP answer.
        let edns = request.edns.as_ref().map(|asked| {
            let mut edns = Edns::new();
            edns.set_max_payload(asked.max_payload().clamp(512, MAX_UDP_PAYLOAD));
            edns
        });
        let builder = || {
            let mut builder = MessageResponseBuilder::new(&request.queries, None);
            if let Some(edns) = &edns {
                builder.edns(edns);
            }
            builder
        };
        let error = |code: ResponseCode| {
            let mut metadata = Metadata::response_from_request(&request.metadata);
            metadata.response_code = code;
            metadata
        };
        if request.metadata.op_code != OpCode::Query {
            let message = builder().error_msg(&request.metadata, ResponseCode::NotImp);
            return send(&mut response, message, &request.metadata).await;
        }
        let queries = request.queries.queries();
        let [query] = queries else {
            let message = builder().error_msg(&request.metadata, ResponseCode::FormErr);
            return send(&mut response, message, &request.metadata).await;
        };
        let zone = self.zone.get();
        let class = query.query_class();
        let answer = match class {
            DNSClass::IN | DNSClass::ANY => zone.lookup(query.name(), query.query_type()),
            _ => Answer::NotOurs,
        };
        let mut metadata = Metadata::response_from_request(&request.metadata);
        metadata.authoritative = true;
        let soa = [zone.soa()];
        match answer {
            Answer::Found(found) if chase::needs_chase(query.query_type(), found.answers()) => {
                let records: Vec<Record> = found.answers().cloned().collect();
                let tcp = request.protocol() == Protocol::Tcp;
                let chain =
                    chase::chase(&zone, &self.forwarder, records, query.query_type(), tcp).await;
                let authority: &[&Record] = if chain.is_empty() { &soa } else { &[] };
                let message =
                    builder().build(metadata, chain.iter(), [], authority.iter().copied(), []);
                send(&mut response, message, &request.metadata).await
            }
            Answer::Found(found) => {
                let authority: &[&Record] = if found.is_empty() { &soa } else { &[] };
                let message = builder().build(
                    metadata,
                    found.answers(),
                    [],
                    authority.iter().copied(),
                    found.additionals(),
                );
                send(&mut response, message, &request.metadata).await
            }
            Answer::Synthesized(record) => {
                let message = builder().build(metadata, [&*record], [], [], []);
                send(&mut response, message, &request.metadata).await
            }
            Answer::NxDomain => {
                metadata.response_code = ResponseCode::NXDomain;
                let message = builder().build(metadata, [], [], soa, []);
                send(&mut response, message, &request.metadata).await
            }
            Answer::NotOurs => {
                drop(zone);
                let tcp = request.protocol() == Protocol::Tcp;
                match self.forwarder.forward(request.as_slice(), tcp).await {
                    Ok(reply) => {
                        let Message { metadata: got, answers, authorities, additionals, .. } =
                            &reply;
                        let mut metadata = *got;
                        metadata.id = request.metadata.id;
                        let message = builder().build(
                            metadata,
                            answers.iter(),
                            authorities.iter(),
                            [],
                            additionals.iter(),
                        );
                        send(&mut response, message, &request.metadata).await
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, name = %query.name(), "forward failed");
                        let metadata = error(ResponseCode::ServFail);
                        let message = builder().build(metadata, [], [], [], []);
                        send(&mut response, message, &request.metadata).await
                    }
                }
            }
        }
    }
}

async fn send<'a, R: ResponseHandler>(
    response: &mut R,
    message: hickory_server::zone_handler::MessageResponse<
        '_,
        'a,
        impl Iterator<Item = &'a Record> + Send + 'a,
        impl Iterator<Item = &'a Record> + Send + 'a,
        impl Iterator<Item = &'a Record> + Send + 'a,
        impl Iterator<Item = &'a Record> + Send + 'a,
    >,
    request: &Metadata,
) -> ResponseInfo {
    match response.send_response(message).await {
        Ok(info) => info,
        Err(e) => {
            tracing::debug!(error = %e, "DNS answer not sent");
            let mut metadata = Metadata::response_from_request(request);
            metadata.response_code = ResponseCode::ServFail;
            hickory_proto::op::Header { metadata, counts: Default::default() }.into()
        }
    }
}

#[cfg(test)]
mod tests;
