//! CertificateSigningRequests end to end, with the real binary, stock kubectl and the
//! openssl CLI: an admin mints a user's certificate the standard way (key and request with
//! openssl, `kubectl create -f`, `kubectl certificate approve`, `status.certificate`), the
//! certificate lasts what `expirationSeconds` asked, and the user can do exactly what a
//! narrow Role grants; denials; the CertificateApproval and CertificateSubjectRestriction
//! refusals; and the signer's `Failed` condition for a kubelet-serving request with the
//! wrong subject.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine as _;
use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::identity::service_account_kubeconfig;

/// A fresh key and a request for `subject` (`/O=devs/CN=jane`), with `sans` (openssl's
/// `subjectAltName` syntax) when given: the key's path and the request's PEM.
fn key_and_request(dir: &Path, name: &str, subject: &str, sans: Option<&str>) -> (PathBuf, String) {
    let key = dir.join(format!("{name}.key"));
    let mut cmd = Command::new("openssl");
    cmd.args(["req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout"])
        .arg(&key)
        .args(["-subj", subject]);
    if let Some(sans) = sans {
        cmd.args(["-addext", &format!("subjectAltName={sans}")]);
    }
    let out = cmd.output().expect("openssl");
    assert!(out.status.success(), "openssl: {}", String::from_utf8_lossy(&out.stderr));
    (key, String::from_utf8(out.stdout).unwrap())
}

/// The CertificateSigningRequest manifest of the docs' "normal user" recipe.
fn manifest(
    name: &str,
    request_pem: &str,
    signer: &str,
    usages: &[&str],
    seconds: Option<u32>,
) -> String {
    let request = base64::engine::general_purpose::STANDARD.encode(request_pem);
    let usages: String = usages.iter().map(|u| format!("  - {u}\n")).collect();
    let expiration = seconds.map(|s| format!("  expirationSeconds: {s}\n")).unwrap_or_default();
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: {name}\nspec:\n  request: {request}\n  signerName: {signer}\n{expiration}  usages:\n{usages}"
    )
}

/// Waits for the request's issued certificate (PEM).
fn issued(s: &RkubeServer, name: &str) -> String {
    let b64 = s.wait_until("certificate issued", Duration::from_secs(60), || {
        let out = s.ok(&["get", "csr", name, "-o", "jsonpath={.status.certificate}"]);
        (!out.trim().is_empty(), out)
    });
    let pem = base64::engine::general_purpose::STANDARD.decode(b64.trim()).unwrap();
    String::from_utf8(pem).unwrap()
}

/// `openssl x509` on a PEM certificate: `-noout` plus `args`.
fn x509(pem: &str, args: &[&str]) -> String {
    let mut child = Command::new("openssl")
        .args(["x509", "-noout"])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(pem.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// Seconds since the epoch of an `openssl x509 -dates` line's date.
fn epoch(date: &str) -> i64 {
    let out = Command::new("date").args(["-u", "-d", date, "+%s"]).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().parse().unwrap()
}

/// A kubeconfig for a client certificate and key.
fn cert_kubeconfig(s: &RkubeServer, name: &str, cert_pem: &str, key: &Path) -> PathBuf {
    let dir = s.data_dir.path();
    let cert = dir.join(format!("{name}.crt"));
    std::fs::write(&cert, cert_pem).unwrap();
    let path = dir.join(format!("{name}.kubeconfig"));
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    client-certificate: {}\n    client-key: {}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n",
        s.port,
        dir.join("pki/ca.crt").display(),
        cert.display(),
        key.display()
    );
    std::fs::write(&path, config).unwrap();
    path
}

#[test]
fn an_admin_mints_a_users_certificate_and_rbac_bounds_the_user() {
    let s = RkubeServer::start();
    let dir = s.data_dir.path();
    let (key, request) = key_and_request(dir, "jane", "/O=devs/CN=jane", None);
    let csr = manifest(
        "jane",
        &request,
        "kubernetes.io/kube-apiserver-client",
        &["client auth"],
        Some(3600),
    );
    s.ok_stdin(&["create", "-f", "-"], &csr);
    let listed = s.ok(&["get", "csr", "jane"]);
    assert!(
        listed.contains("kubernetes.io/kube-apiserver-client") && listed.contains("Pending"),
        "{listed}"
    );
    assert_eq!(
        s.ok(&["certificate", "approve", "jane"]).trim(),
        "certificatesigningrequest.certificates.k8s.io/jane approved"
    );
    let pem = issued(&s, "jane");
    let approved = s.ok(&["get", "csr", "jane", "-o", "jsonpath={.status.conditions[0].type} {.status.conditions[0].reason} {.status.conditions[0].lastUpdateTime}"]);
    let fields: Vec<&str> = approved.split(' ').collect();
    assert_eq!(fields[..2], ["Approved", "KubectlApprove"], "{approved}");
    assert!(!fields[2].is_empty(), "{approved}");
    assert!(s.ok(&["get", "csr", "jane"]).contains("Approved,Issued"));
    // Subject as asked, signed by the cluster CA, for the hour asked (from five minutes back).
    let subject = x509(&pem, &["-subject"]);
    assert!(subject.contains("O = devs") && subject.contains("CN = jane"), "{subject}");
    let dates = x509(&pem, &["-dates"]);
    let date = |field: &str| {
        let line = dates.lines().find(|l| l.starts_with(field)).unwrap();
        epoch(line.split_once('=').unwrap().1)
    };
    assert_eq!(date("notAfter") - date("notBefore"), 3600 + 300, "{dates}");
    std::fs::write(dir.join("jane-issued.crt"), &pem).unwrap();
    let verify = Command::new("openssl")
        .args(["verify", "-CAfile"])
        .arg(dir.join("pki/ca.crt"))
        .arg(dir.join("jane-issued.crt"))
        .output()
        .unwrap();
    assert!(verify.status.success(), "{}", String::from_utf8_lossy(&verify.stdout));

    // Jane may list pods in default, and nothing else.
    s.ok(&["create", "role", "pod-reader", "--verb=get,list", "--resource=pods"]);
    s.ok(&["create", "rolebinding", "jane-reads-pods", "--role=pod-reader", "--user=jane"]);
    let jane = cert_kubeconfig(&s, "jane", &pem, &key);
    let (ok, out, err) = s.kubectl_as(&jane, &["get", "pods"]);
    assert!(ok, "{out}{err}");
    let (ok, _, err) = s.kubectl_as(&jane, &["get", "secrets"]);
    assert!(!ok);
    assert_eq!(
        err.trim(),
        "Error from server (Forbidden): secrets is forbidden: User \"jane\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""
    );
    let (ok, _, err) = s.kubectl_as(&jane, &["get", "pods", "-n", "kube-system"]);
    assert!(!ok);
    assert!(err.contains("User \"jane\" cannot list resource \"pods\" in API group \"\" in the namespace \"kube-system\""), "{err}");
    assert_eq!(
        s.kubectl_as(&jane, &["auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}"]).1,
        "[\"devs\",\"system:authenticated\"]"
    );
}

#[test]
fn approval_needs_approve_on_the_signer_and_denials_stand() {
    let s = RkubeServer::start();
    let dir = s.data_dir.path();
    let (_, request) = key_and_request(dir, "bob", "/CN=bob", None);
    s.ok_stdin(
        &["create", "-f", "-"],
        &manifest(
            "bob",
            &request,
            "kubernetes.io/kube-apiserver-client",
            &["client auth", "digital signature"],
            None,
        ),
    );
    // A user who may write the approval subresource but not approve for the signer.
    let manifest_role = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: csr-writer\nrules:\n- apiGroups: [certificates.k8s.io]\n  resources: [certificatesigningrequests]\n  verbs: [get, list]\n- apiGroups: [certificates.k8s.io]\n  resources: [certificatesigningrequests/approval]\n  verbs: [update]\n";
    s.ok_stdin(&["create", "-f", "-"], manifest_role);
    s.ok(&[
        "create",
        "clusterrolebinding",
        "approver",
        "--clusterrole=csr-writer",
        "--serviceaccount=default:approver",
    ]);
    let approver = service_account_kubeconfig(&s, "approver");
    let (ok, _, err) = s.kubectl_as(&approver, &["certificate", "approve", "bob"]);
    assert!(!ok);
    assert!(
        err.contains("certificatesigningrequests.certificates.k8s.io \"bob\" is forbidden: user not permitted to approve requests with signerName \"kubernetes.io/kube-apiserver-client\""),
        "{err}"
    );
    // Granted `approve` for the signer's domain, the same user may.
    let signers = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: signer-approver\nrules:\n- apiGroups: [certificates.k8s.io]\n  resources: [signers]\n  resourceNames: [kubernetes.io/*]\n  verbs: [approve]\n";
    s.ok_stdin(&["create", "-f", "-"], signers);
    s.ok(&[
        "create",
        "clusterrolebinding",
        "approver-signers",
        "--clusterrole=signer-approver",
        "--serviceaccount=default:approver",
    ]);
    let (ok, out, err) = s.kubectl_as(&approver, &["certificate", "deny", "bob"]);
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "certificatesigningrequest.certificates.k8s.io/bob denied");
    let conditions = s.ok(&[
        "get",
        "csr",
        "bob",
        "-o",
        "jsonpath={.status.conditions[*].type} {.status.conditions[0].reason}",
    ]);
    assert_eq!(conditions.trim(), "Denied KubectlDeny");
    assert!(s.ok(&["get", "csr", "bob"]).contains("Denied"));
    // A denial is not taken back, and nothing is issued.
    let err = s.fails(&["certificate", "approve", "bob"]);
    assert!(
        err.contains("Approved and Denied conditions are mutually exclusive")
            || err.contains("is already Denied"),
        "{err}"
    );
    assert_eq!(s.ok(&["get", "csr", "bob", "-o", "jsonpath={.status.certificate}"]), "");
}

#[test]
fn system_masters_is_refused_for_the_client_signer() {
    let s = RkubeServer::start();
    let (_, request) =
        key_and_request(s.data_dir.path(), "root", "/O=system:masters/CN=root", None);
    let csr =
        manifest("root", &request, "kubernetes.io/kube-apiserver-client", &["client auth"], None);
    let err = s.fails_stdin(&["create", "-f", "-"], &csr);
    assert_eq!(
        err.trim(),
        "Error from server (Forbidden): error when creating \"STDIN\": certificatesigningrequests.certificates.k8s.io \"root\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"
    );
}

#[test]
fn a_kubelet_serving_request_with_the_wrong_subject_fails() {
    let s = RkubeServer::start();
    let (_, request) = key_and_request(
        s.data_dir.path(),
        "node",
        "/O=devs/CN=system:node:n1",
        Some("DNS:n1.example,IP:10.0.0.1"),
    );
    let usages = ["digital signature", "key encipherment", "server auth"];
    s.ok_stdin(
        &["create", "-f", "-"],
        &manifest("n1-serving", &request, "kubernetes.io/kubelet-serving", &usages, None),
    );
    s.ok(&["certificate", "approve", "n1-serving"]);
    let failed = s.wait_until("Failed condition", Duration::from_secs(60), || {
        let out = s.ok(&["get", "csr", "n1-serving", "-o", "jsonpath={.status.conditions[?(@.type==\"Failed\")].reason}: {.status.conditions[?(@.type==\"Failed\")].message}"]);
        (out.starts_with("SignerValidationFailure"), out)
    });
    assert_eq!(failed.trim(), "SignerValidationFailure: subject organization is not system:nodes");
    assert!(s.ok(&["get", "csr", "n1-serving"]).contains("Approved,Failed"));
    assert_eq!(s.ok(&["get", "csr", "n1-serving", "-o", "jsonpath={.status.certificate}"]), "");
}
