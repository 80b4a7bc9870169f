//! The namespace controller: when a namespace is deleted (it then has a `deletionTimestamp`
//! and phase Terminating), delete everything in it, and once nothing is left remove the
//! `kubernetes` finalizer through `namespaces/{name}/finalize`, which lets the API server
//! delete the namespace. As kube-controller-manager's namespace controller.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::discovery::{verbs, Scope};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::Client;

use crate::discovery;

/// The finalizer the API server puts on every namespace.
const FINALIZER: &str = "kubernetes";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

struct Context {
    client: Client,
}

/// Runs the controller until the task is aborted.
pub async fn run(client: Client) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let context = Arc::new(Context { client });
    Controller::new(namespaces, watcher::Config::default())
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "namespace reconcile");
            }
        })
        .await;
}

fn error_policy(_: Arc<Namespace>, error: &Error, _: Arc<Context>) -> Action {
    tracing::warn!(%error, "namespace controller");
    Action::requeue(Duration::from_secs(5))
}

async fn reconcile(ns: Arc<Namespace>, ctx: Arc<Context>) -> Result<Action, Error> {
    let Some(name) = ns.metadata.name.clone() else { return Ok(Action::await_change()) };
    if ns.metadata.deletion_timestamp.is_none() {
        return Ok(Action::await_change());
    }
    let finalizers = ns.spec.as_ref().and_then(|s| s.finalizers.clone()).unwrap_or_default();
    if !finalizers.iter().any(|f| f == FINALIZER) {
        return Ok(Action::await_change());
    }
    let remaining = delete_content(&ctx.client, &name).await?;
    if remaining > 0 {
        tracing::info!(namespace = name, remaining, "waiting for the namespace's objects to go");
        return Ok(Action::requeue(Duration::from_secs(2)));
    }
    // Empty: drop our finalizer; the API server deletes the namespace when none is left.
    let mut finalized = (*ns).clone();
    if let Some(spec) = finalized.spec.as_mut() {
        spec.finalizers = Some(finalizers.into_iter().filter(|f| f != FINALIZER).collect());
    }
    let namespaces: Api<Namespace> = Api::all(ctx.client.clone());
    namespaces.replace_subresource("finalize", &name, &PostParams::default(), &finalized).await?;
    tracing::info!(namespace = name, "namespace emptied and finalized");
    Ok(Action::await_change())
}

/// Deletes every object of every namespaced resource in `namespace`; returns how many are
/// still there (being deleted gracefully, or held by finalizers).
async fn delete_content(client: &Client, namespace: &str) -> Result<usize, Error> {
    let discovery = discovery::run(client).await?;
    let mut remaining = 0;
    // One version per resource: its group's preferred one.
    for (resource, caps) in discovery::preferred_resources(&discovery) {
        if caps.scope != Scope::Namespaced
            || !caps.supports_operation(verbs::LIST)
            || !caps.supports_operation(verbs::DELETE_COLLECTION)
        {
            continue;
        }
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        let objects = api.list(&ListParams::default()).await?;
        if objects.items.is_empty() {
            continue;
        }
        api.delete_collection(&DeleteParams::background(), &ListParams::default()).await?;
        remaining += api.list(&ListParams::default()).await?.items.len();
    }
    Ok(remaining)
}
