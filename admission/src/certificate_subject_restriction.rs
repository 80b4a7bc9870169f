//! CertificateSubjectRestriction (upstream's `certificates/subjectrestriction` plugin): a
//! CertificateSigningRequest for the `kubernetes.io/kube-apiserver-client` signer may not ask
//! for the `system:masters` group, whoever creates it (a certificate in that group bypasses
//! authorization altogether).

use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::state::ClusterState;
use crate::ValidatingPlugin;

pub const NAME: &str = "CertificateSubjectRestriction";

const SIGNER: &str = "kubernetes.io/kube-apiserver-client";
const MASTERS: &str = "system:masters";

/// The plugin.
#[derive(Debug, Default)]
pub struct CertificateSubjectRestriction;

#[async_trait::async_trait]
impl ValidatingPlugin for CertificateSubjectRestriction {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn validate(
        &self,
        a: &Attributes<'_>,
        _state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if a.operation != Operation::Create
            || !a.is("certificates.k8s.io", "certificatesigningrequests")
            || !a.subresource.is_empty()
        {
            return Ok(());
        }
        let Some(csr) = a.object() else { return Ok(()) };
        let signer = csr["spec"]["signerName"].as_str().unwrap_or("");
        if signer != SIGNER {
            return Ok(());
        }
        let request = csr["spec"]["request"].as_str().unwrap_or("");
        let pem = base64_decode(request);
        let parsed = rkube_certs::csr::parse_request(&pem).map_err(|e| {
            let e = e.to_string();
            let e = e.strip_prefix("invalid certificate request: ").unwrap_or(&e).to_string();
            AdmissionError::forbidden(a, format!("failed to parse CSR: {e}"))
        })?;
        if parsed.organizations.iter().any(|o| o == MASTERS) {
            return Err(AdmissionError::forbidden(
                a,
                format!("use of {signer} signer with {MASTERS} group is not allowed"),
            ));
        }
        Ok(())
    }
}

/// A `[]byte` field's bytes (standard base64 in JSON).
fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text.trim()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use serde_json::json;

    use super::*;
    use crate::certificate_approval::tests::csr_write;
    use crate::state::Snapshot;

    /// A CSR for CN=u, O=system:masters made with the openssl CLI.
    fn request(orgs: &str) -> String {
        use std::process::Command;
        let dir = std::env::temp_dir().join(format!("rkube-subject-{}-{orgs}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = dir.join("k");
        let out = Command::new("openssl")
            .args(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"])
            .arg("-keyout")
            .arg(&key)
            .args(["-subj", &format!("/O={orgs}/CN=u")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        std::fs::remove_dir_all(&dir).ok();
        base64::engine::general_purpose::STANDARD.encode(out.stdout)
    }

    #[tokio::test]
    async fn system_masters_is_refused_for_the_client_signer_only() {
        let state = Snapshot::default();
        let plugin = CertificateSubjectRestriction;
        let mut csr = json!({"spec": {"signerName": SIGNER, "request": request("system:masters")}});
        let a = csr_write(&mut csr, "admin", "", Operation::Create);
        assert_eq!(
            plugin.validate(&a, &state).await.unwrap_err().to_string(),
            "certificatesigningrequests.certificates.k8s.io \"req\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
        );
        let mut other =
            json!({"spec": {"signerName": "example.com/x", "request": request("system:masters")}});
        let a = csr_write(&mut other, "admin", "", Operation::Create);
        plugin.validate(&a, &state).await.unwrap();
        let mut devs = json!({"spec": {"signerName": SIGNER, "request": request("devs")}});
        let a = csr_write(&mut devs, "admin", "", Operation::Create);
        plugin.validate(&a, &state).await.unwrap();
    }
}
