//! ResourceQuota: a write that would take a namespace over one of its ResourceQuotas is
//! refused with upstream's 403 (`exceeded quota: q, requested: pods=1, used: pods=2,
//! limited: pods=2`); one that fits is charged to the quotas' `status.used` before it is
//! stored, so that concurrent writers can never together exceed a quota.
//!
//! What an object uses and which quotas count it is [`rkube_apis::quota`]'s (shared with the
//! resource quota controller, which recounts usage and sets `status.hard`; a quota it has not
//! counted yet limits nothing, as upstream).
//!
//! How charging stays exact, as upstream's quota admission does it: requests of one
//! namespace are queued, and whoever holds the namespace's lock takes every queued request,
//! checks them one after another against the quotas as they stand (each admitted request's
//! usage added before the next is checked), and writes each changed quota once, with its
//! resourceVersion as a precondition. A lost race (the controller recounted meanwhile) is
//! checked again against the quota as now stored. The quotas this server wrote last are
//! kept, so a batch never reads a cached copy older than its own write.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rkube_apis::quota::evaluator::Change;
use rkube_apis::quota::{list, Evaluator, ResourceList};
use rkube_apis::selectors::LabelSelector;
use serde_json::{json, Value};

use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::state::{ClusterState, Freshness, GroupResource};
use crate::ValidatingPlugin;

pub const NAME: &str = "ResourceQuota";

const QUOTAS: GroupResource<'static> = GroupResource::new("", "resourcequotas");

/// How many times a batch whose quota writes lost a race is checked again (upstream's 3).
const RETRIES: usize = 3;

/// How long an answer waits for a request that went away before it is dropped.
const ANSWER_TTL: Duration = Duration::from_secs(60);

/// The plugin (see the module doc).
#[derive(Default)]
pub struct ResourceQuota {
    namespaces: Mutex<HashMap<String, Arc<Namespace>>>,
    /// The quotas this server wrote last, by namespace and name.
    written: Mutex<HashMap<(String, String), Value>>,
}

/// One namespace's queue.
#[derive(Default)]
struct Namespace {
    /// Held by whoever checks a batch.
    turn: tokio::sync::Mutex<()>,
    queue: Mutex<Queue>,
}

#[derive(Default)]
struct Queue {
    next_id: u64,
    pending: VecDeque<Arc<Request>>,
    /// Answers for requests checked in another's batch, by id, with when they were made.
    answers: HashMap<u64, (Result<(), AdmissionError>, Instant)>,
}

/// What a batch needs of one request.
struct Request {
    id: u64,
    evaluator: Evaluator,
    change: Change,
    subresource: String,
    object: Value,
    old: Option<Value>,
    dry_run: bool,
    /// The request's refusal with an empty reason, named as upstream names it.
    forbidden: AdmissionError,
}

impl Request {
    fn forbidden(&self, reason: String) -> AdmissionError {
        match self.forbidden.clone() {
            AdmissionError::Forbidden { group, resource, name, causes, .. } => {
                AdmissionError::Forbidden { group, resource, name, reason, causes }
            }
            other => other,
        }
    }
}

/// A quota as a batch holds it (the object shared: each request checked copies the quotas'
/// usage, not the objects).
#[derive(Clone)]
struct Quota {
    value: Arc<Value>,
    name: String,
    hard: ResourceList,
    used: ResourceList,
}

impl Quota {
    fn new(value: Value) -> Quota {
        Quota {
            name: value["metadata"]["name"].as_str().unwrap_or("").to_string(),
            hard: list::from_json(&value["status"]["hard"]),
            used: list::from_json(&value["status"]["used"]),
            value: Arc::new(value),
        }
    }
}

fn revision(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"].as_str().and_then(|r| r.parse().ok()).unwrap_or(0)
}

/// Upstream's `prettyPrintResourceNames`: sorted, comma-separated.
fn names_list(names: &[String]) -> String {
    let mut names = names.to_vec();
    names.sort();
    names.join(",")
}

#[async_trait::async_trait]
impl ValidatingPlugin for ResourceQuota {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn validate(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        let change = match a.operation {
            Operation::Create => Change::Create,
            Operation::Update => Change::Update,
            _ => return Ok(()),
        };
        let Some(object) = a.object() else { return Ok(()) };
        if a.namespace.is_empty() {
            return Ok(());
        }
        let evaluator = Evaluator::of(a.resource.group, a.resource.resource);
        if !evaluator.handles(change, a.subresource, object, a.old_object.unwrap_or(&Value::Null)) {
            return Ok(());
        }
        // Most namespaces have no quota: nothing to queue for.
        let quotas = state
            .list(QUOTAS, Some(a.namespace), &LabelSelector::everything(), Freshness::Cached)
            .await?;
        if quotas.is_empty() {
            return Ok(());
        }
        let namespace = self.namespace(a.namespace);
        let answer = self.admit_in_turn(a, &namespace, evaluator, change, object, state).await;
        self.forget_idle(a.namespace, &namespace);
        answer
    }
}

impl ResourceQuota {
    /// Queues the request in its namespace and answers it once a batch checked it (its own,
    /// or one taken by whoever held the namespace's turn first).
    async fn admit_in_turn(
        &self,
        a: &Attributes<'_>,
        namespace: &Namespace,
        evaluator: Evaluator,
        change: Change,
        object: &Value,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        let request = {
            let mut queue = namespace.queue.lock().expect("quota queue lock");
            queue.next_id += 1;
            let mut object = object.clone();
            // Usage of some objects depends on their namespace: make sure it is set.
            if object["metadata"]["namespace"].as_str().unwrap_or("").is_empty() {
                object["metadata"]["namespace"] = json!(a.namespace);
            }
            let request = Arc::new(Request {
                id: queue.next_id,
                evaluator,
                change,
                subresource: a.subresource.to_string(),
                object,
                old: a.old_object.cloned(),
                dry_run: a.dry_run,
                forbidden: AdmissionError::forbidden(a, ""),
            });
            queue.pending.push_back(request.clone());
            request
        };
        // Bounded: a batch that loses its holder (the request was dropped) leaves its
        // requests neither queued nor answered; they are queued again.
        for _ in 0..RETRIES + 2 {
            let _turn = namespace.turn.lock().await;
            let batch: Vec<Arc<Request>> = {
                let mut queue = namespace.queue.lock().expect("quota queue lock");
                if let Some((answer, _)) = queue.answers.remove(&request.id) {
                    return answer;
                }
                if !queue.pending.iter().any(|r| r.id == request.id) {
                    queue.pending.push_back(request.clone());
                }
                queue.pending.drain(..).collect()
            };
            let answers = self.check_batch(a.namespace, &batch, state).await;
            let mut queue = namespace.queue.lock().expect("quota queue lock");
            let now = Instant::now();
            queue.answers.retain(|_, (_, at)| now.duration_since(*at) < ANSWER_TTL);
            let mut own = None;
            for (r, answer) in batch.iter().zip(answers) {
                if r.id == request.id {
                    own = Some(answer);
                } else {
                    queue.answers.insert(r.id, (answer, now));
                }
            }
            if let Some(answer) = own {
                return answer;
            }
        }
        Err(AdmissionError::Internal("resource quota evaluation did not finish".into()))
    }

    fn namespace(&self, name: &str) -> Arc<Namespace> {
        let mut namespaces = self.namespaces.lock().expect("quota namespaces lock");
        namespaces.entry(name.to_string()).or_default().clone()
    }

    /// Drops a namespace's queue once nobody waits on it, so memory follows the namespaces
    /// in use rather than every namespace ever written to.
    fn forget_idle(&self, name: &str, namespace: &Arc<Namespace>) {
        let mut namespaces = self.namespaces.lock().expect("quota namespaces lock");
        let queue = namespace.queue.lock().expect("quota queue lock");
        // Two references: the map's and the caller's; any other is a request still in it.
        if queue.pending.is_empty() && queue.answers.is_empty() && Arc::strong_count(namespace) == 2
        {
            namespaces.remove(name);
        }
    }

    /// The namespace's quotas as this server last knows them: the cached copy, or the one it
    /// wrote when that is newer.
    async fn quotas(
        &self,
        namespace: &str,
        state: &dyn ClusterState,
        freshness: Freshness,
    ) -> Result<Vec<Quota>, AdmissionError> {
        let listed =
            state.list(QUOTAS, Some(namespace), &LabelSelector::everything(), freshness).await?;
        let written = self.written.lock().expect("quota written lock");
        Ok(listed
            .iter()
            .map(|o| {
                let cached = o.value();
                let key = (namespace.to_string(), o.name().to_string());
                match written.get(&key) {
                    Some(mine) if revision(mine) > revision(&cached) => Quota::new(mine.clone()),
                    _ => Quota::new(cached),
                }
            })
            .collect())
    }

    /// Checks and charges a batch (upstream's `checkQuotas`): each request's answer, in order.
    async fn check_batch(
        &self,
        namespace: &str,
        batch: &[Arc<Request>],
        state: &dyn ClusterState,
    ) -> Vec<Result<(), AdmissionError>> {
        let mut quotas = match self.quotas(namespace, state, Freshness::Cached).await {
            Ok(q) => q,
            Err(e) => return batch.iter().map(|_| Err(e.clone())).collect(),
        };
        // `None`: admitted once its charge is written.
        let mut answers: Vec<Option<Result<(), AdmissionError>>> = vec![None; batch.len()];
        let now = SystemTime::now();
        for attempt in 0..=RETRIES {
            let original = quotas.clone();
            for (i, request) in batch.iter().enumerate() {
                if answers[i].is_some() {
                    continue;
                }
                match check_request(&quotas, request, now) {
                    Err(e) => answers[i] = Some(Err(e)),
                    Ok(None) => answers[i] = Some(Ok(())),
                    Ok(Some(_)) if request.dry_run => answers[i] = Some(Ok(())),
                    Ok(Some(charged)) => quotas = charged,
                }
            }
            let mut failed = Vec::new();
            let mut error = None;
            for (quota, before) in quotas.iter().zip(&original) {
                if list::equals(&quota.used, &before.used) {
                    continue;
                }
                let mut value = (*quota.value).clone();
                value["status"]["used"] = list::to_json(&quota.used);
                match state.update_status(QUOTAS, &value).await {
                    Ok(Some(written)) => {
                        let mut written_map = self.written.lock().expect("quota written lock");
                        if written_map.len() > 10_000 {
                            written_map.clear();
                        }
                        written_map
                            .insert((namespace.to_string(), quota.name.clone()), written.value());
                    }
                    Ok(None) => failed.push(quota.name.clone()),
                    Err(e) => {
                        failed.push(quota.name.clone());
                        error = Some(e);
                    }
                }
            }
            if failed.is_empty() {
                break;
            }
            let last_error = error.unwrap_or_else(|| {
                AdmissionError::Internal(format!(
                    "Operation cannot be fulfilled on resourcequotas {:?}: the object has been modified; please apply your changes to the latest version and try again",
                    failed[0]
                ))
            });
            if attempt == RETRIES {
                for answer in answers.iter_mut().filter(|a| a.is_none()) {
                    *answer = Some(Err(last_error.clone()));
                }
                break;
            }
            // Check the waiting requests again against the quotas whose writes failed, as
            // now stored (those that were written hold their charge already).
            quotas = match self.quotas(namespace, state, Freshness::Latest).await {
                Ok(fresh) => fresh.into_iter().filter(|q| failed.contains(&q.name)).collect(),
                Err(e) => {
                    for answer in answers.iter_mut().filter(|a| a.is_none()) {
                        *answer = Some(Err(e.clone()));
                    }
                    break;
                }
            };
        }
        answers.into_iter().map(|a| a.unwrap_or(Ok(()))).collect()
    }
}

/// Checks one request against `quotas` (upstream's `CheckRequest`): `None` when no quota is
/// affected, else the quotas with the request's usage added.
fn check_request(
    quotas: &[Quota],
    request: &Request,
    now: SystemTime,
) -> Result<Option<Vec<Quota>>, AdmissionError> {
    let evaluator = &request.evaluator;
    let object = &request.object;
    let mut interesting = Vec::new();
    for (i, quota) in quotas.iter().enumerate() {
        if !evaluator.matches(&quota.value, object) {
            continue;
        }
        let restricted = evaluator.matching_resources(quota.hard.keys().map(String::as_str));
        if let Err(e) = evaluator.constraints(&restricted, object) {
            return Err(request.forbidden(format!("failed quota: {}: {e}", quota.name)));
        }
        if restricted.iter().any(|r| !quota.used.contains_key(r)) {
            return Err(request.forbidden(format!(
                "status unknown for quota: {}, resources: {}",
                quota.name,
                names_list(&restricted)
            )));
        }
        interesting.push(i);
    }
    if interesting.is_empty() {
        return Ok(None);
    }
    let usage = evaluator.usage(object, now);
    let negative = list::negative(&usage);
    if !negative.is_empty() {
        return Err(request.forbidden(format!(
            "quota usage is negative for resource(s): {}",
            names_list(&negative)
        )));
    }
    // An update is charged what it adds (to quotas that counted the old object already; a
    // quota that did not is charged the whole new usage).
    let mut deltas: Vec<(usize, ResourceList)> =
        interesting.iter().map(|i| (*i, usage.clone())).collect();
    if request.change == Change::Update {
        let old = request.old.as_ref().filter(|o| !o["metadata"]["resourceVersion"].is_null());
        let Some(old) = old else {
            return Err(request.forbidden(
                "unable to get previous usage since prior version of object was not found".into(),
            ));
        };
        let delta = list::subtract_non_negative(&usage, &evaluator.usage(old, now));
        for (i, d) in deltas.iter_mut() {
            if evaluator.matches(&quotas[*i].value, old) {
                *d = delta.clone();
            }
        }
    }
    let deltas: Vec<(usize, ResourceList)> = deltas
        .into_iter()
        .map(|(i, d)| (i, list::remove_zeros(&d)))
        .filter(|(_, d)| !d.is_empty())
        .collect();
    if deltas.is_empty() {
        return Ok(None);
    }
    let mut out = quotas.to_vec();
    for (i, delta) in deltas {
        let quota = &mut out[i];
        let hard_names: Vec<&String> = quota.hard.keys().collect();
        let requested = list::mask(&delta, &hard_names);
        let used = list::add(&quota.used, &requested);
        if request.subresource != "status" {
            let requested_names: Vec<&String> = requested.keys().collect();
            let exceeded = list::exceeded(&list::mask(&used, &requested_names), &quota.hard);
            if !exceeded.is_empty() {
                return Err(request.forbidden(format!(
                    "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                    quota.name,
                    list::pretty(&list::mask(&requested, &exceeded)),
                    list::pretty(&list::mask(&quota.used, &exceeded)),
                    list::pretty(&list::mask(&quota.hard, &exceeded)),
                )));
            }
        }
        quota.used = used;
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use crate::state::{JsonObject, Object};
    use std::collections::BTreeMap;

    /// A cluster state holding quotas that can be written, as the server's does.
    #[derive(Default)]
    struct Quotas {
        objects: Mutex<BTreeMap<String, Value>>,
        writes: Mutex<usize>,
    }

    impl Quotas {
        fn with(quota: Value) -> Quotas {
            let state = Quotas::default();
            let name = quota["metadata"]["name"].as_str().unwrap().to_string();
            state.objects.lock().unwrap().insert(name, quota);
            state
        }
        fn used(&self, name: &str) -> Value {
            self.objects.lock().unwrap()[name]["status"]["used"].clone()
        }
    }

    #[async_trait::async_trait]
    impl ClusterState for Quotas {
        async fn get(
            &self,
            _: GroupResource<'_>,
            _: Option<&str>,
            name: &str,
            _: Freshness,
        ) -> Result<Option<Arc<dyn Object>>, AdmissionError> {
            let objects = self.objects.lock().unwrap();
            Ok(objects.get(name).map(|v| Arc::new(JsonObject::new(v.clone())) as Arc<dyn Object>))
        }
        async fn list(
            &self,
            _: GroupResource<'_>,
            _: Option<&str>,
            _: &LabelSelector,
            _: Freshness,
        ) -> Result<Vec<Arc<dyn Object>>, AdmissionError> {
            let objects = self.objects.lock().unwrap();
            Ok(objects
                .values()
                .map(|v| Arc::new(JsonObject::new(v.clone())) as Arc<dyn Object>)
                .collect())
        }
        async fn list_by_field(
            &self,
            _: GroupResource<'_>,
            _: Option<&str>,
            _: &str,
            _: &str,
            _: Freshness,
        ) -> Result<Vec<Arc<dyn Object>>, AdmissionError> {
            Ok(vec![])
        }
        async fn update_status(
            &self,
            _: GroupResource<'_>,
            object: &Value,
        ) -> Result<Option<Arc<dyn Object>>, AdmissionError> {
            // Yield first, so concurrent requests pile up behind the batch as they would
            // behind a store write.
            tokio::task::yield_now().await;
            let mut objects = self.objects.lock().unwrap();
            let name = object["metadata"]["name"].as_str().unwrap();
            let stored = objects.get_mut(name).unwrap();
            if stored["metadata"]["resourceVersion"] != object["metadata"]["resourceVersion"] {
                return Ok(None);
            }
            *stored = object.clone();
            let next = revision(stored) + 1;
            stored["metadata"]["resourceVersion"] = json!(next.to_string());
            *self.writes.lock().unwrap() += 1;
            Ok(Some(Arc::new(JsonObject::new(stored.clone()))))
        }
    }

    fn quota(hard: Value, used: Value) -> Value {
        json!({"metadata": {"name": "q", "namespace": "ns", "resourceVersion": "1"},
            "spec": {"hard": hard.clone()}, "status": {"hard": hard, "used": used}})
    }

    fn pod(name: &str, cpu: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}})
    }

    async fn create(
        plugin: &ResourceQuota,
        state: &Quotas,
        resource: &str,
        mut object: Value,
        dry_run: bool,
    ) -> Result<(), AdmissionError> {
        let name = object["metadata"]["name"].as_str().unwrap().to_string();
        let a = Attributes {
            operation: Operation::Create,
            user: UserInfo::default(),
            resource: GroupVersionResource { group: "", version: "v1", resource },
            subresource: "",
            kind: GroupVersionKind { group: "", version: "v1", kind: "Pod" },
            namespace: "ns",
            name: &name,
            object: Some(&mut object),
            old_object: None,
            dry_run,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        };
        plugin.validate(&a, state).await
    }

    #[tokio::test]
    async fn charges_what_fits_and_refuses_the_rest_with_upstreams_message() {
        let plugin = ResourceQuota::default();
        let state = Quotas::with(quota(
            json!({"pods": "2", "requests.cpu": "1"}),
            json!({"pods": "0", "requests.cpu": "0"}),
        ));
        create(&plugin, &state, "pods", pod("a", "500m"), false).await.unwrap();
        assert_eq!(state.used("q"), json!({"pods": "1", "requests.cpu": "500m"}));
        // A dry run is checked, not charged.
        create(&plugin, &state, "pods", pod("b", "500m"), true).await.unwrap();
        assert_eq!(state.used("q"), json!({"pods": "1", "requests.cpu": "500m"}));
        let refused = create(&plugin, &state, "pods", pod("c", "600m"), false).await.unwrap_err();
        assert_eq!(
            refused.to_string(),
            "pods \"c\" is forbidden: exceeded quota: q, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1"
        );
        // Containers must state what a quota limits.
        let bare = json!({"metadata": {"name": "d", "namespace": "ns"}, "spec": {"containers": [{"name": "c"}]}});
        assert_eq!(
            create(&plugin, &state, "pods", bare, false).await.unwrap_err().to_string(),
            "pods \"d\" is forbidden: failed quota: q: must specify requests.cpu for: c"
        );
        // Things the quota does not limit pass untouched.
        let cm = json!({"metadata": {"name": "cm", "namespace": "ns"}});
        create(&plugin, &state, "configmaps", cm, false).await.unwrap();
        assert_eq!(*state.writes.lock().unwrap(), 1);
    }

    #[tokio::test]
    async fn a_quota_not_counted_yet_is_status_unknown() {
        let plugin = ResourceQuota::default();
        let state = Quotas::with(
            json!({"metadata": {"name": "q", "namespace": "ns", "resourceVersion": "1"},
            "spec": {"hard": {"configmaps": "1"}}, "status": {"hard": {"configmaps": "1"}}}),
        );
        let cm = json!({"metadata": {"name": "cm", "namespace": "ns"}});
        assert_eq!(
            create(&plugin, &state, "configmaps", cm, false).await.unwrap_err().to_string(),
            "configmaps \"cm\" is forbidden: status unknown for quota: q, resources: configmaps"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_creators_never_exceed_a_quota() {
        let plugin = Arc::new(ResourceQuota::default());
        let state = Arc::new(Quotas::with(quota(json!({"pods": "10"}), json!({"pods": "0"}))));
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let (plugin, state) = (plugin.clone(), state.clone());
                tokio::spawn(async move {
                    let pod = json!({"metadata": {"name": format!("p{i}"), "namespace": "ns"},
                        "spec": {"containers": [{"name": "c"}]}});
                    create(&plugin, &state, "pods", pod, false).await.is_ok()
                })
            })
            .collect();
        let mut admitted = 0;
        for t in tasks {
            admitted += usize::from(t.await.unwrap());
        }
        assert_eq!(admitted, 10);
        assert_eq!(state.used("q"), json!({"pods": "10"}));
        // Batched: fewer writes than admitted requests would take one at a time is likely,
        // never more.
        assert!(*state.writes.lock().unwrap() <= 10);
        assert!(plugin.namespaces.lock().unwrap().is_empty(), "idle queues are dropped");
    }
}
