//! The OpenAPI documents (`/openapi/v2`, `/openapi/v3` and one v3 document per group version)
//! of the resources served now: built from the live resource table, again after it changed
//! (a custom resource added or removed), once per change, in the background of the request
//! that first asks; then merged with the extension servers' documents
//! ([`crate::aggregator::openapi`]), again when those change, as kube-aggregator does: every
//! v3 document an extension's index lists is listed in `/openapi/v3` and served here. An
//! APIService's own group/version gets its extension's document (in place of the server's
//! own for a group/version an APIService hands elsewhere); another path an extension lists
//! (another group/version of the same server) is added unless the server has it itself or
//! an extension listed earlier (by group/version of their APIServices) had it: upstream
//! takes whichever its map yields first there, rkube keeps one fixed order. Each
//! extension's v2 paths and definitions are added to `/openapi/v2`
//! ([`crate::aggregator::swagger_merge`]: the server's own paths win a conflict, clashing
//! definitions are renamed; its paths of a group/version an extension serves give way to
//! the extension's).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rkube_apis::openapi::{Documents, GroupVersionDoc};
use serde_json::Value;

use crate::aggregator::openapi::ExtensionDocs;
use crate::aggregator::swagger_merge;
use crate::aggregator::Aggregator;
use crate::registry::Registry;
use crate::{negotiate, status};

/// The resource table's generation and the extensions' documents'.
type Generations = (u64, u64);

/// The documents of the newest resource table and extensions.
pub struct OpenApi {
    registry: Arc<Registry>,
    aggregator: Arc<Aggregator>,
    /// The server's own documents and the table generation they were built from; none until
    /// first asked (building them takes a while, and the server is ready before).
    built: tokio::sync::Mutex<Option<(u64, Arc<Documents>)>>,
    /// Those merged with the extensions', and the (table, extensions) generations.
    merged: tokio::sync::Mutex<Option<(Generations, Arc<Documents>)>>,
}

impl OpenApi {
    pub fn new(registry: Arc<Registry>, aggregator: Arc<Aggregator>) -> OpenApi {
        OpenApi {
            registry,
            aggregator,
            built: tokio::sync::Mutex::new(None),
            merged: tokio::sync::Mutex::new(None),
        }
    }

    /// The documents served now: the server's own with the extensions'.
    pub async fn current(&self) -> Arc<Documents> {
        let table = *self.registry.table_changes().borrow();
        let (generation, extensions) = self.aggregator.openapi_documents();
        let mut merged = self.merged.lock().await;
        match &*merged {
            Some((g, docs)) if *g == (table, generation) => return docs.clone(),
            _ => {}
        }
        let own = self.own(table).await;
        let docs = match extensions.is_empty() {
            true => own,
            false => Arc::new(
                tokio::task::spawn_blocking(move || merge(&own, &extensions))
                    .await
                    .expect("merging the OpenAPI documents does not panic"),
            ),
        };
        *merged = Some(((table, generation), docs.clone()));
        docs
    }

    /// The documents of the resources this server serves itself, of table `generation`.
    async fn own(&self, generation: u64) -> Arc<Documents> {
        // One build at a time: requests during a build wait for it rather than build again.
        let mut built = self.built.lock().await;
        match &*built {
            Some((g, docs)) if *g == generation => return docs.clone(),
            _ => {}
        }
        let resources = self.registry.resources();
        let docs = tokio::task::spawn_blocking(move || match generation {
            // The built-in resources' documents are built once per process (and started at
            // server start, in the background).
            0 => Documents::builtin().clone(),
            _ => Documents::build(&resources),
        })
        .await
        .expect("building the OpenAPI documents does not panic");
        let docs = Arc::new(docs);
        *built = Some((generation, docs.clone()));
        docs
    }
}

/// `own` with the extensions' documents, each with its APIService's (group, version).
fn merge(own: &Documents, extensions: &[(String, String, Arc<ExtensionDocs>)]) -> Documents {
    let mut v3: BTreeMap<String, GroupVersionDoc> = own.v3.clone();
    let mut v2: Value = serde_json::from_slice(&own.v2).expect("the v2 document is JSON");
    let remote_prefixes: Vec<String> =
        extensions.iter().map(|(g, v, _)| format!("/apis/{g}/{v}/")).collect();
    if let Some(paths) = v2["paths"].as_object_mut() {
        paths.retain(|path, _| !remote_prefixes.iter().any(|p| path.starts_with(p.as_str())));
    }
    for (_, _, docs) in extensions {
        for (path, doc) in &docs.v3 {
            v3.entry(path.clone()).or_insert_with(|| doc.clone());
        }
        if let Some(theirs) = &docs.v2 {
            swagger_merge::merge(&mut v2, theirs);
        }
    }
    // An APIService's own group/version is its extension's, whoever else lists it.
    for (group, version, docs) in extensions {
        let path = format!("apis/{group}/{version}");
        if let Some(doc) = docs.v3.get(&path) {
            v3.insert(path, doc.clone());
        }
    }
    Documents::from_parts(v3, serde_json::to_vec(&v2).expect("serializable"))
}

/// The OpenAPI routes, for a router of any state.
pub fn routes<S: Clone + Send + Sync + 'static>(docs: Arc<OpenApi>) -> Router<S> {
    Router::new()
        .route("/openapi/v2", get(v2))
        .route("/openapi/v3", get(v3_index))
        .route("/openapi/v3/{*path}", get(v3))
        .with_state(docs)
}

async fn v3_index(State(docs): State<Arc<OpenApi>>) -> Response {
    let index = docs.current().await.v3_index();
    negotiate::respond(http::StatusCode::OK, &index, negotiate::Output::Json, &[]).into_response()
}

async fn v3(State(docs): State<Arc<OpenApi>>, Path(path): Path<String>) -> Response {
    match docs.current().await.v3.get(path.trim_matches('/')) {
        Some(doc) => {
            let mut response = (http::StatusCode::OK, doc.body.clone()).into_response();
            let headers = response.headers_mut();
            headers.insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            if let Ok(etag) = http::HeaderValue::from_str(&format!("\"{}\"", doc.hash)) {
                headers.insert(http::header::ETAG, etag);
            }
            response
        }
        None => status::ApiError::path_not_found().into_response(),
    }
}

/// Swagger 2.0, as JSON or as the gnostic `openapi.v2.Document` protobuf (kubectl 1.27 and
/// 1.28 ask for the latter for `apply`): the first form the Accept header lists, by `q`
/// (`*/*` gets JSON).
async fn v2(State(docs): State<Arc<OpenApi>>, headers: http::HeaderMap) -> Response {
    use rkube_apis::openapi_v2_proto;
    let accept = headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let mut ranges: Vec<(f32, &str)> = accept
        .split(',')
        .map(|range| {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse().ok())
                .unwrap_or(1.0);
            (q, media)
        })
        .filter(|(q, media)| *q > 0.0 && !media.is_empty())
        .collect();
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0));
    let protobuf = match ranges.iter().find_map(|(_, media)| {
        if media.contains("protobuf") {
            Some(true)
        } else if media.contains("json") || *media == "*/*" || *media == "application/*" {
            Some(false)
        } else {
            None
        }
    }) {
        Some(protobuf) => protobuf,
        None if accept.trim().is_empty() => false,
        None => {
            return status::ApiError::not_acceptable(format!(
                "/openapi/v2 is served as application/json or {}",
                openapi_v2_proto::MEDIA_TYPE
            ))
            .into_response()
        }
    };
    let docs = docs.current().await;
    let (body, content_type) = if protobuf {
        (bytes::Bytes::from_owner(docs.v2_protobuf()), openapi_v2_proto::MEDIA_TYPE)
    } else {
        (bytes::Bytes::from_owner(V2Json(docs)), "application/json")
    };
    let mut response = (http::StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    headers.insert(http::header::VARY, http::HeaderValue::from_static("Accept"));
    response
}

/// The JSON v2 document of a set of documents, sent without a copy.
struct V2Json(Arc<Documents>);

impl AsRef<[u8]> for V2Json {
    fn as_ref(&self) -> &[u8] {
        &self.0.v2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &str, body: &str) -> GroupVersionDoc {
        GroupVersionDoc::new(path.to_string(), body.as_bytes().to_vec())
    }

    fn extension(docs: &[(&str, &str)]) -> Arc<ExtensionDocs> {
        Arc::new(ExtensionDocs::with_v3(
            docs.iter().map(|(p, b)| (p.to_string(), doc(p, b))).collect(),
        ))
    }

    #[test]
    fn every_path_an_extension_lists_is_merged_its_apiservice_s_own_first() {
        let own = Documents::from_parts(
            [("api/v1", "own core"), ("apis/m.io/v1", "own m")]
                .iter()
                .map(|(p, b)| (p.to_string(), doc(p, b)))
                .collect(),
            br#"{"swagger":"2.0","paths":{},"definitions":{}}"#.to_vec(),
        );
        let a = extension(&[
            ("apis/a.io/v1", "a's a/v1"),
            ("apis/a.io/v2", "a's a/v2"),
            ("apis/b.io/v1", "a's b/v1"),
            ("api/v1", "a's core"),
        ]);
        let b = extension(&[("apis/b.io/v1", "b's b/v1"), ("apis/m.io/v1", "b's m")]);
        let merged = merge(
            &own,
            &[
                ("a.io".into(), "v1".into(), a),
                ("b.io".into(), "v1".into(), b.clone()),
                ("m.io".into(), "v1".into(), b),
            ],
        );
        let body = |p: &str| String::from_utf8(merged.v3[p].body.clone()).unwrap();
        assert_eq!(body("apis/a.io/v1"), "a's a/v1");
        // Another group/version of the same extension is listed and served too.
        assert_eq!(body("apis/a.io/v2"), "a's a/v2");
        // An APIService's own group/version is its extension's.
        assert_eq!(body("apis/b.io/v1"), "b's b/v1");
        assert_eq!(body("apis/m.io/v1"), "b's m");
        // The server's own path stays its own.
        assert_eq!(body("api/v1"), "own core");
        let index = merged.v3_index();
        assert_eq!(index["paths"].as_object().unwrap().len(), 5, "{index}");
    }
}
