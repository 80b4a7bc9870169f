//! Admission plugins: changes and checks the API server applies to objects before they are
//! stored, after authentication and before validation.
//!
//! Today: [`priority`] and [`default_toleration_seconds`], kube-apiserver's `Priority` and
//! `DefaultTolerationSeconds` plugins. NamespaceLifecycle is done by the registry itself for
//! now; LimitRanger, ResourceQuota, ServiceAccount and webhooks come with their issue, behind
//! one trait.

pub mod default_toleration_seconds;
pub mod priority;
