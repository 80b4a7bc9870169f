//! A remote service named by a kubeconfig file, as kube-apiserver's webhook configuration
//! files name them (`--audit-webhook-config-file`,
//! `--authentication-token-webhook-config-file`): the current context's cluster gives the
//! `server` (an `https://` URL with its path) and how to trust it
//! (`certificate-authority[-data]`, `insecure-skip-tls-verify`), its user how this server
//! proves who it is (`client-certificate[-data]` and `client-key[-data]`, or
//! `token`/`tokenFile`). Files named in it are relative to the kubeconfig's directory.
//! [`KubeconfigWebhook::post_json`] POSTs through the server's HTTPS client
//! ([`crate::service_client`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http::StatusCode;
use serde_json::{json, Value};

use crate::service_client::{ClientCert, ClientConfig, Destination, ServiceClient};

/// A remote named by a kubeconfig's current context.
#[derive(Clone)]
pub struct KubeconfigWebhook {
    client: ClientConfig,
    /// The full URL (with its path) requests are POSTed to.
    pub url: String,
    bearer_token: Option<String>,
    http: Arc<ServiceClient>,
}

impl std::fmt::Debug for KubeconfigWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeconfigWebhook").field("url", &self.url).finish()
    }
}

impl KubeconfigWebhook {
    /// Reads `path`'s current context; an error says what is missing or wrong.
    pub fn from_file(path: &Path) -> Result<KubeconfigWebhook, String> {
        let text =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let config: Value = crate::yaml::decode(&text)
            .map_err(|e| format!("{}: not a kubeconfig: {e}", path.display()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        KubeconfigWebhook::from_value(&config, dir).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn from_value(config: &Value, dir: &Path) -> Result<KubeconfigWebhook, String> {
        let named = |list: &str, name: &str, key: &str| -> Result<Value, String> {
            config[list]
                .as_array()
                .and_then(|items| items.iter().find(|i| i["name"] == name))
                .map(|i| i[key].clone())
                .ok_or_else(|| format!("no {key} named {name:?}"))
        };
        let context_name = config["current-context"].as_str().unwrap_or("");
        let context = match context_name {
            "" => config["contexts"][0]["context"].clone(),
            name => named("contexts", name, "context")?,
        };
        if context.is_null() {
            return Err("no context".into());
        }
        let cluster = named("clusters", context["cluster"].as_str().unwrap_or(""), "cluster")?;
        let user = match context["user"].as_str().unwrap_or("") {
            "" => Value::Null,
            name => named("users", name, "user")?,
        };
        let url = cluster["server"].as_str().unwrap_or("").to_string();
        if !url.starts_with("https://") {
            return Err(format!("the cluster's server must be an https:// URL, not {url:?}"));
        }
        let read =
            |value: &Value, data_key: &str, file_key: &str| -> Result<Option<Vec<u8>>, String> {
                if let Some(data) = value[data_key].as_str() {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(data.trim())
                        .map_err(|e| format!("{data_key}: {e}"))?;
                    return Ok(Some(bytes));
                }
                match value[file_key].as_str() {
                    Some(file) => {
                        let path = dir.join(file);
                        std::fs::read(&path)
                            .map(Some)
                            .map_err(|e| format!("{file_key} {}: {e}", path.display()))
                    }
                    None => Ok(None),
                }
            };
        let ca = read(&cluster, "certificate-authority-data", "certificate-authority")?;
        let cert = read(&user, "client-certificate-data", "client-certificate")?;
        let key = read(&user, "client-key-data", "client-key")?;
        let client_cert = match (cert, key) {
            (Some(cert_pem), Some(key_pem)) => Some(ClientCert { cert_pem, key_pem }),
            (None, None) => None,
            _ => return Err("the user needs both a client certificate and its key".into()),
        };
        let bearer_token = match (user["token"].as_str(), user["tokenFile"].as_str()) {
            (Some(token), _) => Some(token.to_string()),
            (None, Some(file)) => Some(
                std::fs::read_to_string(dir.join(file))
                    .map_err(|e| format!("tokenFile {file}: {e}"))?
                    .trim()
                    .to_string(),
            ),
            (None, None) => None,
        };
        let client = ClientConfig {
            destination: Destination::Url(url.clone()),
            ca_bundle: ca.unwrap_or_default(),
            client_cert,
            insecure_skip_tls_verify: cluster["insecure-skip-tls-verify"] == json!(true),
        };
        // A URL needs no Service lookups: the client has no registry.
        let http = Arc::new(ServiceClient::new(std::sync::Weak::new()));
        Ok(KubeconfigWebhook { client, url, bearer_token, http })
    }

    /// POSTs `body` (JSON) and reads the answer (at most 1 MiB), within `timeout`. Errors as
    /// Go's client words them (`Post "<url>": ...`).
    pub async fn post_json(
        &self,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<(StatusCode, Bytes), String> {
        let mut request = http::Request::post(&self.url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, */*")
            .header(http::header::USER_AGENT, "kube-apiserver");
        if let Some(token) = &self.bearer_token {
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request.body(axum::body::Body::from(body)).map_err(|e| e.to_string())?;
        let exchange = async {
            let response = self.http.forward(&self.client, request).await.map_err(|e| e.0)?;
            let status = response.status();
            let body = http_body_util::BodyExt::collect(http_body_util::Limited::new(
                response.into_body(),
                1024 * 1024,
            ))
            .await
            .map_err(|e| format!("Post {:?}: {e}", self.url))?
            .to_bytes();
            Ok((status, body))
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(answer) => answer,
            Err(_) => Err(format!("Post {:?}: context deadline exceeded", self.url)),
        }
    }
}

/// How a review is retried: upstream's default back-off for webhooks (500 ms, 1.5 times
/// longer each time, 5 tries).
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const TRIES: usize = 5;

impl KubeconfigWebhook {
    /// POSTs a review (JSON) and reads the JSON answer, retrying as upstream retries a
    /// webhook: after a failed connection, a 429 or a 5xx, up to 5 tries. `what` names the
    /// webhook in errors (`the token webhook answered 403 Forbidden`).
    pub async fn review(
        &self,
        body: Vec<u8>,
        timeout: Duration,
        what: &str,
    ) -> Result<Value, String> {
        let mut backoff = FIRST_BACKOFF;
        let mut last = String::new();
        for attempt in 1..=TRIES {
            match self.post_json(body.clone(), timeout).await {
                Ok((status, answer)) if status.is_success() => {
                    return serde_json::from_slice(&answer)
                        .map_err(|e| format!("the {what}'s answer is not JSON: {e}"));
                }
                Ok((status, _)) if !(status.as_u16() == 429 || status.is_server_error()) => {
                    return Err(format!("the {what} answered {status}"));
                }
                Ok((status, _)) => last = format!("the {what} answered {status}"),
                Err(e) => last = e,
            }
            if attempt < TRIES {
                tokio::time::sleep(backoff).await;
                backoff = backoff.mul_f64(1.5);
            }
        }
        tracing::warn!(error = last, "{what}: no answer");
        Err(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_context_names_the_remote() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "s3cret\n").unwrap();
        let config = json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "audit",
            "clusters": [{"name": "sink", "cluster": {
                "server": "https://127.0.0.1:9443/audit",
                "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode("CA PEM")}}],
            "users": [{"name": "apiserver", "user": {"tokenFile": "token"}}],
            "contexts": [{"name": "audit", "context": {"cluster": "sink", "user": "apiserver"}}],
        });
        let r = KubeconfigWebhook::from_value(&config, dir.path()).unwrap();
        assert_eq!(r.url, "https://127.0.0.1:9443/audit");
        assert_eq!(r.client.ca_bundle, b"CA PEM");
        assert_eq!(r.bearer_token.as_deref(), Some("s3cret"));
        let mut plain = config.clone();
        plain["clusters"][0]["cluster"]["server"] = json!("http://127.0.0.1:9443/");
        let err = KubeconfigWebhook::from_value(&plain, dir.path()).unwrap_err();
        assert!(err.contains("must be an https:// URL"), "{err}");
        let mut half = config.clone();
        half["users"][0]["user"] = json!({"client-certificate-data": "Q0VSVA=="});
        let err = KubeconfigWebhook::from_value(&half, dir.path()).unwrap_err();
        assert_eq!(err, "the user needs both a client certificate and its key");
    }
}
