//! `discovery.k8s.io/v1`.

mod endpointslices;

pub use endpointslices::EndpointSlices;
