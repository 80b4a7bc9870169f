//! `apps/v1`.

mod controllerrevisions;
mod daemonsets;
mod deployments;
mod replicasets;
mod statefulsets;

pub use controllerrevisions::ControllerRevisions;
pub use daemonsets::DaemonSets;
pub use deployments::Deployments;
pub use replicasets::ReplicaSets;
pub use statefulsets::StatefulSets;
