//! Status writes as upstream's controllers make them: a replace of `/status` (so that a
//! concurrent change is a conflict rather than silently overwritten), and on failure once
//! more on a fresh copy.

use std::fmt::Debug;

use k8s_openapi::serde::de::DeserializeOwned;
use k8s_openapi::serde::Serialize;
use kube::api::{Api, PostParams};
use kube::Resource;

/// Writes `object` with `set` applied to its status; on failure applies `set` to a fresh
/// copy and writes that.
pub async fn write_status<K>(
    api: &Api<K>,
    object: &K,
    set: impl Fn(&mut K),
) -> Result<(), kube::Error>
where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned,
{
    let name = object.meta().name.clone().unwrap_or_default();
    let mut updated = object.clone();
    set(&mut updated);
    if let Err(e) = api.replace_status(&name, &PostParams::default(), &updated).await {
        tracing::debug!(owner = name, error = %e, "status update failed; retrying on a fresh copy");
        let mut fresh = api.get(&name).await?;
        set(&mut fresh);
        api.replace_status(&name, &PostParams::default(), &fresh).await?;
    }
    Ok(())
}
