//! One strategy per built-in resource ([`crate::strategy::Strategy`]), in a module named for
//! its group and resource: everything rkube does differently for Deployments is in
//! `apps/deployments.rs`, and so on, their `kubectl get` table (columns and row cells, with
//! the shared cell formatting of `crate::tables`) included. The functions they call for
//! defaults and validation live in `crate::defaults` and `crate::validation`, in modules
//! named for the same API groups; the table in `crate::resources` maps each resource to its
//! strategy. Resources with nothing of their own (the reviews, bindings) use
//! [`crate::strategy::Generic`].
//!
//! Adding a built-in kind: one module here and one row in that table.

pub mod admissionregistration;
pub mod apiextensions;
pub mod apiregistration;
pub mod apps;
pub mod autoscaling;
pub mod batch;
pub mod certificates;
pub mod coordination;
pub mod core;
pub mod custom;
pub mod discovery;
pub mod events;
pub mod flowcontrol;
pub mod networking;
pub mod node;
pub mod policy;
pub mod rbac;
pub mod scheduling;
pub mod storage;
