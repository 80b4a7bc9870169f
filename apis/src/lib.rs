//! The resource registry of rkube: pure data and functions, no I/O.
//!
//! Every built-in kind rkube serves ([`resources`]: group, version, resource name, scope,
//! verbs, short names, categories, subresources); the per-kind strategy hooks the generic
//! registry in `rkube-server` calls ([`strategy`]: [`defaults`], [`disabled_fields`],
//! [`validation`], field selectors, [`tables`]); patches ([`patch`]) and server-side apply with field ownership ([`apply`]);
//! the OpenAPI documents ([`openapi`]) and protobuf encoding ([`protobuf`]). It depends on no
//! other rkube crate, so that the server, the controllers and the tools can all use it.

pub mod apply;
pub mod cron;
pub mod defaults;
pub mod disabled_fields;
pub mod go_json;
mod gofmt;
/// Compact JSON as Go's `json.Marshal` writes it (HTML-safe escapes, members in order).
pub use gofmt::go_json as go_marshal;
pub use gofmt::go_quote;
pub mod kinds;
pub mod names;
pub mod node_selector;
pub mod openapi;
pub mod patch;
pub mod persistent_volumes;
pub mod quantity;
pub mod quota;
pub mod resources;
pub mod selectors;
pub mod strategy;
pub mod structural;
pub mod tables;
pub mod taints;
pub mod validation;

/// The Kubernetes version rkube implements.
pub const KUBERNETES_VERSION: &str = "v1.33.0";
pub mod convert;
pub mod openapi_v2_proto;
pub mod protobuf;
