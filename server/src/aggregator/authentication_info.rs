//! `kube-system/extension-apiserver-authentication`: the ConfigMap kube-apiserver publishes
//! (its cluster-authentication-trust controller) so that extension API servers know whom to
//! trust: `client-ca-file` (the CA of client certificates), and for requests this server
//! proxies, `requestheader-client-ca-file` (the front-proxy CA), `requestheader-allowed-names`
//! and the header names (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-` by default),
//! lists as JSON arrays: the `--requestheader-*` flags. Checked at every start, so a changed CA is published.

use serde_json::{json, Value};

use crate::authn::requestheader::RequestHeaderOptions;
use crate::registry::{Registry, WriteOptions};

pub const NAMESPACE: &str = "kube-system";
pub const NAME: &str = "extension-apiserver-authentication";

/// The ConfigMap's data: the cluster CA, and the `--requestheader-*` settings when set.
pub fn data(client_ca_pem: &[u8], requestheader: Option<&RequestHeaderOptions>) -> Value {
    let mut data = json!({"client-ca-file": String::from_utf8_lossy(client_ca_pem)});
    if let Some(options) = requestheader {
        let list = |v: &[String]| serde_json::to_string(v).expect("strings");
        data["requestheader-client-ca-file"] = json!(String::from_utf8_lossy(&options.ca_pem));
        data["requestheader-allowed-names"] = json!(list(&options.allowed_names));
        data["requestheader-username-headers"] = json!(list(&options.username_headers));
        data["requestheader-group-headers"] = json!(list(&options.group_headers));
        data["requestheader-extra-headers-prefix"] = json!(list(&options.extra_headers_prefix));
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
