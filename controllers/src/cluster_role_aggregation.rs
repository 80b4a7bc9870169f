//! `clusterrole-aggregation-controller`, as kube-controller-manager's: a ClusterRole with an
//! `aggregationRule` gets as its `rules` the union of the rules of the ClusterRoles its
//! `clusterRoleSelectors` match (itself excepted): selectors in order, the matching roles of
//! each by name, each rule once, in the order first met. Written only when different, so the
//! bootstrap `admin`, `edit` and `view` roles follow the roles labelled into them.
//!
//! Start at [`run`]: ClusterRoles are the queue (kube-runtime's `Controller`) and the sync
//! of any ClusterRole syncs every aggregated one, as upstream queues them all on every change.
//! The sync reads the controller's own store, which holds the change that queued it: a second
//! watch as the trigger could run ahead of that store and aggregate the old rules. [`aggregate`]
//! computes the rules, without I/O.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use rkube_apis::selectors::labels::LabelSelector;
use serde_json::json;

/// The field manager of the rule patches (upstream's).
const MANAGER: &str = "clusterrole-aggregation-controller";

/// Why a sync failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

/// The rules `role` aggregates from `roles`; `None` when it has no aggregation rule.
pub fn aggregate(role: &ClusterRole, roles: &[Arc<ClusterRole>]) -> Option<Vec<PolicyRule>> {
    let rule = role.aggregation_rule.as_ref()?;
    let mut sorted: Vec<&ClusterRole> = roles.iter().map(|r| &**r).collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in rule.cluster_role_selectors.iter().flatten() {
        let value = serde_json::to_value(selector).unwrap_or_default();
        // An invalid selector matches nothing (upstream gives up on the role).
        let selector = LabelSelector::from_api(&value).unwrap_or_else(|_| LabelSelector::nothing());
        for source in &sorted {
            if source.metadata.name == role.metadata.name {
                continue;
            }
            let labels = source.metadata.labels.clone().unwrap_or_default();
            if !selector.matches(&labels) {
                continue;
            }
            for r in source.rules.iter().flatten() {
                if !rules.contains(r) {
                    rules.push(r.clone());
                }
            }
        }
    }
    Some(rules)
}

/// Runs the controller until the task is aborted.
pub async fn run(client: Client) {
    let api = Api::<ClusterRole>::all(client.clone());
    // One sync at a time: each reads the whole store and may write any aggregated role.
    let controller = Controller::new(api, watcher::Config::default())
        .with_config(controller::Config::default().concurrency(1));
    let context =
        Arc::new(Context { client, store: controller.store(), written: Mutex::default() });
    controller
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "clusterrole-aggregation-controller reconcile");
            }
        })
        .await;
}

/// What the syncs share.
struct Context {
    client: Client,
    store: Store<ClusterRole>,
    /// By aggregated role: the resourceVersion it had when this controller last wrote its
    /// rules, and those rules. While the store still shows that version, the write is not in
    /// it yet, and the same rules are not written again.
    written: Mutex<HashMap<String, Written>>,
}

/// A role's resourceVersion before a write of this controller's, and the rules written.
type Written = (Option<String>, Vec<PolicyRule>);

fn error_policy(_: Arc<ClusterRole>, error: &Error, _: Arc<Context>) -> Action {
    tracing::warn!(%error, "clusterrole-aggregation-controller");
    Action::requeue(Duration::from_secs(1))
}

/// Any ClusterRole changed (it may be a source of any aggregated one, or stop being one):
/// every aggregated role is brought up to date from the store.
async fn reconcile(_changed: Arc<ClusterRole>, ctx: Arc<Context>) -> Result<Action, Error> {
    let roles = ctx.store.state();
    for role in roles.iter().filter(|r| r.aggregation_rule.is_some()) {
        sync(&ctx, role, &roles).await?;
    }
    Ok(Action::await_change())
}

/// Writes `role`'s aggregated rules when they differ from what it has.
async fn sync(ctx: &Context, role: &ClusterRole, roles: &[Arc<ClusterRole>]) -> Result<(), Error> {
    let Some(rules) = aggregate(role, roles) else { return Ok(()) };
    // nil and empty are the same to upstream's semantic comparison.
    if role.rules.as_deref().unwrap_or_default() == rules.as_slice() {
        return Ok(());
    }
    let name = role.name_any();
    let version = role.metadata.resource_version.clone();
    let pending =
        ctx.written.lock().expect("lock").get(&name) == Some(&(version.clone(), rules.clone()));
    if pending {
        return Ok(());
    }
    let api = Api::<ClusterRole>::all(ctx.client.clone());
    let patch = json!({"rules": rules});
    match api
        .patch(
            &name,
            &PatchParams { field_manager: Some(MANAGER.into()), ..Default::default() },
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => {
            tracing::info!(role = name, rules = rules.len(), "aggregated");
            ctx.written.lock().expect("lock").insert(name, (version, rules));
        }
        Err(e) if crate::api_errors::code(&e) == Some(404) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::AggregationRule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as ApiSelector;
    use std::collections::BTreeMap;

    fn rule(verb: &str, resource: &str) -> PolicyRule {
        PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec![resource.into()]),
            verbs: vec![verb.into()],
            ..Default::default()
        }
    }

    fn role(name: &str, labels: &[(&str, &str)], rules: Vec<PolicyRule>) -> Arc<ClusterRole> {
        let mut r = ClusterRole { rules: Some(rules), ..Default::default() };
        r.metadata.name = Some(name.into());
        r.metadata.labels =
            Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        Arc::new(r)
    }

    fn aggregated(name: &str, selectors: &[&str]) -> ClusterRole {
        let mut r = (*role(name, &[(selectors[0], "true")], vec![rule("x", "self")])).clone();
        r.aggregation_rule = Some(AggregationRule {
            cluster_role_selectors: Some(
                selectors
                    .iter()
                    .map(|l| ApiSelector {
                        match_labels: Some(BTreeMap::from([(l.to_string(), "true".into())])),
                        ..Default::default()
                    })
                    .collect(),
            ),
        });
        r
    }

    #[test]
    fn union_by_selector_then_name_without_duplicates_or_itself() {
        let view = aggregated("view", &["to-view", "to-all"]);
        let roles = vec![
            Arc::new(view.clone()),
            role("b", &[("to-view", "true")], vec![rule("get", "pods"), rule("list", "pods")]),
            role("a", &[("to-view", "true")], vec![rule("watch", "pods"), rule("get", "pods")]),
            role("c", &[("to-all", "true")], vec![rule("get", "nodes"), rule("get", "pods")]),
            role("d", &[("other", "true")], vec![rule("delete", "pods")]),
        ];
        assert_eq!(
            aggregate(&view, &roles).unwrap(),
            vec![
                rule("watch", "pods"),
                rule("get", "pods"),
                rule("list", "pods"),
                rule("get", "nodes")
            ]
        );
        assert_eq!(aggregate(&roles[1], &roles), None);
        let none = aggregated("lonely", &["nobody"]);
        assert_eq!(aggregate(&none, &roles).unwrap(), Vec::<PolicyRule>::new());
    }
}
