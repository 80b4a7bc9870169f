//! CertificateSigning (upstream's `certificates/signing` plugin): a status write that sets
//! or changes a CertificateSigningRequest's `status.certificate` needs the `sign` verb on the
//! `signers` resource of certificates.k8s.io, named for the request's signer or `<domain>/*`.

use crate::attributes::{Attributes, Operation};
use crate::authorizer::{authorized_for_signer, AuthorizerSlot};
use crate::error::AdmissionError;
use crate::state::ClusterState;
use crate::ValidatingPlugin;

pub const NAME: &str = "CertificateSigning";

/// The plugin; asks the server's authorizer through its slot.
#[derive(Debug, Default)]
pub struct CertificateSigning {
    pub authorizer: AuthorizerSlot,
}

#[async_trait::async_trait]
impl ValidatingPlugin for CertificateSigning {
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
            || a.subresource != "status"
        {
            return Ok(());
        }
        let (Some(csr), Some(old)) = (a.object(), a.old_object) else { return Ok(()) };
        // Only a change of the certificate needs the permission.
        let certificate =
            |v: &serde_json::Value| v["status"]["certificate"].as_str().unwrap_or("").to_string();
        if certificate(csr) == certificate(old) {
            return Ok(());
        }
        let signer = old["spec"]["signerName"].as_str().unwrap_or("");
        if authorized_for_signer(&self.authorizer, &a.user, "sign", signer) {
            return Ok(());
        }
        Err(AdmissionError::forbidden(
            a,
            format!("user not permitted to sign requests with signerName {signer:?}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::authorizer::testing::Grants;
    use crate::certificate_approval::tests::csr_write;
    use crate::state::Snapshot;

    #[tokio::test]
    async fn setting_the_certificate_needs_sign_on_the_signer() {
        let plugin = CertificateSigning {
            authorizer: AuthorizerSlot::with(Arc::new(Grants(vec![(
                "signer",
                "sign",
                "example.com/x",
            )]))),
        };
        let state = Snapshot::default();
        let old = json!({"spec": {"signerName": "example.com/x"}, "status": {}});
        let mut csr = old.clone();
        csr["status"]["certificate"] = json!("Y2VydA==");
        let mut a = csr_write(&mut csr, "signer", "status", Operation::Update);
        a.old_object = Some(&old);
        plugin.validate(&a, &state).await.unwrap();
        a.user.name = "mallory";
        assert_eq!(
            plugin.validate(&a, &state).await.unwrap_err().to_string(),
            "certificatesigningrequests.certificates.k8s.io \"req\" is forbidden: user not permitted to sign requests with signerName \"example.com/x\""
        );
        // A status write that leaves the certificate alone needs nothing.
        let mut same = old.clone();
        let mut a = csr_write(&mut same, "mallory", "status", Operation::Update);
        a.old_object = Some(&old);
        plugin.validate(&a, &state).await.unwrap();
    }
}
