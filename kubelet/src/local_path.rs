//! The local-path provisioner, as k3s ships Rancher's: volumes of the StorageClass
//! `local-path` (provisioner `rancher.io/local-path`) are directories on the node the
//! scheduler chose for the claim's first pod, deleted with the volume.
//!
//! It runs on every node, next to the kubelet, because it makes and removes directories on
//! that node's disk (Rancher's runs one provisioner that starts helper pods on the node; here
//! the node side does the file work itself). Each node's provisioner handles only its own
//! claims and volumes: the claims whose `volume.kubernetes.io/selected-node` is this node,
//! and the volumes whose `local.path.provisioner/selected-node` is. Like any external
//! provisioner it reaches the API server only through the public API, with its own identity.
//!
//! Start at [`start`]. For a claim handed to `rancher.io/local-path` (the PV binder writes
//! `volume.kubernetes.io/storage-provisioner`) with this node selected, it makes
//! `<path>/pvc-<uid>_<namespace>_<claim>` (mode 0777, as Rancher's setup script) and creates
//! the PersistentVolume `pvc-<uid>`: a `hostPath` (`DirectoryOrCreate`) or, with the
//! `volumeType: local` annotation on the claim (or `defaultVolumeType` on the class), a
//! `local` volume, with node affinity to this node, the class's reclaim policy and mount
//! options, pre-bound to the claim (the binder finishes the binding). A `Released` volume with
//! the `Delete` policy loses its directory, then its PersistentVolume. [`storage_class`] is
//! the default class `rkube server` makes at start.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{
    HostPathVolumeSource, LocalVolumeSource, Node, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec,
    VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::Client;
use rkube_apis::persistent_volumes::{
    claim_class, claim_reference, ANN_BETA_STORAGE_PROVISIONER, ANN_DYNAMICALLY_PROVISIONED,
    ANN_IS_DEFAULT_CLASS, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER,
};
use rkube_runtime::events::{object_reference, Recorder};
use rkube_runtime::informer::{self, Change};
use rkube_runtime::store::Store;
use rkube_runtime::workqueue::WorkQueue;
use tokio::sync::mpsc;

/// The provisioner's name.
pub const PROVISIONER: &str = "rancher.io/local-path";
/// The class `rkube server` makes (k3s's).
pub const CLASS: &str = "local-path";
/// On a volume: the node its directory is on (Rancher's annotation).
pub const ANN_NODE: &str = "local.path.provisioner/selected-node";
/// The label the volumes' node affinity names.
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

const MAX_BACKOFF: Duration = Duration::from_secs(300);
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);
/// How often every claim and volume is looked at again.
const RESYNC: Duration = Duration::from_secs(30);

/// The default StorageClass `local-path`, as k3s ships it.
pub fn storage_class() -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(CLASS.into()),
            annotations: Some(BTreeMap::from([(ANN_IS_DEFAULT_CLASS.into(), "true".into())])),
            ..ObjectMeta::default()
        },
        provisioner: PROVISIONER.into(),
        reclaim_policy: Some("Delete".into()),
        volume_binding_mode: Some("WaitForFirstConsumer".into()),
        ..StorageClass::default()
    }
}

/// Creates the `local-path` class unless a class of that name exists; whether it did.
pub async fn ensure_storage_class(client: Client) -> Result<bool, kube::Error> {
    let classes: Api<StorageClass> = Api::all(client);
    match classes.create(&PostParams::default(), &storage_class()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// Where and as whom the provisioner works.
#[derive(Clone, Debug)]
pub struct Config {
    /// This node.
    pub node_name: String,
    /// Where the volumes' directories go (k3s's `--default-local-storage-path`).
    pub path: PathBuf,
}

/// Why provisioning or deleting failed (retried after a back-off).
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("claim.Spec.Selector is not supported")]
    Selector,
    #[error("NodePath only supports ReadWriteOnce and ReadWriteOncePod (1.22+) access modes")]
    AccessMode,
    #[error("\"{0}\" is not a recognised volume type")]
    VolumeType(String),
    #[error("cannot {action} {}: {error}", path.display())]
    Io { action: &'static str, path: PathBuf, error: std::io::Error },
    #[error("refusing to delete {0}: it is not a volume directory under the local storage path")]
    Outside(String),
    #[error("no HostPath or Local path set")]
    NoPath,
}

/// The handle of a running provisioner: dropping it stops it.
pub struct LocalPath(tokio::task::JoinHandle<()>);

impl Drop for LocalPath {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts the provisioner of `config.node_name`.
pub fn start(client: Client, config: Config) -> LocalPath {
    LocalPath(tokio::spawn(run(client, config)))
}

struct Provisioner {
    client: Client,
    config: Config,
    claims: Store<PersistentVolumeClaim>,
    volumes: Store<PersistentVolume>,
    classes: Store<StorageClass>,
    claim_queue: WorkQueue<String>,
    volume_queue: WorkQueue<String>,
    recorder: Recorder,
}

async fn run(client: Client, config: Config) {
    let (claim_tx, mut claim_rx) = mpsc::unbounded_channel();
    let (volume_tx, mut volume_rx) = mpsc::unbounded_channel();
    let (claims, _claim_watch) = informer::start(
        Api::<PersistentVolumeClaim>::all(client.clone()),
        watcher::Config::default(),
        vec![claim_tx],
    );
    let (volumes, _volume_watch) = informer::start(
        Api::<PersistentVolume>::all(client.clone()),
        watcher::Config::default(),
        vec![volume_tx],
    );
    let (classes, _class_watch) = informer::start(
        Api::<StorageClass>::all(client.clone()),
        watcher::Config::default(),
        Vec::new(),
    );
    for ready in [
        claims.wait_until_ready().await,
        volumes.wait_until_ready().await,
        classes.wait_until_ready().await,
    ] {
        if ready.is_err() {
            return;
        }
    }
    let component = format!("{PROVISIONER}_{}", config.node_name);
    let p = Arc::new(Provisioner {
        recorder: Recorder::on_host(client.clone(), &component, &config.node_name),
        client,
        config,
        claims,
        volumes,
        classes,
        claim_queue: WorkQueue::new(MAX_BACKOFF),
        volume_queue: WorkQueue::new(MAX_BACKOFF),
    });
    let mut workers = tokio::task::JoinSet::new();
    for claims in [true, false] {
        let p = p.clone();
        workers.spawn(async move {
            let sync = |key: String| {
                let p = p.clone();
                async move {
                    let result =
                        if claims { p.sync_claim(&key).await } else { p.sync_volume(&key).await };
                    result.map(|()| None)
                }
            };
            let queue = if claims { &p.claim_queue } else { &p.volume_queue };
            queue
                .work("local-path-provisioner", SYNC_TIMEOUT, sync, |_: &ProvisionError| false)
                .await
        });
    }
    tracing::info!(node = p.config.node_name, path = %p.config.path.display(), "local-path provisioner started");
    let mut resync = tokio::time::interval(RESYNC);
    loop {
        tokio::select! {
            change = claim_rx.recv() => match change {
                Some(Change::Object { namespace, name }) => {
                    p.claim_queue.add(format!("{}/{name}", namespace.unwrap_or_default()));
                }
                Some(Change::Synced) => {}
                None => break,
            },
            change = volume_rx.recv() => match change {
                Some(Change::Object { name, .. }) => p.volume_queue.add(name),
                Some(Change::Synced) => {}
                None => break,
            },
            _ = resync.tick() => {
                for claim in p.claims.state() {
                    p.claim_queue.add(format!(
                        "{}/{}",
                        claim.metadata.namespace.as_deref().unwrap_or(""),
                        claim.metadata.name.as_deref().unwrap_or("")
                    ));
                }
                for volume in p.volumes.state() {
                    p.volume_queue.add(volume.metadata.name.clone().unwrap_or_default());
                }
            }
        }
    }
    p.claim_queue.shut_down();
    p.volume_queue.shut_down();
}

/// The volume's name for a claim (upstream's `pvc-<uid>`).
pub fn volume_name(claim: &PersistentVolumeClaim) -> String {
    format!("pvc-{}", claim.metadata.uid.as_deref().unwrap_or(""))
}

/// Whether this node's provisioner makes the claim's volume: it is not bound, its class is
/// ours and names us as provisioner, and the scheduler chose this node.
pub fn should_provision(
    claim: &PersistentVolumeClaim,
    class: Option<&StorageClass>,
    node: &str,
) -> bool {
    let annotations = claim.metadata.annotations.as_ref();
    let provisioner = annotations.and_then(|a| {
        a.get(ANN_STORAGE_PROVISIONER).or_else(|| a.get(ANN_BETA_STORAGE_PROVISIONER))
    });
    let unbound =
        claim.spec.as_ref().and_then(|s| s.volume_name.as_deref()).unwrap_or("").is_empty();
    let selected = annotations.and_then(|a| a.get(ANN_SELECTED_NODE)).map(String::as_str);
    unbound
        && claim.metadata.deletion_timestamp.is_none()
        && provisioner.map(String::as_str) == Some(PROVISIONER)
        && class.is_some_and(|c| c.provisioner == PROVISIONER)
        && selected == Some(node)
}

/// Whether this node's provisioner deletes the volume: ours, on this node, released, with
/// the Delete policy.
pub fn should_delete(volume: &PersistentVolume, node: &str) -> bool {
    let annotations = volume.metadata.annotations.as_ref();
    let ours = annotations.and_then(|a| a.get(ANN_DYNAMICALLY_PROVISIONED)).map(String::as_str)
        == Some(PROVISIONER);
    let here = annotations.and_then(|a| a.get(ANN_NODE)).map(String::as_str) == Some(node);
    let released = volume.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Released");
    let policy = volume.spec.as_ref().and_then(|s| s.persistent_volume_reclaim_policy.as_deref());
    ours && here && released && policy == Some("Delete")
}

/// The directory of a claim's volume under `base`.
pub fn volume_dir(base: &Path, name: &str, claim: &PersistentVolumeClaim) -> PathBuf {
    let folder = [
        name,
        claim.metadata.namespace.as_deref().unwrap_or(""),
        claim.metadata.name.as_deref().unwrap_or(""),
    ]
    .join("_");
    base.join(folder)
}

/// The PersistentVolume for `claim`, its directory at `path` on the node whose hostname
/// label is `hostname` (Rancher's volume, as the provisioner library completes it).
pub fn volume_for(
    claim: &PersistentVolumeClaim,
    class: &StorageClass,
    node: &str,
    hostname: &str,
    path: &Path,
) -> Result<PersistentVolume, ProvisionError> {
    let spec = claim.spec.clone().unwrap_or_default();
    if spec.selector.is_some() {
        return Err(ProvisionError::Selector);
    }
    let modes = spec.access_modes.clone().unwrap_or_default();
    if modes.iter().any(|m| m != "ReadWriteOnce" && m != "ReadWriteOncePod") {
        return Err(ProvisionError::AccessMode);
    }
    let volume_type = claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("volumeType"))
        .or_else(|| class.metadata.annotations.as_ref().and_then(|a| a.get("defaultVolumeType")))
        .map(String::as_str)
        .unwrap_or("hostPath");
    let path_text = path.display().to_string();
    let (host_path, local) = match volume_type.to_ascii_lowercase().as_str() {
        "hostpath" => (
            Some(HostPathVolumeSource { path: path_text, type_: Some("DirectoryOrCreate".into()) }),
            None,
        ),
        "local" => (None, Some(LocalVolumeSource { path: path_text, fs_type: None })),
        _ => return Err(ProvisionError::VolumeType(volume_type.to_string())),
    };
    let capacity = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .map(|q| BTreeMap::from([("storage".to_string(), q.clone())]));
    let affinity = VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: HOSTNAME_LABEL.into(),
                    operator: "In".into(),
                    values: Some(vec![hostname.to_string()]),
                }]),
                match_fields: None,
            }],
        }),
    };
    Ok(PersistentVolume {
        metadata: ObjectMeta {
            name: Some(volume_name(claim)),
            annotations: Some(BTreeMap::from([
                (ANN_DYNAMICALLY_PROVISIONED.into(), PROVISIONER.into()),
                (ANN_NODE.into(), node.into()),
            ])),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            access_modes: Some(modes),
            capacity,
            claim_ref: Some(claim_reference(claim)),
            host_path,
            local,
            mount_options: class.mount_options.clone(),
            node_affinity: Some(affinity),
            persistent_volume_reclaim_policy: Some(
                class.reclaim_policy.clone().unwrap_or_else(|| "Delete".into()),
            ),
            storage_class_name: Some(claim_class(claim).to_string()),
            volume_mode: Some("Filesystem".into()),
            ..PersistentVolumeSpec::default()
        }),
        status: None,
    })
}

/// Makes the volume's directory, mode 0777 whatever the umask (Rancher's `mkdir -m 0777`).
fn make_dir(path: &Path) -> Result<(), ProvisionError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |action, error| ProvisionError::Io { action, path: path.to_path_buf(), error };
    std::fs::create_dir_all(path).map_err(|e| io("create", e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777))
        .map_err(|e| io("chmod", e))
}

/// Removes a volume's directory, only if it is one directly under `base`.
pub fn remove_dir(base: &Path, path: &Path) -> Result<(), ProvisionError> {
    let inside = path.parent() == Some(base)
        && path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("pvc-"));
    if !inside {
        return Err(ProvisionError::Outside(path.display().to_string()));
    }
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(ProvisionError::Io { action: "remove", path: path.to_path_buf(), error }),
    }
}

impl Provisioner {
    async fn sync_claim(&self, key: &str) -> Result<(), ProvisionError> {
        let Some((namespace, name)) = key.split_once('/') else { return Ok(()) };
        let Some(claim) = self.claims.get(&ObjectRef::new(name).within(namespace)) else {
            return Ok(());
        };
        let class = self.classes.get(&ObjectRef::new(claim_class(&claim)));
        if !should_provision(&claim, class.as_deref(), &self.config.node_name) {
            return Ok(());
        }
        let class = class.expect("checked by should_provision");
        let name = volume_name(&claim);
        if self.volumes.get(&ObjectRef::new(&name)).is_some() {
            return Ok(());
        }
        let reference = object_reference(claim.as_ref());
        let message = format!("External provisioner is provisioning volume for claim \"{key}\"");
        self.recorder.record(&reference, "Normal", "Provisioning", &message);
        match self.provision(&claim, &class, &name).await {
            Ok(()) => {
                let message = format!("Successfully provisioned volume {name}");
                self.recorder.record(&reference, "Normal", "ProvisioningSucceeded", &message);
                Ok(())
            }
            Err(e) => {
                let message = format!(
                    "failed to provision volume with StorageClass \"{}\": {e}",
                    claim_class(&claim)
                );
                self.recorder.record(&reference, "Warning", "ProvisioningFailed", &message);
                Err(e)
            }
        }
    }

    async fn provision(
        &self,
        claim: &PersistentVolumeClaim,
        class: &StorageClass,
        name: &str,
    ) -> Result<(), ProvisionError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let node = nodes.get(&self.config.node_name).await?;
        let hostname = node
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(HOSTNAME_LABEL))
            .cloned()
            .unwrap_or_else(|| self.config.node_name.clone());
        let path = volume_dir(&self.config.path, name, claim);
        let volume = volume_for(claim, class, &self.config.node_name, &hostname, &path)?;
        let dir = path.clone();
        tokio::task::spawn_blocking(move || make_dir(&dir)).await.map_err(|e| {
            ProvisionError::Io {
                action: "create",
                path: path.clone(),
                error: std::io::Error::other(e),
            }
        })??;
        tracing::info!(volume = name, path = %path.display(), "creating volume");
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        match api.create(&PostParams::default(), &volume).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn sync_volume(&self, name: &str) -> Result<(), ProvisionError> {
        let Some(volume) = self.volumes.get(&ObjectRef::new(name)) else { return Ok(()) };
        if !should_delete(&volume, &self.config.node_name) {
            return Ok(());
        }
        let spec = volume.spec.as_ref();
        let path = spec
            .and_then(|s| {
                s.host_path
                    .as_ref()
                    .map(|h| h.path.clone())
                    .or_else(|| s.local.as_ref().map(|l| l.path.clone()))
            })
            .ok_or(ProvisionError::NoPath)?;
        let (base, dir) = (self.config.path.clone(), PathBuf::from(&path));
        let removed = tokio::task::spawn_blocking(move || remove_dir(&base, &dir))
            .await
            .unwrap_or_else(|e| {
                Err(ProvisionError::Io {
                    action: "remove",
                    path: PathBuf::from(&path),
                    error: std::io::Error::other(e),
                })
            });
        if let Err(e) = removed {
            let message = format!("failed to delete volume {name}: {e}");
            self.recorder.record(
                &object_reference(volume.as_ref()),
                "Warning",
                "VolumeFailedDelete",
                &message,
            );
            return Err(e);
        }
        tracing::info!(volume = name, "deleted volume");
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkube_apis::persistent_volumes::has_annotation;
    use serde_json::json;

    fn claim(annotations: serde_json::Value, spec: serde_json::Value) -> PersistentVolumeClaim {
        let mut c = json!({
            "metadata": {"name": "data", "namespace": "shop", "uid": "1234", "annotations": annotations},
            "spec": {"storageClassName": "local-path", "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "2Gi"}}},
        });
        for (k, v) in spec.as_object().unwrap() {
            c["spec"][k] = v.clone();
        }
        serde_json::from_value(c).unwrap()
    }

    fn handed_to(node: &str) -> serde_json::Value {
        json!({ANN_STORAGE_PROVISIONER: PROVISIONER, ANN_SELECTED_NODE: node})
    }

    #[test]
    fn only_claims_handed_to_us_on_this_node_are_provisioned() {
        let class = storage_class();
        assert!(should_provision(&claim(handed_to("n1"), json!({})), Some(&class), "n1"));
        assert!(!should_provision(&claim(handed_to("n2"), json!({})), Some(&class), "n1"));
        assert!(!should_provision(
            &claim(json!({ANN_SELECTED_NODE: "n1"}), json!({})),
            Some(&class),
            "n1"
        ));
        let bound = claim(handed_to("n1"), json!({"volumeName": "pvc-1234"}));
        assert!(!should_provision(&bound, Some(&class), "n1"));
        let mut other = storage_class();
        other.provisioner = "example.com/other".into();
        assert!(!should_provision(&claim(handed_to("n1"), json!({})), Some(&other), "n1"));
        assert!(!should_provision(&claim(handed_to("n1"), json!({})), None, "n1"));
    }

    #[test]
    fn the_volume_is_a_directory_on_this_node_pre_bound_to_the_claim() {
        let c = claim(handed_to("n1"), json!({}));
        let path = volume_dir(Path::new("/var/lib/rkube/storage"), &volume_name(&c), &c);
        assert_eq!(path, Path::new("/var/lib/rkube/storage/pvc-1234_shop_data"));
        let v = volume_for(&c, &storage_class(), "n1", "n1", &path).unwrap();
        let v = serde_json::to_value(&v).unwrap();
        assert_eq!(v["metadata"]["name"], "pvc-1234");
        assert_eq!(v["metadata"]["annotations"][ANN_DYNAMICALLY_PROVISIONED], PROVISIONER);
        assert_eq!(
            v["spec"]["hostPath"],
            json!({"path": "/var/lib/rkube/storage/pvc-1234_shop_data", "type": "DirectoryOrCreate"})
        );
        assert_eq!(v["spec"]["claimRef"]["uid"], "1234");
        assert_eq!(v["spec"]["capacity"]["storage"], "2Gi");
        assert_eq!(v["spec"]["persistentVolumeReclaimPolicy"], "Delete");
        assert_eq!(v["spec"]["storageClassName"], "local-path");
        assert_eq!(
            v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0],
            json!({"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]})
        );
        let local = claim(json!({"volumeType": "local"}), json!({}));
        let v = volume_for(&local, &storage_class(), "n1", "n1", &path).unwrap();
        assert!(v.spec.as_ref().unwrap().local.is_some() && v.spec.unwrap().host_path.is_none());
        let shared = claim(json!({}), json!({"accessModes": ["ReadWriteMany"]}));
        assert_eq!(
            volume_for(&shared, &storage_class(), "n1", "n1", &path).unwrap_err().to_string(),
            "NodePath only supports ReadWriteOnce and ReadWriteOncePod (1.22+) access modes"
        );
        let selector = claim(json!({}), json!({"selector": {"matchLabels": {"a": "b"}}}));
        assert!(matches!(
            volume_for(&selector, &storage_class(), "n1", "n1", &path),
            Err(ProvisionError::Selector)
        ));
    }

    #[test]
    fn released_volumes_of_this_node_are_deleted_and_only_inside_the_path() {
        let c = claim(handed_to("n1"), json!({}));
        let base = std::env::temp_dir().join(format!("rkube-local-path-{}", std::process::id()));
        let path = volume_dir(&base, &volume_name(&c), &c);
        let mut v = volume_for(&c, &storage_class(), "n1", "n1", &path).unwrap();
        assert!(!should_delete(&v, "n1"), "not released");
        v.status = Some(k8s_openapi::api::core::v1::PersistentVolumeStatus {
            phase: Some("Released".into()),
            ..Default::default()
        });
        assert!(should_delete(&v, "n1"));
        assert!(!should_delete(&v, "n2"));
        v.spec.as_mut().unwrap().persistent_volume_reclaim_policy = Some("Retain".into());
        assert!(!should_delete(&v, "n1"));

        make_dir(&path).unwrap();
        std::fs::write(path.join("file"), "data").unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o777);
        assert!(matches!(remove_dir(&base, &base), Err(ProvisionError::Outside(_))));
        assert!(matches!(
            remove_dir(&base, Path::new("/etc/pvc-x")),
            Err(ProvisionError::Outside(_))
        ));
        remove_dir(&base, &path).unwrap();
        assert!(!path.exists());
        remove_dir(&base, &path).unwrap();
        std::fs::remove_dir(&base).unwrap();
    }

    #[test]
    fn the_default_class_is_k3s_s() {
        let class = serde_json::to_value(storage_class()).unwrap();
        assert_eq!(class["provisioner"], "rancher.io/local-path");
        assert_eq!(class["volumeBindingMode"], "WaitForFirstConsumer");
        assert_eq!(class["reclaimPolicy"], "Delete");
        assert_eq!(class["metadata"]["annotations"][ANN_IS_DEFAULT_CLASS], "true");
        assert!(has_annotation(
            storage_class().metadata.annotations.as_ref(),
            ANN_IS_DEFAULT_CLASS
        ));
    }
}
