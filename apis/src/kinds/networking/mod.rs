//! `networking.k8s.io/v1`.

mod ingressclasses;
mod ingresses;
mod ipaddresses;
mod networkpolicies;
mod servicecidrs;

pub use ingressclasses::IngressClasses;
pub use ingresses::Ingresses;
pub use ipaddresses::IpAddresses;
pub use networkpolicies::NetworkPolicies;
pub use servicecidrs::ServiceCidrs;
