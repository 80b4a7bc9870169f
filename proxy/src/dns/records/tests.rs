use std::sync::Arc;

use hickory_proto::rr::{LowerName, Name, RData, RecordType};
use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::json;

use super::{Answer, Zone, ZoneConfig, TTL};

fn service(v: serde_json::Value) -> Arc<Service> {
    Arc::new(serde_json::from_value(v).unwrap())
}

fn slice(v: serde_json::Value) -> Arc<EndpointSlice> {
    Arc::new(serde_json::from_value(v).unwrap())
}

fn namespace(name: &str) -> Arc<Namespace> {
    Arc::new(serde_json::from_value(json!({"metadata": {"name": name}})).unwrap())
}

fn config() -> ZoneConfig {
    ZoneConfig {
        domain: Name::from_ascii("cluster.local.").unwrap(),
        dns_ip: Some("10.43.0.10".parse().unwrap()),
    }
}

/// A cluster with a ClusterIP Service (two endpoints), a headless one with StatefulSet
/// hostnames (one not ready), one publishing not-ready addresses, an ExternalName one, and
/// a dual-stack one.
fn zone() -> Zone {
    let services = vec![
        service(json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"clusterIP": "10.43.0.20", "clusterIPs": ["10.43.0.20"],
                     "ports": [{"name": "http", "port": 80, "protocol": "TCP"},
                               {"port": 8443, "protocol": "TCP"}]}})),
        service(json!({"metadata": {"name": "nginx", "namespace": "apps"},
            "spec": {"clusterIP": "None", "ports": [{"name": "web", "port": 80, "protocol": "TCP"}]}})),
        service(json!({"metadata": {"name": "eager", "namespace": "apps"},
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": true}})),
        service(json!({"metadata": {"name": "empty", "namespace": "apps"},
            "spec": {"clusterIP": "None"}})),
        service(json!({"metadata": {"name": "db", "namespace": "apps"},
            "spec": {"type": "ExternalName", "externalName": "db.example.com"}})),
        service(json!({"metadata": {"name": "dual", "namespace": "apps"},
            "spec": {"clusterIP": "10.43.0.30", "clusterIPs": ["10.43.0.30", "fd00::30"],
                     "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]}})),
        // A namespace that does not exist is not served (as CoreDNS).
        service(json!({"metadata": {"name": "ghost", "namespace": "gone"},
            "spec": {"clusterIP": "10.43.0.40"}})),
    ];
    let slices = vec![
        slice(json!({"metadata": {"name": "web-a", "namespace": "default",
                "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.42.0.5"], "conditions": {"ready": true}},
                          {"addresses": ["10.42.0.6"], "conditions": {"ready": true}}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})),
        slice(json!({"metadata": {"name": "nginx-a", "namespace": "apps",
                "labels": {"kubernetes.io/service-name": "nginx"}},
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.42.0.7"], "hostname": "web-0", "conditions": {"ready": true}},
                {"addresses": ["10.42.0.8"], "hostname": "web-1", "conditions": {}},
                {"addresses": ["10.42.0.9"], "hostname": "web-2", "conditions": {"ready": false}}],
            "ports": [{"name": "web", "port": 8080, "protocol": "TCP"}]})),
        slice(json!({"metadata": {"name": "eager-a", "namespace": "apps",
                "labels": {"kubernetes.io/service-name": "eager"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.42.0.11"], "conditions": {"ready": false}}]})),
    ];
    let namespaces = vec![namespace("default"), namespace("apps"), namespace("kube-system")];
    Zone::build(&config(), &services, &slices, &namespaces)
}

fn name(n: &str) -> LowerName {
    LowerName::from(Name::from_ascii(n).unwrap())
}

/// The answer's records as text (`type data`), sorted.
fn records(zone: &Zone, n: &str, qtype: RecordType) -> Vec<String> {
    match zone.lookup(&name(n), qtype) {
        Answer::Found(found) => {
            let mut got: Vec<String> = found
                .answers()
                .map(|r| {
                    assert_eq!(r.ttl, TTL);
                    format!("{} {}", r.record_type(), r.data)
                })
                .collect();
            got.sort();
            got
        }
        Answer::Synthesized(r) => vec![format!("{} {}", r.record_type(), r.data)],
        other => panic!("{n} {qtype}: {other:?}"),
    }
}

fn is_nxdomain(zone: &Zone, n: &str) -> bool {
    matches!(zone.lookup(&name(n), RecordType::A), Answer::NxDomain)
}

#[test]
fn cluster_ip_services_resolve_to_their_cluster_ips_case_insensitively() {
    let zone = zone();
    assert_eq!(records(&zone, "web.default.svc.cluster.local.", RecordType::A), ["A 10.43.0.20"]);
    assert_eq!(records(&zone, "WEB.Default.SVC.cluster.local.", RecordType::A), ["A 10.43.0.20"]);
    // NODATA: the name exists, not the type.
    assert!(records(&zone, "web.default.svc.cluster.local.", RecordType::AAAA).is_empty());
    assert_eq!(records(&zone, "dual.apps.svc.cluster.local.", RecordType::A), ["A 10.43.0.30"]);
    assert_eq!(records(&zone, "dual.apps.svc.cluster.local.", RecordType::AAAA), ["AAAA fd00::30"]);
}

#[test]
fn srv_records_for_named_ports_with_the_targets_addresses() {
    let zone = zone();
    let srv = records(&zone, "_http._tcp.web.default.svc.cluster.local.", RecordType::SRV);
    assert_eq!(srv, ["SRV 0 100 80 web.default.svc.cluster.local."]);
    let Answer::Found(found) =
        zone.lookup(&name("_http._tcp.web.default.svc.cluster.local."), RecordType::SRV)
    else {
        panic!()
    };
    let additionals = found.additionals();
    assert_eq!(additionals.len(), 1);
    assert_eq!(additionals[0].data.to_string(), "10.43.0.20");
    // The protocol must match; the Service's own name gives every port.
    assert!(is_nxdomain(&zone, "_http._udp.web.default.svc.cluster.local."));
    let all = records(&zone, "web.default.svc.cluster.local.", RecordType::SRV);
    assert_eq!(
        all,
        [
            "SRV 0 100 80 web.default.svc.cluster.local.",
            "SRV 0 100 8443 web.default.svc.cluster.local."
        ]
    );
    // Headless: one per ready endpoint, to its hostname, with the endpoint's port.
    let srv = records(&zone, "_web._tcp.nginx.apps.svc.cluster.local.", RecordType::SRV);
    assert_eq!(
        srv,
        [
            "SRV 0 50 8080 web-0.nginx.apps.svc.cluster.local.",
            "SRV 0 50 8080 web-1.nginx.apps.svc.cluster.local."
        ]
    );
}

#[test]
fn headless_services_resolve_to_ready_endpoints_and_their_hostnames() {
    let zone = zone();
    let a = records(&zone, "nginx.apps.svc.cluster.local.", RecordType::A);
    // web-2 is not ready; web-1's unknown readiness counts as ready.
    assert_eq!(a, ["A 10.42.0.7", "A 10.42.0.8"]);
    assert_eq!(
        records(&zone, "web-0.nginx.apps.svc.cluster.local.", RecordType::A),
        ["A 10.42.0.7"]
    );
    assert!(is_nxdomain(&zone, "web-2.nginx.apps.svc.cluster.local."));
    // publishNotReadyAddresses: not-ready endpoints too, named by their address.
    assert_eq!(records(&zone, "eager.apps.svc.cluster.local.", RecordType::A), ["A 10.42.0.11"]);
    assert_eq!(
        records(&zone, "10-42-0-11.eager.apps.svc.cluster.local.", RecordType::A),
        ["A 10.42.0.11"]
    );
    // A headless Service without endpoints has no records: NXDOMAIN, as CoreDNS.
    assert!(is_nxdomain(&zone, "empty.apps.svc.cluster.local."));
    // Endpoints of a ClusterIP Service have names too.
    assert_eq!(
        records(&zone, "10-42-0-5.web.default.svc.cluster.local.", RecordType::A),
        ["A 10.42.0.5"]
    );
}

#[test]
fn external_names_are_cnames_for_any_type() {
    let zone = zone();
    let want = ["CNAME db.example.com."];
    assert_eq!(records(&zone, "db.apps.svc.cluster.local.", RecordType::A), want);
    assert_eq!(records(&zone, "db.apps.svc.cluster.local.", RecordType::AAAA), want);
    assert_eq!(records(&zone, "db.apps.svc.cluster.local.", RecordType::CNAME), want);
}

#[test]
fn pod_names_in_existing_namespaces() {
    let zone = zone();
    assert_eq!(
        records(&zone, "10-42-0-99.default.pod.cluster.local.", RecordType::A),
        ["A 10.42.0.99"]
    );
    assert_eq!(
        records(&zone, "fd00--5.apps.pod.cluster.local.", RecordType::AAAA),
        ["AAAA fd00::5"]
    );
    assert!(records(&zone, "10-42-0-99.default.pod.cluster.local.", RecordType::AAAA).is_empty());
    assert!(is_nxdomain(&zone, "10-42-0-99.gone.pod.cluster.local."));
    assert!(is_nxdomain(&zone, "not-an-ip.default.pod.cluster.local."));
    // The namespace level exists (NODATA), as does the pod and svc level.
    for existing in ["default.pod.cluster.local.", "apps.svc.cluster.local.", "svc.cluster.local."]
    {
        assert!(records(&zone, existing, RecordType::A).is_empty(), "{existing}");
    }
}

#[test]
fn ptr_for_cluster_ips_and_headless_endpoints_only() {
    let zone = zone();
    assert_eq!(
        records(&zone, "20.0.43.10.in-addr.arpa.", RecordType::PTR),
        ["PTR web.default.svc.cluster.local."]
    );
    assert_eq!(
        records(&zone, "7.0.42.10.in-addr.arpa.", RecordType::PTR),
        ["PTR web-0.nginx.apps.svc.cluster.local."]
    );
    // Other reverse names fall through to the upstream resolvers.
    assert!(matches!(
        zone.lookup(&name("5.0.42.10.in-addr.arpa."), RecordType::PTR),
        Answer::NotOurs
    ));
}

#[test]
fn unknown_cluster_names_are_nxdomain_and_others_not_ours() {
    let zone = zone();
    for unknown in [
        "nope.default.svc.cluster.local.",
        "web.nope.svc.cluster.local.",
        // The search path of a pod in `default` asking for `web.apps`.
        "web.apps.default.svc.cluster.local.",
        "ghost.gone.svc.cluster.local.",
        "a.b.c.d.web.default.svc.cluster.local.",
        "foo.cluster.local.",
    ] {
        assert!(is_nxdomain(&zone, unknown), "{unknown}");
    }
    assert!(matches!(zone.lookup(&name("example.com."), RecordType::A), Answer::NotOurs));
    assert!(matches!(zone.lookup(&name("cluster.local.com."), RecordType::A), Answer::NotOurs));
}

#[test]
fn the_apex_has_soa_ns_and_the_schema_version() {
    let zone = zone();
    let soa = records(&zone, "cluster.local.", RecordType::SOA);
    assert_eq!(soa.len(), 1);
    let RData::SOA(data) = &zone.soa().data else { panic!() };
    assert_eq!(data.mname.to_string(), "ns.dns.cluster.local.");
    assert_eq!(data.rname.to_string(), "hostmaster.cluster.local.");
    assert_eq!((data.refresh, data.retry, data.expire, data.minimum), (7200, 1800, 86400, TTL));
    assert_eq!(records(&zone, "cluster.local.", RecordType::NS), ["NS ns.dns.cluster.local."]);
    assert_eq!(records(&zone, "ns.dns.cluster.local.", RecordType::A), ["A 10.43.0.10"]);
    assert_eq!(records(&zone, "dns-version.cluster.local.", RecordType::TXT), ["TXT 1.1.0"]);
}
