//! The `resourcequota-controller`, as kube-controller-manager's: keeps every ResourceQuota's
//! `status.hard` (its `spec.hard`) and `status.used` (what the namespace's objects use of
//! each limited resource, measured by [`rkube_apis::quota`], the same measure the
//! ResourceQuota admission plugin charges with) right, so that a new quota starts to limit
//! and `kubectl describe quota` tells the truth.
//!
//! Start at [`run`]. What admission charges (a create, or an update that uses more) needs no
//! recount, so, as upstream's controller, a namespace is recounted (every quota in it, one
//! status write each when something changed) only when usage may have been given back or a
//! quota's limits changed:
//! - a quota is new, its `spec.hard` changed, or its status does not count every limited
//!   resource yet (admission's charges, which change the status only, are not recounted);
//! - a pod went away or stopped counting for compute (Succeeded, Failed, or past its
//!   deletion grace), seen through the shared pod informer;
//! - a Service or PersistentVolumeClaim changed or went (its type or size may have changed;
//!   upstream looks closer, these writes are rare), or a ConfigMap, Secret or
//!   ReplicationController went (metadata watches);
//! - an object of another resource a quota counts (`count/<resource>.<group>`) went: such a
//!   resource gets a metadata watch of its own when a quota first counts it, as upstream's
//!   quota monitor watches every quotable resource (it ends when the resource is no longer
//!   served);
//! - every `resync` (`--resource-quota-sync-period`), and when a watch starts again.
//!
//! Objects other than pods are listed from the API server when counted. A write that loses
//! a race with admission's charge is retried from a fresh read.
//!
//! A recount never lowers a quota's usage within [`CHARGE_GRACE`] of admission's last charge
//! to it: a request admission charged may not be stored yet (nor in this controller's
//! caches), and lowering the usage then would let others in beyond the quota. The recount
//! is made again once the grace has passed (raising usage is written at once).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, ResourceQuota};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::discovery::ApiResource;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, watcher};
use kube::Client;
use rkube_apis::quota::{list, scopes, Evaluator, ResourceList};
use rkube_runtime::informer::{self, Change};
use rkube_runtime::store::Store;
use rkube_runtime::workqueue::WorkQueue;
use serde_json::Value;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// Upstream's controller name.
pub const NAME: &str = "resourcequota-controller";

/// The longest back-off of a namespace whose recount keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(300);
/// The longest one recount may take before it is retried.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);
/// How long after admission charged a quota its usage may be lowered (see the module doc):
/// far longer than a create takes from its charge to the store and to this controller.
pub const CHARGE_GRACE: Duration = Duration::from_secs(5);

/// The controller's settings (kube-controller-manager's flags).
#[derive(Clone, Debug)]
pub struct Config {
    /// `--concurrent-resource-quota-syncs`.
    pub workers: usize,
    /// `--resource-quota-sync-period`: every namespace with a quota is recounted this often.
    pub resync: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config { workers: 5, resync: Duration::from_secs(300) }
    }
}

/// The core resources watched (by metadata) to recount their namespace: kind, plural, and
/// whether any change of one is recounted (else only its deletion).
const WATCHED: [(&str, &str, bool); 5] = [
    ("Service", "services", true),
    ("PersistentVolumeClaim", "persistentvolumeclaims", true),
    ("ConfigMap", "configmaps", false),
    ("Secret", "secrets", false),
    ("ReplicationController", "replicationcontrollers", false),
];

struct Controller {
    client: Client,
    quotas: Store<ResourceQuota>,
    pods: Store<Pod>,
    queue: WorkQueue<String>,
    /// Resources found by discovery, by (group, plural), for `count/<resource>.<group>`.
    resources: tokio::sync::Mutex<HashMap<(String, String), ApiResource>>,
    /// Per quota (namespace, name): when a change of it not written here was last seen,
    /// and the resourceVersion this controller last wrote.
    seen: std::sync::Mutex<HashMap<(String, String), Seen>>,
    /// The resources, by (group, plural), whose deletions are watched.
    watched: std::sync::Mutex<HashSet<(String, String)>>,
    /// Where a recount asks for a watch of a resource it counts (started by [`run`]).
    watch_requests: UnboundedSender<ApiResource>,
}

#[derive(Default)]
struct Seen {
    charged_at: Option<std::time::Instant>,
    own_version: String,
}

/// Runs the controller until the task is aborted; `pods` and `pod_changes` are the shared
/// pod informer's.
pub async fn run(
    client: Client,
    config: Config,
    pods: Store<Pod>,
    mut pod_changes: UnboundedReceiver<Change>,
) {
    let (tx, mut quota_changes) = tokio::sync::mpsc::unbounded_channel();
    let (quotas, _watch) = informer::start(
        Api::<ResourceQuota>::all(client.clone()),
        watcher::Config::default(),
        vec![tx],
    );
    if quotas.wait_until_ready().await.is_err() {
        return;
    }
    let (watch_requests, mut to_watch) = tokio::sync::mpsc::unbounded_channel();
    let watched = std::iter::once(("", "pods"))
        .chain(WATCHED.iter().map(|(_, plural, _)| ("", *plural)))
        .map(|(group, plural)| (group.to_string(), plural.to_string()))
        .collect();
    let ctl = Arc::new(Controller {
        client,
        quotas,
        pods,
        queue: WorkQueue::new(MAX_BACKOFF),
        resources: Default::default(),
        seen: Default::default(),
        watched: std::sync::Mutex::new(watched),
        watch_requests,
    });
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..config.workers.max(1) {
        let ctl = ctl.clone();
        tasks.spawn(async move {
            let sync = |ns: String| {
                let ctl = ctl.clone();
                async move { ctl.recount(&ns).await }
            };
            ctl.queue.work(NAME, SYNC_TIMEOUT, sync, is_conflict).await
        });
    }
    for (kind, plural, on_change) in WATCHED {
        tasks.spawn(watch_namespaces(
            ctl.clone(),
            ApiResource::from_gvk_with_plural(
                &kube::core::GroupVersionKind::gvk("", "v1", kind),
                plural,
            ),
            on_change,
        ));
    }
    let resync = ctl.clone();
    tasks.spawn(async move {
        let mut tick = tokio::time::interval(config.resync);
        tick.tick().await;
        loop {
            tick.tick().await;
            resync.enqueue_all();
        }
    });
    tracing::info!(workers = config.workers, "{NAME} started");
    // What the last changes left, to tell which next ones need a recount.
    let mut limits = HashMap::new();
    let mut counting = HashMap::new();
    loop {
        tokio::select! {
            Some(change) = quota_changes.recv() => {
                ctl.note_charge(&change);
                match change {
                    Change::Synced => ctl.enqueue_all(),
                    change => {
                        if let Some(ns) = ctl.quota_needs_recount(&change, &mut limits) {
                            ctl.queue.add(ns);
                        }
                    }
                }
            }
            Some(resource) = to_watch.recv() => {
                tasks.spawn(watch_namespaces(ctl.clone(), resource, false));
            }
            Some(change) = pod_changes.recv() => match change {
                Change::Synced => {
                    counting.retain(|(ns, name): &(String, String), _| {
                        ctl.pods.get(&ObjectRef::new(name).within(ns)).is_some()
                    });
                    ctl.enqueue_all();
                }
                change => {
                    if let Some(ns) = ctl.pod_gives_back(&change, &mut counting) {
                        ctl.queue.add(ns);
                    }
                }
            },
            else => break,
        }
    }
    ctl.queue.shut_down();
}

/// Whether the error is a lost race (retried at once, without a warning).
fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

/// Queues the namespace (when it has a quota) of every deletion of `resource`'s objects and,
/// when `on_change`, of every change too (watched by metadata only); every namespace with a
/// quota when the watch (re)starts.
async fn watch_namespaces(ctl: Arc<Controller>, resource: ApiResource, on_change: bool) {
    let api: Api<PartialObjectMeta<DynamicObject>> = Api::all_with(ctl.client.clone(), &resource);
    let mut events = std::pin::pin!(watcher(api, watcher::Config::default()));
    while let Some(event) = events.next().await {
        let namespaces: Vec<String> = match event {
            Ok(watcher::Event::Delete(o)) => o.metadata.namespace.into_iter().collect(),
            Ok(watcher::Event::Apply(o)) if on_change => o.metadata.namespace.into_iter().collect(),
            // A deletion may have been missed before the watch (re)started.
            Ok(watcher::Event::InitDone) => {
                ctl.enqueue_all();
                continue;
            }
            Ok(_) => continue,
            // No longer served (a CustomResourceDefinition went): a quota counting it again
            // starts a new watch.
            Err(watcher::Error::InitialListFailed(kube::Error::Api(s))) if s.code == 404 => {
                let key = (resource.group.clone(), resource.plural.clone());
                ctl.watched.lock().expect("quota watched lock").remove(&key);
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, resource = resource.plural, "quota watch failed; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        for ns in namespaces {
            ctl.enqueue_if_quoted(&ns);
        }
    }
}

impl Controller {
    /// Notes when a quota changed by another hand than this controller's (admission's
    /// charges, or its spec).
    fn note_charge(&self, change: &Change) {
        let Change::Object { namespace: Some(ns), name } = change else { return };
        let key = (ns.clone(), name.clone());
        let quota = self.quotas.get(&ObjectRef::new(name).within(ns));
        let mut seen = self.seen.lock().expect("quota seen lock");
        let Some(quota) = quota else {
            seen.remove(&key);
            return;
        };
        let version = quota.metadata.resource_version.clone().unwrap_or_default();
        let entry = seen.entry(key).or_default();
        if entry.own_version != version {
            entry.charged_at = Some(std::time::Instant::now());
        }
    }

    /// How long a lowering of `namespace/name`'s usage must still wait.
    fn grace_left(&self, namespace: &str, name: &str) -> Option<Duration> {
        let seen = self.seen.lock().expect("quota seen lock");
        let at = seen.get(&(namespace.to_string(), name.to_string()))?.charged_at?;
        CHARGE_GRACE.checked_sub(at.elapsed()).filter(|d| !d.is_zero())
    }

    /// Queues every namespace with a quota.
    fn enqueue_all(&self) {
        for quota in self.quotas.state() {
            self.queue.add(quota.metadata.namespace.clone().unwrap_or_default());
        }
    }

    /// The namespace to recount for a quota's change (upstream's `addQuota` and
    /// `updateQuota`): when the quota is new to this controller, its `spec.hard` changed
    /// since `limits` saw it, or its status does not yet say the limits and the usage of
    /// each limited resource. Admission's charges change only `status.used`: none.
    fn quota_needs_recount(
        &self,
        change: &Change,
        limits: &mut HashMap<(String, String), ResourceList>,
    ) -> Option<String> {
        let Change::Object { namespace: Some(ns), name } = change else { return None };
        let key = (ns.clone(), name.clone());
        let quota = self.quotas.get(&ObjectRef::new(name).within(ns));
        quota_needs_recount(quota.as_deref(), key, limits).then(|| ns.clone())
    }

    /// The namespace to recount for a pod's change (upstream's replenishment filter): when
    /// the pod went away, or stopped counting for compute since `counting` saw it (a pod
    /// first seen not counting is recounted too). New and running pods were charged by
    /// admission: none. Only pods of namespaces with a quota are remembered.
    fn pod_gives_back(
        &self,
        change: &Change,
        counting: &mut HashMap<(String, String), bool>,
    ) -> Option<String> {
        let Change::Object { namespace: Some(ns), name } = change else { return None };
        let key = (ns.clone(), name.clone());
        let quoted = !self.quotas.in_namespace(ns).is_empty();
        let pod = self.pods.get(&ObjectRef::new(name).within(ns));
        pod_gives_back(pod.as_deref(), quoted, key, counting).then(|| ns.clone())
    }

    fn enqueue_if_quoted(&self, namespace: &str) {
        if !self.quotas.in_namespace(namespace).is_empty() {
            self.queue.add(namespace.to_string());
        }
    }

    /// Recounts every quota of `namespace` and writes the statuses that changed; when a
    /// lowering has to wait, how long until the namespace is counted again.
    async fn recount(&self, namespace: &str) -> Result<Option<Duration>, kube::Error> {
        let mut again: Option<Duration> = None;
        let quotas = self.quotas.in_namespace(namespace);
        // Objects listed once per recount, by evaluator.
        let mut objects: HashMap<Evaluator, Vec<Value>> = HashMap::new();
        let now = SystemTime::now();
        for quota in quotas {
            if quota.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let value = serde_json::to_value(&*quota).unwrap_or_default();
            let hard = list::from_json(&value["spec"]["hard"]);
            let names: Vec<&str> = hard.keys().map(String::as_str).collect();
            let selectors = scopes::of_quota(&value);
            // What is still counted elsewhere keeps its last value (upstream starts from the
            // old usage), then each evaluator's names are counted afresh.
            let mut used = list::from_json(&value["status"]["used"]);
            for evaluator in evaluators(&names) {
                let matched = evaluator.matching_resources(names.iter().copied());
                if !objects.contains_key(&evaluator) {
                    let listed = self.list(&evaluator, namespace).await?;
                    objects.insert(evaluator.clone(), listed);
                }
                let mut counted: ResourceList = matched
                    .iter()
                    .map(|n| (n.clone(), rkube_apis::quantity::Quantity::count(0)))
                    .collect();
                for obj in &objects[&evaluator] {
                    if selectors.iter().all(|s| evaluator.matches_scope(s, obj)) {
                        counted =
                            list::add(&counted, &list::mask(&evaluator.usage(obj, now), &matched));
                    }
                }
                used.extend(counted);
            }
            let used = list::mask(&used, &names);
            let old_hard = list::from_json(&value["status"]["hard"]);
            let old_used = list::from_json(&value["status"]["used"]);
            let unset = value["status"]["hard"].is_null() || value["status"]["used"].is_null();
            if !unset && list::equals(&old_hard, &hard) && list::equals(&old_used, &used) {
                continue;
            }
            let name = quota.metadata.name.clone().unwrap_or_default();
            let lowers = used.iter().any(|(n, q)| old_used.get(n).is_some_and(|old| q < old));
            if lowers {
                if let Some(wait) = self.grace_left(namespace, &name) {
                    again = Some(again.map_or(wait, |a| a.min(wait)));
                    continue;
                }
            }
            let mut updated = value.clone();
            updated["status"] = serde_json::json!({
                "hard": list::to_json(&hard),
                "used": list::to_json(&used),
            });
            let api: Api<ResourceQuota> = Api::namespaced(self.client.clone(), namespace);
            let Ok(body) = serde_json::from_value::<ResourceQuota>(updated) else { continue };
            // The cached resourceVersion is the precondition: a charge admission wrote since
            // makes this a conflict, and the namespace is counted again.
            let written = api.replace_status(&name, &PostParams::default(), &body).await?;
            let mut seen = self.seen.lock().expect("quota seen lock");
            let entry = seen.entry((namespace.to_string(), name)).or_default();
            entry.own_version = written.metadata.resource_version.unwrap_or_default();
        }
        Ok(again)
    }

    /// The objects of `evaluator`'s resource in `namespace`, as JSON.
    async fn list(
        &self,
        evaluator: &Evaluator,
        namespace: &str,
    ) -> Result<Vec<Value>, kube::Error> {
        if *evaluator == Evaluator::Pods {
            return Ok(self
                .pods
                .in_namespace(namespace)
                .iter()
                .filter_map(|p| serde_json::to_value(&**p).ok())
                .collect());
        }
        let (group, resource) = evaluator.group_resource();
        let Some(api_resource) = self.resource(group, resource).await else {
            // A quota on a resource the server does not serve counts nothing (upstream).
            return Ok(Vec::new());
        };
        self.watch_deletions(&api_resource);
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), namespace, &api_resource);
        let listed = api.list(&ListParams::default()).await?;
        Ok(listed.items.iter().filter_map(|o| serde_json::to_value(o).ok()).collect())
    }

    /// Asks [`run`] to watch `resource`'s deletions, unless they are watched already, so that
    /// what a deleted object used is given back at once (not at the next resync).
    fn watch_deletions(&self, resource: &ApiResource) {
        let key = (resource.group.clone(), resource.plural.clone());
        if self.watched.lock().expect("quota watched lock").insert(key) {
            let _ = self.watch_requests.send(resource.clone());
        }
    }

    /// The served resource `group`/`plural`, from discovery (asked again on a miss, so a
    /// CustomResourceDefinition made later is found).
    async fn resource(&self, group: &str, plural: &str) -> Option<ApiResource> {
        let key = (group.to_string(), plural.to_string());
        let mut known = self.resources.lock().await;
        if let Some(found) = known.get(&key) {
            return Some(found.clone());
        }
        let discovery = crate::discovery::run(&self.client).await.ok()?;
        for (resource, _) in crate::discovery::preferred_resources(&discovery) {
            known.insert((resource.group.clone(), resource.plural.clone()), resource);
        }
        known.get(&key).cloned()
    }
}

/// Whether a quota's change needs a recount (see [`Controller::quota_needs_recount`]);
/// `quota` is none when it was deleted.
fn quota_needs_recount(
    quota: Option<&ResourceQuota>,
    key: (String, String),
    limits: &mut HashMap<(String, String), ResourceList>,
) -> bool {
    let Some(quota) = quota else {
        limits.remove(&key);
        return false;
    };
    let resources = |list: Option<&std::collections::BTreeMap<String, _>>| {
        list::from_json(&serde_json::to_value(list).unwrap_or_default())
    };
    let hard = resources(quota.spec.as_ref().and_then(|s| s.hard.as_ref()));
    let status = quota.status.as_ref();
    let status_hard = resources(status.and_then(|s| s.hard.as_ref()));
    let used = resources(status.and_then(|s| s.used.as_ref()));
    let changed = limits.insert(key, hard.clone()).is_none_or(|old| !list::equals(&old, &hard));
    let uncounted =
        !list::equals(&status_hard, &hard) || hard.keys().any(|r| !used.contains_key(r));
    changed || uncounted
}

/// Whether a pod's change gives usage back (see [`Controller::pod_gives_back`]); `pod` is
/// none when it was deleted, `quoted` whether its namespace has a quota.
fn pod_gives_back(
    pod: Option<&Pod>,
    quoted: bool,
    key: (String, String),
    counting: &mut HashMap<(String, String), bool>,
) -> bool {
    let Some(pod) = pod.filter(|_| quoted) else {
        counting.remove(&key);
        return quoted;
    };
    let pod = serde_json::to_value(pod).unwrap_or_default();
    let counts = rkube_apis::quota::evaluator::counts_compute(&pod, SystemTime::now());
    let before = counting.insert(key, counts);
    !counts && before != Some(false)
}

/// The evaluators a quota's hard names need: pods, services and claims by their names, and
/// an object count for `count/<resource>[.<group>]` and the legacy count names.
fn evaluators(names: &[&str]) -> Vec<Evaluator> {
    let mut out: Vec<Evaluator> = Vec::new();
    let mut push = |e: Evaluator| {
        if !out.contains(&e) {
            out.push(e);
        }
    };
    for name in names {
        let specific = [Evaluator::Pods, Evaluator::Services, Evaluator::PersistentVolumeClaims];
        if let Some(e) = specific.into_iter().find(|e| !e.matching_resources([*name]).is_empty()) {
            push(e);
            continue;
        }
        if let Some(counted) = name.strip_prefix("count/") {
            let (resource, group) = counted.split_once('.').unwrap_or((counted, ""));
            push(Evaluator::of(group, resource));
        } else if ["configmaps", "secrets", "replicationcontrollers", "resourcequotas"]
            .contains(name)
        {
            push(Evaluator::of("", name));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    type Resources<'a> = &'a [(&'a str, &'a str)];

    fn quota(hard: Resources<'_>, status: Option<(Resources<'_>, Resources<'_>)>) -> ResourceQuota {
        let list = |l: &[(&str, &str)]| -> Value {
            l.iter()
                .map(|(k, v)| (k.to_string(), Value::from(*v)))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        let mut q = serde_json::json!({"metadata": {"name": "q", "namespace": "ns"},
                                       "spec": {"hard": list(hard)}});
        if let Some((h, u)) = status {
            q["status"] = serde_json::json!({"hard": list(h), "used": list(u)});
        }
        serde_json::from_value(q).expect("a quota")
    }

    fn key() -> (String, String) {
        ("ns".to_string(), "q".to_string())
    }

    #[test]
    fn admissions_charges_are_not_recounted_but_new_limits_are() {
        let mut limits = HashMap::new();
        // New, and not counted yet.
        assert!(quota_needs_recount(Some(&quota(&[("pods", "2")], None)), key(), &mut limits));
        // Counted by the controller: nothing more to do.
        let counted = quota(&[("pods", "2")], Some((&[("pods", "2")], &[("pods", "0")])));
        assert!(!quota_needs_recount(Some(&counted), key(), &mut limits));
        // Admission charged a pod (status.used only).
        let charged = quota(&[("pods", "2")], Some((&[("pods", "2")], &[("pods", "1")])));
        assert!(!quota_needs_recount(Some(&charged), key(), &mut limits));
        // The limit was raised, or a resource added that the status does not count yet.
        let raised = quota(&[("pods", "3")], Some((&[("pods", "2")], &[("pods", "1")])));
        assert!(quota_needs_recount(Some(&raised), key(), &mut limits));
        let added =
            quota(&[("pods", "3"), ("secrets", "1")], Some((&[("pods", "3")], &[("pods", "1")])));
        assert!(quota_needs_recount(Some(&added), key(), &mut limits));
        // Deleted: forgotten, nothing to count.
        assert!(!quota_needs_recount(None, key(), &mut limits));
        assert!(limits.is_empty());
    }

    fn pod(phase: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "status": {"phase": phase},
        }))
        .expect("a pod")
    }

    #[test]
    fn pods_give_usage_back_when_they_finish_or_go() {
        let mut counting = HashMap::new();
        let key = || ("ns".to_string(), "p".to_string());
        // New and running pods were charged by admission.
        assert!(!pod_gives_back(Some(&pod("Pending")), true, key(), &mut counting));
        assert!(!pod_gives_back(Some(&pod("Running")), true, key(), &mut counting));
        // Done: its compute goes back, once.
        assert!(pod_gives_back(Some(&pod("Succeeded")), true, key(), &mut counting));
        assert!(!pod_gives_back(Some(&pod("Succeeded")), true, key(), &mut counting));
        // Gone: its count goes back.
        assert!(pod_gives_back(None, true, key(), &mut counting));
        assert!(counting.is_empty());
        // Namespaces without a quota are not followed.
        assert!(!pod_gives_back(Some(&pod("Failed")), false, key(), &mut counting));
        assert!(!pod_gives_back(None, false, key(), &mut counting));
        assert!(counting.is_empty());
    }

    #[test]
    fn quota_names_choose_their_evaluators() {
        let names = [
            "pods",
            "requests.cpu",
            "services.nodeports",
            "count/deployments.apps",
            "secrets",
            "gold.storageclass.storage.k8s.io/requests.storage",
            "count/configmaps",
            "bogus",
        ];
        assert_eq!(
            evaluators(&names),
            [
                Evaluator::Pods,
                Evaluator::Services,
                Evaluator::of("apps", "deployments"),
                Evaluator::of("", "secrets"),
                Evaluator::PersistentVolumeClaims,
                Evaluator::of("", "configmaps"),
            ]
        );
    }
}
