//! The StatefulSet controller's decisions: a pure function of the set's policy and its pods
//! ([`plan`]) that lists the next steps in upstream's order (`updateStatefulSet`), and the
//! status counts ([`count`]).
//!
//! The order: first each ordinal the set keeps, lowest first (finished pods are deleted to be
//! made anew, missing ones created, wrong identities fixed); then the pods beyond the set's
//! size, highest first (scale down); then, for `RollingUpdate`, pods of an old revision from
//! the highest ordinal down to the partition. With `OrderedReady` the plan stops at the first
//! thing to wait for (a pod not yet Running, Ready and available, one terminating) and after
//! the first create or delete; with `Parallel` it goes on.

use std::collections::BTreeSet;

/// What the planner knows of one existing pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    pub ordinal: i32,
    /// The revision it was made from.
    pub revision: String,
    /// `Failed` or `Succeeded`: it is deleted and made again.
    pub finished: Option<Finished>,
    /// Phase `Pending`: its claims are made if missing.
    pub pending: bool,
    /// Phase `Running` and `Ready`.
    pub running_ready: bool,
    /// Ready for `minReadySeconds`.
    pub available: bool,
    /// Being deleted.
    pub terminating: bool,
    /// Its identity labels or claims' owners need fixing.
    pub needs_update: bool,
}

impl PodView {
    fn healthy(&self) -> bool {
        self.running_ready && !self.terminating
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    Failed,
    Succeeded,
}

/// How the set wants its pods managed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// `spec.ordinals.start`.
    pub start: i32,
    /// `spec.replicas`.
    pub replicas: i32,
    /// `OrderedReady` (one at a time, in order) rather than `Parallel`.
    pub ordered: bool,
    /// `updateStrategy.type: OnDelete`: pods are only made anew once deleted.
    pub on_delete: bool,
    /// `rollingUpdate.partition`: ordinals (counted from the start) below it stay at the
    /// current revision.
    pub partition: i32,
    /// `rollingUpdate.maxUnavailable` resolved against the replicas, when set.
    pub max_unavailable: Option<i32>,
    /// The set is being deleted: nothing is done.
    pub deleting: bool,
    /// The set has claim templates.
    pub has_claims: bool,
}

/// Which revision a new pod is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    Current,
    Update,
}

/// Why a pod is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// Finished; it is made again once gone.
    Finished(Finished),
    /// Beyond the set's size.
    ScaleDown,
    /// Of an old revision; it is made again at the update revision once gone.
    Update,
}

/// One step, by ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Create {
        ordinal: i32,
        revision: Revision,
    },
    Delete {
        ordinal: i32,
        why: Why,
    },
    /// A pending pod: create any of its claims that are missing.
    EnsureClaims {
        ordinal: i32,
    },
    /// Fix the pod's identity labels and its claims' owners.
    Update {
        ordinal: i32,
    },
}

/// The state of an ordinal the set keeps, as the plan goes (after its own steps).
#[derive(Debug, Clone)]
struct Slot {
    revision: Option<String>,
    healthy: bool,
    terminating: bool,
}

/// The steps to take now for a set with `policy`, its pods, its update revision's name and the
/// ordinals whose claims still belong to a previous pod (creating those must wait).
pub fn plan(
    policy: &Policy,
    pods: &[PodView],
    current_revision: &str,
    update_revision: &str,
    stale_claims: &BTreeSet<i32>,
) -> Vec<Step> {
    let mut steps = Vec::new();
    if policy.deleting {
        return steps;
    }
    let count = usize::try_from(policy.replicas).unwrap_or(0);
    let index_of = |ordinal: i32| {
        let index = i64::from(ordinal) - i64::from(policy.start);
        usize::try_from(index).ok().filter(|i| *i < count)
    };
    let mut replicas: Vec<Option<&PodView>> = vec![None; count];
    let mut condemned: Vec<&PodView> = Vec::new();
    for pod in pods {
        match index_of(pod.ordinal) {
            Some(index) => replicas[index] = Some(pod),
            None if pod.ordinal >= 0 => condemned.push(pod),
            None => {}
        }
    }
    condemned.sort_by_key(|p| std::cmp::Reverse(p.ordinal));
    // The first unhealthy pod: of the kept ordinals (a missing one counts), else the
    // lowest condemned one. Only it may be deleted while unhealthy when scaling down in order.
    let first_unhealthy = replicas
        .iter()
        .enumerate()
        .find(|(_, p)| !p.is_some_and(|p| p.healthy()))
        .map(|(i, _)| policy.start + i as i32)
        .or_else(|| condemned.iter().rev().find(|p| !p.healthy()).map(|p| p.ordinal));
    let revision_for = |index: usize| {
        if !policy.on_delete && (index as i64) < i64::from(policy.partition) {
            (Revision::Current, current_revision)
        } else {
            (Revision::Update, update_revision)
        }
    };
    let ordered = policy.ordered;
    let mut slots = Vec::with_capacity(count);
    for (index, pod) in replicas.iter().enumerate() {
        let ordinal = policy.start + index as i32;
        let Some(pod) = pod else {
            let (revision, name) = revision_for(index);
            slots.push(Slot {
                revision: Some(name.to_string()),
                healthy: false,
                terminating: false,
            });
            if stale_claims.contains(&ordinal) {
                // The previous pod's claims are still going.
                if ordered {
                    return steps;
                }
                continue;
            }
            steps.push(Step::Create { ordinal, revision });
            if ordered {
                return steps;
            }
            continue;
        };
        if let (Some(finished), false) = (pod.finished, pod.terminating) {
            steps.push(Step::Delete { ordinal, why: Why::Finished(finished) });
            slots.push(Slot { revision: None, healthy: false, terminating: true });
            if ordered {
                return steps;
            }
            continue;
        }
        slots.push(Slot {
            revision: Some(pod.revision.clone()),
            healthy: pod.healthy(),
            terminating: pod.terminating,
        });
        if pod.terminating && ordered {
            return steps;
        }
        if pod.pending && policy.has_claims {
            steps.push(Step::EnsureClaims { ordinal });
        }
        if ordered && !(pod.running_ready && pod.available) {
            return steps;
        }
        if pod.needs_update {
            steps.push(Step::Update { ordinal });
        }
    }
    // Claims of condemned pods get their owners first (a pod scaled away under
    // `whenScaled: Delete` takes its claims with it).
    for pod in &condemned {
        if pod.needs_update && !pod.terminating {
            steps.push(Step::Update { ordinal: pod.ordinal });
        }
    }
    for pod in &condemned {
        if pod.terminating {
            if ordered {
                return steps;
            }
            continue;
        }
        let first = first_unhealthy == Some(pod.ordinal);
        if ordered && !(pod.running_ready && pod.available) && !first {
            return steps;
        }
        steps.push(Step::Delete { ordinal: pod.ordinal, why: Why::ScaleDown });
        if ordered {
            return steps;
        }
    }
    if policy.on_delete {
        return steps;
    }
    let outdated = |slot: &Slot| {
        slot.revision.as_deref().is_some_and(|r| r != update_revision) && !slot.terminating
    };
    let partition = usize::try_from(policy.partition).unwrap_or(0);
    match policy.max_unavailable {
        None => {
            // From the highest ordinal down to the partition: delete the first old pod, or
            // wait for an unhealthy one.
            for index in (partition..slots.len()).rev() {
                let slot = &slots[index];
                if outdated(slot) {
                    steps.push(Step::Delete {
                        ordinal: policy.start + index as i32,
                        why: Why::Update,
                    });
                    return steps;
                }
                if !slot.healthy {
                    return steps;
                }
            }
        }
        Some(max_unavailable) => {
            // Up to maxUnavailable pods down at once, counting those already unhealthy.
            let unavailable = slots.iter().filter(|s| !s.healthy).count();
            let room =
                usize::try_from(max_unavailable.max(1)).unwrap_or(1).saturating_sub(unavailable);
            let doomed = (partition..slots.len()).rev().filter(|i| outdated(&slots[*i])).take(room);
            for index in doomed.collect::<Vec<_>>() {
                steps.push(Step::Delete { ordinal: policy.start + index as i32, why: Why::Update });
            }
        }
    }
    steps
}

/// The counts a StatefulSet's status reports.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub replicas: i32,
    pub ready: i32,
    pub available: i32,
    pub current: i32,
    pub updated: i32,
}

/// Counts the set's pods (upstream's `computeReplicaStatus`): all that exist, the running and
/// ready ones, the available ones, and those of each revision that are not terminating.
pub fn count(pods: &[PodView], current_revision: &str, update_revision: &str) -> Counts {
    let mut counts = Counts::default();
    for pod in pods {
        counts.replicas += 1;
        if pod.running_ready {
            counts.ready += 1;
            if pod.available {
                counts.available += 1;
            }
        }
        if !pod.terminating {
            if pod.revision == current_revision {
                counts.current += 1;
            }
            if pod.revision == update_revision {
                counts.updated += 1;
            }
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ordinal: i32, revision: &str) -> PodView {
        PodView {
            ordinal,
            revision: revision.into(),
            finished: None,
            pending: false,
            running_ready: true,
            available: true,
            terminating: false,
            needs_update: false,
        }
    }

    fn unready(ordinal: i32, revision: &str) -> PodView {
        PodView { running_ready: false, available: false, ..pod(ordinal, revision) }
    }

    fn going(ordinal: i32, revision: &str) -> PodView {
        PodView { terminating: true, ..pod(ordinal, revision) }
    }

    fn ordered(replicas: i32) -> Policy {
        Policy {
            start: 0,
            replicas,
            ordered: true,
            on_delete: false,
            partition: 0,
            max_unavailable: None,
            deleting: false,
            has_claims: false,
        }
    }

    fn parallel(replicas: i32) -> Policy {
        Policy { ordered: false, ..ordered(replicas) }
    }

    fn run(policy: &Policy, pods: &[PodView]) -> Vec<Step> {
        plan(policy, pods, "r1", "r2", &BTreeSet::new())
    }

    fn create(ordinal: i32) -> Step {
        Step::Create { ordinal, revision: Revision::Update }
    }

    fn delete(ordinal: i32, why: Why) -> Step {
        Step::Delete { ordinal, why }
    }

    #[test]
    fn ordered_ready_creates_one_at_a_time_in_order() {
        assert_eq!(run(&ordered(3), &[]), [create(0)]);
        assert_eq!(run(&ordered(3), &[unready(0, "r2")]), []);
        let almost = PodView { available: false, ..pod(0, "r2") };
        assert_eq!(run(&ordered(3), &[almost]), [], "waits for minReadySeconds");
        assert_eq!(run(&ordered(3), &[pod(0, "r2")]), [create(1)]);
        assert_eq!(run(&ordered(3), &[pod(0, "r2"), pod(1, "r2")]), [create(2)]);
        // A hole is filled before anything else happens.
        assert_eq!(run(&ordered(3), &[pod(0, "r2"), pod(2, "r2")]), [create(1)]);
        assert_eq!(run(&ordered(3), &[pod(0, "r2"), pod(1, "r2"), pod(2, "r2")]), []);
        let starting_at_5 = Policy { start: 5, ..ordered(2) };
        assert_eq!(run(&starting_at_5, &[]), [create(5)]);
    }

    #[test]
    fn parallel_creates_and_deletes_all_at_once() {
        assert_eq!(run(&parallel(3), &[]), [create(0), create(1), create(2)]);
        assert_eq!(run(&parallel(3), &[unready(1, "r2")]), [create(0), create(2)]);
        let many = [pod(0, "r2"), unready(1, "r2"), pod(2, "r2"), pod(3, "r2")];
        assert_eq!(
            run(&parallel(1), &many),
            [delete(3, Why::ScaleDown), delete(2, Why::ScaleDown), delete(1, Why::ScaleDown)]
        );
    }

    #[test]
    fn ordered_scale_down_goes_from_the_highest_ordinal_one_at_a_time() {
        let all = [pod(0, "r2"), pod(1, "r2"), pod(2, "r2")];
        assert_eq!(run(&ordered(1), &all), [delete(2, Why::ScaleDown)]);
        let two_going = [pod(0, "r2"), pod(1, "r2"), going(2, "r2")];
        assert_eq!(run(&ordered(1), &two_going), [], "waits for the pod to go");
        assert_eq!(run(&ordered(1), &all[..2]), [delete(1, Why::ScaleDown)]);
        // An unhealthy condemned pod blocks, unless it is the first unhealthy one.
        let blocked = [pod(0, "r2"), unready(1, "r2"), unready(2, "r2")];
        assert_eq!(run(&ordered(1), &blocked), []);
        let healthy_above = [pod(0, "r2"), unready(1, "r2"), pod(2, "r2")];
        assert_eq!(run(&ordered(1), &healthy_above), [delete(2, Why::ScaleDown)]);
        let lowest_unhealthy = [pod(0, "r2"), pod(1, "r2"), unready(2, "r2")];
        assert_eq!(run(&ordered(1), &lowest_unhealthy), [delete(2, Why::ScaleDown)]);
        // Nothing is removed while a kept pod is not ready.
        let kept_unready = [unready(0, "r2"), pod(1, "r2")];
        assert_eq!(run(&ordered(1), &kept_unready), []);
        assert_eq!(run(&ordered(0), &all), [delete(2, Why::ScaleDown)]);
    }

    #[test]
    fn finished_pods_are_deleted_to_be_made_again() {
        let failed = PodView { finished: Some(Finished::Failed), ..unready(1, "r2") };
        let pods = [pod(0, "r2"), failed.clone(), pod(2, "r2")];
        assert_eq!(run(&ordered(3), &pods), [delete(1, Why::Finished(Finished::Failed))]);
        let done = PodView { finished: Some(Finished::Succeeded), ..unready(0, "r2") };
        assert_eq!(
            run(&parallel(2), &[done, failed]),
            [
                delete(0, Why::Finished(Finished::Succeeded)),
                delete(1, Why::Finished(Finished::Failed))
            ]
        );
        let failed_going = PodView { terminating: true, ..pods[1].clone() };
        assert_eq!(run(&ordered(3), &[pod(0, "r2"), failed_going]), []);
    }

    #[test]
    fn rolling_updates_go_from_the_highest_ordinal_down_to_the_partition() {
        let old = [pod(0, "r1"), pod(1, "r1"), pod(2, "r1")];
        assert_eq!(run(&ordered(3), &old), [delete(2, Why::Update)]);
        // The deleted pod is made again at the update revision, then the next one goes.
        assert_eq!(run(&ordered(3), &old[..2]), [create(2)]);
        let updating = [pod(0, "r1"), pod(1, "r1"), unready(2, "r2")];
        assert_eq!(run(&ordered(3), &updating), []);
        let updated = [pod(0, "r1"), pod(1, "r1"), pod(2, "r2")];
        assert_eq!(run(&ordered(3), &updated), [delete(1, Why::Update)]);
        // Parallel pods still update one at a time, waiting for unhealthy ones.
        let parallel_updating = [pod(0, "r1"), pod(1, "r1"), unready(2, "r2")];
        assert_eq!(run(&parallel(3), &parallel_updating), []);
        // Partition 2: ordinals 0 and 1 stay; new pods below it are of the current revision.
        let partitioned = Policy { partition: 2, ..ordered(3) };
        assert_eq!(run(&partitioned, &updated), []);
        assert_eq!(
            run(&partitioned, &[]),
            [Step::Create { ordinal: 0, revision: Revision::Current }]
        );
        // OnDelete: only missing pods are made, at the update revision.
        let on_delete = Policy { on_delete: true, partition: 5, ..ordered(3) };
        assert_eq!(run(&on_delete, &old), []);
        assert_eq!(run(&on_delete, &old[..2]), [create(2)]);
    }

    #[test]
    fn max_unavailable_deletes_several_old_pods() {
        let wide = Policy { max_unavailable: Some(2), ..parallel(4) };
        let old = [pod(0, "r1"), pod(1, "r1"), pod(2, "r1"), pod(3, "r1")];
        assert_eq!(run(&wide, &old), [delete(3, Why::Update), delete(2, Why::Update)]);
        let one_down = [pod(0, "r1"), pod(1, "r1"), pod(2, "r1"), unready(3, "r2")];
        assert_eq!(run(&wide, &one_down), [delete(2, Why::Update)]);
        let two_down = [pod(0, "r1"), pod(1, "r1"), going(2, "r1"), unready(3, "r2")];
        assert_eq!(run(&wide, &two_down), []);
    }

    #[test]
    fn identities_claims_and_stale_claims() {
        let with_claims = Policy { has_claims: true, ..ordered(2) };
        let pending = PodView { pending: true, ..unready(0, "r2") };
        assert_eq!(run(&with_claims, &[pending]), [Step::EnsureClaims { ordinal: 0 }]);
        let wrong = PodView { needs_update: true, ..pod(0, "r2") };
        assert_eq!(run(&ordered(2), &[wrong]), [Step::Update { ordinal: 0 }, create(1)]);
        let stale: BTreeSet<i32> = [1].into();
        assert_eq!(plan(&ordered(2), &[pod(0, "r2")], "r1", "r2", &stale), []);
        assert_eq!(plan(&parallel(3), &[], "r1", "r2", &stale), [create(0), create(2)]);
        let condemned = PodView { needs_update: true, ..pod(2, "r2") };
        assert_eq!(
            run(&ordered(1), &[pod(0, "r2"), condemned]),
            [Step::Update { ordinal: 2 }, delete(2, Why::ScaleDown)]
        );
        let deleting = Policy { deleting: true, ..ordered(3) };
        assert_eq!(run(&deleting, &[]), []);
    }

    #[test]
    fn counts_by_readiness_and_revision() {
        let pods = [
            pod(0, "r1"),
            unready(1, "r2"),
            PodView { available: false, ..pod(2, "r2") },
            going(3, "r1"),
        ];
        assert_eq!(
            count(&pods, "r1", "r2"),
            Counts { replicas: 4, ready: 3, available: 2, current: 1, updated: 2 }
        );
    }
}
