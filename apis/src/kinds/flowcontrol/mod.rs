//! `flowcontrol.apiserver.k8s.io/v1`.

mod flowschemas;
mod prioritylevelconfigurations;

pub use flowschemas::FlowSchemas;
pub use prioritylevelconfigurations::PriorityLevelConfigurations;
