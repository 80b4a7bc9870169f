//! Service-account issuer discovery, as kube-apiserver serves it: the OpenID Connect
//! configuration at `/.well-known/openid-configuration` and the keys that verify
//! service-account tokens at `/openid/v1/jwks`, so that other parties can check the tokens.
//!
//! Both documents are rendered once at start (the keys do not change while the server runs)
//! and served with upstream's content types and `Cache-Control: public, max-age=3600`.
//! The issuer is the first `--service-account-issuer`; it must be an `https` URL without
//! query or fragment, else (as upstream) the endpoints are not served and a log line says why.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use base64::Engine;
use openssl::pkey::{PKey, Public};
use serde::Serialize;

pub const CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";
pub const JWKS_PATH: &str = "/openid/v1/jwks";

/// Why discovery cannot be served.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DiscoveryError {
    #[error("issuer URL {0:?} must use the https scheme and have no query or fragment")]
    Issuer(String),
    #[error("cannot read a service-account key: {0}")]
    Key(String),
    #[error("no service-account verification key")]
    NoKeys,
}

#[derive(Serialize)]
struct Configuration<'a> {
    issuer: &'a str,
    jwks_uri: &'a str,
    response_types_supported: [&'static str; 1],
    subject_types_supported: [&'static str; 1],
    id_token_signing_alg_values_supported: Vec<&'static str>,
}

#[derive(Serialize)]
struct Jwk {
    #[serde(rename = "use")]
    usage: &'static str,
    kty: &'static str,
    kid: String,
    alg: &'static str,
    n: String,
    e: String,
}

/// The two documents, rendered.
pub struct Discovery {
    configuration: Vec<u8>,
    jwks: Vec<u8>,
}

impl Discovery {
    /// From the issuer, the JWKS URI (`--service-account-jwks-uri`, else
    /// `https://<external address>/openid/v1/jwks`) and the PEMs of the verification keys.
    pub fn new(
        issuer: &str,
        jwks_uri: Option<&str>,
        external_address: &str,
        keys_pem: &[&[u8]],
    ) -> Result<Discovery, DiscoveryError> {
        let host = issuer.strip_prefix("https://").unwrap_or("");
        if host.is_empty() || host.starts_with('/') || issuer.contains(['?', '#']) {
            return Err(DiscoveryError::Issuer(issuer.into()));
        }
        let jwks_uri = match jwks_uri.filter(|u| !u.is_empty()) {
            Some(uri) => uri.to_string(),
            None => format!("https://{external_address}{JWKS_PATH}"),
        };
        let mut jwks: Vec<Jwk> = Vec::new();
        for pem in keys_pem {
            for key in public_keys(pem)? {
                let jwk = jwk(&key)?;
                if !jwks.iter().any(|k| k.kid == jwk.kid) {
                    jwks.push(jwk);
                }
            }
        }
        if jwks.is_empty() {
            return Err(DiscoveryError::NoKeys);
        }
        let configuration = Configuration {
            issuer,
            jwks_uri: &jwks_uri,
            response_types_supported: ["id_token"],
            subject_types_supported: ["public"],
            id_token_signing_alg_values_supported: vec!["RS256"],
        };
        Ok(Discovery {
            configuration: serde_json::to_vec(&configuration).expect("serializable"),
            jwks: serde_json::to_vec(&serde_json::json!({ "keys": jwks })).expect("serializable"),
        })
    }

    /// The routes serving both documents.
    pub fn routes<S: Clone + Send + Sync + 'static>(self: Arc<Self>) -> Router<S> {
        Router::new()
            .route(CONFIGURATION_PATH, get(configuration))
            .route(JWKS_PATH, get(jwks))
            .with_state(self)
    }
}

fn respond(body: &[u8], content_type: &'static str) -> Response {
    (
        [
            (http::header::CONTENT_TYPE, content_type),
            (http::header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        body.to_vec(),
    )
        .into_response()
}

async fn configuration(State(d): State<Arc<Discovery>>) -> Response {
    respond(&d.configuration, "application/json")
}

async fn jwks(State(d): State<Arc<Discovery>>) -> Response {
    respond(&d.jwks, "application/jwk-set+json")
}

/// The public keys of a PEM file (public keys, private keys' public halves, certificates).
fn public_keys(pem: &[u8]) -> Result<Vec<PKey<Public>>, DiscoveryError> {
    rkube_certs::jose::pem_public_keys(pem).map_err(|e| DiscoveryError::Key(e.to_string()))
}

/// The key as a JWK, its `kid` computed as the tokens' (SHA-256 of the DER public key,
/// base64url).
fn jwk(key: &PKey<Public>) -> Result<Jwk, DiscoveryError> {
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let der = key.public_key_to_der().map_err(|e| DiscoveryError::Key(e.to_string()))?;
    let rsa = key.rsa().map_err(|_| DiscoveryError::Key("only RSA keys are supported".into()))?;
    Ok(Jwk {
        usage: "sig",
        kty: "RSA",
        kid: b64(&openssl::sha::sha256(&der)),
        alg: "RS256",
        n: b64(&rsa.n().to_vec()),
        e: b64(&rsa.e().to_vec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authn::jwt::SigningKey;

    fn key() -> Vec<u8> {
        let rsa = openssl::rsa::Rsa::generate(2048).unwrap();
        PKey::from_rsa(rsa).unwrap().private_key_to_pem_pkcs8().unwrap()
    }

    #[test]
    fn documents_have_upstreams_shape_and_the_tokens_kids() {
        let (a, b) = (key(), key());
        let public_b = PKey::private_key_from_pem(&b).unwrap().public_key_to_pem().unwrap();
        let d =
            Discovery::new("https://issuer.example", None, "10.0.0.1:6443", &[&a, &public_b, &b])
                .unwrap();
        let config: serde_json::Value = serde_json::from_slice(&d.configuration).unwrap();
        assert_eq!(
            config,
            serde_json::json!({
                "issuer": "https://issuer.example",
                "jwks_uri": "https://10.0.0.1:6443/openid/v1/jwks",
                "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
            })
        );
        let jwks: serde_json::Value = serde_json::from_slice(&d.jwks).unwrap();
        let keys = jwks["keys"].as_array().unwrap();
        assert_eq!(keys.len(), 2, "the same key twice is listed once");
        for (pem, jwk) in [(&a, &keys[0]), (&b, &keys[1])] {
            assert_eq!(jwk["kid"], SigningKey::from_pem(pem).unwrap().key_id());
            assert_eq!(
                (&jwk["use"], &jwk["kty"], &jwk["alg"], &jwk["e"]),
                (
                    &serde_json::json!("sig"),
                    &serde_json::json!("RSA"),
                    &serde_json::json!("RS256"),
                    &serde_json::json!("AQAB")
                )
            );
        }
        let d = Discovery::new("https://i", Some("https://x/keys"), "a:1", &[&a]).unwrap();
        let config: serde_json::Value = serde_json::from_slice(&d.configuration).unwrap();
        assert_eq!(config["jwks_uri"], "https://x/keys");
    }

    #[test]
    fn issuers_that_cannot_be_discovered() {
        let k = key();
        for issuer in ["http://i", "https://i?x=1", "https://i#f", "kubernetes"] {
            assert!(
                matches!(
                    Discovery::new(issuer, None, "a:1", &[&k]),
                    Err(DiscoveryError::Issuer(_))
                ),
                "{issuer}"
            );
        }
    }
}
