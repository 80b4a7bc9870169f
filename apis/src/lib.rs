//! The resource registry of rkube: pure data and functions, no I/O.
//!
//! This crate will hold every built-in kind rkube serves: its group, version, resource name,
//! scope, verbs, short names, categories and subresources; the per-kind strategy hooks the
//! generic registry in `rkube-server` calls (defaulting, validation, field selectors, table
//! columns, strategic-merge-patch keys); server-side apply and field ownership ([`apply`]);
//! and the OpenAPI documents generated from the `k8s-openapi` types.
//!
//! Nothing here is implemented yet: the API server core (issue 3) fills it in. It depends on
//! no other rkube crate, so that the server, the controllers and the tools can all use it.

pub mod apply;
pub mod defaults;
pub mod openapi;
pub mod patch;
pub mod quantity;
pub mod resources;
pub mod selectors;
pub mod strategy;
pub mod tables;
pub mod taints;
mod validate_kinds;
pub mod validation;

/// The Kubernetes version rkube implements.
pub const KUBERNETES_VERSION: &str = "v1.33.0";
pub mod convert;
pub mod openapi_v2_proto;
pub mod protobuf;
