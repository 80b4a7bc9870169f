//! Static pods: pods from manifest files in `--pod-manifest-path`, which this kubelet runs on
//! its own authority, and their mirror pods, which show them in the API.
//!
//! As upstream's file source: each file (YAML or JSON, dotfiles ignored) holds one Pod; the
//! kubelet names it `<name>-<node>`, puts it in `default` unless the file says otherwise,
//! binds it to this node, adds a NoExecute toleration for every taint, and gives it a uid
//! that is a hash of what the file says (so an edit makes a new pod, and the old one is
//! killed). The directory is read again whenever a file in it changes (polled every second:
//! a `stat` of each file) and at least every `--file-check-frequency`.
//!
//! The mirror pod is a copy in the API with the annotation `kubernetes.io/config.mirror`
//! (the static pod's hash) and the Node as its controller. It is only a view: deleting it
//! does not stop the pod (the kubelet makes a new mirror), the kubelet writes the static
//! pod's status to it, and it goes when the file does. Pods from the API are never run from
//! here and the other way round: [`crate::pods`] keeps the two sources apart.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, PostParams};
use kube::Client;
use serde_json::{json, Value};
use tokio::sync::{watch, Notify};

/// Where a pod came from: `file` for static pods, `api` for the rest.
pub const CONFIG_SOURCE: &str = "kubernetes.io/config.source";
/// The static pod's hash (also its uid).
pub const CONFIG_HASH: &str = "kubernetes.io/config.hash";
/// When the kubelet first saw the static pod.
pub const CONFIG_SEEN: &str = "kubernetes.io/config.seen";
/// On a mirror pod: the hash of the static pod it shows.
pub const CONFIG_MIRROR: &str = "kubernetes.io/config.mirror";

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.annotations.as_ref()?.get(key).map(String::as_str)
}

/// A pod this kubelet runs from a manifest file.
pub fn is_static(pod: &Pod) -> bool {
    annotation(pod, CONFIG_SOURCE) == Some("file")
}

/// A mirror pod (an API object standing for a static pod).
pub fn is_mirror(pod: &Pod) -> bool {
    annotation(pod, CONFIG_MIRROR).is_some()
}

/// The static pod a manifest file describes, as this node runs it.
pub fn parse(path: &Path, bytes: &[u8], node: &str) -> Result<Pod, String> {
    let shown = path.display();
    let mut value: Value = serde_yaml_ng::from_slice(bytes)
        .map_err(|e| format!("{shown}: cannot decode the manifest: {e}"))?;
    if !value.is_object() {
        return Err(format!("{shown}: not an object"));
    }
    let kind = value["kind"].as_str().unwrap_or("");
    let api_version = value["apiVersion"].as_str().unwrap_or("");
    if kind != "Pod" || api_version != "v1" {
        return Err(format!(
            "{shown}: a static pod manifest holds one v1 Pod, not {api_version:?} {kind:?}"
        ));
    }
    let name = value["metadata"]["name"].as_str().unwrap_or("").to_string();
    if name.is_empty() {
        return Err(format!("{shown}: metadata.name: Required value: name is required"));
    }
    let full_name = format!("{name}-{}", node.to_ascii_lowercase());
    if let Some(problem) = invalid_subdomain(&full_name) {
        return Err(format!("{shown}: metadata.name: Invalid value: {full_name:?}: {problem}"));
    }
    let metadata = &mut value["metadata"];
    metadata["name"] = json!(full_name);
    if metadata["namespace"].as_str().unwrap_or("").is_empty() {
        metadata["namespace"] = json!("default");
    }
    if let Some(object) = metadata.as_object_mut() {
        for key in ["uid", "resourceVersion", "creationTimestamp", "generation", "selfLink"] {
            object.remove(key);
        }
    }
    value.as_object_mut().map(|o| o.remove("status"));
    let spec = &mut value["spec"];
    if !spec.is_object() {
        return Err(format!("{shown}: spec: Required value"));
    }
    spec["nodeName"] = json!(node);
    rkube_apis::defaults::pod_spec(spec);
    // Static pods stay on their node whatever it is tainted with.
    let tolerations = spec["tolerations"].as_array_mut().map(std::mem::take).unwrap_or_default();
    let mut tolerations = tolerations;
    let everything = json!({"operator": "Exists", "effect": "NoExecute"});
    if !tolerations.contains(&everything) {
        tolerations.push(everything);
    }
    spec["tolerations"] = Value::Array(tolerations);
    // The hash covers what the file says (as defaulted) and where it runs; it is the uid.
    let canonical = serde_json::to_vec(&value).map_err(|e| e.to_string())?;
    let hash = hash_hex(&[&canonical, node.as_bytes(), path.as_os_str().as_encoded_bytes()]);
    let metadata = &mut value["metadata"];
    metadata["uid"] = json!(hash);
    if !metadata["annotations"].is_object() {
        metadata["annotations"] = json!({});
    }
    metadata["annotations"][CONFIG_HASH] = json!(hash);
    metadata["annotations"][CONFIG_SOURCE] = json!("file");
    serde_json::from_value(value).map_err(|e| format!("{shown}: {e}"))
}

/// 128 bits of SHA-256 in hex (the length of upstream's MD5 hash uids).
fn hash_hex(parts: &[&[u8]]) -> String {
    let mut hasher = openssl::sha::Sha256::new();
    for part in parts {
        hasher.update(&(part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher.finish()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// Why `name` is not a DNS subdomain (upstream's message), if it is not.
fn invalid_subdomain(name: &str) -> Option<&'static str> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.len() > 253 {
        return Some("must be no more than 253 characters");
    }
    if !name.split('.').all(label_ok) {
        return Some(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        );
    }
    None
}

/// What a directory listing looked like: each file's path, length and modification time.
type Fingerprint = Vec<(PathBuf, u64, Option<SystemTime>)>;

fn fingerprint(dir: &Path) -> Fingerprint {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Fingerprint = entries
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| {
            let meta = std::fs::metadata(e.path()).ok()?;
            meta.is_file().then(|| (e.path(), meta.len(), meta.modified().ok()))
        })
        .collect();
    files.sort();
    files
}

/// Reads every manifest of `dir`; files that do not decode are logged and left out.
pub fn read_dir(dir: &Path, node: &str) -> Vec<Pod> {
    let mut pods = Vec::new();
    for (path, _, _) in fingerprint(dir) {
        match std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display())) {
            Ok(bytes) => match parse(&path, &bytes, node) {
                Ok(pod) => pods.push(pod),
                Err(e) => tracing::warn!(error = e, "static pod manifest"),
            },
            Err(e) => tracing::warn!(error = e, "static pod manifest"),
        }
    }
    pods
}

/// The static pods of `dir` now, each stamped with when it was first seen (now, unless
/// `seen` has its uid).
pub fn read_now(dir: &Path, node: &str, seen: &HashMap<String, String>) -> Vec<Arc<Pod>> {
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
    read_dir(dir, node)
        .into_iter()
        .map(|mut pod| {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let at = seen.get(&uid).cloned().unwrap_or_else(|| now.clone());
            pod.metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(CONFIG_SEEN.into(), at);
            Arc::new(pod)
        })
        .collect()
}

/// Keeps `pods` set to the static pods of `dir` until the task is aborted. A pod seen before
/// keeps its `config.seen` time.
pub async fn watch_dir(
    dir: PathBuf,
    node: String,
    check_every: Duration,
    pods: watch::Sender<Vec<Arc<Pod>>>,
) {
    let mut last: Option<Fingerprint> = None;
    let mut read_at = tokio::time::Instant::now();
    loop {
        let now = fingerprint(&dir);
        if last.as_ref() != Some(&now) || read_at.elapsed() >= check_every {
            read_at = tokio::time::Instant::now();
            let seen: HashMap<String, String> = pods
                .borrow()
                .iter()
                .filter_map(|p| {
                    Some((p.metadata.uid.clone()?, annotation(p, CONFIG_SEEN)?.to_string()))
                })
                .collect();
            let next = read_now(&dir, &node, &seen);
            pods.send_if_modified(|current| {
                let uids = |p: &[Arc<Pod>]| -> Vec<Option<String>> {
                    p.iter().map(|p| p.metadata.uid.clone()).collect()
                };
                let changed = uids(current) != uids(&next);
                if changed {
                    *current = next;
                }
                changed
            });
            last = Some(now);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Keeps one mirror pod in the API for each static pod, and none for static pods that are
/// gone, until the task is aborted. Runs when the static pods change, when `poke` says a
/// mirror pod changed in the API, and every 10 s.
pub async fn mirror(
    client: Client,
    node: String,
    mut statics: watch::Receiver<Vec<Arc<Pod>>>,
    poke: Arc<Notify>,
) {
    let mut node_uid: Option<String> = None;
    loop {
        if node_uid.is_none() {
            let nodes: Api<Node> = Api::all(client.clone());
            node_uid = nodes.get(&node).await.ok().and_then(|n| n.metadata.uid);
        }
        let wanted = statics.borrow_and_update().clone();
        if let Some(uid) = &node_uid {
            if let Err(e) = reconcile(&client, &node, uid, &wanted).await {
                tracing::debug!(error = %e, "mirror pods");
            }
        }
        tokio::select! {
            changed = statics.changed() => if changed.is_err() { return },
            _ = poke.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(10)) => {}
        }
    }
}

async fn reconcile(
    client: &Client,
    node: &str,
    node_uid: &str,
    wanted: &[Arc<Pod>],
) -> kube::Result<()> {
    let all: Api<Pod> = Api::all(client.clone());
    let on_node = all.list(&ListParams::default().fields(&format!("spec.nodeName={node}"))).await?;
    let key = |p: &Pod| (p.metadata.namespace.clone(), p.metadata.name.clone());
    let mirrors: BTreeMap<_, Pod> =
        on_node.items.into_iter().filter(is_mirror).map(|p| (key(&p), p)).collect();
    for pod in wanted {
        let hash = annotation(pod, CONFIG_HASH).unwrap_or("");
        let current = mirrors.get(&key(pod));
        let keep = current.is_some_and(|m| {
            m.metadata.deletion_timestamp.is_none() && annotation(m, CONFIG_MIRROR) == Some(hash)
        });
        if keep {
            continue;
        }
        if let Some(stale) = current {
            crate::pods::sync::delete_now(client, stale).await;
        }
        let api: Api<Pod> =
            Api::namespaced(client.clone(), pod.metadata.namespace.as_deref().unwrap_or("default"));
        match api.create(&PostParams::default(), &mirror_of(pod, node, node_uid)).await {
            Ok(_) => tracing::info!(pod = pod.metadata.name, "created the mirror pod"),
            Err(e) => {
                tracing::warn!(pod = pod.metadata.name, error = %e, "cannot create the mirror pod")
            }
        }
    }
    let wanted_keys: Vec<_> = wanted.iter().map(|p| key(p)).collect();
    for (k, stale) in &mirrors {
        if !wanted_keys.contains(k) {
            crate::pods::sync::delete_now(client, stale).await;
        }
    }
    Ok(())
}

/// The API object standing for a static pod.
pub fn mirror_of(pod: &Pod, node: &str, node_uid: &str) -> Pod {
    let mut mirror = Pod { metadata: Default::default(), spec: pod.spec.clone(), status: None };
    mirror.metadata.name = pod.metadata.name.clone();
    mirror.metadata.namespace = pod.metadata.namespace.clone();
    mirror.metadata.labels = pod.metadata.labels.clone();
    let mut annotations = pod.metadata.annotations.clone().unwrap_or_default();
    annotations.insert(CONFIG_MIRROR.into(), annotation(pod, CONFIG_HASH).unwrap_or("").into());
    mirror.metadata.annotations = Some(annotations);
    mirror.metadata.owner_references =
        Some(vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: node.into(),
            uid: node_uid.into(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
    mirror
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "
apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: web
    image: busybox:1.36
    command: [httpd, -f, -p, '80']
";

    #[test]
    fn a_manifest_becomes_a_pod_bound_to_the_node() {
        let pod =
            parse(Path::new("/etc/manifests/web.yaml"), MANIFEST.as_bytes(), "Node-1").unwrap();
        assert_eq!(pod.metadata.name.as_deref(), Some("web-node-1"));
        assert_eq!(pod.metadata.namespace.as_deref(), Some("default"));
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.node_name.as_deref(), Some("Node-1"));
        assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
        let tolerations = spec.tolerations.as_ref().unwrap();
        assert!(tolerations.iter().any(|t| t.operator.as_deref() == Some("Exists")
            && t.effect.as_deref() == Some("NoExecute")
            && t.key.is_none()));
        let uid = pod.metadata.uid.clone().unwrap();
        assert_eq!(uid.len(), 32);
        assert_eq!(annotation(&pod, CONFIG_HASH), Some(uid.as_str()));
        assert!(is_static(&pod) && !is_mirror(&pod));

        // The same file gives the same uid; an edit or another node, another.
        let again =
            parse(Path::new("/etc/manifests/web.yaml"), MANIFEST.as_bytes(), "Node-1").unwrap();
        assert_eq!(again.metadata.uid, pod.metadata.uid);
        let edited = MANIFEST.replace("'80'", "'81'");
        let edited =
            parse(Path::new("/etc/manifests/web.yaml"), edited.as_bytes(), "Node-1").unwrap();
        assert_ne!(edited.metadata.uid, pod.metadata.uid);
        let elsewhere =
            parse(Path::new("/etc/manifests/web.yaml"), MANIFEST.as_bytes(), "node-2").unwrap();
        assert_ne!(elsewhere.metadata.uid, pod.metadata.uid);

        let mirror = mirror_of(&pod, "Node-1", "node-uid");
        assert!(is_mirror(&mirror));
        assert_eq!(annotation(&mirror, CONFIG_MIRROR), Some(uid.as_str()));
        assert_eq!(mirror.metadata.uid, None);
        let owner = &mirror.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.controller),
            ("Node", "Node-1", Some(true))
        );
    }

    #[test]
    fn bad_manifests_say_what_is_wrong() {
        let path = Path::new("m.yaml");
        let err = parse(path, b"kind: Service\napiVersion: v1\n", "n").unwrap_err();
        assert!(err.contains("one v1 Pod"), "{err}");
        let err =
            parse(path, b"kind: Pod\napiVersion: v1\nmetadata: {}\nspec: {}\n", "n").unwrap_err();
        assert!(err.contains("metadata.name: Required value"), "{err}");
        let err = parse(path, b"kind: Pod\napiVersion: v1\nmetadata: {name: Web}\nspec: {}\n", "n")
            .unwrap_err();
        assert!(err.contains("RFC 1123 subdomain"), "{err}");
        let err = parse(path, b": [", "n").unwrap_err();
        assert!(err.contains("cannot decode"), "{err}");
    }

    #[tokio::test]
    async fn the_directory_is_watched() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("web.yaml"), MANIFEST).unwrap();
        std::fs::write(dir.path().join(".hidden.yaml"), MANIFEST).unwrap();
        let (tx, mut rx) = watch::channel(Vec::new());
        let task =
            tokio::spawn(watch_dir(dir.path().into(), "n1".into(), Duration::from_secs(20), tx));
        tokio::time::timeout(Duration::from_secs(5), rx.changed()).await.unwrap().unwrap();
        let first = rx.borrow_and_update().clone();
        assert_eq!(first.len(), 1);
        assert!(annotation(&first[0], CONFIG_SEEN).is_some());
        std::fs::remove_file(dir.path().join("web.yaml")).unwrap();
        tokio::time::timeout(Duration::from_secs(5), rx.changed()).await.unwrap().unwrap();
        assert!(rx.borrow().is_empty());
        task.abort();
    }
}
