//! Service IP and NodePort allocation, as kube-apiserver v1.33 does it: a ClusterIP is taken
//! by creating the `networking.k8s.io/v1 IPAddress` object named after it (the store's
//! create-if-absent makes two API servers on one etcd never hand out the same IP); a NodePort
//! by creating a key under `/registry/ranges/servicenodeports/`. Both are released when the
//! Service is deleted or stops needing them.

use std::net::Ipv4Addr;

use bytes::Bytes;
use rand::RngExt;
use rkube_store::{Error as StoreError, Store};
use serde_json::{json, Value};

use crate::status::{ApiError, ApiResult, Cause};

/// The service CIDR and NodePort range.
#[derive(Clone, Debug)]
pub struct ServiceRanges {
    pub network: Ipv4Addr,
    pub prefix: u32,
    pub node_ports: (u16, u16),
}

impl ServiceRanges {
    /// Parses `10.43.0.0/16`.
    pub fn parse(cidr: &str, node_ports: (u16, u16)) -> anyhow::Result<ServiceRanges> {
        let (addr, bits) =
            cidr.split_once('/').ok_or_else(|| anyhow::anyhow!("invalid service CIDR {cidr:?}"))?;
        let addr: Ipv4Addr =
            addr.parse().map_err(|_| anyhow::anyhow!("invalid service CIDR {cidr:?}"))?;
        let prefix: u32 =
            bits.parse().map_err(|_| anyhow::anyhow!("invalid service CIDR {cidr:?}"))?;
        anyhow::ensure!(
            (8..=30).contains(&prefix),
            "service CIDR {cidr:?} must have a prefix between /8 and /30"
        );
        let network = Ipv4Addr::from(u32::from(addr) & (u32::MAX << (32 - prefix)));
        Ok(ServiceRanges { network, prefix, node_ports })
    }

    pub fn cidr(&self) -> String {
        format!("{}/{}", self.network, self.prefix)
    }

    /// The first usable address: the `kubernetes` service's.
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network) + 1)
    }

    fn contains(&self, ip: Ipv4Addr) -> bool {
        let mask = u32::MAX << (32 - self.prefix);
        u32::from(ip) & mask == u32::from(self.network)
    }

    fn size(&self) -> u32 {
        1u32 << (32 - self.prefix)
    }
}

/// Allocates and releases what Services hold.
pub struct Allocator {
    pub ranges: ServiceRanges,
}

fn ip_key(ip: &str) -> String {
    format!("/registry/networking.k8s.io/ipaddresses/{ip}")
}

fn port_key(protocol: &str, port: i64) -> String {
    format!("/registry/ranges/servicenodeports/{}/{port}", protocol.to_ascii_lowercase())
}

fn invalid(name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid("", "Service", name, causes)
}

impl Allocator {
    /// Gives a new Service its ClusterIP (the requested one, or a free one) and NodePorts.
    /// On failure, whatever was taken is released again.
    pub async fn allocate(&self, store: &dyn Store, svc: &mut Value) -> ApiResult<()> {
        let name = svc["metadata"]["name"].as_str().unwrap_or("").to_string();
        let kind = svc["spec"]["type"].as_str().unwrap_or("ClusterIP").to_string();
        let mut taken: Vec<String> = Vec::new();
        let result = async {
            if kind != "ExternalName" {
                let requested = svc["spec"]["clusterIP"].as_str().unwrap_or("").to_string();
                if requested != "None" {
                    let ip = self.allocate_ip(store, &name, svc, &requested).await?;
                    taken.push(ip_key(&ip));
                    svc["spec"]["clusterIP"] = json!(ip);
                    svc["spec"]["clusterIPs"] = json!([ip]);
                } else {
                    svc["spec"]["clusterIPs"] = json!(["None"]);
                }
            }
            if matches!(kind.as_str(), "NodePort" | "LoadBalancer") {
                let ports = svc["spec"]["ports"].as_array().cloned().unwrap_or_default();
                let mut assigned = Vec::new();
                for (i, port) in ports.iter().enumerate() {
                    let protocol = port["protocol"].as_str().unwrap_or("TCP").to_string();
                    let node_port = self
                        .allocate_node_port(store, &name, i, &protocol, port["nodePort"].as_i64())
                        .await?;
                    taken.push(port_key(&protocol, node_port));
                    assigned.push(node_port);
                }
                for (i, node_port) in assigned.into_iter().enumerate() {
                    svc["spec"]["ports"][i]["nodePort"] = json!(node_port);
                }
            }
            Ok(())
        }
        .await;
        if result.is_err() {
            for key in taken {
                let _ = store.delete(&key, None).await;
            }
        }
        result
    }

    async fn allocate_ip(
        &self,
        store: &dyn Store,
        name: &str,
        svc: &Value,
        requested: &str,
    ) -> ApiResult<String> {
        let namespace = svc["metadata"]["namespace"].as_str().unwrap_or("");
        let record = |ip: &str| {
            json!({
                "apiVersion": "networking.k8s.io/v1",
                "kind": "IPAddress",
                "metadata": {
                    "name": ip,
                    "uid": uuid::Uuid::new_v4().to_string(),
                    "creationTimestamp": crate::object::now(),
                    "labels": {"ipaddress.kubernetes.io/ip-family": "IPv4", "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"},
                },
                "spec": {"parentRef": {"group": "", "resource": "services", "namespace": namespace, "name": name}},
            })
        };
        if !requested.is_empty() {
            let ip: Ipv4Addr = requested.parse().map_err(|_| {
                invalid(
                    name,
                    vec![Cause::invalid(
                        "spec.clusterIPs[0]",
                        &json!(requested),
                        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                    )],
                )
            })?;
            if !self.ranges.contains(ip) {
                return Err(invalid(name, vec![Cause::invalid(
                    "spec.clusterIPs",
                    &json!([requested]),
                    &format!("failed to allocate IP {requested}: the provided IP ({requested}) is not in the valid range. The range of valid IPs is {}", self.ranges.cidr()),
                )]));
            }
            let body = Bytes::from(serde_json::to_vec(&record(requested)).unwrap_or_default());
            return match store.create(&ip_key(requested), body).await {
                Ok(_) => Ok(requested.to_string()),
                Err(StoreError::AlreadyExists { .. }) => {
                    Err(invalid(
                        name,
                        vec![Cause::invalid(
                    "spec.clusterIPs",
                    &json!([requested]),
                    &format!("failed to allocate IP {requested}: provided IP is already allocated"),
                )],
                    ))
                }
                Err(e) => Err(e.into()),
            };
        }
        // Random probing, then a scan: the range is large and mostly free in practice.
        let size = self.ranges.size();
        let base = u32::from(self.ranges.network);
        let probes: Vec<u32> = {
            let mut rng = rand::rng();
            (0..64).map(|_| rng.random_range(2..size - 1)).collect()
        };
        let candidates = probes.into_iter().chain(2..size - 1);
        for offset in candidates.take(size as usize + 64) {
            let ip = Ipv4Addr::from(base + offset).to_string();
            let body = Bytes::from(serde_json::to_vec(&record(&ip)).unwrap_or_default());
            match store.create(&ip_key(&ip), body).await {
                Ok(_) => return Ok(ip),
                Err(StoreError::AlreadyExists { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::internal(format!(
            "failed to allocate a serviceIP: range is full (service CIDR {})",
            self.ranges.cidr()
        )))
    }

    async fn allocate_node_port(
        &self,
        store: &dyn Store,
        name: &str,
        index: usize,
        protocol: &str,
        requested: Option<i64>,
    ) -> ApiResult<i64> {
        let (low, high) =
            (i64::from(self.ranges.node_ports.0), i64::from(self.ranges.node_ports.1));
        let body = Bytes::from(json!({"service": name}).to_string());
        if let Some(port) = requested.filter(|p| *p != 0) {
            let field = format!("spec.ports[{index}].nodePort");
            if !(low..=high).contains(&port) {
                return Err(invalid(name, vec![Cause::invalid(
                    field,
                    &json!(port),
                    &format!("provided port is not in the valid range. The range of valid ports is {low}-{high}"),
                )]));
            }
            return match store.create(&port_key(protocol, port), body).await {
                Ok(_) => Ok(port),
                Err(StoreError::AlreadyExists { .. }) => Err(invalid(
                    name,
                    vec![Cause::invalid(field, &json!(port), "provided port is already allocated")],
                )),
                Err(e) => Err(e.into()),
            };
        }
        let count = high - low + 1;
        let probes: Vec<i64> = {
            let mut rng = rand::rng();
            (0..32).map(|_| rng.random_range(low..=high)).collect()
        };
        let candidates = probes.into_iter().chain(low..=high);
        for port in candidates.take(count as usize + 32) {
            match store.create(&port_key(protocol, port), body.clone()).await {
                Ok(_) => return Ok(port),
                Err(StoreError::AlreadyExists { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApiError::internal("failed to allocate a nodePort: range is full"))
    }

    /// Releases what a deleted Service held.
    pub async fn release(&self, store: &dyn Store, svc: &Value) {
        for ip in
            svc["spec"]["clusterIPs"].as_array().into_iter().flatten().filter_map(Value::as_str)
        {
            if ip != "None" {
                let _ = store.delete(&ip_key(ip), None).await;
            }
        }
        for port in svc["spec"]["ports"].as_array().into_iter().flatten() {
            if let Some(node_port) = port["nodePort"].as_i64() {
                let protocol = port["protocol"].as_str().unwrap_or("TCP");
                let _ = store.delete(&port_key(protocol, node_port), None).await;
            }
        }
    }

    /// On update: the ClusterIP is immutable (upstream's message); NodePorts may be added.
    pub fn check_update(&self, name: &str, new: &mut Value, old: &Value) -> ApiResult<()> {
        let old_ip = &old["spec"]["clusterIP"];
        match new["spec"]["clusterIP"].as_str() {
            None | Some("") => {
                new["spec"]["clusterIP"] = old_ip.clone();
                new["spec"]["clusterIPs"] = old["spec"]["clusterIPs"].clone();
            }
            Some(ip) if Some(ip) != old_ip.as_str() => {
                return Err(invalid(
                    name,
                    vec![Cause::invalid(
                        "spec.clusterIPs[0]",
                        &json!(ip),
                        "may not change once set",
                    )],
                ));
            }
            _ => {
                if new["spec"]["clusterIPs"].is_null() {
                    new["spec"]["clusterIPs"] = old["spec"]["clusterIPs"].clone();
                }
            }
        }
        // NodePorts the client left out keep their values.
        let old_ports = old["spec"]["ports"].as_array().cloned().unwrap_or_default();
        if let Some(ports) = new["spec"].get_mut("ports").and_then(Value::as_array_mut) {
            for port in ports {
                if port.get("nodePort").is_none_or(Value::is_null) {
                    if let Some(previous) = old_ports
                        .iter()
                        .find(|p| p["port"] == port["port"] && p["protocol"] == port["protocol"])
                    {
                        if let Some(np) = previous.get("nodePort") {
                            port["nodePort"] = np.clone();
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
