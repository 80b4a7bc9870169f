//! Services (`v1`): names are DNS-1035 labels; a delete answers with the Service. The
//! cluster IPs and node ports are allocated by the API server's registry (a side effect with
//! storage of its own).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::{SelectableField, Strategy};
use crate::tables::{
    arr, at, format_labels, int, load_balancer_ips, or, or_none, since, st, strings, text, time,
    wide, TablePrinter, AGE, NAME,
};
use crate::validation::{FieldError, NameRule};
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Services;

impl Strategy for Services {
    fn name_rule(&self) -> NameRule {
        NameRule::Dns1035Label
    }

    fn default(&self, obj: &mut Value) {
        defaults::core::service(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::service::service(obj, old)
    }

    fn validate_subresource_update(
        &self,
        new: &Value,
        _old: &Value,
        _sub: &str,
    ) -> Vec<FieldError> {
        validation::core::service::service_status(new)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[("spec.clusterIP", &["spec", "clusterIP"]), ("spec.type", &["spec", "type"])]
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        text("Type", D_SVC_TYPE),
        text("Cluster-IP", D_SVC_CLUSTER_IP),
        text("External-IP", D_SVC_EXTERNAL_IPS),
        text("Port(s)", D_SVC_PORTS),
        AGE,
        wide("Selector", "string", D_SVC_SELECTOR),
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let kind = or(st(obj, &["spec", "type"]), "ClusterIP");
    let cluster_ip = strings(at(obj, &["spec", "clusterIPs"]))
        .first()
        .copied()
        .unwrap_or_else(|| st(obj, &["spec", "clusterIP"]));
    let external_ips = strings(at(obj, &["spec", "externalIPs"]));
    let external = match kind {
        "ClusterIP" | "NodePort" if !external_ips.is_empty() => external_ips.join(","),
        "ClusterIP" | "NodePort" => "<none>".to_string(),
        "LoadBalancer" => {
            let lb = load_balancer_ips(obj);
            let mut all: Vec<&str> = lb.split(',').filter(|s| !s.is_empty()).collect();
            all.extend(&external_ips);
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => st(obj, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = arr(obj, &["spec", "ports"])
        .iter()
        .map(|p| {
            let (port, protocol) = (int(p, &["port"]), or(st(p, &["protocol"]), "TCP"));
            match int(p, &["nodePort"]) {
                n if n > 0 => format!("{port}:{n}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    vec![
        st(obj, &["metadata", "name"]).into(),
        kind.into(),
        or_none(cluster_ip).into(),
        external.into(),
        or_none(&ports.join(",")).into(),
        since(time(obj, &["metadata", "creationTimestamp"]), now).into(),
        format_labels(at(obj, &["spec", "selector"])).into(),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_SVC_TYPE: &str = "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types";
const D_SVC_CLUSTER_IP: &str = "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
const D_SVC_EXTERNAL_IPS: &str = "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.";
const D_SVC_PORTS: &str = "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
const D_SVC_SELECTOR: &str = "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/";
