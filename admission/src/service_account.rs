//! `ServiceAccount`: every pod runs as a service account of its namespace, and gets that
//! account's API credentials unless it or the account says not to.
//!
//! On a pod's create, as upstream:
//! - `spec.serviceAccountName` defaults to `default`; an account that does not exist refuses
//!   the pod (`error looking up service account <ns>/<name>: serviceaccount "<name>" not found`).
//! - Unless `automountServiceAccountToken` is false on the pod (or, the pod silent, on the
//!   account), a projected volume `kube-api-access-<5 random characters>` is added — a bound
//!   token (`token`, 3607 s), the cluster CA (`ca.crt` of the ConfigMap `kube-root-ca.crt`) and
//!   the namespace (downward API) with mode 0644 — and mounted read-only at
//!   `/var/run/secrets/kubernetes.io/serviceaccount` in every init container and container
//!   that has nothing mounted there yet. Ephemeral containers do not exist at create and are
//!   never given the mount (upstream's).
//! - A pod without `imagePullSecrets` gets the account's.
//! - Mirror pods (annotation `kubernetes.io/config.mirror`, the kubelet's view of a static
//!   pod) are left as they are, and refused if they name a service account, reference a
//!   Secret, or project a service-account token.
//! - An account annotated `kubernetes.io/enforce-mountable-secrets: "true"` limits the pod to
//!   the Secrets it lists (volumes, environment) and the pull secrets it lists.
//!
//! On an update of `pods/ephemeralcontainers`, the pod's account must still exist (and, when
//! it enforces mountable secrets, the ephemeral containers' environment may name only its
//! Secrets). Other updates are not checked: a pod's account cannot change.
//!
//! The account is looked up in the reader; a miss is confirmed against the store (see
//! [`Freshness::Cached`]). For `default` only, a miss is retried for a short while
//! ([`ServiceAccount::wait_for_default`], 2 s) before the pod is refused, reading the
//! latest state: the service-account controller creates `default` moments after its
//! namespace, and a pod created right after the namespace must not lose that race. Upstream
//! does the same with ten direct reads 100-200 ms apart; rkube polls every 50 ms up to the
//! deadline instead, so a pod waits no longer than it must.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::pod_refs;
use crate::state::{ClusterState, Freshness, GroupResource, Object};
use crate::{MutatingPlugin, ValidatingPlugin};

pub const NAME: &str = "ServiceAccount";

/// The account a pod runs as when it names none.
pub const DEFAULT_ACCOUNT: &str = "default";
/// The annotation that marks a mirror pod.
pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// Where the credentials are mounted in every container.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the credentials volume's name.
pub const VOLUME_PREFIX: &str = "kube-api-access-";
/// The token's lifetime: upstream's one hour and seven seconds, which the token issuer
/// recognises (and extends for old clients) as the admission plugin's.
pub const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// The ConfigMap each namespace has with the cluster's CA (`ca.crt`).
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// An account annotated so limits the Secrets its pods may use to those it lists.
pub const ENFORCE_MOUNTABLE_SECRETS: &str = "kubernetes.io/enforce-mountable-secrets";

const SERVICE_ACCOUNTS: GroupResource<'static> = GroupResource::new("", "serviceaccounts");
/// How often a missing `default` account is looked for again.
const POLL: Duration = Duration::from_millis(50);

/// The plugin.
#[derive(Clone, Copy, Debug)]
pub struct ServiceAccount {
    /// How long a pod naming the missing `default` account waits for it to appear.
    pub wait_for_default: Duration,
}

impl Default for ServiceAccount {
    fn default() -> Self {
        ServiceAccount { wait_for_default: Duration::from_secs(2) }
    }
}

/// The pod's requests this plugin looks at: pods themselves and their ephemeral containers.
fn applies(a: &Attributes<'_>) -> bool {
    a.is("", "pods")
        && matches!(a.subresource, "" | "ephemeralcontainers")
        && a.object().is_some_and(Value::is_object)
}

pub fn is_mirror_pod(pod: &Value) -> bool {
    !pod["metadata"]["annotations"][MIRROR_ANNOTATION].is_null()
}

/// The account the pod names: `serviceAccountName`, else the deprecated `serviceAccount`
/// that v1 still accepts in its place; `""` for none.
fn account_of(pod: &Value) -> &str {
    [&pod["spec"]["serviceAccountName"], &pod["spec"]["serviceAccount"]]
        .into_iter()
        .filter_map(Value::as_str)
        .find(|s| !s.is_empty())
        .unwrap_or("")
}

impl ServiceAccount {
    /// The account, or the refusal upstream answers when it cannot be found.
    async fn account(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
        name: &str,
    ) -> Result<Arc<dyn Object>, AdmissionError> {
        let refuse = |why: String| {
            AdmissionError::forbidden(
                a,
                format!("error looking up service account {}/{name}: {why}", a.namespace),
            )
        };
        let get = |freshness| state.get(SERVICE_ACCOUNTS, Some(a.namespace), name, freshness);
        let mut found = get(Freshness::Cached).await.map_err(|e| refuse(e.to_string()))?;
        if found.is_none() && name == DEFAULT_ACCOUNT {
            let deadline = tokio::time::Instant::now() + self.wait_for_default;
            while found.is_none() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(POLL.min(deadline - tokio::time::Instant::now())).await;
                found = get(Freshness::Latest).await.map_err(|e| refuse(e.to_string()))?;
            }
        }
        found.ok_or_else(|| refuse(format!("serviceaccount {name:?} not found")))
    }

    /// Upstream's validation of a create (also run at the end of the mutation, as upstream).
    async fn check_create(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        let pod = a.object().expect("applies() saw an object");
        if is_mirror_pod(pod) {
            return check_mirror_pod(a, pod);
        }
        let name = account_of(pod);
        if name.is_empty() {
            return Err(no_account(a, pod));
        }
        let account = self.account(a, state, name).await?.value();
        if enforces_mountable_secrets(&account) {
            limit_secret_references(&account, pod)
                .map_err(|why| AdmissionError::forbidden(a, why))?;
        }
        Ok(())
    }
}

fn no_account(a: &Attributes<'_>, pod: &Value) -> AdmissionError {
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    AdmissionError::forbidden(
        a,
        format!("no service account specified for pod {}/{name}", a.namespace),
    )
}

fn check_mirror_pod(a: &Attributes<'_>, pod: &Value) -> Result<(), AdmissionError> {
    if !account_of(pod).is_empty() {
        return Err(AdmissionError::forbidden(
            a,
            "a mirror pod may not reference service accounts",
        ));
    }
    if !pod_refs::secret_names(pod).is_empty() {
        return Err(AdmissionError::forbidden(a, "a mirror pod may not reference secrets"));
    }
    if pod_refs::has_projection(pod, "serviceAccountToken") {
        return Err(AdmissionError::forbidden(
            a,
            "a mirror pod may not use ServiceAccountToken volume projections",
        ));
    }
    Ok(())
}

fn enforces_mountable_secrets(account: &Value) -> bool {
    // Go's strconv.ParseBool: 1, t, T, TRUE, true, True.
    account["metadata"]["annotations"][ENFORCE_MOUNTABLE_SECRETS]
        .as_str()
        .is_some_and(|v| matches!(v, "1" | "t" | "T" | "TRUE" | "true" | "True"))
}

fn names_of(list: &Value) -> Vec<&str> {
    list.as_array().into_iter().flatten().filter_map(|r| r["name"].as_str()).collect()
}

/// The Secrets a container's environment names, each with upstream's wording of where.
fn env_secret_refs<'a>(container: &'a Value, what: &'a str) -> Vec<(String, &'a str)> {
    let name = container["name"].as_str().unwrap_or("");
    let mut refs = Vec::new();
    for env in container["env"].as_array().into_iter().flatten() {
        if let Some(secret) = env["valueFrom"]["secretKeyRef"]["name"].as_str() {
            let var = env["name"].as_str().unwrap_or("");
            refs.push((format!("{what} {name} with envVar {var}"), secret));
        }
    }
    for from in container["envFrom"].as_array().into_iter().flatten() {
        if let Some(secret) = from["secretRef"]["name"].as_str() {
            refs.push((format!("{what} {name} with envFrom"), secret));
        }
    }
    refs
}

/// Upstream's mountable-secrets check of a pod's volumes, containers and pull secrets.
fn limit_secret_references(account: &Value, pod: &Value) -> Result<(), String> {
    let sa = account["metadata"]["name"].as_str().unwrap_or("");
    let mountable = names_of(&account["secrets"]);
    for volume in pod_refs::volumes(pod) {
        if let Some(secret) = volume["secret"]["secretName"].as_str() {
            if !mountable.contains(&secret) {
                return Err(format!("volume with secret.secretName=\"{secret}\" is not allowed because service account {sa} does not reference that secret"));
            }
        }
    }
    for (list, what) in [("initContainers", "init container"), ("containers", "container")] {
        for container in pod["spec"][list].as_array().into_iter().flatten() {
            for (place, secret) in env_secret_refs(container, what) {
                if !mountable.contains(&secret) {
                    return Err(format!("{place} referencing secret.secretName=\"{secret}\" is not allowed because service account {sa} does not reference that secret"));
                }
            }
        }
    }
    let pullable = names_of(&account["imagePullSecrets"]);
    for (i, pull) in names_of(&pod["spec"]["imagePullSecrets"]).into_iter().enumerate() {
        if !pullable.contains(&pull) {
            return Err(format!("imagePullSecrets[{i}].name=\"{pull}\" is not allowed because service account {sa} does not reference that imagePullSecret"));
        }
    }
    Ok(())
}

/// Whether the pod gets the credentials: the pod's word, else the account's, else yes.
fn should_automount(account: &Value, pod: &Value) -> bool {
    pod["spec"]["automountServiceAccountToken"]
        .as_bool()
        .or_else(|| account["automountServiceAccountToken"].as_bool())
        .unwrap_or(true)
}

/// The credentials volume, exactly as upstream writes it (defaultMode set explicitly: it is
/// added after defaulting).
pub fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                {"configMap": {"name": ROOT_CA_CONFIG_MAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [
                    {"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}
                ]}}
            ],
            "defaultMode": 420
        }
    })
}

/// Mounts the credentials in every init container and container without a mount at the
/// path, adding the volume when one needs it (reusing a `kube-api-access-` volume the pod
/// already has).
fn mount_token(pod: &mut Value) {
    let spec = &mut pod["spec"];
    let existing = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .find(|n| n.starts_with(VOLUME_PREFIX))
        .map(String::from);
    let volume =
        existing.clone().unwrap_or_else(|| rkube_apis::names::generate_name(VOLUME_PREFIX));
    let mount = json!({"name": volume, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        for container in spec[list].as_array_mut().into_iter().flatten() {
            let mounted = container["volumeMounts"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|m| m["mountPath"].as_str() == Some(TOKEN_MOUNT_PATH));
            if mounted || !container.is_object() {
                continue;
            }
            if !container["volumeMounts"].is_array() {
                container["volumeMounts"] = json!([]);
            }
            container["volumeMounts"].as_array_mut().expect("a list").push(mount.clone());
            needed = true;
        }
    }
    if needed && existing.is_none() {
        if !spec["volumes"].is_array() {
            spec["volumes"] = json!([]);
        }
        spec["volumes"].as_array_mut().expect("a list").push(token_volume(&volume));
    }
}

#[async_trait::async_trait]
impl MutatingPlugin for ServiceAccount {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if !applies(a) || a.operation != Operation::Create || !a.subresource.is_empty() {
            return Ok(());
        }
        let pod = a.object().expect("applies() saw an object");
        if is_mirror_pod(pod) {
            return check_mirror_pod(a, pod);
        }
        let name = match account_of(pod) {
            "" => DEFAULT_ACCOUNT.to_string(),
            named => named.to_string(),
        };
        let account = self.account(a, state, &name).await?.value();
        let pod = a.object.as_deref_mut().expect("applies() saw an object");
        if !pod["spec"].is_object() {
            pod["spec"] = json!({});
        }
        // v1 carries the deprecated `serviceAccount` as a copy of the name.
        pod["spec"]["serviceAccountName"] = json!(name);
        pod["spec"]["serviceAccount"] = json!(name);
        if should_automount(&account, pod) {
            mount_token(pod);
        }
        let has_pull_secrets =
            pod["spec"]["imagePullSecrets"].as_array().is_some_and(|l| !l.is_empty());
        let from_account = names_of(&account["imagePullSecrets"]);
        if !has_pull_secrets && !from_account.is_empty() {
            pod["spec"]["imagePullSecrets"] =
                from_account.iter().map(|n| json!({"name": n})).collect();
        }
        self.check_create(a, state).await
    }
}

#[async_trait::async_trait]
impl ValidatingPlugin for ServiceAccount {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn validate(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if !applies(a) {
            return Ok(());
        }
        match (a.operation, a.subresource) {
            (Operation::Create, "") => self.check_create(a, state).await,
            (Operation::Update, "ephemeralcontainers") => {
                let pod = a.object().expect("applies() saw an object");
                let name = account_of(pod);
                if name.is_empty() {
                    return Err(no_account(a, pod));
                }
                let account = self.account(a, state, name).await?.value();
                if !enforces_mountable_secrets(&account) {
                    return Ok(());
                }
                let sa = account["metadata"]["name"].as_str().unwrap_or("");
                let mountable = names_of(&account["secrets"]);
                for container in pod["spec"]["ephemeralContainers"].as_array().into_iter().flatten()
                {
                    for (place, secret) in env_secret_refs(container, "ephemeral container") {
                        if !mountable.contains(&secret) {
                            return Err(AdmissionError::forbidden(a, format!("{place} referencing secret.secretName=\"{secret}\" is not allowed because service account {sa} does not reference that secret")));
                        }
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use crate::state::Snapshot;

    fn account(name: &str, extra: Value) -> Value {
        let mut sa = json!({"metadata": {"namespace": "ns", "name": name}});
        if let (Some(sa), Some(extra)) = (sa.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                if k == "annotations" {
                    sa["metadata"]["annotations"] = v.clone();
                } else {
                    sa.insert(k.clone(), v.clone());
                }
            }
        }
        sa
    }

    fn state(accounts: &[Value]) -> Snapshot {
        accounts.iter().fold(Snapshot::default(), |s, a| s.with("", "serviceaccounts", a.clone()))
    }

    fn attributes<'a>(
        operation: Operation,
        subresource: &'a str,
        pod: &'a mut Value,
    ) -> Attributes<'a> {
        Attributes {
            operation,
            user: UserInfo::default(),
            resource: GroupVersionResource { group: "", version: "v1", resource: "pods" },
            subresource,
            kind: GroupVersionKind { group: "", version: "v1", kind: "Pod" },
            namespace: "ns",
            name: "web",
            object: Some(pod),
            old_object: None,
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        }
    }

    /// The mutation, then the validation, as the chain runs them.
    async fn create(
        plugin: ServiceAccount,
        state: &Snapshot,
        pod: &mut Value,
    ) -> Result<(), AdmissionError> {
        plugin.admit(&mut attributes(Operation::Create, "", pod), state).await?;
        plugin.validate(&attributes(Operation::Create, "", pod), state).await
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"namespace": "ns", "name": "web"}, "spec": spec})
    }

    #[tokio::test]
    async fn a_pod_gets_the_default_account_and_its_credentials_as_upstream() {
        let state = state(&[account("default", json!({}))]);
        let mut p = pod(json!({
            "initContainers": [{"name": "init", "image": "i"}],
            "containers": [{"name": "app", "image": "a", "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
            "volumes": [{"name": "data", "emptyDir": {}}]
        }));
        create(ServiceAccount::default(), &state, &mut p).await.unwrap();
        let spec = &p["spec"];
        assert_eq!(
            (&spec["serviceAccountName"], &spec["serviceAccount"]),
            (&json!("default"), &json!("default"))
        );
        let volume = &spec["volumes"][1];
        let name = volume["name"].as_str().unwrap();
        let suffix = name.strip_prefix("kube-api-access-").unwrap();
        assert_eq!(suffix.len(), 5);
        assert!(suffix.bytes().all(|c| rkube_apis::names::ALPHABET.contains(&c)), "{name}");
        assert_eq!(
            volume["projected"],
            json!({"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace",
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ]})
        );
        let mount = json!({"name": name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
        assert_eq!(spec["initContainers"][0]["volumeMounts"], json!([mount]));
        assert_eq!(spec["containers"][0]["volumeMounts"][1], mount);
        assert!(spec["imagePullSecrets"].is_null());
    }

    #[tokio::test]
    async fn automount_off_a_mount_already_there_and_pull_secrets() {
        let off = account(
            "quiet",
            json!({"automountServiceAccountToken": false,
            "imagePullSecrets": [{"name": "registry"}]}),
        );
        let state = state(&[account("default", json!({})), off]);
        // The account says no; the pod does not say.
        let mut p = pod(json!({"serviceAccountName": "quiet", "containers": [{"name": "a"}]}));
        create(ServiceAccount::default(), &state, &mut p).await.unwrap();
        assert!(
            p["spec"]["volumes"].is_null() && p["spec"]["containers"][0]["volumeMounts"].is_null()
        );
        assert_eq!(p["spec"]["imagePullSecrets"], json!([{"name": "registry"}]));
        // The pod's word wins over the account's, both ways.
        let mut p =
            pod(json!({"serviceAccountName": "quiet", "automountServiceAccountToken": true,
            "imagePullSecrets": [{"name": "mine"}], "containers": [{"name": "a"}]}));
        create(ServiceAccount::default(), &state, &mut p).await.unwrap();
        assert_eq!(p["spec"]["volumes"].as_array().map(Vec::len), Some(1));
        assert_eq!(p["spec"]["imagePullSecrets"], json!([{"name": "mine"}]));
        let mut p =
            pod(json!({"automountServiceAccountToken": false, "containers": [{"name": "a"}]}));
        create(ServiceAccount::default(), &state, &mut p).await.unwrap();
        assert!(p["spec"]["volumes"].is_null());
        // A container with its own mount at the path keeps it; with every container so, no
        // volume is added.
        let own = json!({"name": "mine", "mountPath": TOKEN_MOUNT_PATH});
        let mut p = pod(json!({"containers": [{"name": "a", "volumeMounts": [own.clone()]}]}));
        create(ServiceAccount::default(), &state, &mut p).await.unwrap();
        assert_eq!(p["spec"]["containers"][0]["volumeMounts"], json!([own]));
        assert!(p["spec"]["volumes"].is_null());
        // A kube-api-access volume the pod has already is used, not duplicated.
        let mut p = pod(json!({"containers": [{"name": "a"}],
            "volumes": [token_volume("kube-api-access-abcde")]}));
        create(ServiceAccount::default(), &state, &mut p).await.unwrap();
        assert_eq!(p["spec"]["volumes"].as_array().map(Vec::len), Some(1));
        assert_eq!(p["spec"]["containers"][0]["volumeMounts"][0]["name"], "kube-api-access-abcde");
        // The deprecated field names the account too.
        let mut p = pod(json!({"serviceAccount": "quiet", "containers": [{"name": "a"}]}));
        create(ServiceAccount::default(), &state, &mut p).await.unwrap();
        assert_eq!(p["spec"]["serviceAccountName"], "quiet");
    }

    #[tokio::test]
    async fn a_missing_account_is_refused_with_upstreams_message() {
        let plugin = ServiceAccount { wait_for_default: Duration::from_millis(120) };
        let mut p = pod(json!({"serviceAccountName": "ghost", "containers": [{"name": "a"}]}));
        let e = create(plugin, &state(&[]), &mut p).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "pods \"web\" is forbidden: error looking up service account ns/ghost: serviceaccount \"ghost\" not found"
        );
        // `default` is waited for, boundedly.
        let started = std::time::Instant::now();
        let mut p = pod(json!({"containers": [{"name": "a"}]}));
        let e = create(plugin, &state(&[]), &mut p).await.unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(120), "{:?}", started.elapsed());
        assert!(e.to_string().ends_with("ns/default: serviceaccount \"default\" not found"), "{e}");
        assert!(p["spec"]["volumes"].is_null(), "nothing changes on a refusal");
    }

    /// A reader where the account appears at the third read (the controller creating it).
    struct Appearing(std::sync::atomic::AtomicUsize);

    #[async_trait::async_trait]
    impl ClusterState for Appearing {
        async fn get(
            &self,
            _: GroupResource<'_>,
            _: Option<&str>,
            name: &str,
            _: Freshness,
        ) -> Result<Option<Arc<dyn Object>>, AdmissionError> {
            let reads = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok((reads >= 2).then(|| {
                Arc::new(crate::state::JsonObject::new(account(name, json!({})))) as Arc<dyn Object>
            }))
        }
        async fn list(
            &self,
            _: GroupResource<'_>,
            _: Option<&str>,
            _: &rkube_apis::selectors::LabelSelector,
            _: Freshness,
        ) -> Result<Vec<Arc<dyn Object>>, AdmissionError> {
            Ok(Vec::new())
        }
        async fn list_by_field(
            &self,
            _: GroupResource<'_>,
            _: Option<&str>,
            _: &str,
            _: &str,
            _: Freshness,
        ) -> Result<Vec<Arc<dyn Object>>, AdmissionError> {
            Ok(Vec::new())
        }
    }

    #[tokio::test]
    async fn the_default_account_created_moments_later_is_found() {
        let state = Appearing(Default::default());
        let mut p = pod(json!({"containers": [{"name": "a"}]}));
        let mut a = attributes(Operation::Create, "", &mut p);
        ServiceAccount::default().admit(&mut a, &state).await.unwrap();
        assert_eq!(p["spec"]["serviceAccountName"], "default");
        // Any other account is read once: no wait.
        let state = Appearing(Default::default());
        let mut p = pod(json!({"serviceAccountName": "other", "containers": [{"name": "a"}]}));
        let mut a = attributes(Operation::Create, "", &mut p);
        assert!(ServiceAccount::default().admit(&mut a, &state).await.is_err());
    }

    #[tokio::test]
    async fn mirror_pods_are_left_alone_and_may_not_reference_accounts_or_secrets() {
        let state = state(&[account("default", json!({}))]);
        let mirror = |spec: Value| json!({"metadata": {"name": "web", "annotations": {MIRROR_ANNOTATION: "h"}}, "spec": spec});
        let mut p = mirror(json!({"containers": [{"name": "a"}]}));
        create(ServiceAccount::default(), &state, &mut p).await.unwrap();
        assert_eq!(p, mirror(json!({"containers": [{"name": "a"}]})));
        for (spec, why) in [
            (
                json!({"serviceAccountName": "default"}),
                "a mirror pod may not reference service accounts",
            ),
            (
                json!({"containers": [{"envFrom": [{"secretRef": {"name": "s"}}]}]}),
                "a mirror pod may not reference secrets",
            ),
            (
                json!({"volumes": [token_volume("kube-api-access-x")]}),
                "a mirror pod may not use ServiceAccountToken volume projections",
            ),
        ] {
            let e = create(ServiceAccount::default(), &state, &mut mirror(spec)).await.unwrap_err();
            assert_eq!(e.to_string(), format!("pods \"web\" is forbidden: {why}"));
        }
    }

    #[tokio::test]
    async fn an_account_may_enforce_its_mountable_secrets() {
        let strict = account(
            "strict",
            json!({"annotations": {ENFORCE_MOUNTABLE_SECRETS: "true"},
            "secrets": [{"name": "ok"}], "imagePullSecrets": [{"name": "pull"}]}),
        );
        let state = state(&[strict]);
        let with = |spec: Value| {
            let mut spec = spec;
            spec["serviceAccountName"] = json!("strict");
            pod(spec)
        };
        let mut fine = with(
            json!({"containers": [{"name": "a", "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "ok", "key": "k"}}}]}],
            "volumes": [{"name": "v", "secret": {"secretName": "ok"}}]}),
        );
        create(ServiceAccount::default(), &state, &mut fine).await.unwrap();
        assert_eq!(fine["spec"]["imagePullSecrets"], json!([{"name": "pull"}]));
        for (spec, why) in [
            (json!({"volumes": [{"name": "v", "secret": {"secretName": "no"}}]}),
             "volume with secret.secretName=\"no\" is not allowed because service account strict does not reference that secret"),
            (json!({"initContainers": [{"name": "i", "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "no"}}}]}]}),
             "init container i with envVar X referencing secret.secretName=\"no\" is not allowed because service account strict does not reference that secret"),
            (json!({"containers": [{"name": "a", "envFrom": [{"secretRef": {"name": "no"}}]}]}),
             "container a with envFrom referencing secret.secretName=\"no\" is not allowed because service account strict does not reference that secret"),
            (json!({"imagePullSecrets": [{"name": "pull"}, {"name": "no"}]}),
             "imagePullSecrets[1].name=\"no\" is not allowed because service account strict does not reference that imagePullSecret"),
        ] {
            let e = create(ServiceAccount::default(), &state, &mut with(spec)).await.unwrap_err();
            assert_eq!(e.to_string(), format!("pods \"web\" is forbidden: {why}"));
        }
    }

    #[tokio::test]
    async fn updates_check_only_ephemeral_containers() {
        let state = state(&[account("default", json!({}))]);
        let plugin = ServiceAccount::default();
        // A plain update changes nothing and checks nothing.
        let mut p = pod(json!({"serviceAccountName": "gone", "containers": [{"name": "a"}]}));
        plugin.admit(&mut attributes(Operation::Update, "", &mut p), &state).await.unwrap();
        plugin.validate(&attributes(Operation::Update, "", &mut p), &state).await.unwrap();
        assert!(p["spec"]["volumes"].is_null());
        // Ephemeral containers need the pod's account to exist.
        let e = plugin
            .validate(&attributes(Operation::Update, "ephemeralcontainers", &mut p), &state)
            .await
            .unwrap_err();
        assert!(
            e.to_string().ends_with(
                "error looking up service account ns/gone: serviceaccount \"gone\" not found"
            ),
            "{e}"
        );
        let mut mirror =
            json!({"metadata": {"name": "m", "annotations": {MIRROR_ANNOTATION: "h"}}, "spec": {}});
        let e = plugin
            .validate(&attributes(Operation::Update, "ephemeralcontainers", &mut mirror), &state)
            .await
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "pods \"web\" is forbidden: no service account specified for pod ns/m"
        );
        let mut ok =
            pod(json!({"serviceAccountName": "default", "ephemeralContainers": [{"name": "d"}]}));
        plugin
            .validate(&attributes(Operation::Update, "ephemeralcontainers", &mut ok), &state)
            .await
            .unwrap();
        // Other subresources and resources are not this plugin's.
        let mut status = pod(json!({}));
        plugin
            .validate(&attributes(Operation::Update, "status", &mut status), &state)
            .await
            .unwrap();
    }
}
