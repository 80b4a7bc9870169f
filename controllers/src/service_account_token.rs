//! `serviceaccount-token-controller`, as kube-controller-manager's: Secrets of type
//! `kubernetes.io/service-account-token` that name a ServiceAccount (annotation
//! `kubernetes.io/service-account.name`) get a legacy token for it (a JWT signed with the
//! service-account key, `--service-account-private-key-file`), the cluster CA and the
//! namespace in their data, and the account's uid in `kubernetes.io/service-account.uid`.
//! A Secret whose account is gone, or is another account of the same name (its uid differs),
//! is deleted; so an account's token Secrets go with it.
//!
//! Start at [`run`]: Secrets are the queue (kube-runtime's `Controller`); a ServiceAccount's
//! change queues the Secrets that name it (found in the Secret cache). [`needed`] decides
//! what a Secret lacks, without I/O.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::ByteString;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use rkube_certs::jose::{LegacyClaims, RsaSigningKey};

use crate::api_errors;

/// The Secret type this controller fills.
pub const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
/// The annotation naming the account.
pub const NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
/// The annotation holding the account's uid.
pub const UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";
/// The data keys.
pub const TOKEN_KEY: &str = "token";
pub const CA_KEY: &str = "ca.crt";
pub const NAMESPACE_KEY: &str = "namespace";

/// What the controller signs with and publishes.
pub struct Config {
    /// `--service-account-private-key-file`.
    pub key: RsaSigningKey,
    /// `--root-ca-file` (PEM): written as `ca.crt` when set.
    pub root_ca: Option<Vec<u8>>,
}

/// Why a sync failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("cannot sign a token: {0}")]
    Sign(#[from] jsonwebtoken::errors::Error),
}

/// The account a token Secret names, with the uid it was made for (empty: not yet).
fn account_of(secret: &Secret) -> Option<(&str, &str)> {
    if secret.type_.as_deref() != Some(TOKEN_TYPE) {
        return None;
    }
    let annotations = secret.metadata.annotations.as_ref()?;
    let name = annotations.get(NAME_ANNOTATION).filter(|n| !n.is_empty())?;
    Some((name, annotations.get(UID_ANNOTATION).map_or("", String::as_str)))
}

/// What a Secret still lacks for `account`, as upstream decides: a CA that differs, a
/// namespace that differs, or no token at all.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Needed {
    pub ca: bool,
    pub namespace: bool,
    pub token: bool,
}

/// See [`Needed`].
pub fn needed(secret: &Secret, root_ca: Option<&[u8]>) -> Needed {
    let data = secret.data.as_ref();
    let get = |key: &str| data.and_then(|d| d.get(key)).map(|b| b.0.as_slice());
    let namespace = secret.metadata.namespace.as_deref().unwrap_or("").as_bytes();
    Needed {
        ca: root_ca.is_some_and(|ca| !ca.is_empty() && get(CA_KEY) != Some(ca)),
        namespace: get(NAMESPACE_KEY) != Some(namespace),
        token: get(TOKEN_KEY).is_none_or(<[u8]>::is_empty),
    }
}

/// Runs the controller until the task is aborted.
pub async fn run(client: Client, config: Config) {
    // Only token Secrets are watched and cached, as upstream's informer selects them.
    let only_tokens = watcher::Config::default().fields(&format!("type={TOKEN_TYPE}"));
    let controller = Controller::new(Api::<Secret>::all(client.clone()), only_tokens);
    let secrets = controller.store();
    let context = Arc::new((client.clone(), config));
    controller
        .watches(Api::<ServiceAccount>::all(client), watcher::Config::default(), move |sa| {
            let (namespace, name) = (sa.namespace().unwrap_or_default(), sa.name_any());
            secrets
                .state()
                .into_iter()
                .filter(|s| s.metadata.namespace.as_deref() == Some(namespace.as_str()))
                .filter(|s| account_of(s).is_some_and(|(n, _)| n == name))
                .map(|s| ObjectRef::from_obj(&*s))
                .collect::<Vec<_>>()
        })
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "serviceaccount-token-controller reconcile");
            }
        })
        .await;
}

fn error_policy(_: Arc<Secret>, error: &Error, _: Arc<(Client, Config)>) -> Action {
    tracing::warn!(%error, "serviceaccount-token-controller");
    Action::requeue(Duration::from_secs(1))
}

async fn reconcile(secret: Arc<Secret>, ctx: Arc<(Client, Config)>) -> Result<Action, Error> {
    let (client, config) = &*ctx;
    let Some((account, uid)) = account_of(&secret) else { return Ok(Action::await_change()) };
    if secret.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let namespace = secret.namespace().unwrap_or_default();
    let name = secret.name_any();
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &namespace);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let live = accounts.get_opt(account).await?;
    let live = live.filter(|sa| uid.is_empty() || sa.metadata.uid.as_deref() == Some(uid));
    let Some(sa) = live else {
        // The account is gone (or is a new one of the same name): so is its token.
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: secret.metadata.uid.clone(),
                ..Default::default()
            }),
            ..DeleteParams::default()
        };
        match secrets.delete(&name, &params).await {
            Ok(_) => tracing::info!(
                namespace,
                name,
                account,
                "deleted the token of a deleted service account"
            ),
            Err(e) if matches!(api_errors::code(&e), Some(404 | 409)) => {}
            Err(e) => return Err(e.into()),
        }
        return Ok(Action::await_change());
    };
    let needs = needed(&secret, config.root_ca.as_deref());
    if needs == Needed::default() {
        return Ok(Action::await_change());
    }
    let mut filled = (*secret).clone();
    let data = filled.data.get_or_insert_with(BTreeMap::new);
    if needs.ca {
        data.insert(CA_KEY.into(), ByteString(config.root_ca.clone().unwrap_or_default()));
    }
    if needs.namespace {
        data.insert(NAMESPACE_KEY.into(), ByteString(namespace.clone().into_bytes()));
    }
    if needs.token {
        let sa_uid = sa.metadata.uid.clone().unwrap_or_default();
        let claims = LegacyClaims::new(&namespace, account, &sa_uid, &name);
        data.insert(TOKEN_KEY.into(), ByteString(config.key.sign(&claims)?.into_bytes()));
        let annotations = filled.metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(NAME_ANNOTATION.into(), account.to_string());
        annotations.insert(UID_ANNOTATION.into(), sa_uid);
    }
    match secrets.replace(&name, &PostParams::default(), &filled).await {
        Ok(_) => tracing::info!(namespace, name, account, "filled a service-account token secret"),
        // Gone meanwhile; a conflict is retried from the newer version's event.
        Err(e) if api_errors::code(&e) == Some(404) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(data: &[(&str, &str)]) -> Secret {
        let mut s = Secret {
            type_: Some(TOKEN_TYPE.into()),
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                    .collect(),
            ),
            ..Default::default()
        };
        s.metadata.namespace = Some("ns".into());
        s.metadata.annotations = Some(BTreeMap::from([(NAME_ANNOTATION.into(), "builder".into())]));
        s
    }

    #[test]
    fn what_a_secret_lacks() {
        let all = Needed { ca: true, namespace: true, token: true };
        assert_eq!(needed(&secret(&[]), Some(b"CA")), all);
        assert_eq!(needed(&secret(&[]), None), Needed { ca: false, ..all });
        let full = secret(&[("ca.crt", "CA"), ("namespace", "ns"), ("token", "t")]);
        assert_eq!(needed(&full, Some(b"CA")), Needed::default());
        assert_eq!(needed(&full, Some(b"other")), Needed { ca: true, ..Needed::default() });
        let emptied = secret(&[("ca.crt", "CA"), ("namespace", "ns"), ("token", "")]);
        assert_eq!(needed(&emptied, Some(b"CA")), Needed { token: true, ..Needed::default() });
    }

    #[test]
    fn only_annotated_token_secrets_are_ours() {
        let s = secret(&[]);
        assert_eq!(account_of(&s), Some(("builder", "")));
        let mut opaque = s.clone();
        opaque.type_ = Some("Opaque".into());
        assert_eq!(account_of(&opaque), None);
        let mut unnamed = s.clone();
        unnamed.metadata.annotations = None;
        assert_eq!(account_of(&unnamed), None);
    }
}
