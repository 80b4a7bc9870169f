//! Label and field selectors, as list and watch requests carry them in the `labelSelector` and
//! `fieldSelector` query parameters and as workload specs carry them in `metav1.LabelSelector`.
//!
//! Start with [`LabelSelector::parse`] and [`FieldSelector::parse`]. Both follow the grammar,
//! the canonical string form and the error messages of kube-apiserver (k8s.io/apimachinery
//! `pkg/labels` and `pkg/fields`): the server answers a parse error with `400 Bad Request`
//! carrying [`SelectorError`]'s message unchanged, which is what kubectl prints.
//!
//! Deciding which fields a kind supports in field selectors is the server's job: it reads the
//! terms with [`FieldSelector::requirements`] and answers `field label not supported: X` itself.

pub mod fields;
pub mod labels;
mod validation;

pub(crate) use validation::qualified_name_errors;

pub use fields::{FieldOperator, FieldRequirement, FieldSelector};
pub use labels::{LabelSelector, Operator, Requirement};

/// A selector that could not be parsed or validated; the message is kube-apiserver's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SelectorError {
    message: String,
}

impl SelectorError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        SelectorError { message: message.into() }
    }

    /// The message the API returns in its `400 Bad Request` Status.
    pub fn message(&self) -> &str {
        &self.message
    }
}
