//! Validation of the core (legacy, `v1`) group, one module per kind or family of kinds:
//! `pod` (pods and pod templates: the pod spec, ephemeral containers and what an update may
//! change), `service`, `endpoints`, `node`, `persistent_volume` (claims and volumes),
//! `config` (ConfigMaps and Secrets), `namespace`, `resource_quota`, `limit_range`,
//! `service_account`, `replication_controller` and `event` (both Event APIs, as upstream's
//! core validation checks them).

pub(crate) mod config;
pub(crate) mod endpoints;
pub(crate) mod event;
pub(crate) mod limit_range;
pub(crate) mod namespace;
pub(crate) mod node;
pub(crate) mod persistent_volume;
pub(crate) mod pod;
pub(crate) mod replication_controller;
pub(crate) mod resource_quota;
pub(crate) mod service;
pub(crate) mod service_account;
