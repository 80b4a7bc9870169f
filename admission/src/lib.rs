//! Admission plugins behind one trait: NamespaceLifecycle, LimitRanger, ResourceQuota and
//! ServiceAccount (later: admission webhooks).
//!
//! Not implemented yet. The API server calls the mutating plugins, then validation, then the
//! validating plugins, for every create, update, patch and delete.
