//! `NamespaceLifecycle`: objects go only into namespaces that exist and are not being
//! deleted, and the namespaces every cluster needs (`default`, `kube-system`, `kube-public`)
//! cannot be deleted.
//!
//! As upstream: deletes of other objects are always allowed (the namespace controller empties
//! a terminating namespace that way); cluster-scoped objects, namespaces themselves and local
//! access reviews are not checked; a create into a namespace the reader does not know is
//! refused with the namespace's 404 only once the reader has confirmed it against the store.
//! A namespace whose delete passed here is looked up at its latest state for a while, so a
//! create racing the deletion does not slip in through a cache that has not seen it yet.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::attributes::{Attributes, Operation};
use crate::error::{AdmissionError, Cause};
use crate::state::{ClusterState, Freshness, GroupResource};
use crate::MutatingPlugin;

pub const NAME: &str = "NamespaceLifecycle";

/// The namespaces that may not be deleted.
pub const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];

/// How long a deleted namespace is looked up at its latest state (upstream's 30 s).
const LIVE_LOOKUP_FOR: Duration = Duration::from_secs(30);
/// How many such namespaces are remembered at most (upstream's 100).
const LIVE_LOOKUP_MAX: usize = 100;

const NAMESPACES: GroupResource<'static> = GroupResource::new("", "namespaces");

#[derive(Default)]
pub struct NamespaceLifecycle {
    /// Namespaces recently deleted, and until when their reads go to the latest state.
    deleted: Mutex<HashMap<String, Instant>>,
}

impl NamespaceLifecycle {
    fn note_deleted(&self, name: &str) {
        let now = Instant::now();
        let mut deleted = self.deleted.lock().expect("lifecycle lock");
        deleted.retain(|_, until| *until > now);
        if deleted.len() >= LIVE_LOOKUP_MAX {
            if let Some(oldest) =
                deleted.iter().min_by_key(|(_, until)| **until).map(|(n, _)| n.clone())
            {
                deleted.remove(&oldest);
            }
        }
        deleted.insert(name.to_string(), now + LIVE_LOOKUP_FOR);
    }

    fn recently_deleted(&self, name: &str) -> bool {
        let deleted = self.deleted.lock().expect("lifecycle lock");
        deleted.get(name).is_some_and(|until| *until > Instant::now())
    }
}

#[async_trait::async_trait]
impl MutatingPlugin for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        let is_namespace = a.kind.group.is_empty() && a.kind.kind == "Namespace";
        if is_namespace {
            if a.operation == Operation::Delete {
                if IMMORTAL.contains(&a.name) {
                    return Err(AdmissionError::forbidden(a, "this namespace may not be deleted"));
                }
                self.note_deleted(a.name);
            }
            return Ok(());
        }
        if a.namespace.is_empty()
            || a.operation == Operation::Delete
            || a.is("authorization.k8s.io", "localsubjectaccessreviews")
        {
            return Ok(());
        }
        let found = state.get(NAMESPACES, None, a.namespace, Freshness::Cached).await?;
        let phase = |ns: &Option<std::sync::Arc<dyn crate::state::Object>>| {
            ns.as_ref().map(|ns| ns.field("status.phase").unwrap_or_default())
        };
        let mut phase = phase(&found);
        // The reader's copy may not show a deletion that was just admitted.
        if phase.as_deref() == Some("Active") && self.recently_deleted(a.namespace) {
            let latest = state.get(NAMESPACES, None, a.namespace, Freshness::Latest).await?;
            phase = latest.map(|ns| ns.field("status.phase").unwrap_or_default());
        }
        let Some(phase) = phase else {
            return Err(AdmissionError::not_found("", "namespaces", a.namespace));
        };
        if a.operation == Operation::Create && phase == "Terminating" {
            let reason = format!(
                "unable to create new content in namespace {} because it is being terminated",
                a.namespace
            );
            return Err(AdmissionError::forbidden(a, reason).with_cause(Cause {
                reason: "NamespaceTerminating",
                message: format!("namespace {} is being terminated", a.namespace),
                field: "metadata.namespace".into(),
            }));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use crate::state::Snapshot;
    use serde_json::{json, Value};

    fn namespace(name: &str, phase: &str) -> Value {
        json!({"metadata": {"name": name}, "status": {"phase": phase}})
    }

    async fn admit(
        state: &Snapshot,
        operation: Operation,
        (group, resource, kind): (&str, &str, &str),
        namespace: &str,
        name: &str,
    ) -> Result<(), AdmissionError> {
        admit_with(
            &NamespaceLifecycle::default(),
            state,
            operation,
            (group, resource, kind),
            namespace,
            name,
        )
        .await
    }

    async fn admit_with(
        plugin: &NamespaceLifecycle,
        state: &Snapshot,
        operation: Operation,
        (group, resource, kind): (&str, &str, &str),
        namespace: &str,
        name: &str,
    ) -> Result<(), AdmissionError> {
        let mut object = json!({"metadata": {"name": name}});
        let mut a = Attributes {
            operation,
            user: UserInfo::default(),
            resource: GroupVersionResource { group, version: "v1", resource },
            subresource: "",
            kind: GroupVersionKind { group, version: "v1", kind },
            namespace,
            name,
            object: (operation != Operation::Delete).then_some(&mut object),
            old_object: None,
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        };
        plugin.admit(&mut a, state).await
    }

    const CONFIGMAPS: (&str, &str, &str) = ("", "configmaps", "ConfigMap");
    const NAMESPACES: (&str, &str, &str) = ("", "namespaces", "Namespace");

    #[tokio::test]
    async fn creates_need_a_namespace_that_exists_and_is_not_terminating() {
        let state = Snapshot::default().with("", "namespaces", namespace("live", "Active")).with(
            "",
            "namespaces",
            namespace("closing", "Terminating"),
        );
        admit(&state, Operation::Create, CONFIGMAPS, "live", "c").await.unwrap();
        let refused = admit(&state, Operation::Create, CONFIGMAPS, "closing", "c").await;
        let Err(e @ AdmissionError::Forbidden { .. }) = refused else { panic!("{refused:?}") };
        assert_eq!(
            e.to_string(),
            "configmaps \"c\" is forbidden: unable to create new content in namespace closing because it is being terminated"
        );
        let AdmissionError::Forbidden { causes, .. } = e else { unreachable!() };
        assert_eq!(causes[0].reason, "NamespaceTerminating");
        assert_eq!(causes[0].field, "metadata.namespace");
        // Updates and deletes in a terminating namespace go on (its controllers finish there).
        admit(&state, Operation::Update, CONFIGMAPS, "closing", "c").await.unwrap();
        admit(&state, Operation::Delete, CONFIGMAPS, "closing", "c").await.unwrap();
        assert_eq!(
            admit(&state, Operation::Create, CONFIGMAPS, "gone", "c").await,
            Err(AdmissionError::not_found("", "namespaces", "gone"))
        );
        assert_eq!(
            admit(&state, Operation::Update, CONFIGMAPS, "gone", "c").await,
            Err(AdmissionError::not_found("", "namespaces", "gone"))
        );
        admit(&state, Operation::Delete, CONFIGMAPS, "gone", "c").await.unwrap();
        // Cluster-scoped objects, and access reviews, which must not reveal namespaces.
        admit(&state, Operation::Create, ("", "nodes", "Node"), "", "n").await.unwrap();
        let review =
            ("authorization.k8s.io", "localsubjectaccessreviews", "LocalSubjectAccessReview");
        admit(&state, Operation::Create, review, "gone", "").await.unwrap();
    }

    #[tokio::test]
    async fn the_system_namespaces_cannot_be_deleted() {
        let state = Snapshot::default();
        for name in IMMORTAL {
            let refused = admit(&state, Operation::Delete, NAMESPACES, "", name).await.unwrap_err();
            assert_eq!(
                refused.to_string(),
                format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
            );
            admit(&state, Operation::Update, NAMESPACES, "", name).await.unwrap();
        }
        admit(&state, Operation::Delete, NAMESPACES, "", "kube-node-lease").await.unwrap();
        admit(&state, Operation::Delete, NAMESPACES, "", "mine").await.unwrap();
    }

    /// A reader whose copy has not seen the namespace's deletion yet.
    struct Lagging;

    #[async_trait::async_trait]
    impl ClusterState for Lagging {
        async fn get(
            &self,
            _: GroupResource<'_>,
            _: Option<&str>,
            name: &str,
            freshness: Freshness,
        ) -> Result<Option<std::sync::Arc<dyn crate::state::Object>>, AdmissionError> {
            let phase = match freshness {
                Freshness::Cached => "Active",
                Freshness::Latest => "Terminating",
            };
            Ok(Some(std::sync::Arc::new(crate::state::JsonObject::new(namespace(name, phase)))))
        }
        async fn list(
            &self,
            _: GroupResource<'_>,
            _: Option<&str>,
            _: &rkube_apis::selectors::LabelSelector,
            _: Freshness,
        ) -> Result<Vec<std::sync::Arc<dyn crate::state::Object>>, AdmissionError> {
            Ok(Vec::new())
        }
        async fn list_by_field(
            &self,
            _: GroupResource<'_>,
            _: Option<&str>,
            _: &str,
            _: &str,
            _: Freshness,
        ) -> Result<Vec<std::sync::Arc<dyn crate::state::Object>>, AdmissionError> {
            Ok(Vec::new())
        }
    }

    #[tokio::test]
    async fn a_namespace_just_deleted_is_read_at_its_latest_state() {
        let plugin = NamespaceLifecycle::default();
        let create = |plugin| async move {
            let mut object = json!({"metadata": {"name": "c"}});
            let mut a = Attributes {
                operation: Operation::Create,
                user: UserInfo::default(),
                resource: GroupVersionResource { group: "", version: "v1", resource: "configmaps" },
                subresource: "",
                kind: GroupVersionKind { group: "", version: "v1", kind: "ConfigMap" },
                namespace: "ns",
                name: "c",
                object: Some(&mut object),
                old_object: None,
                dry_run: false,
                options: OperationOptions::None,
                warnings: Default::default(),
                audit_annotations: Default::default(),
            };
            NamespaceLifecycle::admit(plugin, &mut a, &Lagging).await
        };
        // Before the delete, the cached copy is trusted.
        create(&plugin).await.unwrap();
        let mut ns = json!({});
        let mut delete = Attributes {
            operation: Operation::Delete,
            user: UserInfo::default(),
            resource: GroupVersionResource { group: "", version: "v1", resource: "namespaces" },
            subresource: "",
            kind: GroupVersionKind { group: "", version: "v1", kind: "Namespace" },
            namespace: "",
            name: "ns",
            object: Some(&mut ns),
            old_object: None,
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        };
        plugin.admit(&mut delete, &Lagging).await.unwrap();
        let refused = create(&plugin).await.unwrap_err();
        assert!(refused.to_string().contains("because it is being terminated"), "{refused}");
    }

    #[test]
    fn deleted_namespaces_are_remembered_for_a_while_and_a_bounded_number() {
        let plugin = NamespaceLifecycle::default();
        for i in 0..LIVE_LOOKUP_MAX + 5 {
            plugin.note_deleted(&format!("ns{i}"));
        }
        assert_eq!(plugin.deleted.lock().unwrap().len(), LIVE_LOOKUP_MAX);
        assert!(plugin.recently_deleted(&format!("ns{}", LIVE_LOOKUP_MAX + 4)));
        assert!(!plugin.recently_deleted("other"));
    }
}
