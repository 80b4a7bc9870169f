//! `DefaultIngressClass`: a new Ingress that names no class (neither `spec.ingressClassName`
//! nor the old `kubernetes.io/ingress.class` annotation) gets the cluster's default
//! IngressClass, the one annotated `ingressclass.kubernetes.io/is-default-class: "true"`; of
//! several, the newest (then the first by name), as upstream. Without a default it is left
//! as it is.

use rkube_apis::selectors::LabelSelector;
use serde_json::{json, Value};

use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::state::{ClusterState, Freshness, GroupResource};
use crate::MutatingPlugin;

pub const NAME: &str = "DefaultIngressClass";

/// The annotation that makes an IngressClass the default.
pub const IS_DEFAULT_CLASS: &str = "ingressclass.kubernetes.io/is-default-class";
/// The annotation Ingresses named their class with before `spec.ingressClassName`.
pub const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

const NETWORKING: &str = "networking.k8s.io";
const INGRESS_CLASSES: GroupResource<'static> = GroupResource::new(NETWORKING, "ingressclasses");

#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultIngressClass;

/// The name of the default class: of the classes marked default, the newest, then the
/// first by name (creation times are whole seconds, so ties are common).
async fn default_class(state: &dyn ClusterState) -> Result<Option<String>, AdmissionError> {
    let classes =
        state.list(INGRESS_CLASSES, None, &LabelSelector::everything(), Freshness::Cached).await?;
    let mut defaults: Vec<(String, String)> = classes
        .iter()
        .map(|c| c.value())
        .filter(|c| c["metadata"]["annotations"][IS_DEFAULT_CLASS] == "true")
        .map(|c| {
            let text = |field: &str| c["metadata"][field].as_str().unwrap_or("").to_string();
            (text("creationTimestamp"), text("name"))
        })
        .collect();
    // RFC 3339 times in UTC, as the server writes them, order as text.
    defaults.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Ok(defaults.into_iter().next().map(|(_, name)| name))
}

#[async_trait::async_trait]
impl MutatingPlugin for DefaultIngressClass {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if a.operation != Operation::Create
            || !a.subresource.is_empty()
            || !a.is(NETWORKING, "ingresses")
        {
            return Ok(());
        }
        let Some(ingress) = a.object() else { return Ok(()) };
        let named = !ingress["spec"]["ingressClassName"].is_null()
            || ingress["metadata"]["annotations"].get(INGRESS_CLASS_ANNOTATION).is_some();
        if named {
            return Ok(());
        }
        let Some(class) = default_class(state).await? else { return Ok(()) };
        let Some(ingress) = a.object.as_deref_mut().and_then(Value::as_object_mut) else {
            return Ok(());
        };
        let spec = ingress.entry("spec").or_insert_with(|| json!({}));
        if let Some(spec) = spec.as_object_mut() {
            spec.insert("ingressClassName".into(), json!(class));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use crate::state::Snapshot;

    fn class(name: &str, created: &str, default: Option<&str>) -> Value {
        let annotations = default.map(|d| json!({IS_DEFAULT_CLASS: d})).unwrap_or(json!({}));
        json!({"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations},
               "spec": {"controller": "example.com/ingress"}})
    }

    async fn admit(state: &Snapshot, operation: Operation, ingress: &mut Value) {
        let mut a = Attributes {
            operation,
            user: UserInfo::default(),
            resource: GroupVersionResource {
                group: NETWORKING,
                version: "v1",
                resource: "ingresses",
            },
            subresource: "",
            kind: GroupVersionKind { group: NETWORKING, version: "v1", kind: "Ingress" },
            namespace: "ns",
            name: "",
            object: Some(ingress),
            old_object: None,
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        };
        DefaultIngressClass.admit(&mut a, state).await.unwrap();
    }

    fn ingress() -> Value {
        json!({"metadata": {"name": "web"}, "spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}}})
    }

    #[tokio::test]
    async fn an_ingress_without_a_class_gets_the_newest_default() {
        let state = Snapshot::default()
            .with(NETWORKING, "ingressclasses", class("old", "2025-01-01T00:00:00Z", Some("true")))
            .with(
                NETWORKING,
                "ingressclasses",
                class("newer-b", "2025-06-01T00:00:00Z", Some("true")),
            )
            .with(
                NETWORKING,
                "ingressclasses",
                class("newer-a", "2025-06-01T00:00:00Z", Some("true")),
            )
            .with(
                NETWORKING,
                "ingressclasses",
                class("newest", "2025-09-01T00:00:00Z", Some("false")),
            );
        let mut i = ingress();
        admit(&state, Operation::Create, &mut i).await;
        assert_eq!(i["spec"]["ingressClassName"], "newer-a");
        // A class named either way is kept; updates are left alone.
        let mut named = ingress();
        named["spec"]["ingressClassName"] = json!("mine");
        admit(&state, Operation::Create, &mut named).await;
        assert_eq!(named["spec"]["ingressClassName"], "mine");
        let mut annotated = ingress();
        annotated["metadata"]["annotations"] = json!({INGRESS_CLASS_ANNOTATION: "nginx"});
        admit(&state, Operation::Create, &mut annotated).await;
        assert!(annotated["spec"]["ingressClassName"].is_null());
        let mut updated = ingress();
        admit(&state, Operation::Update, &mut updated).await;
        assert!(updated["spec"]["ingressClassName"].is_null());
    }

    #[tokio::test]
    async fn without_a_default_nothing_changes() {
        let state = Snapshot::default().with(
            NETWORKING,
            "ingressclasses",
            class("plain", "2025-01-01T00:00:00Z", None),
        );
        let mut i = ingress();
        admit(&state, Operation::Create, &mut i).await;
        assert_eq!(i, ingress());
    }
}
