//! Conversion of custom resources through their definition's webhook
//! (`spec.conversion.strategy: Webhook`), as apiextensions-apiserver's webhook converter:
//! the objects not yet in the wanted version go in one `ConversionReview` (a whole list page
//! in one), over the server's one [`ServiceClient`], with upstream's 30 s timeout; the answer
//! is checked (review kind, uid, result, count, each object's apiVersion, kind and identity)
//! and each object keeps its metadata but for the labels and annotations the webhook set.
//! Converted objects are then pruned and defaulted by the wanted version's schema, as every
//! read of a custom resource is.
//!
//! The protocol (review, answer, checks) is pure and lives in
//! `rkube_apis::kinds::custom::conversion`; the registry decides when to convert.

use std::sync::Arc;
use std::time::Duration;

use rkube_apis::kinds::custom::conversion::{check_converted, WebhookConversion, TIMEOUT_SECONDS};
use rkube_apis::resources::ResourceInfo;
use serde_json::Value;

use crate::service_client::{self, ClientConfig, Destination, ServiceClient};

/// Why a conversion failed: upstream's text (`conversion webhook for <gvk> failed: ...`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConversionError(pub String);

/// Calls definitions' conversion webhooks.
pub struct Converter {
    client: Arc<ServiceClient>,
}

impl Converter {
    /// A converter calling out through the server's client.
    pub fn new(client: Arc<ServiceClient>) -> Converter {
        Converter { client }
    }

    /// `objects` (of `to`'s resource, each in any version) in `to`'s version.
    pub async fn convert(
        &self,
        webhook: &WebhookConversion,
        mut objects: Vec<Value>,
        to: &ResourceInfo,
    ) -> Result<Vec<Value>, ConversionError> {
        let desired = to.api_version();
        let pending: Vec<usize> = (0..objects.len())
            .filter(|&i| objects[i].is_object() && objects[i]["apiVersion"] != desired.as_str())
            .collect();
        if let Some(&first) = pending.first() {
            // Upstream names the kind the objects are converted from.
            let from = format!(
                "{}, Kind={}",
                objects[first]["apiVersion"].as_str().unwrap_or(""),
                objects[first]["kind"].as_str().unwrap_or(to.kind)
            );
            let sent: Vec<Value> = pending.iter().map(|&i| objects[i].clone()).collect();
            let converted = self.call(webhook, &desired, &sent).await.map_err(|why| {
                ConversionError(format!("conversion webhook for {from} failed: {why}"))
            })?;
            if converted.len() != sent.len() {
                return Err(ConversionError(format!(
                    "conversion webhook for {from} returned {} objects, expected {}",
                    converted.len(),
                    sent.len()
                )));
            }
            for (index, (&at, object)) in pending.iter().zip(converted).enumerate() {
                let checked =
                    check_converted(&objects[at], object, &desired, index).map_err(|why| {
                        ConversionError(format!("conversion webhook for {from} {why}"))
                    })?;
                objects[at] = checked;
            }
        }
        // The wanted version's schema prunes and defaults, as on every read.
        Ok(objects.into_iter().map(|o| rkube_apis::convert::convert(o, to)).collect())
    }

    /// One review: the converted objects, or why there are none.
    async fn call(
        &self,
        webhook: &WebhookConversion,
        desired: &str,
        objects: &[Value],
    ) -> Result<Vec<Value>, String> {
        let uid = uuid::Uuid::new_v4().to_string();
        let review = webhook.review(&uid, desired, objects)?;
        let service = webhook
            .service
            .as_ref()
            .map(|s| (s.namespace.as_str(), s.name.as_str(), s.port, s.path.as_str()));
        let destination = Destination::of_client_config(webhook.url.as_deref(), service)?;
        let config = ClientConfig::new(destination, webhook.ca_bundle.clone());
        let body = serde_json::to_vec(&review.body).map_err(|e| e.to_string())?;
        let response = self
            .client
            .post(
                &config,
                &format!("timeout={TIMEOUT_SECONDS}s"),
                "application/json",
                body,
                Duration::from_secs(TIMEOUT_SECONDS),
            )
            .await
            .map_err(|e| e.0)?;
        if !response.status.is_success() {
            return Err(service_client::rest_error(response.status, &response.body));
        }
        let answer: Value = serde_json::from_slice(&response.body)
            .map_err(|e| format!("the webhook's answer is not a ConversionReview: {e}"))?;
        WebhookConversion::converted(review.version, &uid, &answer)
    }
}
