//! Whose credentials each controller uses, as kube-controller-manager's
//! `--use-service-account-credentials`: every controller runs as its own service account in
//! `kube-system` (`system:serviceaccount:kube-system:<account>`), bound by the bootstrap
//! policy to `system:controller:<account>`, so each may do only what its job needs. The
//! controller manager's own identity (`system:kube-controller-manager`) creates the accounts
//! and asks the TokenRequest API for their tokens; the shared informers use it too.
//!
//! Tokens last an hour and are renewed after 48 minutes. Each is written to a file (0600, in
//! a 0700 directory) that the account's client re-reads every minute (kube-rs's token file),
//! so a renewal reaches the client without rebuilding it. Without service-account
//! credentials every controller uses the controller manager's own client.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::Client;

/// Where the controllers' accounts live.
pub const NAMESPACE: &str = "kube-system";
/// How long a controller's token lives.
const TOKEN_SECONDS: i64 = 3600;
/// When it is renewed (80% of its life, as upstream's client builder).
const RENEW_AFTER: Duration = Duration::from_secs(48 * 60);
/// How long to wait before asking again after a failure.
const RETRY: Duration = Duration::from_secs(2);

/// The service account rkube's controller `controller` (its `--controllers` name) runs as:
/// upstream's account for the same job.
pub fn account_of(controller: &str) -> &str {
    match controller {
        "garbage-collector-controller" => "generic-garbage-collector",
        "node-ipam-controller" | "node-lifecycle-controller" | "taint-eviction-controller" => {
            "node-controller"
        }
        "replicationcontroller-controller" => "replication-controller",
        "pod-garbage-collector-controller" => "pod-garbage-collector",
        "daemonset-controller" => "daemon-set-controller",
        "endpoints-controller" => "endpoint-controller",
        "endpointslice-mirroring-controller" => "endpointslicemirroring-controller",
        "service-lb-controller" => "service-controller",
        "horizontal-pod-autoscaler-controller" => "horizontal-pod-autoscaler",
        "persistentvolume-binder-controller" => "persistent-volume-binder",
        "persistentvolume-protection-controller" => "pv-protection-controller",
        "persistentvolumeclaim-protection-controller" => "pvc-protection-controller",
        "serviceaccount-controller" => "service-account-controller",
        "root-ca-certificate-publisher-controller" => "root-ca-cert-publisher",
        "csrsigning-controller" | "csrapproving-controller" | "csrcleaner-controller" => {
            "certificate-controller"
        }
        other => other,
    }
}

/// Service-account credentials: the controller manager's client and where tokens go.
struct Accounts {
    root: Client,
    base: kube::Config,
    token_dir: PathBuf,
    clients: Mutex<HashMap<String, Client>>,
    renewals: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// Gives each controller its client (see the module doc).
pub struct ClientBuilder {
    root: Client,
    accounts: Option<Accounts>,
}

impl Drop for ClientBuilder {
    fn drop(&mut self) {
        if let Some(accounts) = &self.accounts {
            for task in accounts.renewals.lock().expect("renewals lock").drain(..) {
                task.abort();
            }
        }
    }
}

/// What went wrong getting an account's credentials.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("cannot create the service account {NAMESPACE}/{account}: {source}")]
    Account { account: String, source: kube::Error },
    #[error("cannot get a token for the service account {NAMESPACE}/{account}: {source}")]
    Token { account: String, source: kube::Error },
    #[error("the token request for {NAMESPACE}/{0} was answered without a token")]
    NoToken(String),
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot build the client of {account}: {source}")]
    Client { account: String, source: kube::Error },
}

impl ClientBuilder {
    /// Every controller uses `root`.
    pub fn shared(root: Client) -> ClientBuilder {
        ClientBuilder { root, accounts: None }
    }

    /// Each controller uses its own service account's token, written under `token_dir`;
    /// `base` is the controller manager's configuration (server and CA) without its
    /// credentials mattering.
    pub fn service_accounts(root: Client, base: kube::Config, token_dir: PathBuf) -> ClientBuilder {
        let accounts = Accounts {
            root: root.clone(),
            base,
            token_dir,
            clients: Mutex::new(HashMap::new()),
            renewals: Mutex::new(Vec::new()),
        };
        ClientBuilder { root, accounts: Some(accounts) }
    }

    /// The controller manager's own client (for the shared informers).
    pub fn root(&self) -> Client {
        self.root.clone()
    }

    /// The client of `controller`, waiting (and retrying) until its account has a token.
    pub async fn client(&self, controller: &str) -> Client {
        let Some(accounts) = &self.accounts else { return self.root.clone() };
        let account = account_of(controller);
        if let Some(client) = accounts.clients.lock().expect("clients lock").get(account) {
            return client.clone();
        }
        loop {
            match accounts.start(account).await {
                Ok(client) => return client,
                Err(e) => {
                    tracing::warn!(error = %e, "controller credentials; trying again");
                    tokio::time::sleep(RETRY).await;
                }
            }
        }
    }
}

impl Accounts {
    /// Makes the account and its first token, starts renewing it, and builds its client.
    async fn start(&self, account: &str) -> Result<Client, CredentialsError> {
        let accounts: Api<ServiceAccount> = Api::namespaced(self.root.clone(), NAMESPACE);
        let wanted = ServiceAccount {
            metadata: ObjectMeta { name: Some(account.to_string()), ..Default::default() },
            ..Default::default()
        };
        match accounts.create(&PostParams::default(), &wanted).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(source) => {
                return Err(CredentialsError::Account { account: account.into(), source })
            }
        }
        let path = self.token_dir.join(format!("{account}.token"));
        write_token(&path, &request_token(&accounts, account).await?)?;
        let mut config = self.base.clone();
        config.auth_info = kube::config::AuthInfo {
            token_file: Some(path.display().to_string()),
            ..Default::default()
        };
        let client = Client::try_from(config)
            .map_err(|source| CredentialsError::Client { account: account.into(), source })?;
        let renewal = tokio::spawn(renew(accounts, account.to_string(), path));
        self.renewals.lock().expect("renewals lock").push(renewal);
        self.clients.lock().expect("clients lock").insert(account.to_string(), client.clone());
        Ok(client)
    }
}

async fn request_token(
    accounts: &Api<ServiceAccount>,
    account: &str,
) -> Result<String, CredentialsError> {
    let request = TokenRequest {
        spec: TokenRequestSpec { expiration_seconds: Some(TOKEN_SECONDS), ..Default::default() },
        ..Default::default()
    };
    let answer = accounts
        .create_token_request(account, &PostParams::default(), &request)
        .await
        .map_err(|source| CredentialsError::Token { account: account.into(), source })?;
    answer
        .status
        .map(|s| s.token)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| CredentialsError::NoToken(account.into()))
}

/// Writes a token file (0600) in its private directory, replacing the old one at once.
fn write_token(path: &Path, token: &str) -> Result<(), CredentialsError> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let err = |source| CredentialsError::Write { path: path.to_path_buf(), source };
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(err)?;
    }
    let tmp = path.with_extension("token.tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(err)?;
    file.write_all(token.as_bytes()).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}

/// Renews the account's token before it expires, for as long as the builder lives.
async fn renew(accounts: Api<ServiceAccount>, account: String, path: PathBuf) {
    let mut wait = RENEW_AFTER;
    loop {
        tokio::time::sleep(wait).await;
        wait = match request_token(&accounts, &account).await.and_then(|t| write_token(&path, &t)) {
            Ok(()) => RENEW_AFTER,
            Err(e) => {
                tracing::warn!(error = %e, "renewing a controller's token; trying again");
                RETRY * 5
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controllers_run_as_upstreams_accounts() {
        assert_eq!(account_of("garbage-collector-controller"), "generic-garbage-collector");
        assert_eq!(account_of("node-lifecycle-controller"), "node-controller");
        assert_eq!(account_of("daemonset-controller"), "daemon-set-controller");
        assert_eq!(account_of("deployment-controller"), "deployment-controller");
        assert_eq!(account_of("service-lb-controller"), "service-controller");
        assert_eq!(account_of("persistentvolume-binder-controller"), "persistent-volume-binder");
        assert_eq!(
            account_of("persistentvolumeclaim-protection-controller"),
            "pvc-protection-controller"
        );
        assert_eq!(account_of("pod-garbage-collector-controller"), "pod-garbage-collector");
        assert_eq!(account_of("disruption-controller"), "disruption-controller");
    }

    #[test]
    fn token_files_are_private_and_replaced_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("rkube-tokens-{}", std::process::id()));
        let path = dir.join("a.token");
        write_token(&path, "one").unwrap();
        write_token(&path, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
