//! CertificateApproval (upstream's `certificates/approval` plugin): approving or denying a
//! CertificateSigningRequest (an update of its `approval` subresource) needs the `approve`
//! verb on the `signers` resource of certificates.k8s.io, named for the request's signer or
//! `<domain>/*`.

use crate::attributes::{Attributes, Operation};
use crate::authorizer::{authorized_for_signer, AuthorizerSlot};
use crate::error::AdmissionError;
use crate::state::ClusterState;
use crate::ValidatingPlugin;

pub const NAME: &str = "CertificateApproval";

/// The plugin; asks the server's authorizer through its slot.
#[derive(Debug, Default)]
pub struct CertificateApproval {
    pub authorizer: AuthorizerSlot,
}

#[async_trait::async_trait]
impl ValidatingPlugin for CertificateApproval {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn validate(
        &self,
        a: &Attributes<'_>,
        _state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if a.operation != Operation::Update
            || !a.is("certificates.k8s.io", "certificatesigningrequests")
            || a.subresource != "approval"
        {
            return Ok(());
        }
        let Some(csr) = a.object() else { return Ok(()) };
        let signer = csr["spec"]["signerName"].as_str().unwrap_or("");
        if authorized_for_signer(&self.authorizer, &a.user, "approve", signer) {
            return Ok(());
        }
        Err(AdmissionError::forbidden(
            a,
            format!("user not permitted to approve requests with signerName {signer:?}"),
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::attributes::*;
    use crate::authorizer::testing::Grants;
    use crate::state::Snapshot;

    pub(crate) fn csr_write<'a>(
        object: &'a mut serde_json::Value,
        user: &'a str,
        subresource: &'a str,
        operation: Operation,
    ) -> Attributes<'a> {
        Attributes {
            operation,
            user: UserInfo { name: user, ..Default::default() },
            resource: GroupVersionResource {
                group: "certificates.k8s.io",
                version: "v1",
                resource: "certificatesigningrequests",
            },
            subresource,
            kind: GroupVersionKind {
                group: "certificates.k8s.io",
                version: "v1",
                kind: "CertificateSigningRequest",
            },
            namespace: "",
            name: "req",
            object: Some(object),
            old_object: None,
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        }
    }

    #[tokio::test]
    async fn approving_needs_approve_on_the_signer() {
        let plugin = CertificateApproval {
            authorizer: AuthorizerSlot::with(Arc::new(Grants(vec![(
                "alice",
                "approve",
                "example.com/*",
            )]))),
        };
        let state = Snapshot::default();
        let mut csr = json!({"metadata": {"name": "req"}, "spec": {"signerName": "example.com/x"}});
        let a = csr_write(&mut csr, "alice", "approval", Operation::Update);
        plugin.validate(&a, &state).await.unwrap();
        let a = csr_write(&mut csr, "bob", "approval", Operation::Update);
        assert_eq!(
            plugin.validate(&a, &state).await.unwrap_err().to_string(),
            "certificatesigningrequests.certificates.k8s.io \"req\" is forbidden: user not permitted to approve requests with signerName \"example.com/x\""
        );
        // Other writes are not its business.
        let a = csr_write(&mut csr, "bob", "status", Operation::Update);
        plugin.validate(&a, &state).await.unwrap();
    }
}
