//! `service-lb-controller`: load balancers for `type: LoadBalancer` Services on the nodes
//! themselves, as k3s's ServiceLB gives them where no cloud does. Every such Service without a
//! `spec.loadBalancerClass` gets the addresses of the Ready nodes in
//! `status.loadBalancer.ingress` (a node's ExternalIP where it has one, else its InternalIP,
//! as k3s), and the service proxy on every node accepts the Service's traffic there (its
//! load-balancer rules). With no Ready node the ingress is empty (`<pending>`). A Service
//! that stops being a LoadBalancer loses the ingress, as upstream's service controller
//! clears it. Status is written through `services/status`, only when it differs.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Service};
use kube::api::{Api, Patch, PatchParams};
use kube::Client;
use rkube_runtime::informer::Change;
use rkube_runtime::store::Store;
use serde_json::json;
use tokio::sync::mpsc;

/// The field manager of the status patches.
const MANAGER: &str = "service-lb-controller";

/// The address of `node` a load balancer on it has: ExternalIP, else InternalIP; None when
/// the node is not Ready.
fn node_address(node: &Node) -> Option<String> {
    let status = node.status.as_ref()?;
    let ready =
        status.conditions.iter().flatten().any(|c| c.type_ == "Ready" && c.status == "True");
    if !ready {
        return None;
    }
    let addresses = status.addresses.as_deref().unwrap_or_default();
    let of = |kind: &str| addresses.iter().find(|a| a.type_ == kind).map(|a| a.address.clone());
    of("ExternalIP").or_else(|| of("InternalIP"))
}

/// The ingress addresses `service` should have, given the nodes' addresses.
fn wanted(service: &Service, nodes: &BTreeSet<String>) -> Vec<String> {
    let spec = service.spec.as_ref();
    let ours = spec.is_some_and(|s| {
        s.type_.as_deref() == Some("LoadBalancer") && s.load_balancer_class.is_none()
    });
    if ours {
        nodes.iter().cloned().collect()
    } else {
        Vec::new()
    }
}

/// The ingress addresses `service` has.
fn current(service: &Service) -> Vec<String> {
    let ingress = service.status.as_ref().and_then(|s| s.load_balancer.as_ref());
    let ingress = ingress.and_then(|lb| lb.ingress.as_ref());
    ingress
        .into_iter()
        .flatten()
        .filter_map(|i| i.ip.clone().or_else(|| i.hostname.clone()))
        .collect()
}

/// Whether this controller decides `service`'s ingress: a LoadBalancer of the default class,
/// or a Service that is no LoadBalancer any more.
fn decides(service: &Service) -> bool {
    let spec = service.spec.as_ref();
    spec.is_none_or(|s| {
        s.load_balancer_class.is_none() || s.type_.as_deref() != Some("LoadBalancer")
    })
}

/// Runs until the channels close: on every Service or Node change, every Service whose
/// ingress differs from what it should be is patched.
pub async fn run(
    client: Client,
    services: Store<Service>,
    mut service_rx: mpsc::UnboundedReceiver<Change>,
    nodes: Store<Node>,
    mut node_rx: mpsc::UnboundedReceiver<Change>,
) {
    loop {
        tokio::select! {
            change = service_rx.recv() => if change.is_none() { return },
            change = node_rx.recv() => if change.is_none() { return },
        }
        while service_rx.try_recv().is_ok() {}
        while node_rx.try_recv().is_ok() {}
        let addresses: BTreeSet<String> =
            nodes.state().iter().filter_map(|n| node_address(n)).collect();
        for service in services.state() {
            if !decides(&service) {
                continue;
            }
            let want = wanted(&service, &addresses);
            if current(&service) != want {
                if let Err(e) = write(&client, &service, &want).await {
                    tracing::warn!(error = %e, service = ?service.metadata.name, "load balancer status not written");
                }
            }
        }
    }
}

async fn write(client: &Client, service: &Arc<Service>, ingress: &[String]) -> kube::Result<()> {
    let namespace = service.metadata.namespace.as_deref().unwrap_or("default");
    let name = service.metadata.name.as_deref().unwrap_or("");
    let api: Api<Service> = Api::namespaced(client.clone(), namespace);
    let ingress: Vec<_> = ingress.iter().map(|ip| json!({"ip": ip, "ipMode": "VIP"})).collect();
    let patch = json!({"status": {"loadBalancer": {"ingress": ingress}}});
    api.patch_status(name, &PatchParams::apply(MANAGER), &Patch::Merge(&patch)).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(ready: bool, addresses: &[(&str, &str)]) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n"},
            "status": {
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
                "addresses": addresses.iter().map(|(t, a)| json!({"type": t, "address": a})).collect::<Vec<_>>(),
            }
        }))
        .unwrap()
    }

    fn service(type_: &str, class: Option<&str>) -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "ns"},
            "spec": {"type": type_, "loadBalancerClass": class, "ports": [{"port": 80}]},
        }))
        .unwrap()
    }

    #[test]
    fn ready_nodes_give_their_external_or_internal_address() {
        let internal = node(true, &[("InternalIP", "10.0.0.1"), ("Hostname", "n")]);
        let external = node(true, &[("InternalIP", "10.0.0.2"), ("ExternalIP", "192.0.2.7")]);
        assert_eq!(node_address(&internal).as_deref(), Some("10.0.0.1"));
        assert_eq!(node_address(&external).as_deref(), Some("192.0.2.7"));
        assert_eq!(node_address(&node(false, &[("InternalIP", "10.0.0.3")])), None);
    }

    #[test]
    fn only_default_class_load_balancers_get_addresses() {
        let nodes = BTreeSet::from(["10.0.0.1".to_string(), "10.0.0.2".to_string()]);
        assert_eq!(wanted(&service("LoadBalancer", None), &nodes), ["10.0.0.1", "10.0.0.2"]);
        assert!(wanted(&service("NodePort", None), &nodes).is_empty());
        assert!(!decides(&service("LoadBalancer", Some("example.com/lb"))));
        assert!(decides(&service("ClusterIP", Some("example.com/lb"))));
    }
}
