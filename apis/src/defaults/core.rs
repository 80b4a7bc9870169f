//! Defaults of the core group (`pkg/apis/core/v1/defaults.go` upstream, and the `+default`
//! markers of `k8s.io/api/core/v1`), as kube-apiserver 1.33 applies them with its default
//! feature gates. Left out, being gated off by default in 1.33: an image volume's pull policy
//! (`ImageVolume`), pod-level requests and limits worked out from the containers'
//! (`PodLevelResources`) and a log request's stream (`PodLogsQuerySplitStreams`). A ConfigMap's `data` defaults to an empty map, which
//! the JSON leaves out, so it has nothing to do here.

use serde_json::{json, Map, Value};

use super::{default, default_unset, field, items};
use crate::quantity::Quantity;

/// A Pod's defaults.
pub fn pod(obj: &mut Value) {
    field(obj, "spec").into_iter().for_each(pod_spec);
    field(obj, "status").into_iter().for_each(pod_status);
}

/// A PodTemplate's defaults.
pub fn pod_template_object(obj: &mut Value) {
    field(obj, "template").into_iter().for_each(pod_template)
}

/// A Secret's defaults.
pub fn secret(obj: &mut Value) {
    default_unset(obj, "type", json!("Opaque"))
}

pub fn replication_controller(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        default(spec, "replicas", json!(1));
        field(spec, "template").into_iter().for_each(pod_template);
    }
    // The selector and the object's labels default to the template's labels (empty ones would
    // be left out of the JSON, so they change nothing).
    let labels = obj["spec"]["template"]["metadata"]["labels"].clone();
    if labels.as_object().is_some_and(|l| !l.is_empty()) {
        let empty = |v: &Value| v.as_object().is_none_or(Map::is_empty);
        if empty(&obj["spec"]["selector"]) {
            obj["spec"]["selector"] = labels.clone();
        }
        if empty(&obj["metadata"]["labels"]) && obj["metadata"].is_object() {
            obj["metadata"]["labels"] = labels;
        }
    }
}

/// The pod template of a workload: the pod spec defaults, without those only pods get.
pub(super) fn pod_template(template: &mut Value) {
    field(template, "spec").into_iter().for_each(template_spec);
}

/// The defaults of a pod's spec (also a static pod's): those of every pod template, and those
/// upstream gives only pods, so that they do not show in workloads' templates. (A pod's
/// `priority` and `preemptionPolicy` come from the Priority admission plugin, not from here.)
pub fn pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    let host_network = spec["hostNetwork"] == true;
    for list in ["initContainers", "containers"] {
        for c in items(spec, list) {
            // Requests default to the limits.
            field(c, "resources").into_iter().for_each(|r| copy_missing(r, "limits", "requests"));
            if host_network {
                host_ports(c);
            }
        }
    }
    default(spec, "enableServiceLinks", json!(true));
    template_spec(spec);
}

/// With the host's network, a port is the same on the host unless it says otherwise.
fn host_ports(container: &mut Value) {
    for port in items(container, "ports") {
        let container_port = port.get("containerPort").cloned().unwrap_or(Value::Null);
        if container_port.as_i64().is_some_and(|p| p != 0) {
            default_unset(port, "hostPort", container_port);
        }
    }
}

/// Pod spec defaults, in pods and in every pod template.
fn template_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default_unset(spec, "restartPolicy", json!("Always"));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default_unset(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "securityContext", json!({}));
    default_unset(spec, "schedulerName", json!("default-scheduler"));
    items(spec, "volumes").for_each(volume);
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        items(spec, list).for_each(container);
    }
    field(spec, "overhead").into_iter().for_each(resource_list);
    field(spec, "resources").into_iter().for_each(requirements);
}

fn container(c: &mut Value) {
    if !c.is_object() {
        return;
    }
    let always = pulls_always(c["image"].as_str().unwrap_or(""));
    default_unset(c, "imagePullPolicy", json!(if always { "Always" } else { "IfNotPresent" }));
    default_unset(c, "terminationMessagePath", json!("/dev/termination-log"));
    default_unset(c, "terminationMessagePolicy", json!("File"));
    // Go always encodes the resources struct, empty or not.
    default(c, "resources", json!({}));
    field(c, "resources").into_iter().for_each(requirements);
    for port in items(c, "ports") {
        default_unset(port, "protocol", json!("TCP"));
    }
    for env in items(c, "env") {
        if let Some(from) = field(env, "valueFrom") {
            field(from, "fieldRef").into_iter().for_each(field_ref);
            field(from, "resourceFieldRef").into_iter().for_each(resource_field_ref);
        }
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        field(c, key).into_iter().for_each(probe);
    }
    if let Some(lifecycle) = field(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            field(lifecycle, hook).and_then(|h| field(h, "httpGet")).into_iter().for_each(http_get);
        }
    }
}

fn probe(probe: &mut Value) {
    default_unset(probe, "timeoutSeconds", json!(1));
    default_unset(probe, "periodSeconds", json!(10));
    default_unset(probe, "successThreshold", json!(1));
    default_unset(probe, "failureThreshold", json!(3));
    field(probe, "httpGet").into_iter().for_each(http_get);
    // gRPC's own default service, spelled out.
    field(probe, "grpc").into_iter().for_each(|g| default(g, "service", json!("")));
}

/// An HTTP GET action (of a probe or a lifecycle hook).
fn http_get(action: &mut Value) {
    default_unset(action, "path", json!("/"));
    default_unset(action, "scheme", json!("HTTP"));
}

/// A field selector (env `fieldRef`, downward API items) reads the v1 pod.
fn field_ref(selector: &mut Value) {
    default_unset(selector, "apiVersion", json!("v1"));
}

/// A resource field selector: Go always encodes its divisor, `"0"` when unset.
fn resource_field_ref(selector: &mut Value) {
    default(selector, "divisor", json!("0"));
    field(selector, "divisor").into_iter().for_each(canonical_quantity);
}

/// Upstream's `VolumeSource` members: a volume with none of them is an empty dir.
const VOLUME_SOURCES: [&str; 30] = [
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

/// Files a volume writes are 0644 unless it says otherwise.
const DEFAULT_MODE: i64 = 0o644;

fn volume(v: &mut Value) {
    if !v.is_object() {
        return;
    }
    if VOLUME_SOURCES.iter().all(|s| v.get(*s).is_none_or(Value::is_null)) {
        v["emptyDir"] = json!({});
    }
    for key in ["secret", "configMap"] {
        field(v, key).into_iter().for_each(|s| default(s, "defaultMode", json!(DEFAULT_MODE)));
    }
    if let Some(source) = field(v, "downwardAPI") {
        default(source, "defaultMode", json!(DEFAULT_MODE));
        downward_api_items(source);
    }
    if let Some(projected) = field(v, "projected") {
        default(projected, "defaultMode", json!(DEFAULT_MODE));
        for source in items(projected, "sources") {
            field(source, "downwardAPI").into_iter().for_each(downward_api_items);
            // A projected token lives an hour.
            field(source, "serviceAccountToken")
                .into_iter()
                .for_each(|t| default(t, "expirationSeconds", json!(3600)));
        }
    }
    if let Some(empty_dir) = field(v, "emptyDir") {
        field(empty_dir, "sizeLimit").into_iter().for_each(canonical_quantity);
    }
    if let Some(template) = field(v, "ephemeral").and_then(|e| field(e, "volumeClaimTemplate")) {
        field(template, "spec").into_iter().for_each(claim_spec);
    }
    volume_plugins(v);
}

fn downward_api_items(source: &mut Value) {
    for item in items(source, "items") {
        field(item, "fieldRef").into_iter().for_each(field_ref);
        field(item, "resourceFieldRef").into_iter().for_each(resource_field_ref);
    }
}

/// The sources a pod's volume and a persistent volume share, with their defaults.
pub(super) fn volume_plugins(source: &mut Value) {
    // An unset type means "no check" and is shown as an empty string.
    field(source, "hostPath").into_iter().for_each(|h| default(h, "type", json!("")));
    field(source, "iscsi")
        .into_iter()
        .for_each(|s| default_unset(s, "iscsiInterface", json!("default")));
    if let Some(rbd) = field(source, "rbd") {
        default_unset(rbd, "pool", json!("rbd"));
        default_unset(rbd, "user", json!("admin"));
        default_unset(rbd, "keyring", json!("/etc/ceph/keyring"));
    }
    if let Some(disk) = field(source, "azureDisk") {
        default(disk, "cachingMode", json!("ReadWrite"));
        default(disk, "fsType", json!("ext4"));
        default(disk, "readOnly", json!(false));
        default(disk, "kind", json!("Shared"));
    }
    if let Some(scale_io) = field(source, "scaleIO") {
        default_unset(scale_io, "storageMode", json!("ThinProvisioned"));
        default_unset(scale_io, "fsType", json!("xfs"));
    }
}

/// A pod's status: the resources its containers report.
fn pod_status(status: &mut Value) {
    for list in ["initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"] {
        for s in items(status, list) {
            field(s, "allocatedResources").into_iter().for_each(resource_list);
            field(s, "resources").into_iter().for_each(requirements);
        }
    }
}

pub fn service(obj: &mut Value) {
    field(obj, "spec").into_iter().for_each(service_spec);
    // A load balancer's address is a virtual IP unless it says otherwise.
    if obj["spec"]["type"] == "LoadBalancer" {
        let ingress = field(obj, "status").and_then(|s| field(s, "loadBalancer"));
        for entry in ingress.into_iter().flat_map(|lb| items(lb, "ingress")) {
            if entry["ip"].as_str().is_some_and(|ip| !ip.is_empty()) {
                default(entry, "ipMode", json!("VIP"));
            }
        }
    }
}

fn service_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default_unset(spec, "type", json!("ClusterIP"));
    default_unset(spec, "sessionAffinity", json!("None"));
    if spec["type"] != "ExternalName" {
        default(spec, "ipFamilyPolicy", json!("SingleStack"));
        default(spec, "ipFamilies", json!(["IPv4"]));
    }
    if matches!(spec["type"].as_str(), Some("ClusterIP" | "NodePort" | "LoadBalancer")) {
        default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    // Services reachable from outside the cluster: node ports, load balancers, external IPs.
    let external_ips = spec["externalIPs"].as_array().is_some_and(|ips| !ips.is_empty());
    let accessible = matches!(spec["type"].as_str(), Some("NodePort" | "LoadBalancer"))
        || (spec["type"] == "ClusterIP" && external_ips);
    if accessible {
        default_unset(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if spec["type"] == "LoadBalancer" {
        default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if spec["sessionAffinity"] == "None" {
        spec.as_object_mut().map(|s| s.remove("sessionAffinityConfig"));
    } else if spec["sessionAffinity"] == "ClientIP"
        && spec["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"].is_null()
    {
        spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 10800}});
    }
    for p in items(spec, "ports") {
        default_unset(p, "protocol", json!("TCP"));
        let port = p.get("port").cloned().unwrap_or(Value::Null);
        default_unset(p, "targetPort", port);
    }
}

pub fn endpoints(obj: &mut Value) {
    for subset in items(obj, "subsets") {
        for port in items(subset, "ports") {
            default_unset(port, "protocol", json!("TCP"));
        }
    }
}

pub fn node(obj: &mut Value) {
    let Some(status) = field(obj, "status") else { return };
    // What can be scheduled defaults to all there is.
    let capacity = status.get("capacity").filter(|c| c.as_object().is_some_and(|c| !c.is_empty()));
    if let Some(capacity) = capacity.cloned() {
        default(status, "allocatable", capacity);
    }
    for key in ["capacity", "allocatable"] {
        field(status, key).into_iter().for_each(resource_list);
    }
}

pub fn namespace(obj: &mut Value) {
    // Every named namespace carries its name as a label, whatever the client says.
    let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str);
    if let Some(name) = name.filter(|n| !n.is_empty()).map(String::from) {
        let metadata = &mut obj["metadata"];
        default(metadata, "labels", json!({}));
        if let Some(labels) = metadata["labels"].as_object_mut() {
            labels.insert("kubernetes.io/metadata.name".into(), json!(name));
        }
    }
    status_phase(obj, "Active");
}

pub fn limit_range(obj: &mut Value) {
    let Some(spec) = field(obj, "spec") else { return };
    for item in items(spec, "limits") {
        // A container's default limit is the max, its default request the default limit,
        // else the min.
        if item["type"] == "Container" {
            copy_missing(item, "max", "default");
            copy_missing(item, "default", "defaultRequest");
            copy_missing(item, "min", "defaultRequest");
        }
        for key in ["max", "min", "default", "defaultRequest", "maxLimitRequestRatio"] {
            field(item, key).into_iter().for_each(resource_list);
        }
    }
}

pub fn resource_quota(obj: &mut Value) {
    field(obj, "spec").and_then(|s| field(s, "hard")).into_iter().for_each(resource_list);
    if let Some(status) = field(obj, "status") {
        for key in ["hard", "used"] {
            field(status, key).into_iter().for_each(resource_list);
        }
    }
}

pub fn persistent_volume(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        default_unset(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
        default(spec, "volumeMode", json!("Filesystem"));
        field(spec, "capacity").into_iter().for_each(resource_list);
        volume_plugins(spec);
    }
    status_phase(obj, "Pending");
}

/// A claim (also a StatefulSet's claim template).
pub fn persistent_volume_claim(obj: &mut Value) {
    field(obj, "spec").into_iter().for_each(claim_spec);
    status_phase(obj, "Pending");
    if let Some(status) = field(obj, "status") {
        for key in ["capacity", "allocatedResources"] {
            field(status, key).into_iter().for_each(resource_list);
        }
    }
}

/// A claim's spec (also an ephemeral volume's claim template).
fn claim_spec(spec: &mut Value) {
    default(spec, "volumeMode", json!("Filesystem"));
    field(spec, "resources").into_iter().for_each(requirements);
}

/// The phase an object's status defaults to: Go's status struct is always there, so this adds
/// `status` when it is missing.
fn status_phase(obj: &mut Value, phase: &str) {
    if obj.is_object() {
        default(obj, "status", json!({}));
        default_unset(&mut obj["status"], "phase", json!(phase));
    }
}

/// Copies into the resource list `to` the entries of `from` it lacks. The list is created only
/// when there is something to copy: upstream's empty list is left out of the JSON.
fn copy_missing(obj: &mut Value, from: &str, to: &str) {
    let source = obj.get(from).and_then(Value::as_object).filter(|m| !m.is_empty()).cloned();
    let Some(source) = source else { return };
    default(obj, to, json!({}));
    if let Some(target) = obj.get_mut(to).and_then(Value::as_object_mut) {
        for (key, value) in source {
            target.entry(key).or_insert(value);
        }
    }
}

/// Resource requirements: their limits and requests.
fn requirements(r: &mut Value) {
    for key in ["limits", "requests"] {
        field(r, key).into_iter().for_each(resource_list);
    }
}

/// A resource list's quantities as upstream stores them: rounded up to thousandths, in
/// canonical form (`0.5` reads back as `500m`, `2048Mi` as `2Gi`).
fn resource_list(list: &mut Value) {
    if let Some(list) = list.as_object_mut() {
        list.values_mut().for_each(rounded_quantity);
    }
}

/// A quantity in canonical form (a JSON number becomes a string). One that does not parse is
/// left for validation.
fn canonical_quantity(q: &mut Value) {
    if let Some(parsed) = Quantity::parse(q) {
        *q = json!(parsed.canonical());
    }
}

/// A quantity rounded up (away from zero) to thousandths, then in canonical form.
fn rounded_quantity(q: &mut Value) {
    const NANOS_PER_MILLI: i128 = 1_000_000;
    let Some(parsed) = Quantity::parse(q) else { return };
    if parsed.nanos % NANOS_PER_MILLI != 0 {
        let milli = parsed.nanos / NANOS_PER_MILLI + parsed.nanos.signum();
        let text = q.as_str().map_or_else(|| q.to_string(), String::from);
        *q = json!(thousandths_like(&text, milli));
    }
    canonical_quantity(q);
}

/// `milli` thousandths, written in the suffix family of `original` (which decides the
/// canonical form: `e` exponents stay exponents, whole binary amounts stay binary).
fn thousandths_like(original: &str, milli: i128) -> String {
    let suffix = original
        .trim_start_matches(['+', '-'])
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    if suffix.len() > 1 && suffix.starts_with(['e', 'E']) {
        return format!("{milli}e-3");
    }
    if suffix.ends_with('i') && milli % 1000 == 0 {
        // n units are n/1024 Ki, which has at most ten decimals: n × 9765625 × 10^-10.
        let scaled = (milli / 1000).abs() * 9_765_625;
        let sign = if milli < 0 { "-" } else { "" };
        const TEN_DIGITS: i128 = 10_000_000_000;
        return format!("{sign}{}.{:010}Ki", scaled / TEN_DIGITS, scaled % TEN_DIGITS);
    }
    format!("{milli}m")
}

/// Whether a container with this image pulls it always: its tag is `latest`, or it has neither
/// tag nor digest. An image upstream's reference parser refuses pulls if not present.
fn pulls_always(image: &str) -> bool {
    match image_reference(image) {
        Some((Some(tag), _)) => tag == "latest",
        Some((None, has_digest)) => !has_digest,
        None => false,
    }
}

/// An image reference's tag and whether it has a digest; `None` when it does not parse.
fn image_reference(image: &str) -> Option<(Option<&str>, bool)> {
    // 64 hex digits alone are an image ID, which is not a name.
    if image.len() == 64 && image.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let (rest, digest) = match image.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (image, None),
    };
    if digest.is_some_and(|d| !valid_digest(d)) {
        return None;
    }
    // The tag follows the last colon that has no slash after it (before, it is a port).
    let (name, tag) = match rest.rfind(':') {
        Some(i) if !rest[i..].contains('/') => (&rest[..i], Some(&rest[i + 1..])),
        _ => (rest, None),
    };
    if tag.is_some_and(|t| !valid_tag(t)) || !valid_name(name) {
        return None;
    }
    Some((tag, digest.is_some()))
}

/// `registry[:port]/path` or a Docker Hub path; at most 255 characters with Docker Hub's
/// registry (and `library/`) spelled out.
fn valid_name(name: &str) -> bool {
    let first = name.split_once('/').map(|(first, _)| first);
    let registry =
        first.filter(|f| f.contains(['.', ':']) || *f == "localhost" || f.to_lowercase() != **f);
    let (path, full_len) = match registry {
        Some(registry) => {
            if !valid_registry(registry) {
                return false;
            }
            (&name[registry.len() + 1..], name.len())
        }
        None if name.contains('/') => (name, "docker.io/".len() + name.len()),
        None => (name, "docker.io/library/".len() + name.len()),
    };
    full_len <= 255 && path.to_lowercase() == path && path.split('/').all(valid_path_component)
}

/// A registry host (DNS labels or a bracketed IPv6 address) with an optional port.
fn valid_registry(registry: &str) -> bool {
    let (host, port) = match registry.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, Some(port)),
        _ => (registry, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return !v6.is_empty() && v6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':');
    }
    host.split('.').all(|label| {
        let alnum = |b: Option<&u8>| b.is_some_and(u8::is_ascii_alphanumeric);
        alnum(label.as_bytes().first())
            && alnum(label.as_bytes().last())
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    })
}

/// Lowercase letters and digits, joined by `.`, `_`, `__` or dashes.
fn valid_path_component(component: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let separators_ok = component
        .split(alnum)
        .filter(|s| !s.is_empty())
        .all(|s| matches!(s, "." | "_" | "__") || s.bytes().all(|b| b == b'-'));
    component.starts_with(alnum) && component.ends_with(alnum) && separators_ok
}

/// Up to 128 word characters, dots and dashes, not starting with a dot or a dash.
fn valid_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    tag.len() <= 128
        && tag.bytes().next().is_some_and(word)
        && tag.bytes().all(|b| word(b) || b == b'.' || b == b'-')
}

/// A digest of an algorithm the parser knows, in lowercase hex of the right length.
fn valid_digest(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else { return false };
    let length = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == length && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defaults::apply;
    use crate::resources::Resources;

    fn applied(plural: &str, mut obj: Value) -> Value {
        apply(Resources::builtin().get("", "v1", plural).unwrap(), &mut obj);
        obj
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let (pinned, latest_pinned) =
            (format!("busybox@{digest}"), format!("busybox:latest@{digest}"));
        let image_id = "a".repeat(64);
        for (image, policy) in [
            ("busybox:1.36", "IfNotPresent"),
            ("busybox", "Always"),
            ("busybox:latest", "Always"),
            ("reg:5000/busybox", "Always"),
            ("reg:5000/busybox:1", "IfNotPresent"),
            ("localhost/busybox", "Always"),
            ("[::1]:5000/busybox", "Always"),
            (pinned.as_str(), "IfNotPresent"),
            (latest_pinned.as_str(), "Always"),
            // What the parser refuses pulls if not present.
            ("", "IfNotPresent"),
            ("Busybox", "IfNotPresent"),
            ("busybox@sha256:abc", "IfNotPresent"),
            ("busy..box", "IfNotPresent"),
            ("busybox:-1", "IfNotPresent"),
            (image_id.as_str(), "IfNotPresent"),
        ] {
            let mut c = json!({"image": image});
            container(&mut c);
            assert_eq!(c["imagePullPolicy"], policy, "{image}");
        }
        let mut given = json!({"image": "busybox", "imagePullPolicy": "Never"});
        container(&mut given);
        assert_eq!(given["imagePullPolicy"], "Never");
    }

    #[test]
    fn probes_and_hooks_get_upstream_defaults() {
        let mut c = json!({
            "image": "busybox:1.36",
            "readinessProbe": {"httpGet": {"port": 80}},
            "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 2, "timeoutSeconds": 0},
            "startupProbe": {"grpc": {"port": 9000}},
            "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}}
        });
        container(&mut c);
        let thresholds = json!({"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3});
        let mut readiness = thresholds.clone();
        readiness["httpGet"] = json!({"port": 80, "path": "/", "scheme": "HTTP"});
        assert_eq!(c["readinessProbe"], readiness);
        let mut liveness = thresholds.clone();
        liveness["exec"] = json!({"command": ["true"]});
        liveness["periodSeconds"] = json!(2);
        assert_eq!(c["livenessProbe"], liveness);
        let mut startup = thresholds;
        startup["grpc"] = json!({"port": 9000, "service": ""});
        assert_eq!(c["startupProbe"], startup);
        assert_eq!(
            c["lifecycle"],
            json!({"preStop": {"httpGet": {"port": 80, "path": "/stop", "scheme": "HTTP"}}})
        );
    }

    #[test]
    fn a_minimal_pod_gets_exactly_upstreams_defaults() {
        let pod = applied(
            "pods",
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        );
        assert_eq!(
            pod,
            json!({"metadata": {"name": "p"}, "spec": {
                "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File", "resources": {}}],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst", "securityContext": {},
                "schedulerName": "default-scheduler", "enableServiceLinks": true}})
        );
    }

    #[test]
    fn templates_do_not_get_what_only_pods_get() {
        let spec = json!({"hostNetwork": true, "containers": [{"name": "c", "image": "nginx:1",
            "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": "1"}}}]});
        let mut template = json!({"spec": spec.clone()});
        pod_template(&mut template);
        let c = &template["spec"]["containers"][0];
        assert_eq!(c["ports"], json!([{"containerPort": 80, "protocol": "TCP"}]));
        assert_eq!(c["resources"], json!({"limits": {"cpu": "1"}}));
        assert!(template["spec"].get("enableServiceLinks").is_none());
        assert!(template["spec"].get("preemptionPolicy").is_none());
        let template = applied("podtemplates", json!({"template": {"spec": spec.clone()}}));
        assert!(template["template"]["spec"].get("enableServiceLinks").is_none());

        let pod = applied("pods", json!({"spec": spec}));
        let c = &pod["spec"]["containers"][0];
        assert_eq!(c["ports"], json!([{"containerPort": 80, "hostPort": 80, "protocol": "TCP"}]));
        assert_eq!(c["resources"], json!({"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}));
        assert_eq!(pod["spec"]["enableServiceLinks"], true);
    }

    #[test]
    fn requests_default_to_limits_key_by_key_in_pods() {
        let pod = applied(
            "pods",
            json!({"spec": {
                "initContainers": [{"name": "i", "image": "a:1",
                    "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "100m"}}}],
                "containers": [
                    {"name": "c", "image": "a:1", "resources": {"limits": {}}},
                    {"name": "d", "image": "a:1", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
                "ephemeralContainers": [{"name": "e", "image": "a:1",
                    "resources": {"limits": {"cpu": "1"}}}]}}),
        );
        assert_eq!(
            pod["spec"]["initContainers"][0]["resources"]["requests"],
            json!({"cpu": "100m", "memory": "1Gi"})
        );
        // Empty limits give nothing; no host network, no host port.
        assert_eq!(pod["spec"]["containers"][0]["resources"], json!({"limits": {}}));
        assert_eq!(
            pod["spec"]["containers"][1]["ports"],
            json!([{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}])
        );
        // Ephemeral containers get the container defaults, but not requests from limits.
        let e = &pod["spec"]["ephemeralContainers"][0];
        assert_eq!(e["resources"], json!({"limits": {"cpu": "1"}}));
        assert_eq!(
            (&e["imagePullPolicy"], &e["terminationMessagePolicy"]),
            (&json!("IfNotPresent"), &json!("File"))
        );
    }

    #[test]
    fn host_network_ports_default_to_the_container_port() {
        let pod = applied(
            "pods",
            json!({"spec": {"hostNetwork": true,
                "initContainers": [{"name": "i", "image": "a:1", "ports": [{"containerPort": 53, "protocol": "UDP"}]}],
                "containers": [{"name": "c", "image": "a:1",
                    "ports": [{"containerPort": 80, "hostPort": 0}, {"containerPort": 81, "hostPort": 9000}, {"name": "x"}]}]}}),
        );
        assert_eq!(
            pod["spec"]["initContainers"][0]["ports"],
            json!([{"containerPort": 53, "hostPort": 53, "protocol": "UDP"}])
        );
        assert_eq!(
            pod["spec"]["containers"][0]["ports"],
            json!([{"containerPort": 80, "hostPort": 80, "protocol": "TCP"},
                {"containerPort": 81, "hostPort": 9000, "protocol": "TCP"},
                {"name": "x", "protocol": "TCP"}])
        );
    }

    #[test]
    fn env_field_refs_read_v1() {
        let mut c = json!({"image": "a:1", "env": [
            {"name": "A", "value": "x"},
            {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName", "apiVersion": "v2"}}},
            {"name": "D", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {"name": "E", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1024Ki"}}},
            {"name": "F", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]});
        container(&mut c);
        assert_eq!(
            c["env"],
            json!([
                {"name": "A", "value": "x"},
                {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}}},
                {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName", "apiVersion": "v2"}}},
                {"name": "D", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "0"}}},
                {"name": "E", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                {"name": "F", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}])
        );
    }

    #[test]
    fn volumes_get_their_sources_defaults() {
        let mut spec = json!({"volumes": [
            {"name": "none"},
            {"name": "nulls", "secret": null},
            {"name": "host", "hostPath": {"path": "/x"}},
            {"name": "host-typed", "hostPath": {"path": "/x", "type": "Directory"}},
            {"name": "secret", "secret": {"secretName": "s"}},
            {"name": "cm", "configMap": {"name": "c", "defaultMode": 256}},
            {"name": "down", "downwardAPI": {"items": [
                {"path": "n", "fieldRef": {"fieldPath": "metadata.name"}},
                {"path": "c", "resourceFieldRef": {"containerName": "c", "resource": "requests.cpu", "divisor": "1m"}}]}},
            {"name": "proj", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token"}},
                {"serviceAccountToken": {"path": "t2", "expirationSeconds": 600, "audience": "a"}},
                {"downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                {"configMap": {"name": "root-ca"}}]}},
            {"name": "empty", "emptyDir": {"sizeLimit": "1024Mi"}},
            {"name": "pvc", "persistentVolumeClaim": {"claimName": "c"}},
            {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1024Mi"}}}}}}]});
        template_spec(&mut spec);
        assert_eq!(
            spec["volumes"],
            json!([
                {"name": "none", "emptyDir": {}},
                {"name": "nulls", "secret": null, "emptyDir": {}},
                {"name": "host", "hostPath": {"path": "/x", "type": ""}},
                {"name": "host-typed", "hostPath": {"path": "/x", "type": "Directory"}},
                {"name": "secret", "secret": {"secretName": "s", "defaultMode": 420}},
                {"name": "cm", "configMap": {"name": "c", "defaultMode": 256}},
                {"name": "down", "downwardAPI": {"defaultMode": 420, "items": [
                    {"path": "n", "fieldRef": {"fieldPath": "metadata.name", "apiVersion": "v1"}},
                    {"path": "c", "resourceFieldRef": {"containerName": "c", "resource": "requests.cpu", "divisor": "1m"}}]}},
                {"name": "proj", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}},
                    {"serviceAccountToken": {"path": "t2", "expirationSeconds": 600, "audience": "a"}},
                    {"downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels", "apiVersion": "v1"}}]}},
                    {"configMap": {"name": "root-ca"}}]}},
                {"name": "empty", "emptyDir": {"sizeLimit": "1Gi"}},
                {"name": "pvc", "persistentVolumeClaim": {"claimName": "c"}},
                {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {
                    "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                    "volumeMode": "Filesystem"}}}}])
        );
    }

    #[test]
    fn legacy_volume_plugins_get_their_defaults() {
        let mut spec = json!({"volumes": [
            {"name": "iscsi", "iscsi": {"targetPortal": "p", "iqn": "q", "lun": 0}},
            {"name": "rbd", "rbd": {"monitors": ["m"], "image": "i", "pool": ""}},
            {"name": "azure", "azureDisk": {"diskName": "d", "diskURI": "u", "readOnly": true}},
            {"name": "scaleio", "scaleIO": {"gateway": "g", "system": "s", "secretRef": {"name": "x"}}}]});
        template_spec(&mut spec);
        assert_eq!(spec["volumes"][0]["iscsi"]["iscsiInterface"], "default");
        assert_eq!(
            spec["volumes"][1]["rbd"],
            json!({"monitors": ["m"], "image": "i", "pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"})
        );
        assert_eq!(
            spec["volumes"][2]["azureDisk"],
            json!({"diskName": "d", "diskURI": "u", "readOnly": true, "cachingMode": "ReadWrite",
                "fsType": "ext4", "kind": "Shared"})
        );
        assert_eq!(
            spec["volumes"][3]["scaleIO"],
            json!({"gateway": "g", "system": "s", "secretRef": {"name": "x"},
                "storageMode": "ThinProvisioned", "fsType": "xfs"})
        );
        let pv = applied(
            "persistentvolumes",
            json!({"spec": {"capacity": {"storage": "0.5Gi"}, "rbd": {"monitors": ["m"], "image": "i"},
                "iscsi": {"targetPortal": "p", "iqn": "q", "lun": 0}, "hostPath": {"path": "/d"}}}),
        );
        assert_eq!(
            pv,
            json!({"spec": {"capacity": {"storage": "512Mi"},
                "rbd": {"monitors": ["m"], "image": "i", "pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"},
                "iscsi": {"targetPortal": "p", "iqn": "q", "lun": 0, "iscsiInterface": "default"},
                "hostPath": {"path": "/d", "type": ""},
                "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"},
                "status": {"phase": "Pending"}})
        );
    }

    #[test]
    fn resource_lists_are_rounded_up_to_thousandths_and_canonical() {
        let mut c = json!({"image": "a:1", "resources": {
            "limits": {"cpu": "0.5", "memory": "2048Mi", "example.com/dev": "1000m", "hugepages-2Mi": "1e3"},
            "requests": {"cpu": "100u", "memory": "0.9999999Ki", "ephemeral-storage": "1.0000001e3", "bad": "x"}}});
        container(&mut c);
        assert_eq!(
            c["resources"],
            json!({
                "limits": {"cpu": "500m", "memory": "2Gi", "example.com/dev": "1", "hugepages-2Mi": "1e3"},
                "requests": {"cpu": "1m", "memory": "1Ki", "ephemeral-storage": "1000001e-3", "bad": "x"}})
        );
        let mut spec = json!({"overhead": {"cpu": "0.25"}, "containers": []});
        template_spec(&mut spec);
        assert_eq!(spec["overhead"], json!({"cpu": "250m"}));
    }

    #[test]
    fn pod_status_resources_are_canonical() {
        let pod = applied(
            "pods",
            json!({"status": {"phase": "Running", "containerStatuses": [{"name": "c",
                "allocatedResources": {"cpu": "0.1"}, "resources": {"requests": {"memory": "1024Ki"}}}]}}),
        );
        assert_eq!(
            pod["status"]["containerStatuses"][0],
            json!({"name": "c", "allocatedResources": {"cpu": "100m"},
                "resources": {"requests": {"memory": "1Mi"}}})
        );
        assert!(pod.get("spec").is_none());
    }

    #[test]
    fn services_get_upstream_defaults() {
        let svc = applied(
            "services",
            json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": 0},
                {"port": 443, "targetPort": ""}, {"port": 8080, "targetPort": "http"}],
                "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 60}}}}),
        );
        assert_eq!(
            svc["spec"],
            json!({"type": "ClusterIP", "sessionAffinity": "None", "ipFamilyPolicy": "SingleStack",
                "ipFamilies": ["IPv4"], "internalTrafficPolicy": "Cluster", "ports": [
                    {"port": 80, "protocol": "TCP", "targetPort": 80},
                    {"port": 53, "protocol": "UDP", "targetPort": 53},
                    {"port": 443, "protocol": "TCP", "targetPort": 443},
                    {"port": 8080, "protocol": "TCP", "targetPort": "http"}]})
        );
        let external = applied(
            "services",
            json!({"spec": {"externalIPs": ["1.2.3.4"], "ports": [{"port": 80}]}}),
        );
        assert_eq!(external["spec"]["externalTrafficPolicy"], "Cluster");
        let name = applied(
            "services",
            json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}),
        );
        assert_eq!(
            name["spec"],
            json!({"type": "ExternalName", "externalName": "example.com", "sessionAffinity": "None"})
        );
        let lb = applied(
            "services",
            json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
                "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"},
                    {"hostname": "lb.example.com"}, {"ip": "10.0.0.2", "ipMode": "Proxy"}]}}}),
        );
        assert_eq!(
            lb["status"]["loadBalancer"]["ingress"],
            json!([{"ip": "10.0.0.1", "ipMode": "VIP"}, {"hostname": "lb.example.com"},
                {"ip": "10.0.0.2", "ipMode": "Proxy"}])
        );
        assert_eq!(
            (&lb["spec"]["externalTrafficPolicy"], &lb["spec"]["allocateLoadBalancerNodePorts"]),
            (&json!("Cluster"), &json!(true))
        );
    }

    #[test]
    fn endpoints_ports_default_to_tcp() {
        let ep = applied(
            "endpoints",
            json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}],
                "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}, {"addresses": []}]}),
        );
        assert_eq!(
            ep["subsets"],
            json!([{"addresses": [{"ip": "10.0.0.1"}],
                "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]},
                {"addresses": []}])
        );
    }

    #[test]
    fn nodes_allocatable_defaults_to_capacity() {
        let node = applied(
            "nodes",
            json!({"spec": {}, "status": {"capacity": {"cpu": "4", "memory": "8388608Ki", "pods": "110"}}}),
        );
        let capacity = json!({"cpu": "4", "memory": "8Gi", "pods": "110"});
        assert_eq!(node["status"], json!({"capacity": capacity, "allocatable": capacity}));
        let given = applied(
            "nodes",
            json!({"status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3500m"}}}),
        );
        assert_eq!(given["status"]["allocatable"], json!({"cpu": "3500m"}));
        let empty = applied("nodes", json!({"status": {"capacity": {}}}));
        assert_eq!(empty, json!({"status": {"capacity": {}}}));
        assert_eq!(applied("nodes", json!({"spec": {}})), json!({"spec": {}}));
    }

    #[test]
    fn namespaces_are_labelled_with_their_name_and_active() {
        let ns = applied(
            "namespaces",
            json!({"metadata": {"name": "team", "labels": {"kubernetes.io/metadata.name": "x", "a": "b"}}}),
        );
        assert_eq!(
            ns,
            json!({"metadata": {"name": "team", "labels": {"kubernetes.io/metadata.name": "team", "a": "b"}},
                "status": {"phase": "Active"}})
        );
        let unnamed = applied(
            "namespaces",
            json!({"metadata": {"generateName": "t-"}, "status": {"phase": "Terminating"}}),
        );
        assert_eq!(
            unnamed,
            json!({"metadata": {"generateName": "t-"}, "status": {"phase": "Terminating"}})
        );
    }

    #[test]
    fn limit_ranges_default_container_limits_and_requests() {
        let lr = applied(
            "limitranges",
            json!({"spec": {"limits": [
                {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "0.1", "ephemeral-storage": "1Gi"},
                    "default": {"memory": "512Mi"}},
                {"type": "Container", "defaultRequest": {"cpu": "100m"}},
                {"type": "Pod", "max": {"cpu": "4"}, "maxLimitRequestRatio": {"cpu": "2.0"}}]}}),
        );
        assert_eq!(
            lr["spec"]["limits"],
            json!([
                {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"},
                    "min": {"cpu": "100m", "ephemeral-storage": "1Gi"},
                    "default": {"memory": "512Mi", "cpu": "2"},
                    "defaultRequest": {"memory": "512Mi", "cpu": "2", "ephemeral-storage": "1Gi"}},
                {"type": "Container", "defaultRequest": {"cpu": "100m"}},
                {"type": "Pod", "max": {"cpu": "4"}, "maxLimitRequestRatio": {"cpu": "2"}}])
        );
    }

    #[test]
    fn resource_quotas_are_canonical() {
        let quota = applied(
            "resourcequotas",
            json!({"spec": {"hard": {"requests.cpu": "0.5", "pods": "10"}},
                "status": {"hard": {"requests.cpu": "500m"}, "used": {"requests.memory": "1048576Ki"}}}),
        );
        assert_eq!(
            quota,
            json!({"spec": {"hard": {"requests.cpu": "500m", "pods": "10"}},
                "status": {"hard": {"requests.cpu": "500m"}, "used": {"requests.memory": "1Gi"}}})
        );
    }

    #[test]
    fn claims_are_pending_filesystems() {
        let pvc = applied(
            "persistentvolumeclaims",
            json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1000M"}}}}),
        );
        assert_eq!(
            pvc,
            json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1G"}},
                "volumeMode": "Filesystem"}, "status": {"phase": "Pending"}})
        );
        let bound = applied(
            "persistentvolumeclaims",
            json!({"spec": {"volumeMode": "Block"}, "status": {"phase": "Bound", "capacity": {"storage": "1024Mi"}}}),
        );
        assert_eq!(
            bound,
            json!({"spec": {"volumeMode": "Block"}, "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}})
        );
    }

    #[test]
    fn secrets_and_replication_controllers() {
        assert_eq!(applied("secrets", json!({"type": ""})), json!({"type": "Opaque"}));
        assert_eq!(
            applied("secrets", json!({"type": "kubernetes.io/tls"}))["type"],
            "kubernetes.io/tls"
        );
        let rc = applied(
            "replicationcontrollers",
            json!({"metadata": {"name": "r"}, "spec": {"template": {"metadata": {"labels": {}},
                "spec": {"containers": [{"name": "c", "image": "a:1"}]}}}}),
        );
        assert_eq!(rc["metadata"], json!({"name": "r"}));
        assert_eq!(rc["spec"]["replicas"], 1);
        assert!(
            rc["spec"].get("selector").is_none() && rc["spec"].get("minReadySeconds").is_none()
        );
        assert!(rc["spec"]["template"]["spec"].get("enableServiceLinks").is_none());
        assert_eq!(rc["spec"]["template"]["spec"]["restartPolicy"], "Always");
    }

    #[test]
    fn kinds_without_defaults_are_left_alone() {
        for plural in ["configmaps", "serviceaccounts", "events"] {
            let obj = json!({"metadata": {"name": "x"}});
            assert_eq!(applied(plural, obj.clone()), obj, "{plural}");
        }
    }
}
