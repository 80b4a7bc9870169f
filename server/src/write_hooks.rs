//! Side effects of writes that hold storage of their own, per resource: what a resource's
//! objects take beyond their own key (a Service's ClusterIPs and NodePorts, each an object or
//! key of its own), taken before the object is written and given back when the write fails
//! or the object goes. The registry looks the hooks up in its table by resource
//! ([`crate::registry::Registry`]); resources without hooks have none of this.

use async_trait::async_trait;
use rkube_store::Store;
use serde_json::Value;

use crate::status::ApiResult;

/// What an update took (store keys it must give back if the write fails) and what the old
/// object held that the new one does not (to give back once the write succeeded).
#[derive(Debug, Default)]
pub struct Held {
    pub taken: Vec<String>,
    pub released: Vec<String>,
}

/// The side effects of one resource's writes.
#[async_trait]
pub trait WriteHooks: Send + Sync {
    /// Before a new object is stored: takes what it holds (on failure, nothing stays taken).
    async fn before_create(&self, store: &dyn Store, obj: &mut Value) -> ApiResult<()>;

    /// After an object was deleted, or its create failed: gives back what it held.
    async fn release(&self, store: &dyn Store, obj: &Value);

    /// On an update of the main resource, before validation: what the server filled in
    /// that the client left out stays.
    fn keep_allocated(&self, new: &mut Value, old: &Value);

    /// Before an update of the main resource is stored: takes what the new object holds
    /// more than the old one.
    async fn before_update(
        &self,
        store: &dyn Store,
        new: &mut Value,
        old: &Value,
    ) -> ApiResult<Held>;

    /// After the update was (`written`) or was not stored: gives back what the old object
    /// held and the new one does not, or what the update took.
    async fn after_update(&self, store: &dyn Store, held: Held, written: bool);
}
