//! Validation of the kinds' own fields (beyond metadata): which checks each resource gets.
//! The checks live in one module per area; see docs/features.md for what is covered.

use serde_json::Value;

use super::admission;
use super::cluster;
use super::config::{config_map_size, data_keys, immutable_data, secret_size};
use super::control;
use super::discovery;
use super::extensions;
use super::networking;
use super::nodes;
use super::pod::{pod_create, pod_spec, pod_update};
use super::service::service;
use super::storage;
use super::workloads;
use super::FieldError;
use crate::resources::ResourceInfo;

pub fn validate(info: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    match (info.group, info.plural) {
        ("", "pods") => {
            let mut errors = pod_spec(&obj["spec"], "spec");
            match old {
                Some(old) => errors.extend(pod_update(obj, old)),
                None => errors.extend(pod_create(obj)),
            }
            errors
        }
        ("", "podtemplates") => pod_spec(&obj["template"]["spec"], "template.spec"),
        ("", "replicationcontrollers") => workloads::replication_controller(obj),
        ("apps", "deployments") => workloads::deployment(obj, old),
        ("apps", "replicasets") => workloads::replica_set(obj, old),
        ("apps", "statefulsets") => workloads::stateful_set(info, obj, old),
        ("apps", "daemonsets") => workloads::daemon_set(obj, old),
        ("batch", "jobs") => workloads::job(info, obj, old),
        ("batch", "cronjobs") => workloads::cron_job(obj, old),
        ("", "services") => service(obj, old),
        ("", "resourcequotas") => cluster::resource_quota(obj, old),
        ("", "limitranges") => cluster::limit_range(obj, old),
        ("", "namespaces") => cluster::namespace(obj, old),
        ("policy", "poddisruptionbudgets") => cluster::pod_disruption_budget(obj, old),
        ("autoscaling", "horizontalpodautoscalers") => cluster::horizontal_pod_autoscaler(obj, old),
        ("rbac.authorization.k8s.io", "roles") => cluster::role(obj, old),
        ("rbac.authorization.k8s.io", "clusterroles") => cluster::cluster_role(obj, old),
        ("rbac.authorization.k8s.io", "rolebindings") => cluster::role_binding(obj, old),
        ("rbac.authorization.k8s.io", "clusterrolebindings") => {
            cluster::cluster_role_binding(obj, old)
        }
        ("scheduling.k8s.io", "priorityclasses") => cluster::priority_class(obj, old),
        ("networking.k8s.io", "ingresses") => networking::ingress(obj, old),
        ("networking.k8s.io", "ingressclasses") => networking::ingress_class(obj, old),
        ("networking.k8s.io", "networkpolicies") => networking::network_policy(obj, old),
        ("", "persistentvolumeclaims") => storage::persistent_volume_claim(obj, old),
        ("", "persistentvolumes") => storage::persistent_volume(obj, old),
        ("storage.k8s.io", "storageclasses") => storage::storage_class(obj, old),
        ("storage.k8s.io", "volumeattachments") => storage::volume_attachment(obj, old),
        ("storage.k8s.io", "csidrivers") => storage::csi_driver(obj, old),
        ("", "configmaps") | ("", "secrets") => {
            let mut errors = data_keys(obj);
            errors.extend(match info.plural {
                "secrets" => secret_size(obj),
                _ => config_map_size(obj),
            });
            if let Some(old) = old {
                errors.extend(immutable_data(obj, old));
                if info.plural == "secrets" && obj["type"] != old["type"] {
                    errors.push(FieldError::invalid("type", &obj["type"], "field is immutable"));
                }
            }
            errors
        }
        ("networking.k8s.io", "ipaddresses") => networking::ip_address(obj, old),
        ("networking.k8s.io", "servicecidrs") => networking::service_cidr(obj, old),
        ("", "endpoints") => discovery::endpoints(obj, old),
        ("discovery.k8s.io", "endpointslices") => discovery::endpoint_slice(obj, old),
        ("", "events") => discovery::core_event(obj, old),
        ("events.k8s.io", "events") => discovery::event(obj, old),
        ("coordination.k8s.io", "leases") => discovery::lease(obj, old),
        ("", "nodes") => nodes::node(obj, old),
        ("node.k8s.io", "runtimeclasses") => nodes::runtime_class(obj, old),
        ("storage.k8s.io", "csinodes") => nodes::csi_node(obj, old),
        ("storage.k8s.io", "csistoragecapacities") => nodes::csi_storage_capacity(obj, old),
        ("", "serviceaccounts") => nodes::service_account(obj, old),
        ("apps", "controllerrevisions") => nodes::controller_revision(obj, old),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => {
            admission::mutating_webhook_configuration(obj, old)
        }
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => {
            admission::validating_webhook_configuration(obj, old)
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            admission::validating_admission_policy(obj, old)
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => {
            admission::validating_admission_policy_binding(obj, old)
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            extensions::custom_resource_definition(obj, old)
        }
        ("apiregistration.k8s.io", "apiservices") => extensions::api_service(obj, old),
        ("certificates.k8s.io", "certificatesigningrequests") => {
            control::certificate_signing_request(obj, old)
        }
        ("flowcontrol.apiserver.k8s.io", "flowschemas") => control::flow_schema(obj, old),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations") => {
            control::priority_level_configuration(obj, old)
        }
        _ => Vec::new(),
    }
}
