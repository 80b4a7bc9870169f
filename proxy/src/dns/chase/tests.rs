//! The chase against a zone of its own; forwarding to a resolver is checked on the wire in
//! the server's tests.

use std::sync::Arc;
use std::time::Duration;

use hickory_proto::rr::{Name, RData, Record, RecordType};
use k8s_openapi::api::core::v1::{Namespace, Service};
use serde_json::json;

use super::{chase, needs_chase, MAX_CNAMES};
use crate::dns::forward::Forwarder;
use crate::dns::records::{Answer, Zone, ZoneConfig};

fn external(name: &str, target: &str) -> serde_json::Value {
    json!({"metadata": {"name": name, "namespace": "default"},
           "spec": {"type": "ExternalName", "externalName": target}})
}

/// `web` (ClusterIP), ExternalNames to it directly and through another, to a missing name,
/// to a name outside the zone, in a loop, and a chain longer than the limit.
fn zone() -> Zone {
    let mut services = vec![
        json!({"metadata": {"name": "web", "namespace": "default"},
               "spec": {"clusterIP": "10.43.0.20", "ports": [{"port": 80}]}}),
        external("alias", "web.default.svc.cluster.local"),
        external("alias2", "alias.default.svc.cluster.local"),
        external("missing", "nope.default.svc.cluster.local"),
        external("outside", "www.example.org"),
        external("loop1", "loop2.default.svc.cluster.local"),
        external("loop2", "loop1.default.svc.cluster.local"),
    ];
    for i in 0..=MAX_CNAMES {
        services.push(external(
            &format!("long{i}"),
            &format!("long{}.default.svc.cluster.local", i + 1),
        ));
    }
    services.push(
        json!({"metadata": {"name": format!("long{}", MAX_CNAMES + 1), "namespace": "default"},
                         "spec": {"clusterIP": "10.43.0.21"}}),
    );
    let services: Vec<Arc<Service>> =
        services.into_iter().map(|v| Arc::new(serde_json::from_value(v).unwrap())).collect();
    let namespaces: Vec<Arc<Namespace>> =
        vec![Arc::new(serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap())];
    let config = ZoneConfig { domain: Name::from_ascii("cluster.local.").unwrap(), dns_ip: None };
    Zone::build(&config, &services, &[], &namespaces)
}

/// The chain for `<service>.default.svc.cluster.local` as `owner TYPE data` lines.
async fn chain_of(zone: &Zone, service: &str, qtype: RecordType) -> Vec<String> {
    let name = Name::from_ascii(format!("{service}.default.svc.cluster.local.")).unwrap();
    let Answer::Found(found) = zone.lookup(&(&name).into(), qtype) else { panic!("{service}") };
    assert!(needs_chase(qtype, found.answers()), "{service} {qtype}");
    let records: Vec<Record> = found.answers().cloned().collect();
    let none = Forwarder::new(Vec::new(), Duration::from_millis(100));
    let chain = chase(zone, &none, records, qtype, false).await;
    chain.iter().map(|r| format!("{} {} {}", r.name, r.record_type(), r.data)).collect()
}

#[tokio::test]
async fn cluster_targets_are_followed_to_their_addresses() {
    let zone = zone();
    assert_eq!(
        chain_of(&zone, "alias", RecordType::A).await,
        [
            "alias.default.svc.cluster.local. CNAME web.default.svc.cluster.local.",
            "web.default.svc.cluster.local. A 10.43.0.20",
        ]
    );
    assert_eq!(
        chain_of(&zone, "alias2", RecordType::A).await,
        [
            "alias2.default.svc.cluster.local. CNAME alias.default.svc.cluster.local.",
            "alias.default.svc.cluster.local. CNAME web.default.svc.cluster.local.",
            "web.default.svc.cluster.local. A 10.43.0.20",
        ]
    );
}

#[tokio::test]
async fn chains_that_cannot_be_completed_give_nothing() {
    let zone = zone();
    // No IPv6 address, no such Service, no resolver for a name outside, a loop, too long.
    assert!(chain_of(&zone, "alias", RecordType::AAAA).await.is_empty());
    assert!(chain_of(&zone, "missing", RecordType::A).await.is_empty());
    assert!(chain_of(&zone, "outside", RecordType::A).await.is_empty());
    assert!(chain_of(&zone, "loop1", RecordType::A).await.is_empty());
    assert!(chain_of(&zone, "long0", RecordType::A).await.is_empty());
    // One link fewer than the limit is followed.
    assert_eq!(chain_of(&zone, "long1", RecordType::A).await.len(), MAX_CNAMES + 1);
}

#[test]
fn only_address_questions_are_chased() {
    let zone = zone();
    let name = Name::from_ascii("alias.default.svc.cluster.local.").unwrap();
    for (qtype, chased) in [
        (RecordType::A, true),
        (RecordType::AAAA, true),
        (RecordType::CNAME, false),
        (RecordType::TXT, false),
    ] {
        let Answer::Found(found) = zone.lookup(&(&name).into(), qtype) else { panic!() };
        assert_eq!(needs_chase(qtype, found.answers()), chased, "{qtype}");
        assert!(matches!(found.answers().next().map(|r| &r.data), Some(RData::CNAME(_))));
    }
}
