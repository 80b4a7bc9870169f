//! The `csrsigning-controller`: signs approved requests of kubernetes.io's three signers
//! with the cluster CA (`--cluster-signing-cert-file`, `--cluster-signing-key-file`), valid
//! for `spec.expirationSeconds` (at least 10 minutes) up to `--cluster-signing-duration`.
//! A request that breaks its signer's rules gets a `Failed` condition with reason
//! `SignerValidationFailure` and the rule it broke, as upstream's.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::ByteString;
use kube::api::{Api, PostParams};
use rkube_certs::csr::{parse_request, CertificateRequest, Signer as Ca};

use super::{certificate, condition, is_approved, usages, Handler, SyncError};

pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";
pub const KUBE_APISERVER_CLIENT_KUBELET: &str = "kubernetes.io/kube-apiserver-client-kubelet";
pub const KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";
/// The shortest validity the signer gives (twice its five minutes of backdating).
const MIN_DURATION: Duration = Duration::from_secs(600);

/// kube-controller-manager's signing flags.
#[derive(Clone, Debug)]
pub struct Config {
    /// `--cluster-signing-cert-file` and `--cluster-signing-key-file`: without them the
    /// signer does not run.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// `--cluster-signing-duration`: the longest validity given.
    pub duration: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config { cert_file: None, key_file: None, duration: Duration::from_secs(8760 * 3600) }
    }
}

/// The handler: the CA and the longest validity.
pub struct Signer {
    pub ca: Ca,
    pub duration: Duration,
}

/// The validity of a certificate for a request asking for `expiration_seconds`
/// (upstream's `signer.duration`).
pub fn duration(max: Duration, expiration_seconds: Option<i32>) -> Duration {
    let Some(seconds) = expiration_seconds else { return max };
    let asked = Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    asked.clamp(MIN_DURATION, max.max(MIN_DURATION)).min(max)
}

/// What the signer `signer_name` requires of a request, as upstream's checks say it:
/// `None` when the signer is not one of this controller's.
pub fn check(
    signer_name: &str,
    req: &CertificateRequest,
    usages: &[String],
) -> Option<Result<(), String>> {
    let set = |list: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    };
    let mut have: Vec<String> = usages.to_vec();
    have.sort();
    have.dedup();
    let nodes = || req.organizations == ["system:nodes"];
    let node_cn = || req.common_name.starts_with("system:node:");
    let result = match signer_name {
        KUBE_APISERVER_CLIENT => {
            let mut client_auth = false;
            let mut bad = None;
            for u in usages {
                match u.as_str() {
                    "digital signature" | "key encipherment" => {}
                    "client auth" => client_auth = true,
                    other => {
                        bad = Some(format!("invalid usage for client certificate: {other}"));
                        break;
                    }
                }
            }
            match bad {
                Some(e) => Err(e),
                None if !client_auth => {
                    Err("missing required usage for client certificate: client auth".into())
                }
                None => Ok(()),
            }
        }
        KUBE_APISERVER_CLIENT_KUBELET => {
            let full = set(&["client auth", "digital signature", "key encipherment"]);
            let no_rsa = set(&["client auth", "digital signature"]);
            if !nodes() {
                Err("subject organization is not system:nodes".to_string())
            } else if !req.dns_names.is_empty() {
                Err("DNS subjectAltNames are not allowed".into())
            } else if !req.email_addresses.is_empty() {
                Err("Email subjectAltNames are not allowed".into())
            } else if !req.ip_addresses.is_empty() {
                Err("IP subjectAltNames are not allowed".into())
            } else if !req.uris.is_empty() {
                Err("URI subjectAltNames are not allowed".into())
            } else if !node_cn() {
                Err("subject common name does not begin with system:node:".into())
            } else if have != full && have != no_rsa {
                Err(format!("usages did not match [{}]", full.join(" ")))
            } else {
                Ok(())
            }
        }
        KUBELET_SERVING => {
            let full = set(&["digital signature", "key encipherment", "server auth"]);
            let no_rsa = set(&["digital signature", "server auth"]);
            if !nodes() {
                Err("subject organization is not system:nodes".to_string())
            } else if req.dns_names.is_empty() && req.ip_addresses.is_empty() {
                Err("DNS or IP subjectAltName is required".into())
            } else if !req.email_addresses.is_empty() {
                Err("Email subjectAltNames are not allowed".into())
            } else if !req.uris.is_empty() {
                Err("URI subjectAltNames are not allowed".into())
            } else if have != full && have != no_rsa {
                Err(format!("usages did not match [{}]", full.join(" ")))
            } else if !node_cn() {
                Err("subject common name does not begin with system:node:".into())
            } else {
                Ok(())
            }
        }
        _ => return None,
    };
    Some(result)
}

#[async_trait::async_trait]
impl Handler for Signer {
    async fn handle(
        &self,
        api: &Api<CertificateSigningRequest>,
        mut csr: CertificateSigningRequest,
    ) -> Result<Option<Duration>, SyncError> {
        // Upstream's certificate controller leaves issued requests alone; its signer
        // unapproved and failed ones.
        if certificate(&csr).is_some() || !is_approved(&csr) || condition(&csr, "Failed").is_some()
        {
            return Ok(None);
        }
        let name = csr.metadata.name.clone().unwrap_or_default();
        let signer_name = csr.spec.signer_name.clone();
        let req = parse_request(&csr.spec.request.0)
            .map_err(|e| SyncError::Request(format!("unable to parse csr {name:?}: {e}")))?;
        let Some(verdict) = check(&signer_name, &req, &usages(&csr)) else { return Ok(None) };
        let status = csr.status.get_or_insert_with(CertificateSigningRequestStatus::default);
        match verdict {
            Err(message) => {
                status.conditions.get_or_insert_with(Vec::new).push(
                    CertificateSigningRequestCondition {
                        type_: "Failed".into(),
                        status: "True".into(),
                        reason: Some("SignerValidationFailure".into()),
                        message: Some(message),
                        last_update_time: Some(Time(k8s_openapi::jiff::Timestamp::now())),
                        last_transition_time: None,
                    },
                );
            }
            Ok(()) => {
                let ttl = duration(self.duration, csr.spec.expiration_seconds);
                let pem = self
                    .ca
                    .sign(&req, &usages(&csr), ttl)
                    .map_err(|e| SyncError::Request(format!("error auto signing csr: {e}")))?;
                let status =
                    csr.status.get_or_insert_with(CertificateSigningRequestStatus::default);
                status.certificate = Some(ByteString(pem.into_bytes()));
            }
        }
        api.replace_status(&name, &PostParams::default(), &csr).await?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_durations_are_honoured_within_bounds() {
        let max = Duration::from_secs(8760 * 3600);
        assert_eq!(duration(max, None), max);
        assert_eq!(duration(max, Some(3600)), Duration::from_secs(3600));
        assert_eq!(duration(max, Some(60)), MIN_DURATION);
        assert_eq!(duration(Duration::from_secs(7200), Some(86_400)), Duration::from_secs(7200));
    }
}
