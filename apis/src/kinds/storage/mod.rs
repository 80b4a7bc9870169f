//! `storage.k8s.io/v1`.

mod csidrivers;
mod csinodes;
mod csistoragecapacities;
mod storageclasses;
mod volumeattachments;

pub use csidrivers::CsiDrivers;
pub use csinodes::CsiNodes;
pub use csistoragecapacities::CsiStorageCapacities;
pub use storageclasses::StorageClasses;
pub use volumeattachments::VolumeAttachments;
