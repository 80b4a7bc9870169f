//! The `csrapproving-controller` (upstream's `sarapprove`): approves a pending request of
//! the `kubernetes.io/kube-apiserver-client-kubelet` signer that is a valid node client
//! certificate request when a SubjectAccessReview says its requester may `create`
//! `certificatesigningrequests/selfnodeclient` (renewing its own: CN is the requester) or
//! `certificatesigningrequests/nodeclient` (any node's, as a bootstrap token may).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PostParams};
use rkube_certs::csr::parse_request;

use super::signer::{check, KUBE_APISERVER_CLIENT_KUBELET};
use super::{certificate, condition, usages, Handler, SyncError};

/// The handler: asks the API server with SubjectAccessReviews.
pub struct Approver {
    pub reviews: Api<SubjectAccessReview>,
}

impl Approver {
    /// Whether the request's requester may create `subresource` of certificate requests.
    async fn allowed(
        &self,
        csr: &CertificateSigningRequest,
        subresource: &str,
    ) -> Result<bool, SyncError> {
        let extra: Option<BTreeMap<String, Vec<String>>> = csr.spec.extra.clone();
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: csr.spec.username.clone(),
                uid: csr.spec.uid.clone(),
                groups: csr.spec.groups.clone(),
                extra,
                resource_attributes: Some(ResourceAttributes {
                    group: Some("certificates.k8s.io".into()),
                    resource: Some("certificatesigningrequests".into()),
                    subresource: Some(subresource.into()),
                    verb: Some("create".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = self.reviews.create(&PostParams::default(), &review).await?;
        Ok(answer.status.is_some_and(|s| s.allowed))
    }
}

#[async_trait::async_trait]
impl Handler for Approver {
    async fn handle(
        &self,
        api: &Api<CertificateSigningRequest>,
        mut csr: CertificateSigningRequest,
    ) -> Result<Option<Duration>, SyncError> {
        if csr.spec.signer_name != KUBE_APISERVER_CLIENT_KUBELET
            || certificate(&csr).is_some()
            || condition(&csr, "Approved").is_some()
            || condition(&csr, "Denied").is_some()
        {
            return Ok(None);
        }
        let name = csr.metadata.name.clone().unwrap_or_default();
        let req = parse_request(&csr.spec.request.0)
            .map_err(|e| SyncError::Request(format!("unable to parse csr {name:?}: {e}")))?;
        if !matches!(check(KUBE_APISERVER_CLIENT_KUBELET, &req, &usages(&csr)), Some(Ok(()))) {
            return Ok(None);
        }
        let own = csr.spec.username.as_deref() == Some(req.common_name.as_str());
        let message = if own && self.allowed(&csr, "selfnodeclient").await? {
            "Auto approving self kubelet client certificate after SubjectAccessReview."
        } else if self.allowed(&csr, "nodeclient").await? {
            "Auto approving kubelet client certificate after SubjectAccessReview."
        } else {
            return Ok(None);
        };
        let status = csr.status.get_or_insert_with(CertificateSigningRequestStatus::default);
        status.conditions.get_or_insert_with(Vec::new).push(CertificateSigningRequestCondition {
            type_: "Approved".into(),
            status: "True".into(),
            reason: Some("AutoApproved".into()),
            message: Some(message.into()),
            last_update_time: Some(Time(k8s_openapi::jiff::Timestamp::now())),
            last_transition_time: None,
        });
        api.replace_subresource("approval", &name, &PostParams::default(), &csr).await?;
        Ok(None)
    }
}
