use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

use super::*;
use crate::attributes::*;
use crate::state::{JsonObject, Snapshot};

fn limit_range(namespace: &str, name: &str, limits: Value) -> Value {
    json!({"metadata": {"namespace": namespace, "name": name, "resourceVersion": "5"},
           "spec": {"limits": limits}})
}

fn attributes<'a>(
    operation: Operation,
    (resource, kind): (&'a str, &'a str),
    subresource: &'a str,
    object: &'a mut Value,
    old: Option<&'a Value>,
) -> Attributes<'a> {
    Attributes {
        operation,
        user: UserInfo::default(),
        resource: GroupVersionResource { group: "", version: "v1", resource },
        subresource,
        kind: GroupVersionKind { group: "", version: "v1", kind },
        namespace: "ns",
        name: "",
        object: Some(object),
        old_object: old,
        dry_run: false,
        options: OperationOptions::None,
        warnings: Default::default(),
        audit_annotations: Default::default(),
    }
}

const PODS: (&str, &str) = ("pods", "Pod");
const CLAIMS: (&str, &str) = ("persistentvolumeclaims", "PersistentVolumeClaim");

/// Both halves, as the chain runs them.
async fn run(
    plugin: &LimitRanger,
    state: &dyn ClusterState,
    operation: Operation,
    what: (&str, &str),
    subresource: &str,
    object: &mut Value,
    old: Option<&Value>,
) -> Result<(), AdmissionError> {
    let mut a = attributes(operation, what, subresource, object, old);
    plugin.admit(&mut a, state).await?;
    plugin.validate(&a, state).await
}

fn pod(containers: Value) -> Value {
    json!({"metadata": {"name": "web"}, "spec": {"containers": containers}})
}

fn cluster() -> Snapshot {
    Snapshot::default()
        .with(
            "",
            "limitranges",
            limit_range(
                "ns",
                "defaults",
                json!([{"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
                        "defaultRequest": {"cpu": "100m", "memory": "128Mi"}, "max": {"cpu": "1"}}]),
            ),
        )
        .with(
            "",
            "limitranges",
            limit_range(
                "ns",
                "storage",
                json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "2Gi"}}]),
            ),
        )
        .with(
            "",
            "limitranges",
            limit_range("other", "tight", json!([{"type": "Container", "max": {"cpu": "10m"}}])),
        )
}

#[tokio::test]
async fn a_new_pod_gets_the_defaults_and_is_held_to_the_maximum() {
    let (plugin, state) = (LimitRanger::default(), cluster());
    let mut p = pod(json!([{"name": "app", "image": "busybox"}]));
    run(&plugin, &state, Operation::Create, PODS, "", &mut p, None).await.unwrap();
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}})
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"
    );

    let mut big = pod(json!([
        {"name": "app", "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "2"}}},
        {"name": "side", "resources": {"limits": {"cpu": "3"}}},
    ]));
    let refused = run(&plugin, &state, Operation::Create, PODS, "", &mut big, None).await;
    assert_eq!(
        refused.unwrap_err().to_string(),
        "pods \"web\" is forbidden: [maximum cpu usage per Container is 1, but limit is 2, maximum cpu usage per Container is 1, but limit is 3]"
    );
}

#[tokio::test]
async fn pod_updates_and_subresources_are_left_alone() {
    let (plugin, state) = (LimitRanger::default(), cluster());
    let big = pod(json!([{"name": "app", "resources": {"limits": {"cpu": "2"}}}]));
    let old = big.clone();
    let mut updated = big.clone();
    run(&plugin, &state, Operation::Update, PODS, "", &mut updated, Some(&old)).await.unwrap();
    assert_eq!(updated, big);
    let mut ephemeral = big.clone();
    ephemeral["spec"]["ephemeralContainers"] = json!([{"name": "debug"}]);
    let before = ephemeral.clone();
    run(
        &plugin,
        &state,
        Operation::Update,
        PODS,
        "ephemeralcontainers",
        &mut ephemeral,
        Some(&old),
    )
    .await
    .unwrap();
    assert_eq!(ephemeral, before);
}

#[tokio::test]
async fn claims_are_checked_on_create_and_update_unless_being_deleted() {
    let (plugin, state) = (LimitRanger::default(), cluster());
    let claim = |size: &str| json!({"metadata": {"name": "data"}, "spec": {"resources": {"requests": {"storage": size}}}});
    run(&plugin, &state, Operation::Create, CLAIMS, "", &mut claim("1Gi"), None).await.unwrap();
    let refused =
        run(&plugin, &state, Operation::Create, CLAIMS, "", &mut claim("5Gi"), None).await;
    assert_eq!(
        refused.unwrap_err().to_string(),
        "persistentvolumeclaims \"data\" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"
    );
    let old = claim("1Gi");
    let refused =
        run(&plugin, &state, Operation::Update, CLAIMS, "", &mut claim("3Gi"), Some(&old)).await;
    assert!(refused.unwrap_err().to_string().contains("but request is 3Gi"));
    let mut deleting = claim("1Gi");
    deleting["metadata"]["deletionTimestamp"] = json!("2025-01-01T00:00:00Z");
    run(&plugin, &state, Operation::Update, CLAIMS, "", &mut claim("3Gi"), Some(&deleting))
        .await
        .unwrap();
    // The claim's status is a subresource: not checked.
    run(&plugin, &state, Operation::Update, CLAIMS, "status", &mut claim("3Gi"), Some(&old))
        .await
        .unwrap();
}

#[tokio::test]
async fn each_limit_range_applies_and_the_first_refusal_counts() {
    let state = Snapshot::default()
        .with(
            "",
            "limitranges",
            limit_range(
                "ns",
                "a",
                json!([{"type": "Container", "defaultRequest": {"cpu": "100m"}}]),
            ),
        )
        .with(
            "",
            "limitranges",
            limit_range(
                "ns",
                "b",
                json!([{"type": "Container", "defaultRequest": {"cpu": "300m", "memory": "64Mi"}},
                       {"type": "Pod", "min": {"cpu": "200m"}}]),
            ),
        );
    let plugin = LimitRanger::default();
    let mut p = pod(json!([{"name": "app"}]));
    let refused = run(&plugin, &state, Operation::Create, PODS, "", &mut p, None).await;
    // "a" set the cpu request first; "b" only the memory one, and its annotation is the last.
    assert_eq!(
        p["spec"]["containers"][0]["resources"]["requests"],
        json!({"cpu": "100m", "memory": "64Mi"})
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: memory request for container app"
    );
    assert_eq!(
        refused.unwrap_err().to_string(),
        "pods \"web\" is forbidden: minimum cpu usage per Pod is 200m, but request is 100m"
    );
}

/// A reader whose cache has not seen the namespace's LimitRange yet, counting its
/// latest-state reads.
struct Lagging {
    latest_reads: AtomicUsize,
}

#[async_trait::async_trait]
impl ClusterState for Lagging {
    async fn get(
        &self,
        _: GroupResource<'_>,
        _: Option<&str>,
        _: &str,
        _: Freshness,
    ) -> Result<Option<Arc<dyn Object>>, AdmissionError> {
        Ok(None)
    }

    async fn list(
        &self,
        _: GroupResource<'_>,
        _: Option<&str>,
        _: &LabelSelector,
        freshness: Freshness,
    ) -> Result<Vec<Arc<dyn Object>>, AdmissionError> {
        if freshness == Freshness::Cached {
            return Ok(Vec::new());
        }
        self.latest_reads.fetch_add(1, Ordering::SeqCst);
        let lr = limit_range(
            "ns",
            "late",
            json!([{"type": "Container", "defaultRequest": {"cpu": "50m"}}]),
        );
        Ok(vec![Arc::new(JsonObject::new(lr))])
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
async fn an_empty_cache_is_confirmed_by_a_latest_read_kept_for_a_while() {
    let (plugin, state) = (LimitRanger::default(), Lagging { latest_reads: AtomicUsize::new(0) });
    for _ in 0..3 {
        let mut p = pod(json!([{"name": "app"}]));
        run(&plugin, &state, Operation::Create, PODS, "", &mut p, None).await.unwrap();
        assert_eq!(p["spec"]["containers"][0]["resources"]["requests"], json!({"cpu": "50m"}));
    }
    assert_eq!(state.latest_reads.load(Ordering::SeqCst), 1);
}
