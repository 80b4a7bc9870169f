//! `admissionregistration.k8s.io/v1`.

mod mutatingwebhookconfigurations;
mod validatingadmissionpolicies;
mod validatingadmissionpolicybindings;
mod validatingwebhookconfigurations;

pub use mutatingwebhookconfigurations::MutatingWebhookConfigurations;
pub use validatingadmissionpolicies::ValidatingAdmissionPolicies;
pub use validatingadmissionpolicybindings::ValidatingAdmissionPolicyBindings;
pub use validatingwebhookconfigurations::ValidatingWebhookConfigurations;
