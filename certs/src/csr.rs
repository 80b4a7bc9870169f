//! Certificate signing requests: reading a PKCS#10 request (`CERTIFICATE REQUEST` PEM) as
//! upstream's `ParseCSR` and Go's `x509.CertificateRequest` read it (subject, subject
//! alternative names), and a CA that signs them ([`Signer`]) as kube-controller-manager's
//! local signer does: the request's subject, names and key, the usages the
//! CertificateSigningRequest asks for, a validity backdated by five minutes and never past
//! the CA's own. The X.509 building blocks are [`crate::issue`]'s, shared with the PKI.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use openssl::asn1::Asn1Time;
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::{
    BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
};
use openssl::x509::{X509Builder, X509Req, X509};

use crate::error::OsslContext;
use crate::issue::{self, name_entries};
use crate::CertError;

/// How far back a signed certificate's validity starts (clock skew), as upstream's signer.
const BACKDATE_SECS: i64 = 5 * 60;
/// Below this validity the end is not backdated too (upstream's "short" certificates).
const SHORT_SECS: i64 = 8 * 3600;

/// A parsed certificate signing request.
pub struct CertificateRequest {
    req: X509Req,
    /// The subject's CN (the user name it asks to be).
    pub common_name: String,
    /// The subject's O entries (the groups).
    pub organizations: Vec<String>,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<IpAddr>,
    pub email_addresses: Vec<String>,
    pub uris: Vec<String>,
}

impl std::fmt::Debug for CertificateRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateRequest")
            .field("common_name", &self.common_name)
            .field("organizations", &self.organizations)
            .finish_non_exhaustive()
    }
}

/// Reads the first PEM block of `pem`, which must be a CERTIFICATE REQUEST (upstream's
/// `ParseCSR`; as there, the request's own signature is checked when it is signed, not here).
pub fn parse_request(pem: &[u8]) -> Result<CertificateRequest, CertError> {
    let not_request =
        || CertError::InvalidRequest("PEM block type must be CERTIFICATE REQUEST".into());
    let text = std::str::from_utf8(pem).map_err(|_| not_request())?;
    let begin = "-----BEGIN ";
    let start = text.find(begin).ok_or_else(not_request)?;
    if !text[start + begin.len()..].starts_with("CERTIFICATE REQUEST-----") {
        return Err(not_request());
    }
    let req = X509Req::from_pem(&pem[start..]).map_err(|e| {
        CertError::InvalidRequest(format!("x509: malformed certificate request: {e}"))
    })?;
    let subject = req.subject_name();
    let mut parsed = CertificateRequest {
        common_name: name_entries(subject, Nid::COMMONNAME).into_iter().next().unwrap_or_default(),
        organizations: name_entries(subject, Nid::ORGANIZATIONNAME),
        dns_names: Vec::new(),
        ip_addresses: Vec::new(),
        email_addresses: Vec::new(),
        uris: Vec::new(),
        req,
    };
    read_alt_names(&mut parsed)?;
    Ok(parsed)
}

/// The request's subject alternative names. rust-openssl reads them only from a certificate,
/// so the request's extensions are put on a throwaway (unsigned) one to be read back.
fn read_alt_names(parsed: &mut CertificateRequest) -> Result<(), CertError> {
    const ACTION: &str = "read a certificate request's extensions";
    let Ok(extensions) = parsed.req.extensions() else { return Ok(()) };
    let mut b = X509Builder::new().ossl(ACTION)?;
    for ext in extensions {
        b.append_extension(ext).ossl(ACTION)?;
    }
    let Some(names) = b.build().subject_alt_names() else { return Ok(()) };
    for name in names.iter() {
        if let Some(dns) = name.dnsname() {
            parsed.dns_names.push(dns.to_string());
        } else if let Some(email) = name.email() {
            parsed.email_addresses.push(email.to_string());
        } else if let Some(uri) = name.uri() {
            parsed.uris.push(uri.to_string());
        } else if let Some(ip) = name.ipaddress() {
            match ip.len() {
                4 => parsed.ip_addresses.push(<[u8; 4]>::try_from(ip).expect("4").into()),
                16 => parsed.ip_addresses.push(<[u8; 16]>::try_from(ip).expect("16").into()),
                _ => {}
            }
        }
    }
    Ok(())
}

/// When the first certificate of `pem` stops being valid (Unix seconds).
pub fn certificate_not_after(pem: &[u8]) -> Result<i64, CertError> {
    const ACTION: &str = "read a certificate";
    let cert = X509::from_pem(pem).ossl(ACTION)?;
    let epoch = Asn1Time::from_unix(0).ossl(ACTION)?;
    let end = epoch.diff(cert.not_after()).ossl(ACTION)?;
    Ok(i64::from(end.days) * 86_400 + i64::from(end.secs))
}

/// A CA that signs certificate requests (kube-controller-manager's
/// `--cluster-signing-cert-file` and `--cluster-signing-key-file`).
pub struct Signer {
    cert: X509,
    key: PKey<Private>,
}

impl Signer {
    /// The CA from its PEM certificate and key.
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Signer, CertError> {
        let cert = X509::from_pem(cert_pem).ossl("read the signing CA certificate")?;
        let key = PKey::private_key_from_pem(key_pem).ossl("read the signing CA key")?;
        if !cert.public_key().ossl("read the signing CA certificate")?.public_eq(&key) {
            return Err(CertError::InvalidRequest(
                "the signing key does not belong to the signing certificate".into(),
            ));
        }
        Ok(Signer { cert, key })
    }

    /// The CA from its files.
    pub fn load(cert_file: &Path, key_file: &Path) -> Result<Signer, CertError> {
        let read = |path: &Path| {
            std::fs::read(path).map_err(|source| CertError::Io {
                action: "read",
                path: path.to_path_buf(),
                source,
            })
        };
        Signer::from_pem(&read(cert_file)?, &read(key_file)?)
    }

    /// A certificate (PEM) for `req` with `usages` (upstream's key usage names), valid for
    /// `ttl` from five minutes ago (from now, for certificates shorter than eight hours,
    /// else ending five minutes early), and never after the CA itself.
    pub fn sign(
        &self,
        req: &CertificateRequest,
        usages: &[String],
        ttl: Duration,
    ) -> Result<String, CertError> {
        const ACTION: &str = "sign a certificate request";
        let key = req.req.public_key().ossl(ACTION)?;
        if !req.req.verify(&key).unwrap_or(false) {
            return Err(CertError::InvalidRequest(
                "unable to verify certificate request signature".into(),
            ));
        }
        let (key_usage, extended) = key_usages(usages)?;
        let now = issue::unix_now();
        let ttl = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX / 2);
        let mut not_after = if ttl < SHORT_SECS { now + ttl } else { now + ttl - BACKDATE_SECS };
        let ca_end = certificate_not_after(&self.cert.to_pem().ossl(ACTION)?)?;
        not_after = not_after.min(ca_end);
        let mut b = issue::validity_builder(now - BACKDATE_SECS, not_after)?;
        b.set_subject_name(req.req.subject_name()).ossl(ACTION)?;
        b.set_issuer_name(self.cert.subject_name()).ossl(ACTION)?;
        b.set_pubkey(&key).ossl(ACTION)?;
        b.append_extension(BasicConstraints::new().critical().build().ossl(ACTION)?)
            .ossl(ACTION)?;
        if let Some(ku) = key_usage {
            b.append_extension(ku).ossl(ACTION)?;
        }
        if let Some(eku) = extended {
            b.append_extension(eku).ossl(ACTION)?;
        }
        let aki = issue::authority_key_id(&b, &self.cert)?;
        b.append_extension(aki).ossl(ACTION)?;
        let names = req.dns_names.len()
            + req.ip_addresses.len()
            + req.email_addresses.len()
            + req.uris.len();
        if names > 0 {
            let mut san = SubjectAlternativeName::new();
            for n in &req.dns_names {
                san.dns(n);
            }
            for ip in &req.ip_addresses {
                san.ip(&ip.to_string());
            }
            for e in &req.email_addresses {
                san.email(e);
            }
            for u in &req.uris {
                san.uri(u);
            }
            let ext = san.build(&b.x509v3_context(Some(&self.cert), None)).ossl(ACTION)?;
            b.append_extension(ext).ossl(ACTION)?;
        }
        b.sign(&self.key, MessageDigest::sha256()).ossl(ACTION)?;
        let pem = b.build().to_pem().ossl(ACTION)?;
        Ok(String::from_utf8(pem).expect("PEM is ASCII"))
    }
}

/// The keyUsage and extendedKeyUsage extensions of upstream's usage names (as its
/// `keyUsagesFromStrings`; unknown names are an error).
fn key_usages(
    usages: &[String],
) -> Result<(Option<openssl::x509::X509Extension>, Option<openssl::x509::X509Extension>), CertError>
{
    const ACTION: &str = "build key usages";
    let (mut ku, mut has_ku) = (KeyUsage::new(), false);
    let (mut eku, mut has_eku) = (ExtendedKeyUsage::new(), false);
    ku.critical();
    let mut unknown = Vec::new();
    for usage in usages {
        let mut key = |f: fn(&mut KeyUsage) -> &mut KeyUsage| {
            f(&mut ku);
            has_ku = true;
        };
        match usage.as_str() {
            "signing" | "digital signature" => key(KeyUsage::digital_signature),
            "content commitment" => key(KeyUsage::non_repudiation),
            "key encipherment" => key(KeyUsage::key_encipherment),
            "key agreement" => key(KeyUsage::key_agreement),
            "data encipherment" => key(KeyUsage::data_encipherment),
            "cert sign" => key(KeyUsage::key_cert_sign),
            "crl sign" => key(KeyUsage::crl_sign),
            "encipher only" => key(KeyUsage::encipher_only),
            "decipher only" => key(KeyUsage::decipher_only),
            other => {
                let name = match other {
                    "any" => "anyExtendedKeyUsage",
                    "server auth" => "serverAuth",
                    "client auth" => "clientAuth",
                    "code signing" => "codeSigning",
                    "email protection" | "s/mime" => "emailProtection",
                    "ipsec end system" => "ipsecEndSystem",
                    "ipsec tunnel" => "ipsecTunnel",
                    "ipsec user" => "ipsecUser",
                    "timestamping" => "timeStamping",
                    "ocsp signing" => "OCSPSigning",
                    "microsoft sgc" => "msSGC",
                    "netscape sgc" => "nsSGC",
                    _ => {
                        unknown.push(format!("{other:?}"));
                        continue;
                    }
                };
                eku.other(name);
                has_eku = true;
            }
        }
    }
    if !unknown.is_empty() {
        return Err(CertError::InvalidRequest(format!(
            "unrecognized usage values: [{}]",
            unknown.join(" ")
        )));
    }
    let ku = if has_ku { Some(ku.build().ossl(ACTION)?) } else { None };
    let eku = if has_eku { Some(eku.build().ossl(ACTION)?) } else { None };
    Ok((ku, eku))
}

#[cfg(test)]
mod tests {
    use super::*;
    use openssl::ec::{EcGroup, EcKey};
    use openssl::stack::Stack;
    use openssl::x509::X509NameBuilder;

    fn request(cn: &str, orgs: &[&str], dns: &[&str]) -> (Vec<u8>, PKey<Private>) {
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
        let key = PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap();
        let mut name = X509NameBuilder::new().unwrap();
        for o in orgs {
            name.append_entry_by_nid(Nid::ORGANIZATIONNAME, o).unwrap();
        }
        name.append_entry_by_nid(Nid::COMMONNAME, cn).unwrap();
        let mut b = X509Req::builder().unwrap();
        b.set_subject_name(&name.build()).unwrap();
        b.set_pubkey(&key).unwrap();
        if !dns.is_empty() {
            let mut san = SubjectAlternativeName::new();
            for d in dns {
                san.dns(d);
            }
            san.ip("10.0.0.1");
            let mut exts = Stack::new().unwrap();
            exts.push(san.build(&b.x509v3_context(None)).unwrap()).unwrap();
            b.add_extensions(&exts).unwrap();
        }
        b.sign(&key, MessageDigest::sha256()).unwrap();
        (b.build().to_pem().unwrap(), key)
    }

    fn ca() -> Signer {
        let key = issue::generate_tls_key().unwrap();
        let cert = issue::self_signed_ca(&key, "test-ca", 3650).unwrap();
        Signer { cert, key }
    }

    #[test]
    fn requests_are_read_as_go_reads_them() {
        let (pem, _) = request("system:node:n1", &["system:nodes"], &["n1.example"]);
        let req = parse_request(&pem).unwrap();
        assert_eq!(req.common_name, "system:node:n1");
        assert_eq!(req.organizations, ["system:nodes"]);
        assert_eq!(req.dns_names, ["n1.example"]);
        assert_eq!(req.ip_addresses, ["10.0.0.1".parse::<IpAddr>().unwrap()]);
        let e = parse_request(b"-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid certificate request: PEM block type must be CERTIFICATE REQUEST"
        );
    }

    #[test]
    fn signed_certificates_carry_the_request_usages_and_validity() {
        let (pem, key) = request("alice", &["devs", "ops"], &[]);
        let req = parse_request(&pem).unwrap();
        let usages = vec!["client auth".to_string(), "digital signature".to_string()];
        let signer = ca();
        let cert = signer.sign(&req, &usages, Duration::from_secs(600)).unwrap();
        let cert = X509::from_pem(cert.as_bytes()).unwrap();
        assert!(cert.public_key().unwrap().public_eq(&key));
        assert!(issue::issued_by(&signer.cert, &cert).unwrap());
        assert_eq!(name_entries(cert.subject_name(), Nid::ORGANIZATIONNAME), ["devs", "ops"]);
        let life = cert.not_before().diff(cert.not_after()).unwrap();
        assert_eq!(i64::from(life.days) * 86_400 + i64::from(life.secs), 900);
        let long = signer.sign(&req, &usages, Duration::from_secs(86_400)).unwrap();
        let long = X509::from_pem(long.as_bytes()).unwrap();
        let life = long.not_before().diff(long.not_after()).unwrap();
        assert_eq!((life.days, life.secs), (1, 0));
        let e = signer.sign(&req, &["flying".to_string()], Duration::from_secs(600)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid certificate request: unrecognized usage values: [\"flying\"]"
        );
    }
}
