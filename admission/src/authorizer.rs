//! How a plugin asks the API server's authorizer (upstream's `WantsAuthorizer`): the
//! [`Authorizer`] trait, which the server implements over its own authorizer chain, and the
//! [`AuthorizerSlot`] the chain hands to the plugins that ask, filled once the server's
//! authorizer exists ([`crate::Chain::set_authorizer`]). The certificate plugins ask it
//! whether a user may `approve` or `sign` for a signer.

use std::sync::{Arc, OnceLock};

use crate::attributes::UserInfo;

/// One question about a resource: may the user do `verb` on `resource` (of `group`) named
/// `name` in `namespace` (`""`: cluster-scoped)?
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceCheck<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// The server's authorizer as plugins see it: the same decision a request with these
/// attributes would get (`system:masters` always allowed).
pub trait Authorizer: Send + Sync {
    fn allowed(&self, user: &UserInfo<'_>, check: &ResourceCheck<'_>) -> bool;

    /// Whether the user may do `verb` (`get`, `post`, ...) on the non-resource `path`
    /// (`/healthz`, `/metrics`).
    fn allowed_path(&self, user: &UserInfo<'_>, verb: &str, path: &str) -> bool;
}

/// Where plugins find the authorizer: shared by every plugin of a chain, filled once.
#[derive(Clone, Default)]
pub struct AuthorizerSlot(Arc<OnceLock<Arc<dyn Authorizer>>>);

impl AuthorizerSlot {
    /// A slot filled with `authorizer` (tests, tools).
    pub fn with(authorizer: Arc<dyn Authorizer>) -> AuthorizerSlot {
        let slot = AuthorizerSlot::default();
        slot.set(authorizer);
        slot
    }

    /// Fills the slot; a second call changes nothing.
    pub fn set(&self, authorizer: Arc<dyn Authorizer>) {
        let _ = self.0.set(authorizer);
    }

    /// Whether the user may; `false` while no authorizer is set (a server always sets one
    /// before it serves, so a plugin never allows for want of one).
    pub fn allowed(&self, user: &UserInfo<'_>, check: &ResourceCheck<'_>) -> bool {
        self.0.get().is_some_and(|a| a.allowed(user, check))
    }

    /// Whether the user may do `verb` on the non-resource `path` (see [`Authorizer`]).
    pub fn allowed_path(&self, user: &UserInfo<'_>, verb: &str, path: &str) -> bool {
        self.0.get().is_some_and(|a| a.allowed_path(user, verb, path))
    }
}

impl std::fmt::Debug for AuthorizerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizerSlot").field("set", &self.0.get().is_some()).finish()
    }
}

/// Upstream's `IsAuthorizedForSignerName`: `verb` on the `signers` resource of
/// certificates.k8s.io named `signer_name`, or named `<domain>/*` for every signer of its
/// domain.
pub fn authorized_for_signer(
    slot: &AuthorizerSlot,
    user: &UserInfo<'_>,
    verb: &str,
    signer_name: &str,
) -> bool {
    let allowed = |name: &str| {
        let check = ResourceCheck {
            verb,
            group: "certificates.k8s.io",
            resource: "signers",
            namespace: "",
            name,
        };
        slot.allowed(user, &check)
    };
    if allowed(signer_name) {
        return true;
    }
    let Some((domain, _)) = signer_name.split_once('/') else { return false };
    allowed(&format!("{domain}/*"))
}

#[cfg(test)]
pub(crate) mod testing {
    //! An authorizer over a fixed list of (user, verb, signer name) grants.

    use super::*;

    pub struct Grants(pub Vec<(&'static str, &'static str, &'static str)>);

    impl Authorizer for Grants {
        fn allowed(&self, user: &UserInfo<'_>, check: &ResourceCheck<'_>) -> bool {
            check.resource == "signers"
                && self
                    .0
                    .iter()
                    .any(|(u, v, n)| *u == user.name && *v == check.verb && *n == check.name)
        }

        /// Paths are granted as `(user, verb, path)` too.
        fn allowed_path(&self, user: &UserInfo<'_>, verb: &str, path: &str) -> bool {
            self.0.iter().any(|(u, v, p)| *u == user.name && *v == verb && *p == path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::Grants;
    use super::*;

    #[test]
    fn a_signer_is_allowed_by_name_or_by_its_domain() {
        let slot = AuthorizerSlot::with(Arc::new(Grants(vec![
            ("alice", "approve", "example.com/a"),
            ("bob", "approve", "example.com/*"),
        ])));
        let user = |name| UserInfo { name, ..Default::default() };
        assert!(authorized_for_signer(&slot, &user("alice"), "approve", "example.com/a"));
        assert!(!authorized_for_signer(&slot, &user("alice"), "approve", "example.com/b"));
        assert!(!authorized_for_signer(&slot, &user("alice"), "sign", "example.com/a"));
        assert!(authorized_for_signer(&slot, &user("bob"), "approve", "example.com/b"));
        assert!(!authorized_for_signer(
            &AuthorizerSlot::default(),
            &user("bob"),
            "approve",
            "example.com/b"
        ));
    }
}
