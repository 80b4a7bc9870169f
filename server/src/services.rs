//! Service IP and NodePort allocation, as kube-apiserver v1.33 does it: a ClusterIP is taken
//! by creating the `networking.k8s.io/v1 IPAddress` object named after it (the store's
//! create-if-absent makes two API servers on one etcd never hand out the same IP); a NodePort
//! by creating a key under `/registry/ranges/servicenodeports/`. Both are released when the
//! Service is deleted or stops needing them.

use std::net::Ipv4Addr;

use bytes::Bytes;
use ipnet::Ipv4Net;
use rand::RngExt;
use rkube_store::{Error as StoreError, Store};
use serde_json::{json, Value};

use crate::error::{StartError, StartResult};
use crate::status::{ApiError, ApiResult, Cause};
use crate::write_hooks::{Held, WriteHooks};

/// The service CIDR and NodePort range.
#[derive(Clone, Debug)]
pub struct ServiceRanges {
    /// The service CIDR, its host bits cleared.
    pub network: Ipv4Net,
    pub node_ports: (u16, u16),
}

impl ServiceRanges {
    /// Parses `10.43.0.0/16`.
    pub fn parse(cidr: &str, node_ports: (u16, u16)) -> StartResult<ServiceRanges> {
        let network: Ipv4Net =
            cidr.parse().map_err(|_| StartError::ServiceCidr(cidr.to_string()))?;
        if !(8..=30).contains(&network.prefix_len()) {
            return Err(StartError::ServiceCidrPrefix(cidr.to_string()));
        }
        Ok(ServiceRanges { network: network.trunc(), node_ports })
    }

    pub fn cidr(&self) -> String {
        self.network.to_string()
    }

    /// The first usable address: the `kubernetes` service's.
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.network.network()) + 1)
    }

    fn contains(&self, ip: Ipv4Addr) -> bool {
        self.network.contains(&ip)
    }

    fn size(&self) -> u32 {
        1u32 << (32 - u32::from(self.network.prefix_len()))
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
    async fn allocate(&self, store: &dyn Store, svc: &mut Value) -> ApiResult<()> {
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
        let base = u32::from(self.ranges.network.network());
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
    async fn release_all(&self, store: &dyn Store, svc: &Value) {
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

    /// On update, before validation, as upstream's `patchAllocatedValues` and
    /// `dropTypeDependentFields`: a ClusterIP and NodePorts the client left out keep their
    /// values while the type still needs them (NodePorts matched by port name); what a change
    /// of type leaves behind unchanged (the ClusterIP and IP families when it becomes an
    /// ExternalName, NodePorts when it no longer needs them, the external traffic policy, the
    /// load-balancer fields and status) is dropped. That the ClusterIP may not change once set
    /// is validation's to say (`rkube_apis::validation`), with the service's other errors.
    fn patch_allocated_values(&self, new: &mut Value, old: &Value) {
        let (old_spec, spec) = (&old["spec"], &mut new["spec"]);
        if needs_cluster_ip(old_spec) && needs_cluster_ip(spec) {
            if spec["clusterIP"].as_str().is_none_or(str::is_empty) {
                spec["clusterIP"] = old_spec["clusterIP"].clone();
            }
            if spec["clusterIPs"].as_array().is_none_or(Vec::is_empty) {
                spec["clusterIPs"] = old_spec["clusterIPs"].clone();
            }
        }
        if needs_node_ports(old_spec) && needs_node_ports(spec) {
            let by_name: Vec<(Value, Value)> =
                ports(old_spec).map(|p| (p["name"].clone(), p["nodePort"].clone())).collect();
            for port in spec["ports"].as_array_mut().into_iter().flatten() {
                if port["nodePort"].as_i64().unwrap_or(0) == 0 {
                    let name = port.get("name").cloned().unwrap_or(Value::Null);
                    let same = |n: &Value| n == &name || (n.is_null() && name == "");
                    if let Some((_, np)) = by_name.iter().find(|(n, _)| same(n)) {
                        if !np.is_null() {
                            port["nodePort"] = np.clone();
                        }
                    }
                }
            }
        }
        drop_type_dependent_fields(new, old);
    }

    /// On update, after validation and before the write: takes what the new Service needs
    /// that the old one did not hold (a ClusterIP when it stops being an ExternalName,
    /// NodePorts when it becomes a NodePort or LoadBalancer or gains ports), writing them into
    /// it. What the old one held and the new one does not is given back by
    /// [`Allocator::finish_update`] once the update is written.
    async fn update(&self, store: &dyn Store, svc: &mut Value, old: &Value) -> ApiResult<Held> {
        let name = svc["metadata"]["name"].as_str().unwrap_or("").to_string();
        let before = held(old);
        let mut taken: Vec<String> = Vec::new();
        let result = async {
            if needs_cluster_ip(&svc["spec"]) && !needs_cluster_ip(&old["spec"]) {
                let requested = svc["spec"]["clusterIP"].as_str().unwrap_or("").to_string();
                if requested == "None" {
                    svc["spec"]["clusterIPs"] = json!(["None"]);
                } else {
                    let ip = self.allocate_ip(store, &name, svc, &requested).await?;
                    taken.push(ip_key(&ip));
                    svc["spec"]["clusterIP"] = json!(ip);
                    svc["spec"]["clusterIPs"] = json!([ip]);
                }
            }
            if needs_node_ports(&svc["spec"]) {
                let ports: Vec<Value> = ports(&svc["spec"]).cloned().collect();
                for (i, port) in ports.iter().enumerate() {
                    let protocol = port["protocol"].as_str().unwrap_or("TCP").to_string();
                    let requested = port["nodePort"].as_i64().filter(|p| *p != 0);
                    if requested.is_some_and(|p| before.contains(&port_key(&protocol, p))) {
                        continue;
                    }
                    let node_port =
                        self.allocate_node_port(store, &name, i, &protocol, requested).await?;
                    taken.push(port_key(&protocol, node_port));
                    svc["spec"]["ports"][i]["nodePort"] = json!(node_port);
                }
            }
            Ok(())
        }
        .await;
        match result {
            Ok(()) => {
                Ok(Held { taken, released: before.difference(&held(svc)).cloned().collect() })
            }
            Err(e) => {
                release_keys(store, &taken).await;
                Err(e)
            }
        }
    }

    /// After an update: frees what the old Service held and the new one does not when the
    /// write went through, or what was taken for it when it did not.
    async fn finish_update(&self, store: &dyn Store, held: Held, written: bool) {
        release_keys(store, if written { &held.released } else { &held.taken }).await;
    }
}

async fn release_keys(store: &dyn Store, keys: &[String]) {
    for key in keys {
        let _ = store.delete(key, None).await;
    }
}

fn ports(spec: &Value) -> impl Iterator<Item = &Value> {
    spec["ports"].as_array().into_iter().flatten()
}

/// The allocation keys a Service holds: its ClusterIPs and NodePorts.
fn held(svc: &Value) -> std::collections::BTreeSet<String> {
    let spec = &svc["spec"];
    let ips = spec["clusterIPs"].as_array().into_iter().flatten().filter_map(Value::as_str);
    let ips = ips.filter(|ip| *ip != "None").map(ip_key);
    let node_ports = ports(spec).filter_map(|p| {
        let port = p["nodePort"].as_i64().filter(|n| *n != 0)?;
        Some(port_key(p["protocol"].as_str().unwrap_or("TCP"), port))
    });
    ips.chain(node_ports).collect()
}

fn service_type(spec: &Value) -> &str {
    spec["type"].as_str().unwrap_or("ClusterIP")
}

fn needs_cluster_ip(spec: &Value) -> bool {
    service_type(spec) != "ExternalName"
}

fn needs_node_ports(spec: &Value) -> bool {
    match service_type(spec) {
        "NodePort" => true,
        "LoadBalancer" => spec["allocateLoadBalancerNodePorts"] != false,
        _ => false,
    }
}

/// Reachable from outside the cluster, so with an external traffic policy.
fn externally_accessible(spec: &Value) -> bool {
    matches!(service_type(spec), "NodePort" | "LoadBalancer")
        || spec["externalIPs"].as_array().is_some_and(|ips| !ips.is_empty())
}

/// Upstream's `dropTypeDependentFields`: after a change of type, a field the new type does not
/// use is dropped when the client did not change it (it was set by an allocator or a default).
fn drop_type_dependent_fields(new: &mut Value, old: &Value) {
    let old_spec = &old["spec"];
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let kept = |spec: &serde_json::Map<String, Value>, field: &str| {
        spec.get(field).unwrap_or(&Value::Null) == &old_spec[field]
    };
    let view = Value::Object(spec.clone());
    if needs_cluster_ip(old_spec) && !needs_cluster_ip(&view) {
        if kept(spec, "clusterIP") && kept(spec, "clusterIPs") {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        for field in ["ipFamilies", "ipFamilyPolicy"] {
            if kept(spec, field) {
                spec.remove(field);
            }
        }
    }
    let node_ports = |spec: &Value| {
        let mut set: Vec<i64> = ports(spec).filter_map(|p| p["nodePort"].as_i64()).collect();
        set.sort_unstable();
        set
    };
    if needs_node_ports(old_spec)
        && !needs_node_ports(&view)
        && node_ports(&view) == node_ports(old_spec)
    {
        for port in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
            port.as_object_mut().map(|p| p.remove("nodePort"));
        }
    }
    let was_lb = service_type(old_spec) == "LoadBalancer";
    let is_lb = service_type(&view) == "LoadBalancer";
    if was_lb && !is_lb {
        for field in ["allocateLoadBalancerNodePorts", "loadBalancerClass"] {
            if kept(spec, field) {
                spec.remove(field);
            }
        }
    }
    let needs_health_check = |spec: &Value| {
        service_type(spec) == "LoadBalancer" && spec["externalTrafficPolicy"] == "Local"
    };
    if needs_health_check(old_spec)
        && !needs_health_check(&view)
        && kept(spec, "healthCheckNodePort")
    {
        spec.remove("healthCheckNodePort");
    }
    if externally_accessible(old_spec)
        && !externally_accessible(&view)
        && kept(spec, "externalTrafficPolicy")
    {
        spec.remove("externalTrafficPolicy");
    }
    if !is_lb {
        if let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) {
            status.insert("loadBalancer".into(), json!({}));
        }
    }
}

/// A Service's ClusterIPs and NodePorts are taken and given back with it.
#[async_trait::async_trait]
impl WriteHooks for Allocator {
    async fn before_create(&self, store: &dyn Store, obj: &mut Value) -> ApiResult<()> {
        self.allocate(store, obj).await
    }

    async fn release(&self, store: &dyn Store, obj: &Value) {
        self.release_all(store, obj).await
    }

    fn keep_allocated(&self, new: &mut Value, old: &Value) {
        self.patch_allocated_values(new, old)
    }

    async fn before_update(
        &self,
        store: &dyn Store,
        new: &mut Value,
        old: &Value,
    ) -> ApiResult<Held> {
        self.update(store, new, old).await
    }

    async fn after_update(&self, store: &dyn Store, held: Held, written: bool) {
        self.finish_update(store, held, written).await
    }
}
