//! Following an ExternalName Service's CNAME to addresses, as CoreDNS's `kubernetes` plugin
//! does for A and AAAA questions: stub resolvers (glibc, musl) do not ask again for a CNAME's
//! target, so an answer of the CNAME alone leaves a pod with no address.
//!
//! A target in the cluster zone is looked up in the zone (it may be another ExternalName: up
//! to [`MAX_CNAMES`] links, a loop ends the chase); one outside it is asked of the node's
//! resolvers through the [`Forwarder`], and their answer section follows the CNAME whatever
//! its code. A chain that cannot be completed (a cluster target with no address of the type
//! asked, no resolver answering) gives no records at all, as CoreDNS answers: NODATA rather
//! than a CNAME the client cannot use.

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{LowerName, Name, RData, Record, RecordType};

use super::forward::Forwarder;
use super::records::{Answer, Zone};

/// The most CNAMEs one answer follows (CoreDNS's limit).
pub const MAX_CNAMES: usize = 8;

/// Whether an answer of type `qtype` made of `records` has a CNAME to follow.
pub fn needs_chase<'r>(qtype: RecordType, mut records: impl Iterator<Item = &'r Record>) -> bool {
    matches!(qtype, RecordType::A | RecordType::AAAA)
        && records.any(|r| r.record_type() == RecordType::CNAME)
}

/// The CNAME chain from `records` (the question's own answer) to the addresses of type
/// `qtype` it ends in, or nothing when it cannot be completed. `tcp`: forward over TCP.
pub async fn chase(
    zone: &Zone,
    forwarder: &Forwarder,
    records: Vec<Record>,
    qtype: RecordType,
    tcp: bool,
) -> Vec<Record> {
    let mut chain: Vec<Record> = Vec::new();
    let mut current = records;
    // One turn per link, and one more to take the addresses the last link leads to.
    for _ in 0..=MAX_CNAMES {
        let Some(link) = current.iter().find(|r| r.record_type() == RecordType::CNAME).cloned()
        else {
            chain.extend(current);
            return chain;
        };
        let RData::CNAME(target) = &link.data else { return Vec::new() };
        let target: Name = target.0.clone();
        // A target already in the chain (or the name itself) is a loop.
        if chain.iter().chain([&link]).any(|r| r.name == target) {
            return Vec::new();
        }
        chain.push(link);
        match zone.lookup(&LowerName::from(&target), qtype) {
            Answer::Found(found) => {
                current = found.answers().cloned().collect();
                if current.is_empty() {
                    return Vec::new();
                }
            }
            Answer::Synthesized(record) => current = vec![*record],
            Answer::NxDomain => return Vec::new(),
            Answer::NotOurs => {
                return match forward(forwarder, target, qtype, tcp).await {
                    Some(answers) => {
                        chain.extend(answers);
                        chain
                    }
                    None => Vec::new(),
                };
            }
        }
    }
    Vec::new()
}

/// The answer section the node's resolvers give for `name` (None when none answers).
async fn forward(
    forwarder: &Forwarder,
    name: Name,
    qtype: RecordType,
    tcp: bool,
) -> Option<Vec<Record>> {
    let mut message = Message::new(rand::random(), MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(name.clone(), qtype));
    let bytes = message.to_vec().ok()?;
    match forwarder.forward(&bytes, tcp).await {
        Ok(reply) => Some(reply.answers),
        Err(e) => {
            tracing::debug!(error = %e, %name, "a CNAME's target was not resolved");
            None
        }
    }
}

#[cfg(test)]
mod tests;
