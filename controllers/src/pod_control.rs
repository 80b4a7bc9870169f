//! Creating an owner's pods the way upstream's `PodControl` does, one copy for every
//! controller that makes pods: a pod without labels is refused (no selector could ever count
//! it, so it would be created forever), and each create is recorded on the owner as a
//! `SuccessfulCreate` or `FailedCreate` event; a namespace being deleted is reported apart, as
//! nothing worth an event.

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, PostParams};

use crate::api_errors::{message, namespace_terminating};
use rkube_runtime::events::Recorder;

/// Why a pod was not created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateError {
    /// The namespace is being deleted: every later create will fail too.
    NamespaceTerminating(String),
    /// Anything else, with the API's message (already recorded as `FailedCreate`).
    Failed(String),
}

/// Creates `pod` for the owner `target`; the created pod's name.
pub async fn create(
    api: &Api<Pod>,
    recorder: &Recorder,
    target: &ObjectReference,
    pod: &Pod,
) -> Result<String, CreateError> {
    if pod.metadata.labels.as_ref().is_none_or(|l| l.is_empty()) {
        return Err(CreateError::Failed("unable to create pods, no labels".into()));
    }
    match api.create(&PostParams::default(), pod).await {
        Ok(created) => {
            let name = created.metadata.name.unwrap_or_default();
            tracing::debug!(owner = ?target.name, pod = name, "created pod");
            let note = format!("Created pod: {name}");
            recorder.record(target, "Normal", "SuccessfulCreate", &note);
            Ok(name)
        }
        Err(e) if namespace_terminating(&e) => Err(CreateError::NamespaceTerminating(message(&e))),
        Err(e) => {
            let message = message(&e);
            let note = format!("Error creating: {message}");
            recorder.record(target, "Warning", "FailedCreate", &note);
            Err(CreateError::Failed(message))
        }
    }
}
