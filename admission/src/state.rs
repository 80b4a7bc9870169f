//! How plugins read the cluster: the [`ClusterState`] reader. Plugins never touch the store;
//! the API server backs the reader with its watch caches, so a plugin's read costs a lookup
//! in memory. [`Snapshot`] is a reader over a fixed set of objects (tests, tools).

use std::collections::BTreeMap;
use std::sync::Arc;

use rkube_apis::selectors::LabelSelector;
use serde_json::Value;

use crate::error::AdmissionError;

/// A resource by group and plural name (`""` is the core group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupResource<'a> {
    pub group: &'a str,
    pub resource: &'a str,
}

impl<'a> GroupResource<'a> {
    pub const fn new(group: &'a str, resource: &'a str) -> Self {
        GroupResource { group, resource }
    }
}

/// One object the reader holds, in its resource's storage version.
pub trait Object: Send + Sync {
    fn name(&self) -> &str;
    /// `""` for cluster-scoped objects.
    fn namespace(&self) -> &str;
    fn labels(&self) -> &BTreeMap<String, String>;
    /// The value at a dotted path of string fields (`status.phase`, `spec.nodeName`); the
    /// server answers the kind's field-selector fields without decoding the object.
    fn field(&self, path: &str) -> Option<String>;
    /// `metadata.resourceVersion`: it changes whenever the object does, so plugins that
    /// keep what they read of an object across requests know when to read it again.
    fn resource_version(&self) -> String;
    /// The whole object (decoded on each call: prefer [`Object::field`] where it does).
    fn value(&self) -> Value;
}

/// How recent a read must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// What the reader holds now: it may lag the store by a moment. A miss is confirmed
    /// against the store's current revision before it is reported, so an object created
    /// before the request is always found.
    Cached,
    /// At least as recent as the store when the read started (the reader waits for its
    /// cache to catch up): for objects the plugin has reason to think just changed.
    Latest,
}

/// What plugins read the cluster through.
#[async_trait::async_trait]
pub trait ClusterState: Send + Sync {
    /// One object by namespace (`None` for cluster-scoped resources) and name.
    async fn get(
        &self,
        resource: GroupResource<'_>,
        namespace: Option<&str>,
        name: &str,
        freshness: Freshness,
    ) -> Result<Option<Arc<dyn Object>>, AdmissionError>;

    /// The objects in `namespace` (every namespace with `None`) whose labels `selector`
    /// matches, ordered by namespace and name.
    async fn list(
        &self,
        resource: GroupResource<'_>,
        namespace: Option<&str>,
        selector: &LabelSelector,
        freshness: Freshness,
    ) -> Result<Vec<Arc<dyn Object>>, AdmissionError>;

    /// Replaces the status of `object` (of `resource`), on the condition that its
    /// `metadata.resourceVersion` is still the stored one: the one write plugins make
    /// (ResourceQuota charging what a request uses). `Ok(None)` when the object changed or
    /// went since it was read: read it again and decide again. Readers that cannot write
    /// (snapshots) refuse.
    async fn update_status(
        &self,
        resource: GroupResource<'_>,
        object: &Value,
    ) -> Result<Option<Arc<dyn Object>>, AdmissionError> {
        let _ = object;
        Err(AdmissionError::Internal(format!(
            "this cluster state cannot write {}",
            resource.resource
        )))
    }

    /// The objects in `namespace` (every namespace with `None`) whose `field` (one of the
    /// kind's field-selector fields, e.g. `spec.nodeName`) is `value`.
    async fn list_by_field(
        &self,
        resource: GroupResource<'_>,
        namespace: Option<&str>,
        field: &str,
        value: &str,
        freshness: Freshness,
    ) -> Result<Vec<Arc<dyn Object>>, AdmissionError>;
}

/// A string at a dotted path of a JSON object.
pub fn field_of(object: &Value, path: &str) -> Option<String> {
    path.split('.').try_fold(object, |v, key| v.get(key))?.as_str().map(String::from)
}

/// An object held as JSON.
#[derive(Debug)]
pub struct JsonObject {
    value: Value,
    name: String,
    namespace: String,
    labels: BTreeMap<String, String>,
}

impl JsonObject {
    pub fn new(value: Value) -> JsonObject {
        let meta = &value["metadata"];
        let text = |v: &Value| v.as_str().unwrap_or("").to_string();
        let labels = meta["labels"]
            .as_object()
            .map(|l| l.iter().map(|(k, v)| (k.clone(), text(v))).collect())
            .unwrap_or_default();
        JsonObject { name: text(&meta["name"]), namespace: text(&meta["namespace"]), labels, value }
    }
}

impl Object for JsonObject {
    fn name(&self) -> &str {
        &self.name
    }
    fn namespace(&self) -> &str {
        &self.namespace
    }
    fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }
    fn field(&self, path: &str) -> Option<String> {
        field_of(&self.value, path)
    }
    fn resource_version(&self) -> String {
        field_of(&self.value, "metadata.resourceVersion").unwrap_or_default()
    }
    fn value(&self) -> Value {
        self.value.clone()
    }
}

/// A reader over a fixed set of objects, by resource; always as fresh as it will get.
#[derive(Default)]
pub struct Snapshot {
    objects: Vec<(String, String, Arc<JsonObject>)>,
}

impl Snapshot {
    /// Adds an object of `resource` (group and plural).
    pub fn with(mut self, group: &str, resource: &str, object: Value) -> Snapshot {
        self.objects.push((
            group.to_string(),
            resource.to_string(),
            Arc::new(JsonObject::new(object)),
        ));
        self.objects.sort_by(|a, b| {
            (&a.0, &a.1, a.2.namespace(), a.2.name()).cmp(&(
                &b.0,
                &b.1,
                b.2.namespace(),
                b.2.name(),
            ))
        });
        self
    }

    fn of<'a>(
        &'a self,
        resource: GroupResource<'a>,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Arc<JsonObject>> + 'a {
        self.objects
            .iter()
            .filter(move |(g, r, o)| {
                *g == resource.group
                    && *r == resource.resource
                    && namespace.is_none_or(|ns| o.namespace() == ns)
            })
            .map(|(_, _, o)| o)
    }
}

fn shared(o: &Arc<JsonObject>) -> Arc<dyn Object> {
    o.clone()
}

#[async_trait::async_trait]
impl ClusterState for Snapshot {
    async fn get(
        &self,
        resource: GroupResource<'_>,
        namespace: Option<&str>,
        name: &str,
        _: Freshness,
    ) -> Result<Option<Arc<dyn Object>>, AdmissionError> {
        let namespace = Some(namespace.unwrap_or(""));
        Ok(self.of(resource, namespace).find(|o| o.name() == name).map(shared))
    }

    async fn list(
        &self,
        resource: GroupResource<'_>,
        namespace: Option<&str>,
        selector: &LabelSelector,
        _: Freshness,
    ) -> Result<Vec<Arc<dyn Object>>, AdmissionError> {
        Ok(self
            .of(resource, namespace)
            .filter(|o| selector.matches(o.labels()))
            .map(shared)
            .collect())
    }

    async fn list_by_field(
        &self,
        resource: GroupResource<'_>,
        namespace: Option<&str>,
        field: &str,
        value: &str,
        _: Freshness,
    ) -> Result<Vec<Arc<dyn Object>>, AdmissionError> {
        Ok(self
            .of(resource, namespace)
            .filter(|o| o.field(field).as_deref() == Some(value))
            .map(shared)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_snapshot_answers_by_name_label_and_field() {
        let pods = GroupResource::new("", "pods");
        let pod = |ns: &str, name: &str, app: &str, node: &str| {
            json!({"metadata": {"namespace": ns, "name": name, "labels": {"app": app}},
                   "spec": {"nodeName": node}})
        };
        let state = Snapshot::default()
            .with("", "pods", pod("b", "p2", "web", "n1"))
            .with("", "pods", pod("a", "p1", "web", "n2"))
            .with("", "pods", pod("a", "p3", "db", "n1"))
            .with("", "configmaps", json!({"metadata": {"namespace": "a", "name": "p1"}}));
        let names = |objects: Vec<Arc<dyn Object>>| {
            objects.iter().map(|o| format!("{}/{}", o.namespace(), o.name())).collect::<Vec<_>>()
        };
        let got = state.get(pods, Some("a"), "p1", Freshness::Cached).await.unwrap().unwrap();
        assert_eq!(got.field("spec.nodeName").as_deref(), Some("n2"));
        assert!(state.get(pods, Some("b"), "p1", Freshness::Cached).await.unwrap().is_none());
        let web = LabelSelector::parse("app=web").unwrap();
        assert_eq!(
            names(state.list(pods, None, &web, Freshness::Cached).await.unwrap()),
            ["a/p1", "b/p2"]
        );
        assert_eq!(
            names(state.list(pods, Some("a"), &web, Freshness::Cached).await.unwrap()),
            ["a/p1"]
        );
        let on_n1 = state
            .list_by_field(pods, None, "spec.nodeName", "n1", Freshness::Cached)
            .await
            .unwrap();
        assert_eq!(names(on_n1), ["a/p3", "b/p2"]);
    }
}
