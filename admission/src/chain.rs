//! The chain: which plugins run, in which order. kube-apiserver runs its enabled plugins in
//! one fixed order ([`ALL_ORDERED`]), the mutating halves first, then — after the object's
//! own validation — the validating halves; `--enable-admission-plugins` and
//! `--disable-admission-plugins` change the set, never the order.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::attributes::Attributes;
use crate::authorizer::{Authorizer, AuthorizerSlot};
use crate::certificate_approval::{self, CertificateApproval};
use crate::certificate_signing::{self, CertificateSigning};
use crate::certificate_subject_restriction::{self, CertificateSubjectRestriction};
use crate::default_toleration_seconds::{self, DefaultTolerationSeconds};
use crate::error::AdmissionError;
use crate::reinvocation::Reinvocation;
use crate::state::ClusterState;
use crate::webhook::{self, BackendSlot};
use crate::{
    default_ingress_class, default_storage_class, limit_ranger, namespace_lifecycle,
    node_restriction, persistent_volume_claim_resize, pod_security, priority, resource_quota,
    runtime_class, service_account, storage_object_in_use_protection, taint_nodes_by_condition,
    validating_admission_policy, MutatingPlugin, ValidatingPlugin,
};

/// kube-apiserver's plugins, in the order it runs them (`AllOrderedPlugins`).
pub const ALL_ORDERED: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "DisableServiceLinks",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
];

/// The plugins kube-apiserver enables unless told otherwise.
pub const DEFAULT_ENABLED: &[&str] = &[
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "DefaultStorageClass",
    "PersistentVolumeClaimResize",
    "DefaultTolerationSeconds",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "StorageObjectInUseProtection",
    "Priority",
    "TaintNodesByCondition",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "PodSecurity",
    "ValidatingAdmissionPolicy",
];

/// The plugins rkube enables by default beyond kube-apiserver's: NodeRestriction, which every
/// kubeadm and k3s cluster turns on (without it a kubelet's credentials could write any pod
/// or node).
pub const RKUBE_DEFAULT_ENABLED: &[&str] = &[node_restriction::NAME];

/// The plugins rkube has.
pub const IMPLEMENTED: &[&str] = &[
    namespace_lifecycle::NAME,
    limit_ranger::NAME,
    service_account::NAME,
    node_restriction::NAME,
    pod_security::NAME,
    taint_nodes_by_condition::NAME,
    priority::NAME,
    default_toleration_seconds::NAME,
    runtime_class::NAME,
    certificate_approval::NAME,
    certificate_signing::NAME,
    certificate_subject_restriction::NAME,
    resource_quota::NAME,
    default_ingress_class::NAME,
    default_storage_class::NAME,
    storage_object_in_use_protection::NAME,
    persistent_volume_claim_resize::NAME,
    validating_admission_policy::NAME,
    webhook::MUTATING,
    webhook::VALIDATING,
];

/// What the plugins are configured with (kube-apiserver's flags of each plugin).
#[derive(Clone, Copy, Debug, Default)]
pub struct Settings {
    pub default_toleration_seconds: DefaultTolerationSeconds,
}

/// Flags that do not make a chain.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// As kube-apiserver says it.
    #[error("{flag} plugin {name:?} is unknown")]
    Unknown { flag: &'static str, name: String },
    #[error("[{}] in enable-admission-plugins and disable-admission-plugins overlapped", .0.join(" "))]
    Overlap(Vec<String>),
    /// kube-apiserver has it, rkube does not yet: enabling it would promise a check that
    /// nothing makes.
    #[error("enable-admission-plugins plugin {0:?} is not implemented by rkube (it has: {list})", list = IMPLEMENTED.join(", "))]
    NotImplemented(String),
}

/// The enabled plugins, in the order they run: the default ones rkube has, plus `enable`,
/// minus `disable` (kube-apiserver's flags; empty names are ignored, as a trailing comma).
pub fn enabled(enable: &[String], disable: &[String]) -> Result<Vec<&'static str>, ConfigError> {
    let named =
        |list: &[String], flag: &'static str| -> Result<BTreeSet<&'static str>, ConfigError> {
            list.iter()
                .filter(|n| !n.is_empty())
                .map(|name| {
                    ALL_ORDERED
                        .iter()
                        .copied()
                        .find(|known| *known == name)
                        .ok_or_else(|| ConfigError::Unknown { flag, name: name.clone() })
                })
                .collect()
        };
    let enable = named(enable, "enable-admission-plugins")?;
    let disable = named(disable, "disable-admission-plugins")?;
    let both: Vec<String> = enable.intersection(&disable).map(|n| n.to_string()).collect();
    if !both.is_empty() {
        return Err(ConfigError::Overlap(both));
    }
    if let Some(missing) = enable.iter().find(|n| !IMPLEMENTED.contains(n)) {
        return Err(ConfigError::NotImplemented(missing.to_string()));
    }
    Ok(ALL_ORDERED
        .iter()
        .copied()
        .filter(|n| IMPLEMENTED.contains(n))
        .filter(|n| {
            let default = DEFAULT_ENABLED.contains(n) || RKUBE_DEFAULT_ENABLED.contains(n);
            (default || enable.contains(n)) && !disable.contains(n)
        })
        .collect())
}

type Halves = (Option<Arc<dyn MutatingPlugin>>, Option<Arc<dyn ValidatingPlugin>>);

/// One plugin, built; those that ask the authorizer get the chain's slot.
fn build(
    name: &str,
    settings: &Settings,
    authorizer: &AuthorizerSlot,
    webhooks: &BackendSlot,
) -> Halves {
    match name {
        namespace_lifecycle::NAME => {
            (Some(Arc::new(namespace_lifecycle::NamespaceLifecycle::default())), None)
        }
        limit_ranger::NAME => {
            let plugin = Arc::new(limit_ranger::LimitRanger::default());
            (Some(plugin.clone()), Some(plugin))
        }
        service_account::NAME => {
            let plugin = Arc::new(service_account::ServiceAccount::default());
            (Some(plugin.clone()), Some(plugin))
        }
        node_restriction::NAME => (Some(Arc::new(node_restriction::NodeRestriction)), None),
        pod_security::NAME => (None, Some(Arc::new(pod_security::PodSecurity))),
        taint_nodes_by_condition::NAME => {
            (Some(Arc::new(taint_nodes_by_condition::TaintNodesByCondition)), None)
        }
        runtime_class::NAME => {
            let plugin = Arc::new(runtime_class::RuntimeClass);
            (Some(plugin.clone()), Some(plugin))
        }
        default_ingress_class::NAME => {
            (Some(Arc::new(default_ingress_class::DefaultIngressClass)), None)
        }
        priority::NAME => {
            let plugin = Arc::new(priority::Priority::default());
            (Some(plugin.clone()), Some(plugin))
        }
        default_toleration_seconds::NAME => {
            (Some(Arc::new(settings.default_toleration_seconds)), None)
        }
        certificate_approval::NAME => {
            (None, Some(Arc::new(CertificateApproval { authorizer: authorizer.clone() })))
        }
        certificate_signing::NAME => {
            (None, Some(Arc::new(CertificateSigning { authorizer: authorizer.clone() })))
        }
        certificate_subject_restriction::NAME => {
            (None, Some(Arc::new(CertificateSubjectRestriction)))
        }
        resource_quota::NAME => (None, Some(Arc::new(resource_quota::ResourceQuota::default()))),
        default_storage_class::NAME => {
            (Some(Arc::new(default_storage_class::DefaultStorageClass)), None)
        }
        storage_object_in_use_protection::NAME => {
            (Some(Arc::new(storage_object_in_use_protection::StorageObjectInUseProtection)), None)
        }
        persistent_volume_claim_resize::NAME => {
            (None, Some(Arc::new(persistent_volume_claim_resize::PersistentVolumeClaimResize)))
        }
        validating_admission_policy::NAME => (
            None,
            Some(Arc::new(
                validating_admission_policy::ValidatingAdmissionPolicy::new(authorizer.clone())
                    .with_backend(webhooks.clone()),
            )),
        ),
        webhook::MUTATING => (
            Some(Arc::new(webhook::MutatingWebhooks::new(webhooks.clone(), authorizer.clone()))),
            None,
        ),
        webhook::VALIDATING => (
            None,
            Some(Arc::new(webhook::ValidatingWebhooks::new(webhooks.clone(), authorizer.clone()))),
        ),
        other => unreachable!("{other} is not in IMPLEMENTED"),
    }
}

/// The admission chain: built once, run for every write.
pub struct Chain {
    names: Vec<&'static str>,
    mutating: Vec<Arc<dyn MutatingPlugin>>,
    validating: Vec<Arc<dyn ValidatingPlugin>>,
    authorizer: AuthorizerSlot,
    webhooks: BackendSlot,
}

impl Chain {
    /// The chain of `names` (each in [`IMPLEMENTED`]; see [`enabled`]), run in upstream's order
    /// whatever the order given.
    pub fn new(names: &[&str], settings: Settings) -> Chain {
        let names: Vec<&'static str> =
            ALL_ORDERED.iter().copied().filter(|n| names.contains(n)).collect();
        let (mut mutating, mut validating) = (Vec::new(), Vec::new());
        let authorizer = AuthorizerSlot::default();
        let webhooks = BackendSlot::default();
        for name in &names {
            let (m, v) = build(name, &settings, &authorizer, &webhooks);
            mutating.extend(m);
            validating.extend(v);
        }
        Chain { names, mutating, validating, authorizer, webhooks }
    }

    /// Gives the webhook plugins the server's HTTPS client and resource table. Until it is
    /// set, a call to a webhook fails (and obeys the webhook's failure policy).
    pub fn set_webhook_backend(&self, backend: Arc<dyn webhook::Backend>) {
        self.webhooks.set(backend);
    }

    /// Gives the plugins that ask for authorization decisions the server's authorizer
    /// (upstream's `WantsAuthorizer` initializer). Until it is set they allow nothing.
    pub fn set_authorizer(&self, authorizer: Arc<dyn Authorizer>) {
        self.authorizer.set(authorizer);
    }

    /// The chain of kube-apiserver's flags.
    pub fn from_flags(
        enable: &[String],
        disable: &[String],
        settings: Settings,
    ) -> Result<Chain, ConfigError> {
        Ok(Chain::new(&enabled(enable, disable)?, settings))
    }

    /// The default plugins rkube has, with their default settings.
    pub fn with_defaults() -> Chain {
        Chain::from_flags(&[], &[], Settings::default()).expect("the defaults are known")
    }

    /// The enabled plugins, in order.
    pub fn names(&self) -> &[&'static str] {
        &self.names
    }

    /// Runs the mutating plugins in order; the first refusal ends it. When a webhook changed
    /// the object, they all run once more (upstream's reinvocation: the in-tree plugins, and
    /// the webhooks that asked to see later changes).
    pub async fn admit(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        let mut reinvocation = Reinvocation::default();
        for plugin in &self.mutating {
            plugin.admit_in(a, state, &mut reinvocation).await?;
        }
        if reinvocation.should_reinvoke() {
            reinvocation.start_reinvocation();
            for plugin in &self.mutating {
                plugin.admit_in(a, state, &mut reinvocation).await?;
            }
        }
        Ok(())
    }

    /// Runs the validating plugins in order; the first refusal ends it.
    pub async fn validate(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        for plugin in &self.validating {
            plugin.validate(a, state).await?;
        }
        Ok(())
    }
}

impl Default for Chain {
    fn default() -> Self {
        Chain::with_defaults()
    }
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain").field("names", &self.names).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use crate::state::Snapshot;
    use serde_json::json;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_choose_the_set_and_never_the_order() {
        let all = [
            "NamespaceLifecycle",
            "LimitRanger",
            "ServiceAccount",
            "NodeRestriction",
            "TaintNodesByCondition",
            "PodSecurity",
            "Priority",
            "DefaultTolerationSeconds",
            "DefaultStorageClass",
            "StorageObjectInUseProtection",
            "PersistentVolumeClaimResize",
            "RuntimeClass",
            "CertificateApproval",
            "CertificateSigning",
            "CertificateSubjectRestriction",
            "DefaultIngressClass",
            "MutatingAdmissionWebhook",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionWebhook",
            "ResourceQuota",
        ];
        let without = |gone: &[&str]| -> Vec<&str> {
            all.iter().copied().filter(|n| !gone.contains(n)).collect()
        };
        assert_eq!(enabled(&[], &[]).unwrap(), all);
        // Enabling a default one again changes nothing; the order is upstream's.
        assert_eq!(enabled(&strings(&["DefaultTolerationSeconds", "Priority"]), &[]).unwrap(), all);
        assert_eq!(
            enabled(&[], &strings(&["DefaultTolerationSeconds", ""])).unwrap(),
            without(&["DefaultTolerationSeconds"])
        );
        // rkube's own default can be turned off like upstream's.
        assert_eq!(
            enabled(&[], &strings(&["NodeRestriction", "ServiceAccount"])).unwrap(),
            without(&["NodeRestriction", "ServiceAccount"])
        );
        // Disabling one rkube does not have yet is no error: it does not run either way.
        assert_eq!(
            enabled(&[], &strings(&["AlwaysPullImages", "Priority"])).unwrap(),
            without(&["Priority"])
        );
        assert_eq!(
            enabled(&strings(&["Bogus"]), &[]).unwrap_err().to_string(),
            "enable-admission-plugins plugin \"Bogus\" is unknown"
        );
        assert_eq!(
            enabled(&[], &strings(&["namespacelifecycle"])).unwrap_err().to_string(),
            "disable-admission-plugins plugin \"namespacelifecycle\" is unknown"
        );
        assert_eq!(
            enabled(&strings(&["Priority", "NamespaceLifecycle"]), &strings(&["Priority", "NamespaceLifecycle"]))
                .unwrap_err()
                .to_string(),
            "[NamespaceLifecycle Priority] in enable-admission-plugins and disable-admission-plugins overlapped"
        );
        assert_eq!(
            enabled(&strings(&["AlwaysPullImages"]), &[]).unwrap_err(),
            ConfigError::NotImplemented("AlwaysPullImages".into())
        );
    }

    #[test]
    fn upstream_lists_are_consistent() {
        for name in DEFAULT_ENABLED.iter().chain(RKUBE_DEFAULT_ENABLED).chain(IMPLEMENTED) {
            assert!(ALL_ORDERED.contains(name), "{name}");
        }
        let chain =
            Chain::new(&["DefaultTolerationSeconds", "NamespaceLifecycle"], Settings::default());
        assert_eq!(chain.names(), ["NamespaceLifecycle", "DefaultTolerationSeconds"]);
        assert_eq!((chain.mutating.len(), chain.validating.len()), (2, 0));
        let chain = Chain::with_defaults();
        let mutating: Vec<_> = chain.mutating.iter().map(|p| p.name()).collect();
        let validating: Vec<_> = chain.validating.iter().map(|p| p.name()).collect();
        assert_eq!(
            mutating,
            [
                "NamespaceLifecycle",
                "LimitRanger",
                "ServiceAccount",
                "NodeRestriction",
                "TaintNodesByCondition",
                "Priority",
                "DefaultTolerationSeconds",
                "DefaultStorageClass",
                "StorageObjectInUseProtection",
                "RuntimeClass",
                "DefaultIngressClass",
                "MutatingAdmissionWebhook"
            ]
        );
        assert_eq!(
            validating,
            [
                "LimitRanger",
                "ServiceAccount",
                "PodSecurity",
                "Priority",
                "PersistentVolumeClaimResize",
                "RuntimeClass",
                "CertificateApproval",
                "CertificateSigning",
                "CertificateSubjectRestriction",
                "ValidatingAdmissionPolicy",
                "ValidatingAdmissionWebhook",
                "ResourceQuota"
            ]
        );
    }

    fn pod_create<'a>(object: &'a mut serde_json::Value, namespace: &'a str) -> Attributes<'a> {
        Attributes {
            operation: Operation::Create,
            user: UserInfo::default(),
            resource: GroupVersionResource { group: "", version: "v1", resource: "pods" },
            subresource: "",
            kind: GroupVersionKind { group: "", version: "v1", kind: "Pod" },
            namespace,
            name: "p",
            object: Some(object),
            old_object: None,
            dry_run: false,
            options: OperationOptions::Create { field_manager: None },
            warnings: Default::default(),
            audit_annotations: Default::default(),
        }
    }

    #[tokio::test]
    async fn the_chain_runs_what_is_enabled_and_stops_at_the_first_refusal() {
        let state = Snapshot::default()
            .with(
                "",
                "namespaces",
                json!({"metadata": {"name": "ns"}, "status": {"phase": "Active"}}),
            )
            .with(
                "",
                "namespaces",
                json!({"metadata": {"name": "old"}, "status": {"phase": "Terminating"}}),
            )
            .with(
                "",
                "serviceaccounts",
                json!({"metadata": {"namespace": "ns", "name": "default"}}),
            );
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {}});
        Chain::with_defaults().admit(&mut pod_create(&mut pod, "ns"), &state).await.unwrap();
        assert_eq!(pod["spec"]["priority"], 0);
        assert_eq!(pod["spec"]["tolerations"].as_array().map(Vec::len), Some(2));
        assert_eq!(pod["spec"]["serviceAccountName"], "default");

        let fewer = Chain::from_flags(
            &[],
            &strings(&["DefaultTolerationSeconds", "ServiceAccount"]),
            Settings::default(),
        )
        .unwrap();
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {}});
        fewer.admit(&mut pod_create(&mut pod, "ns"), &state).await.unwrap();
        assert_eq!(pod["spec"], json!({"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}));

        // NamespaceLifecycle comes first: the pod is refused before anything changes it.
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {}});
        let e = Chain::with_defaults()
            .admit(&mut pod_create(&mut pod, "old"), &state)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("because it is being terminated"), "{e}");
        assert_eq!(pod["spec"], json!({}));
        // (ServiceAccount off too: there are no accounts in these namespaces.)
        let no_lifecycle = Chain::from_flags(
            &[],
            &strings(&["NamespaceLifecycle", "ServiceAccount"]),
            Settings::default(),
        )
        .unwrap();
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {}});
        no_lifecycle.admit(&mut pod_create(&mut pod, "old"), &state).await.unwrap();
        no_lifecycle.admit(&mut pod_create(&mut json!({}), "missing"), &state).await.unwrap();
    }
}
