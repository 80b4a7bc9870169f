//! `coordination.k8s.io/v1`.

mod leases;

pub use leases::Leases;
