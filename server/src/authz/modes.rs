//! `--authorization-mode`: upstream's flag, a comma-separated list of modes asked in order,
//! and the chain built from it (`system:masters` first, as kube-apiserver).

use super::allow_authenticated::AllowAuthenticated;
use super::always_allow::AlwaysAllow;
use super::always_deny::AlwaysDeny;
use std::sync::Arc;

use super::node::{NodeAuthorizer, NodeGraph};
use super::privileged_groups::PrivilegedGroups;
use super::rbac::{Rbac, SharedIndex};
use super::webhook::WebhookAuthorizer;
use super::{Authorizer, Union};

/// An authorization mode rkube runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    AlwaysAllow,
    AlwaysDeny,
    /// Every authenticated user may do anything (see [`super::allow_authenticated`]); not
    /// an upstream mode.
    AllowAuthenticated,
    /// Upstream's Node authorizer ([`super::node`]).
    Node,
    /// Upstream's RBAC authorizer ([`super::rbac`]).
    Rbac,
    /// Upstream's webhook authorizer ([`super::webhook`]).
    Webhook,
}

/// The default of `--authorization-mode`, as kubeadm's and k3s's clusters run.
pub const DEFAULT: &str = "Node,RBAC";

/// Upstream's modes rkube does not have yet.
const NOT_IMPLEMENTED: &[&str] = &["ABAC"];

/// What is wrong with an `--authorization-mode` value (upstream's messages where it has one).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ModeError {
    #[error("at least one authorization-mode must be passed")]
    Empty,
    #[error("authorization-mode {0:?} is not a valid mode (valid: AlwaysAllow, AlwaysDeny, Node, RBAC, Webhook, AllowAuthenticated)")]
    Unknown(String),
    #[error("authorization-mode {0:?} has mode specified more than once")]
    Repeated(String),
    #[error("authorization-mode {0:?} is not implemented in rkube; use Node,RBAC (the default), AlwaysAllow or AlwaysDeny")]
    NotImplemented(String),
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::AlwaysAllow => "AlwaysAllow",
            Mode::AlwaysDeny => "AlwaysDeny",
            Mode::AllowAuthenticated => "AllowAuthenticated",
            Mode::Node => "Node",
            Mode::Rbac => "RBAC",
            Mode::Webhook => "Webhook",
        }
    }

    /// Reads the flag's list (already split at commas).
    pub fn parse_list<S: AsRef<str>>(names: &[S]) -> Result<Vec<Mode>, ModeError> {
        let names: Vec<&str> = names.iter().map(AsRef::as_ref).filter(|n| !n.is_empty()).collect();
        if names.is_empty() {
            return Err(ModeError::Empty);
        }
        let mut modes = Vec::with_capacity(names.len());
        for name in &names {
            let mode = match *name {
                "AlwaysAllow" => Mode::AlwaysAllow,
                "AlwaysDeny" => Mode::AlwaysDeny,
                "AllowAuthenticated" => Mode::AllowAuthenticated,
                "Node" => Mode::Node,
                "RBAC" => Mode::Rbac,
                "Webhook" => Mode::Webhook,
                other if NOT_IMPLEMENTED.contains(&other) => {
                    return Err(ModeError::NotImplemented(other.to_string()))
                }
                other => return Err(ModeError::Unknown(other.to_string())),
            };
            if modes.contains(&mode) {
                return Err(ModeError::Repeated(names.join(",")));
            }
            modes.push(mode);
        }
        Ok(modes)
    }

    fn authorizer(self, sources: &Sources) -> Box<dyn Authorizer> {
        match self {
            Mode::AlwaysAllow => Box::new(AlwaysAllow),
            Mode::AlwaysDeny => Box::new(AlwaysDeny),
            Mode::AllowAuthenticated => Box::new(AllowAuthenticated::default()),
            Mode::Node => Box::new(NodeAuthorizer::new(sources.node_graph.clone())),
            Mode::Rbac => Box::new(Rbac::new(sources.rbac.clone())),
            // Checked when the flags are read: Webhook needs its configuration file.
            Mode::Webhook => match &sources.webhook {
                Some(webhook) => Box::new(Shared(webhook.clone())),
                None => Box::new(super::always_deny::AlwaysDeny),
            },
        }
    }
}

/// What the authorizers read: the RBAC index, the pods of each node, and the webhook
/// (`--authorization-webhook-config-file`) if there is one.
#[derive(Clone)]
pub struct Sources {
    pub rbac: SharedIndex,
    pub node_graph: Arc<dyn NodeGraph>,
    pub webhook: Option<Arc<WebhookAuthorizer>>,
}

/// A shared authorizer as a member of the chain.
struct Shared(Arc<WebhookAuthorizer>);

impl Authorizer for Shared {
    fn authorize(&self, a: &super::Attributes<'_>) -> super::Verdict {
        self.0.authorize(a)
    }

    fn rules_for(&self, user: &crate::auth::UserInfo, namespace: &str) -> super::Rules {
        self.0.rules_for(user, namespace)
    }
}

/// A graph without pods, for [`Sources::empty`].
struct NoPods;

impl NodeGraph for NoPods {
    fn pods(&self, _node: &str, _namespace: &str) -> Vec<serde_json::Value> {
        Vec::new()
    }

    fn get(&self, _: &str, _: &str, _: &str) -> Option<serde_json::Value> {
        None
    }
}

impl Sources {
    /// No roles, no bindings, no pods (tests and tools).
    pub fn empty() -> Sources {
        Sources { rbac: Default::default(), node_graph: Arc::new(NoPods), webhook: None }
    }
}

/// The server's authorizer: `system:masters`, then `modes` in order.
pub fn chain(modes: &[Mode], sources: &Sources) -> Union {
    let mut members: Vec<Box<dyn Authorizer>> = vec![Box::new(PrivilegedGroups::system_masters())];
    members.extend(modes.iter().map(|m| m.authorizer(sources)));
    Union::new(members)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;
    use crate::authz::{Attributes, Decision};

    fn sources() -> Sources {
        Sources::empty()
    }

    #[test]
    fn the_flag_takes_upstream_names_in_order() {
        assert_eq!(Mode::parse_list(&["Node", "RBAC"]), Ok(vec![Mode::Node, Mode::Rbac]));
        assert_eq!(Mode::parse_list(&["AllowAuthenticated"]), Ok(vec![Mode::AllowAuthenticated]));
        assert_eq!(
            Mode::parse_list(&["AlwaysDeny", "AlwaysAllow"]),
            Ok(vec![Mode::AlwaysDeny, Mode::AlwaysAllow])
        );
        assert_eq!(Mode::parse_list::<&str>(&[]), Err(ModeError::Empty));
        assert_eq!(Mode::parse_list(&["Magic"]), Err(ModeError::Unknown("Magic".into())));
        assert_eq!(
            Mode::parse_list(&["AlwaysAllow", "AlwaysAllow"]),
            Err(ModeError::Repeated("AlwaysAllow,AlwaysAllow".into()))
        );
        let e = Mode::parse_list(&["AlwaysAllow", "ABAC"]).unwrap_err();
        assert_eq!(e, ModeError::NotImplemented("ABAC".into()));
        assert!(e.to_string().contains("not implemented"), "{e}");
        assert_eq!(Mode::parse_list(&["Webhook"]), Ok(vec![Mode::Webhook]));
        // One line, for the command line.
        assert!(!ModeError::Unknown("x".into()).to_string().contains('\n'));
    }

    #[test]
    fn system_masters_are_allowed_whatever_the_modes() {
        let admin = UserInfo::authenticated("system:admin".into(), vec!["system:masters".into()]);
        let jane = UserInfo::authenticated("jane".into(), vec![]);
        let deny = chain(&[Mode::AlwaysDeny], &sources());
        let a = |u| Attributes::non_resource(u, "get", "/api");
        assert_eq!(deny.authorize(&a(&admin)).decision, Decision::Allow);
        let verdict = deny.authorize(&a(&jane));
        assert_eq!(
            (verdict.decision, verdict.reason.as_str()),
            (Decision::NoOpinion, "Everything is forbidden.")
        );
        // Asked in order: AlwaysDeny has no opinion, so AlwaysAllow decides.
        let both = chain(&[Mode::AlwaysDeny, Mode::AlwaysAllow], &sources());
        assert_eq!(both.authorize(&a(&jane)).decision, Decision::Allow);
        // system:masters lists no rules of its own.
        assert!(deny.rules_for(&admin, "default").resource_rules.is_empty());
    }
}
