//! Kubeconfig files: what kubectl, client-go and kube-rs read to find and trust the API server.
//!
//! One cluster, one user, one context, all credentials inline (`*-data` fields, base64 of the
//! PEM), written atomically with mode 0600.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde::Serialize;

use crate::fsutil::{self, SECRET_MODE};
use crate::{CertError, CertKeyPair};

/// Cluster and context name of the kubeconfigs rkube writes by default.
pub const DEFAULT_CLUSTER_NAME: &str = "rkube";
/// User name (in the kubeconfig, not the Kubernetes user) of the administrator.
pub const DEFAULT_ADMIN_USER_NAME: &str = "admin";

/// A kubeconfig that authenticates with a client certificate.
#[derive(Clone, PartialEq, Eq)]
pub struct KubeconfigSpec {
    pub cluster_name: String,
    /// E.g. `https://127.0.0.1:6443`.
    pub server_url: String,
    /// The CA that signed the API server's serving certificate.
    pub ca_pem: String,
    pub user_name: String,
    pub client_cert_pem: String,
    pub client_key_pem: String,
    pub context_name: String,
    /// The context's default namespace; `None` means `default`.
    pub namespace: Option<String>,
}

/// A kubeconfig that authenticates with a bearer token (service-account JWT, bootstrap token).
#[derive(Clone, PartialEq, Eq)]
pub struct TokenKubeconfigSpec {
    pub cluster_name: String,
    pub server_url: String,
    pub ca_pem: String,
    pub user_name: String,
    pub token: String,
    pub context_name: String,
    pub namespace: Option<String>,
}

impl KubeconfigSpec {
    /// The administrator's kubeconfig: cluster and context `rkube`, user `admin`.
    pub fn admin(server_url: &str, ca_pem: &str, admin: &CertKeyPair) -> Self {
        KubeconfigSpec {
            cluster_name: DEFAULT_CLUSTER_NAME.into(),
            server_url: server_url.into(),
            ca_pem: ca_pem.into(),
            user_name: DEFAULT_ADMIN_USER_NAME.into(),
            client_cert_pem: admin.cert_pem.clone(),
            client_key_pem: admin.key_pem.clone(),
            context_name: DEFAULT_CLUSTER_NAME.into(),
            namespace: None,
        }
    }

    /// The kubeconfig as YAML.
    pub fn to_yaml(&self) -> Result<String, CertError> {
        let user = User {
            client_certificate_data: Some(BASE64.encode(&self.client_cert_pem)),
            client_key_data: Some(BASE64.encode(&self.client_key_pem)),
            token: None,
        };
        render(
            &self.cluster_name,
            &self.server_url,
            &self.ca_pem,
            &self.user_name,
            user,
            &self.context_name,
            self.namespace.as_deref(),
        )
    }
}

impl TokenKubeconfigSpec {
    /// The kubeconfig as YAML.
    pub fn to_yaml(&self) -> Result<String, CertError> {
        let user =
            User { client_certificate_data: None, client_key_data: None, token: Some(&self.token) };
        render(
            &self.cluster_name,
            &self.server_url,
            &self.ca_pem,
            &self.user_name,
            user,
            &self.context_name,
            self.namespace.as_deref(),
        )
    }
}

impl fmt::Debug for KubeconfigSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeconfigSpec")
            .field("cluster_name", &self.cluster_name)
            .field("server_url", &self.server_url)
            .field("user_name", &self.user_name)
            .field("context_name", &self.context_name)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for TokenKubeconfigSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenKubeconfigSpec")
            .field("cluster_name", &self.cluster_name)
            .field("server_url", &self.server_url)
            .field("user_name", &self.user_name)
            .field("context_name", &self.context_name)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// Writes a client-certificate kubeconfig to `path` (mode 0600, atomically; the parent
/// directory is created if missing).
pub fn write_kubeconfig(path: impl AsRef<Path>, spec: &KubeconfigSpec) -> Result<(), CertError> {
    write(path.as_ref(), &spec.to_yaml()?)
}

/// Writes a token kubeconfig to `path` (mode 0600, atomically; the parent directory is created
/// if missing).
pub fn write_token_kubeconfig(
    path: impl AsRef<Path>,
    spec: &TokenKubeconfigSpec,
) -> Result<(), CertError> {
    write(path.as_ref(), &spec.to_yaml()?)
}

fn write(path: &Path, yaml: &str) -> Result<(), CertError> {
    let dir = fsutil::parent_dir(path);
    std::fs::create_dir_all(&dir).map_err(fsutil::io_err("create directory", &dir))?;
    fsutil::write_atomic(path, yaml.as_bytes(), SECRET_MODE)
}

// The kubeconfig schema (k8s.io/client-go/tools/clientcmd/api/v1), only the fields we write.

#[derive(Serialize)]
struct Config<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: &'a str,
    clusters: Vec<Named<'a, Cluster<'a>>>,
    contexts: Vec<Named<'a, Context<'a>>>,
    #[serde(rename = "current-context")]
    current_context: &'a str,
    preferences: BTreeMap<String, String>,
    users: Vec<Named<'a, UserEntry<'a>>>,
}

#[derive(Serialize)]
struct Named<'a, T> {
    name: &'a str,
    #[serde(flatten)]
    item: T,
}

#[derive(Serialize)]
struct Cluster<'a> {
    cluster: ClusterFields<'a>,
}

#[derive(Serialize)]
struct ClusterFields<'a> {
    #[serde(rename = "certificate-authority-data")]
    certificate_authority_data: String,
    server: &'a str,
}

#[derive(Serialize)]
struct Context<'a> {
    context: ContextFields<'a>,
}

#[derive(Serialize)]
struct ContextFields<'a> {
    cluster: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<&'a str>,
    user: &'a str,
}

#[derive(Serialize)]
struct UserEntry<'a> {
    user: User<'a>,
}

#[derive(Serialize)]
struct User<'a> {
    #[serde(rename = "client-certificate-data", skip_serializing_if = "Option::is_none")]
    client_certificate_data: Option<String>,
    #[serde(rename = "client-key-data", skip_serializing_if = "Option::is_none")]
    client_key_data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<&'a str>,
}

fn render(
    cluster_name: &str,
    server_url: &str,
    ca_pem: &str,
    user_name: &str,
    user: User<'_>,
    context_name: &str,
    namespace: Option<&str>,
) -> Result<String, CertError> {
    let config = Config {
        api_version: "v1",
        kind: "Config",
        clusters: vec![Named {
            name: cluster_name,
            item: Cluster {
                cluster: ClusterFields {
                    certificate_authority_data: BASE64.encode(ca_pem),
                    server: server_url,
                },
            },
        }],
        contexts: vec![Named {
            name: context_name,
            item: Context {
                context: ContextFields { cluster: cluster_name, namespace, user: user_name },
            },
        }],
        current_context: context_name,
        preferences: BTreeMap::new(),
        users: vec![Named { name: user_name, item: UserEntry { user } }],
    };
    Ok(serde_yaml_ng::to_string(&config)?)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::process::Command;

    use serde_json::Value;

    use super::*;
    use crate::{Pki, PkiOptions};

    const KUBECTL: &str = "/usr/bin/kubectl";

    /// `kubectl config view --raw -o json` of `path`, isolated from the user's own config.
    fn kubectl_view(path: &Path, home: &Path) -> Value {
        let out = Command::new(KUBECTL)
            .args(["config", "view", "--raw", "-o", "json", "--kubeconfig"])
            .arg(path)
            .env_remove("KUBECONFIG")
            .env("HOME", home)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {KUBECTL}: {e}"));
        assert!(out.status.success(), "kubectl failed: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn decode(v: &Value) -> String {
        String::from_utf8(BASE64.decode(v.as_str().expect("a base64 string")).unwrap()).unwrap()
    }

    #[test]
    fn admin_kubeconfig_is_read_by_stock_kubectl() {
        let tmp = tempfile::tempdir().unwrap();
        let pki = Pki::load_or_create(&PkiOptions::new(tmp.path().join("pki"))).unwrap();
        let path = tmp.path().join("admin.kubeconfig");
        // An older, looser file is replaced, mode included.
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_kubeconfig(&path, &pki.admin_kubeconfig("https://127.0.0.1:6443")).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);

        let v = kubectl_view(&path, tmp.path());
        assert_eq!(v["current-context"], "rkube");
        assert_eq!(v["clusters"][0]["name"], "rkube");
        let cluster = &v["clusters"][0]["cluster"];
        assert_eq!(cluster["server"], "https://127.0.0.1:6443");
        assert_eq!(decode(&cluster["certificate-authority-data"]), pki.ca_cert_pem());
        assert_eq!(v["users"][0]["name"], "admin");
        let user = &v["users"][0]["user"];
        assert_eq!(decode(&user["client-certificate-data"]), pki.admin().cert_pem);
        assert_eq!(decode(&user["client-key-data"]), pki.admin().key_pem);
        assert_eq!(v["contexts"][0]["name"], "rkube");
        assert_eq!(v["contexts"][0]["context"]["cluster"], "rkube");
        assert_eq!(v["contexts"][0]["context"]["user"], "admin");
        assert!(v["contexts"][0]["context"].get("namespace").is_none());
        let names: Vec<_> =
            std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "no temp files left: {names:?}");
    }

    #[test]
    fn token_kubeconfig_with_namespace_is_read_by_stock_kubectl() {
        let tmp = tempfile::tempdir().unwrap();
        let ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let spec = TokenKubeconfigSpec {
            cluster_name: "edge: cluster".into(),
            server_url: "https://[::1]:6443".into(),
            ca_pem: ca_pem.into(),
            user_name: "system:serviceaccount:kube-system:agent".into(),
            token: "eyJhbGciOiJSUzI1NiJ9.e30.c2ln".into(),
            context_name: "agent@edge".into(),
            namespace: Some("kube-system".into()),
        };
        assert!(!format!("{spec:?}").contains("eyJ"), "Debug hides the token");
        let path = tmp.path().join("nested/dir/agent.kubeconfig");
        write_token_kubeconfig(&path, &spec).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);

        let v = kubectl_view(&path, tmp.path());
        assert_eq!(v["current-context"], "agent@edge");
        assert_eq!(v["clusters"][0]["name"], "edge: cluster");
        assert_eq!(v["clusters"][0]["cluster"]["server"], "https://[::1]:6443");
        assert_eq!(decode(&v["clusters"][0]["cluster"]["certificate-authority-data"]), ca_pem);
        assert_eq!(v["users"][0]["name"], "system:serviceaccount:kube-system:agent");
        assert_eq!(v["users"][0]["user"]["token"], "eyJhbGciOiJSUzI1NiJ9.e30.c2ln");
        assert!(v["users"][0]["user"].get("client-certificate-data").is_none());
        let ctx = &v["contexts"][0]["context"];
        assert_eq!(ctx["namespace"], "kube-system");
        assert_eq!(ctx["cluster"], "edge: cluster");
        assert_eq!(ctx["user"], "system:serviceaccount:kube-system:agent");
    }
}
