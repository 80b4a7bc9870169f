//! The event loop: turns Job and pod changes into Job keys on the work queue, pod keys on the
//! orphan queue, and observed creations, deletions and finalizer removals, the way upstream's
//! informer handlers do with old and new objects (the old one is what was seen last).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::ObjectRef;

use super::{conditions, pods, Controller, SYNC_BATCH_PERIOD};
use crate::controller_ref::controller_of;
use crate::pod_events::{PodEvents, PodHandler, SeenPod};
use rkube_runtime::informer::Change;

/// What the loop remembers of a Job.
#[derive(Debug, Clone)]
struct SeenJob {
    uid: String,
    generation: Option<i64>,
    active_deadline_seconds: Option<i64>,
}

pub(super) struct Watch {
    ctl: Arc<Controller>,
    pods: PodEvents,
    jobs: HashMap<String, SeenJob>,
}

impl Watch {
    pub(super) fn new(ctl: Arc<Controller>) -> Watch {
        let pods = PodEvents::new(ctl.pods.clone()).with_finalizer(pods::has_tracking_finalizer);
        Watch { ctl, pods, jobs: HashMap::new() }
    }

    pub(super) fn job_changed(&mut self, change: Change) {
        let Change::Object { namespace, name } = change else { return };
        let namespace = namespace.unwrap_or_default();
        let key = format!("{namespace}/{name}");
        let current = self.ctl.jobs.get(&ObjectRef::new(&name).within(&namespace));
        let old = self.jobs.remove(&key);
        let Some(job) = current else {
            // Deleted: its pods' finalizers will not be removed by a sync any more.
            if let Some(old) = old {
                self.cleanup_pod_finalizers(&namespace, &old.uid);
            }
            self.ctl.queue.add(key);
            return;
        };
        let now = SeenJob {
            uid: job.metadata.uid.clone().unwrap_or_default(),
            generation: job.metadata.generation,
            active_deadline_seconds: job.spec.as_ref().and_then(|s| s.active_deadline_seconds),
        };
        match &old {
            Some(old) if old.uid == now.uid => {
                if old.generation == now.generation {
                    // A status change, typically after pod changes: batch them.
                    self.ctl.queue.add_after(key.clone(), SYNC_BATCH_PERIOD);
                } else {
                    self.ctl.queue.add(key.clone());
                }
                // The Job is finished only once its finalizers were removed; this is a
                // backup.
                if conditions::is_finished(&job) {
                    self.cleanup_pod_finalizers(&namespace, &now.uid);
                }
                self.deadline_changed(&key, &job, old.active_deadline_seconds);
            }
            other => {
                if let Some(old) = other {
                    // Replaced by another Job of the same name between two looks.
                    self.cleanup_pod_finalizers(&namespace, &old.uid);
                    self.ctl.forget(&key);
                }
                self.ctl.queue.add(key.clone());
            }
        }
        self.jobs.insert(key, now);
    }

    /// A deadline set or changed on a started Job: look again when it passes.
    fn deadline_changed(&self, key: &str, job: &Job, old: Option<i64>) {
        let deadline = job.spec.as_ref().and_then(|s| s.active_deadline_seconds);
        let start = job.status.as_ref().and_then(|s| s.start_time.as_ref());
        let (Some(deadline), Some(start)) = (deadline, start) else { return };
        if old == Some(deadline) {
            return;
        }
        let elapsed_ms = Timestamp::now().as_millisecond().saturating_sub(start.0.as_millisecond());
        let left_ms = deadline.saturating_mul(1000).saturating_sub(elapsed_ms);
        let left = Duration::from_millis(u64::try_from(left_ms).unwrap_or(0));
        self.ctl.queue.add_after(key.to_string(), left);
    }

    pub(super) fn pod_changed(&mut self, change: Change) {
        self.pods.change(change, &*self.ctl);
    }

    /// Queues the pods of the Job with `uid` that still carry its finalizer for the orphan
    /// worker, which removes it.
    fn cleanup_pod_finalizers(&self, namespace: &str, uid: &str) {
        let owned = self.ctl.pods.owned_by(uid).into_iter().filter(|p| {
            p.metadata.namespace.as_deref() == Some(namespace)
                && pods::has_tracking_finalizer(p)
                && controller_of(&p.metadata).is_some_and(|c| c.uid == uid)
        });
        for pod in owned {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            self.ctl.orphans.add(format!("{namespace}/{name}"));
        }
    }
}

/// Pod changes as upstream's Job handlers read them: owners looked at after the batch period,
/// and the tracking finalizer followed (its removal observed, orphans carrying it queued).
impl PodHandler for Controller {
    fn added(&self, namespace: &str, name: &str, pod: &SeenPod) {
        if pod.deleting {
            // Seen for the first time already going (e.g. after a restart): not a creation.
            self.deleted(namespace, name, pod, false, true);
            return;
        }
        if let Some(controller) = &pod.controller {
            if let Some(job) = self.resolve(namespace, controller) {
                let key = super::key_of(&job);
                self.expectations.creation_observed(&key);
                self.queue.add_after(key, SYNC_BATCH_PERIOD);
            }
            return;
        }
        if pod.finalizer {
            self.orphans.add(format!("{namespace}/{name}"));
        }
        self.enqueue_matching(namespace, &pod.labels);
    }

    fn updated(&self, namespace: &str, name: &str, old: &SeenPod, pod: &SeenPod) {
        if pod.deleting {
            // A graceful deletion began: the Job may replace the pod now, not once it is gone.
            self.deleted(namespace, name, pod, false, !old.deleting);
            return;
        }
        let finalizer_removed = !pod.finalizer;
        let controller_changed = old.controller != pod.controller;
        if controller_changed {
            if let Some(job) = old.controller.as_ref().and_then(|c| self.resolve(namespace, c)) {
                let key = super::key_of(&job);
                if finalizer_removed {
                    self.finalizers.observed(&key, &pod.uid);
                }
                self.queue.add_after(key, SYNC_BATCH_PERIOD);
            }
        }
        if let Some(controller) = &pod.controller {
            if let Some(job) = self.resolve(namespace, controller) {
                let key = super::key_of(&job);
                if finalizer_removed {
                    self.finalizers.observed(&key, &pod.uid);
                }
                self.queue.add_after(key, SYNC_BATCH_PERIOD);
            }
            return;
        }
        if pod.finalizer {
            self.orphans.add(format!("{namespace}/{name}"));
        }
        if controller_changed || old.labels != pod.labels {
            self.enqueue_matching(namespace, &pod.labels);
        }
    }

    fn gone(&self, namespace: &str, name: &str, pod: &SeenPod) {
        self.deleted(namespace, name, pod, true, !pod.deleting);
    }
}

impl Controller {
    /// A pod being deleted (`last`: gone for good). `first_sighting` says whether its deletion
    /// was not seen before, so that one deletion lowers the expectations once.
    fn deleted(
        &self,
        namespace: &str,
        name: &str,
        pod: &SeenPod,
        last: bool,
        first_sighting: bool,
    ) {
        let orphan = || {
            if pod.finalizer && !last {
                self.orphans.add(format!("{namespace}/{name}"));
            }
        };
        let Some(controller) = &pod.controller else { return orphan() };
        let job = self.resolve(namespace, controller);
        let Some(job) = job.filter(|j| !conditions::is_finished(j)) else {
            // No sync will remove this finalizer.
            return orphan();
        };
        let key = super::key_of(&job);
        if first_sighting {
            self.expectations.deletion_observed(&key);
        }
        if last || !pod.finalizer {
            self.finalizers.observed(&key, &pod.uid);
        }
        self.queue.add_after(key, SYNC_BATCH_PERIOD);
    }

    /// Queues the Jobs that might adopt an orphan with these labels.
    fn enqueue_matching(&self, namespace: &str, labels: &BTreeMap<String, String>) {
        if labels.is_empty() {
            return;
        }
        let mut jobs = self.jobs.in_namespace(namespace);
        jobs.retain(|j| super::selector_of(j).is_ok_and(|s| !s.is_empty() && s.matches(labels)));
        if jobs.len() > 1 {
            tracing::warn!(namespace, ?labels, "more than one Job selects pods with these labels");
        }
        for job in jobs {
            self.queue.add_after(super::key_of(&job), SYNC_BATCH_PERIOD);
        }
    }
}
