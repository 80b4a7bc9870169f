//! What a plugin is told about a request: upstream's admission attributes (operation, user,
//! resource, subresource, kind, namespace, name, the object and the old object, dry-run and the
//! operation's options). Everything is borrowed from the request, so building them costs
//! nothing on the request path.

use std::collections::BTreeMap;
use std::sync::Mutex;

use rkube_apis::go_quote;
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
///
/// As upstream's attributes, the sink refuses a key that is not `<prefix>/<name>` (a
/// qualified name with a prefix), a level other than Metadata and Request, and a second value
/// for a key already set: the plugin logs the refusal and the request goes on.
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

impl AuditLevel {
    fn as_str(self) -> &'static str {
        match self {
            AuditLevel::Metadata => "Metadata",
            AuditLevel::Request => "Request",
            AuditLevel::RequestResponse => "RequestResponse",
        }
    }
}

/// Why [`AuditAnnotations`] refused an annotation, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnnotationError {
    #[error("annotation key has invalid format, the right format is a DNS subdomain prefix and '/' and key name. (e.g. 'podsecuritypolicy.admission.k8s.io/admit-policy')")]
    NotPrefixed,
    #[error("annotation key has invalid format {0}. A qualified name like 'podsecuritypolicy.admission.k8s.io/admit-policy' is required.")]
    NotQualified(String),
    /// `key` as Go's `%q` writes it.
    #[error("admission annotations are not allowed to be set at level other than Metadata and Request, key: {key}, level: {level}")]
    Level { key: String, level: &'static str },
    /// `key` as Go's `%q` writes it, the values as Go's `%v` of upstream's annotation.
    #[error("admission annotations are not allowd to be overwritten, key:{key}, old value: {old}, new value: {new}")]
    Overwritten { key: String, old: String, new: String },
}

impl AuditAnnotations {
    /// Adds an annotation every audited request's event carries.
    pub fn add(
        &self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<(), AnnotationError> {
        self.add_with_level(key, value, AuditLevel::Metadata)
    }

    /// Adds an annotation only events of `level` or more carry. Adding the same key, value
    /// and level again changes nothing.
    pub fn add_with_level(
        &self,
        key: impl Into<String>,
        value: impl Into<String>,
        level: AuditLevel,
    ) -> Result<(), AnnotationError> {
        let (key, value) = (key.into(), value.into());
        if key.split('/').count() != 2 {
            return Err(AnnotationError::NotPrefixed);
        }
        let problems = rkube_apis::validation::qualified_name_problems(&key);
        if !problems.is_empty() {
            return Err(AnnotationError::NotQualified(problems.join(",")));
        }
        if level == AuditLevel::RequestResponse {
            return Err(AnnotationError::Level { key: go_quote(&key), level: level.as_str() });
        }
        let mut annotations = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(old) = annotations.iter().find(|a| a.key == key) {
            if (old.value.as_str(), old.level) == (value.as_str(), level) {
                return Ok(());
            }
            // Go's `%v` of upstream's annotation struct: `{<level> <value>}`.
            return Err(AnnotationError::Overwritten {
                old: format!("{{{} {}}}", old.level.as_str(), old.value),
                new: format!("{{{} {value}}}", level.as_str()),
                key: go_quote(&key),
            });
        }
        annotations.push(AuditAnnotation { key, value, level });
        Ok(())
    }

    /// The annotations added so far, in order; none are left.
    pub fn take(&self) -> Vec<AuditAnnotation> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// `value` as Go's `json.Marshal` writes a document with no Go type of its own (members in
/// the order given, HTML-safe escapes), as annotation values that hold JSON are written.
pub use rkube_apis::go_marshal;

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

    #[test]
    fn audit_annotations_take_upstreams_keys_and_keep_the_first_value() {
        let sink = AuditAnnotations::default();
        sink.add("example.com/ok", "1").unwrap();
        sink.add("example.com/ok", "1").unwrap();
        assert_eq!(
            sink.add("example.com/ok", "2").unwrap_err().to_string(),
            "admission annotations are not allowd to be overwritten, key:\"example.com/ok\", old value: {Metadata 1}, new value: {Metadata 2}"
        );
        assert_eq!(
            sink.add("no-prefix", "1").unwrap_err().to_string(),
            "annotation key has invalid format, the right format is a DNS subdomain prefix and '/' and key name. (e.g. 'podsecuritypolicy.admission.k8s.io/admit-policy')"
        );
        assert!(matches!(sink.add("a/b/c", "1"), Err(AnnotationError::NotPrefixed)));
        assert!(matches!(sink.add("hook/Bad Key", "1"), Err(AnnotationError::NotQualified(_))));
        assert!(matches!(
            sink.add_with_level("example.com/rr", "1", AuditLevel::RequestResponse),
            Err(AnnotationError::Level { .. })
        ));
        sink.add_with_level("example.com/patch", "p", AuditLevel::Request).unwrap();
        let kept: Vec<(String, AuditLevel)> =
            sink.take().into_iter().map(|a| (a.key, a.level)).collect();
        assert_eq!(
            kept,
            [
                ("example.com/ok".to_string(), AuditLevel::Metadata),
                ("example.com/patch".to_string(), AuditLevel::Request)
            ]
        );
        assert!(sink.take().is_empty());
    }

    #[test]
    fn json_values_are_html_safe_as_gos() {
        let value = json!({"b": "<a&b>\u{2028}", "a": [1, true, null]});
        assert_eq!(go_marshal(&value), r#"{"b":"\u003ca\u0026b\u003e\u2028","a":[1,true,null]}"#);
    }
}
