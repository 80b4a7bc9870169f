//! Authorization: may this user do this? Asked of every request, between authentication and
//! the handlers, and by the access reviews (`kubectl auth can-i`), always through the one
//! [`Authorizer`] trait, as kube-apiserver's authorizer chain.
//!
//! | file | what it holds |
//! |------|---------------|
//! | [`attributes`] | [`Attributes`]: what a request asks, read from its method, path and query (or from a `SubjectAccessReview`'s spec) |
//! | [`rules`] | the rules an authorizer lists for `SelfSubjectRulesReview`, and how a rule matches attributes |
//! | [`admission`] | the authorizer as admission plugins ask it (CertificateApproval, CertificateSigning) |
//! | [`filter`] | the axum layer that asks the authorizer and answers `403 Forbidden` with upstream's message |
//! | [`modes`] | `--authorization-mode`: upstream's mode names, and the chain built from them |
//! | [`union`] | the chain itself: the first authorizer with an opinion decides |
//! | [`webhook`] | `Webhook`: SubjectAccessReviews to a remote service, answers cached |
//! | [`rbac`] | `RBAC`: Roles, ClusterRoles and bindings, indexed; the bootstrap policy; escalation checks |
//! | [`node`] | `Node`: what a kubelet may read and write, from the pods bound to it |
//! | [`privileged_groups`], [`always_allow`], [`always_deny`], [`allow_authenticated`] | the other authorizers |
//!
//! Start at [`Authorizer`]. An authorizer answers [`Decision::Allow`], [`Decision::Deny`] or
//! [`Decision::NoOpinion`] with a reason; the [`union::Union`] of the configured modes asks
//! each in turn, and a request that no authorizer allows is forbidden. Members of
//! `system:masters` are always allowed, before any mode is asked, as upstream.
//!
//! The same authorizer lists a user's rules ([`Authorizer::rules_for`], upstream's
//! `RuleResolver`), so `SelfSubjectRulesReview` and the decisions cannot disagree.
//!
//! Authorizers are synchronous: they decide from what they hold in memory (RBAC from its
//! index, Node from the pods cache), so asking one costs no allocation of a future per
//! request. The webhook, the one that must ask elsewhere, waits on the calling thread (see
//! [`webhook`]).

pub mod admission;
pub mod allow_authenticated;
pub mod always_allow;
pub mod always_deny;
pub mod attributes;
pub mod filter;
pub mod modes;
pub mod node;
pub mod privileged_groups;
pub mod rbac;
pub mod rules;
pub mod union;
pub mod webhook;

pub use attributes::Attributes;
pub use filter::{authorize, forbidden};
pub use modes::{Mode, ModeError};
pub use rules::{NonResourceRule, ResourceRule, Rules};
pub use union::Union;

use crate::auth::UserInfo;

/// What an authorizer thinks of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The request may go on; later authorizers are not asked.
    Allow,
    /// The request is refused; later authorizers are not asked.
    Deny,
    /// This authorizer does not decide; the next one is asked. When none decides, the
    /// request is refused.
    NoOpinion,
}

/// An authorizer's answer: its decision, why (shown to the client on a refusal and in an
/// access review's `status.reason`), and what went wrong while deciding, if anything
/// (an access review's `status.evaluationError`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    pub reason: String,
    pub evaluation_error: Option<String>,
}

impl Verdict {
    pub fn allow() -> Verdict {
        Verdict { decision: Decision::Allow, reason: String::new(), evaluation_error: None }
    }

    pub fn no_opinion(reason: impl Into<String>) -> Verdict {
        Verdict { decision: Decision::NoOpinion, reason: reason.into(), evaluation_error: None }
    }

    pub fn is_allowed(&self) -> bool {
        self.decision == Decision::Allow
    }
}

/// One authorization mode (upstream's `authorizer.Authorizer` and `RuleResolver` in one).
pub trait Authorizer: Send + Sync {
    /// Whether the user in `attributes` may do what they describe.
    fn authorize(&self, attributes: &Attributes<'_>) -> Verdict;

    /// What `user` may do in `namespace`, as far as this authorizer can list it.
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules;
}
