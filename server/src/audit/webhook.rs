//! The webhook backend (`--audit-webhook-config-file` and the other `--audit-webhook-*`
//! flags), as kube-apiserver's in its default `batch` mode: events are buffered
//! (`--audit-webhook-batch-buffer-size`, dropped with a warning when full, so a slow or dead
//! receiver never holds requests up) and POSTed as an `audit.k8s.io/v1` `EventList` to the
//! kubeconfig's server once `--audit-webhook-batch-max-size` events are waiting or
//! `--audit-webhook-batch-max-wait` has passed since the first. A failed POST (no answer or
//! not 2xx) is retried after `--audit-webhook-initial-backoff`, growing 1.5 times, up to 5
//! tries, then the batch is dropped with an error in the log.
//!
//! The kubeconfig's current context names the receiver: `server` (an `https://` URL with its
//! path), `certificate-authority[-data]` or `insecure-skip-tls-verify`, and the user's
//! `client-certificate[-data]`/`client-key[-data]` or `token`/`tokenFile`. The POSTs go
//! through the server's own HTTPS client ([`crate::service_client`]).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::event::Event;
use super::Sink;
use crate::service_client::{ClientCert, ClientConfig, Destination, ServiceClient};

/// The `--audit-webhook-*` flags.
#[derive(Clone, Debug)]
pub struct WebhookOptions {
    pub receiver: Receiver,
    pub buffer_size: usize,
    pub max_batch_size: usize,
    pub max_wait: Duration,
    pub initial_backoff: Duration,
}

impl WebhookOptions {
    /// kube-apiserver's defaults for `receiver`.
    pub fn new(receiver: Receiver) -> WebhookOptions {
        WebhookOptions {
            receiver,
            buffer_size: 10_000,
            max_batch_size: 400,
            max_wait: Duration::from_secs(30),
            initial_backoff: Duration::from_secs(10),
        }
    }
}

/// Where the batches go, read from a kubeconfig.
#[derive(Clone, Debug)]
pub struct Receiver {
    pub client: ClientConfig,
    /// The full URL (with its path) the batches are POSTed to.
    pub url: String,
    pub bearer_token: Option<String>,
}

impl Receiver {
    /// Reads `path`'s current context; an error says what is missing or wrong.
    pub fn from_kubeconfig(path: &Path) -> Result<Receiver, String> {
        let text =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let config: Value = crate::yaml::decode(&text)
            .map_err(|e| format!("{}: not a kubeconfig: {e}", path.display()))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Receiver::from_kubeconfig_value(&config, dir)
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    fn from_kubeconfig_value(config: &Value, dir: &Path) -> Result<Receiver, String> {
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
        Ok(Receiver { client, url, bearer_token })
    }
}

/// The webhook backend: a bounded buffer, emptied by one sending task.
pub struct WebhookBackend {
    events: mpsc::Sender<Value>,
    dropped: AtomicU64,
}

impl WebhookBackend {
    /// Starts the sending task (on the current Tokio runtime).
    pub fn start(options: WebhookOptions, client: Arc<ServiceClient>) -> WebhookBackend {
        let (events, queue) = mpsc::channel(options.buffer_size.max(1));
        tokio::spawn(send_batches(options, client, queue));
        WebhookBackend { events, dropped: AtomicU64::new(0) }
    }
}

impl Sink for WebhookBackend {
    fn process(&self, event: &Event) -> bool {
        if self.events.try_send(event.to_json()).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed);
            if n.is_multiple_of(1000) {
                tracing::warn!(dropped = n + 1, "audit webhook buffer full: events dropped");
            }
        }
        true
    }
}

/// Collects batches from `queue` and sends each, until the backend is gone.
async fn send_batches(
    options: WebhookOptions,
    client: Arc<ServiceClient>,
    mut queue: mpsc::Receiver<Value>,
) {
    loop {
        let Some(first) = queue.recv().await else { return };
        let mut batch = vec![first];
        let deadline = tokio::time::Instant::now() + options.max_wait;
        while batch.len() < options.max_batch_size {
            match tokio::time::timeout_at(deadline, queue.recv()).await {
                Ok(Some(event)) => batch.push(event),
                Ok(None) | Err(_) => break,
            }
        }
        send_with_retries(&options, &client, batch).await;
    }
}

async fn send_with_retries(options: &WebhookOptions, client: &ServiceClient, batch: Vec<Value>) {
    let count = batch.len();
    let list = json!({"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": {}, "items": batch});
    let body = rkube_apis::go_json::to_vec(&list);
    let mut backoff = options.initial_backoff;
    for attempt in 1..=5 {
        match post(&options.receiver, client, body.clone()).await {
            Ok(()) => return,
            Err(e) if attempt < 5 => {
                tracing::warn!(error = e, events = count, attempt, "audit webhook: retrying");
                tokio::time::sleep(backoff).await;
                backoff = backoff.mul_f64(1.5);
            }
            Err(e) => tracing::error!(error = e, events = count, "audit webhook: events dropped"),
        }
    }
}

/// One POST of an EventList.
async fn post(receiver: &Receiver, client: &ServiceClient, body: Vec<u8>) -> Result<(), String> {
    let mut request = http::Request::post(&receiver.url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "kube-apiserver");
    if let Some(token) = &receiver.bearer_token {
        request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request.body(axum::body::Body::from(body)).map_err(|e| e.to_string())?;
    let send = async {
        let response = client.forward(&receiver.client, request).await.map_err(|e| e.0)?;
        let status = response.status();
        // The answer is read (bounded) so the connection can be reused.
        let _ = http_body_util::BodyExt::collect(http_body_util::Limited::new(
            response.into_body(),
            64 * 1024,
        ))
        .await;
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("the audit webhook answered {status}"))
        }
    };
    match tokio::time::timeout(Duration::from_secs(30), send).await {
        Ok(result) => result,
        Err(_) => Err(format!("Post {:?}: context deadline exceeded", receiver.url)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_context_names_the_receiver() {
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
        let r = Receiver::from_kubeconfig_value(&config, dir.path()).unwrap();
        assert_eq!(r.url, "https://127.0.0.1:9443/audit");
        assert_eq!(r.client.ca_bundle, b"CA PEM");
        assert_eq!(r.bearer_token.as_deref(), Some("s3cret"));
        let mut plain = config.clone();
        plain["clusters"][0]["cluster"]["server"] = json!("http://127.0.0.1:9443/");
        let err = Receiver::from_kubeconfig_value(&plain, dir.path()).unwrap_err();
        assert!(err.contains("must be an https:// URL"), "{err}");
        let mut half = config.clone();
        half["users"][0]["user"] = json!({"client-certificate-data": "Q0VSVA=="});
        let err = Receiver::from_kubeconfig_value(&half, dir.path()).unwrap_err();
        assert_eq!(err, "the user needs both a client certificate and its key");
    }
}
