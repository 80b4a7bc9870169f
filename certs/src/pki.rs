//! The cluster PKI: load what is on disk, create what is missing, re-issue what is stale.
//!
//! [`Pki::load_or_create`] is the entry point; the rules it follows are on that function.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use openssl::nid::Nid;
use openssl::pkey::{Id, PKey, Private, Public};
use openssl::x509::X509;

use crate::error::{short_reason, OsslContext};
use crate::fsutil::{self, PUBLIC_MODE, SECRET_MODE};
use crate::issue::{self, LeafProfile, Usage};
use crate::kubeconfig::KubeconfigSpec;
use crate::{CertError, San};

/// File names inside the PKI directory (the names kubeadm uses for the same material).
pub mod files {
    /// The cluster CA certificate: what every client and kubelet trusts.
    pub const CA_CERT: &str = "ca.crt";
    /// The cluster CA private key: whoever holds it can mint any identity.
    pub const CA_KEY: &str = "ca.key";
    /// The API server's serving certificate.
    pub const APISERVER_CERT: &str = "apiserver.crt";
    pub const APISERVER_KEY: &str = "apiserver.key";
    /// The cluster administrator's client certificate (`system:admin`, `system:masters`).
    pub const ADMIN_CERT: &str = "admin.crt";
    pub const ADMIN_KEY: &str = "admin.key";
    /// The client certificate the API server presents to kubelets.
    pub const KUBELET_CLIENT_CERT: &str = "apiserver-kubelet-client.crt";
    pub const KUBELET_CLIENT_KEY: &str = "apiserver-kubelet-client.key";
    /// The service-account token signing key (RSA, PKCS#8 PEM) and its public key (SPKI PEM).
    pub const SA_KEY: &str = "sa.key";
    pub const SA_PUB: &str = "sa.pub";
    /// The front-proxy CA: a CA of its own that signs only the client certificate the API
    /// server presents to aggregated API servers (extension servers trust it for the
    /// `X-Remote-*` headers, so it must not sign anything else).
    pub const FRONT_PROXY_CA_CERT: &str = "front-proxy-ca.crt";
    pub const FRONT_PROXY_CA_KEY: &str = "front-proxy-ca.key";
    /// The API server's client certificate towards aggregated API servers.
    pub const FRONT_PROXY_CLIENT_CERT: &str = "front-proxy-client.crt";
    pub const FRONT_PROXY_CLIENT_KEY: &str = "front-proxy-client.key";

    /// Every file, in the order they are created.
    pub const ALL: [&str; 14] = [
        CA_KEY,
        CA_CERT,
        APISERVER_KEY,
        APISERVER_CERT,
        ADMIN_KEY,
        ADMIN_CERT,
        KUBELET_CLIENT_KEY,
        KUBELET_CLIENT_CERT,
        SA_KEY,
        SA_PUB,
        FRONT_PROXY_CA_KEY,
        FRONT_PROXY_CA_CERT,
        FRONT_PROXY_CLIENT_KEY,
        FRONT_PROXY_CLIENT_CERT,
    ];
}

/// Validity of the CA certificate.
pub const CA_VALIDITY_DAYS: u32 = 3650;
/// Validity of the serving and client certificates this crate issues on its own.
pub const LEAF_VALIDITY_DAYS: u32 = 365;
/// A leaf certificate that expires within this many days is re-issued at the next start.
pub const RENEW_BEFORE_DAYS: u32 = 30;

/// Common name of the cluster CA.
pub const CA_COMMON_NAME: &str = "rkube-ca";
/// Common name of the API server's serving certificate.
pub const APISERVER_COMMON_NAME: &str = "kube-apiserver";
/// User name of the administrator's client certificate.
pub const ADMIN_USER: &str = "system:admin";
/// User name of the API server's client certificate towards kubelets.
pub const KUBELET_CLIENT_USER: &str = "kube-apiserver-kubelet-client";
/// Common name of the front-proxy CA.
pub const FRONT_PROXY_CA_COMMON_NAME: &str = "rkube-front-proxy-ca";
/// User name of the API server's front-proxy client certificate: the one name extension
/// servers accept request headers from (`requestheader-allowed-names`).
pub const FRONT_PROXY_CLIENT_USER: &str = "front-proxy-client";
/// The group that RBAC lets do everything.
pub const MASTERS_GROUP: &str = "system:masters";

/// Where the PKI lives and what the API server's serving certificate must cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PkiOptions {
    /// The PKI directory, e.g. `DATA_DIR/pki`. Created with mode 0700 if missing.
    pub dir: PathBuf,
    /// The first IP of the service CIDR: the ClusterIP of the `kubernetes` Service.
    pub service_ip: IpAddr,
    /// More names for the serving certificate: each an IP address if it parses as one, else a
    /// DNS name (node IPs, the hostname, a load balancer name, ...).
    pub extra_sans: Vec<String>,
    /// The cluster DNS domain, `cluster.local` by default.
    pub cluster_domain: String,
}

impl PkiOptions {
    /// Options with the defaults (service IP 10.43.0.1, domain `cluster.local`, no extra SANs).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        PkiOptions {
            dir: dir.into(),
            service_ip: IpAddr::V4(Ipv4Addr::new(10, 43, 0, 1)),
            extra_sans: Vec::new(),
            cluster_domain: "cluster.local".to_owned(),
        }
    }

    /// Every subject alternative name the API server's serving certificate must carry:
    /// loopback, the service IP, the in-cluster names of the `kubernetes` Service, then the
    /// extra SANs. Without duplicates, in that order.
    pub fn apiserver_sans(&self) -> Result<Vec<San>, CertError> {
        let domain = match San::parse(&self.cluster_domain)? {
            San::Dns(d) if !d.starts_with('*') => d,
            _ => {
                return Err(CertError::InvalidSan {
                    name: self.cluster_domain.clone(),
                    reason: "the cluster domain must be a DNS name such as cluster.local".into(),
                })
            }
        };
        let mut sans = vec![
            San::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            San::Ip(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)),
            San::Ip(self.service_ip),
            San::Dns("localhost".into()),
            San::Dns("kubernetes".into()),
            San::Dns("kubernetes.default".into()),
            San::Dns("kubernetes.default.svc".into()),
            San::Dns(format!("kubernetes.default.svc.{domain}")),
        ];
        for extra in &self.extra_sans {
            sans.push(San::parse(extra)?);
        }
        let mut seen = std::collections::HashSet::new();
        sans.retain(|s| seen.insert(s.clone()));
        Ok(sans)
    }
}

/// A certificate and its private key, both PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct CertKeyPair {
    pub cert_pem: String,
    /// PKCS#8 PEM (`BEGIN PRIVATE KEY`).
    pub key_pem: String,
}

impl fmt::Debug for CertKeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertKeyPair")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// The cluster PKI, loaded from (and kept in) its directory. See the crate docs for the files.
#[derive(Clone)]
pub struct Pki {
    dir: PathBuf,
    ca_cert: X509,
    ca_key: PKey<Private>,
    ca_cert_pem: String,
    apiserver: CertKeyPair,
    admin: CertKeyPair,
    kubelet_client: CertKeyPair,
    front_proxy_ca_cert_pem: String,
    front_proxy_client: CertKeyPair,
    sa_private_key_pem: String,
    sa_public_key_pem: String,
    changes: Vec<String>,
}

impl fmt::Debug for Pki {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pki").field("dir", &self.dir).field("changes", &self.changes).finish()
    }
}

impl Pki {
    /// Loads the PKI from `opts.dir`, creating or repairing what needs it.
    ///
    /// - No directory: everything is generated in a temp directory next to it, which is then
    ///   renamed into place, so a crash never leaves half a PKI behind.
    /// - Otherwise every file is loaded and returned exactly as stored. What is missing is
    ///   created from the existing CA. A leaf certificate is re-issued from the CA (keeping
    ///   its key) when it expires within [`RENEW_BEFORE_DAYS`], lacks a required SAN (new
    ///   `extra_sans`), names the wrong subject, was not issued by this CA or does not match
    ///   its key file. The CA itself is never replaced.
    /// - A file that cannot be parsed is an error naming it; it is never overwritten. So is a
    ///   missing `ca.key` (next to `ca.crt`), or a missing CA next to issued certificates, or
    ///   a missing `sa.key` next to `sa.pub`.
    ///
    /// [`Pki::changes`] says what was written.
    pub fn load_or_create(opts: &PkiOptions) -> Result<Pki, CertError> {
        let sans = opts.apiserver_sans()?;
        match std::fs::metadata(&opts.dir) {
            Ok(meta) if meta.is_dir() => load_in(&opts.dir, &sans),
            Ok(_) => Err(CertError::InvalidFile {
                path: opts.dir.clone(),
                problem: "exists but is not a directory".into(),
                remedy: "move it away or choose another data directory".into(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create_fresh(&opts.dir, &sans),
            Err(e) => Err(fsutil::io_err("inspect", &opts.dir)(e)),
        }
    }

    /// The PKI directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of one of the [`files`] in the PKI directory.
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// What this call of [`Pki::load_or_create`] wrote, one line per action, for the startup
    /// log. Empty when everything was loaded as it was.
    pub fn changes(&self) -> &[String] {
        &self.changes
    }

    /// The CA certificate (PEM): the trust anchor for clients and kubelets.
    pub fn ca_cert_pem(&self) -> &str {
        &self.ca_cert_pem
    }

    /// The API server's serving certificate and key.
    pub fn apiserver(&self) -> &CertKeyPair {
        &self.apiserver
    }

    /// The administrator's client certificate and key (`system:admin` in `system:masters`).
    pub fn admin(&self) -> &CertKeyPair {
        &self.admin
    }

    /// The client certificate and key the API server presents to kubelets.
    pub fn kubelet_client(&self) -> &CertKeyPair {
        &self.kubelet_client
    }

    /// The front-proxy CA certificate (PEM): what aggregated API servers verify the API
    /// server's client certificate with (`requestheader-client-ca-file`).
    pub fn front_proxy_ca_cert_pem(&self) -> &str {
        &self.front_proxy_ca_cert_pem
    }

    /// The client certificate and key the API server presents to aggregated API servers
    /// (CN `front-proxy-client`, signed by the front-proxy CA).
    pub fn front_proxy_client(&self) -> &CertKeyPair {
        &self.front_proxy_client
    }

    /// The service-account signing key: RSA 2048, PKCS#8 PEM, for RS256 tokens.
    pub fn sa_private_key_pem(&self) -> &str {
        &self.sa_private_key_pem
    }

    /// The service-account verification key: SPKI PEM (`BEGIN PUBLIC KEY`).
    pub fn sa_public_key_pem(&self) -> &str {
        &self.sa_public_key_pem
    }

    /// Issues a client certificate (clientAuth) with a fresh ECDSA P-256 key. `cn` is the user
    /// name and `orgs` the groups, as the API server's x509 authenticator reads them (e.g.
    /// `system:node:NAME` in `system:nodes`). Nothing is written to disk.
    pub fn issue_client_cert<S: AsRef<str>>(
        &self,
        cn: &str,
        orgs: &[S],
        days: u32,
    ) -> Result<CertKeyPair, CertError> {
        let orgs = orgs.iter().map(|o| o.as_ref().to_owned()).collect();
        self.issue(&LeafProfile {
            cn: cn.to_owned(),
            orgs,
            usage: Usage::Client,
            sans: vec![],
            days,
        })
    }

    /// Issues a serving certificate (serverAuth) with a fresh ECDSA P-256 key for the given
    /// SANs (each an IP if it parses as one, else a DNS name; at least one). Nothing is
    /// written to disk.
    pub fn issue_serving_cert<S: AsRef<str>>(
        &self,
        cn: &str,
        sans: &[S],
        days: u32,
    ) -> Result<CertKeyPair, CertError> {
        if sans.is_empty() {
            return Err(CertError::InvalidRequest(
                "a serving certificate needs at least one subject alternative name".into(),
            ));
        }
        let sans = sans.iter().map(|s| San::parse(s.as_ref())).collect::<Result<_, _>>()?;
        self.issue(&LeafProfile {
            cn: cn.to_owned(),
            orgs: vec![],
            usage: Usage::Server,
            sans,
            days,
        })
    }

    /// A serving certificate signed by its own fresh key, for a component that has no CA to
    /// ask (a kubelet without a serving certificate, as upstream's makes at start). Names as
    /// in [`Pki::issue_serving_cert`].
    pub fn self_signed_serving_cert<S: AsRef<str>>(
        cn: &str,
        sans: &[S],
        days: u32,
    ) -> Result<CertKeyPair, CertError> {
        let sans = sans.iter().map(|s| San::parse(s.as_ref())).collect::<Result<_, _>>()?;
        let profile =
            LeafProfile { cn: cn.to_owned(), orgs: vec![], usage: Usage::Server, sans, days };
        let key = issue::generate_tls_key()?;
        let cert = issue::self_signed_leaf(&key, &profile)?;
        Ok(CertKeyPair {
            cert_pem: issue::cert_pem(&cert)?,
            key_pem: issue::private_key_pem(&key)?,
        })
    }

    fn issue(&self, profile: &LeafProfile) -> Result<CertKeyPair, CertError> {
        let key = issue::generate_tls_key()?;
        let cert = issue::issue_leaf(&self.ca_cert, &self.ca_key, &key, profile)?;
        Ok(CertKeyPair {
            cert_pem: issue::cert_pem(&cert)?,
            key_pem: issue::private_key_pem(&key)?,
        })
    }

    /// A kubeconfig for the administrator against `server_url` (cluster, user and context
    /// names as in [`KubeconfigSpec::admin`]).
    pub fn admin_kubeconfig(&self, server_url: &str) -> KubeconfigSpec {
        KubeconfigSpec::admin(server_url, &self.ca_cert_pem, &self.admin)
    }
}

/// The CA as loaded: the certificate (parsed and as stored) and its key.
struct Ca {
    cert: X509,
    key: PKey<Private>,
    cert_pem: String,
    /// What it is called in messages, and its certificate file.
    what: &'static str,
    cert_file: &'static str,
}

/// One leaf certificate the PKI keeps on disk.
struct Leaf {
    cert_file: &'static str,
    key_file: &'static str,
    profile: LeafProfile,
}

fn leaves(sans: &[San]) -> [Leaf; 3] {
    let masters = vec![MASTERS_GROUP.to_owned()];
    [
        Leaf {
            cert_file: files::APISERVER_CERT,
            key_file: files::APISERVER_KEY,
            profile: LeafProfile {
                cn: APISERVER_COMMON_NAME.into(),
                orgs: vec![],
                usage: Usage::Server,
                sans: sans.to_vec(),
                days: LEAF_VALIDITY_DAYS,
            },
        },
        Leaf {
            cert_file: files::ADMIN_CERT,
            key_file: files::ADMIN_KEY,
            profile: LeafProfile {
                cn: ADMIN_USER.into(),
                orgs: masters,
                usage: Usage::Client,
                sans: vec![],
                days: LEAF_VALIDITY_DAYS,
            },
        },
        Leaf {
            cert_file: files::KUBELET_CLIENT_CERT,
            key_file: files::KUBELET_CLIENT_KEY,
            profile: LeafProfile {
                cn: KUBELET_CLIENT_USER.into(),
                // Not system:masters: RBAC gives it system:kubelet-api-admin, as k3s does.
                orgs: vec![],
                usage: Usage::Client,
                sans: vec![],
                days: LEAF_VALIDITY_DAYS,
            },
        },
    ]
}

/// The one leaf the front-proxy CA signs.
fn front_proxy_leaf() -> Leaf {
    Leaf {
        cert_file: files::FRONT_PROXY_CLIENT_CERT,
        key_file: files::FRONT_PROXY_CLIENT_KEY,
        profile: LeafProfile {
            cn: FRONT_PROXY_CLIENT_USER.into(),
            orgs: vec![],
            usage: Usage::Client,
            sans: vec![],
            days: LEAF_VALIDITY_DAYS,
        },
    }
}

/// A CA the PKI keeps: its files, its name and the leaves it signs.
struct CaFiles {
    cert_file: &'static str,
    key_file: &'static str,
    cn: &'static str,
    what: &'static str,
    leaves: Vec<Leaf>,
}

fn cluster_ca() -> CaFiles {
    CaFiles {
        cert_file: files::CA_CERT,
        key_file: files::CA_KEY,
        cn: CA_COMMON_NAME,
        what: "cluster CA",
        leaves: leaves(&[]).into(),
    }
}

fn front_proxy_ca() -> CaFiles {
    CaFiles {
        cert_file: files::FRONT_PROXY_CA_CERT,
        key_file: files::FRONT_PROXY_CA_KEY,
        cn: FRONT_PROXY_CA_COMMON_NAME,
        what: "front-proxy CA",
        leaves: vec![front_proxy_leaf()],
    }
}

/// First start: build everything in a private temp directory, then rename it into place.
fn create_fresh(dir: &Path, sans: &[San]) -> Result<Pki, CertError> {
    let parent = fsutil::parent_dir(dir);
    std::fs::create_dir_all(&parent).map_err(fsutil::io_err("create directory", &parent))?;
    let tmp = fsutil::temp_sibling(dir)?;
    fsutil::create_private_dir(&tmp)?;
    let result = load_in(&tmp, sans).and_then(|pki| {
        std::fs::rename(&tmp, dir).map_err(fsutil::io_err("create", dir))?;
        fsutil::sync_dir(&parent)?;
        Ok(pki)
    });
    match result {
        Ok(mut pki) => {
            pki.dir = dir.to_path_buf();
            pki.changes = vec![format!(
                "generated a new cluster PKI in {} (CA, API server, admin and kubelet-client \
                 certificates, service-account key, front-proxy CA and client certificate)",
                dir.display()
            )];
            Ok(pki)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(e)
        }
    }
}

fn load_in(dir: &Path, sans: &[San]) -> Result<Pki, CertError> {
    let mut changes = Vec::new();
    let ca = load_or_create_ca(dir, &cluster_ca(), &mut changes)?;
    let [apiserver, admin, kubelet_client] = leaves(sans);
    let apiserver = ensure_leaf(dir, &ca, &apiserver, &mut changes)?;
    let admin = ensure_leaf(dir, &ca, &admin, &mut changes)?;
    let kubelet_client = ensure_leaf(dir, &ca, &kubelet_client, &mut changes)?;
    let (sa_private_key_pem, sa_public_key_pem) = ensure_sa_keys(dir, &mut changes)?;
    // Added after the first PKIs were made: an older directory gets these on its next start.
    let front_proxy = load_or_create_ca(dir, &front_proxy_ca(), &mut changes)?;
    let front_proxy_client = ensure_leaf(dir, &front_proxy, &front_proxy_leaf(), &mut changes)?;
    Ok(Pki {
        dir: dir.to_path_buf(),
        ca_cert: ca.cert,
        ca_key: ca.key,
        ca_cert_pem: ca.cert_pem,
        apiserver,
        admin,
        kubelet_client,
        front_proxy_ca_cert_pem: front_proxy.cert_pem,
        front_proxy_client,
        sa_private_key_pem,
        sa_public_key_pem,
        changes,
    })
}

fn regenerate_all(dir: &Path) -> String {
    format!(
        "delete {} to regenerate the cluster PKI (all clients must then get new kubeconfigs)",
        dir.display()
    )
}

fn ca_remedy(dir: &Path) -> String {
    format!("restore it from a backup, or {}", regenerate_all(dir))
}

fn leaf_remedy(dir: &Path, leaf: &Leaf) -> String {
    format!(
        "delete {} and {} to have them re-issued from the cluster CA",
        dir.join(leaf.cert_file).display(),
        dir.join(leaf.key_file).display()
    )
}

fn sa_remedy(dir: &Path) -> String {
    format!(
        "delete {} and {} to generate a new key pair (service-account tokens signed with the old \
         key then stop working)",
        dir.join(files::SA_KEY).display(),
        dir.join(files::SA_PUB).display()
    )
}

fn invalid(path: &Path, problem: impl Into<String>, remedy: String) -> CertError {
    CertError::InvalidFile { path: path.to_path_buf(), problem: problem.into(), remedy }
}

fn into_text(path: &Path, bytes: Vec<u8>, remedy: &str) -> Result<String, CertError> {
    String::from_utf8(bytes)
        .map_err(|_| invalid(path, "contains bytes that are not text", remedy.into()))
}

/// Reads and parses a certificate; `None` if the file does not exist.
fn read_cert(path: &Path, remedy: &str) -> Result<Option<(X509, String)>, CertError> {
    let Some(bytes) = fsutil::read_optional(path)? else { return Ok(None) };
    let cert = X509::from_pem(&bytes).map_err(|e| {
        invalid(path, format!("is not a PEM certificate ({})", short_reason(&e)), remedy.into())
    })?;
    Ok(Some((cert, into_text(path, bytes, remedy)?)))
}

/// Reads and parses an unencrypted private key; `None` if the file does not exist.
fn read_private_key(
    path: &Path,
    remedy: &str,
) -> Result<Option<(PKey<Private>, String)>, CertError> {
    let Some(bytes) = fsutil::read_optional(path)? else { return Ok(None) };
    // An empty passphrase: never prompt on the terminal for an encrypted key.
    let key = PKey::private_key_from_pem_callback(&bytes, |_| Ok(0)).map_err(|e| {
        invalid(
            path,
            format!("is not an unencrypted PEM private key ({})", short_reason(&e)),
            remedy.into(),
        )
    })?;
    Ok(Some((key, into_text(path, bytes, remedy)?)))
}

fn read_public_key(path: &Path, remedy: &str) -> Result<Option<(PKey<Public>, String)>, CertError> {
    let Some(bytes) = fsutil::read_optional(path)? else { return Ok(None) };
    let key = PKey::public_key_from_pem(&bytes).map_err(|e| {
        invalid(path, format!("is not a PEM public key ({})", short_reason(&e)), remedy.into())
    })?;
    Ok(Some((key, into_text(path, bytes, remedy)?)))
}

fn load_or_create_ca(
    dir: &Path,
    files: &CaFiles,
    changes: &mut Vec<String>,
) -> Result<Ca, CertError> {
    let cert_path = dir.join(files.cert_file);
    let key_path = dir.join(files.key_file);
    let remedy = ca_remedy(dir);
    let cert = read_cert(&cert_path, &remedy)?;
    let key = read_private_key(&key_path, &remedy)?;
    match (cert, key) {
        (Some((cert, cert_pem)), Some((key, _))) => {
            let cert_key = cert.public_key().ossl("read the CA certificate's public key")?;
            if !cert_key.public_eq(&key) {
                return Err(invalid(
                    &key_path,
                    format!("is not the private key of {}", cert_path.display()),
                    remedy,
                ));
            }
            if issue::expires_within(&cert, 0)? {
                return Err(invalid(
                    &cert_path,
                    format!("the {} expired on {}", files.what, cert.not_after()),
                    regenerate_all(dir),
                ));
            }
            Ok(Ca { cert, key, cert_pem, what: files.what, cert_file: files.cert_file })
        }
        (Some(_), None) => Err(CertError::Incomplete {
            dir: dir.to_path_buf(),
            problem: format!(
                "{} exists but its private key {} is missing, so no certificate can be issued or \
                 renewed",
                cert_path.display(),
                key_path.display()
            ),
            remedy: format!("restore {} from a backup, or {}", files.key_file, regenerate_all(dir)),
        }),
        (None, Some((key, _))) => {
            // The key is the CA; a new certificate for the same key and name verifies
            // everything the lost one signed.
            let cert = issue::self_signed_ca(&key, files.cn, CA_VALIDITY_DAYS)?;
            let cert_pem = issue::cert_pem(&cert)?;
            fsutil::write_atomic(&cert_path, cert_pem.as_bytes(), PUBLIC_MODE)?;
            changes.push(format!(
                "re-created the CA certificate {} from the existing {}",
                files.cert_file, files.key_file
            ));
            Ok(Ca { cert, key, cert_pem, what: files.what, cert_file: files.cert_file })
        }
        (None, None) => {
            let mut issued = Vec::new();
            for leaf in &files.leaves {
                for file in [leaf.cert_file, leaf.key_file] {
                    if fsutil::exists(&dir.join(file))? {
                        issued.push(file);
                    }
                }
            }
            if !issued.is_empty() {
                return Err(CertError::Incomplete {
                    dir: dir.to_path_buf(),
                    problem: format!(
                        "{} and {} are missing, but {} exist (issued by that CA)",
                        files.cert_file,
                        files.key_file,
                        issued.join(", ")
                    ),
                    remedy: format!(
                        "restore {} and {} from a backup, or {}",
                        files.cert_file,
                        files.key_file,
                        regenerate_all(dir)
                    ),
                });
            }
            let key = issue::generate_tls_key()?;
            let cert = issue::self_signed_ca(&key, files.cn, CA_VALIDITY_DAYS)?;
            let cert_pem = issue::cert_pem(&cert)?;
            // Key first: a crash in between leaves a key we can rebuild the certificate from.
            fsutil::write_atomic(&key_path, issue::private_key_pem(&key)?.as_bytes(), SECRET_MODE)?;
            fsutil::write_atomic(&cert_path, cert_pem.as_bytes(), PUBLIC_MODE)?;
            changes.push(format!(
                "generated the {} ({}, {})",
                files.what, files.cert_file, files.key_file
            ));
            Ok(Ca { cert, key, cert_pem, what: files.what, cert_file: files.cert_file })
        }
    }
}

/// Why an existing leaf certificate must be re-issued; empty when it is fine.
fn stale_reasons(
    ca: &Ca,
    leaf: &Leaf,
    cert: &X509,
    key: &PKey<Private>,
) -> Result<Vec<String>, CertError> {
    let mut reasons = Vec::new();
    let cert_key = cert.public_key().ossl("read a certificate's public key")?;
    if !cert_key.public_eq(key) {
        reasons.push(format!("it did not match {}", leaf.key_file));
    }
    if !issue::issued_by(&ca.cert, cert)? {
        reasons.push(format!("it was not issued by the {} ({})", ca.what, ca.cert_file));
    }
    if issue::expires_within(cert, RENEW_BEFORE_DAYS)? {
        reasons.push(format!(
            "it expires on {} (renewed {RENEW_BEFORE_DAYS} days ahead)",
            cert.not_after()
        ));
    }
    let p = &leaf.profile;
    let cns = issue::name_entries(cert.subject_name(), Nid::COMMONNAME);
    if cns != [p.cn.as_str()] {
        reasons.push(format!("its common name was {cns:?}, not {:?}", p.cn));
    }
    let mut orgs = issue::name_entries(cert.subject_name(), Nid::ORGANIZATIONNAME);
    let mut want_orgs = p.orgs.clone();
    orgs.sort();
    want_orgs.sort();
    if orgs != want_orgs {
        reasons.push(format!("its organizations were {orgs:?}, not {want_orgs:?}"));
    }
    let have = issue::cert_sans(cert);
    let missing: Vec<String> =
        p.sans.iter().filter(|s| !have.contains(s)).map(ToString::to_string).collect();
    if !missing.is_empty() {
        reasons.push(format!("it lacked {}", missing.join(", ")));
    }
    Ok(reasons)
}

fn ensure_leaf(
    dir: &Path,
    ca: &Ca,
    leaf: &Leaf,
    changes: &mut Vec<String>,
) -> Result<CertKeyPair, CertError> {
    let cert_path = dir.join(leaf.cert_file);
    let key_path = dir.join(leaf.key_file);
    let remedy = leaf_remedy(dir, leaf);
    let cert = read_cert(&cert_path, &remedy)?;
    let key = read_private_key(&key_path, &remedy)?;
    let (key, key_pem, why) = match (cert, key) {
        (Some((cert, cert_pem)), Some((key, key_pem))) => {
            let reasons = stale_reasons(ca, leaf, &cert, &key)?;
            if reasons.is_empty() {
                return Ok(CertKeyPair { cert_pem, key_pem });
            }
            // Keep the key: only the certificate file changes, in one atomic write.
            (key, key_pem, reasons.join("; "))
        }
        (None, Some((key, key_pem))) => (key, key_pem, "it was missing".to_owned()),
        (cert, None) => {
            let key = issue::generate_tls_key()?;
            let key_pem = issue::private_key_pem(&key)?;
            fsutil::write_atomic(&key_path, key_pem.as_bytes(), SECRET_MODE)?;
            let why = match cert {
                Some(_) => format!("its key {} was missing", leaf.key_file),
                None => String::new(),
            };
            (key, key_pem, why)
        }
    };
    let cert = issue::issue_leaf(&ca.cert, &ca.key, &key, &leaf.profile)?;
    let cert_pem = issue::cert_pem(&cert)?;
    fsutil::write_atomic(&cert_path, cert_pem.as_bytes(), PUBLIC_MODE)?;
    changes.push(if why.is_empty() {
        format!("issued {} (CN {})", leaf.cert_file, leaf.profile.cn)
    } else {
        format!("re-issued {} from the {}: {why}", leaf.cert_file, ca.what)
    });
    Ok(CertKeyPair { cert_pem, key_pem })
}

fn ensure_sa_keys(dir: &Path, changes: &mut Vec<String>) -> Result<(String, String), CertError> {
    let key_path = dir.join(files::SA_KEY);
    let pub_path = dir.join(files::SA_PUB);
    let remedy = sa_remedy(dir);
    let key = read_private_key(&key_path, &remedy)?;
    if let Some((k, _)) = &key {
        if k.id() != Id::RSA {
            return Err(invalid(
                &key_path,
                "is not an RSA key (service-account tokens are signed with RS256)",
                remedy,
            ));
        }
    }
    let public = read_public_key(&pub_path, &remedy)?;
    let (key, key_pem, why) = match (key, public) {
        (Some((key, key_pem)), Some((public, pub_pem))) => {
            if key.public_eq(&public) {
                return Ok((key_pem, pub_pem));
            }
            (
                key,
                key_pem,
                format!("rewrote {} from {}: it did not match", files::SA_PUB, files::SA_KEY),
            )
        }
        (Some((key, key_pem)), None) => {
            (key, key_pem, format!("wrote the missing {} from {}", files::SA_PUB, files::SA_KEY))
        }
        (None, Some(_)) => {
            return Err(CertError::Incomplete {
                dir: dir.to_path_buf(),
                problem: format!(
                    "{} exists but the service-account signing key {} is missing",
                    pub_path.display(),
                    key_path.display()
                ),
                remedy: format!(
                    "restore {} from a backup, or delete {} to generate a new key pair \
                     (service-account tokens signed with the old key then stop working)",
                    files::SA_KEY,
                    pub_path.display()
                ),
            })
        }
        (None, None) => {
            let key = issue::generate_rsa_key()?;
            let key_pem = issue::private_key_pem(&key)?;
            fsutil::write_atomic(&key_path, key_pem.as_bytes(), SECRET_MODE)?;
            let why = format!(
                "generated the service-account signing key pair ({}, {})",
                files::SA_KEY,
                files::SA_PUB
            );
            (key, key_pem, why)
        }
    };
    let pub_pem = issue::public_key_pem(&key)?;
    fsutil::write_atomic(&pub_path, pub_pem.as_bytes(), PUBLIC_MODE)?;
    changes.push(why);
    Ok((key_pem, pub_pem))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use openssl::stack::Stack;
    use openssl::x509::store::X509StoreBuilder;
    use openssl::x509::{X509PurposeId, X509StoreContext};

    use super::*;

    fn opts(dir: &Path) -> PkiOptions {
        PkiOptions::new(dir.join("pki"))
    }

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// Verifies `cert_pem` against `ca_pem` the way a TLS peer would, for `purpose`.
    fn verifies(ca_pem: &str, cert_pem: &str, purpose: X509PurposeId) -> bool {
        let ca = X509::from_pem(ca_pem.as_bytes()).unwrap();
        let cert = X509::from_pem(cert_pem.as_bytes()).unwrap();
        let mut store = X509StoreBuilder::new().unwrap();
        store.add_cert(ca).unwrap();
        store.set_purpose(purpose).unwrap();
        let store = store.build();
        let mut ctx = X509StoreContext::new().unwrap();
        let chain = Stack::new().unwrap();
        ctx.init(&store, &cert, &chain, |c| {
            let ok = c.verify_cert()?;
            if !ok {
                eprintln!("verify failed: {}", c.error());
            }
            Ok(ok)
        })
        .unwrap()
    }

    fn parse(pem: &str) -> X509 {
        X509::from_pem(pem.as_bytes()).unwrap()
    }

    fn subject(pem: &str) -> (Vec<String>, Vec<String>) {
        let cert = parse(pem);
        (
            issue::name_entries(cert.subject_name(), Nid::COMMONNAME),
            issue::name_entries(cert.subject_name(), Nid::ORGANIZATIONNAME),
        )
    }

    fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
        files::ALL.iter().map(|f| (f.to_string(), fs::read(dir.join(f)).unwrap())).collect()
    }

    #[test]
    fn first_start_writes_a_complete_verifiable_pki() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = opts(tmp.path());
        let pki = Pki::load_or_create(&opts).unwrap();
        assert_eq!(pki.dir(), opts.dir);
        assert_eq!(pki.changes().len(), 1, "{:?}", pki.changes());

        // Files and modes.
        assert_eq!(mode(&opts.dir), 0o700);
        for file in files::ALL {
            let path = opts.dir.join(file);
            let want = if file.ends_with(".key") { 0o600 } else { 0o644 };
            assert_eq!(mode(&path), want, "{file}");
        }
        let names: Vec<_> =
            fs::read_dir(&opts.dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), files::ALL.len(), "no stray temp files: {names:?}");
        assert_eq!(fs::read_to_string(pki.path(files::CA_CERT)).unwrap(), pki.ca_cert_pem());
        assert_eq!(fs::read_to_string(pki.path(files::ADMIN_KEY)).unwrap(), pki.admin().key_pem);

        // The CA.
        let ca = parse(pki.ca_cert_pem());
        assert_eq!(subject(pki.ca_cert_pem()).0, ["rkube-ca"]);
        assert!(ca.issued(&ca) == openssl::x509::X509VerifyResult::OK, "self-signed");
        let text = String::from_utf8(ca.to_text().unwrap()).unwrap();
        assert!(text.contains("X509v3 Basic Constraints: critical"), "{text}");
        assert!(text.contains("CA:TRUE"), "{text}");
        assert!(text.contains("Certificate Sign, CRL Sign"), "{text}");
        assert!(text.contains("Public-Key: (256 bit)") && text.contains("P-256"), "{text}");
        assert!(!issue::expires_within(&ca, CA_VALIDITY_DAYS - 1).unwrap());
        assert!(issue::expires_within(&ca, CA_VALIDITY_DAYS + 1).unwrap());
        let ca_ski = ca.subject_key_id().expect("CA has a subject key id").as_slice().to_vec();

        // Leaves: verify against the CA for their purpose, with AKI = CA's SKI.
        let server = &pki.apiserver().cert_pem;
        assert!(verifies(pki.ca_cert_pem(), server, X509PurposeId::SSL_SERVER));
        assert!(!verifies(pki.ca_cert_pem(), server, X509PurposeId::SSL_CLIENT));
        for client in [&pki.admin().cert_pem, &pki.kubelet_client().cert_pem] {
            assert!(verifies(pki.ca_cert_pem(), client, X509PurposeId::SSL_CLIENT));
            assert!(!verifies(pki.ca_cert_pem(), client, X509PurposeId::SSL_SERVER));
        }
        let mut serials = vec![ca.serial_number().to_bn().unwrap()];
        for pem in [server, &pki.admin().cert_pem, &pki.kubelet_client().cert_pem] {
            let cert = parse(pem);
            assert_eq!(cert.authority_key_id().unwrap().as_slice(), ca_ski.as_slice());
            assert!(cert.subject_key_id().is_some());
            assert!(!issue::expires_within(&cert, LEAF_VALIDITY_DAYS - 1).unwrap());
            assert!(issue::expires_within(&cert, LEAF_VALIDITY_DAYS + 1).unwrap());
            let text = String::from_utf8(cert.to_text().unwrap()).unwrap();
            assert!(text.contains("CA:FALSE"), "{text}");
            serials.push(cert.serial_number().to_bn().unwrap());
        }
        for s in &serials {
            assert!(s.num_bits() > 64 && s.num_bits() <= 128, "random 128-bit serial: {s}");
        }
        serials.sort_by(|a, b| a.ucmp(b));
        serials.dedup_by(|a, b| a.ucmp(b).is_eq());
        assert_eq!(serials.len(), 4, "distinct serials");

        // Subjects and SANs.
        assert_eq!(subject(server), (vec!["kube-apiserver".to_owned()], vec![]));
        assert_eq!(
            subject(&pki.admin().cert_pem),
            (vec!["system:admin".into()], vec!["system:masters".into()])
        );
        assert_eq!(
            subject(&pki.kubelet_client().cert_pem),
            (vec!["kube-apiserver-kubelet-client".into()], vec![])
        );
        let sans = issue::cert_sans(&parse(server));
        for want in [
            "127.0.0.1",
            "::1",
            "10.43.0.1",
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ] {
            assert!(sans.contains(&San::parse(want).unwrap()), "missing SAN {want}: {sans:?}");
        }
        assert_eq!(sans.len(), 8, "{sans:?}");

        // Keys match their certificates; the SA key is RSA 2048 and matches sa.pub.
        let pairs = [pki.apiserver(), pki.admin(), pki.kubelet_client()];
        for pair in pairs {
            let key = PKey::private_key_from_pem(pair.key_pem.as_bytes()).unwrap();
            assert_eq!(key.id(), Id::EC);
            assert!(parse(&pair.cert_pem).public_key().unwrap().public_eq(&key));
            assert!(pair.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        }
        let sa = PKey::private_key_from_pem(pki.sa_private_key_pem().as_bytes()).unwrap();
        assert_eq!(sa.id(), Id::RSA);
        assert_eq!(sa.bits(), 2048);
        let sa_pub = PKey::public_key_from_pem(pki.sa_public_key_pem().as_bytes()).unwrap();
        assert!(sa.public_eq(&sa_pub));
        assert!(pki.sa_public_key_pem().starts_with("-----BEGIN PUBLIC KEY-----"));
    }

    #[test]
    fn restart_returns_identical_material_and_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = opts(tmp.path());
        let first = Pki::load_or_create(&opts).unwrap();
        let before = snapshot(&opts.dir);
        let second = Pki::load_or_create(&opts).unwrap();
        assert!(second.changes().is_empty(), "{:?}", second.changes());
        assert_eq!(first.ca_cert_pem(), second.ca_cert_pem());
        assert_eq!(first.apiserver(), second.apiserver());
        assert_eq!(first.admin(), second.admin());
        assert_eq!(first.kubelet_client(), second.kubelet_client());
        assert_eq!(first.sa_private_key_pem(), second.sa_private_key_pem());
        assert_eq!(first.sa_public_key_pem(), second.sa_public_key_pem());
        assert_eq!(before, snapshot(&opts.dir));
    }

    #[test]
    fn new_extra_san_reissues_only_the_serving_certificate() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = opts(tmp.path());
        let first = Pki::load_or_create(&opts).unwrap();
        opts.extra_sans = vec!["192.168.7.9".into(), "Node-A.example".into(), "fd00::9".into()];
        let second = Pki::load_or_create(&opts).unwrap();

        assert_eq!(second.changes().len(), 1, "{:?}", second.changes());
        assert!(second.changes()[0].contains("apiserver.crt"), "{:?}", second.changes());
        assert!(second.changes()[0].contains("IP:192.168.7.9"), "{:?}", second.changes());
        assert_ne!(first.apiserver().cert_pem, second.apiserver().cert_pem);
        assert_eq!(first.apiserver().key_pem, second.apiserver().key_pem, "key kept");
        assert_eq!(first.ca_cert_pem(), second.ca_cert_pem());
        assert_eq!(first.admin(), second.admin());
        assert_eq!(first.kubelet_client(), second.kubelet_client());
        assert_eq!(first.sa_private_key_pem(), second.sa_private_key_pem());

        let sans = issue::cert_sans(&parse(&second.apiserver().cert_pem));
        for want in ["192.168.7.9", "node-a.example", "fd00::9", "kubernetes.default.svc", "::1"] {
            assert!(sans.contains(&San::parse(want).unwrap()), "missing {want}: {sans:?}");
        }
        assert!(verifies(
            second.ca_cert_pem(),
            &second.apiserver().cert_pem,
            X509PurposeId::SSL_SERVER
        ));

        // Same options again: nothing changes; dropping the extra SAN does not churn either.
        let third = Pki::load_or_create(&opts).unwrap();
        assert!(third.changes().is_empty(), "{:?}", third.changes());
        assert_eq!(third.apiserver(), second.apiserver());
        opts.extra_sans.clear();
        let fourth = Pki::load_or_create(&opts).unwrap();
        assert!(fourth.changes().is_empty(), "{:?}", fourth.changes());
    }

    #[test]
    fn expiring_serving_certificate_is_renewed_from_the_same_ca() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = opts(tmp.path());
        let first = Pki::load_or_create(&opts).unwrap();
        let sans = opts.apiserver_sans().unwrap();
        let sans: Vec<String> = sans
            .iter()
            .map(|s| match s {
                San::Ip(ip) => ip.to_string(),
                San::Dns(d) => d.clone(),
            })
            .collect();
        let short = first.issue_serving_cert("kube-apiserver", &sans, 10).unwrap();
        fs::write(first.path(files::APISERVER_CERT), &short.cert_pem).unwrap();
        fs::write(first.path(files::APISERVER_KEY), &short.key_pem).unwrap();

        let second = Pki::load_or_create(&opts).unwrap();
        assert_eq!(second.changes().len(), 1, "{:?}", second.changes());
        assert!(second.changes()[0].contains("expires"), "{:?}", second.changes());
        assert_eq!(second.apiserver().key_pem, short.key_pem, "renewal keeps the key");
        let renewed = parse(&second.apiserver().cert_pem);
        assert!(!issue::expires_within(&renewed, LEAF_VALIDITY_DAYS - 1).unwrap());
        assert_eq!(second.ca_cert_pem(), first.ca_cert_pem());
        assert_eq!(second.admin(), first.admin());
    }

    #[test]
    fn corrupt_files_are_named_and_left_unchanged() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = opts(tmp.path());
        Pki::load_or_create(&opts).unwrap();
        let before = snapshot(&opts.dir);
        for file in files::ALL {
            let path = opts.dir.join(file);
            let original = fs::read(&path).unwrap();
            let garbage =
                b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n";
            fs::write(&path, garbage).unwrap();
            let err = Pki::load_or_create(&opts).unwrap_err();
            let msg = err.to_string();
            assert!(matches!(err, CertError::InvalidFile { .. }), "{file}: {msg}");
            assert!(msg.starts_with(&path.display().to_string()), "{file}: {msg}");
            assert!(msg.contains("delete"), "{file}: {msg}");
            if file.starts_with("ca.") {
                let hint = format!(
                    "delete {} to regenerate the cluster PKI (all clients must then get new \
                     kubeconfigs)",
                    opts.dir.display()
                );
                assert!(msg.contains(&hint), "{msg}");
            }
            assert_eq!(fs::read(&path).unwrap(), garbage, "{file} left unchanged");
            fs::write(&path, original).unwrap();
        }
        assert_eq!(before, snapshot(&opts.dir));
    }

    #[test]
    fn missing_ca_key_is_an_error_not_a_new_ca() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = opts(tmp.path());
        Pki::load_or_create(&opts).unwrap();
        fs::remove_file(opts.dir.join(files::CA_KEY)).unwrap();
        let before: Vec<_> = files::ALL
            .iter()
            .filter(|f| **f != files::CA_KEY)
            .map(|f| fs::read(opts.dir.join(f)).unwrap())
            .collect();
        let err = Pki::load_or_create(&opts).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, CertError::Incomplete { .. }), "{msg}");
        assert!(msg.contains("ca.key") && msg.contains("is missing"), "{msg}");
        assert!(msg.contains("restore ca.key from a backup"), "{msg}");
        assert!(!opts.dir.join(files::CA_KEY).exists());
        let after: Vec<_> = files::ALL
            .iter()
            .filter(|f| **f != files::CA_KEY)
            .map(|f| fs::read(opts.dir.join(f)).unwrap())
            .collect();
        assert_eq!(before, after);

        // Both CA files gone while issued certificates remain: still an error.
        fs::remove_file(opts.dir.join(files::CA_CERT)).unwrap();
        let msg = Pki::load_or_create(&opts).unwrap_err().to_string();
        assert!(msg.contains("apiserver.crt"), "{msg}");
        assert!(!opts.dir.join(files::CA_CERT).exists());
    }

    #[test]
    fn a_pki_made_before_the_front_proxy_gains_it_and_keeps_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = opts(tmp.path());
        let first = Pki::load_or_create(&opts).unwrap();
        for file in [
            files::FRONT_PROXY_CA_CERT,
            files::FRONT_PROXY_CA_KEY,
            files::FRONT_PROXY_CLIENT_CERT,
            files::FRONT_PROXY_CLIENT_KEY,
        ] {
            fs::remove_file(opts.dir.join(file)).unwrap();
        }
        let cluster_files = || -> Vec<Vec<u8>> {
            files::ALL
                .iter()
                .filter(|f| !f.starts_with("front-proxy"))
                .map(|f| fs::read(opts.dir.join(f)).unwrap())
                .collect()
        };
        let older = cluster_files();
        let second = Pki::load_or_create(&opts).unwrap();
        assert_eq!(second.changes().len(), 2, "{:?}", second.changes());
        assert!(second.changes()[0].contains("front-proxy CA"), "{:?}", second.changes());
        assert_eq!(older, cluster_files(), "the cluster PKI is loaded as it was");
        assert_eq!(second.ca_cert_pem(), first.ca_cert_pem());
        assert_ne!(second.front_proxy_ca_cert_pem(), second.ca_cert_pem());

        // The client certificate is the front-proxy CA's, not the cluster CA's.
        let client = &second.front_proxy_client().cert_pem;
        assert!(verifies(second.front_proxy_ca_cert_pem(), client, X509PurposeId::SSL_CLIENT));
        assert!(!verifies(second.ca_cert_pem(), client, X509PurposeId::SSL_CLIENT));
        assert_eq!(subject(client), (vec!["front-proxy-client".to_owned()], vec![]));
        assert_eq!(subject(second.front_proxy_ca_cert_pem()).0, ["rkube-front-proxy-ca"]);

        // A third start writes nothing.
        let third = Pki::load_or_create(&opts).unwrap();
        assert!(third.changes().is_empty(), "{:?}", third.changes());
        assert_eq!(third.front_proxy_client(), second.front_proxy_client());

        // The front-proxy CA key lost next to its client certificate: an error, not a new CA.
        fs::remove_file(opts.dir.join(files::FRONT_PROXY_CA_KEY)).unwrap();
        let msg = Pki::load_or_create(&opts).unwrap_err().to_string();
        assert!(msg.contains("front-proxy-ca.key"), "{msg}");
    }

    #[test]
    fn missing_files_are_regenerated_from_the_existing_ca() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = opts(tmp.path());
        let first = Pki::load_or_create(&opts).unwrap();

        fs::remove_file(first.path(files::ADMIN_CERT)).unwrap();
        fs::remove_file(first.path(files::ADMIN_KEY)).unwrap();
        fs::remove_file(first.path(files::APISERVER_CERT)).unwrap();
        fs::remove_file(first.path(files::KUBELET_CLIENT_KEY)).unwrap();
        fs::remove_file(first.path(files::SA_PUB)).unwrap();
        let second = Pki::load_or_create(&opts).unwrap();
        assert_eq!(second.changes().len(), 4, "{:?}", second.changes());
        assert_eq!(second.ca_cert_pem(), first.ca_cert_pem());
        assert_ne!(second.admin(), first.admin());
        assert_eq!(second.apiserver().key_pem, first.apiserver().key_pem, "kept key, new cert");
        assert_ne!(second.kubelet_client().key_pem, first.kubelet_client().key_pem);
        assert_eq!(second.sa_public_key_pem(), first.sa_public_key_pem(), "derived from sa.key");
        for (pem, purpose) in [
            (&second.admin().cert_pem, X509PurposeId::SSL_CLIENT),
            (&second.kubelet_client().cert_pem, X509PurposeId::SSL_CLIENT),
            (&second.apiserver().cert_pem, X509PurposeId::SSL_SERVER),
        ] {
            assert!(verifies(first.ca_cert_pem(), pem, purpose));
        }
        assert_eq!(mode(&first.path(files::ADMIN_KEY)), 0o600);
        assert!(Pki::load_or_create(&opts).unwrap().changes().is_empty());

        // A lost sa.key with sa.pub still present is an error (tokens would silently break).
        fs::remove_file(first.path(files::SA_KEY)).unwrap();
        let msg = Pki::load_or_create(&opts).unwrap_err().to_string();
        assert!(msg.contains("sa.key") && msg.contains("sa.pub"), "{msg}");
    }

    #[test]
    fn lost_ca_certificate_is_rebuilt_from_its_key() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = opts(tmp.path());
        let first = Pki::load_or_create(&opts).unwrap();
        fs::remove_file(first.path(files::CA_CERT)).unwrap();
        let second = Pki::load_or_create(&opts).unwrap();
        assert_eq!(second.changes().len(), 1, "{:?}", second.changes());
        assert_ne!(second.ca_cert_pem(), first.ca_cert_pem());
        // Same key and name: everything the old certificate signed still verifies, both ways.
        assert_eq!(second.apiserver(), first.apiserver());
        assert!(verifies(second.ca_cert_pem(), &first.admin().cert_pem, X509PurposeId::SSL_CLIENT));
        let new = second.issue_client_cert("x", &["y"], 1).unwrap();
        assert!(verifies(first.ca_cert_pem(), &new.cert_pem, X509PurposeId::SSL_CLIENT));
    }

    #[test]
    fn issue_helpers_sign_with_the_cluster_ca() {
        let tmp = tempfile::tempdir().unwrap();
        let pki = Pki::load_or_create(&opts(tmp.path())).unwrap();

        let node = pki.issue_client_cert("system:node:n1", &["system:nodes"], 30).unwrap();
        assert!(verifies(pki.ca_cert_pem(), &node.cert_pem, X509PurposeId::SSL_CLIENT));
        assert_eq!(
            subject(&node.cert_pem),
            (vec!["system:node:n1".into()], vec!["system:nodes".into()])
        );
        assert!(issue::expires_within(&parse(&node.cert_pem), 31).unwrap());

        let serving = pki.issue_serving_cert("n1", &["10.0.0.5", "n1"], 365).unwrap();
        assert!(verifies(pki.ca_cert_pem(), &serving.cert_pem, X509PurposeId::SSL_SERVER));
        let sans = issue::cert_sans(&parse(&serving.cert_pem));
        assert_eq!(sans, [San::parse("10.0.0.5").unwrap(), San::Dns("n1".into())]);

        let none: [&str; 0] = [];
        assert!(matches!(
            pki.issue_serving_cert("n1", &none, 1),
            Err(CertError::InvalidRequest(_))
        ));
        assert!(matches!(
            pki.issue_serving_cert("n1", &["a b"], 1),
            Err(CertError::InvalidSan { .. })
        ));
        assert!(matches!(pki.issue_client_cert("u", &none, 0), Err(CertError::InvalidRequest(_))));
        assert!(matches!(pki.issue_client_cert("", &none, 1), Err(CertError::InvalidRequest(_))));
        // Nothing issued on the side is written to the PKI directory.
        assert!(Pki::load_or_create(&opts(tmp.path())).unwrap().changes().is_empty());
    }

    #[test]
    fn bad_options_fail_before_anything_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let mut opts = opts(tmp.path());
        opts.extra_sans = vec!["not_a_name".into()];
        let msg = Pki::load_or_create(&opts).unwrap_err().to_string();
        assert!(msg.contains("not_a_name"), "{msg}");
        assert!(!opts.dir.exists());
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 0, "no temp dir left");

        opts.extra_sans.clear();
        fs::write(&opts.dir, "").unwrap();
        let msg = Pki::load_or_create(&opts).unwrap_err().to_string();
        assert!(msg.contains("not a directory"), "{msg}");
    }
}
