//! Subject alternative names: the IPs and DNS names a serving certificate is valid for.

use std::fmt;
use std::net::IpAddr;

use crate::CertError;

/// One subject alternative name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum San {
    Ip(IpAddr),
    /// Lower-case DNS name, possibly with a leading `*.` wildcard label.
    Dns(String),
}

impl San {
    /// Parses `s` as an IP address if it is one (`[::1]` is accepted too), else as a DNS name.
    ///
    /// DNS names are lower-cased and must consist of letters, digits, `-` and `.`, with an
    /// optional leading `*.`.
    pub fn parse(s: &str) -> Result<San, CertError> {
        let s = s.trim();
        let unbracketed = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')).unwrap_or(s);
        if let Ok(ip) = unbracketed.parse::<IpAddr>() {
            return Ok(San::Ip(ip));
        }
        let bad =
            |reason: &str| CertError::InvalidSan { name: s.to_owned(), reason: reason.into() };
        if s.is_empty() {
            return Err(bad("it is empty"));
        }
        if s.len() > 253 {
            return Err(bad("a DNS name has at most 253 characters"));
        }
        let name = s.to_ascii_lowercase();
        let rest = name.strip_prefix("*.").unwrap_or(&name);
        for label in rest.split('.') {
            if label.is_empty() {
                return Err(bad(
                    "a DNS name must not have empty labels (\"..\", leading or trailing \".\")",
                ));
            }
            if label.len() > 63 {
                return Err(bad("a DNS label has at most 63 characters"));
            }
            if !label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                return Err(bad(
                    "not an IP address, and a DNS name may only contain letters, digits, '-' and '.'",
                ));
            }
            if label.starts_with('-') || label.ends_with('-') {
                return Err(bad("a DNS label must not start or end with '-'"));
            }
        }
        Ok(San::Dns(name))
    }
}

impl fmt::Display for San {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            San::Ip(ip) => write!(f, "IP:{ip}"),
            San::Dns(name) => write!(f, "DNS:{name}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ips_and_dns_names() {
        assert_eq!(San::parse("10.0.0.1").unwrap(), San::Ip("10.0.0.1".parse().unwrap()));
        assert_eq!(San::parse("::1").unwrap(), San::Ip("::1".parse().unwrap()));
        assert_eq!(San::parse("[fd00::5]").unwrap(), San::Ip("fd00::5".parse().unwrap()));
        assert_eq!(
            San::parse(" Node-1.Example.COM ").unwrap(),
            San::Dns("node-1.example.com".into())
        );
        assert_eq!(San::parse("*.svc.local").unwrap(), San::Dns("*.svc.local".into()));
    }

    #[test]
    fn rejects_bad_names_with_a_reason() {
        for bad in ["", "a..b", "trailing.", "-x.com", "x-.com", "under_score", "sp ace", "a.*.b"] {
            let err = San::parse(bad).unwrap_err();
            assert!(matches!(err, CertError::InvalidSan { .. }), "{bad:?}: {err}");
            assert!(err.to_string().contains("invalid subject alternative name"), "{err}");
        }
    }
}
