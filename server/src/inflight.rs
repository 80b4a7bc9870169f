//! The classic max-in-flight limiter of kube-apiserver (`--max-requests-inflight`,
//! `--max-mutating-requests-inflight`): at most so many read-only (get, list) and so many
//! mutating requests in progress at once; beyond that a request is answered at once with 429,
//! `Retry-After: 1` and upstream's text, which clients (client-go, kube-rs) retry after the
//! delay. Long-running requests (watches, exec, attach, logs, port-forward, proxy) are not
//! counted, and members of `system:masters` are never refused, as upstream. A limit of 0
//! disables that half.
//!
//! It runs after authentication (it needs the user's groups) and before the handlers.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode};
use tokio::sync::Semaphore;

use crate::auth::UserInfo;
use crate::request::{self, Target};

/// Upstream's verbs that do not change anything; every other verb counts as mutating.
const READ_ONLY_VERBS: [&str; 3] = ["get", "list", "watch"];

/// Subresources whose requests stream for as long as the client wants.
const LONG_RUNNING_SUBRESOURCES: [&str; 5] = ["attach", "exec", "proxy", "log", "portforward"];

/// The two limits; `None` is unlimited.
pub struct InflightLimits {
    read_only: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
}

impl InflightLimits {
    /// kube-apiserver's `--max-requests-inflight` and `--max-mutating-requests-inflight`
    /// (0: no limit).
    pub fn new(max_requests_inflight: usize, max_mutating_requests_inflight: usize) -> Self {
        let limit = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        InflightLimits {
            read_only: limit(max_requests_inflight),
            mutating: limit(max_mutating_requests_inflight),
        }
    }

    /// The semaphore a request counts against: none for long-running requests.
    fn for_request(&self, request: &Request) -> Option<&Arc<Semaphore>> {
        let query = request::parse_query(request.uri().query());
        let verb = match request::parse(request.method(), request.uri().path(), &query) {
            Some(Target::Resource(r)) => {
                let subresource = r.subresource.as_deref().unwrap_or("");
                if r.verb == "watch" || LONG_RUNNING_SUBRESOURCES.contains(&subresource) {
                    return None;
                }
                r.verb.to_string()
            }
            // Non-resource paths count by their method, as upstream's request info names them.
            _ => request.method().as_str().to_ascii_lowercase(),
        };
        if READ_ONLY_VERBS.contains(&verb.as_str()) {
            self.read_only.as_ref()
        } else {
            self.mutating.as_ref()
        }
    }
}

/// The axum middleware.
pub async fn limit(
    State(limits): State<Arc<InflightLimits>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(semaphore) = limits.for_request(&request) else {
        return next.run(request).await;
    };
    match semaphore.clone().try_acquire_owned() {
        Ok(permit) => {
            let response = next.run(request).await;
            drop(permit);
            response
        }
        Err(_) if masters(&request) => next.run(request).await,
        Err(_) => too_many_requests(),
    }
}

/// Whether the caller is a cluster administrator, whom upstream always answers.
fn masters(request: &Request) -> bool {
    request.extensions().get::<UserInfo>().is_some_and(|u| u.in_group("system:masters"))
}

/// Upstream's answer (Go's `http.Error`: plain text with a newline, and `nosniff`).
fn too_many_requests() -> Response {
    let mut response =
        (StatusCode::TOO_MANY_REQUESTS, "Too many requests, please try again later.\n")
            .into_response();
    let headers = response.headers_mut();
    headers.insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    headers
        .insert(http::header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert(http::header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, uri: &str) -> Request {
        http::Request::builder().method(method).uri(uri).body(axum::body::Body::empty()).unwrap()
    }

    #[test]
    fn requests_count_by_verb_and_long_running_ones_not_at_all() {
        let limits = InflightLimits::new(2, 1);
        let read_only = limits.read_only.as_ref().unwrap();
        let mutating = limits.mutating.as_ref().unwrap();
        let is = |r: Request, want: Option<&Arc<Semaphore>>| {
            let got = limits.for_request(&r);
            assert_eq!(got.map(Arc::as_ptr), want.map(Arc::as_ptr), "{} {}", r.method(), r.uri());
        };
        is(request("GET", "/api/v1/namespaces"), Some(read_only));
        is(request("GET", "/api/v1/namespaces/default/pods/p"), Some(read_only));
        is(request("GET", "/healthz"), Some(read_only));
        is(request("POST", "/api/v1/namespaces/default/configmaps"), Some(mutating));
        is(request("PATCH", "/api/v1/namespaces/default/configmaps/c"), Some(mutating));
        is(request("DELETE", "/api/v1/namespaces/default/configmaps/c"), Some(mutating));
        is(request("GET", "/api/v1/pods?watch=true"), None);
        is(request("GET", "/api/v1/namespaces/default/pods/p/log?follow=true"), None);
        is(request("POST", "/api/v1/namespaces/default/pods/p/exec?command=ls"), None);
        is(request("POST", "/api/v1/namespaces/default/pods/p/portforward"), None);
        is(request("GET", "/api/v1/nodes/n/proxy/metrics"), None);

        let unlimited = InflightLimits::new(0, 0);
        assert!(unlimited.for_request(&request("GET", "/api/v1/pods")).is_none());
        assert!(unlimited.for_request(&request("POST", "/api/v1/pods")).is_none());
    }
}
