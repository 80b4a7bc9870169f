//! What a request asks, as an authorizer sees it (upstream's `authorizer.Attributes`): the
//! user, the verb, and either the resource (group, version, resource, subresource,
//! namespace, name) or the path. Read from an HTTP request with [`crate::request`]'s parser
//! the way kube-apiserver's RequestInfoFactory reads it, or from an access review's spec.

use std::borrow::Cow;

use http::Method;
use rkube_apis::selectors::FieldSelector;
use serde_json::Value;

use crate::auth::UserInfo;
use crate::request::{Query, Target};

/// One request's authorization attributes; empty strings where a field does not apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attributes<'a> {
    pub user: &'a UserInfo,
    /// For resources: get, list, watch, create, update, patch, delete, deletecollection
    /// (or whatever verb a review asks about); for paths: the HTTP method in lower case.
    pub verb: Cow<'a, str>,
    pub namespace: &'a str,
    pub api_group: &'a str,
    /// `*` in an access review that names no version.
    pub api_version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub name: Cow<'a, str>,
    /// True for a request for a resource, false for a path (`/healthz`, discovery, ...).
    pub resource_request: bool,
    /// The request's path (empty in an access review about a resource).
    pub path: &'a str,
}

/// The verb of a request for a path: its method in lower case, as upstream.
pub fn method_verb(method: &Method) -> Cow<'static, str> {
    match *method {
        Method::GET => "get".into(),
        Method::POST => "post".into(),
        Method::PUT => "put".into(),
        Method::PATCH => "patch".into(),
        Method::DELETE => "delete".into(),
        Method::HEAD => "head".into(),
        Method::OPTIONS => "options".into(),
        ref other => other.as_str().to_ascii_lowercase().into(),
    }
}

/// Whether `name` can be a path segment (upstream's `IsValidPathSegmentName`).
fn is_path_segment_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '%'])
}

impl<'a> Attributes<'a> {
    /// A request for a path.
    pub fn non_resource(
        user: &'a UserInfo,
        verb: impl Into<Cow<'a, str>>,
        path: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user,
            verb: verb.into(),
            namespace: "",
            api_group: "",
            api_version: "",
            resource: "",
            subresource: "",
            name: Cow::Borrowed(""),
            resource_request: false,
            path,
        }
    }

    /// A request for a resource (version `v1`; `""` where a part does not apply).
    pub fn resource(
        user: &'a UserInfo,
        verb: &'a str,
        api_group: &'a str,
        resource: &'a str,
        subresource: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user,
            verb: Cow::Borrowed(verb),
            namespace,
            api_group,
            api_version: "v1",
            resource,
            subresource,
            name: Cow::Borrowed(name),
            resource_request: true,
            path: "",
        }
    }

    /// The attributes of an HTTP request whose path `parse` read as `target` (`None`:
    /// neither `/api` nor `/apis`).
    pub fn of_request(
        user: &'a UserInfo,
        method: &Method,
        path: &'a str,
        query: &'a Query,
        target: Option<&'a Target>,
    ) -> Attributes<'a> {
        let Some(Target::Resource(r)) = target else {
            // Discovery (`/api`, `/apis/apps/v1`), paths under `/api` that name no resource,
            // and everything outside `/api` and `/apis`.
            return Attributes::non_resource(user, method_verb(method), path);
        };
        // A methods upstream does not map leaves the verb empty.
        let verb = if r.verb == "unknown" { "" } else { r.verb };
        let mut name = Cow::Borrowed(r.name.as_deref().unwrap_or(""));
        // A list or watch of one object by `metadata.name` is about that object.
        if matches!(verb, "list" | "watch") && name.is_empty() {
            if let Some(selector) = query.get("fieldSelector") {
                if let Ok(selector) = FieldSelector::parse(selector) {
                    if let Some(n) = selector.requires_exact_match("metadata.name") {
                        if is_path_segment_name(n) {
                            name = Cow::Owned(n.to_string());
                        }
                    }
                }
            }
        }
        // The namespace object is in its own namespace, for authorization.
        let namespace = match (&r.namespace, &r.name) {
            (Some(ns), _) => ns.as_str(),
            (None, Some(n)) if r.group.is_empty() && r.resource == "namespaces" => n.as_str(),
            (None, _) => "",
        };
        Attributes {
            user,
            verb: Cow::Borrowed(verb),
            namespace,
            api_group: &r.group,
            api_version: &r.version,
            resource: &r.resource,
            subresource: r.subresource.as_deref().unwrap_or(""),
            name,
            resource_request: true,
            path,
        }
    }

    /// The attributes an access review's `spec` asks about, for `user`: its
    /// `resourceAttributes`, else its `nonResourceAttributes`.
    pub fn of_review(user: &'a UserInfo, spec: &'a Value) -> Attributes<'a> {
        let field = |v: &'a Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("");
        match spec.get("resourceAttributes").filter(|v| v.is_object()) {
            Some(r) => Attributes {
                user,
                verb: Cow::Borrowed(field(r, "verb")),
                namespace: field(r, "namespace"),
                api_group: field(r, "group"),
                // No version: any version, as upstream.
                api_version: Some(field(r, "version")).filter(|v| !v.is_empty()).unwrap_or("*"),
                resource: field(r, "resource"),
                subresource: field(r, "subresource"),
                name: Cow::Borrowed(field(r, "name")),
                resource_request: true,
                path: "",
            },
            None => {
                let n = spec.get("nonResourceAttributes").unwrap_or(&Value::Null);
                Attributes::non_resource(user, field(n, "verb"), field(n, "path"))
            }
        }
    }

    /// get, list and watch.
    pub fn is_read_only(&self) -> bool {
        matches!(&*self.verb, "get" | "list" | "watch")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request;

    /// (verb, namespace, group, resource, subresource, name, resource request) of a request.
    fn read(method: Method, uri: &str) -> (String, String, String, String, String, String, bool) {
        let user = UserInfo::authenticated("jane".into(), vec![]);
        let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
        let query = request::parse_query(Some(query));
        let target = request::parse(&method, path, &query);
        let a = Attributes::of_request(&user, &method, path, &query, target.as_ref());
        assert_eq!(a.path, path);
        (
            a.verb.into_owned(),
            a.namespace.to_string(),
            a.api_group.to_string(),
            a.resource.to_string(),
            a.subresource.to_string(),
            a.name.into_owned(),
            a.resource_request,
        )
    }

    fn verb(method: Method, uri: &str) -> String {
        read(method, uri).0
    }

    #[test]
    fn resource_verbs_come_from_the_method_name_and_watch() {
        let pods = "/api/v1/namespaces/default/pods";
        assert_eq!(verb(Method::GET, pods), "list");
        assert_eq!(verb(Method::HEAD, pods), "list");
        assert_eq!(verb(Method::GET, &format!("{pods}?watch=true")), "watch");
        assert_eq!(verb(Method::GET, &format!("{pods}?watch=1")), "watch");
        assert_eq!(verb(Method::GET, &format!("{pods}?watch=false")), "list");
        assert_eq!(verb(Method::GET, "/api/v1/watch/namespaces/default/pods"), "watch");
        assert_eq!(verb(Method::GET, &format!("{pods}/web")), "get");
        assert_eq!(verb(Method::POST, pods), "create");
        assert_eq!(verb(Method::PUT, &format!("{pods}/web")), "update");
        assert_eq!(verb(Method::PATCH, &format!("{pods}/web")), "patch");
        assert_eq!(verb(Method::DELETE, &format!("{pods}/web")), "delete");
        assert_eq!(verb(Method::DELETE, pods), "deletecollection");
        assert_eq!(verb(Method::OPTIONS, pods), "");
    }

    #[test]
    fn paths_use_the_method_in_lower_case() {
        for (method, path, want) in [
            (Method::GET, "/healthz", "get"),
            (Method::POST, "/healthz", "post"),
            (Method::GET, "/api", "get"),
            (Method::GET, "/apis", "get"),
            (Method::GET, "/apis/apps", "get"),
            (Method::GET, "/apis/apps/v1", "get"),
            (Method::PUT, "/api/v1", "put"),
            (Method::DELETE, "/version", "delete"),
            (Method::HEAD, "/readyz", "head"),
            (Method::OPTIONS, "/openapi/v2", "options"),
        ] {
            let (verb, ns, group, resource, _, _, resource_request) = read(method, path);
            assert_eq!((verb.as_str(), resource_request), (want, false), "{path}");
            assert_eq!((ns.as_str(), group.as_str(), resource.as_str()), ("", "", ""), "{path}");
        }
    }

    #[test]
    fn resource_attributes_as_upstream_reads_them() {
        assert_eq!(
            read(Method::GET, "/apis/apps/v1/namespaces/ns/deployments/d/scale"),
            (
                "get".into(),
                "ns".into(),
                "apps".into(),
                "deployments".into(),
                "scale".into(),
                "d".into(),
                true
            )
        );
        assert_eq!(
            read(Method::GET, "/api/v1/nodes"),
            ("list".into(), "".into(), "".into(), "nodes".into(), "".into(), "".into(), true)
        );
        // The namespace object is in its own namespace; the list of them in none.
        assert_eq!(
            read(Method::GET, "/api/v1/namespaces/kube-system"),
            (
                "get".into(),
                "kube-system".into(),
                "".into(),
                "namespaces".into(),
                "".into(),
                "kube-system".into(),
                true
            )
        );
        assert_eq!(read(Method::GET, "/api/v1/namespaces").1, "");
        assert_eq!(read(Method::PUT, "/api/v1/namespaces/ns/finalize").4, "finalize");
        // A list or watch pinned to one name by the field selector is about that object.
        assert_eq!(
            read(
                Method::GET,
                "/api/v1/namespaces/ns/pods?watch=true&fieldSelector=metadata.name%3Dweb"
            )
            .5,
            "web"
        );
        assert_eq!(
            read(Method::GET, "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3D..").5,
            ""
        );
        assert_eq!(
            read(Method::GET, "/api/v1/namespaces/ns/pods?fieldSelector=spec.nodeName%3Dn").5,
            ""
        );
    }

    #[test]
    fn reviews_ask_about_their_spec() {
        let user = UserInfo::authenticated("jane".into(), vec![]);
        let spec = serde_json::json!({"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "a"}});
        let a = Attributes::of_review(&user, &spec);
        assert_eq!((&*a.verb, a.resource, a.namespace, a.api_version), ("list", "pods", "a", "*"));
        assert!(a.resource_request && a.is_read_only());
        let spec =
            serde_json::json!({"nonResourceAttributes": {"verb": "get", "path": "/healthz"}});
        let a = Attributes::of_review(&user, &spec);
        assert_eq!((&*a.verb, a.path, a.resource_request), ("get", "/healthz", false));
    }
}
