//! The rkube scheduler: a filter/score plugin framework, binding pods through `pods/binding`
//! as kube-scheduler does. It reaches the API server only through its public API.
//!
//! Start at [`framework`] (what plugins see and implement) and [`plugins`] (the default
//! set); [`scheduler`] is the loop (watches, cache, binding), [`queue`] the scheduling queue,
//! [`resources`] parses quantities and computes what a pod requests, [`config`] reads a
//! KubeSchedulerConfiguration, [`workloads`] keeps the selectors the default topology
//! spread constraints need, and [`volumes`] the claims and volumes `VolumeBinding` needs. One active scheduler is elected through the
//! `kube-system/kube-scheduler` Lease with [`rkube_runtime::leader_election`].

pub mod config;
pub mod framework;
pub mod nominated;
pub mod plugins;
pub mod preemption;
pub mod queue;
pub mod resources;
pub mod scheduler;
pub mod volumes;
pub mod workloads;

pub use rkube_runtime::leader_election;
pub use scheduler::run;

/// Runs every profile of `config`, while holding the leader Lease when leader election is
/// on (kube-scheduler's `--config`). Returns an error when leadership is lost: the caller
/// should exit, as kube-scheduler does.
pub async fn run_with_config(
    client: kube::Client,
    config: config::Config,
    identity: String,
) -> Result<(), leader_election::LeaderError> {
    let settings = config.leader_election.clone();
    let loops = config.profiles.into_iter().map(|profile| run(client.clone(), profile));
    leader_election::run_as_leader(
        client.clone(),
        &settings,
        identity,
        futures::future::join_all(loops),
    )
    .await
    .map(|_| ())
}
