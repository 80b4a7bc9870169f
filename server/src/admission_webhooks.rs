//! The admission webhooks' way out: [`rkube_admission::webhook::Backend`] over the server's
//! [`ServiceClient`], its live resource table and its conversion (custom resources' conversion
//! webhooks included). A webhook's answer is read as client-go's REST client reads it: a
//! non-2xx status is an error.

use std::sync::{Arc, Weak};
use std::time::Duration;

use rkube_admission::webhook::{Backend, CallError, ClientConfig};
use rkube_apis::resources::{ResourceInfo, Resources};
use serde_json::Value;

use crate::registry::Registry;
use crate::service_client::{self, Destination, ServiceClient};

/// What the chain's webhook plugins call out through.
pub struct WebhookBackend {
    pub registry: Weak<Registry>,
    pub client: Arc<ServiceClient>,
}

#[async_trait::async_trait]
impl Backend for WebhookBackend {
    fn resources(&self) -> Arc<Resources> {
        match self.registry.upgrade() {
            Some(registry) => registry.resources(),
            None => Arc::new(Resources::builtin().clone()),
        }
    }

    async fn convert(&self, object: Value, to: &ResourceInfo) -> Result<Value, CallError> {
        match self.registry.upgrade() {
            Some(registry) => {
                registry.convert_object(object, to).await.map_err(|e| CallError(e.message))
            }
            None => Ok(rkube_apis::convert::convert(object, to)),
        }
    }

    async fn post(
        &self,
        client: &ClientConfig,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Vec<u8>, CallError> {
        let service = client
            .service
            .as_ref()
            .map(|s| (s.namespace.as_str(), s.name.as_str(), s.port, s.path.as_str()));
        let destination =
            Destination::of_client_config(client.url.as_deref(), service).map_err(CallError)?;
        let config = service_client::ClientConfig::new(destination, client.ca_bundle.clone());
        // Upstream tells the webhook how long it has, in whole seconds.
        let query = format!("timeout={}s", timeout.as_secs().max(1));
        let response = self
            .client
            .post(&config, &query, "application/json", body, timeout)
            .await
            .map_err(|e| CallError(e.0))?;
        if !response.status.is_success() {
            return Err(CallError(service_client::rest_error(response.status, &response.body)));
        }
        Ok(response.body.to_vec())
    }
}
