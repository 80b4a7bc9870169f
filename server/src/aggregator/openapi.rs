//! The extension servers' OpenAPI documents, as kube-aggregator's OpenAPI controllers fetch
//! them: each available APIService's `/openapi/v2` (Swagger 2.0) and, from its
//! `/openapi/v3` index, the document of `apis/<group>/<version>`. They are fetched through
//! the same connection settings as proxied requests (front-proxy client certificate), as
//! upstream's user `system:aggregator` in `system:masters`, when the APIService becomes
//! available and again every [`REFRESH`] while it stays so (a fetch that gets nothing keeps
//! the documents fetched before, and is tried again at the next check); an unavailable one
//! keeps what was fetched last, and a deleted one's go with it. [`crate::openapi`] merges them with the
//! server's own documents.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Limited};
use rkube_apis::openapi::GroupVersionDoc;
use serde_json::Value;

use super::Aggregator;
use crate::service_client::ClientConfig;

/// How often the documents of an available extension are fetched again (upstream's v2
/// aggregation controller: every minute).
pub const REFRESH: Duration = Duration::from_secs(60);

/// How long one document's GET may take.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The largest document read.
const MAX_BYTES: usize = 32 << 20;

/// Upstream's user for these GETs (`aggregatorUser`).
const USER: &str = "system:aggregator";

/// One extension's documents.
pub struct ExtensionDocs {
    /// Its `/openapi/v2`, when it serves one.
    pub v2: Option<Value>,
    /// Its v3 document of the APIService's group/version, when its index lists one.
    pub v3: Option<GroupVersionDoc>,
    /// When they were fetched.
    pub fetched: Instant,
    /// A hash of both, to see a change.
    fingerprint: String,
}

impl std::fmt::Debug for ExtensionDocs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionDocs")
            .field("v2", &self.v2.is_some())
            .field("v3", &self.v3.as_ref().map(|d| (&d.path, &d.hash)))
            .finish()
    }
}

impl ExtensionDocs {
    /// Whether the fetch got nothing.
    pub fn is_empty(&self) -> bool {
        self.v2.is_none() && self.v3.is_none()
    }

    /// Whether two fetches got the same documents.
    pub fn same(&self, other: &ExtensionDocs) -> bool {
        self.fingerprint == other.fingerprint
    }
}

/// Fetches the documents of `group`/`version` from the extension `client` reaches (empty
/// when it serves neither, or cannot be reached).
pub async fn fetch(
    aggregator: &Aggregator,
    client: &ClientConfig,
    group: &str,
    version: &str,
) -> Arc<ExtensionDocs> {
    let v2 = get(aggregator, client, "/openapi/v2").await;
    let path = format!("apis/{group}/{version}");
    let v3 = match get_json(aggregator, client, "/openapi/v3").await {
        Some(index) => {
            let url = index["paths"][&path]["serverRelativeURL"]
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| format!("/openapi/v3/{path}"));
            match get(aggregator, client, &url).await {
                Some(body) if serde_json::from_slice::<Value>(&body).is_ok() => {
                    Some(GroupVersionDoc::new(path, body))
                }
                _ => None,
            }
        }
        None => None,
    };
    let v2_hash = v2.as_ref().map(|b| GroupVersionDoc::new(String::new(), b.clone()).hash);
    let v2 = v2
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .filter(|d| d["swagger"].is_string());
    let fingerprint = format!(
        "{}/{}",
        v2.as_ref().and(v2_hash).unwrap_or_default(),
        v3.as_ref().map(|d| d.hash.as_str()).unwrap_or("")
    );
    Arc::new(ExtensionDocs { v2, v3, fetched: Instant::now(), fingerprint })
}

async fn get_json(aggregator: &Aggregator, client: &ClientConfig, path: &str) -> Option<Value> {
    serde_json::from_slice(&get(aggregator, client, path).await?).ok()
}

/// One GET as the aggregator's user: the body of a 200 answer.
async fn get(aggregator: &Aggregator, client: &ClientConfig, path: &str) -> Option<Vec<u8>> {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::USER_AGENT, "kube-apiserver")
        .header("x-remote-user", USER)
        .header("x-remote-group", "system:masters")
        .body(axum::body::Body::empty())
        .ok()?;
    let exchange = async {
        let answer = aggregator.client.forward(client, request).await.ok()?;
        if answer.status() != http::StatusCode::OK {
            tracing::debug!(path, status = %answer.status(), "an extension server's OpenAPI document is not served");
            return None;
        }
        let body = Limited::new(answer.into_body(), MAX_BYTES).collect().await.ok()?;
        Some(body.to_bytes().to_vec())
    };
    tokio::time::timeout(TIMEOUT, exchange).await.ok().flatten()
}
