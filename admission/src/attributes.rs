//! What a plugin is told about a request: upstream's admission attributes (operation, user,
//! resource, subresource, kind, namespace, name, the object and the old object, dry-run and the
//! operation's options). Everything is borrowed from the request, so building them costs
//! nothing on the request path.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{json, Value};

/// What the request does to the object (upstream's `admission.Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    /// Connecting to a running object: exec, attach, port-forward, proxy.
    Connect,
}

impl Operation {
    /// As upstream spells it (`CREATE`, ...): the AdmissionReview's `operation`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// Who asks (upstream's `user.Info`). Empty for the API server's own writes.
#[derive(Clone, Copy, Debug, Default)]
pub struct UserInfo<'a> {
    pub name: &'a str,
    pub uid: &'a str,
    pub groups: &'a [String],
    pub extra: Option<&'a BTreeMap<String, Vec<String>>>,
}

/// A resource by group, version and plural name (`""` is the core group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupVersionResource<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
}

/// A kind by group, version and name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupVersionKind<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
}

/// The options the request came with (upstream passes `CreateOptions`, `UpdateOptions`,
/// `DeleteOptions` or the connect request's options).
#[derive(Clone, Copy, Debug, Default)]
pub enum OperationOptions<'a> {
    Create {
        field_manager: Option<&'a str>,
    },
    Update {
        field_manager: Option<&'a str>,
    },
    Delete {
        grace_period_seconds: Option<i64>,
        propagation_policy: Option<&'a str>,
    },
    #[default]
    None,
}

impl OperationOptions<'_> {
    /// The options as the `meta.k8s.io/v1` object an AdmissionReview carries (`null` for
    /// none), for plugins that send them on (webhooks).
    pub fn to_json(&self, dry_run: bool) -> Value {
        let (kind, mut body) = match *self {
            OperationOptions::Create { field_manager } => {
                ("CreateOptions", json!({"fieldManager": field_manager}))
            }
            OperationOptions::Update { field_manager } => {
                ("UpdateOptions", json!({"fieldManager": field_manager}))
            }
            OperationOptions::Delete { grace_period_seconds, propagation_policy } => (
                "DeleteOptions",
                json!({
                    "gracePeriodSeconds": grace_period_seconds,
                    "propagationPolicy": propagation_policy,
                }),
            ),
            OperationOptions::None => return Value::Null,
        };
        let fields = body.as_object_mut().expect("an object");
        fields.retain(|_, v| !v.is_null());
        if dry_run {
            fields.insert("dryRun".into(), json!(["All"]));
        }
        fields.insert("kind".into(), json!(kind));
        fields.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
        body
    }
}

/// One request as admission sees it.
#[derive(Debug)]
pub struct Attributes<'a> {
    pub operation: Operation,
    pub user: UserInfo<'a>,
    pub resource: GroupVersionResource<'a>,
    /// `""` for the resource itself, else `status`, `binding`, `scale`, ...
    pub subresource: &'a str,
    pub kind: GroupVersionKind<'a>,
    /// `""` for cluster-scoped resources.
    pub namespace: &'a str,
    /// The name the request names: `""` for a create whose name is generated
    /// (`metadata.generateName`) while the mutating plugins run; the validating ones see the
    /// generated name, as upstream's do.
    pub name: &'a str,
    /// The object as it will be stored: mutating plugins may change it. `None` for a delete.
    pub object: Option<&'a mut Value>,
    /// The object as it is stored, for updates and deletes.
    pub old_object: Option<&'a Value>,
    pub dry_run: bool,
    pub options: OperationOptions<'a>,
    /// What the plugins tell the client: the server sends them as `Warning` headers.
    pub warnings: Warnings,
    /// What the plugins note for the request's audit event.
    pub audit_annotations: AuditAnnotations,
}

/// Warnings for the client (upstream's `warning.AddWarning`): plugins add them while they
/// admit a request, and the server answers with each as an HTTP `Warning` header (`kubectl`
/// prints `Warning: <text>`), whether the request then succeeds or not.
#[derive(Debug, Default)]
pub struct Warnings(Mutex<Vec<String>>);

impl Warnings {
    pub fn add(&self, text: impl Into<String>) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(text.into());
    }

    /// The warnings added so far, in order; none are left.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Annotations for the request's audit event (upstream's `AddAnnotation` on admission
/// attributes): `key` (prefixed by who adds it, as `<webhook name>/<key>` or
/// `pod-security.kubernetes.io/enforce-policy`) and value. Each has the least audit level an
/// event must have to carry it (most [`AuditLevel::Metadata`]; a webhook's patch only from
/// [`AuditLevel::Request`], as it shows request content). The server writes them into the
/// event when the audit policy records the request, and drops them otherwise.
#[derive(Debug, Default)]
pub struct AuditAnnotations(Mutex<Vec<AuditAnnotation>>);

/// One annotation of [`AuditAnnotations`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditAnnotation {
    pub key: String,
    pub value: String,
    pub level: AuditLevel,
}

/// The audit levels an annotation may need (audit.k8s.io's, from the least).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AuditLevel {
    Metadata,
    Request,
    RequestResponse,
}

impl AuditAnnotations {
    /// Adds an annotation every audited request's event carries.
    pub fn add(&self, key: impl Into<String>, value: impl Into<String>) {
        self.add_with_level(key, value, AuditLevel::Metadata);
    }

    /// Adds an annotation only events of `level` or more carry.
    pub fn add_with_level(
        &self,
        key: impl Into<String>,
        value: impl Into<String>,
        level: AuditLevel,
    ) {
        let annotation = AuditAnnotation { key: key.into(), value: value.into(), level };
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(annotation);
    }

    /// The annotations added so far, in order; none are left.
    pub fn take(&self) -> Vec<AuditAnnotation> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Attributes<'_> {
    /// Whether the request is about `resource` of the core group or of `group`, itself (not
    /// one of its subresources).
    pub fn is(&self, group: &str, resource: &str) -> bool {
        self.resource.group == group && self.resource.resource == resource
    }

    /// The object's JSON, read-only.
    pub fn object(&self) -> Option<&Value> {
        self.object.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_as_the_meta_v1_objects() {
        let create = OperationOptions::Create { field_manager: Some("kubectl") };
        assert_eq!(
            create.to_json(true),
            json!({"fieldManager": "kubectl", "dryRun": ["All"], "kind": "CreateOptions",
                   "apiVersion": "meta.k8s.io/v1"})
        );
        let delete =
            OperationOptions::Delete { grace_period_seconds: Some(0), propagation_policy: None };
        assert_eq!(
            delete.to_json(false),
            json!({"gracePeriodSeconds": 0, "kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"})
        );
        assert_eq!(OperationOptions::None.to_json(false), Value::Null);
    }
}
