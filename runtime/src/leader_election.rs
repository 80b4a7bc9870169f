//! Leader election over a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection`
//! runs it for kube-scheduler and kube-controller-manager: only the holder of the Lease works
//! (`kube-system/kube-scheduler` schedules, `kube-system/kube-controller-manager` runs the
//! controllers); the others wait to take over.
//!
//! Start at [`run_as_leader`] with the [`LeaderElection`] settings (component-base's
//! `LeaderElectionConfiguration`) and an identity ([`default_identity`]: upstream's
//! `<hostname>_<uuid>`). A contender reads the Lease every `retryPeriod` (jittered);
//! it creates the Lease when there is none, and takes it over when the holder has not
//! changed it for `leaseDurationSeconds` *as measured on the contender's own clock* since
//! it last saw the Lease change (client-go's rule, which makes clock skew between machines
//! harmless). Every write is a `replace` carrying the `resourceVersion` that was read, so
//! when two contenders race the API server lets one win and answers the other 409.
//! The leader renews every `retryPeriod`; when it has failed to renew for `renewDeadline`
//! it stops the work (the component then exits) — before anyone else can take the Lease,
//! since `renewDeadline < leaseDuration`. Work that ends by itself gives the Lease up
//! (client-go's `ReleaseOnCancel`), so a successor need not wait out its duration.
//!
//! [`decide`] and [`next_spec`] are the pure rules; the rest is the loop around them.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use kube::Client;
use tokio::time::Instant;

/// client-go's `JitterFactor`: acquire retries wait `retryPeriod * (1 + rand * 1.2)`.
pub const JITTER_FACTOR: f64 = 1.2;

/// Whether to elect a leader and with what timing (component-base's
/// `LeaderElectionConfiguration`, the `leaderElection` of kube-scheduler's configuration and
/// kube-controller-manager's `--leader-elect*` flags).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElection {
    pub leader_elect: bool,
    /// How long a non-leader waits, from when it last saw the lease change, before taking it.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a renewal before it gives up leadership.
    pub renew_deadline: Duration,
    /// How long to wait between tries to acquire or renew.
    pub retry_period: Duration,
    pub resource_name: String,
    pub resource_namespace: String,
}

impl LeaderElection {
    /// Election through the Lease `namespace/name`, with upstream's default timing: a 15 s
    /// lease, renewed within 10 s, tried every 2 s.
    pub fn new(namespace: &str, name: &str) -> LeaderElection {
        LeaderElection {
            leader_elect: true,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            resource_name: name.to_string(),
            resource_namespace: namespace.to_string(),
        }
    }

    /// Checks the settings as upstream does (nothing when not electing).
    pub fn validate(&self) -> Result<(), InvalidLeaderElection> {
        if !self.leader_elect {
            return Ok(());
        }
        for (field, d) in [
            ("leaseDuration", self.lease_duration),
            ("renewDeadline", self.renew_deadline),
            ("retryPeriod", self.retry_period),
        ] {
            if d.is_zero() {
                return Err(InvalidLeaderElection::NotPositive(field));
            }
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(InvalidLeaderElection::LeaseNotLongerThanRenew);
        }
        if self.renew_deadline.as_secs_f64() <= self.retry_period.as_secs_f64() * JITTER_FACTOR {
            return Err(InvalidLeaderElection::RenewWithinJitter);
        }
        if self.resource_name.is_empty() {
            return Err(InvalidLeaderElection::Required("resourceName"));
        }
        if self.resource_namespace.is_empty() {
            return Err(InvalidLeaderElection::Required("resourceNamespace"));
        }
        Ok(())
    }
}

/// Leader-election settings that cannot work, by the field at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InvalidLeaderElection {
    #[error("{0}: must be greater than zero")]
    NotPositive(&'static str),
    #[error("leaseDuration: must be greater than renewDeadline")]
    LeaseNotLongerThanRenew,
    #[error("renewDeadline: must be greater than retryPeriod*1.2 (client-go's jitter)")]
    RenewWithinJitter,
    #[error("{0}: required")]
    Required(&'static str),
}

/// What a contender may do with the Lease it just read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// We hold it: renew (keep `acquireTime` and `leaseTransitions`).
    Renew,
    /// Nobody holds it, or the holder let it lapse: take it (`leaseTransitions` + 1).
    Acquire,
    /// Someone else holds it and it has not lapsed.
    Wait { holder: String },
}

/// Who may do what with `spec`, which we first saw in its current form at `observed_at`.
/// `default_duration` stands in for a missing `leaseDurationSeconds`.
pub fn decide(
    spec: &LeaseSpec,
    observed_at: Instant,
    now: Instant,
    identity: &str,
    default_duration: Duration,
) -> Decision {
    let holder = spec.holder_identity.as_deref().unwrap_or("");
    if holder == identity {
        return Decision::Renew;
    }
    if holder.is_empty() {
        return Decision::Acquire;
    }
    let duration = spec
        .lease_duration_seconds
        .map(|s| Duration::from_secs(s.max(0) as u64))
        .unwrap_or(default_duration);
    if observed_at + duration > now {
        Decision::Wait { holder: holder.to_string() }
    } else {
        Decision::Acquire
    }
}

/// The spec to write for `decision` (which must not be `Wait`) over `old` (none when
/// creating the Lease), at wall-clock time `now`.
pub fn next_spec(
    old: Option<&LeaseSpec>,
    decision: &Decision,
    identity: &str,
    lease_duration: Duration,
    now: MicroTime,
) -> LeaseSpec {
    let transitions = old.and_then(|o| o.lease_transitions).unwrap_or(0);
    let (acquire_time, lease_transitions) = match (decision, old) {
        (Decision::Renew, Some(old)) => {
            (old.acquire_time.clone().or_else(|| Some(now.clone())), transitions)
        }
        (_, Some(_)) => (Some(now.clone()), transitions + 1),
        (_, None) => (Some(now.clone()), 0),
    };
    LeaseSpec {
        holder_identity: Some(identity.to_string()),
        lease_duration_seconds: Some(lease_duration.as_secs().max(1) as i32),
        acquire_time,
        renew_time: Some(now),
        lease_transitions: Some(lease_transitions),
        ..LeaseSpec::default()
    }
}

/// The spec that gives the Lease up: no holder, a one-second duration so others need not
/// wait, transitions kept (client-go's release).
pub fn released_spec(old: &LeaseSpec, now: MicroTime) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(String::new()),
        lease_duration_seconds: Some(1),
        acquire_time: Some(now.clone()),
        renew_time: Some(now),
        lease_transitions: old.lease_transitions,
        ..LeaseSpec::default()
    }
}

/// The last form of the Lease we saw and when we first saw it in that form.
#[derive(Clone, Debug)]
pub struct Observed {
    pub lease: Lease,
    pub at: Instant,
}

/// Records a read of the Lease: the observation time moves only when the spec changed,
/// so a holder that stopped renewing is seen to lapse.
pub fn observe(previous: Option<Observed>, lease: Lease, now: Instant) -> Observed {
    match previous {
        Some(p) if p.lease.spec == lease.spec => Observed { lease, at: p.at },
        _ => Observed { lease, at: now },
    }
}

/// Why [`run_as_leader`] stopped the work.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("leader election lost: could not renew lease {namespace}/{name} within {deadline:?}")]
    Lost { namespace: String, name: String, deadline: Duration },
}

/// The identity upstream's components elect with: the host name and a random UUID,
/// `<hostname>_<uuid>`.
pub fn default_identity() -> String {
    format!("{}_{}", hostname(), random_uuid())
}

/// This machine's host name (`rkube` when it has none).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "rkube".to_string())
}

/// A random (version 4) UUID in its usual text form.
pub fn random_uuid() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// Runs `work` only while holding the Lease `settings` names: waits to acquire it, then
/// runs the work while renewing. Returns the work's output if it finishes (giving the
/// Lease up), or [`LeaderError::Lost`] — with the work dropped — once renewal has failed
/// for `renewDeadline`; the caller should then exit, as upstream's components do. With
/// `leaderElect: false` the work simply runs.
pub async fn run_as_leader<F: Future>(
    client: Client,
    settings: &LeaderElection,
    identity: String,
    work: F,
) -> Result<F::Output, LeaderError> {
    let never = std::future::pending::<()>();
    match run_as_leader_until(client, settings, identity, work, never).await? {
        Some(out) => Ok(out),
        None => unreachable!("a pending future never stops the work"),
    }
}

/// [`run_as_leader`] until `stop` completes (a component shutting down): while still
/// waiting for the Lease it stops waiting; while leading it drops the work and gives the
/// Lease up at once (client-go's `ReleaseOnCancel`), so that another instance takes over
/// without waiting out the lease. `Ok(None)` when stopped.
pub async fn run_as_leader_until<F: Future, S: Future>(
    client: Client,
    settings: &LeaderElection,
    identity: String,
    work: F,
    stop: S,
) -> Result<Option<F::Output>, LeaderError> {
    tokio::pin!(stop);
    if !settings.leader_elect {
        return Ok(tokio::select! {
            out = work => Some(out),
            _ = &mut stop => None,
        });
    }
    let mut elector = Elector {
        api: Api::namespaced(client, &settings.resource_namespace),
        settings: settings.clone(),
        identity,
        observed: None,
    };
    tokio::select! {
        () = elector.acquire() => {}
        _ = &mut stop => return Ok(None),
    }
    // Renewal runs in a task of its own so that busy work (a scheduler with a long queue)
    // cannot starve it: a leader that stops renewing loses its Lease.
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let mut renewing = tokio::spawn(async move {
        let lost = tokio::select! {
            () = elector.keep_renewing() => true,
            _ = released => false,
        };
        if lost {
            tracing::error!(lease = %elector.settings.resource_name, "leader election lost");
        } else {
            elector.release().await;
        }
    });
    let _abort = AbortOnDrop(renewing.abort_handle());
    let lost = LeaderError::Lost {
        namespace: settings.resource_namespace.clone(),
        name: settings.resource_name.clone(),
        deadline: settings.renew_deadline,
    };
    let out = tokio::select! {
        out = work => Some(out),
        _ = &mut stop => None,
        _ = &mut renewing => return Err(lost),
    };
    let _ = release.send(());
    let _ = renewing.await;
    Ok(out)
}

/// Stops the renewal task when the election is dropped (the component's task aborted), so
/// that no one renews a Lease for work that no longer runs.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

struct Elector {
    api: Api<Lease>,
    settings: LeaderElection,
    identity: String,
    observed: Option<Observed>,
}

fn now_micro() -> MicroTime {
    let micros = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_micros();
    MicroTime(
        k8s_openapi::jiff::Timestamp::from_microsecond(micros as i64)
            .unwrap_or(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
    )
}

fn jittered(period: Duration) -> Duration {
    period.mul_f64(1.0 + rand::random::<f64>() * JITTER_FACTOR)
}

impl Elector {
    fn name(&self) -> &str {
        &self.settings.resource_name
    }

    fn is_leader(&self) -> bool {
        self.observed
            .as_ref()
            .and_then(|o| o.lease.spec.as_ref())
            .and_then(|s| s.holder_identity.as_deref())
            == Some(self.identity.as_str())
    }

    /// Whether the Lease we last saw is still within its duration, by our clock.
    fn observed_valid(&self, now: Instant) -> bool {
        let Some(o) = &self.observed else { return false };
        let secs = o.lease.spec.as_ref().and_then(|s| s.lease_duration_seconds);
        let duration = secs
            .map(|s| Duration::from_secs(s.max(0) as u64))
            .unwrap_or(self.settings.lease_duration);
        o.at + duration > now
    }

    async fn acquire(&mut self) {
        let (ns, name) = (self.settings.resource_namespace.clone(), self.name().to_string());
        tracing::info!(lease = %format!("{ns}/{name}"), identity = %self.identity, "attempting to acquire leader lease");
        loop {
            if self.try_acquire_or_renew().await {
                tracing::info!(lease = %format!("{ns}/{name}"), identity = %self.identity, "successfully acquired lease");
                return;
            }
            tokio::time::sleep(jittered(self.settings.retry_period)).await;
        }
    }

    /// Renews every `retryPeriod`; returns when a renewal has not succeeded within
    /// `renewDeadline`.
    async fn keep_renewing(&mut self) {
        let retry = self.settings.retry_period;
        loop {
            tokio::time::sleep(retry).await;
            let deadline = Instant::now() + self.settings.renew_deadline;
            loop {
                match tokio::time::timeout_at(deadline, self.try_acquire_or_renew()).await {
                    Ok(true) => break,
                    Ok(false) if Instant::now() + retry < deadline => {
                        tokio::time::sleep(retry).await
                    }
                    _ => return,
                }
            }
        }
    }

    /// One try, client-go's `tryAcquireOrRenew`: true when we hold the Lease afterwards.
    async fn try_acquire_or_renew(&mut self) -> bool {
        let pp = PostParams::default();
        let now = Instant::now();
        // Fast path: the leader writes over the Lease it last wrote; a conflict means it
        // changed underneath, so read it afresh below.
        if self.is_leader() && self.observed_valid(now) {
            let mut lease = self.observed.as_ref().expect("leader has observed").lease.clone();
            lease.spec = Some(next_spec(
                lease.spec.as_ref(),
                &Decision::Renew,
                &self.identity,
                self.settings.lease_duration,
                now_micro(),
            ));
            match self.api.replace(self.name(), &pp, &lease).await {
                Ok(written) => {
                    self.observed = Some(Observed { lease: written, at: now });
                    return true;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "failed to renew lease optimistically, re-reading it")
                }
            }
        }
        let current = match self.api.get_opt(self.name()).await {
            Ok(current) => current,
            Err(e) => {
                tracing::warn!(error = %e, lease = %self.name(), "failed to read lease");
                return false;
            }
        };
        let Some(current) = current else {
            let spec = next_spec(
                None,
                &Decision::Acquire,
                &self.identity,
                self.settings.lease_duration,
                now_micro(),
            );
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name().to_string()),
                    namespace: Some(self.settings.resource_namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(spec),
            };
            return match self.api.create(&pp, &lease).await {
                Ok(created) => {
                    self.observed = Some(Observed { lease: created, at: now });
                    true
                }
                Err(e) => {
                    tracing::warn!(error = %e, lease = %self.name(), "failed to create lease");
                    false
                }
            };
        };
        let observed = observe(self.observed.take(), current, now);
        let spec = observed.lease.spec.clone().unwrap_or_default();
        let decision =
            decide(&spec, observed.at, now, &self.identity, self.settings.lease_duration);
        let mut lease = observed.lease.clone();
        self.observed = Some(observed);
        if let Decision::Wait { holder } = &decision {
            tracing::debug!(%holder, "lease is held by another and has not yet expired");
            return false;
        }
        lease.spec = Some(next_spec(
            Some(&spec),
            &decision,
            &self.identity,
            self.settings.lease_duration,
            now_micro(),
        ));
        // The lease carries the resourceVersion we read: if anyone wrote since, this fails.
        match self.api.replace(self.name(), &pp, &lease).await {
            Ok(written) => {
                self.observed = Some(Observed { lease: written, at: now });
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, lease = %self.name(), "failed to update lease");
                false
            }
        }
    }

    /// Gives the Lease up so a successor need not wait out its duration; best effort.
    async fn release(&mut self) {
        if !self.is_leader() {
            return;
        }
        let Some(o) = &self.observed else { return };
        let mut lease = o.lease.clone();
        lease.spec = Some(released_spec(&lease.spec.clone().unwrap_or_default(), now_micro()));
        if let Err(e) = self.api.replace(self.name(), &PostParams::default(), &lease).await {
            tracing::warn!(error = %e, lease = %self.name(), "failed to release lease");
        }
        self.observed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: Option<&str>, duration: Option<i32>, transitions: Option<i32>) -> LeaseSpec {
        LeaseSpec {
            holder_identity: holder.map(String::from),
            lease_duration_seconds: duration,
            lease_transitions: transitions,
            ..LeaseSpec::default()
        }
    }

    fn at(seconds: i64) -> MicroTime {
        MicroTime(k8s_openapi::jiff::Timestamp::from_second(1_750_000_000 + seconds).unwrap())
    }

    const D: Duration = Duration::from_secs(15);

    #[test]
    fn an_unheld_lease_may_be_taken_at_once() {
        let t0 = Instant::now();
        assert_eq!(decide(&spec(None, Some(15), None), t0, t0, "me", D), Decision::Acquire);
        // Released: empty holder.
        assert_eq!(decide(&spec(Some(""), Some(1), Some(3)), t0, t0, "me", D), Decision::Acquire);
    }

    #[test]
    fn a_held_lease_is_taken_only_after_its_duration_on_our_clock() {
        let t0 = Instant::now();
        let other = spec(Some("other"), Some(15), Some(0));
        let wait = Decision::Wait { holder: "other".to_string() };
        assert_eq!(decide(&other, t0, t0, "me", D), wait);
        assert_eq!(decide(&other, t0, t0 + Duration::from_millis(14_999), "me", D), wait);
        assert_eq!(decide(&other, t0, t0 + Duration::from_secs(15), "me", D), Decision::Acquire);
        // The holder's own duration counts, not ours.
        let short = spec(Some("other"), Some(5), Some(0));
        assert_eq!(decide(&short, t0, t0 + Duration::from_secs(5), "me", D), Decision::Acquire);
        // No duration on the lease: ours stands in.
        let none = spec(Some("other"), None, None);
        assert_eq!(decide(&none, t0, t0 + Duration::from_secs(10), "me", D), wait);
    }

    #[test]
    fn the_holder_renews() {
        let t0 = Instant::now();
        // Even long after: nobody else changed it, so it is still ours.
        let mine = spec(Some("me"), Some(15), Some(2));
        assert_eq!(decide(&mine, t0, t0 + Duration::from_secs(60), "me", D), Decision::Renew);
    }

    #[test]
    fn observing_a_changed_lease_restarts_the_clock() {
        let t0 = Instant::now();
        let lease = |renew: i64| Lease {
            metadata: ObjectMeta::default(),
            spec: Some(LeaseSpec {
                renew_time: Some(at(renew)),
                ..spec(Some("other"), Some(15), Some(0))
            }),
        };
        let first = observe(None, lease(0), t0);
        assert_eq!(first.at, t0);
        // Unchanged (the holder stopped renewing): the first sighting stands, so it lapses.
        let same = observe(Some(first), lease(0), t0 + Duration::from_secs(10));
        assert_eq!(same.at, t0);
        let s = same.lease.spec.clone().unwrap();
        assert_eq!(decide(&s, same.at, t0 + Duration::from_secs(16), "me", D), Decision::Acquire);
        // Renewed: counted from now, so it is held again.
        let renewed = observe(Some(same), lease(12), t0 + Duration::from_secs(12));
        assert_eq!(renewed.at, t0 + Duration::from_secs(12));
        let s = renewed.lease.spec.clone().unwrap();
        assert!(matches!(
            decide(&s, renewed.at, t0 + Duration::from_secs(16), "me", D),
            Decision::Wait { .. }
        ));
    }

    #[test]
    fn creating_acquiring_and_renewing_write_upstream_fields() {
        let created = next_spec(None, &Decision::Acquire, "me", D, at(0));
        assert_eq!(created.holder_identity.as_deref(), Some("me"));
        assert_eq!(created.lease_duration_seconds, Some(15));
        assert_eq!(created.acquire_time, Some(at(0)));
        assert_eq!(created.renew_time, Some(at(0)));
        assert_eq!(created.lease_transitions, Some(0));

        let renewed = next_spec(Some(&created), &Decision::Renew, "me", D, at(2));
        assert_eq!(renewed.acquire_time, Some(at(0)), "acquireTime kept");
        assert_eq!(renewed.renew_time, Some(at(2)));
        assert_eq!(renewed.lease_transitions, Some(0));

        let taken = next_spec(Some(&renewed), &Decision::Acquire, "you", D, at(30));
        assert_eq!(taken.holder_identity.as_deref(), Some("you"));
        assert_eq!(taken.acquire_time, Some(at(30)));
        assert_eq!(taken.renew_time, Some(at(30)));
        assert_eq!(taken.lease_transitions, Some(1));

        let released = released_spec(&taken, at(40));
        assert_eq!(released.holder_identity.as_deref(), Some(""));
        assert_eq!(released.lease_duration_seconds, Some(1));
        assert_eq!(released.lease_transitions, Some(1));
        let t0 = Instant::now();
        assert_eq!(decide(&released, t0, t0, "me", D), Decision::Acquire);
    }

    #[test]
    fn identities_are_unique() {
        let (a, b) = (default_identity(), default_identity());
        assert_ne!(a, b);
        let (host, uuid) = a.rsplit_once('_').unwrap();
        assert_eq!(host, hostname());
        let groups: Vec<usize> = uuid.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{uuid}");
        assert_eq!(&uuid[14..15], "4", "version 4: {uuid}");
    }

    #[test]
    fn settings_are_checked_as_upstream() {
        let ok = LeaderElection::new("kube-system", "kube-controller-manager");
        assert_eq!(ok.validate(), Ok(()));
        let bad = |f: fn(&mut LeaderElection)| {
            let mut s = ok.clone();
            f(&mut s);
            s.validate().unwrap_err().to_string()
        };
        assert_eq!(
            bad(|s| s.lease_duration = Duration::from_secs(10)),
            "leaseDuration: must be greater than renewDeadline"
        );
        assert_eq!(
            bad(|s| s.retry_period = Duration::from_secs(9)),
            "renewDeadline: must be greater than retryPeriod*1.2 (client-go's jitter)"
        );
        assert_eq!(
            bad(|s| s.retry_period = Duration::ZERO),
            "retryPeriod: must be greater than zero"
        );
        assert_eq!(bad(|s| s.resource_name.clear()), "resourceName: required");
        let off = LeaderElection { leader_elect: false, lease_duration: Duration::ZERO, ..ok };
        assert_eq!(off.validate(), Ok(()));
    }

    #[test]
    fn jitter_stays_within_client_go_bounds() {
        for _ in 0..100 {
            let d = jittered(Duration::from_secs(2));
            assert!(d >= Duration::from_secs(2) && d <= Duration::from_millis(4400), "{d:?}");
        }
    }

    #[tokio::test]
    async fn without_election_the_work_just_runs() {
        // A client that would fail if used: election is off, so it never is.
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        let settings = LeaderElection { leader_elect: false, ..LeaderElection::new("ns", "l") };
        let out = run_as_leader(client.clone(), &settings, "me".into(), async { 42 }).await;
        assert_eq!(out.unwrap(), 42);
        // Stopped: the work is dropped.
        let work = std::future::pending::<()>();
        let stop = async {};
        let out = run_as_leader_until(client, &settings, "me".into(), work, stop).await;
        assert_eq!(out.unwrap(), None);
    }
}
