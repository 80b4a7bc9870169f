//! Request info: what a request asks for, read from its method, path and query the way
//! kube-apiserver's RequestInfoFactory reads them.

use std::collections::HashMap;

use http::Method;

/// A request for a resource (as opposed to `/healthz`, `/version`, discovery, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceRequest {
    /// get, list, watch, create, update, patch, delete, deletecollection.
    pub verb: &'static str,
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// What a path is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/apis/<group>`
    Group(String),
    /// `/api/v1`, `/apis/<group>/<version>`
    GroupVersion {
        group: String,
        version: String,
    },
    Resource(ResourceRequest),
    /// Anything else under `/api` or `/apis` (e.g. too many segments).
    NotFound,
}

/// The query parameters, first value of each.
pub type Query = HashMap<String, String>;

/// A request's query and what its path is, read once: by the authorization layer, which
/// leaves it in the request's extensions for the handler.
#[derive(Clone, Debug)]
pub struct RequestInfo {
    pub query: Query,
    /// `None` for paths outside `/api` and `/apis`.
    pub target: Option<Target>,
}

impl RequestInfo {
    pub fn read(method: &Method, uri: &http::Uri) -> RequestInfo {
        let query = parse_query(uri.query());
        let target = parse(method, uri.path(), &query);
        RequestInfo { query, target }
    }
}

/// The path and query as the client sent them (Go's `Request.RequestURI`): an HTTP/2
/// request's URI also carries the scheme and authority, which error texts leave out.
pub fn request_uri(uri: &http::Uri) -> &str {
    uri.path_and_query().map(|p| p.as_str()).unwrap_or_else(|| uri.path())
}

pub fn parse_query(query: Option<&str>) -> Query {
    let mut out = HashMap::new();
    if let Some(q) = query {
        for (k, v) in form_urlencoded::parse(q.as_bytes()) {
            out.entry(k.into_owned()).or_insert_with(|| v.into_owned());
        }
    }
    out
}

/// True for `true`, `1` and the other spellings Go's strconv.ParseBool accepts.
pub fn query_bool(query: &Query, name: &str) -> bool {
    matches!(query.get(name).map(String::as_str), Some("true" | "1" | "t" | "T" | "TRUE" | "True"))
}

/// Reads an `/api` or `/apis` path. `None` when the path is neither.
pub fn parse(method: &Method, path: &str, query: &Query) -> Option<Target> {
    let segments: Vec<String> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let (group, version, rest) = match segments.first().map(String::as_str) {
        Some("api") => match segments.len() {
            1 => return Some(Target::CoreVersions),
            _ => (String::new(), segments[1].clone(), &segments[2..]),
        },
        Some("apis") => match segments.len() {
            1 => return Some(Target::Groups),
            2 => return Some(Target::Group(segments[1].clone())),
            _ => (segments[1].clone(), segments[2].clone(), &segments[3..]),
        },
        _ => return None,
    };
    if rest.is_empty() {
        return Some(Target::GroupVersion { group, version });
    }
    let mut parts: Vec<String> = rest.to_vec();
    // The legacy `/watch/` prefix: `/api/v1/watch/namespaces/default/pods`.
    let mut watch_path = false;
    if parts[0] == "watch" {
        watch_path = true;
        parts.remove(0);
        if parts.is_empty() {
            return Some(Target::NotFound);
        }
    }
    let mut namespace = None;
    if parts[0] == "namespaces" && parts.len() > 1 {
        namespace = Some(parts[1].clone());
        // `namespaces/<name>` and `namespaces/<name>/{status,finalize}` are the namespace
        // itself; anything else after the name is a namespaced resource.
        if parts.len() > 2 && !matches!(parts[2].as_str(), "status" | "finalize") {
            parts.drain(..2);
        }
    }
    // Only `proxy` takes a path after the subresource (`nodes/n1/proxy/healthz`).
    if parts.len() > 3 && parts[2] != "proxy" {
        return Some(Target::NotFound);
    }
    let resource = parts[0].clone();
    let name = parts.get(1).cloned();
    let subresource = parts.get(2).cloned();
    // The namespace object: its namespace is itself, not a scope.
    let namespace = if resource == "namespaces" && group.is_empty() { None } else { namespace };
    let watch = watch_path || query_bool(query, "watch");
    let verb = match *method {
        Method::GET | Method::HEAD => match (&name, watch) {
            (_, true) => "watch",
            (None, false) => "list",
            (Some(_), false) => "get",
        },
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if name.is_none() => "deletecollection",
        Method::DELETE => "delete",
        _ => "unknown",
    };
    Some(Target::Resource(ResourceRequest {
        verb,
        group,
        version,
        namespace,
        resource,
        name,
        subresource,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(method: Method, path: &str) -> ResourceRequest {
        let query = parse_query(path.split_once('?').map(|(_, q)| q));
        match parse(&method, path.split('?').next().unwrap(), &query) {
            Some(Target::Resource(r)) => r,
            other => panic!("not a resource request: {other:?}"),
        }
    }

    #[test]
    fn reads_paths_like_kube_apiserver() {
        let r = resource(Method::GET, "/api/v1/namespaces/default/pods/web");
        assert_eq!(
            (r.verb, r.namespace.as_deref(), r.resource.as_str(), r.name.as_deref()),
            ("get", Some("default"), "pods", Some("web"))
        );
        let r = resource(Method::GET, "/api/v1/pods");
        assert_eq!((r.verb, r.namespace, r.name), ("list", None, None));
        let r = resource(Method::GET, "/apis/apps/v1/namespaces/ns/deployments?watch=true");
        assert_eq!(
            (r.verb, r.group.as_str(), r.resource.as_str()),
            ("watch", "apps", "deployments")
        );
        let r = resource(Method::GET, "/api/v1/watch/namespaces/ns/pods/web");
        assert_eq!((r.verb, r.name.as_deref()), ("watch", Some("web")));
        let r = resource(Method::PUT, "/api/v1/namespaces/ns/pods/web/status");
        assert_eq!((r.verb, r.subresource.as_deref()), ("update", Some("status")));
        let r = resource(Method::DELETE, "/api/v1/namespaces/ns/configmaps");
        assert_eq!(r.verb, "deletecollection");
        let r = resource(Method::POST, "/api/v1/nodes/n1/proxy/a/b");
        assert_eq!(
            (r.verb, r.name.as_deref(), r.subresource.as_deref()),
            ("create", Some("n1"), Some("proxy"))
        );
        let q = Query::new();
        assert_eq!(
            parse(&Method::GET, "/api/v1/namespaces/ns/pods/web/log/extra", &q),
            Some(Target::NotFound)
        );
    }

    #[test]
    fn the_namespace_object_is_not_scoped_by_itself() {
        let r = resource(Method::GET, "/api/v1/namespaces/kube-system");
        assert_eq!(
            (r.resource.as_str(), r.name.as_deref(), r.namespace),
            ("namespaces", Some("kube-system"), None)
        );
        let r = resource(Method::PUT, "/api/v1/namespaces/kube-system/finalize");
        assert_eq!(
            (r.resource.as_str(), r.subresource.as_deref()),
            ("namespaces", Some("finalize"))
        );
        let r = resource(Method::GET, "/api/v1/namespaces");
        assert_eq!((r.verb, r.resource.as_str()), ("list", "namespaces"));
    }

    #[test]
    fn discovery_paths() {
        let q = Query::new();
        assert_eq!(parse(&Method::GET, "/api", &q), Some(Target::CoreVersions));
        assert_eq!(parse(&Method::GET, "/apis", &q), Some(Target::Groups));
        assert_eq!(parse(&Method::GET, "/apis/apps", &q), Some(Target::Group("apps".into())));
        assert_eq!(
            parse(&Method::GET, "/api/v1", &q),
            Some(Target::GroupVersion { group: "".into(), version: "v1".into() })
        );
        assert_eq!(parse(&Method::GET, "/healthz", &q), None);
    }
}
