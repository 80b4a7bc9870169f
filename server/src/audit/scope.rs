//! What the code serving a request adds to its audit event, as upstream's audit context rides
//! the request context: the audit layer runs the request in a [`scope`], and the parts deep
//! in it (the authorizer, impersonation, admission, the handlers that decode bodies) call
//! [`annotate`], [`impersonated`], [`request_object`]. Outside a scope (a request not
//! audited, the server's own writes, tests) these do nothing, and cost a task-local lookup.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::policy::Level;
use crate::auth::UserInfo;

tokio::task_local! {
    static CURRENT: Arc<Recorder>;
}

/// One audited request's additions.
pub struct Recorder {
    level: Level,
    omit_managed_fields: bool,
    recorded: Mutex<Recorded>,
}

/// What was added while the request was served.
#[derive(Debug, Default)]
pub struct Recorded {
    /// First value of each key kept, as upstream keeps it.
    pub annotations: BTreeMap<String, String>,
    pub impersonated: Option<UserInfo>,
    /// The decoded request body (from level Request on).
    pub request_object: Option<Value>,
    /// The request object's namespace, name, uid and resourceVersion, which complete the
    /// event's objectRef (a create names its object only in its body).
    pub object_meta: Option<ObjectMeta>,
}

/// What [`Recorded::object_meta`] keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectMeta {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

impl Recorder {
    pub fn new(level: Level, omit_managed_fields: bool) -> Arc<Recorder> {
        Arc::new(Recorder { level, omit_managed_fields, recorded: Mutex::default() })
    }

    /// What was recorded; the recorder starts empty again.
    pub fn take(&self) -> Recorded {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.recorded.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Runs `request` with `recorder` as its audit scope.
pub async fn scope<F: Future>(recorder: Arc<Recorder>, request: F) -> F::Output {
    CURRENT.scope(recorder, request).await
}

/// The level the request being served is recorded at ([`Level::None`] outside a scope).
pub fn level() -> Level {
    CURRENT.try_with(|r| r.level).unwrap_or(Level::None)
}

/// Adds an annotation to the request's event (any recorded level).
pub fn annotate(key: impl Into<String>, value: impl Into<String>) {
    annotate_at(key, value, Level::Metadata);
}

/// Adds an annotation that only events of `least` or more carry.
pub fn annotate_at(key: impl Into<String>, value: impl Into<String>, least: Level) {
    let _ = CURRENT.try_with(|r| {
        if r.level >= least {
            r.lock().annotations.entry(key.into()).or_insert_with(|| value.into());
        }
    });
}

/// The annotations admission plugins noted ([`rkube_admission::AuditAnnotations`]).
pub fn admission_annotations(annotations: Vec<rkube_admission::AuditAnnotation>) {
    for a in annotations {
        let least = match a.level {
            rkube_admission::AuditLevel::Metadata => Level::Metadata,
            rkube_admission::AuditLevel::Request => Level::Request,
            rkube_admission::AuditLevel::RequestResponse => Level::RequestResponse,
        };
        annotate_at(a.key, a.value, least);
    }
}

/// The user the request acts as (impersonation).
pub fn impersonated(user: &UserInfo) {
    let _ = CURRENT.try_with(|r| r.lock().impersonated = Some(user.clone()));
}

/// The request's decoded object (a create's or update's object, a delete's options): it
/// completes the objectRef, and is the event's `requestObject` from level Request on.
pub fn request_object(object: &Value) {
    let _ = CURRENT.try_with(|r| {
        if r.level < Level::Metadata {
            return;
        }
        let meta = &object["metadata"];
        let text = |key: &str| meta[key].as_str().unwrap_or("").to_string();
        let object_meta = ObjectMeta {
            namespace: text("namespace"),
            name: text("name"),
            uid: text("uid"),
            resource_version: text("resourceVersion"),
        };
        let kept = (r.level >= Level::Request).then(|| {
            let mut kept = object.clone();
            if r.omit_managed_fields {
                without_managed_fields(&mut kept);
            }
            kept
        });
        let mut recorded = r.lock();
        recorded.object_meta = Some(object_meta);
        if kept.is_some() {
            recorded.request_object = kept;
        }
    });
}

/// A patch's body as the event's `requestObject` (from level Request on), as upstream logs
/// the patch itself rather than an object.
pub fn request_patch(patch: &Value) {
    let _ = CURRENT.try_with(|r| {
        if r.level >= Level::Request {
            r.lock().request_object = Some(patch.clone());
        }
    });
}

/// Leaves `metadata.managedFields` out of an object, of a list's items and of a Table's
/// rows' objects (upstream's `omitManagedFields`).
pub fn without_managed_fields(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    for key in ["items", "rows"] {
        if let Some(items) = object.get_mut(key).and_then(Value::as_array_mut) {
            for item in items {
                let item = if key == "rows" { &mut item["object"] } else { item };
                if let Some(meta) = item.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("managedFields");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn additions_reach_the_scope_at_their_levels_and_nothing_outside_one() {
        annotate("outside", "dropped");
        assert_eq!(level(), Level::None);
        let recorder = Recorder::new(Level::Metadata, true);
        scope(recorder.clone(), async {
            annotate("a", "1");
            annotate("a", "2");
            annotate_at("patch", "p", Level::Request);
            request_object(&json!({"metadata": {"name": "web", "namespace": "default"}}));
        })
        .await;
        let recorded = recorder.take();
        assert_eq!(recorded.annotations, BTreeMap::from([("a".into(), "1".into())]));
        assert_eq!(recorded.request_object, None);
        assert_eq!(recorded.object_meta.unwrap().name, "web");

        let recorder = Recorder::new(Level::Request, true);
        scope(recorder.clone(), async {
            annotate_at("patch", "p", Level::Request);
            let object = json!({"metadata": {"name": "web", "managedFields": [{}]}});
            request_object(&object);
        })
        .await;
        let recorded = recorder.take();
        assert_eq!(recorded.annotations.len(), 1);
        assert_eq!(recorded.request_object, Some(json!({"metadata": {"name": "web"}})));
    }

    #[test]
    fn managed_fields_go_from_objects_lists_and_tables() {
        let mut list =
            json!({"metadata": {}, "items": [{"metadata": {"managedFields": [], "name": "a"}}]});
        without_managed_fields(&mut list);
        assert_eq!(list["items"][0]["metadata"], json!({"name": "a"}));
        let mut table = json!({"rows": [{"cells": [], "object": {"metadata": {"managedFields": [], "name": "a"}}}]});
        without_managed_fields(&mut table);
        assert_eq!(table["rows"][0]["object"]["metadata"], json!({"name": "a"}));
    }
}
