//! A pod's volumes as directories on the node, bind-mounted into its containers: emptyDir
//! (on disk, or memory-backed under /dev/shm), hostPath, configMap, secret, downwardAPI,
//! projected, and persistentVolumeClaims bound to hostPath or local volumes. Content volumes
//! are rewritten on every sync, so updates to a configMap or secret reach running pods, and
//! renewed service-account tokens ([`crate::tokens`]) reach projected volumes.
//!
//! Modes and ownership as upstream's volume plugins leave them: an emptyDir (and the
//! directory a content volume is written into) is `0777`; each content file has its item's
//! `mode`, else the volume's `defaultMode` (`0644`); with the pod's `fsGroup`, every file
//! and directory of those volumes gets that group, group read (and write, for emptyDirs)
//! and directories the setgid bit, as upstream's `SetVolumeOwnership`. Content volumes are
//! mounted read-only whatever the mount says (upstream's `mustMountRO`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{
    KeyToPath, PersistentVolume, PersistentVolumeClaim, Pod, ServiceAccountTokenProjection, Volume,
};
use k8s_openapi::ByteString;
use kube::api::Api;

use super::spec::{field_value, volume_dir, ConfigError, Lookup};
use crate::tokens::TokenKey;

/// Memory-backed emptyDirs live here (a tmpfs on every Linux host), in a directory only
/// root can enter.
const MEMORY_ROOT: &str = "/dev/shm/rkube";

/// The mode of an emptyDir, and of the directory a content volume is written into.
const VOLUME_DIR_MODE: u32 = 0o777;
/// A content file's mode when neither its item nor the volume says.
const DEFAULT_FILE_MODE: u32 = 0o644;

/// A prepared volume: where it is on the node, and whether containers must mount it
/// read-only (content volumes, whatever their mounts say).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mounted {
    pub path: PathBuf,
    pub read_only: bool,
}

/// One file of a content volume: its bytes, and its item's `mode` when it has one.
#[derive(Clone, Debug, PartialEq, Eq)]
struct VolumeFile {
    content: Vec<u8>,
    mode: Option<u32>,
}

/// A content volume's files by their paths in the volume.
type Files = BTreeMap<String, VolumeFile>;

/// Files without modes of their own.
fn plain(data: BTreeMap<String, Vec<u8>>) -> Files {
    data.into_iter().map(|(k, content)| (k, VolumeFile { content, mode: None })).collect()
}

/// A mode from the API (`int32`), as permission bits.
fn mode_bits(mode: Option<i32>) -> Option<u32> {
    mode.map(|m| m as u32 & 0o7777)
}

/// Writes a file so readers never see half of it: a temporary file, then a rename; an
/// unchanged file keeps its inode, and gets `mode` if it has another.
fn write_atomic(path: &Path, content: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if std::fs::read(path).ok().as_deref() == Some(content) {
        if std::fs::metadata(path)?.permissions().mode() & 0o7777 != mode {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        }
        return Ok(());
    }
    let tmp = path.with_extension("rkube-tmp");
    std::fs::write(&tmp, content)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
    std::fs::rename(&tmp, path)
}

/// Makes `dir` (and its parents) when missing, with `mode` whatever the umask; says whether
/// it was made now.
fn make_dir(dir: &Path, mode: u32) -> std::io::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    if dir.is_dir() {
        return Ok(false);
    }
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))?;
    Ok(true)
}

/// `fsGroup` ownership, as upstream's `SetVolumeOwnership`: everything under `dir` (and
/// `dir`) gets the group, group read (and write unless `read_only`); directories get the
/// setgid bit and group search too. Symlinks are left alone.
fn set_ownership(dir: &Path, fs_group: u32, read_only: bool) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let metadata = std::fs::symlink_metadata(dir)?;
    if metadata.file_type().is_symlink() {
        return Ok(());
    }
    // Every sync walks the volume: only what is not the group's yet is changed.
    if std::os::unix::fs::MetadataExt::gid(&metadata) != fs_group {
        std::os::unix::fs::lchown(dir, None, Some(fs_group))?;
    }
    let mut mask = if read_only { 0o440 } else { 0o660 };
    if metadata.is_dir() {
        mask |= 0o2000 | 0o110;
    }
    let mode = metadata.permissions().mode() & 0o7777;
    if mode | mask != mode {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | mask))?;
    }
    if metadata.is_dir() {
        for entry in std::fs::read_dir(dir)? {
            set_ownership(&entry?.path(), fs_group, read_only)?;
        }
    }
    Ok(())
}

/// Writes `files` into `dir` (made `0777` when new), each with its own mode or
/// `default_mode`, removing files no longer there; with `fs_group`, sets the volume's
/// ownership after.
fn write_files(
    dir: &Path,
    files: &Files,
    default_mode: u32,
    fs_group: Option<u32>,
) -> Result<(), ConfigError> {
    let io = |e: std::io::Error| ConfigError(format!("cannot write volume {}: {e}", dir.display()));
    make_dir(dir, VOLUME_DIR_MODE).map_err(io)?;
    // Group read comes with fsGroup: written at once, so a sync never takes it away.
    let group_read = if fs_group.is_some() { 0o440 } else { 0 };
    for (name, file) in files {
        if name.split('/').any(|part| part == ".." || part.is_empty()) {
            return Err(ConfigError(format!("invalid path {name:?} in volume")));
        }
        let mode = file.mode.unwrap_or(default_mode) | group_read;
        write_atomic(&dir.join(name), &file.content, mode).map_err(io)?;
    }
    // Keys that went away disappear from the volume too, and directories left empty.
    remove_stale(dir, Path::new(""), files);
    if let Some(group) = fs_group {
        set_ownership(dir, group, true).map_err(io)?;
    }
    Ok(())
}

/// Removes what is under `dir` (at `relative` in the volume) but not in `files`: files, and
/// then directories left empty. Says whether `dir` is empty afterwards.
fn remove_stale(dir: &Path, relative: &Path, files: &Files) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    let mut empty = true;
    for entry in entries.flatten() {
        let path = relative.join(entry.file_name());
        let kind = entry.file_type();
        if kind.as_ref().is_ok_and(|k| k.is_dir()) {
            if remove_stale(&entry.path(), &path, files) {
                let _ = std::fs::remove_dir(entry.path());
            } else {
                empty = false;
            }
        } else if !files.contains_key(path.to_string_lossy().as_ref()) {
            let _ = std::fs::remove_file(entry.path());
        } else {
            empty = false;
        }
    }
    empty
}

/// Picks the keys a volume shows: all, or the listed `items` under their paths and with
/// their modes.
fn select(
    data: BTreeMap<String, Vec<u8>>,
    items: Option<&Vec<KeyToPath>>,
    optional: bool,
    what: &str,
) -> Result<Files, ConfigError> {
    let Some(items) = items.filter(|i| !i.is_empty()) else { return Ok(plain(data)) };
    let mut out = Files::new();
    for item in items {
        match data.get(&item.key) {
            Some(v) => {
                let file = VolumeFile { content: v.clone(), mode: mode_bits(item.mode) };
                out.insert(item.path.clone(), file);
            }
            None if optional => {}
            None => {
                return Err(ConfigError(format!(
                    "configmap references non-existent config key: {}",
                    item.key
                ))
                .with_kind(what))
            }
        }
    }
    Ok(out)
}

impl ConfigError {
    fn with_kind(self, what: &str) -> ConfigError {
        if what == "secret" {
            ConfigError(self.0.replace(
                "configmap references non-existent config key",
                "references non-existent secret key",
            ))
        } else {
            self
        }
    }
}

fn config_map_files(cm: &k8s_openapi::api::core::v1::ConfigMap) -> BTreeMap<String, Vec<u8>> {
    let mut files: BTreeMap<String, Vec<u8>> =
        cm.data.iter().flatten().map(|(k, v)| (k.clone(), v.clone().into_bytes())).collect();
    for (k, ByteString(v)) in cm.binary_data.iter().flatten() {
        files.insert(k.clone(), v.clone());
    }
    files
}

fn secret_files(secret: &k8s_openapi::api::core::v1::Secret) -> BTreeMap<String, Vec<u8>> {
    secret.data.iter().flatten().map(|(k, ByteString(v))| (k.clone(), v.clone())).collect()
}

async fn downward_files(
    pod: &Pod,
    items: &[k8s_openapi::api::core::v1::DownwardAPIVolumeFile],
    node: &Node<'_>,
) -> Files {
    let Node { pod_ip, host_ip, allocatable } = *node;
    let mut files = Files::new();
    for item in items {
        let value = if let Some(f) = &item.field_ref {
            field_value(pod, &f.field_path, pod_ip, host_ip).unwrap_or_default()
        } else if let Some(r) = &item.resource_field_ref {
            let container = pod
                .spec
                .iter()
                .flat_map(|s| s.containers.iter())
                .find(|c| Some(c.name.as_str()) == r.container_name.as_deref());
            container
                .and_then(|c| {
                    super::spec::resource_value(
                        c,
                        &r.resource,
                        r.divisor.as_ref().map(|d| d.0.as_str()),
                        allocatable,
                    )
                })
                .unwrap_or_default()
        } else {
            String::new()
        };
        let file = VolumeFile { content: value.into_bytes(), mode: mode_bits(item.mode) };
        files.insert(item.path.clone(), file);
    }
    files
}

/// A projected `serviceAccountToken`: a token of the pod's service account from the
/// TokenRequest API, bound to the pod, for the source's audience (default: the API
/// server's) and lifetime (default one hour), through the kubelet's token cache.
async fn service_account_token(
    lookup: &Lookup<'_>,
    pod: &Pod,
    source: &ServiceAccountTokenProjection,
) -> Result<String, ConfigError> {
    let spec = pod.spec.as_ref();
    // What the ServiceAccount admission plugin would have set.
    let account = spec
        .and_then(|s| {
            [s.service_account_name.as_deref(), s.service_account.as_deref()]
                .into_iter()
                .flatten()
                .find(|a| !a.is_empty())
        })
        .unwrap_or("default");
    let key = TokenKey {
        namespace: lookup.namespace.clone(),
        service_account: account.to_string(),
        audiences: source.audience.iter().filter(|a| !a.is_empty()).cloned().collect(),
        expiration_seconds: source.expiration_seconds.unwrap_or(3600),
        pod_name: pod.metadata.name.clone().unwrap_or_default(),
        pod_uid: pod.metadata.uid.clone().unwrap_or_default(),
    };
    lookup.tokens.token(lookup.client, &key).await.map_err(ConfigError)
}

/// What downward API files read from outside the pod.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    pub pod_ip: &'a str,
    pub host_ip: &'a str,
    /// The node's allocatable resources: what a limit the pod does not set reads as.
    pub allocatable: &'a BTreeMap<String, String>,
}

/// Makes every volume of the pod ready; returns each volume's host path by its name
/// (memory-backed emptyDirs are host paths under /dev/shm).
pub async fn prepare(
    root: &Path,
    pod: &Pod,
    lookup: &mut Lookup<'_>,
    node: &Node<'_>,
) -> Result<BTreeMap<String, Mounted>, ConfigError> {
    let mut out = BTreeMap::new();
    let spec = pod.spec.as_ref();
    let volumes: &[Volume] = spec.and_then(|s| s.volumes.as_deref()).unwrap_or(&[]);
    let fs_group = spec
        .and_then(|s| s.security_context.as_ref())
        .and_then(|s| s.fs_group)
        .and_then(|g| u32::try_from(g).ok());
    let uid = pod.metadata.uid.as_deref().unwrap_or("unknown");
    for volume in volumes {
        let dir = volume_dir(root, pod, &volume.name);
        let io =
            |e: std::io::Error| ConfigError(format!("cannot prepare volume {}: {e}", volume.name));
        // Content volumes are read-only to containers; the rest as their mounts say.
        let mut read_only = true;
        let path = if let Some(empty) = &volume.empty_dir {
            read_only = false;
            let dir = if empty.medium.as_deref() == Some("Memory") {
                // Only root enters it, whatever an older kubelet left.
                make_dir(Path::new(MEMORY_ROOT), 0o700).map_err(io)?;
                let private = std::os::unix::fs::PermissionsExt::from_mode(0o700);
                std::fs::set_permissions(MEMORY_ROOT, private).map_err(io)?;
                Path::new(MEMORY_ROOT).join(uid).join(&volume.name)
            } else {
                dir
            };
            // Set up once, as upstream's emptyDir: later changes are the pod's own.
            if make_dir(&dir, VOLUME_DIR_MODE).map_err(io)? {
                if let Some(group) = fs_group {
                    set_ownership(&dir, group, false).map_err(io)?;
                }
            }
            dir
        } else if let Some(host) = &volume.host_path {
            read_only = false;
            host_path(&host.path, host.type_.as_deref(), io)?
        } else if let Some(source) = &volume.config_map {
            let optional = source.optional == Some(true);
            let files = match lookup.config_map(&source.name).await {
                Some(cm) => {
                    select(config_map_files(cm), source.items.as_ref(), optional, "configmap")?
                }
                None if optional => Files::new(),
                None => {
                    return Err(ConfigError(format!("configmap \"{}\" not found", source.name)))
                }
            };
            write_files(&dir, &files, default_mode(source.default_mode), fs_group)?;
            dir
        } else if let Some(source) = &volume.secret {
            let name = source.secret_name.clone().unwrap_or_default();
            let optional = source.optional == Some(true);
            let files = match lookup.secret(&name).await {
                Some(secret) => {
                    select(secret_files(secret), source.items.as_ref(), optional, "secret")?
                }
                None if optional => Files::new(),
                None => return Err(ConfigError(format!("secret \"{name}\" not found"))),
            };
            write_files(&dir, &files, default_mode(source.default_mode), fs_group)?;
            dir
        } else if let Some(source) = &volume.downward_api {
            let files = downward_files(pod, source.items.as_deref().unwrap_or(&[]), node).await;
            write_files(&dir, &files, default_mode(source.default_mode), fs_group)?;
            dir
        } else if let Some(source) = &volume.projected {
            let mut files = Files::new();
            for projection in source.sources.iter().flatten() {
                if let Some(cm) = &projection.config_map {
                    let optional = cm.optional == Some(true);
                    match lookup.config_map(&cm.name).await {
                        Some(found) => files.extend(select(
                            config_map_files(found),
                            cm.items.as_ref(),
                            optional,
                            "configmap",
                        )?),
                        None if optional => {}
                        None => {
                            return Err(ConfigError(format!("configmap \"{}\" not found", cm.name)))
                        }
                    }
                }
                if let Some(s) = &projection.secret {
                    let optional = s.optional == Some(true);
                    match lookup.secret(&s.name).await {
                        Some(found) => files.extend(select(
                            secret_files(found),
                            s.items.as_ref(),
                            optional,
                            "secret",
                        )?),
                        None if optional => {}
                        None => {
                            return Err(ConfigError(format!("secret \"{}\" not found", s.name)))
                        }
                    }
                }
                if let Some(d) = &projection.downward_api {
                    files
                        .extend(downward_files(pod, d.items.as_deref().unwrap_or(&[]), node).await);
                }
                if let Some(source) = &projection.service_account_token {
                    let token = service_account_token(lookup, pod, source).await?;
                    let file = VolumeFile { content: token.into_bytes(), mode: None };
                    files.insert(source.path.clone(), file);
                }
            }
            write_files(&dir, &files, default_mode(source.default_mode), fs_group)?;
            dir
        } else if let Some(claim) = &volume.persistent_volume_claim {
            read_only = claim.read_only == Some(true);
            let claims: Api<PersistentVolumeClaim> =
                Api::namespaced(lookup.client.clone(), &lookup.namespace);
            let pvc = claims.get_opt(&claim.claim_name).await.ok().flatten().ok_or_else(|| {
                ConfigError(format!("persistentvolumeclaim \"{}\" not found", claim.claim_name))
            })?;
            let volume_name =
                pvc.spec.and_then(|s| s.volume_name).filter(|v| !v.is_empty()).ok_or_else(
                    || {
                        ConfigError(format!(
                            "PVC {}/{} is not bound",
                            lookup.namespace, claim.claim_name
                        ))
                    },
                )?;
            let pvs: Api<PersistentVolume> = Api::all(lookup.client.clone());
            let pv = pvs.get_opt(&volume_name).await.ok().flatten().ok_or_else(|| {
                ConfigError(format!("persistentvolume \"{volume_name}\" not found"))
            })?;
            let spec = pv.spec.unwrap_or_default();
            // The volume's own type decides, as for an inline hostPath; a local volume's
            // directory must be there already.
            match (spec.host_path, spec.local) {
                (Some(host), _) => host_path(&host.path, host.type_.as_deref(), io)?,
                (None, Some(local)) => {
                    let path = PathBuf::from(&local.path);
                    if !path.exists() {
                        return Err(ConfigError(format!("path {:?} does not exist", local.path)));
                    }
                    path
                }
                (None, None) => {
                    return Err(ConfigError(format!(
                        "persistentvolume \"{volume_name}\" is neither hostPath nor local"
                    )))
                }
            }
        } else {
            return Err(ConfigError(format!(
                "volume {:?} has a type this kubelet does not support",
                volume.name
            )));
        };
        out.insert(volume.name.clone(), Mounted { path, read_only });
    }
    Ok(out)
}

/// A volume's `defaultMode`, or upstream's default.
fn default_mode(mode: Option<i32>) -> u32 {
    mode_bits(mode).unwrap_or(DEFAULT_FILE_MODE)
}

/// A hostPath volume's path, made or checked as its `type` says (none: no check).
fn host_path(
    path: &str,
    type_: Option<&str>,
    io: impl Fn(std::io::Error) -> ConfigError,
) -> Result<PathBuf, ConfigError> {
    let dir = PathBuf::from(path);
    match type_.unwrap_or("") {
        "DirectoryOrCreate" => std::fs::create_dir_all(&dir).map_err(&io)?,
        "FileOrCreate" if !dir.exists() => {
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent).map_err(&io)?;
            }
            std::fs::write(&dir, b"").map_err(&io)?;
        }
        "Directory" if !dir.is_dir() => {
            return Err(ConfigError(format!(
                "hostPath type check failed: {path} is not a directory"
            )))
        }
        "File" if !dir.is_file() => {
            return Err(ConfigError(format!("hostPath type check failed: {path} is not a file")))
        }
        _ => {}
    }
    Ok(dir)
}

/// Removes what the pod's volumes left on the node (not hostPath or persistent volumes).
pub fn clean_up(root: &Path, uid: &str) {
    let _ = std::fs::remove_dir_all(root.join("pods").join(uid));
    let _ = std::fs::remove_dir_all(Path::new(MEMORY_ROOT).join(uid));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_written_and_stale_keys_removed() {
        let dir = std::env::temp_dir().join(format!("rkube-vol-{}", std::process::id()));
        let mut files = plain(BTreeMap::from([
            ("a".to_string(), b"1".to_vec()),
            ("b".to_string(), b"2".to_vec()),
        ]));
        write_files(&dir, &files, 0o644, None).unwrap();
        assert_eq!(std::fs::read(dir.join("a")).unwrap(), b"1");
        files.remove("b");
        files.insert("a".into(), VolumeFile { content: b"3".to_vec(), mode: None });
        write_files(&dir, &files, 0o644, None).unwrap();
        assert_eq!(std::fs::read(dir.join("a")).unwrap(), b"3");
        assert!(!dir.join("b").exists());
        // Nested paths go too, with the directories they leave empty.
        let nested = plain(BTreeMap::from([("sub/dir/c".to_string(), b"4".to_vec())]));
        write_files(&dir, &nested, 0o644, None).unwrap();
        assert!(dir.join("sub/dir/c").exists() && !dir.join("a").exists());
        write_files(&dir, &files, 0o644, None).unwrap();
        assert!(!dir.join("sub").exists(), "an emptied directory is removed");
        let bad = plain(BTreeMap::from([("../x".to_string(), vec![])]));
        assert!(write_files(&dir, &bad, 0o644, None).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn modes_come_from_the_item_then_the_volume_and_fs_group_adds_group_read() {
        use std::os::unix::fs::MetadataExt;
        let dir = std::env::temp_dir().join(format!("rkube-vol-modes-{}", std::process::id()));
        let files = Files::from([
            ("plain".to_string(), VolumeFile { content: b"1".to_vec(), mode: None }),
            ("path/to/item".to_string(), VolumeFile { content: b"2".to_vec(), mode: Some(0o400) }),
        ]);
        write_files(&dir, &files, 0o440, None).unwrap();
        assert_eq!(mode(&dir), 0o777, "the volume's directory, whatever the umask");
        assert_eq!(mode(&dir.join("plain")), 0o440, "the volume's defaultMode");
        assert_eq!(mode(&dir.join("path/to/item")), 0o400, "the item's own mode");
        assert_eq!(mode(&dir.join("path")), 0o755);
        // The same again with a different default mode: the files follow it.
        write_files(&dir, &files, 0o644, None).unwrap();
        assert_eq!(mode(&dir.join("plain")), 0o644);

        // fsGroup: the group, group read, and setgid plus group search on directories.
        let group = std::fs::metadata(&dir).unwrap().gid() + 1;
        write_files(&dir, &files, 0o400, Some(group)).unwrap();
        assert_eq!(mode(&dir.join("plain")), 0o440);
        assert_eq!(mode(&dir.join("path/to/item")), 0o440);
        assert_eq!(std::fs::metadata(dir.join("plain")).unwrap().gid(), group);
        assert_eq!(mode(&dir.join("path")), 0o2755);
        assert_eq!(mode(&dir), 0o2777);
        std::fs::remove_dir_all(&dir).unwrap();

        // An emptyDir is read-write to its group.
        let empty = std::env::temp_dir().join(format!("rkube-vol-empty-{}", std::process::id()));
        assert!(make_dir(&empty, VOLUME_DIR_MODE).unwrap());
        std::fs::write(empty.join("f"), b"x").unwrap();
        set_ownership(&empty, group, false).unwrap();
        assert_eq!(mode(&empty), 0o2777);
        assert_eq!(mode(&empty.join("f")) & 0o060, 0o060);
        assert!(!make_dir(&empty, VOLUME_DIR_MODE).unwrap(), "made once");
        std::fs::remove_dir_all(&empty).unwrap();
    }
}
