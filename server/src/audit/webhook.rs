//! The webhook backend (`--audit-webhook-config-file` and the other `--audit-webhook-*`
//! flags), as kube-apiserver's in its default `batch` mode: events are buffered
//! (`--audit-webhook-batch-buffer-size`, dropped with a warning when full, so a slow or dead
//! receiver never holds requests up) and POSTed as an `audit.k8s.io/v1` `EventList` to the
//! kubeconfig's server once `--audit-webhook-batch-max-size` events are waiting or
//! `--audit-webhook-batch-max-wait` has passed since the first. A failed POST (no answer or
//! not 2xx) is retried after `--audit-webhook-initial-backoff`, growing 1.5 times, up to 5
//! tries, then the batch is dropped with an error in the log.
//!
//! The kubeconfig names the receiver ([`crate::kubeconfig_webhook`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::event::Event;
use super::Sink;
use crate::kubeconfig_webhook::KubeconfigWebhook;

/// The `--audit-webhook-*` flags.
#[derive(Clone, Debug)]
pub struct WebhookOptions {
    pub receiver: KubeconfigWebhook,
    pub buffer_size: usize,
    pub max_batch_size: usize,
    pub max_wait: Duration,
    pub initial_backoff: Duration,
}

impl WebhookOptions {
    /// kube-apiserver's defaults for `receiver`.
    pub fn new(receiver: KubeconfigWebhook) -> WebhookOptions {
        WebhookOptions {
            receiver,
            buffer_size: 10_000,
            max_batch_size: 400,
            max_wait: Duration::from_secs(30),
            initial_backoff: Duration::from_secs(10),
        }
    }
}

/// The webhook backend: a bounded buffer, emptied by one sending task.
pub struct WebhookBackend {
    events: mpsc::Sender<Value>,
    dropped: AtomicU64,
}

impl WebhookBackend {
    /// Starts the sending task (on the current Tokio runtime).
    pub fn start(options: WebhookOptions) -> WebhookBackend {
        let (events, queue) = mpsc::channel(options.buffer_size.max(1));
        tokio::spawn(send_batches(options, queue));
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
async fn send_batches(options: WebhookOptions, mut queue: mpsc::Receiver<Value>) {
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
        send_with_retries(&options, batch).await;
    }
}

async fn send_with_retries(options: &WebhookOptions, batch: Vec<Value>) {
    let count = batch.len();
    let list = json!({"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": {}, "items": batch});
    let body = rkube_apis::go_json::to_vec(&list);
    let mut backoff = options.initial_backoff;
    for attempt in 1..=5 {
        match post(&options.receiver, body.clone()).await {
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

/// One POST of an EventList: any 2xx answer takes it.
async fn post(receiver: &KubeconfigWebhook, body: Vec<u8>) -> Result<(), String> {
    let (status, _) = receiver.post_json(body, Duration::from_secs(30)).await?;
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("the audit webhook answered {status}"))
    }
}
