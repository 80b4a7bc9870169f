//! CertificateSigningRequests (`certificates.k8s.io/v1`): any name; the spec records
//! who asked (whatever the body said) and never changes after create.

use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Value};

use crate::strategy::{Requester, SelectableField, Strategy};
use crate::tables::{
    age, arr, human_duration, name, opt_int, or_none, st, text, TablePrinter, AGE, NAME,
};
use crate::validation;
use crate::validation::{FieldError, NameRule};

/// The strategy of this resource.
#[derive(Debug)]
pub struct CertificateSigningRequests;

impl Strategy for CertificateSigningRequests {
    fn name_rule(&self) -> NameRule {
        NameRule::Any
    }

    fn record_requester(&self, obj: &mut Value, requester: Option<&Requester>) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        for field in ["username", "uid", "groups", "extra"] {
            spec.shift_remove(field);
        }
        let Some(requester) = requester else { return };
        // As Go writes the fields: empty strings and lists are left out.
        if !requester.name.is_empty() {
            spec.insert("username".into(), json!(requester.name));
        }
        if !requester.uid.is_empty() {
            spec.insert("uid".into(), json!(requester.uid));
        }
        if !requester.groups.is_empty() {
            spec.insert("groups".into(), json!(requester.groups));
        }
        if !requester.extra.is_empty() {
            spec.insert("extra".into(), json!(requester.extra));
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, _subresource: Option<&str>) {
        new["spec"] = old["spec"].clone();
    }

    /// Upstream's status and approval strategies: a status write keeps the Approved and
    /// Denied conditions as they were (when it kept as many of them); an approval changes
    /// only the conditions, and keeps the Failed ones. Conditions get their timestamps.
    fn prepare_for_subresource_update(&self, new: &mut Value, old: &Value, sub: &str) {
        match sub {
            "status" => {
                keep_conditions(new, old, "Approved");
                keep_conditions(new, old, "Denied");
            }
            "approval" => {
                let conditions = new["status"].get("conditions").cloned();
                new["status"] = old.get("status").cloned().unwrap_or_else(|| json!({}));
                match conditions {
                    Some(c) => new["status"]["conditions"] = c,
                    None => {
                        new["status"].as_object_mut().map(|s| s.remove("conditions"));
                    }
                }
                keep_conditions(new, old, "Failed");
            }
            _ => return,
        }
        stamp_conditions(new, old);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::certificates::certificate_signing_request(obj, old)
    }

    fn validate_subresource_update(&self, new: &Value, old: &Value, sub: &str) -> Vec<FieldError> {
        validation::certificates::certificate_signing_request_subresource(new, old, sub)
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        &[("spec.signerName", &["spec", "signerName"])]
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// Upstream's `preserveConditionInstances`: when `new` has as many conditions of `kind` as
/// `old`, they are put back as they were.
fn keep_conditions(new: &mut Value, old: &Value, kind: &str) {
    let of = |v: &Value| -> Vec<usize> {
        arr(v, &["status", "conditions"])
            .iter()
            .enumerate()
            .filter(|(_, c)| st(c, &["type"]) == kind)
            .map(|(i, _)| i)
            .collect()
    };
    let (was, now) = (of(old), of(new));
    if was.len() != now.len() {
        return;
    }
    for (o, n) in was.into_iter().zip(now) {
        new["status"]["conditions"][n] = old["status"]["conditions"][o].clone();
    }
}

/// Upstream's `populateConditionTimestamps`: a condition without `lastUpdateTime` gets now;
/// without `lastTransitionTime`, that of the old condition of the same type and status, or
/// now.
fn stamp_conditions(new: &mut Value, old: &Value) {
    let now = Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let old_conditions = arr(old, &["status", "conditions"]).to_vec();
    let Some(conditions) = new["status"].get_mut("conditions").and_then(Value::as_array_mut) else {
        return;
    };
    for c in conditions.iter_mut().filter(|c| c.is_object()) {
        if st(c, &["lastUpdateTime"]).is_empty() {
            c["lastUpdateTime"] = json!(now);
        }
        if st(c, &["lastTransitionTime"]).is_empty() {
            let since = old_conditions
                .iter()
                .find(|o| {
                    st(o, &["type"]) == st(c, &["type"])
                        && st(o, &["status"]) == st(c, &["status"])
                        && !st(o, &["lastTransitionTime"]).is_empty()
                })
                .map_or_else(|| json!(now), |o| o["lastTransitionTime"].clone());
            c["lastTransitionTime"] = since;
        }
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        AGE,
        text("SignerName", D_CSR_SIGNER),
        text("Requestor", D_CSR_REQUEST),
        text("RequestedDuration", D_CSR_EXPIRATION),
        text("Condition", D_CSR_CONDITIONS),
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let duration = match opt_int(obj, &["spec", "expirationSeconds"]) {
        Some(s) => human_duration(Duration::seconds(s)),
        None => "<none>".to_string(),
    };
    vec![
        name(obj),
        age(obj, now),
        or_none(st(obj, &["spec", "signerName"])).into(),
        st(obj, &["spec", "username"]).into(),
        duration.into(),
        csr_condition(obj).into(),
    ]
}

fn csr_condition(obj: &Value) -> String {
    let conditions = arr(obj, &["status", "conditions"]);
    let has = |kind: &str| conditions.iter().any(|c| st(c, &["type"]) == kind);
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !st(obj, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    status
}

// Column descriptions: the API field documentation upstream takes them from.
const D_CSR_SIGNER: &str = "signerName indicates the requested signer, and is a qualified name.\n\nList/watch requests for CertificateSigningRequests can filter on this field using a \"spec.signerName=NAME\" fieldSelector.\n\nWell-known Kubernetes signers are:\n1. \"kubernetes.io/kube-apiserver-client\": issues client certificates that can be used to authenticate to kube-apiserver.\nRequests for this signer are never auto-approved by kube-controller-manager, can be issued by the \"csrsigning\" controller in kube-controller-manager.\n2. \"kubernetes.io/kube-apiserver-client-kubelet\": issues client certificates that kubelets use to authenticate to kube-apiserver.\nRequests for this signer can be auto-approved by the \"csrapproving\" controller in kube-controller-manager, and can be issued by the \"csrsigning\" controller in kube-controller-manager.\n3. \"kubernetes.io/kubelet-serving\" issues serving certificates that kubelets use to serve TLS endpoints, which kube-apiserver can connect to securely.\nRequests for this signer are never auto-approved by kube-controller-manager, and can be issued by the \"csrsigning\" controller in kube-controller-manager.\n\nMore details are available at https://k8s.io/docs/reference/access-authn-authz/certificate-signing-requests/#kubernetes-signers\n\nCustom signerNames can also be specified. The signer defines:\n1. Trust distribution: how trust (CA bundles) are distributed.\n2. Permitted subjects: and behavior when a disallowed subject is requested.\n3. Required, permitted, or forbidden x509 extensions in the request (including whether subjectAltNames are allowed, which types, restrictions on allowed values) and behavior when a disallowed extension is requested.\n4. Required, permitted, or forbidden key usages / extended key usages.\n5. Expiration/certificate lifetime: whether it is fixed by the signer, configurable by the admin.\n6. Whether or not requests for CA certificates are allowed.";
const D_CSR_REQUEST: &str = "request contains an x509 certificate signing request encoded in a \"CERTIFICATE REQUEST\" PEM block. When serialized as JSON or YAML, the data is additionally base64-encoded.";
const D_CSR_EXPIRATION: &str = "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n1. Old signer that is unaware of the field (such as the in-tree\nimplementations prior to v1.22)\n2. Signer whose configured maximum is shorter than the requested duration\n3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.";
const D_CSR_CONDITIONS: &str = "conditions applied to the request. Known conditions are \"Approved\", \"Denied\", and \"Failed\".";
