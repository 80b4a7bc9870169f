//! One mechanism for the controllers that keep an object of a given name in every namespace
//! (upstream's serviceaccount-controller and root-ca-certificate-publisher-controller): the
//! object is made in every namespace that is not terminating, made again when deleted, and
//! put back in shape ([`Ensured::repaired`]) when edited.
//!
//! Start at [`run`]: it watches Namespaces (the queue, as kube-runtime's `Controller`) and
//! the kind of the object, mapping a change of the named object to its namespace, so a
//! namespace is served as soon as it appears and a deleted object is made again at once.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::serde::de::DeserializeOwned;
use k8s_openapi::NamespaceResourceScope;
use kube::api::{Api, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;

use crate::api_errors;

/// The object a controller keeps in every namespace.
pub trait Ensured: Send + Sync + 'static {
    type Kind: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned
        + Serialize
        + Send
        + Sync
        + 'static;
    /// The controller's name, for logs.
    const CONTROLLER: &'static str;
    /// The object's name in every namespace.
    fn name(&self) -> &str;
    /// The object to make in `namespace` (its name set).
    fn desired(&self, namespace: &str) -> Self::Kind;
    /// `current` with what it lacks put back; `None` when it is as it should be.
    fn repaired(&self, current: &Self::Kind) -> Option<Self::Kind>;
}

/// Why a sync failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

/// Runs the controller until the task is aborted: `reader` watches and reads (the
/// controller manager's own client, as upstream's shared informers), `writer` creates and
/// repairs (the controller's account).
pub async fn run<E: Ensured>(reader: Client, writer: Client, ensured: E) {
    let name = ensured.name().to_string();
    let client = reader.clone();
    let context = Arc::new((Clients { reader, writer }, ensured));
    Controller::new(Api::<Namespace>::all(client.clone()), watcher::Config::default())
        .watches(Api::<E::Kind>::all(client), watcher::Config::default(), move |obj| {
            (obj.name_any() == name)
                .then(|| obj.namespace())
                .flatten()
                .map(|ns| ObjectRef::<Namespace>::new(&ns))
        })
        .run(reconcile::<E>, error_policy::<E>, context)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, controller = E::CONTROLLER, "reconcile");
            }
        })
        .await;
}

/// Who reads and who writes.
struct Clients {
    reader: Client,
    writer: Client,
}

fn error_policy<E: Ensured>(_: Arc<Namespace>, error: &Error, _: Arc<(Clients, E)>) -> Action {
    tracing::warn!(%error, controller = E::CONTROLLER, "sync failed");
    Action::requeue(Duration::from_secs(1))
}

/// Whether objects can be made in `ns`: it is not being deleted.
fn active(ns: &Namespace) -> bool {
    ns.metadata.deletion_timestamp.is_none()
        && ns.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Terminating")
}

async fn reconcile<E: Ensured>(
    ns: Arc<Namespace>,
    ctx: Arc<(Clients, E)>,
) -> Result<Action, Error> {
    let (clients, ensured) = &*ctx;
    let namespace = ns.name_any();
    if !active(&ns) {
        return Ok(Action::await_change());
    }
    let reader: Api<E::Kind> = Api::namespaced(clients.reader.clone(), &namespace);
    let api: Api<E::Kind> = Api::namespaced(clients.writer.clone(), &namespace);
    match reader.get_opt(ensured.name()).await? {
        None => match api.create(&PostParams::default(), &ensured.desired(&namespace)).await {
            Ok(_) => tracing::info!(namespace, controller = E::CONTROLLER, "created"),
            // Someone made it meanwhile (its watch event brings us back), or the namespace
            // started terminating or went away.
            Err(e) if api_errors::code(&e) == Some(409) => {}
            Err(e)
                if api_errors::namespace_terminating(&e) || api_errors::code(&e) == Some(404) => {}
            Err(e) => return Err(e.into()),
        },
        Some(current) => {
            if let Some(fixed) = ensured.repaired(&current) {
                match api.replace(ensured.name(), &PostParams::default(), &fixed).await {
                    Ok(_) => tracing::info!(namespace, controller = E::CONTROLLER, "restored"),
                    Err(e) if api_errors::code(&e) == Some(404) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn terminating_namespaces_get_nothing() {
        let mut ns = Namespace::default();
        assert!(active(&ns));
        ns.status = Some(k8s_openapi::api::core::v1::NamespaceStatus {
            phase: Some("Terminating".into()),
            ..Default::default()
        });
        assert!(!active(&ns));
        let mut ns = Namespace::default();
        ns.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
        assert!(!active(&ns));
    }
}
