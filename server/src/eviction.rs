//! `pods/eviction`: a delete of a pod that respects its PodDisruptionBudget, as upstream's
//! eviction REST (`pkg/registry/core/pod/storage/eviction.go`). The `Eviction` is admitted
//! as a create of the subresource (NodeRestriction lets a node evict only its own pods;
//! webhooks see `CREATE pods/eviction`), and the writes it makes after that are not
//! admitted again, as upstream's are not.
//!
//! What happens, in upstream's order:
//!
//! 1. A pod that has finished, is still `Pending` or is being deleted causes no further
//!    disruption: it is deleted at once, without a budget (with a resourceVersion
//!    precondition unless it has finished, so that it cannot become ready meanwhile).
//! 2. The budgets of the pod's namespace whose selector matches it are found: more than one
//!    is a 500; none, and the pod is deleted.
//! 3. A pod that is not ready is deleted without using up the budget when the budget's
//!    `unhealthyPodEvictionPolicy` is `AlwaysAllow`, or when the budget is met anyway
//!    (`currentHealthy >= desiredHealthy > 0`), with a precondition on its resourceVersion
//!    (a conflict there is a 429, so clients retry).
//! 4. Otherwise the budget must allow a disruption: `disruptionsAllowed` is decremented and
//!    the pod recorded in `disruptedPods` (for the disruption controller) in a write with a
//!    resourceVersion precondition, retried on conflict on a fresh read; `disruptionsAllowed:
//!    0` is a 429 `TooManyRequests` with the `DisruptionBudget` cause, which `kubectl drain`
//!    waits on and retries.
//! 5. The pod gets the `DisruptionTarget` condition (`EvictionByEvictionAPI`) and is deleted
//!    with the Eviction's `deleteOptions` (grace period, preconditions, dry run).

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use rkube_apis::resources::ResourceInfo;
use rkube_apis::selectors::labels::LabelSelector;
use serde_json::{json, Value};

use crate::admission::Write;
use crate::handlers as api;
use crate::negotiate::{self, Output};
use crate::object;
use crate::registry::{DeleteOptions, Filter, ListOptions, Registry, WriteOptions};
use crate::status::{ApiError, ApiResult, Cause};
use crate::subresources::{Call, Replied};

/// How often a write that lost a race is tried (upstream's `EvictionsRetry`: 20 steps).
const RETRIES: usize = 20;
/// The pause between those tries (500 ms, with upstream's 10% jitter).
const RETRY_INTERVAL: Duration = Duration::from_millis(500);
/// Past this many recorded disruptions the disruption controller has not caught up with, a
/// budget lets no pod go (upstream's `MaxDisruptedPodSize`).
const MAX_DISRUPTED_PODS: usize = 2000;
const TOO_MANY_REQUESTS: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// The `pods/eviction` handler (a row of the subresource table).
pub fn serve(c: Call<'_>) -> Replied<'_> {
    Box::pin(async move {
        let requester = api::requester(&c.req.user);
        let mut body: Value = c.req.body.decode()?;
        let query_dry_run = api::dry_run(c.query)?;
        let write = Write {
            operation: rkube_admission::Operation::Create,
            info: c.info,
            namespace: c.namespace,
            name: c.name,
            subresource: Some("eviction"),
            dry_run: query_dry_run,
            user: Some(&requester),
            options: rkube_admission::OperationOptions::Create { field_manager: None },
        };
        let registry = &c.state.registry;
        registry.admit(&write, Some(&mut body), None).await?;
        if body["metadata"]["name"].as_str().unwrap_or("") != c.name {
            return Err(ApiError::bad_request(
                "name in URL does not match name in Eviction object",
            ));
        }
        let query: Vec<&str> = if query_dry_run { vec!["All"] } else { Vec::new() };
        let options = delete_options(&body["deleteOptions"], &query)?;
        registry.validate_admission(&write, Some(&mut body), None).await?;
        let eviction = Eviction {
            registry,
            pods: c.info,
            namespace: c.namespace.unwrap_or(""),
            name: c.name,
            options,
        };
        eviction.run().await?;
        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
        Ok(negotiate::respond(StatusCode::CREATED, &status, Output::Json, &[]))
    })
}

/// The Eviction's `deleteOptions`, with the request's `dryRun` carried into them (upstream's
/// `propagateDryRun`: the two may not disagree).
fn delete_options(body: &Value, query: &[&str]) -> ApiResult<DeleteOptions> {
    let mut options = DeleteOptions { admitted: true, ..DeleteOptions::default() };
    if body.is_object() {
        api::read_delete_options(body, &mut options);
    }
    let in_body: Vec<&str> = body["dryRun"]
        .as_array()
        .map(|d| d.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !in_body.is_empty() && !query.is_empty() && in_body != query {
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "",
            format!(
                "Non-matching dry-run options in request and content: [{}] and [{}]",
                query.join(" "),
                in_body.join(" ")
            ),
        ));
    }
    // Any value is a dry run, as upstream's `IsDryRun`.
    options.dry_run = !in_body.is_empty() || !query.is_empty();
    Ok(options)
}

/// One eviction under way.
struct Eviction<'a> {
    registry: &'a Registry,
    pods: &'a ResourceInfo,
    namespace: &'a str,
    name: &'a str,
    options: DeleteOptions,
}

fn phase(pod: &Value) -> &str {
    pod["status"]["phase"].as_str().unwrap_or("")
}

/// A pod whose eviction disrupts nothing more: finished, not yet running, or going.
fn can_ignore_budget(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed" | "Pending") || object::is_terminating(pod)
}

/// Whether the delete of a pod evicted without a budget is pinned to the resourceVersion
/// read, so that it cannot become ready unnoticed: all but finished or going pods.
fn enforce_resource_version(pod: &Value) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && !object::is_terminating(pod)
}

fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
}

fn is_conflict(e: &ApiError) -> bool {
    e.code == StatusCode::CONFLICT
}

/// Upstream's 429 for a budget that cannot be judged now, with the `DisruptionBudget` cause.
fn too_many_requests(cause: String, retry_after: Option<u32>) -> ApiError {
    let mut e = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "TooManyRequests", TOO_MANY_REQUESTS);
    e.details.causes =
        vec![Cause { reason: "DisruptionBudget", message: cause, field: String::new() }];
    e.details.retry_after = retry_after;
    e
}

/// The budget's status is older than its spec: wait until the controller caught up.
fn still_processed(budget: &str) -> ApiError {
    too_many_requests(
        format!("The disruption budget {budget} is still being processed by the server."),
        Some(10),
    )
}

/// Upstream's `NewForbidden(policy.Resource("poddisruptionbudget"), name, err)`.
fn budget_forbidden(budget: &str, why: &str) -> ApiError {
    let mut e =
        ApiError::forbidden(format!("poddisruptionbudget.policy {budget:?} is forbidden: {why}"));
    e.details.name = Some(budget.to_string());
    e.details.group = Some("policy".into());
    e.details.kind = Some("poddisruptionbudget".into());
    e
}

impl Eviction<'_> {
    async fn run(&self) -> ApiResult<()> {
        // A resourceVersion the client named is not retried past (upstream's `shouldRetry`).
        let retry_conflicts = self.options.precondition_resource_version.is_none();
        let mut tries = 0;
        let pod = loop {
            tries += 1;
            let pod = self.registry.get(self.pods, Some(self.namespace), self.name).await?;
            if !can_ignore_budget(&pod) {
                break pod;
            }
            let mut options = self.options.clone();
            if enforce_resource_version(&pod) && options.precondition_resource_version.is_none() {
                options.precondition_resource_version =
                    object::resource_version(&pod).map(String::from);
            }
            match self.mark_and_delete(options).await {
                Err(e) if is_conflict(&e) && retry_conflicts && tries < RETRIES => {
                    tokio::time::sleep(RETRY_INTERVAL).await;
                }
                done => return done,
            }
        };

        let budgets = self.budgets_of(&pod).await?;
        if budgets.len() > 1 {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ));
        }
        let mut options = self.options.clone();
        let mut unhealthy_bypass = None;
        if let Some(budget) = budgets.first() {
            let budget_name = object::name(budget).unwrap_or("").to_string();
            let status = &budget["status"];
            let current = status["currentHealthy"].as_i64().unwrap_or(0);
            let desired = status["desiredHealthy"].as_i64().unwrap_or(0);
            let always = budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow";
            // A pod that is not ready does not count towards the budget: it may go without
            // using it up when the policy says so or the budget is met anyway.
            if !is_ready(&pod) && (always || (current >= desired && desired > 0)) {
                options.precondition_resource_version =
                    object::resource_version(&pod).map(String::from);
                unhealthy_bypass = Some(budget_name);
            } else {
                self.decrement(budget).await?;
            }
        }
        match self.mark_and_delete(options).await {
            // The pod changed since it was judged unhealthy: let the client ask again.
            Err(e)
                if is_conflict(&e)
                    && unhealthy_bypass.is_some()
                    && self.options.precondition_resource_version.is_none() =>
            {
                Err(still_processed(unhealthy_bypass.as_deref().unwrap_or("")))
            }
            done => done,
        }
    }

    /// The budgets of the pod's namespace whose selector matches it (an invalid selector
    /// matches nothing; an empty one every pod, as policy/v1 says).
    async fn budgets_of(&self, pod: &Value) -> ApiResult<Vec<Value>> {
        let info = self.budget_info()?;
        let everything = Filter::everything();
        let page = self
            .registry
            .list(&info, Some(self.namespace), &ListOptions::default(), &everything)
            .await?;
        let labels = &pod["metadata"]["labels"];
        Ok(page
            .items
            .into_iter()
            .filter(|budget| {
                LabelSelector::from_api(&budget["spec"]["selector"])
                    .is_ok_and(|s| s.matches_with(|key| labels.get(key).and_then(Value::as_str)))
            })
            .collect())
    }

    fn budget_info(&self) -> ApiResult<Arc<ResourceInfo>> {
        let resources = self.registry.resources();
        resources
            .storage_version_of("policy", "poddisruptionbudgets")
            .cloned()
            .ok_or_else(|| ApiError::internal("no resource policy/poddisruptionbudgets"))
    }

    /// Takes one allowed disruption from the budget, on a fresh read after each lost race
    /// (upstream's `checkAndDecrement` under `RetryOnConflict`).
    async fn decrement(&self, budget: &Value) -> ApiResult<()> {
        let info = self.budget_info()?;
        let name = object::name(budget).unwrap_or("").to_string();
        let mut budget = budget.clone();
        for tries in 1..=RETRIES {
            if tries > 1 {
                tokio::time::sleep(RETRY_INTERVAL).await;
                budget = self.registry.get(&info, Some(self.namespace), &name).await?;
            }
            match self.check_and_decrement(&info, &budget).await {
                Err(e) if is_conflict(&e) && tries < RETRIES => continue,
                done => return done,
            }
        }
        Ok(())
    }

    async fn check_and_decrement(&self, info: &ResourceInfo, budget: &Value) -> ApiResult<()> {
        let name = object::name(budget).unwrap_or("");
        let status = &budget["status"];
        let generation = budget["metadata"]["generation"].as_i64().unwrap_or(0);
        if status["observedGeneration"].as_i64().unwrap_or(0) < generation {
            return Err(still_processed(name));
        }
        let allowed = status["disruptionsAllowed"].as_i64().unwrap_or(0);
        if allowed < 0 {
            return Err(budget_forbidden(name, "pdb disruptions allowed is negative"));
        }
        let disrupted = status["disruptedPods"].as_object().map_or(0, |m| m.len());
        if disrupted > MAX_DISRUPTED_PODS {
            return Err(budget_forbidden(
                name,
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            ));
        }
        if allowed == 0 {
            let cause = format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                status["desiredHealthy"].as_i64().unwrap_or(0),
                status["currentHealthy"].as_i64().unwrap_or(0),
            );
            return Err(too_many_requests(cause, None));
        }
        if self.options.dry_run {
            return Ok(());
        }
        let now = object::now();
        let mut updated = budget.clone();
        updated["status"]["disruptionsAllowed"] = json!(allowed - 1);
        if allowed - 1 == 0 {
            rkube_apis::kinds::policy::update_disruption_allowed_condition(
                &mut updated["status"],
                &now,
            );
        }
        if !updated["status"]["disruptedPods"].is_object() {
            updated["status"]["disruptedPods"] = json!({});
        }
        updated["status"]["disruptedPods"][self.name] = json!(now);
        let precondition = object::resource_version(budget).map(String::from);
        // Upstream writes through its loopback client, recorded as `kube-apiserver`'s.
        let options = WriteOptions {
            field_manager: Some("kube-apiserver".into()),
            ..WriteOptions::default()
        };
        self.registry
            .modify(
                info,
                Some(self.namespace),
                name,
                Some("status"),
                &options,
                precondition,
                |_| Ok(updated.clone()),
            )
            .await?;
        Ok(())
    }

    /// Marks the pod a `DisruptionTarget` and deletes it (upstream's
    /// `addConditionAndDeletePod`): the condition goes on the pod as it is now, once its
    /// preconditions hold; the delete is then pinned to the resourceVersion the condition
    /// gave, when it is pinned at all.
    async fn mark_and_delete(&self, mut options: DeleteOptions) -> ApiResult<()> {
        if !options.dry_run {
            let write = WriteOptions { admitted: true, ..WriteOptions::default() };
            let preconditions = &options;
            let marked = self
                .registry
                .modify(
                    self.pods,
                    Some(self.namespace),
                    self.name,
                    Some("status"),
                    &write,
                    None,
                    |latest| {
                        check_preconditions(latest, self.name, preconditions)?;
                        let mut pod = latest.clone();
                        set_disruption_target(&mut pod["status"], &object::now());
                        Ok(pod)
                    },
                )
                .await?;
            if options.precondition_resource_version.is_some() {
                options.precondition_resource_version =
                    object::resource_version(&marked).map(String::from);
            }
        }
        self.registry.delete(self.pods, Some(self.namespace), self.name, &options).await?;
        Ok(())
    }
}

/// The delete's preconditions checked against the pod about to be marked, with upstream's
/// messages.
fn check_preconditions(pod: &Value, name: &str, options: &DeleteOptions) -> ApiResult<()> {
    let conflict = |detail: String| ApiError::conflict("", "Pod", name, &detail);
    let uid = pod["metadata"]["uid"].as_str().unwrap_or("");
    if let Some(want) = options.precondition_uid.as_deref().filter(|u| !u.is_empty()) {
        if want != uid {
            return Err(conflict(format!("the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated")));
        }
    }
    let version = object::resource_version(pod).unwrap_or("");
    if let Some(want) = options.precondition_resource_version.as_deref().filter(|v| !v.is_empty()) {
        if want != version {
            return Err(conflict(format!("the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({version}). The object might have been modified")));
        }
    }
    Ok(())
}

/// The pod's `DisruptionTarget` condition set `True` (`EvictionByEvictionAPI`), as
/// upstream's `UpdatePodCondition`: the transition time changes only with the status.
fn set_disruption_target(status: &mut Value, now: &str) {
    let mut condition = json!({
        "type": "DisruptionTarget",
        "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": now,
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    });
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let conditions = status["conditions"].as_array_mut().expect("conditions list");
    match conditions.iter_mut().find(|c| c["type"] == "DisruptionTarget") {
        Some(old) => {
            if old["status"] == "True" {
                condition["lastTransitionTime"] = old["lastTransitionTime"].clone();
            }
            *old = condition;
        }
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkube_admission::{AdmissionError, Attributes, ClusterState, Operation, ValidatingPlugin};
    use rkube_apis::resources::Resources;

    /// Refuses every delete and every status write, as a policy on DELETE pods would.
    struct RefuseDeletes;

    #[async_trait::async_trait]
    impl ValidatingPlugin for RefuseDeletes {
        fn name(&self) -> &'static str {
            "RefuseDeletes"
        }

        async fn validate(
            &self,
            a: &Attributes<'_>,
            _: &dyn ClusterState,
        ) -> Result<(), AdmissionError> {
            if a.operation == Operation::Delete || a.subresource == "status" {
                return Err(AdmissionError::Forbidden {
                    group: String::new(),
                    resource: "pods".into(),
                    name: a.name.to_string(),
                    reason: "no deletes here".into(),
                    causes: Vec::new(),
                });
            }
            Ok(())
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_evictions_own_writes_are_not_admitted_again() {
        let dir = std::env::temp_dir().join(format!("rkube-eviction-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = rkube_store::SqliteStore::open(&dir, Default::default()).unwrap();
        let ranges = crate::services::ServiceRanges::parse("10.43.0.0/16", (30000, 32767));
        let mut registry = Registry::new(Arc::new(store), ranges.unwrap());
        registry.admission = rkube_admission::Chain::new(&[], Default::default());
        registry.guards.push(Arc::new(RefuseDeletes));
        registry.start_caches().await.unwrap();
        let info = |group: &str, plural: &str| {
            Resources::builtin().storage_version_of(group, plural).unwrap()
        };
        let (namespaces, pods) = (info("", "namespaces"), info("", "pods"));
        let options = WriteOptions::default();
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
        registry.create(namespaces, None, ns, &options).await.unwrap();
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        registry.create(pods, Some("default"), pod, &options).await.unwrap();
        // A plain delete is refused by the policy...
        let refused = registry.delete(pods, Some("default"), "p", &DeleteOptions::default()).await;
        assert_eq!(refused.err().map(|e| e.code), Some(StatusCode::FORBIDDEN));
        // ... an eviction, admitted as the create of pods/eviction, is not refused again.
        let options = DeleteOptions { admitted: true, ..DeleteOptions::default() };
        let eviction =
            Eviction { registry: &registry, pods, namespace: "default", name: "p", options };
        eviction.run().await.unwrap();
        let gone = registry.get(pods, Some("default"), "p").await;
        assert_eq!(gone.err().map(|e| e.code), Some(StatusCode::NOT_FOUND));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn dry_run_is_carried_from_the_request_into_the_delete_options() {
        let none = delete_options(&Value::Null, &[]).unwrap();
        assert!(!none.dry_run && none.admitted);
        assert!(delete_options(&Value::Null, &["All"]).unwrap().dry_run);
        let body = json!({"dryRun": ["All"], "gracePeriodSeconds": 5,
            "preconditions": {"uid": "u", "resourceVersion": "7"}});
        let options = delete_options(&body, &[]).unwrap();
        assert!(options.dry_run);
        assert_eq!(options.grace_period_seconds, Some(5));
        assert_eq!(options.precondition_uid.as_deref(), Some("u"));
        assert_eq!(options.precondition_resource_version.as_deref(), Some("7"));
        let err = delete_options(&json!({"dryRun": ["Other"]}), &["All"]).unwrap_err();
        assert_eq!(err.code, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            err.message,
            "Non-matching dry-run options in request and content: [All] and [Other]"
        );
    }

    #[test]
    fn which_pods_go_without_a_budget() {
        let pod = |phase: &str, deleting: bool| {
            let mut pod = json!({"metadata": {"name": "p"}, "status": {"phase": phase}});
            if deleting {
                pod["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
            }
            pod
        };
        for (phase, deleting, ignore, enforce) in [
            ("Running", false, false, true),
            ("Pending", false, true, true),
            ("Succeeded", false, true, false),
            ("Failed", false, true, false),
            ("Running", true, true, false),
        ] {
            let p = pod(phase, deleting);
            assert_eq!(can_ignore_budget(&p), ignore, "{phase} deleting={deleting}");
            assert_eq!(enforce_resource_version(&p), enforce, "{phase} deleting={deleting}");
        }
    }

    #[test]
    fn the_disruption_target_keeps_its_transition_time() {
        let mut status = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        set_disruption_target(&mut status, "2025-01-01T00:00:00Z");
        set_disruption_target(&mut status, "2025-01-01T00:05:00Z");
        let conditions = status["conditions"].as_array().unwrap();
        assert_eq!(conditions.len(), 2);
        assert_eq!(conditions[1]["reason"], "EvictionByEvictionAPI");
        assert_eq!(conditions[1]["lastTransitionTime"], "2025-01-01T00:00:00Z");
    }

    #[test]
    fn a_budget_that_allows_nothing_is_a_429_with_its_cause() {
        let e = too_many_requests(
            "The disruption budget db needs 2 healthy pods and has 2 currently".into(),
            None,
        );
        assert_eq!(
            e.to_status(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Cannot evict pod as it would violate the pod's disruption budget.",
                "reason": "TooManyRequests", "code": 429,
                "details": {"causes": [{"reason": "DisruptionBudget",
                    "message": "The disruption budget db needs 2 healthy pods and has 2 currently"}]}})
        );
        assert_eq!(still_processed("db").details.retry_after, Some(10));
        assert_eq!(
            budget_forbidden("db", "pdb disruptions allowed is negative").message,
            "poddisruptionbudget.policy \"db\" is forbidden: pdb disruptions allowed is negative"
        );
    }
}
