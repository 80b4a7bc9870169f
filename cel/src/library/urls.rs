//! Kubernetes' URL library: `url(s)` and `isURL(s)` (an absolute URI or an absolute path,
//! as Go's `url.ParseRequestURI` takes), and on URLs `getScheme()`, `getHost()`,
//! `getHostname()`, `getPort()`, `getEscapedPath()`, `getQuery()`.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::STRING_TYPE;
use cel::common::value::CowVal;
use cel::objects::{Key, Map, Opaque};
use cel::{DeclarationError, Env, Value};

use super::{fail, ok, ok_opaque, opaque, opaque_type, string, Out};

/// A URL as a CEL value, in the parts Go's `url.URL` keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CelUrl {
    scheme: String,
    /// `host[:port]`, IPv6 addresses in brackets, without user information.
    host: String,
    path: String,
    query: String,
}

impl Opaque for CelUrl {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let u = || opaque_type("kubernetes.URL");
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], to_url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_member_overload("getScheme", "url_get_scheme", u(), vec![], |a| {
        part(a, |u| u.scheme.clone())
    })?;
    env.add_member_overload("getHost", "url_get_host", u(), vec![], |a| {
        part(a, |u| u.host.clone())
    })?;
    env.add_member_overload("getHostname", "url_get_hostname", u(), vec![], |a| {
        part(a, |u| split_host(&u.host).0)
    })?;
    env.add_member_overload("getPort", "url_get_port", u(), vec![], |a| {
        part(a, |u| split_host(&u.host).1)
    })?;
    env.add_member_overload("getEscapedPath", "url_get_escaped_path", u(), vec![], |a| {
        part(a, |u| u.path.clone())
    })?;
    env.add_member_overload("getQuery", "url_get_query", u(), vec![], query)?;
    Ok(())
}

/// `s` as `url.ParseRequestURI` reads it.
pub(crate) fn parse(s: &str) -> Result<CelUrl, String> {
    let bad = || format!("parse {s:?}: invalid URI for request");
    let without_fragment = s;
    if let Some(path) = without_fragment.strip_prefix('/') {
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        return Ok(CelUrl {
            scheme: String::new(),
            host: String::new(),
            path: format!("/{path}"),
            query: query.to_string(),
        });
    }
    let (scheme, rest) = s.split_once(':').ok_or_else(bad)?;
    let scheme_ok = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok {
        return Err(format!("parse {s:?}: first path segment in URL cannot contain colon"));
    }
    url::Url::parse(s).map_err(|e| format!("parse {s:?}: {e}"))?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (host, path) = match rest.strip_prefix("//") {
        Some(authority) => {
            let at = authority.find('/').unwrap_or(authority.len());
            let (authority, path) = authority.split_at(at);
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            (host.to_string(), path.to_string())
        }
        None => (String::new(), rest.to_string()),
    };
    Ok(CelUrl { scheme: scheme.to_string(), host, path, query: query.to_string() })
}

/// The hostname and port of `host[:port]`.
fn split_host(host: &str) -> (String, String) {
    if let Some(rest) = host.strip_prefix('[') {
        let (name, after) = rest.split_once(']').unwrap_or((rest, ""));
        return (name.to_string(), after.strip_prefix(':').unwrap_or("").to_string());
    }
    match host.rsplit_once(':') {
        Some((name, port)) => (name.to_string(), port.to_string()),
        None => (host.to_string(), String::new()),
    }
}

fn to_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let s = string(&args[0])?;
    let u = parse(s)
        .map_err(|e| fail("url", format!("URL parse error during conversion from string: {e}")))?;
    ok_opaque(u)
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(parse(string(&args[0])?).is_ok()))
}

fn part<'b, 'v>(args: Vec<CowVal<'b, 'v>>, f: fn(&CelUrl) -> String) -> Out<'b, 'v> {
    let u = opaque::<CelUrl>(&args[0])?;
    ok(Value::String(Arc::new(f(&u))))
}

fn query<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let u = opaque::<CelUrl>(&args[0])?;
    let mut values: HashMap<Key, Vec<Value>> = HashMap::new();
    for (k, v) in url::form_urlencoded::parse(u.query.as_bytes()) {
        values
            .entry(Key::String(Arc::new(k.into_owned())))
            .or_default()
            .push(Value::String(Arc::new(v.into_owned())));
    }
    let map = values.into_iter().map(|(k, v)| (k, Value::List(Arc::new(v)))).collect();
    ok(Value::Map(Map { map: Arc::new(map) }))
}
