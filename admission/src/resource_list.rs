//! Resource lists (`{"cpu": "500m", "memory": "1Gi"}`: requests, limits, overheads,
//! LimitRange bounds) read as exact quantities, for plugins that compare or add them.

use std::collections::BTreeMap;

use rkube_apis::quantity::Quantity;
use serde_json::Value;

/// A resource list by resource name. Two lists are equal when they name the same resources
/// with equal quantities (`1Gi` equals `1024Mi`), as upstream's semantic equality has it.
pub type ResourceList = BTreeMap<String, Quantity>;

/// The resource list at `value` (absent or not an object: empty). Entries that are not
/// quantities are left out: the object's own validation refuses them.
pub fn resource_list(value: &Value) -> ResourceList {
    value
        .as_object()
        .map(|list| {
            list.iter().filter_map(|(k, v)| Some((k.clone(), Quantity::parse(v)?))).collect()
        })
        .unwrap_or_default()
}
