//! The `csrcleaner-controller`: deletes requests that are done with, as upstream's — denied
//! or failed ones an hour after that condition was last updated, approved and issued ones an
//! hour after approval, pending ones a day after they were made, and any whose certificate
//! has expired. A request not yet due is looked at again when it will be.

use std::time::Duration;

use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Preconditions};

use super::{certificate, condition, Handler, SyncError};

const DENIED_OR_APPROVED: i64 = 3600;
const PENDING: i64 = 24 * 3600;

/// The handler.
pub struct Cleaner;

/// When `csr` is due for deletion (Unix seconds), as upstream's cleaner judges it.
pub fn due(csr: &CertificateSigningRequest) -> Option<i64> {
    let updated = |kind: &str| {
        condition(csr, kind)
            .and_then(|c| c.last_update_time.as_ref())
            .map(|t| t.0.as_second() + DENIED_OR_APPROVED)
    };
    let mut due: Vec<i64> = Vec::new();
    if let Some(pem) = certificate(csr) {
        if let Ok(end) = rkube_certs::csr::certificate_not_after(pem) {
            due.push(end);
        }
        due.extend(updated("Approved"));
    }
    due.extend(updated("Denied"));
    due.extend(updated("Failed"));
    let decided = ["Approved", "Denied", "Failed"].iter().any(|k| condition(csr, k).is_some());
    if !decided {
        due.extend(csr.metadata.creation_timestamp.as_ref().map(|t| t.0.as_second() + PENDING));
    }
    due.into_iter().min()
}

#[async_trait::async_trait]
impl Handler for Cleaner {
    async fn handle(
        &self,
        api: &Api<CertificateSigningRequest>,
        csr: CertificateSigningRequest,
    ) -> Result<Option<Duration>, SyncError> {
        let Some(at) = due(&csr) else { return Ok(None) };
        let now = Timestamp::now().as_second();
        if at > now {
            return Ok(Some(Duration::from_secs(u64::try_from(at - now).unwrap_or(0))));
        }
        let name = csr.metadata.name.clone().unwrap_or_default();
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: csr.metadata.uid.clone(),
                ..Default::default()
            }),
            ..Default::default()
        };
        tracing::debug!(csr = name, "deleting a certificate signing request done with");
        match api.delete(&name, &params).await {
            Ok(_) => Ok(None),
            Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn csr(status: serde_json::Value) -> CertificateSigningRequest {
        serde_json::from_value(json!({
            "metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"request": "", "signerName": "example.com/x"},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn deadlines_as_upstream() {
        let t0 = "2026-01-01T00:00:00Z".parse::<Timestamp>().unwrap().as_second();
        assert_eq!(due(&csr(json!({}))), Some(t0 + PENDING));
        let denied = csr(json!({"conditions": [{"type": "Denied", "status": "True",
            "lastUpdateTime": "2026-01-01T00:10:00Z"}]}));
        assert_eq!(due(&denied), Some(t0 + 600 + 3600));
        let failed = csr(json!({"conditions": [{"type": "Approved", "status": "True",
            "lastUpdateTime": "2026-01-01T00:10:00Z"}, {"type": "Failed", "status": "True",
            "lastUpdateTime": "2026-01-01T00:20:00Z"}]}));
        assert_eq!(due(&failed), Some(t0 + 1200 + 3600));
        // Approved and not issued yet: the signer still has to act.
        let approved = csr(json!({"conditions": [{"type": "Approved", "status": "True",
            "lastUpdateTime": "2026-01-01T00:10:00Z"}]}));
        assert_eq!(due(&approved), None);
    }
}
