//! Validation with upstream's messages and field paths (kubectl shows them verbatim in
//! `... is invalid: ...`), one module per API group as in `crate::defaults` and
//! `crate::kinds`: a kind's strategy (`crate::kinds::<group>::<resource>`) calls its
//! group's check here from `validate`. The legacy group is a directory, `core` (pods,
//! services, nodes, volumes and claims, config, quotas, ...); the others are `apps`,
//! `batch` (with its cron schedules), `autoscaling`, `policy`, `rbac`, `scheduling`,
//! `storage`, `networking`, `discovery`, `coordination`, `node`, `certificates`,
//! `flowcontrol`, `admissionregistration`, `apiextensions` and `apiregistration`.
//! events.k8s.io Events are checked by `core::event`, as upstream checks both Event APIs
//! in its core validation.
//!
//! What the groups share has its own modules: field errors ([`FieldError`], `field`), name
//! rules and object metadata (`meta`), single-value checks (`values`: ports, enums, label
//! maps and selectors, config keys, resource names and quantities, percents), IP and CIDR
//! checks (`net`), pod templates and their selectors (`templates`) and webhook client
//! configurations (`webhook`). Bad values that upstream prints as Go structs are rendered by
//! `crate::gofmt`.

mod crd_defaults;
mod field;
mod go_regexp;
mod meta;
mod net;
mod templates;
pub(crate) mod values;
mod webhook;

pub(crate) mod admissionregistration;
pub(crate) mod apiextensions;
pub(crate) mod apiregistration;
pub(crate) mod apps;
pub(crate) mod autoscaling;
pub(crate) mod batch;
pub(crate) mod certificates;
pub(crate) mod coordination;
pub(crate) mod core;
pub(crate) mod discovery;
pub(crate) mod flowcontrol;
pub(crate) mod networking;
pub(crate) mod node;
pub(crate) mod policy;
pub(crate) mod rbac;
pub mod rules;
pub(crate) mod scheduling;
pub(crate) mod storage;

pub use self::core::pod::ephemeral_containers_update;
pub use field::FieldError;
pub use meta::{
    label_value_problems, name_problems, qualified_name_problems, validate_object_meta, NameRule,
};
