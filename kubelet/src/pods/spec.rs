//! From a pod's container to what the runtime runs: command and args, environment (with
//! `valueFrom`, `envFrom` and service links), volumes as bind mounts, security context and
//! resources as cgroup limits.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, Container, EphemeralContainer, Pod, Secret, Service};
use k8s_openapi::ByteString;
use kube::api::{Api, ListParams};
use kube::Client;

use crate::runtime::{ContainerSpec, PodRef};
use rkube_apis::quantity::{parse_milli as cpu_millis, parse_units as memory_bytes};

/// Whether an init container is a sidecar (upstream's restartable init container:
/// `restartPolicy: Always`), which keeps running beside the app containers.
pub fn is_sidecar(container: &Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

/// Why a container cannot be made yet: shown as its `waiting` reason
/// (`CreateContainerConfigError` with upstream's messages).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError(pub String);

pub fn pod_ref(pod: &Pod) -> PodRef {
    PodRef {
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
    }
}

/// Where a pod's volumes live on the node.
pub fn volume_dir(root: &Path, pod: &Pod, volume: &str) -> PathBuf {
    root.join("pods")
        .join(pod.metadata.uid.as_deref().unwrap_or("unknown"))
        .join("volumes")
        .join(volume)
}

/// Reads configMaps and secrets once per sync.
pub struct Lookup<'a> {
    pub client: &'a Client,
    pub namespace: String,
    config_maps: BTreeMap<String, Option<ConfigMap>>,
    secrets: BTreeMap<String, Option<Secret>>,
    /// Service-account tokens for projected volumes (the kubelet's shared cache, see
    /// [`Lookup::with_tokens`]; a private one otherwise).
    pub tokens: std::sync::Arc<crate::tokens::TokenManager>,
}

impl<'a> Lookup<'a> {
    pub fn new(client: &'a Client, namespace: &str) -> Lookup<'a> {
        Lookup {
            client,
            namespace: namespace.to_string(),
            config_maps: BTreeMap::new(),
            secrets: BTreeMap::new(),
            tokens: Default::default(),
        }
    }

    /// Takes service-account tokens from (and keeps new ones in) the kubelet's cache.
    pub fn with_tokens(mut self, tokens: std::sync::Arc<crate::tokens::TokenManager>) -> Self {
        self.tokens = tokens;
        self
    }

    pub async fn config_map(&mut self, name: &str) -> Option<&ConfigMap> {
        if !self.config_maps.contains_key(name) {
            let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
            let found = api.get_opt(name).await.ok().flatten();
            self.config_maps.insert(name.to_string(), found);
        }
        self.config_maps.get(name).and_then(Option::as_ref)
    }

    pub async fn secret(&mut self, name: &str) -> Option<&Secret> {
        if !self.secrets.contains_key(name) {
            let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
            let found = api.get_opt(name).await.ok().flatten();
            self.secrets.insert(name.to_string(), found);
        }
        self.secrets.get(name).and_then(Option::as_ref)
    }
}

fn secret_value(secret: &Secret, key: &str) -> Option<String> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|ByteString(b)| String::from_utf8_lossy(b).into_owned())
        .or_else(|| secret.string_data.as_ref().and_then(|d| d.get(key)).cloned())
}

/// A `fieldRef` path's value (upstream's downward API fields).
pub fn field_value(pod: &Pod, path: &str, pod_ip: &str, host_ip: &str) -> Option<String> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    let bracketed = |prefix: &str, map: Option<&BTreeMap<String, String>>| {
        path.strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix("['").and_then(|r| r.strip_suffix("']")))
            .map(|key| map.and_then(|m| m.get(key)).cloned().unwrap_or_default())
    };
    let format_map = |map: Option<&BTreeMap<String, String>>| {
        map.into_iter().flatten().map(|(k, v)| format!("{k}={v:?}")).collect::<Vec<_>>().join("\n")
    };
    Some(match path {
        "metadata.name" => meta.name.clone().unwrap_or_default(),
        "metadata.namespace" => meta.namespace.clone().unwrap_or_default(),
        "metadata.uid" => meta.uid.clone().unwrap_or_default(),
        "metadata.labels" => format_map(meta.labels.as_ref()),
        "metadata.annotations" => format_map(meta.annotations.as_ref()),
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()).unwrap_or_default(),
        "spec.serviceAccountName" => {
            spec.and_then(|s| s.service_account_name.clone()).unwrap_or_default()
        }
        "status.podIP" | "status.podIPs" => pod_ip.to_string(),
        "status.hostIP" | "status.hostIPs" => host_ip.to_string(),
        _ => {
            return bracketed("metadata.labels", meta.labels.as_ref())
                .or_else(|| bracketed("metadata.annotations", meta.annotations.as_ref()))
        }
    })
}

/// A `resourceFieldRef`'s value, in the divisor's units (rounded up, as upstream).
pub fn resource_value(
    container: &Container,
    resource: &str,
    divisor: Option<&str>,
    node_allocatable: &BTreeMap<String, String>,
) -> Option<String> {
    let resources = container.resources.as_ref();
    let (kind, name) = resource.split_once('.')?;
    let map = match kind {
        "limits" => resources.and_then(|r| r.limits.as_ref()),
        "requests" => resources.and_then(|r| r.requests.as_ref()),
        _ => return None,
    };
    // Without a limit, the node's allocatable (upstream's MergeContainerResourceLimits);
    // without a request, zero.
    let quantity = map
        .and_then(|m| m.get(name))
        .map(|q| q.0.clone())
        .or_else(|| (kind == "limits").then(|| node_allocatable.get(name).cloned()).flatten());
    match name {
        "cpu" => {
            let millis = quantity.as_deref().and_then(cpu_millis).unwrap_or(0);
            let divisor = divisor.and_then(cpu_millis).filter(|d| *d > 0).unwrap_or(1000);
            Some(((millis + divisor - 1) / divisor).to_string())
        }
        "memory" | "ephemeral-storage" => {
            let bytes = quantity.as_deref().and_then(memory_bytes).unwrap_or(0);
            let divisor = divisor.and_then(memory_bytes).filter(|d| *d > 0).unwrap_or(1);
            Some(((bytes + divisor - 1) / divisor).to_string())
        }
        _ => None,
    }
}

/// Upstream's service environment variables for the services of the pod's namespace (and
/// the `kubernetes` service of `default`).
pub async fn service_env(client: &Client, namespace: &str) -> Vec<(String, String)> {
    let mut services: Vec<Service> = Vec::new();
    for ns in ["default", namespace] {
        let api: Api<Service> = Api::namespaced(client.clone(), ns);
        if let Ok(list) = api.list(&ListParams::default()).await {
            for svc in list.items {
                let name = svc.metadata.name.as_deref().unwrap_or("");
                if ns == namespace || (ns == "default" && name == "kubernetes") {
                    services.push(svc);
                }
            }
        }
        if namespace == "default" {
            break;
        }
    }
    let mut env = Vec::new();
    for svc in services {
        let Some(spec) = svc.spec.as_ref() else { continue };
        let ip = spec.cluster_ip.as_deref().unwrap_or("");
        if ip.is_empty() || ip == "None" {
            continue;
        }
        let prefix = svc.metadata.name.as_deref().unwrap_or("").to_uppercase().replace('-', "_");
        let ports = spec.ports.as_deref().unwrap_or(&[]);
        let Some(first) = ports.first() else { continue };
        env.push((format!("{prefix}_SERVICE_HOST"), ip.to_string()));
        env.push((format!("{prefix}_SERVICE_PORT"), first.port.to_string()));
        for port in ports {
            if let Some(name) = &port.name {
                env.push((
                    format!("{prefix}_SERVICE_PORT_{}", name.to_uppercase().replace('-', "_")),
                    port.port.to_string(),
                ));
            }
        }
        let proto = |p: &k8s_openapi::api::core::v1::ServicePort| {
            p.protocol.clone().unwrap_or_else(|| "TCP".into())
        };
        env.push((
            format!("{prefix}_PORT"),
            format!("{}://{ip}:{}", proto(first).to_lowercase(), first.port),
        ));
        for port in ports {
            let p = proto(port);
            let base = format!("{prefix}_PORT_{}_{}", port.port, p.to_uppercase());
            env.push((base.clone(), format!("{}://{ip}:{}", p.to_lowercase(), port.port)));
            env.push((format!("{base}_PROTO"), p.to_lowercase()));
            env.push((format!("{base}_PORT"), port.port.to_string()));
            env.push((format!("{base}_ADDR"), ip.to_string()));
        }
    }
    env
}

/// Expands `$(VAR)` references from the variables defined so far; `$$` escapes.
pub fn expand(text: &str, vars: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(body) = after.strip_prefix('(') {
            match body.find(')') {
                Some(end) => {
                    let name = &body[..end];
                    match vars.iter().rev().find(|(k, _)| k == name) {
                        Some((_, v)) => out.push_str(v),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &body[end + 1..];
                }
                None => {
                    out.push('$');
                    rest = after;
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Everything a container's spec needs from outside the pod.
pub struct Context<'a> {
    pub pod_ip: &'a str,
    pub host_ip: &'a str,
    pub service_env: &'a [(String, String)],
    pub node_allocatable: &'a BTreeMap<String, String>,
    /// Each of the pod's volumes by its name: where it is on the node.
    pub volumes: &'a BTreeMap<String, super::volumes::Mounted>,
}

/// The container's environment, in upstream's order: service links, envFrom, env.
pub async fn environment(
    pod: &Pod,
    container: &Container,
    lookup: &mut Lookup<'_>,
    ctx: &Context<'_>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let mut env: Vec<(String, String)> = Vec::new();
    if pod.spec.as_ref().and_then(|s| s.enable_service_links).unwrap_or(true) {
        env.extend(ctx.service_env.iter().cloned());
    }
    for source in container.env_from.iter().flatten() {
        let prefix = source.prefix.clone().unwrap_or_default();
        if let Some(r) = &source.config_map_ref {
            match lookup.config_map(&r.name).await {
                Some(cm) => {
                    for (k, v) in cm.data.iter().flatten() {
                        env.push((format!("{prefix}{k}"), v.clone()));
                    }
                }
                None if r.optional == Some(true) => {}
                None => return Err(ConfigError(format!("configmap \"{}\" not found", r.name))),
            }
        }
        if let Some(r) = &source.secret_ref {
            match lookup.secret(&r.name).await {
                Some(secret) => {
                    let keys: Vec<String> =
                        secret.data.iter().flatten().map(|(k, _)| k.clone()).collect();
                    for k in keys {
                        if let Some(v) = secret_value(secret, &k) {
                            env.push((format!("{prefix}{k}"), v));
                        }
                    }
                }
                None if r.optional == Some(true) => {}
                None => return Err(ConfigError(format!("secret \"{}\" not found", r.name))),
            }
        }
    }
    for var in container.env.iter().flatten() {
        let value = match &var.value_from {
            None => expand(var.value.as_deref().unwrap_or(""), &env),
            Some(from) => {
                if let Some(f) = &from.field_ref {
                    field_value(pod, &f.field_path, ctx.pod_ip, ctx.host_ip).unwrap_or_default()
                } else if let Some(r) = &from.resource_field_ref {
                    let target = match r.container_name.as_deref().filter(|c| !c.is_empty()) {
                        Some(name) => pod
                            .spec
                            .iter()
                            .flat_map(|s| s.containers.iter())
                            .find(|c| c.name == name)
                            .unwrap_or(container),
                        None => container,
                    };
                    resource_value(
                        target,
                        &r.resource,
                        r.divisor.as_ref().map(|d| d.0.as_str()),
                        ctx.node_allocatable,
                    )
                    .unwrap_or_default()
                } else if let Some(r) = &from.config_map_key_ref {
                    let optional = r.optional == Some(true);
                    match lookup.config_map(&r.name).await {
                        Some(cm) => match cm.data.as_ref().and_then(|d| d.get(&r.key)) {
                            Some(v) => v.clone(),
                            None if optional => continue,
                            None => {
                                return Err(ConfigError(format!(
                                    "couldn't find key {} in ConfigMap {}/{}",
                                    r.key, lookup.namespace, r.name
                                )))
                            }
                        },
                        None if optional => continue,
                        None => {
                            return Err(ConfigError(format!("configmap \"{}\" not found", r.name)))
                        }
                    }
                } else if let Some(r) = &from.secret_key_ref {
                    let optional = r.optional == Some(true);
                    match lookup.secret(&r.name).await {
                        Some(secret) => match secret_value(secret, &r.key) {
                            Some(v) => v,
                            None if optional => continue,
                            None => {
                                return Err(ConfigError(format!(
                                    "couldn't find key {} in Secret {}/{}",
                                    r.key, lookup.namespace, r.name
                                )))
                            }
                        },
                        None if optional => continue,
                        None => {
                            return Err(ConfigError(format!("secret \"{}\" not found", r.name)))
                        }
                    }
                } else {
                    String::new()
                }
            }
        };
        env.push((var.name.clone(), value));
    }
    // Later definitions win, as in the process environment Docker builds.
    Ok(env)
}

/// The runtime's view of one container of the pod.
pub async fn container_spec(
    pod: &Pod,
    container: &Container,
    init: bool,
    attempt: u32,
    lookup: &mut Lookup<'_>,
    ctx: &Context<'_>,
) -> Result<ContainerSpec, ConfigError> {
    let env = environment(pod, container, lookup, ctx).await?;
    let expand_all = |list: &Option<Vec<String>>| {
        list.as_ref().map(|l| l.iter().map(|s| expand(s, &env)).collect::<Vec<_>>())
    };
    let pod_security = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let security = container.security_context.as_ref();
    let run_as_user =
        security.and_then(|s| s.run_as_user).or_else(|| pod_security.and_then(|s| s.run_as_user));
    let run_as_group =
        security.and_then(|s| s.run_as_group).or_else(|| pod_security.and_then(|s| s.run_as_group));
    let user = match (run_as_user, run_as_group) {
        (Some(u), Some(g)) => Some(format!("{u}:{g}")),
        (Some(u), None) => Some(u.to_string()),
        (None, Some(g)) => Some(format!("0:{g}")),
        (None, None) => None,
    };
    let capabilities = security.and_then(|s| s.capabilities.as_ref());
    let resources = container.resources.as_ref();
    let quantity =
        |map: Option<
            &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
        >,
         name: &str| { map.and_then(|m| m.get(name)).map(|q| q.0.clone()) };
    let cpu_request = quantity(resources.and_then(|r| r.requests.as_ref()), "cpu")
        .or_else(|| quantity(resources.and_then(|r| r.limits.as_ref()), "cpu"))
        .and_then(|q| cpu_millis(&q));
    let cpu_limit =
        quantity(resources.and_then(|r| r.limits.as_ref()), "cpu").and_then(|q| cpu_millis(&q));
    let memory_limit = quantity(resources.and_then(|r| r.limits.as_ref()), "memory")
        .and_then(|q| memory_bytes(&q));
    let mut binds = Vec::new();
    for mount in container.volume_mounts.iter().flatten() {
        let Some(volume) = ctx.volumes.get(&mount.name) else {
            return Err(ConfigError(format!(
                "cannot find volume \"{}\" to mount into container \"{}\"",
                mount.name, container.name
            )));
        };
        let read_only = if mount.read_only == Some(true) || volume.read_only { ":ro" } else { "" };
        let sub_path = match mount.sub_path_expr.as_deref().filter(|p| !p.is_empty()) {
            Some(expr) => Some(expand(expr, &env)),
            None => mount.sub_path.clone().filter(|p| !p.is_empty()),
        };
        let path = match sub_path {
            Some(sub) => sub_path_within(&volume.path, &sub)?,
            None => volume.path.clone(),
        };
        binds.push(format!("{}:{}{read_only}", path.display(), mount.mount_path));
    }
    let pod_groups = pod_security
        .map(|s| s.supplemental_groups.iter().flatten().copied().chain(s.fs_group))
        .into_iter()
        .flatten();
    let groups = pod_groups.map(|g| g.to_string()).collect();
    Ok(ContainerSpec {
        pod: Some(pod_ref(pod)),
        name: container.name.clone(),
        attempt,
        init,
        image: container.image.clone().unwrap_or_default(),
        entrypoint: expand_all(&container.command),
        cmd: expand_all(&container.args),
        env,
        working_dir: container.working_dir.clone().filter(|w| !w.is_empty()),
        tty: container.tty.unwrap_or(false),
        stdin: container.stdin.unwrap_or(false),
        stdin_once: container.stdin_once.unwrap_or(false),
        binds,
        tmpfs: Vec::new(),
        user,
        groups,
        privileged: security.and_then(|s| s.privileged).unwrap_or(false),
        no_new_privileges: security.and_then(|s| s.allow_privilege_escalation) == Some(false),
        read_only_rootfs: security.and_then(|s| s.read_only_root_filesystem).unwrap_or(false),
        cap_add: capabilities.and_then(|c| c.add.clone()).unwrap_or_default(),
        cap_drop: capabilities.and_then(|c| c.drop.clone()).unwrap_or_default(),
        // 1024 shares per cpu, at least 2 (upstream's MilliCPUToShares).
        cpu_shares: Some(cpu_request.map(|m| (m * 1024 / 1000).max(2)).unwrap_or(2)),
        // The quota per 100 ms period, at least 1 ms (upstream's MilliCPUToQuota).
        cpu_quota: cpu_limit.map(|m| (m * 100_000 / 1000).max(1000)),
        memory_limit,
        termination_message_path: Some(
            container
                .termination_message_path
                .clone()
                .unwrap_or_else(|| "/dev/termination-log".into()),
        ),
        pid_target: None,
    })
}

/// A mount's `subPath` (or expanded `subPathExpr`) inside its volume, made as a directory
/// when missing. Like upstream's kubelet, it must stay inside the volume once links are
/// followed: a link a container left in an emptyDir cannot lend another container the
/// node's files.
fn sub_path_within(volume: &Path, sub: &str) -> Result<PathBuf, ConfigError> {
    let outside = || ConfigError(format!("subpath {sub:?} is not within volume path"));
    if Path::new(sub).is_absolute() || Path::new(sub).components().any(|c| c.as_os_str() == "..") {
        return Err(outside());
    }
    let full = volume.join(sub);
    if std::fs::symlink_metadata(&full).is_err() {
        let _ = std::fs::create_dir_all(&full);
    }
    let resolved = full.canonicalize().map_err(|e| {
        ConfigError(format!("cannot use subpath {sub:?} of volume {}: {e}", volume.display()))
    })?;
    let root = volume
        .canonicalize()
        .map_err(|e| ConfigError(format!("cannot use volume {}: {e}", volume.display())))?;
    if !resolved.starts_with(&root) {
        return Err(outside());
    }
    Ok(resolved)
}

/// An ephemeral container as the container it runs as: the same fields but its target
/// (which [`crate::pods::ephemeral`] resolves to a running container).
pub fn ephemeral_as_container(ephemeral: &EphemeralContainer) -> Container {
    let mut value = serde_json::to_value(ephemeral).unwrap_or_default();
    if let Some(fields) = value.as_object_mut() {
        fields.remove("targetContainerName");
    }
    serde_json::from_value(value).unwrap_or_else(|_| Container {
        name: ephemeral.name.clone(),
        image: ephemeral.image.clone(),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expands_references_as_upstream() {
        let vars = vec![("A".to_string(), "x".to_string()), ("B".to_string(), "y".to_string())];
        assert_eq!(expand("$(A)-$(B)", &vars), "x-y");
        assert_eq!(expand("$$(A)", &vars), "$(A)");
        assert_eq!(expand("$(MISSING)", &vars), "$(MISSING)");
        assert_eq!(expand("cost $5", &vars), "cost $5");
        assert_eq!(expand("$(A", &vars), "$(A");
    }

    #[test]
    fn downward_api_fields() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": []}
        }))
        .unwrap();
        assert_eq!(field_value(&pod, "metadata.name", "", "").as_deref(), Some("p"));
        assert_eq!(field_value(&pod, "metadata.labels['app']", "", "").as_deref(), Some("web"));
        assert_eq!(field_value(&pod, "metadata.labels", "", "").as_deref(), Some("app=\"web\""));
        assert_eq!(
            field_value(&pod, "status.podIP", "10.42.0.5", "").as_deref(),
            Some("10.42.0.5")
        );
        assert_eq!(field_value(&pod, "spec.nodeName", "", "").as_deref(), Some("n1"));
    }

    #[test]
    fn resource_fields_round_up_in_divisor_units() {
        let c: Container = serde_json::from_value(json!({
            "name": "a",
            "resources": {"limits": {"cpu": "250m", "memory": "64Mi"}}
        }))
        .unwrap();
        let node = BTreeMap::from([("cpu".to_string(), "2".to_string())]);
        assert_eq!(resource_value(&c, "limits.cpu", None, &node).as_deref(), Some("1"));
        assert_eq!(resource_value(&c, "limits.cpu", Some("1m"), &node).as_deref(), Some("250"));
        assert_eq!(resource_value(&c, "limits.memory", Some("1Mi"), &node).as_deref(), Some("64"));
        // No request: zero, not the node's allocatable (that stands in for limits only).
        assert_eq!(resource_value(&c, "requests.cpu", Some("1m"), &node).as_deref(), Some("0"));
        let bare: Container = serde_json::from_value(json!({"name": "b"})).unwrap();
        assert_eq!(resource_value(&bare, "limits.cpu", None, &node).as_deref(), Some("2"));
        assert_eq!(resource_value(&bare, "requests.memory", None, &node).as_deref(), Some("0"));
    }
}
