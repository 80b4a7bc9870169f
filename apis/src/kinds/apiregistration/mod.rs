//! `apiregistration.k8s.io/v1`.

mod apiservices;

pub use apiservices::ApiServices;
