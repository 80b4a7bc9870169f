//! Admission plugins: changes and checks the API server applies to objects before they are
//! stored, after authentication and before validation.
//!
//! Today: [`priority`], kube-apiserver's `Priority` plugin. NamespaceLifecycle is done by the
//! registry itself for now; LimitRanger, ResourceQuota, ServiceAccount and webhooks come with
//! their issue, behind one trait.

pub mod priority;
