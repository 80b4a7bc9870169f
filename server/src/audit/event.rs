//! One audit event (`audit.k8s.io/v1` `Event`): what is known of a request when it arrives,
//! completed as it is served, and written as a JSON line in upstream's field order or as
//! upstream's legacy text line.

use std::collections::BTreeMap;
use std::net::IpAddr;

use chrono::{DateTime, Timelike, Utc};
use http::HeaderMap;
use serde_json::{json, Map, Value};

use super::policy::{Level, Stage};
use crate::auth::UserInfo;
use crate::authz::Attributes;

/// Upstream's bound on a recorded `User-Agent`.
const MAX_USER_AGENT: usize = 1024;

/// The objectRef of a resource request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectRef {
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub api_group: String,
    pub api_version: String,
    pub resource_version: String,
    pub subresource: String,
}

/// The answer as an event records it (a `metav1.Status`: the code, and for answers that are
/// a Status, its status, message, reason and details).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResponseStatus {
    pub code: u16,
    pub status: String,
    pub message: String,
    pub reason: String,
    pub details: Option<Value>,
}

/// An event being filled in.
#[derive(Clone, Debug)]
pub struct Event {
    pub level: Level,
    pub audit_id: String,
    pub stage: Stage,
    pub request_uri: String,
    pub verb: String,
    /// `None`: authentication failed (the event's `user` is empty).
    pub user: Option<UserInfo>,
    pub impersonated_user: Option<UserInfo>,
    pub source_ips: Vec<String>,
    pub user_agent: String,
    pub object_ref: Option<ObjectRef>,
    pub response_status: Option<ResponseStatus>,
    pub request_object: Option<Value>,
    pub response_object: Option<Value>,
    pub request_received: DateTime<Utc>,
    pub stage_timestamp: DateTime<Utc>,
    pub annotations: BTreeMap<String, String>,
}

impl Event {
    /// The event of a request as it arrives: who, what, from where.
    pub fn new<B>(
        level: Level,
        audit_id: String,
        request: &http::Request<B>,
        attributes: &Attributes<'_>,
        authenticated: bool,
        peer: Option<IpAddr>,
    ) -> Event {
        let now = Utc::now();
        let object_ref = attributes.resource_request.then(|| ObjectRef {
            resource: attributes.resource.to_string(),
            namespace: attributes.namespace.to_string(),
            name: attributes.name.to_string(),
            api_group: attributes.api_group.to_string(),
            api_version: attributes.api_version.to_string(),
            subresource: attributes.subresource.to_string(),
            ..ObjectRef::default()
        });
        let mut user_agent = header(request.headers(), http::header::USER_AGENT);
        if user_agent.len() > MAX_USER_AGENT {
            let mut end = MAX_USER_AGENT;
            while !user_agent.is_char_boundary(end) {
                end -= 1;
            }
            user_agent.truncate(end);
            user_agent.push_str("...TRUNCATED");
        }
        Event {
            level,
            audit_id,
            stage: Stage::RequestReceived,
            request_uri: crate::request::request_uri(request.uri()).to_string(),
            verb: attributes.verb.to_string(),
            user: authenticated.then(|| attributes.user.clone()),
            impersonated_user: None,
            source_ips: source_ips(request.headers(), peer),
            user_agent,
            object_ref,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received: now,
            stage_timestamp: now,
            annotations: BTreeMap::new(),
        }
    }

    /// The event as `audit.k8s.io/v1` JSON, fields in the Go struct's order.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("kind".into(), json!("Event"));
        out.insert("apiVersion".into(), json!("audit.k8s.io/v1"));
        out.insert("level".into(), json!(self.level.as_str()));
        out.insert("auditID".into(), json!(self.audit_id));
        out.insert("stage".into(), json!(self.stage.as_str()));
        out.insert("requestURI".into(), json!(self.request_uri));
        out.insert("verb".into(), json!(self.verb));
        out.insert("user".into(), self.user.as_ref().map(user_json).unwrap_or_else(|| json!({})));
        if let Some(user) = &self.impersonated_user {
            out.insert("impersonatedUser".into(), user_json(user));
        }
        if !self.source_ips.is_empty() {
            out.insert("sourceIPs".into(), json!(self.source_ips));
        }
        if !self.user_agent.is_empty() {
            out.insert("userAgent".into(), json!(self.user_agent));
        }
        if let Some(r) = &self.object_ref {
            let mut o = Map::new();
            for (key, value) in [
                ("resource", &r.resource),
                ("namespace", &r.namespace),
                ("name", &r.name),
                ("uid", &r.uid),
                ("apiGroup", &r.api_group),
                ("apiVersion", &r.api_version),
                ("resourceVersion", &r.resource_version),
                ("subresource", &r.subresource),
            ] {
                if !value.is_empty() {
                    o.insert(key.into(), json!(value));
                }
            }
            out.insert("objectRef".into(), Value::Object(o));
        }
        if let Some(s) = &self.response_status {
            let mut o = Map::new();
            o.insert("metadata".into(), json!({}));
            for (key, value) in
                [("status", &s.status), ("message", &s.message), ("reason", &s.reason)]
            {
                if !value.is_empty() {
                    o.insert(key.into(), json!(value));
                }
            }
            if let Some(details) = &s.details {
                o.insert("details".into(), details.clone());
            }
            if s.code != 0 {
                o.insert("code".into(), json!(s.code));
            }
            out.insert("responseStatus".into(), Value::Object(o));
        }
        if let Some(object) = &self.request_object {
            out.insert("requestObject".into(), object.clone());
        }
        if let Some(object) = &self.response_object {
            out.insert("responseObject".into(), object.clone());
        }
        out.insert("requestReceivedTimestamp".into(), json!(micro_time(self.request_received)));
        out.insert("stageTimestamp".into(), json!(micro_time(self.stage_timestamp)));
        if !self.annotations.is_empty() {
            out.insert("annotations".into(), json!(self.annotations));
        }
        Value::Object(out)
    }

    /// Upstream's legacy text line (`--audit-log-format=legacy`).
    pub fn legacy_line(&self) -> String {
        let q = |s: &str| rkube_apis::go_quote(s);
        let quoted_list = |l: &[String]| l.iter().map(|s| q(s)).collect::<Vec<_>>().join(",");
        let (user, groups) = match &self.user {
            Some(u) if !u.name.is_empty() => (
                u.name.clone(),
                if u.groups.is_empty() { "<none>".into() } else { quoted_list(&u.groups) },
            ),
            _ => ("<none>".into(), "<none>".into()),
        };
        let (as_user, as_groups) = match &self.impersonated_user {
            Some(u) => (u.name.clone(), quoted_list(&u.groups)),
            None => ("<self>".into(), "<lookup>".into()),
        };
        let namespace = self
            .object_ref
            .as_ref()
            .map(|r| r.namespace.as_str())
            .filter(|n| !n.is_empty())
            .unwrap_or("<none>");
        let response = self
            .response_status
            .as_ref()
            .map(|s| s.code.to_string())
            .unwrap_or_else(|| "<deferred>".into());
        let ip = self.source_ips.first().map(String::as_str).unwrap_or("<unknown>");
        format!(
            "{} AUDIT: id={} stage={} ip={} method={} user={} groups={} as={} asgroups={} \
             user-agent={} namespace={} uri={} response=\"{response}\"",
            rfc3339_nano(self.request_received),
            q(&self.audit_id),
            q(self.stage.as_str()),
            q(ip),
            q(&self.verb),
            q(&user),
            q(&groups),
            q(&as_user),
            q(&as_groups),
            q(&self.user_agent),
            q(namespace),
            q(&self.request_uri),
        )
    }
}

/// An `authentication.k8s.io/v1` UserInfo, empty fields left out.
fn user_json(user: &UserInfo) -> Value {
    let mut o = Map::new();
    if !user.name.is_empty() {
        o.insert("username".into(), json!(user.name));
    }
    if !user.uid.is_empty() {
        o.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        o.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        o.insert("extra".into(), json!(user.extra));
    }
    Value::Object(o)
}

/// `metav1.MicroTime`: UTC, six fractional digits.
pub fn micro_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// Go's `time.RFC3339Nano`: the fraction without its trailing zeros.
fn rfc3339_nano(t: DateTime<Utc>) -> String {
    let fraction = format!("{:09}", t.nanosecond() % 1_000_000_000);
    let fraction = fraction.trim_end_matches('0');
    let dot = if fraction.is_empty() { "" } else { "." };
    format!("{}{dot}{fraction}Z", t.format("%Y-%m-%dT%H:%M:%S"))
}

fn header(headers: &HeaderMap, name: http::header::HeaderName) -> String {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string()
}

/// Upstream's `SourceIPs`: the addresses of `X-Forwarded-For`, then `X-Real-Ip` unless listed
/// already, then the connection's peer unless it is the last one listed.
pub fn source_ips(headers: &HeaderMap, peer: Option<IpAddr>) -> Vec<String> {
    let mut ips: Vec<IpAddr> =
        header(headers, http::header::HeaderName::from_static("x-forwarded-for"))
            .split(',')
            .filter_map(|part| part.trim().parse().ok())
            .collect();
    if let Ok(real) =
        header(headers, http::header::HeaderName::from_static("x-real-ip")).trim().parse()
    {
        if !ips.contains(&real) {
            ips.push(real);
        }
    }
    if let Some(peer) = peer {
        if ips.last() != Some(&peer) {
            ips.push(peer);
        }
    }
    ips.iter().map(IpAddr::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_ips_follow_the_proxies_then_the_peer() {
        let mut h = HeaderMap::new();
        let peer: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(source_ips(&h, Some(peer)), ["127.0.0.1"]);
        h.insert("x-forwarded-for", "10.0.0.1, bogus, 10.0.0.2".parse().unwrap());
        h.insert("x-real-ip", "10.0.0.2".parse().unwrap());
        assert_eq!(source_ips(&h, Some(peer)), ["10.0.0.1", "10.0.0.2", "127.0.0.1"]);
        h.insert("x-forwarded-for", "127.0.0.1".parse().unwrap());
        h.remove("x-real-ip");
        assert_eq!(source_ips(&h, Some(peer)), ["127.0.0.1"]);
    }

    #[test]
    fn events_are_written_in_upstreams_order_and_words() {
        let request = http::Request::builder()
            .method("GET")
            .uri("/api/v1/namespaces/default/pods/web?timeout=32s")
            .header("user-agent", "kubectl/v1.33.0")
            .body(())
            .unwrap();
        let user = UserInfo::authenticated("jane".into(), vec!["dev".into()]);
        let a = Attributes {
            user: &user,
            verb: "get".into(),
            namespace: "default",
            api_group: "",
            api_version: "v1",
            resource: "pods",
            subresource: "",
            name: "web".into(),
            resource_request: true,
            path: "/api/v1/namespaces/default/pods/web",
        };
        let peer = Some("127.0.0.1".parse().unwrap());
        let mut e = Event::new(Level::Metadata, "id-1".into(), &request, &a, true, peer);
        e.request_received = "2026-11-29T10:00:00.000100Z".parse().unwrap();
        e.stage_timestamp = "2026-11-29T10:00:00.002Z".parse().unwrap();
        e.stage = Stage::ResponseComplete;
        e.response_status = Some(ResponseStatus {
            code: 404,
            status: "Failure".into(),
            message: "pods \"web\" not found".into(),
            reason: "NotFound".into(),
            details: Some(json!({"name": "web", "kind": "pods"})),
        });
        e.annotations.insert("authorization.k8s.io/decision".into(), "allow".into());
        let line = String::from_utf8(rkube_apis::go_json::to_vec(&e.to_json())).unwrap();
        assert_eq!(
            line,
            r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"id-1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods/web?timeout=32s","verb":"get","user":{"username":"jane","groups":["dev","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.33.0","objectRef":{"resource":"pods","namespace":"default","name":"web","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","message":"pods \"web\" not found","reason":"NotFound","details":{"name":"web","kind":"pods"},"code":404},"requestReceivedTimestamp":"2026-11-29T10:00:00.000100Z","stageTimestamp":"2026-11-29T10:00:00.002000Z","annotations":{"authorization.k8s.io/decision":"allow"}}"#.to_string() + "\n"
        );
        assert_eq!(
            e.legacy_line(),
            r#"2026-11-29T10:00:00.0001Z AUDIT: id="id-1" stage="ResponseComplete" ip="127.0.0.1" method="get" user="jane" groups="\"dev\",\"system:authenticated\"" as="<self>" asgroups="<lookup>" user-agent="kubectl/v1.33.0" namespace="default" uri="/api/v1/namespaces/default/pods/web?timeout=32s" response="404""#
        );
    }
}
