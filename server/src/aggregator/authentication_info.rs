//! `kube-system/extension-apiserver-authentication`: the ConfigMap kube-apiserver publishes
//! (its cluster-authentication-trust controller) so that extension API servers know whom to
//! trust: `client-ca-file` (the CA of client certificates), and for requests this server
//! proxies, `requestheader-client-ca-file` (the front-proxy CA), `requestheader-allowed-names`
//! and the header names (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-`), lists as JSON
//! arrays. Checked at every start, so a changed CA is published.

use serde_json::{json, Value};

use super::FrontProxy;
use crate::registry::{Registry, WriteOptions};

pub const NAMESPACE: &str = "kube-system";
pub const NAME: &str = "extension-apiserver-authentication";

/// The ConfigMap's data.
pub fn data(client_ca_pem: &[u8], front_proxy: Option<&FrontProxy>) -> Value {
    let mut data = json!({"client-ca-file": String::from_utf8_lossy(client_ca_pem)});
    if let Some(front_proxy) = front_proxy {
        let list = |v: &[&str]| serde_json::to_string(v).expect("strings");
        let names: Vec<&str> = front_proxy.allowed_names.iter().map(String::as_str).collect();
        data["requestheader-client-ca-file"] = json!(String::from_utf8_lossy(&front_proxy.ca_pem));
        data["requestheader-allowed-names"] = json!(list(&names));
        data["requestheader-username-headers"] = json!(list(&["X-Remote-User"]));
        data["requestheader-group-headers"] = json!(list(&["X-Remote-Group"]));
        data["requestheader-extra-headers-prefix"] = json!(list(&["X-Remote-Extra-"]));
    }
    data
}

/// Creates or updates the ConfigMap.
pub async fn publish(registry: &Registry, data: Value) -> Result<(), String> {
    let info =
        rkube_apis::resources::Resources::builtin().get("", "v1", "configmaps").expect("built in");
    let options =
        WriteOptions { field_manager: Some("kube-apiserver".to_string()), ..Default::default() };
    let obj = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "data": data.clone(),
    });
    match registry.create(info, Some(NAMESPACE), obj, &options).await {
        Ok(_) => return Ok(()),
        Err(e) if e.reason == "AlreadyExists" => {}
        Err(e) => return Err(e.message),
    }
    // Unchanged (the usual restart): nothing to write.
    if let Ok(current) = registry.get(info, Some(NAMESPACE), NAME).await {
        if current["data"] == data {
            return Ok(());
        }
    }
    let replace = |old: &Value| {
        let mut new = old.clone();
        new["data"] = data.clone();
        Ok(new)
    };
    registry
        .modify(info, Some(NAMESPACE), NAME, None, &options, None, replace)
        .await
        .map(|_| ())
        .map_err(|e| e.message)
}
