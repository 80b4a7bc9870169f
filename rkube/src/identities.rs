//! Who the parts of `rkube server` are when they call its API: each in-process component
//! gets its own client certificate and kubeconfig in the data dir, with the user name
//! upstream's component has, so RBAC and the Node authorizer give each only what it needs
//! (as kubeadm writes `scheduler.conf`, `kubelet.conf`, ...). The certificates are issued
//! anew at every start from the cluster CA; the kubeconfigs are 0600.

use std::path::{Path, PathBuf};

use anyhow::Context;
use rkube_certs::{KubeconfigSpec, Pki};

/// `system:kube-scheduler`: upstream's scheduler user (ClusterRole `system:kube-scheduler`).
pub const SCHEDULER: &str = "system:kube-scheduler";
/// `system:kube-controller-manager`, which gets each controller its service account's
/// credentials (ClusterRole `system:kube-controller-manager`).
pub const CONTROLLER_MANAGER: &str = "system:kube-controller-manager";
/// `system:kube-proxy` (ClusterRole `system:node-proxier`).
pub const PROXY: &str = "system:kube-proxy";
/// `system:rkube-dns`: the node's cluster DNS (ClusterRole `system:rkube-dns`).
pub const DNS: &str = "system:rkube-dns";
/// `system:rkube-local-path-provisioner`: the node's local-path provisioner (ClusterRole
/// `system:rkube-local-path-provisioner`, what k3s's provisioner account may do).
pub const LOCAL_PATH: &str = "system:rkube-local-path-provisioner";

/// Writes `DIR/<file>` for the user `cn` in `groups` against `url`; returns its path.
pub fn write(
    pki: &Pki,
    dir: &Path,
    url: &str,
    file: &str,
    cn: &str,
    groups: &[&str],
) -> anyhow::Result<PathBuf> {
    let pair = pki
        .issue_client_cert(cn, groups, rkube_certs::LEAF_VALIDITY_DAYS)
        .with_context(|| format!("cannot issue a client certificate for {cn}"))?;
    let mut spec = KubeconfigSpec::admin(url, pki.ca_cert_pem(), &pair);
    spec.user_name = cn.to_string();
    let path = dir.join(file);
    rkube_certs::write_kubeconfig(&path, &spec)?;
    Ok(path)
}

/// The kubelet of node `name`: `system:node:<name>` in `system:nodes`.
pub fn kubelet(pki: &Pki, dir: &Path, url: &str, name: &str) -> anyhow::Result<PathBuf> {
    write(pki, dir, url, "kubelet.kubeconfig", &format!("system:node:{name}"), &["system:nodes"])
}
