//! Building keys and X.509 certificates with openssl, and reading back what a certificate says.

use std::cmp::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use openssl::asn1::{Asn1Integer, Asn1Time};
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{HasPublic, Id, PKey, PKeyRef, Private};
use openssl::rsa::Rsa;
use openssl::x509::extension::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
    SubjectKeyIdentifier,
};
use openssl::x509::{X509Builder, X509Name, X509NameBuilder, X509NameRef, X509Ref, X509};

use crate::error::OsslContext;
use crate::{CertError, San};

/// Clock skew we tolerate between the machine that issues and the one that verifies.
const BACKDATE_SECS: i64 = 5 * 60;

/// What a leaf certificate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Usage {
    Server,
    Client,
}

/// Everything a leaf certificate says about its subject.
#[derive(Debug, Clone)]
pub(crate) struct LeafProfile {
    pub cn: String,
    pub orgs: Vec<String>,
    pub usage: Usage,
    pub sans: Vec<San>,
    pub days: u32,
}

/// A fresh ECDSA P-256 key, the algorithm of every TLS key rkube generates.
pub(crate) fn generate_tls_key() -> Result<PKey<Private>, CertError> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).ossl("load the P-256 curve")?;
    let key = EcKey::generate(&group).ossl("generate an ECDSA P-256 key")?;
    PKey::from_ec_key(key).ossl("wrap an ECDSA key")
}

/// A fresh RSA 2048 key: the service-account token signing key (RS256).
pub(crate) fn generate_rsa_key() -> Result<PKey<Private>, CertError> {
    let rsa = Rsa::generate(2048).ossl("generate an RSA 2048 key")?;
    PKey::from_rsa(rsa).ossl("wrap an RSA key")
}

/// PKCS#8 PEM ("BEGIN PRIVATE KEY") of a private key.
pub(crate) fn private_key_pem(key: &PKeyRef<Private>) -> Result<String, CertError> {
    let pem = key.private_key_to_pem_pkcs8().ossl("encode a private key as PEM")?;
    Ok(String::from_utf8(pem).expect("PEM is ASCII"))
}

/// SubjectPublicKeyInfo PEM ("BEGIN PUBLIC KEY") of a key.
pub(crate) fn public_key_pem<T: HasPublic>(key: &PKeyRef<T>) -> Result<String, CertError> {
    let pem = key.public_key_to_pem().ossl("encode a public key as PEM")?;
    Ok(String::from_utf8(pem).expect("PEM is ASCII"))
}

pub(crate) fn cert_pem(cert: &X509Ref) -> Result<String, CertError> {
    let pem = cert.to_pem().ossl("encode a certificate as PEM")?;
    Ok(String::from_utf8(pem).expect("PEM is ASCII"))
}

/// A self-signed CA certificate for `key`.
pub(crate) fn self_signed_ca(
    key: &PKeyRef<Private>,
    cn: &str,
    days: u32,
) -> Result<X509, CertError> {
    const ACTION: &str = "build the CA certificate";
    let name = build_name(cn, &[])?;
    let mut b = new_builder(days)?;
    b.set_subject_name(&name).ossl(ACTION)?;
    b.set_issuer_name(&name).ossl(ACTION)?;
    b.set_pubkey(key).ossl(ACTION)?;
    b.append_extension(BasicConstraints::new().critical().ca().build().ossl(ACTION)?)
        .ossl(ACTION)?;
    let usage = KeyUsage::new().critical().key_cert_sign().crl_sign().build().ossl(ACTION)?;
    b.append_extension(usage).ossl(ACTION)?;
    let ski = SubjectKeyIdentifier::new().build(&b.x509v3_context(None, None)).ossl(ACTION)?;
    b.append_extension(ski).ossl(ACTION)?;
    b.sign(key, MessageDigest::sha256()).ossl("sign the CA certificate")?;
    Ok(b.build())
}

/// A leaf certificate for `key`, signed by the CA.
pub(crate) fn issue_leaf<T: HasPublic>(
    ca_cert: &X509Ref,
    ca_key: &PKeyRef<Private>,
    key: &PKeyRef<T>,
    profile: &LeafProfile,
) -> Result<X509, CertError> {
    let mut b = leaf_builder(Some(ca_cert), key, profile)?;
    b.sign(ca_key, MessageDigest::sha256()).ossl("sign a certificate with the CA key")?;
    Ok(b.build())
}

/// A leaf certificate signed by its own key (a kubelet's serving certificate when no CA
/// issues one, as upstream's kubelet makes).
pub(crate) fn self_signed_leaf(
    key: &PKeyRef<Private>,
    profile: &LeafProfile,
) -> Result<X509, CertError> {
    let mut b = leaf_builder(None, key, profile)?;
    b.sign(key, MessageDigest::sha256()).ossl("sign a self-signed certificate")?;
    Ok(b.build())
}

/// Everything of a leaf certificate but the signature; issued by `ca_cert`, or by itself.
fn leaf_builder<T: HasPublic>(
    ca_cert: Option<&X509Ref>,
    key: &PKeyRef<T>,
    profile: &LeafProfile,
) -> Result<X509Builder, CertError> {
    const ACTION: &str = "build a certificate";
    if profile.cn.is_empty() {
        return Err(CertError::InvalidRequest("the common name (CN) must not be empty".into()));
    }
    let mut b = new_builder(profile.days)?;
    let subject = build_name(&profile.cn, &profile.orgs)?;
    b.set_subject_name(&subject).ossl(ACTION)?;
    b.set_issuer_name(ca_cert.map_or(subject.as_ref(), |ca| ca.subject_name())).ossl(ACTION)?;
    b.set_pubkey(key).ossl(ACTION)?;
    b.append_extension(BasicConstraints::new().critical().build().ossl(ACTION)?).ossl(ACTION)?;
    let mut usage = KeyUsage::new();
    usage.critical().digital_signature();
    if key.id() == Id::RSA {
        // RSA key exchange (TLS 1.2 without forward secrecy) encrypts with the key.
        usage.key_encipherment();
    }
    b.append_extension(usage.build().ossl(ACTION)?).ossl(ACTION)?;
    let mut eku = ExtendedKeyUsage::new();
    match profile.usage {
        Usage::Server => eku.server_auth(),
        Usage::Client => eku.client_auth(),
    };
    b.append_extension(eku.build().ossl(ACTION)?).ossl(ACTION)?;
    let ski = SubjectKeyIdentifier::new().build(&b.x509v3_context(ca_cert, None)).ossl(ACTION)?;
    b.append_extension(ski).ossl(ACTION)?;
    if let Some(ca_cert) = ca_cert {
        let aki = authority_key_id(&b, ca_cert)?;
        b.append_extension(aki).ossl(ACTION)?;
    }
    if !profile.sans.is_empty() {
        let mut san = SubjectAlternativeName::new();
        for s in &profile.sans {
            match s {
                San::Ip(ip) => san.ip(&ip.to_string()),
                San::Dns(name) => san.dns(name),
            };
        }
        let ext = san.build(&b.x509v3_context(ca_cert, None)).ossl(ACTION)?;
        b.append_extension(ext).ossl(ACTION)?;
    }
    Ok(b)
}

/// A v3 certificate builder with a random serial and a validity of `days` from now.
fn new_builder(days: u32) -> Result<X509Builder, CertError> {
    if days == 0 {
        return Err(CertError::InvalidRequest("the validity must be at least one day".into()));
    }
    let now = unix_now();
    validity_builder(now - BACKDATE_SECS, now + i64::from(days) * 86_400)
}

/// Seconds since the epoch, now.
pub(crate) fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// A v3 certificate builder with a random serial, valid between two instants (Unix seconds).
pub(crate) fn validity_builder(not_before: i64, not_after: i64) -> Result<X509Builder, CertError> {
    const ACTION: &str = "start a certificate";
    let mut b = X509Builder::new().ossl(ACTION)?;
    b.set_version(2).ossl(ACTION)?;
    let serial = random_serial()?;
    b.set_serial_number(&serial).ossl(ACTION)?;
    let not_before = Asn1Time::from_unix(not_before).ossl(ACTION)?;
    let not_after = Asn1Time::from_unix(not_after).ossl(ACTION)?;
    b.set_not_before(&not_before).ossl(ACTION)?;
    b.set_not_after(&not_after).ossl(ACTION)?;
    Ok(b)
}

/// The authority key identifier of a certificate `ca_cert` issues.
pub(crate) fn authority_key_id(
    b: &X509Builder,
    ca_cert: &X509Ref,
) -> Result<openssl::x509::X509Extension, CertError> {
    AuthorityKeyIdentifier::new()
        .keyid(false)
        .build(&b.x509v3_context(Some(ca_cert), None))
        .ossl("build a certificate")
}

/// A random positive 128-bit serial number (RFC 5280 allows up to 20 octets).
fn random_serial() -> Result<Asn1Integer, CertError> {
    const ACTION: &str = "generate a serial number";
    let mut bn = BigNum::new().ossl(ACTION)?;
    bn.rand(128, MsbOption::MAYBE_ZERO, false).ossl(ACTION)?;
    if bn.num_bits() == 0 {
        // Zero is not a valid serial; one in 2^128.
        bn = BigNum::from_u32(1).ossl(ACTION)?;
    }
    bn.to_asn1_integer().ossl(ACTION)
}

/// Subject name in the order Go's crypto/x509 writes it: O before CN.
fn build_name(cn: &str, orgs: &[String]) -> Result<X509Name, CertError> {
    const ACTION: &str = "build a subject name";
    let mut b = X509NameBuilder::new().ossl(ACTION)?;
    for org in orgs {
        b.append_entry_by_nid(Nid::ORGANIZATIONNAME, org).ossl(ACTION)?;
    }
    b.append_entry_by_nid(Nid::COMMONNAME, cn).ossl(ACTION)?;
    Ok(b.build())
}

/// All values of one attribute (CN, O, ...) of a name, as text.
pub(crate) fn name_entries(name: &X509NameRef, nid: Nid) -> Vec<String> {
    name.entries_by_nid(nid).filter_map(|e| e.data().to_string().ok()).collect()
}

/// The subject alternative names in a certificate.
pub(crate) fn cert_sans(cert: &X509Ref) -> Vec<San> {
    let Some(names) = cert.subject_alt_names() else { return Vec::new() };
    names
        .iter()
        .filter_map(|gn| {
            if let Some(dns) = gn.dnsname() {
                return Some(San::Dns(dns.to_ascii_lowercase()));
            }
            match gn.ipaddress()? {
                b if b.len() == 4 => Some(San::Ip(<[u8; 4]>::try_from(b).ok()?.into())),
                b if b.len() == 16 => Some(San::Ip(<[u8; 16]>::try_from(b).ok()?.into())),
                _ => None,
            }
        })
        .collect()
}

/// True when the certificate is no longer valid `days` days from now.
pub(crate) fn expires_within(cert: &X509Ref, days: u32) -> Result<bool, CertError> {
    let limit = Asn1Time::days_from_now(days).ossl("compute a date")?;
    Ok(cert.not_after().compare(&limit).ossl("compare dates")? == Ordering::Less)
}

/// True when `cert` was signed by `ca` (names match and the signature verifies).
pub(crate) fn issued_by(ca: &X509Ref, cert: &X509Ref) -> Result<bool, CertError> {
    if ca.issued(cert) != openssl::x509::X509VerifyResult::OK {
        return Ok(false);
    }
    let ca_key = ca.public_key().ossl("read the CA public key")?;
    // A signature that fails to verify leaves an error on the stack; treat it as "no".
    Ok(cert.verify(&ca_key).unwrap_or(false))
}
