//! The extension servers' OpenAPI documents, as kube-aggregator's OpenAPI controllers fetch
//! them: each available APIService's `/openapi/v2` (Swagger 2.0) and every document its
//! `/openapi/v3` index lists (its APIService's `apis/<group>/<version>`, and also the other
//! group/versions the same server serves, as upstream's v3 aggregator lists every path of
//! each extension's index). They are fetched through the same connection settings as
//! proxied requests (front-proxy client certificate), as upstream's user `system:aggregator`
//! in `system:masters`, when the APIService becomes available and again every [`REFRESH`]
//! while it stays so (a fetch that gets nothing keeps the documents fetched before, and is
//! tried again at the next check); an unavailable one keeps what was fetched last, and a
//! deleted one's go with it. [`crate::openapi`] merges them with the server's own documents.

use std::collections::BTreeMap;
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

/// The largest document read, and the most read of one extension's v3 documents together.
const MAX_BYTES: usize = 32 << 20;

/// The most v3 documents fetched of one extension's index.
const MAX_V3_DOCUMENTS: usize = 128;

/// Upstream's user for these GETs (`aggregatorUser`).
const USER: &str = "system:aggregator";

/// One extension's documents.
pub struct ExtensionDocs {
    /// Its `/openapi/v2`, when it serves one.
    pub v2: Option<Value>,
    /// The v3 documents its `/openapi/v3` index lists, by path (`apis/<group>/<version>`).
    pub v3: BTreeMap<String, GroupVersionDoc>,
    /// When they were fetched.
    pub fetched: Instant,
    /// A hash of both, to see a change.
    fingerprint: String,
}

impl std::fmt::Debug for ExtensionDocs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionDocs")
            .field("v2", &self.v2.is_some())
            .field("v3", &self.v3.values().map(|d| (&d.path, &d.hash)).collect::<Vec<_>>())
            .finish()
    }
}

impl ExtensionDocs {
    /// Whether the fetch got nothing.
    pub fn is_empty(&self) -> bool {
        self.v2.is_none() && self.v3.is_empty()
    }

    /// Documents with only these v3 ones (for tests of the merge).
    #[cfg(test)]
    pub fn with_v3(v3: BTreeMap<String, GroupVersionDoc>) -> ExtensionDocs {
        ExtensionDocs { v2: None, v3, fetched: Instant::now(), fingerprint: String::new() }
    }

    /// Whether two fetches got the same documents.
    pub fn same(&self, other: &ExtensionDocs) -> bool {
        self.fingerprint == other.fingerprint
    }
}

/// Fetches the documents of the extension `client` reaches (empty when it serves none, or
/// cannot be reached).
pub async fn fetch(aggregator: &Aggregator, client: &ClientConfig) -> Arc<ExtensionDocs> {
    let v2 = get(aggregator, client, "/openapi/v2").await;
    let v3 = match get_json(aggregator, client, "/openapi/v3").await {
        Some(index) => fetch_v3(aggregator, client, &index).await,
        None => BTreeMap::new(),
    };
    let v2_hash = v2.as_ref().map(|b| GroupVersionDoc::new(String::new(), b.clone()).hash);
    let v2 = v2
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .filter(|d| d["swagger"].is_string());
    let v3_hashes: Vec<String> = v3.values().map(|d| format!("{}={}", d.path, d.hash)).collect();
    let fingerprint =
        format!("{}/{}", v2.as_ref().and(v2_hash).unwrap_or_default(), v3_hashes.join(","));
    Arc::new(ExtensionDocs { v2, v3, fetched: Instant::now(), fingerprint })
}

/// Every JSON document the v3 `index` lists (`{"paths": {<path>: {"serverRelativeURL":
/// ...}}}`), at its `serverRelativeURL` (else `/openapi/v3/<path>`); one that is not served
/// or not JSON is left out.
async fn fetch_v3(
    aggregator: &Aggregator,
    client: &ClientConfig,
    index: &Value,
) -> BTreeMap<String, GroupVersionDoc> {
    let mut docs = BTreeMap::new();
    let Some(paths) = index["paths"].as_object() else {
        return docs;
    };
    let mut total = 0;
    for (path, entry) in paths.iter().take(MAX_V3_DOCUMENTS) {
        let path = path.trim_matches('/');
        if path.is_empty() {
            continue;
        }
        let url = entry["serverRelativeURL"]
            .as_str()
            .filter(|u| u.starts_with("/openapi/v3/"))
            .map(String::from)
            .unwrap_or_else(|| format!("/openapi/v3/{path}"));
        let Some(body) = get(aggregator, client, &url).await else {
            continue;
        };
        if serde_json::from_slice::<Value>(&body).is_err() {
            continue;
        }
        total += body.len();
        if total > MAX_BYTES {
            tracing::warn!(path, "an extension server's OpenAPI v3 documents exceed {MAX_BYTES} bytes together; the rest are left out");
            break;
        }
        docs.insert(path.to_string(), GroupVersionDoc::new(path.to_string(), body));
    }
    docs
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
