//! The pod lifecycle event generator, as upstream's PLEG: which pods' containers changed, so
//! that their workers sync at once rather than at their next periodic resync. A container's
//! exit reaches the pod's status within about a second.
//!
//! The runtime's event stream ([`Runtime::container_events`], Docker's `start`, `die`,
//! `oom` and `destroy` events for this node's containers) says it as it happens. A relist of
//! the node's containers, compared with the one before, is the backstop for what the stream
//! misses: every 30 s while the stream is up (each pod's worker also resyncs every 10 s), and every second while it is down and for 10 s
//! after it came back, as upstream's evented PLEG falls back to the generic PLEG's
//! one-second relist. A broken stream (the engine restarting) is asked for again with a
//! back-off from 0.25 s doubling to 10 s ([`Periods`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use rkube_runtime::backoff::exponential;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::runtime::{labels, ContainerState, Runtime};

/// The generator's timing.
#[derive(Clone, Debug)]
pub struct Periods {
    /// The relist period while the event stream is up: only a backstop then.
    pub relist: Duration,
    /// The relist period while the stream is down (upstream's generic PLEG relists every
    /// second).
    pub relist_fast: Duration,
    /// How long the fast relist goes on once the stream is back: events between the break
    /// and the new stream's start are only found by relisting.
    pub fast_after_reconnect: Duration,
    pub reconnect_min: Duration,
    pub reconnect_max: Duration,
    /// A stream that stayed up this long was healthy: the next break starts the back-off
    /// again.
    pub healthy: Duration,
}

impl Default for Periods {
    fn default() -> Self {
        Periods {
            relist: Duration::from_secs(30),
            relist_fast: Duration::from_secs(1),
            fast_after_reconnect: Duration::from_secs(10),
            reconnect_min: Duration::from_millis(250),
            reconnect_max: Duration::from_secs(10),
            healthy: Duration::from_secs(30),
        }
    }
}

/// What each container of the node was at the last relist: its pod's uid and state.
type Snapshot = HashMap<String, (String, ContainerState)>;

/// Starts the generator for `node`: the uids of pods whose containers changed come out of the
/// receiver (a uid may come more than once). It stops when the receiver is dropped.
pub fn watch(runtime: Arc<dyn Runtime>, node: String) -> mpsc::Receiver<String> {
    watch_with(runtime, node, Periods::default())
}

/// [`watch`] with its timing given.
pub fn watch_with(
    runtime: Arc<dyn Runtime>,
    node: String,
    periods: Periods,
) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(1024);
    tokio::spawn(async move {
        tokio::select! {
            _ = tx.closed() => {}
            _ = generate(runtime, node, periods, &tx) => {}
        }
    });
    rx
}

/// The node's containers now, or None when the runtime cannot say.
async fn relist(runtime: &dyn Runtime, node: &str) -> Option<Snapshot> {
    match runtime.list(node, None).await {
        Ok(records) => Some(
            records
                .into_iter()
                .map(|r| {
                    let uid = r.label(labels::POD_UID).to_string();
                    (r.id, (uid, r.state))
                })
                .collect(),
        ),
        Err(e) => {
            tracing::debug!(error = %e, "relisting the node's containers");
            None
        }
    }
}

/// The pods with a container that is new, gone or in another state.
fn changed_pods(before: &Snapshot, now: &Snapshot) -> HashSet<String> {
    let changed =
        now.iter().filter(|(id, (_, state))| before.get(*id).map(|b| &b.1) != Some(state));
    let gone = before.iter().filter(|(id, _)| !now.contains_key(*id));
    changed.chain(gone).map(|(_, (uid, _))| uid.clone()).filter(|uid| !uid.is_empty()).collect()
}

async fn generate(
    runtime: Arc<dyn Runtime>,
    node: String,
    periods: Periods,
    tx: &mpsc::Sender<String>,
) {
    let mut snapshot = relist(runtime.as_ref(), &node).await.unwrap_or_default();
    let mut events: Option<BoxStream<'static, String>> = Some(runtime.container_events(&node));
    let mut connected_at = Instant::now();
    // Breaks of the stream in a row (one that stayed up `healthy` long starts over).
    let mut breaks = 0;
    let mut reconnect_at = Instant::now();
    // Relist fast until then.
    let mut fast_until = Instant::now();
    let mut next_relist = Instant::now() + periods.relist;
    loop {
        let down = events.is_none();
        let event = async {
            match events.as_mut() {
                Some(stream) => stream.next().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = event => match event {
                Some(uid) => {
                    if tx.send(uid).await.is_err() { return; }
                }
                None => {
                    events = None;
                    if connected_at.elapsed() >= periods.healthy {
                        breaks = 0;
                    }
                    breaks += 1;
                    let backoff =
                        exponential(periods.reconnect_min, periods.reconnect_max, breaks);
                    tracing::warn!(
                        node, retry_in = ?backoff,
                        "the container event stream ended; relisting meanwhile"
                    );
                    reconnect_at = Instant::now() + backoff;
                    next_relist = next_relist.min(Instant::now() + periods.relist_fast);
                }
            },
            _ = tokio::time::sleep_until(reconnect_at), if down => {
                events = Some(runtime.container_events(&node));
                connected_at = Instant::now();
                fast_until = Instant::now() + periods.fast_after_reconnect;
                // What happened while it was down.
                next_relist = Instant::now();
            }
            _ = tokio::time::sleep_until(next_relist) => {
                if let Some(now) = relist(runtime.as_ref(), &node).await {
                    for uid in changed_pods(&snapshot, &now) {
                        if tx.send(uid).await.is_err() { return; }
                    }
                    snapshot = now;
                }
                let fast = events.is_none() || Instant::now() < fast_until;
                next_relist =
                    Instant::now() + if fast { periods.relist_fast } else { periods.relist };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::sim::SimulatedRuntime;
    use crate::runtime::{ContainerSpec, PodRef, SandboxSpec};

    fn snapshot(entries: &[(&str, &str, ContainerState)]) -> Snapshot {
        entries
            .iter()
            .map(|(id, uid, state)| (id.to_string(), (uid.to_string(), state.clone())))
            .collect()
    }

    #[test]
    fn a_relist_names_the_pods_whose_containers_changed() {
        let running = ContainerState::Running { started_at: Default::default() };
        let exited = ContainerState::Exited {
            exit_code: 3,
            started_at: None,
            finished_at: Default::default(),
            oom_killed: false,
            error: String::new(),
        };
        let before = snapshot(&[
            ("a1", "a", running.clone()),
            ("b1", "b", running.clone()),
            ("c1", "c", running.clone()),
        ]);
        let now = snapshot(&[
            ("a1", "a", running.clone()),
            ("b1", "b", exited),
            ("d1", "d", ContainerState::Created),
        ]);
        let mut changed: Vec<String> = changed_pods(&before, &now).into_iter().collect();
        changed.sort();
        assert_eq!(changed, ["b", "c", "d"]);
        assert!(changed_pods(&now, &now).is_empty());
    }

    /// A pod of the simulated node `n`: its sandbox's id.
    async fn sandbox(runtime: &SimulatedRuntime, uid: &str) -> String {
        let pod = PodRef { uid: uid.into(), namespace: "default".into(), name: uid.into() };
        let spec = SandboxSpec { pod, hostname: uid.into(), ..Default::default() };
        runtime.run_sandbox("n", &spec).await.unwrap().0
    }

    /// Starts and stops a container in the pod of `sandbox`.
    async fn run_and_stop(runtime: &SimulatedRuntime, uid: &str, sandbox: &str) {
        let pod = PodRef { uid: uid.into(), namespace: "default".into(), name: uid.into() };
        let spec = ContainerSpec {
            pod: Some(pod),
            name: "c".into(),
            image: "busybox:1.36".into(),
            ..Default::default()
        };
        runtime.pull_image("busybox:1.36", None).await.unwrap();
        let id = runtime.create_container("n", sandbox, false, &spec).await.unwrap();
        runtime.start_container(&id).await.unwrap();
        runtime.stop_container(&id, Duration::ZERO).await.unwrap();
    }

    async fn next(pokes: &mut mpsc::Receiver<String>, within: Duration) -> Option<String> {
        tokio::time::timeout(within, pokes.recv()).await.ok().flatten()
    }

    /// Whether `uid` is poked within the time given (other pods' pokes are passed over).
    async fn poked(pokes: &mut mpsc::Receiver<String>, uid: &str, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while let Some(poked) = next(pokes, deadline - tokio::time::Instant::now()).await {
            if poked == uid {
                return true;
            }
        }
        false
    }

    /// Lets the pokes of what came before go by.
    async fn drain(pokes: &mut mpsc::Receiver<String>) {
        while next(pokes, Duration::from_millis(100)).await.is_some() {}
    }

    #[tokio::test]
    async fn events_poke_at_once_and_a_broken_stream_is_relisted_then_reconnected() {
        let runtime = Arc::new(SimulatedRuntime::new());
        runtime.ensure_network("n", "10.42.9.0/24").await.unwrap();
        // A relist only once a minute unless the stream is down: a poke within a second
        // while it is up comes from an event.
        let periods = Periods {
            relist: Duration::from_secs(60),
            relist_fast: Duration::from_millis(200),
            fast_after_reconnect: Duration::ZERO,
            reconnect_min: Duration::from_millis(50),
            reconnect_max: Duration::from_millis(200),
            healthy: Duration::from_secs(60),
        };
        let mut pokes = watch_with(runtime.clone(), "n".into(), periods);
        // The generator's first relist and its stream come first.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let one = sandbox(&runtime, "u1").await;
        assert!(poked(&mut pokes, "u1", Duration::from_secs(1)).await);
        drain(&mut pokes).await;
        run_and_stop(&runtime, "u1", &one).await;
        assert!(poked(&mut pokes, "u1", Duration::from_secs(1)).await);
        drain(&mut pokes).await;

        assert_eq!(runtime.event_streams(), 1);
        // The engine goes away: no events, yet the relist sees what changes.
        runtime.break_events();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(runtime.event_streams(), 0);
        let two = sandbox(&runtime, "u2").await;
        assert!(poked(&mut pokes, "u2", Duration::from_secs(2)).await, "relisted");
        drain(&mut pokes).await;
        run_and_stop(&runtime, "u2", &two).await;
        assert!(poked(&mut pokes, "u2", Duration::from_secs(2)).await, "relisted");

        // Back: the stream is asked for again, and events come at once again.
        runtime.restore_events();
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while runtime.event_streams() == 0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(runtime.event_streams(), 1, "the stream is asked for again");
        drain(&mut pokes).await;
        let three = sandbox(&runtime, "u3").await;
        assert!(poked(&mut pokes, "u3", Duration::from_secs(1)).await, "an event");
        drain(&mut pokes).await;
        run_and_stop(&runtime, "u3", &three).await;
        assert!(poked(&mut pokes, "u3", Duration::from_secs(1)).await, "an event");
    }
}
