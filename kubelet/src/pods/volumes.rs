//! A pod's volumes as directories on the node, bind-mounted into its containers: emptyDir
//! (on disk, or memory-backed under /dev/shm), hostPath, configMap, secret, downwardAPI,
//! projected, and persistentVolumeClaims bound to hostPath or local volumes. Content volumes
//! are rewritten on every sync, so updates to a configMap or secret reach running pods, and
//! renewed service-account tokens ([`crate::tokens`]) reach projected volumes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{
    KeyToPath, PersistentVolume, PersistentVolumeClaim, Pod, ServiceAccountTokenProjection, Volume,
};
use k8s_openapi::ByteString;
use kube::api::Api;

use super::spec::{field_value, volume_dir, ConfigError, Lookup};
use crate::tokens::TokenKey;

/// Memory-backed emptyDirs live here (a tmpfs on every Linux host).
const MEMORY_ROOT: &str = "/dev/shm/rkube";

/// Writes a file so readers never see half of it: a temporary file, then a rename.
fn write_atomic(path: &Path, content: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if std::fs::read(path).ok().as_deref() == Some(content) {
        return Ok(());
    }
    let tmp = path.with_extension("rkube-tmp");
    std::fs::write(&tmp, content)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
    std::fs::rename(&tmp, path)
}

/// Writes `files` (relative path → content) into `dir`, removing files no longer there.
fn write_files(
    dir: &Path,
    files: &BTreeMap<String, Vec<u8>>,
    mode: u32,
) -> Result<(), ConfigError> {
    let io = |e: std::io::Error| ConfigError(format!("cannot write volume {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(io)?;
    for (name, content) in files {
        if name.split('/').any(|part| part == ".." || part.is_empty()) {
            return Err(ConfigError(format!("invalid path {name:?} in volume")));
        }
        write_atomic(&dir.join(name), content, mode).map_err(io)?;
    }
    // Keys that went away disappear from the volume too (top-level files only).
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_file = entry.file_type().map(|t| t.is_file()).unwrap_or(false);
            if is_file && !files.keys().any(|k| k == &name || k.starts_with(&format!("{name}/"))) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    Ok(())
}

/// Picks the keys a volume shows: all, or the listed `items` under their paths.
fn select(
    data: BTreeMap<String, Vec<u8>>,
    items: Option<&Vec<KeyToPath>>,
    optional: bool,
    what: &str,
) -> Result<BTreeMap<String, Vec<u8>>, ConfigError> {
    let Some(items) = items.filter(|i| !i.is_empty()) else { return Ok(data) };
    let mut out = BTreeMap::new();
    for item in items {
        match data.get(&item.key) {
            Some(v) => {
                out.insert(item.path.clone(), v.clone());
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
    pod_ip: &str,
    host_ip: &str,
) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
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
                        &BTreeMap::new(),
                    )
                })
                .unwrap_or_default()
        } else {
            String::new()
        };
        files.insert(item.path.clone(), value.into_bytes());
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

/// Makes every volume of the pod ready; returns volume name → host path (None: tmpfs in the
/// container itself is never used; memory volumes are host paths under /dev/shm).
pub async fn prepare(
    root: &Path,
    pod: &Pod,
    lookup: &mut Lookup<'_>,
    pod_ip: &str,
    host_ip: &str,
) -> Result<BTreeMap<String, Option<PathBuf>>, ConfigError> {
    let mut out = BTreeMap::new();
    let volumes: &[Volume] = pod.spec.as_ref().and_then(|s| s.volumes.as_deref()).unwrap_or(&[]);
    let uid = pod.metadata.uid.as_deref().unwrap_or("unknown");
    for volume in volumes {
        let dir = volume_dir(root, pod, &volume.name);
        let io =
            |e: std::io::Error| ConfigError(format!("cannot prepare volume {}: {e}", volume.name));
        let path = if let Some(empty) = &volume.empty_dir {
            let dir = if empty.medium.as_deref() == Some("Memory") {
                Path::new(MEMORY_ROOT).join(uid).join(&volume.name)
            } else {
                dir
            };
            std::fs::create_dir_all(&dir).map_err(io)?;
            dir
        } else if let Some(host) = &volume.host_path {
            host_path(&host.path, host.type_.as_deref(), io)?
        } else if let Some(source) = &volume.config_map {
            let optional = source.optional == Some(true);
            let files = match lookup.config_map(&source.name).await {
                Some(cm) => {
                    select(config_map_files(cm), source.items.as_ref(), optional, "configmap")?
                }
                None if optional => BTreeMap::new(),
                None => {
                    return Err(ConfigError(format!("configmap \"{}\" not found", source.name)))
                }
            };
            write_files(&dir, &files, source.default_mode.unwrap_or(0o644) as u32)?;
            dir
        } else if let Some(source) = &volume.secret {
            let name = source.secret_name.clone().unwrap_or_default();
            let optional = source.optional == Some(true);
            let files = match lookup.secret(&name).await {
                Some(secret) => {
                    select(secret_files(secret), source.items.as_ref(), optional, "secret")?
                }
                None if optional => BTreeMap::new(),
                None => return Err(ConfigError(format!("secret \"{name}\" not found"))),
            };
            write_files(&dir, &files, source.default_mode.unwrap_or(0o644) as u32)?;
            dir
        } else if let Some(source) = &volume.downward_api {
            let files =
                downward_files(pod, source.items.as_deref().unwrap_or(&[]), pod_ip, host_ip).await;
            write_files(&dir, &files, source.default_mode.unwrap_or(0o644) as u32)?;
            dir
        } else if let Some(source) = &volume.projected {
            let mut files = BTreeMap::new();
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
                    files.extend(
                        downward_files(pod, d.items.as_deref().unwrap_or(&[]), pod_ip, host_ip)
                            .await,
                    );
                }
                if let Some(source) = &projection.service_account_token {
                    let token = service_account_token(lookup, pod, source).await?;
                    files.insert(source.path.clone(), token.into_bytes());
                }
            }
            write_files(&dir, &files, source.default_mode.unwrap_or(0o644) as u32)?;
            dir
        } else if let Some(claim) = &volume.persistent_volume_claim {
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
        out.insert(volume.name.clone(), Some(path));
    }
    Ok(out)
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
        let mut files =
            BTreeMap::from([("a".to_string(), b"1".to_vec()), ("b".to_string(), b"2".to_vec())]);
        write_files(&dir, &files, 0o644).unwrap();
        assert_eq!(std::fs::read(dir.join("a")).unwrap(), b"1");
        files.remove("b");
        files.insert("a".into(), b"3".to_vec());
        write_files(&dir, &files, 0o644).unwrap();
        assert_eq!(std::fs::read(dir.join("a")).unwrap(), b"3");
        assert!(!dir.join("b").exists());
        assert!(write_files(&dir, &BTreeMap::from([("../x".to_string(), vec![])]), 0o644).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
