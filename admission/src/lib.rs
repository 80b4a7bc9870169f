//! The admission chain: what the API server changes and checks in a write after the object is
//! decoded and before it is stored, as kube-apiserver's admission plugins do.
//!
//! Start at [`Chain`]: it is built once from kube-apiserver's flags (`--enable-admission-plugins`,
//! `--disable-admission-plugins`, see [`chain::enabled`]) and runs, for every create, update
//! (the resource and its subresources) and delete, first the [`MutatingPlugin`]s in upstream's
//! order ([`chain::ALL_ORDERED`]), then — after the registry's own validation — the
//! [`ValidatingPlugin`]s. A plugin sees the request as [`Attributes`] (operation, user,
//! resource, subresource, kind, namespace, name, object, old object, dry-run, options) and
//! reads the rest of the cluster through a [`ClusterState`] reader, which the server backs
//! with its watch caches: plugins never touch the store. A refusal is an [`AdmissionError`],
//! which the server answers with the `Status` upstream sends (403 Forbidden, 404, ...).
//!
//! The plugins: [`namespace_lifecycle`] (NamespaceLifecycle), [`limit_ranger`] (LimitRanger),
//! [`service_account`] (ServiceAccount), [`node_restriction`] (NodeRestriction),
//! [`taint_nodes_by_condition`] (TaintNodesByCondition), [`pod_security`] (PodSecurity),
//! [`priority`] (Priority), [`default_toleration_seconds`] (DefaultTolerationSeconds),
//! [`runtime_class`] (RuntimeClass), [`default_ingress_class`] (DefaultIngressClass), and the certificate checks
//! [`certificate_approval`] (CertificateApproval), [`certificate_signing`]
//! (CertificateSigning) and [`certificate_subject_restriction`]
//! (CertificateSubjectRestriction), the storage ones [`default_storage_class`]
//! (DefaultStorageClass), [`storage_object_in_use_protection`] (StorageObjectInUseProtection)
//! and [`persistent_volume_claim_resize`] (PersistentVolumeClaimResize), and
//! [`resource_quota`] (ResourceQuota), the CEL policies of [`validating_admission_policy`]
//! (ValidatingAdmissionPolicy), and the admission webhooks [`webhook`]
//! (MutatingAdmissionWebhook, ValidatingAdmissionWebhook), which call out over HTTPS through a
//! [`webhook::Backend`] the server hands the chain with [`Chain::set_webhook_backend`]. A
//! mutating webhook that changes the object makes the chain run the mutating plugins a second
//! time ([`reinvocation`]). Plugins that need an authorization decision ask the
//! server's authorizer through [`authorizer::Authorizer`], which the server hands the chain
//! with [`Chain::set_authorizer`]. Plugins tell the client things through
//! [`Attributes::warnings`], which the server sends as `Warning` headers. Shared helpers:
//! [`tolerations`] (upstream's merging of tolerations); resource lists and what a pod asks
//! for are `rkube_apis::quota`'s, shared with the ResourceQuota plugin and controller. A new plugin is one module implementing one or both traits, and
//! one row in [`chain`].

pub mod attributes;
pub mod authorizer;
pub mod certificate_approval;
pub mod certificate_signing;
pub mod certificate_subject_restriction;
pub mod chain;
pub mod default_ingress_class;
pub mod default_storage_class;
pub mod default_toleration_seconds;
pub mod error;
pub mod limit_ranger;
pub mod namespace_lifecycle;
pub mod node_restriction;
pub mod persistent_volume_claim_resize;
pub mod pod_refs;
pub mod pod_security;
pub mod priority;
pub mod reinvocation;
pub mod resource_quota;
pub mod runtime_class;
pub mod service_account;
pub mod state;
pub mod storage_object_in_use_protection;
pub mod taint_nodes_by_condition;
pub mod tolerations;
pub mod validating_admission_policy;
pub mod webhook;

pub use attributes::{
    AnnotationError, Attributes, AuditAnnotation, AuditAnnotations, AuditLevel, GroupVersionKind,
    GroupVersionResource, Operation, OperationOptions, UserInfo, Warnings,
};
pub use authorizer::{Authorizer, AuthorizerSlot, ResourceCheck};
pub use chain::{Chain, ConfigError, Settings};
pub use error::{AdmissionError, Cause, Refusal};
pub use reinvocation::Reinvocation;
pub use state::{ClusterState, Freshness, GroupResource, Object};

/// A plugin that may change the object (and refuse the request). Mutating plugins run before
/// the object is validated.
#[async_trait::async_trait]
pub trait MutatingPlugin: Send + Sync {
    /// The plugin's name, as the flags spell it.
    fn name(&self) -> &'static str;

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError>;

    /// [`MutatingPlugin::admit`] within the request's [`Reinvocation`] context, as the chain
    /// calls it: plugins that may ask for a second round (webhooks) override this.
    async fn admit_in(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
        reinvocation: &mut Reinvocation,
    ) -> Result<(), AdmissionError> {
        let _ = reinvocation;
        self.admit(a, state).await
    }
}

/// A plugin that only checks: it runs after the object passed validation, on the object as
/// it will be stored.
#[async_trait::async_trait]
pub trait ValidatingPlugin: Send + Sync {
    /// The plugin's name, as the flags spell it.
    fn name(&self) -> &'static str;

    async fn validate(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError>;
}
