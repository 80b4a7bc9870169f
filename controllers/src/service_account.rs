//! `serviceaccount-controller`, as kube-controller-manager's: the `default` ServiceAccount
//! in every namespace that is not terminating, made again when deleted (pods that name no
//! account get it, so it must be there right after its namespace: the controller reacts to
//! the namespace's watch event, see [`namespace_objects`](crate::namespace_objects)).

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::ObjectMeta;

use crate::namespace_objects::Ensured;

/// The account every namespace gets.
pub const DEFAULT: &str = "default";

/// The `default` ServiceAccount.
pub struct DefaultServiceAccount;

impl Ensured for DefaultServiceAccount {
    type Kind = ServiceAccount;
    const CONTROLLER: &'static str = "serviceaccount-controller";

    fn name(&self) -> &str {
        DEFAULT
    }

    fn desired(&self, _namespace: &str) -> ServiceAccount {
        ServiceAccount {
            metadata: ObjectMeta { name: Some(DEFAULT.into()), ..Default::default() },
            ..Default::default()
        }
    }

    /// Upstream leaves an existing account as it is.
    fn repaired(&self, _current: &ServiceAccount) -> Option<ServiceAccount> {
        None
    }
}
