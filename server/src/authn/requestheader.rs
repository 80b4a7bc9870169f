//! The request-header authenticator (kube-apiserver's `--requestheader-*` flags): a client
//! whose verified certificate was issued by the requestheader CA
//! (`--requestheader-client-ca-file`) and whose common name is among
//! `--requestheader-allowed-names` (any, when that list is empty) is a front proxy; the user
//! of each of its requests is the first non-empty value of the username headers
//! (`X-Remote-User`), with the values of the group headers (`X-Remote-Group`) as groups and
//! the headers starting with an extra prefix (`X-Remote-Extra-<key>`, key lowercased and
//! unescaped) as extra. As upstream, it runs before the x509 authenticator, and those
//! headers are removed once read. A certificate of that CA with a name not allowed, or a
//! request of the proxy without a user header, authenticates no one; the x509
//! authenticator refuses the certificate too (it is not the cluster CA's), so the request
//! gets 401. On a connection with any other certificate the headers mean nothing.

use openssl::nid::Nid;
use openssl::x509::X509;
use percent_encoding::percent_decode_str;

use crate::auth::UserInfo;

/// The `--requestheader-*` settings, published for extension servers too
/// ([`crate::aggregator::authentication_info`]).
#[derive(Clone, Debug)]
pub struct RequestHeaderOptions {
    /// `--requestheader-client-ca-file`'s certificates (PEM).
    pub ca_pem: Vec<u8>,
    /// `--requestheader-allowed-names`: common names a proxy may have; empty allows any.
    pub allowed_names: Vec<String>,
    /// `--requestheader-username-headers`.
    pub username_headers: Vec<String>,
    /// `--requestheader-group-headers`.
    pub group_headers: Vec<String>,
    /// `--requestheader-extra-headers-prefix`.
    pub extra_headers_prefix: Vec<String>,
}

impl RequestHeaderOptions {
    /// kubeadm's header names, with `ca_pem` and `allowed_names`.
    pub fn with_default_headers(ca_pem: Vec<u8>, allowed_names: Vec<String>) -> Self {
        RequestHeaderOptions {
            ca_pem,
            allowed_names,
            username_headers: vec!["X-Remote-User".into()],
            group_headers: vec!["X-Remote-Group".into()],
            extra_headers_prefix: vec!["X-Remote-Extra-".into()],
        }
    }
}

/// The authenticator of one set of options.
pub struct RequestHeader {
    options: RequestHeaderOptions,
    cas: Vec<X509>,
}

/// What a request of a front-proxy connection is.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// The user its headers name.
    User(UserInfo),
    /// No one: answered 401.
    Unauthenticated,
}

impl RequestHeader {
    pub fn new(options: RequestHeaderOptions) -> Result<RequestHeader, String> {
        let cas = X509::stack_from_pem(&options.ca_pem)
            .map_err(|e| format!("cannot read the requestheader client CA: {e}"))?;
        if cas.is_empty() {
            return Err("the requestheader client CA holds no certificate".into());
        }
        Ok(RequestHeader { options, cas })
    }

    /// The options.
    pub fn options(&self) -> &RequestHeaderOptions {
        &self.options
    }

    /// Whether `cert` (verified in the handshake against every trusted CA) was issued by the
    /// requestheader CA: a front proxy's, if its name is allowed too.
    pub fn issued(&self, cert: &X509) -> bool {
        self.cas.iter().any(|ca| {
            cert.issuer_name().try_cmp(ca.subject_name()).is_ok_and(|o| o.is_eq())
                && ca.public_key().and_then(|key| cert.verify(&key)).unwrap_or(false)
        })
    }

    /// Whether a certificate of the CA names an allowed proxy.
    fn allowed(&self, cert: &X509) -> bool {
        if self.options.allowed_names.is_empty() {
            return true;
        }
        let cn = cert
            .subject_name()
            .entries_by_nid(Nid::COMMONNAME)
            .next()
            .map(|e| String::from_utf8_lossy(e.data().as_slice()).into_owned());
        cn.is_some_and(|cn| self.options.allowed_names.contains(&cn))
    }

    /// The user of one request on a connection with `cert` (issued by the CA), the headers
    /// read removed.
    pub fn authenticate(&self, cert: &X509, headers: &mut http::HeaderMap) -> Outcome {
        if !self.allowed(cert) {
            return Outcome::Unauthenticated;
        }
        let values = |headers: &http::HeaderMap, name: &str| -> Vec<String> {
            headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::to_string)
                .collect()
        };
        let name = self
            .options
            .username_headers
            .iter()
            .find_map(|h| values(headers, h).into_iter().find(|v| !v.is_empty()));
        let Some(name) = name else { return Outcome::Unauthenticated };
        let groups: Vec<String> =
            self.options.group_headers.iter().flat_map(|h| values(headers, h)).collect();
        let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
        let prefixes: Vec<String> =
            self.options.extra_headers_prefix.iter().map(|p| p.to_ascii_lowercase()).collect();
        for (header, value) in headers.iter() {
            let Some(key) = prefixes.iter().find_map(|p| header.as_str().strip_prefix(p.as_str()))
            else {
                continue;
            };
            let key = percent_decode_str(key).decode_utf8_lossy().to_lowercase();
            if let Ok(value) = value.to_str() {
                extra.entry(key).or_default().push(value.to_string());
            }
        }
        // Read once: nothing further down sees them.
        let names: Vec<http::HeaderName> = headers
            .keys()
            .filter(|h| {
                let h = h.as_str();
                self.options.username_headers.iter().any(|u| u.eq_ignore_ascii_case(h))
                    || self.options.group_headers.iter().any(|g| g.eq_ignore_ascii_case(h))
                    || prefixes.iter().any(|p| h.starts_with(p.as_str()))
            })
            .cloned()
            .collect();
        for n in names {
            headers.remove(n);
        }
        let mut user = UserInfo::authenticated(name, groups);
        user.extra = extra;
        Outcome::User(user)
    }
}
