//! The core group (`v1`).

mod componentstatuses;
mod configmaps;
mod endpoints;
mod events;
mod limitranges;
mod namespaces;
mod nodes;
mod persistentvolumeclaims;
mod persistentvolumes;
mod pods;
mod podtemplates;
mod replicationcontrollers;
mod resourcequotas;
mod secrets;
mod serviceaccounts;
mod services;

pub use componentstatuses::ComponentStatuses;
pub use configmaps::ConfigMaps;
pub use endpoints::Endpoints;
pub use events::Events;
pub(crate) use events::{event_row, EVENT_COLUMNS};
pub use limitranges::LimitRanges;
pub use namespaces::Namespaces;
pub use nodes::Nodes;
pub use persistentvolumeclaims::PersistentVolumeClaims;
pub use persistentvolumes::PersistentVolumes;
pub use pods::{qos_class, Pods};
pub use podtemplates::PodTemplates;
pub use replicationcontrollers::ReplicationControllers;
pub use resourcequotas::ResourceQuotas;
pub use secrets::Secrets;
pub use serviceaccounts::ServiceAccounts;
pub use services::Services;
