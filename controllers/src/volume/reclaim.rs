//! How a released volume with the `Delete` policy is deleted, as upstream's PV controller
//! finds a deleter: a volume made by an external provisioner (`pv.kubernetes.io/provisioned-by`
//! not `kubernetes.io/...`, or a CSI volume) is left to it; a hostPath volume is emptied by
//! upstream's in-tree host-path deleter, which only removes directories under `/tmp`; anything
//! else has no deleter (rkube has no other in-tree volume plugins).

use k8s_openapi::api::core::v1::PersistentVolume;
use rkube_apis::persistent_volumes::ANN_DYNAMICALLY_PROVISIONED;

/// Why a volume with the Delete policy could not be deleted (upstream's texts, in
/// `VolumeFailedDelete` events).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeleteError {
    #[error("host_path deleter only supports /tmp/.+ but received provided {0}")]
    HostPathOutsideTmp(String),
    #[error("no deletable volume plugin matched")]
    NoPlugin,
    #[error(
        "error getting deleter volume plugin for volume {0:?}: no deletable volume plugin matched"
    )]
    NoPluginFor(String),
    #[error("{0}")]
    Io(String),
}

/// Deletes what a hostPath volume holds, as upstream's host-path deleter: only directories
/// under `/tmp` (anything else is refused with upstream's message).
pub fn delete_host_path(path: &str) -> Result<(), DeleteError> {
    let allowed = path.strip_prefix("/tmp/").is_some_and(|rest| !rest.is_empty());
    if !allowed {
        return Err(DeleteError::HostPathOutsideTmp(path.to_string()));
    }
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(DeleteError::Io(e.to_string())),
    }
}

/// How a volume with the Delete policy is deleted.
#[derive(Debug, PartialEq, Eq)]
pub enum Deleter {
    /// Its external provisioner deletes it (and its PV object).
    External,
    /// A hostPath volume: upstream's in-tree host-path deleter.
    HostPath(String),
}

/// The deleter of `volume`, or upstream's error when there is none.
pub fn deleter_of(volume: &PersistentVolume) -> Result<Deleter, DeleteError> {
    let annotations = volume.metadata.annotations.as_ref();
    let provisioner = annotations.and_then(|a| a.get(ANN_DYNAMICALLY_PROVISIONED));
    let spec = volume.spec.as_ref();
    let host_path = spec.and_then(|s| s.host_path.as_ref()).map(|h| h.path.clone());
    match provisioner.map(String::as_str) {
        Some(p) if !p.is_empty() => {
            if !p.starts_with("kubernetes.io/") {
                return Ok(Deleter::External);
            }
            match (p, host_path) {
                ("kubernetes.io/host-path", Some(path)) => Ok(Deleter::HostPath(path)),
                _ => Err(DeleteError::NoPlugin),
            }
        }
        _ => {
            if spec.is_some_and(|s| s.csi.is_some()) {
                return Ok(Deleter::External);
            }
            match host_path {
                Some(path) => Ok(Deleter::HostPath(path)),
                None => {
                    Err(DeleteError::NoPluginFor(volume.metadata.name.clone().unwrap_or_default()))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::volume::binder::tests::volume;

    #[test]
    fn deleters_as_upstream() {
        let external =
            volume(json!({"annotations": {ANN_DYNAMICALLY_PROVISIONED: "rancher.io/local-path"},
                                     "hostPath": {"path": "/var/lib/x"}}));
        assert_eq!(deleter_of(&external), Ok(Deleter::External));
        let host = volume(json!({"hostPath": {"path": "/tmp/data"}}));
        assert_eq!(deleter_of(&host), Ok(Deleter::HostPath("/tmp/data".into())));
        let local = volume(json!({"local": {"path": "/mnt/disk"}}));
        assert_eq!(
            deleter_of(&local).unwrap_err().to_string(),
            "error getting deleter volume plugin for volume \"pv1\": no deletable volume plugin matched"
        );
        let in_tree =
            volume(json!({"annotations": {ANN_DYNAMICALLY_PROVISIONED: "kubernetes.io/aws-ebs"}}));
        assert_eq!(deleter_of(&in_tree), Err(DeleteError::NoPlugin));
        assert_eq!(
            delete_host_path("/srv/data").unwrap_err().to_string(),
            "host_path deleter only supports /tmp/.+ but received provided /srv/data"
        );
        assert!(delete_host_path("/tmp/").is_err());
        let path =
            std::path::PathBuf::from(format!("/tmp/rkube-hostpath-test-{}", std::process::id()));
        std::fs::create_dir_all(path.join("sub")).unwrap();
        std::fs::write(path.join("sub/file"), "x").unwrap();
        delete_host_path(path.to_str().unwrap()).unwrap();
        assert!(!path.exists());
    }
}
