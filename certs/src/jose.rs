//! jsonwebtoken's RS256 signatures made and checked with openssl, the library the rest of
//! rkube's cryptography uses, as jsonwebtoken's process-wide `CryptoProvider`. The API
//! server's token authenticator and TokenRequest, and the controller manager's token
//! controller, call [`install`] before they sign or verify.

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{ErrorKind, Result};
use jsonwebtoken::signature::{self, Signer, Verifier};
use jsonwebtoken::{Algorithm, DecodingKey, DecodingKeyKind, EncodingKey};
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private, Public};
use openssl::rsa::Rsa;

struct Rs256Signer(PKey<Private>);

impl Signer<Vec<u8>> for Rs256Signer {
    fn try_sign(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, signature::Error> {
        let mut signer = openssl::sign::Signer::new(MessageDigest::sha256(), &self.0)
            .map_err(signature::Error::from_source)?;
        signer.update(msg).map_err(signature::Error::from_source)?;
        signer.sign_to_vec().map_err(signature::Error::from_source)
    }
}

impl JwtSigner for Rs256Signer {
    fn algorithm(&self) -> Algorithm {
        Algorithm::RS256
    }
}

struct Rs256Verifier(PKey<Public>);

impl Verifier<Vec<u8>> for Rs256Verifier {
    fn verify(&self, msg: &[u8], sig: &Vec<u8>) -> std::result::Result<(), signature::Error> {
        let mut verifier = openssl::sign::Verifier::new(MessageDigest::sha256(), &self.0)
            .map_err(signature::Error::from_source)?;
        verifier.update(msg).map_err(signature::Error::from_source)?;
        match verifier.verify(sig) {
            Ok(true) => Ok(()),
            Ok(false) => Err(signature::Error::new()),
            Err(e) => Err(signature::Error::from_source(e)),
        }
    }
}

impl JwtVerifier for Rs256Verifier {
    fn algorithm(&self) -> Algorithm {
        Algorithm::RS256
    }
}

fn signer(alg: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    if *alg != Algorithm::RS256 {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    let rsa = Rsa::private_key_from_der(key.as_bytes())
        .map_err(|e| ErrorKind::InvalidRsaKey(e.to_string()))?;
    let key = PKey::from_rsa(rsa).map_err(|e| ErrorKind::InvalidRsaKey(e.to_string()))?;
    Ok(Box::new(Rs256Signer(key)))
}

fn verifier(alg: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    if *alg != Algorithm::RS256 {
        return Err(ErrorKind::InvalidAlgorithm.into());
    }
    let DecodingKeyKind::SecretOrDer(der) = key.kind() else {
        return Err(ErrorKind::InvalidKeyFormat.into());
    };
    let rsa =
        Rsa::public_key_from_der_pkcs1(der).map_err(|e| ErrorKind::InvalidRsaKey(e.to_string()))?;
    let key = PKey::from_rsa(rsa).map_err(|e| ErrorKind::InvalidRsaKey(e.to_string()))?;
    Ok(Box::new(Rs256Verifier(key)))
}

static OPENSSL: CryptoProvider = CryptoProvider {
    signer_factory: signer,
    verifier_factory: verifier,
    key_utils: KeyUtils::new_unimplemented(),
};

/// Makes openssl jsonwebtoken's provider (once per process; later calls do nothing).
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = OPENSSL.install_default();
    });
}

/// The issuer of legacy (Secret-based) service-account tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

/// The claims of a legacy service-account token, as upstream's token controller writes them
/// (keys in go-jose's sorted order) and its authenticator reads them. Such tokens have no
/// audience and never expire; they are valid while their Secret holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LegacyClaims {
    #[serde(default)]
    pub iss: String,
    #[serde(rename = "kubernetes.io/serviceaccount/namespace", default)]
    pub namespace: String,
    #[serde(rename = "kubernetes.io/serviceaccount/secret.name", default)]
    pub secret_name: String,
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.name", default)]
    pub service_account_name: String,
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.uid", default)]
    pub service_account_uid: String,
    #[serde(default)]
    pub sub: String,
}

impl LegacyClaims {
    /// The claims of the token the Secret `secret_name` holds for this account.
    pub fn new(namespace: &str, account: &str, account_uid: &str, secret_name: &str) -> Self {
        LegacyClaims {
            iss: LEGACY_ISSUER.to_string(),
            namespace: namespace.to_string(),
            secret_name: secret_name.to_string(),
            service_account_name: account.to_string(),
            service_account_uid: account_uid.to_string(),
            sub: format!("system:serviceaccount:{namespace}:{account}"),
        }
    }
}

/// A key that cannot sign service-account tokens.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(pub String);

/// The public keys of a PEM file, as `--service-account-key-file` takes them: public keys
/// (PKIX or PKCS#1), private keys (their public half) and certificates, in file order.
pub fn pem_public_keys(pem: &[u8]) -> std::result::Result<Vec<PKey<Public>>, KeyError> {
    let text = String::from_utf8_lossy(pem);
    let mut keys = Vec::new();
    for block in text.split("-----BEGIN ").skip(1) {
        let block = format!("-----BEGIN {block}");
        let bytes = block.as_bytes();
        let key = if block.starts_with("-----BEGIN CERTIFICATE-----") {
            openssl::x509::X509::from_pem(bytes).and_then(|c| c.public_key())
        } else if block.contains("PRIVATE KEY-----") {
            PKey::private_key_from_pem(bytes)
                .and_then(|k| k.public_key_to_der())
                .and_then(|der| PKey::public_key_from_der(&der))
        } else if block.starts_with("-----BEGIN RSA PUBLIC KEY-----") {
            Rsa::public_key_from_pem_pkcs1(bytes).and_then(PKey::from_rsa)
        } else {
            PKey::public_key_from_pem(bytes)
        }
        .map_err(|e| KeyError(format!("cannot read a key: {e}")))?;
        keys.push(key);
    }
    Ok(keys)
}

/// Upstream's key id: the unpadded base64url SHA-256 of the public key's PKIX DER.
pub fn key_id(public: &PKey<Public>) -> std::result::Result<String, KeyError> {
    use base64::Engine;
    let der = public.public_key_to_der().map_err(|e| KeyError(e.to_string()))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(openssl::sha::sha256(&der)))
}

/// An RSA private key that signs RS256 JWTs with upstream's header (`alg`, `kid`).
pub struct RsaSigningKey {
    key: EncodingKey,
    kid: String,
}

impl std::fmt::Debug for RsaSigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RsaSigningKey").field("kid", &self.kid).finish_non_exhaustive()
    }
}

impl RsaSigningKey {
    /// An RSA private key in PEM (PKCS#1 or PKCS#8).
    pub fn from_pem(pem: &[u8]) -> std::result::Result<RsaSigningKey, KeyError> {
        install();
        let key = PKey::private_key_from_pem(pem)
            .map_err(|e| KeyError(format!("not a PEM private key: {e}")))?;
        let rsa = key.rsa().map_err(|_| {
            KeyError("not an RSA key (service-account tokens are signed with RS256)".into())
        })?;
        let der = rsa.private_key_to_der().map_err(|e| KeyError(e.to_string()))?;
        let public_der = key.public_key_to_der().map_err(|e| KeyError(e.to_string()))?;
        let public = PKey::public_key_from_der(&public_der).map_err(|e| KeyError(e.to_string()))?;
        Ok(RsaSigningKey { key: EncodingKey::from_rsa_der(&der), kid: key_id(&public)? })
    }

    pub fn key_id(&self) -> &str {
        &self.kid
    }

    /// The compact JWT of `claims`.
    pub fn sign<T: serde::Serialize>(&self, claims: &T) -> Result<String> {
        let header = jsonwebtoken::Header {
            typ: None,
            kid: Some(self.kid.clone()),
            ..jsonwebtoken::Header::new(Algorithm::RS256)
        };
        jsonwebtoken::encode(&header, claims, &self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_tokens_are_signed_with_upstreams_claims() {
        let rsa = Rsa::generate(2048).unwrap();
        let pem = PKey::from_rsa(rsa).unwrap().private_key_to_pem_pkcs8().unwrap();
        let key = RsaSigningKey::from_pem(&pem).unwrap();
        let claims = LegacyClaims::new("ns", "builder", "uid-1", "builder-token");
        let token = key.sign(&claims).unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        use base64::Engine;
        let decode = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).unwrap();
        let header: serde_json::Value = serde_json::from_slice(&decode(parts[0])).unwrap();
        assert_eq!(header, serde_json::json!({"alg": "RS256", "kid": key.key_id()}));
        let payload = String::from_utf8(decode(parts[1])).unwrap();
        assert_eq!(
            payload,
            r#"{"iss":"kubernetes/serviceaccount","kubernetes.io/serviceaccount/namespace":"ns","kubernetes.io/serviceaccount/secret.name":"builder-token","kubernetes.io/serviceaccount/service-account.name":"builder","kubernetes.io/serviceaccount/service-account.uid":"uid-1","sub":"system:serviceaccount:ns:builder"}"#
        );
        assert!(RsaSigningKey::from_pem(b"nope").is_err());
    }
}
