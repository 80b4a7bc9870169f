//! The webhook client-config checks of `k8s.io/apiserver/pkg/util/webhook` (v1.33):
//! [`webhook_url`] (`ValidateWebhookURL`, HTTPS forced as both callers here ask) and
//! [`webhook_service`] (`ValidateWebhookService`), shared by admission webhook
//! configurations and CRD conversion webhooks, with the part of Go's `net/url` they need
//! ([`go_url`]; the CRD API-approval annotation is read with it too).
//!
//! Upstream's `ValidateWebhookService` takes the namespace before the name, yet both
//! admissionregistration and apiextensions (v1.33) pass the service's name first: an empty
//! namespace is reported at `service.name` ("service name is required") and an empty name at
//! `service.namespace`. [`webhook_service`] takes upstream's parameters in upstream's order
//! and each caller passes its fields as its upstream caller does, so kubectl sees the same.

use serde_json::Value;

use super::values::range_msg;
use super::{name_problems, FieldError, NameRule};

const URL_FORM: &str = "; desired format: https://host[/path]";

/// `ValidateWebhookURL(fldPath, url, true)`: the URL as Go's `url.Parse` reads it, HTTPS,
/// with a host and without user info, fragment or query.
pub fn webhook_url(at: &str, url: &str) -> Vec<FieldError> {
    let parsed = match go_url::parse(url) {
        Ok(parsed) => parsed,
        Err(e) => {
            let detail = format!("url must be a valid URL: {e}{URL_FORM}");
            return vec![FieldError::required(at, &detail)];
        }
    };
    let mut errors = Vec::new();
    if parsed.scheme != "https" {
        let detail = format!("'https' is the only allowed URL scheme{URL_FORM}");
        errors.push(FieldError::invalid(at, &Value::from(parsed.scheme.as_str()), &detail));
    }
    if parsed.host.is_empty() {
        let detail = format!("host must be specified{URL_FORM}");
        errors.push(FieldError::invalid(at, &Value::from(parsed.host.as_str()), &detail));
    }
    if let Some(user) = &parsed.user {
        let detail = "user information is not permitted in the URL";
        errors.push(FieldError::invalid(at, &Value::from(user.as_str()), detail));
    }
    if !parsed.fragment.is_empty() {
        let detail = "fragments are not permitted in the URL";
        errors.push(FieldError::invalid(at, &Value::from(parsed.fragment.as_str()), detail));
    }
    if !parsed.raw_query.is_empty() {
        let detail = "query parameters are not permitted in the URL";
        errors.push(FieldError::invalid(at, &Value::from(parsed.raw_query.as_str()), detail));
    }
    errors
}

/// `ValidateWebhookService(fldPath, namespace, name, path, port)`, with the arguments in
/// upstream's order (see the module docs for the callers' swap). `port` is the port as the
/// caller reads it: valid when an integer from 1 to 65535, and shown as given otherwise.
pub fn webhook_service(
    at: &str,
    namespace: &str,
    name: &str,
    path: Option<&str>,
    port: &Value,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if name.is_empty() {
        errors.push(FieldError::required(format!("{at}.name"), "service name is required"));
    }
    if namespace.is_empty() {
        let detail = "service namespace is required";
        errors.push(FieldError::required(format!("{at}.namespace"), detail));
    }
    if !port.as_i64().is_some_and(|p| (1..=65535).contains(&p)) {
        let detail = format!("port is not valid: {}", range_msg(1, 65535));
        errors.push(FieldError::invalid(format!("{at}.port"), port, &detail));
    }
    let Some(path) = path else { return errors };
    if path.is_empty() || path == "/" {
        return errors;
    }
    let field = format!("{at}.path");
    let invalid = |detail: &str| FieldError::invalid(&field, &Value::from(path), detail);
    if path == "//" {
        errors.push(invalid("segment[0] may not be empty"));
        return errors;
    }
    if !path.starts_with('/') {
        errors.push(invalid("must start with a '/'"));
    }
    // Upstream drops the first byte whatever it is, then one trailing slash.
    let rest = String::from_utf8_lossy(&path.as_bytes()[1..]).into_owned();
    let rest = rest.strip_suffix('/').unwrap_or(&rest);
    for (i, step) in rest.split('/').enumerate() {
        if step.is_empty() {
            errors.push(invalid(&format!("segment[{i}] may not be empty")));
            continue;
        }
        for p in name_problems(step, NameRule::Subdomain) {
            errors.push(invalid(&format!("segment[{i}]: {p}")));
        }
    }
    errors
}

/// The parts of Go's `net/url` (`Parse` and `ParseRequestURI`) the checks look at, with its
/// error messages (`parse "<url>": <reason>`).
pub mod go_url {
    use crate::gofmt::go_quote;

    /// What the parser found: the lower-cased scheme, the user info as `Userinfo.String()`
    /// prints it, the (unescaped) host, the raw query and the (unescaped) fragment.
    #[derive(Debug, Default)]
    pub struct Url {
        pub scheme: String,
        pub user: Option<String>,
        pub host: String,
        pub raw_query: String,
        pub fragment: String,
    }

    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Mode {
        Path,
        Host,
        Zone,
        UserPassword,
        Fragment,
    }

    /// Go's `url.Parse`: the fragment is cut off first, and its errors name the whole input.
    pub fn parse(raw: &str) -> Result<Url, String> {
        let (before, fragment) = match raw.split_once('#') {
            Some((u, f)) => (u, Some(f)),
            None => (raw, None),
        };
        let mut url =
            parse_uri(before, false).map_err(|e| format!("parse {}: {e}", go_quote(before)))?;
        if let Some(fragment) = fragment.filter(|f| !f.is_empty()) {
            let unescaped = unescape(fragment.as_bytes(), Mode::Fragment)
                .map_err(|e| format!("parse {}: {e}", go_quote(raw)))?;
            url.fragment = String::from_utf8_lossy(&unescaped).into_owned();
        }
        Ok(url)
    }

    /// Go's `url.ParseRequestURI`: an absolute URI or an absolute path, no fragment.
    pub fn parse_request_uri(raw: &str) -> Result<Url, String> {
        parse_uri(raw, true).map_err(|e| format!("parse {}: {e}", go_quote(raw)))
    }

    /// Go's `url.parse`; `via_request` is `ParseRequestURI`'s stricter form.
    fn parse_uri(raw: &str, via_request: bool) -> Result<Url, String> {
        if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
            return Err("net/url: invalid control character in URL".to_string());
        }
        if raw.is_empty() && via_request {
            return Err("empty url".to_string());
        }
        let mut url = Url::default();
        if raw == "*" {
            return Ok(url);
        }
        let (scheme, mut rest) = scheme(raw)?;
        url.scheme = scheme.to_ascii_lowercase();
        if rest.ends_with('?') && rest.matches('?').count() == 1 {
            rest = &rest[..rest.len() - 1];
        } else if let Some((r, query)) = rest.split_once('?') {
            rest = r;
            url.raw_query = query.to_string();
        }
        if !rest.starts_with('/') {
            if !url.scheme.is_empty() {
                // An opaque URL (`scheme:rest`): no host.
                return Ok(url);
            }
            if via_request {
                return Err("invalid URI for request".to_string());
            }
            let segment = rest.split('/').next().unwrap_or_default();
            if segment.contains(':') {
                return Err("first path segment in URL cannot contain colon".to_string());
            }
        }
        if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///"))
            && rest.starts_with("//")
        {
            let authority = &rest[2..];
            let (authority, path) = match authority.find('/') {
                Some(i) => (&authority[..i], &authority[i..]),
                None => (authority, ""),
            };
            rest = path;
            let (user, host) = parse_authority(authority)?;
            url.user = user;
            url.host = host;
        }
        unescape(rest.as_bytes(), Mode::Path)?;
        Ok(url)
    }

    /// `scheme:rest`, when the input starts with a valid scheme.
    fn scheme(raw: &str) -> Result<(&str, &str), String> {
        for (i, c) in raw.bytes().enumerate() {
            match c {
                b'a'..=b'z' | b'A'..=b'Z' => {}
                b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
                b':' if i == 0 => return Err("missing protocol scheme".to_string()),
                b':' => return Ok((&raw[..i], &raw[i + 1..])),
                _ => return Ok(("", raw)),
            }
        }
        Ok(("", raw))
    }

    fn parse_authority(authority: &str) -> Result<(Option<String>, String), String> {
        let Some(at) = authority.rfind('@') else {
            return Ok((None, parse_host(authority)?));
        };
        let host = parse_host(&authority[at + 1..])?;
        let userinfo = &authority[..at];
        if !userinfo.chars().all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c))
        {
            return Err("net/url: invalid userinfo".to_string());
        }
        let user = match userinfo.split_once(':') {
            None => escape(&unescape(userinfo.as_bytes(), Mode::UserPassword)?),
            Some((name, password)) => format!(
                "{}:{}",
                escape(&unescape(name.as_bytes(), Mode::UserPassword)?),
                escape(&unescape(password.as_bytes(), Mode::UserPassword)?)
            ),
        };
        Ok((Some(user), host))
    }

    fn parse_host(host: &str) -> Result<String, String> {
        if host.starts_with('[') {
            let Some(end) = host.rfind(']') else {
                return Err("missing ']' in host".to_string());
            };
            let port = &host[end + 1..];
            if !valid_optional_port(port) {
                return Err(format!("invalid port {} after host", go_quote(port)));
            }
            if let Some(zone) = host[..end].find("%25") {
                let mut out = unescape(&host.as_bytes()[..zone], Mode::Host)?;
                out.extend(unescape(&host.as_bytes()[zone..end], Mode::Zone)?);
                out.extend(unescape(&host.as_bytes()[end..], Mode::Host)?);
                return Ok(String::from_utf8_lossy(&out).into_owned());
            }
        } else if let Some(colon) = host.rfind(':') {
            let port = &host[colon..];
            if !valid_optional_port(port) {
                return Err(format!("invalid port {} after host", go_quote(port)));
            }
        }
        Ok(String::from_utf8_lossy(&unescape(host.as_bytes(), Mode::Host)?).into_owned())
    }

    /// Empty, or `:` and digits.
    fn valid_optional_port(port: &str) -> bool {
        port.is_empty()
            || port.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
    }

    /// Go's `shouldEscape` for the modes used here.
    fn should_escape(c: u8, mode: Mode) -> bool {
        if c.is_ascii_alphanumeric() {
            return false;
        }
        if matches!(mode, Mode::Host | Mode::Zone) && b"!$&'()*+,;=:[]<>\"".contains(&c) {
            return false;
        }
        match c {
            b'-' | b'_' | b'.' | b'~' => return false,
            b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
                Mode::Path => return c == b'?',
                Mode::UserPassword => return matches!(c, b'@' | b'/' | b'?' | b':'),
                Mode::Fragment => return false,
                Mode::Host | Mode::Zone => {}
            },
            _ => {}
        }
        !(mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*'))
    }

    fn unhex(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => 0,
        }
    }

    /// `invalid URL escape "%zz"`, quoted as Go's `strconv.Quote` (bad UTF-8 as `\x..`).
    fn escape_error(bytes: &[u8]) -> String {
        let mut quoted = String::from("\"");
        for chunk in bytes.utf8_chunks() {
            let valid = go_quote(chunk.valid());
            quoted.push_str(&valid[1..valid.len() - 1]);
            for b in chunk.invalid() {
                quoted.push_str(&format!("\\x{b:02x}"));
            }
        }
        quoted.push('"');
        format!("invalid URL escape {quoted}")
    }

    /// Go's `unescape`: `%XX` decoded, with the host's restrictions.
    fn unescape(s: &[u8], mode: Mode) -> Result<Vec<u8>, String> {
        let mut i = 0;
        while i < s.len() {
            match s[i] {
                b'%' => {
                    if i + 2 >= s.len()
                        || !s[i + 1].is_ascii_hexdigit()
                        || !s[i + 2].is_ascii_hexdigit()
                    {
                        return Err(escape_error(&s[i..(i + 3).min(s.len())]));
                    }
                    let escaped = &s[i..i + 3];
                    if mode == Mode::Host && unhex(s[i + 1]) < 8 && escaped != b"%25" {
                        return Err(escape_error(escaped));
                    }
                    if mode == Mode::Zone {
                        let v = (unhex(s[i + 1]) << 4) | unhex(s[i + 2]);
                        if escaped != b"%25" && v != b' ' && should_escape(v, Mode::Host) {
                            return Err(escape_error(escaped));
                        }
                    }
                    i += 3;
                }
                c => {
                    if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode)
                    {
                        let shown = go_quote(&char::from(c).to_string());
                        return Err(format!("invalid character {shown} in host name"));
                    }
                    i += 1;
                }
            }
        }
        let mut out = Vec::with_capacity(s.len());
        let mut i = 0;
        while i < s.len() {
            if s[i] == b'%' {
                out.push((unhex(s[i + 1]) << 4) | unhex(s[i + 2]));
                i += 3;
            } else {
                out.push(s[i]);
                i += 1;
            }
        }
        Ok(out)
    }

    /// Go's `escape` for user info (`Userinfo.String()`).
    fn escape(bytes: &[u8]) -> String {
        let mut out = String::new();
        for &b in bytes {
            if should_escape(b, Mode::UserPassword) {
                out.push_str(&format!("%{b:02X}"));
            } else {
                out.push(char::from(b));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    #[test]
    fn go_url_parsing() {
        let url = go_url::parse("HTTPS://u%41:p@[fe80::1%25en0]:8443/p?q=1#f%20x").unwrap();
        assert_eq!(url.scheme, "https");
        assert_eq!(url.user.as_deref(), Some("uA:p"));
        assert_eq!(url.host, "[fe80::1%en0]:8443");
        assert_eq!(url.raw_query, "q=1");
        assert_eq!(url.fragment, "f x");
        let url = go_url::parse("https://a@b@example.com?").unwrap();
        assert_eq!((url.user.as_deref(), url.host.as_str()), (Some("a%40b"), "example.com"));
        assert_eq!(url.raw_query, "");
        assert_eq!(go_url::parse("mailto:x@example.com").unwrap().host, "");
        assert_eq!(go_url::parse("a:b/c").unwrap().scheme, "a",);
        assert_eq!(
            go_url::parse("1a:b").err().unwrap(),
            "parse \"1a:b\": first path segment in URL cannot contain colon"
        );
        assert_eq!(
            go_url::parse("https://[::1/x").err().unwrap(),
            "parse \"https://[::1/x\": missing ']' in host"
        );
        assert_eq!(
            go_url::parse("https://a b@x.com").err().unwrap(),
            "parse \"https://a b@x.com\": net/url: invalid userinfo"
        );
        assert_eq!(
            go_url::parse("https://x.com/\u{1}").err().unwrap(),
            "parse \"https://x.com/\\x01\": net/url: invalid control character in URL"
        );
        assert_eq!(
            go_url::parse("https://x.com/#%g").err().unwrap(),
            "parse \"https://x.com/#%g\": invalid URL escape \"%g\""
        );
        assert_eq!(
            go_url::parse("https://x%41.com/").err().unwrap(),
            "parse \"https://x%41.com/\": invalid URL escape \"%41\""
        );
        // A bad escape cut inside a multi-byte character is quoted byte by byte.
        assert_eq!(
            go_url::parse("https://x.com/%a\u{e9}").err().unwrap(),
            "parse \"https://x.com/%a\u{e9}\": invalid URL escape \"%a\\xc3\""
        );
    }

    #[test]
    fn go_url_request_uri_parsing() {
        let url = go_url::parse_request_uri("https://example.com/x").unwrap();
        assert_eq!((url.scheme.as_str(), url.host.as_str()), ("https", "example.com"));
        assert_eq!(go_url::parse_request_uri("").err().unwrap(), "parse \"\": empty url");
        assert_eq!(
            go_url::parse_request_uri("yes").err().unwrap(),
            "parse \"yes\": invalid URI for request"
        );
        // A path-only request URI has no host, even when it starts with `//`.
        assert_eq!(go_url::parse_request_uri("//example.com/x").unwrap().host, "");
        assert_eq!(go_url::parse("//example.com/x").unwrap().host, "example.com");
    }

    #[test]
    fn webhook_urls() {
        assert_eq!(
            lines(webhook_url("u", "https://[::1")),
            ["u: Required value: url must be a valid URL: parse \"https://[::1\": missing ']' in host; desired format: https://host[/path]"]
        );
        assert_eq!(
            lines(webhook_url("u", "https://h:x/")),
            ["u: Required value: url must be a valid URL: parse \"https://h:x/\": invalid port \":x\" after host; desired format: https://host[/path]"]
        );
        assert!(webhook_url("u", "https://conv.example.com:8443/convert").is_empty());
    }

    #[test]
    fn webhook_services() {
        assert_eq!(
            lines(webhook_service("s", "", "", Some("\u{e9}x"), &json!(70000))),
            [
                "s.name: Required value: service name is required",
                "s.namespace: Required value: service namespace is required",
                "s.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
                "s.path: Invalid value: \"\u{e9}x\": must start with a '/'",
                "s.path: Invalid value: \"\u{e9}x\": segment[0]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ]
        );
        assert!(webhook_service("s", "ns", "n", None, &json!(443)).is_empty());
    }
}
