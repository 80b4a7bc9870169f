//! The certificate controllers, as kube-controller-manager's: one mechanism
//! ([`run`], upstream's `CertificateController`) that watches CertificateSigningRequests and
//! hands each one to a [`Handler`] from a work queue, and three handlers:
//!
//! - `csrsigning-controller` ([`signer`]): signs approved requests of the
//!   `kubernetes.io/kube-apiserver-client`, `kubernetes.io/kube-apiserver-client-kubelet`
//!   and `kubernetes.io/kubelet-serving` signers with the cluster CA, after checking each
//!   signer's rules, or marks them `Failed`.
//! - `csrapproving-controller` ([`approver`]): approves kubelets' client certificate
//!   requests when a SubjectAccessReview says their requester may ask for them.
//! - `csrcleaner-controller` ([`cleaner`]): deletes requests once they are done with.
//!
//! All three run as upstream's `certificate-controller` service account.

pub mod approver;
pub mod cleaner;
pub mod signer;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_runtime::informer::{self, Change};
use rkube_runtime::store::Store;
use rkube_runtime::workqueue::WorkQueue;

/// The longest back-off of a request whose sync keeps failing.
const MAX_BACKOFF: Duration = Duration::from_secs(1000);
/// The longest one sync may take before it is retried.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);
/// Syncs at once (kube-controller-manager's `--concurrent-certificate-csr-syncs`... per
/// controller, upstream's default).
const WORKERS: usize = 5;

/// Why a sync failed (it is retried with a back-off).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("{0}")]
    Request(String),
}

/// What one certificate controller does with one request.
#[async_trait::async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Acts on `csr`; `Some(delay)` asks to see it again after `delay`.
    async fn handle(
        &self,
        api: &Api<CertificateSigningRequest>,
        csr: CertificateSigningRequest,
    ) -> Result<Option<Duration>, SyncError>;
}

/// Runs `handler` on every CertificateSigningRequest, and again on each change, until the
/// task is aborted.
pub async fn run(name: &'static str, client: Client, handler: impl Handler) {
    let api: Api<CertificateSigningRequest> = Api::all(client);
    let (tx, mut changes) = tokio::sync::mpsc::unbounded_channel();
    let (csrs, _watch) = informer::start(api.clone(), watcher::Config::default(), vec![tx]);
    if csrs.wait_until_ready().await.is_err() {
        return;
    }
    let ctl = Arc::new(Controller { api, csrs, queue: WorkQueue::new(MAX_BACKOFF), handler });
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..WORKERS {
        let ctl = ctl.clone();
        tasks.spawn(async move {
            let sync = |key: String| {
                let ctl = ctl.clone();
                async move { ctl.sync(&key).await }
            };
            ctl.queue.work(name, SYNC_TIMEOUT, sync, |_: &SyncError| false).await
        });
    }
    tracing::info!(controller = name, "started");
    while let Some(change) = changes.recv().await {
        if let Change::Object { name, .. } = change {
            ctl.queue.add(name);
        }
    }
    ctl.queue.shut_down();
}

struct Controller<H> {
    api: Api<CertificateSigningRequest>,
    csrs: Store<CertificateSigningRequest>,
    queue: WorkQueue<String>,
    handler: H,
}

impl<H: Handler> Controller<H> {
    async fn sync(&self, name: &str) -> Result<Option<Duration>, SyncError> {
        let Some(csr) = self.csrs.get(&ObjectRef::new(name)) else { return Ok(None) };
        self.handler.handle(&self.api, (*csr).clone()).await
    }
}

/// The condition of `kind` whose status is True.
pub fn true_condition<'a>(
    csr: &'a CertificateSigningRequest,
    kind: &str,
) -> Option<&'a CertificateSigningRequestCondition> {
    csr.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == kind && c.status == "True")
}

/// Any condition of `kind`.
pub fn condition<'a>(
    csr: &'a CertificateSigningRequest,
    kind: &str,
) -> Option<&'a CertificateSigningRequestCondition> {
    csr.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == kind)
}

/// Upstream's `IsCertificateRequestApproved`: approved and not denied.
pub fn is_approved(csr: &CertificateSigningRequest) -> bool {
    condition(csr, "Approved").is_some() && condition(csr, "Denied").is_none()
}

/// The certificate the request was issued, if any.
pub fn certificate(csr: &CertificateSigningRequest) -> Option<&[u8]> {
    let cert = csr.status.as_ref()?.certificate.as_ref()?;
    (!cert.0.is_empty()).then_some(cert.0.as_slice())
}

/// The request's usages, as strings.
pub fn usages(csr: &CertificateSigningRequest) -> Vec<String> {
    csr.spec.usages.clone().unwrap_or_default()
}
