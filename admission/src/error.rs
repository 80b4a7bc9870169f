//! Why admission refused a request, as the API errors upstream answers with: the server turns
//! each variant into the `Status` of the same reason and code.

use crate::attributes::Attributes;

/// One cause in a refusal's `details.causes`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    pub reason: &'static str,
    pub message: String,
    pub field: String,
}

/// A refusal of a chosen code and reason ([`AdmissionError::Refused`]): `message` is the
/// whole text; the details name the object as [`AdmissionError::Forbidden`]'s do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub code: u16,
    pub reason: &'static str,
    pub group: String,
    pub resource: String,
    pub name: String,
    pub message: String,
    pub causes: Vec<Cause>,
}

/// A refused request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// 403 Forbidden: `pods "web" is forbidden: <reason>` (upstream's `admission.NewForbidden`).
    #[error("{}", forbidden_message(group, resource, name, reason))]
    Forbidden {
        group: String,
        resource: String,
        /// The object's name (its `generateName` while it has none; `Unknown` without either).
        name: String,
        reason: String,
        causes: Vec<Cause>,
    },
    /// 404 Not Found: `namespaces "x" not found`.
    #[error("{} {name:?} not found", qualified(group, resource))]
    NotFound { group: String, resource: String, name: String },
    /// 422 Unprocessable Entity: `Namespace "x" is invalid: <field errors>`, as the
    /// registry's own validation answers (upstream's `NewInvalid`).
    #[error("{kind} {name:?} is invalid")]
    Invalid {
        group: String,
        kind: String,
        name: String,
        causes: Vec<rkube_apis::validation::FieldError>,
    },
    /// A refusal with the code and reason the refusing policy chose (a
    /// ValidatingAdmissionPolicy's validation `reason`: 422 `Invalid` unless it says
    /// otherwise).
    #[error("{}", .0.message)]
    Refused(Box<Refusal>),
    /// 400 Bad Request.
    #[error("{0}")]
    BadRequest(String),
    /// 500: the plugin could not decide (e.g. the cluster state could not be read).
    #[error("{0}")]
    Internal(String),
    /// A whole `Status` as it goes to the client: a webhook's refusal (its code, reason and
    /// details, the message prefixed), or upstream's `NewInternalError` with its cause.
    #[error("{}", .0.message)]
    Status(Box<Status>),
}

/// A `metav1.Status` to answer with as it is (see [`AdmissionError::Status`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub code: u16,
    /// `""`: no reason (the Status leaves it out).
    pub reason: String,
    pub message: String,
    /// The Status's `details` as JSON (`name`, `group`, `kind`, `causes`,
    /// `retryAfterSeconds`), `Null` for none.
    pub details: serde_json::Value,
}

impl AdmissionError {
    /// The request is forbidden because of `reason`, named as upstream names it: by the
    /// request's name, else the object's `generateName` (a generated name does not exist yet
    /// when admission runs upstream), else its name.
    pub fn forbidden(a: &Attributes<'_>, reason: impl Into<String>) -> AdmissionError {
        let meta = |field: &str| {
            a.object()
                .and_then(|o| o["metadata"][field].as_str())
                .filter(|s| !s.is_empty())
                .map(String::from)
        };
        let name = Some(a.name)
            .filter(|n| !n.is_empty())
            .map(String::from)
            .or_else(|| meta("generateName"))
            .or_else(|| meta("name"))
            .unwrap_or_else(|| "Unknown".to_string());
        AdmissionError::Forbidden {
            group: a.resource.group.to_string(),
            resource: a.resource.resource.to_string(),
            name,
            reason: reason.into(),
            causes: Vec::new(),
        }
    }

    /// The same error with one more cause.
    pub fn with_cause(mut self, cause: Cause) -> AdmissionError {
        if let AdmissionError::Forbidden { causes, .. } = &mut self {
            causes.push(cause);
        }
        self
    }

    /// Upstream's `apierrors.NewInternalError(err)`: 500 `InternalError`, the message
    /// prefixed with `Internal error occurred: `, the error itself the one cause.
    pub fn internal_error(error: impl std::fmt::Display) -> AdmissionError {
        let error = error.to_string();
        AdmissionError::Status(Box::new(Status {
            code: 500,
            reason: "InternalError".into(),
            message: format!("Internal error occurred: {error}"),
            details: serde_json::json!({"causes": [{"message": error}]}),
        }))
    }

    pub fn not_found(group: &str, resource: &str, name: &str) -> AdmissionError {
        AdmissionError::NotFound {
            group: group.to_string(),
            resource: resource.to_string(),
            name: name.to_string(),
        }
    }
}

/// `pods`, or `priorityclasses.scheduling.k8s.io` outside the core group.
fn qualified(group: &str, resource: &str) -> String {
    match group {
        "" => resource.to_string(),
        group => format!("{resource}.{group}"),
    }
}

fn forbidden_message(group: &str, resource: &str, name: &str, reason: &str) -> String {
    match (resource, name) {
        ("", _) => format!("forbidden: {reason}"),
        (_, "") => format!("{} is forbidden: {reason}", qualified(group, resource)),
        _ => format!("{} {name:?} is forbidden: {reason}", qualified(group, resource)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use serde_json::json;

    #[test]
    fn forbidden_names_the_object_as_upstream() {
        let mut pod = json!({"metadata": {"generateName": "web-", "name": "web-x1"}});
        let a = Attributes {
            operation: Operation::Create,
            user: UserInfo::default(),
            resource: GroupVersionResource { group: "", version: "v1", resource: "pods" },
            subresource: "",
            kind: GroupVersionKind { group: "", version: "v1", kind: "Pod" },
            namespace: "ns",
            name: "",
            object: Some(&mut pod),
            old_object: None,
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        };
        let e = AdmissionError::forbidden(&a, "no");
        assert_eq!(e.to_string(), "pods \"web-\" is forbidden: no");
        let e = AdmissionError::forbidden(&Attributes { name: "web", ..a }, "no");
        assert_eq!(e.to_string(), "pods \"web\" is forbidden: no");
        let classes = AdmissionError::Forbidden {
            group: "scheduling.k8s.io".into(),
            resource: "priorityclasses".into(),
            name: "".into(),
            reason: "no".into(),
            causes: vec![],
        };
        assert_eq!(classes.to_string(), "priorityclasses.scheduling.k8s.io is forbidden: no");
        assert_eq!(
            AdmissionError::not_found("", "namespaces", "x").to_string(),
            "namespaces \"x\" not found"
        );
    }
}
