//! The authorizer kube-apiserver puts before every configured mode: members of
//! `system:masters` may do anything, whatever `--authorization-mode` says. It lists no rules
//! (upstream does not ask it for any), so `SelfSubjectRulesReview` shows only what the
//! configured modes grant.

use super::{Attributes, Authorizer, Rules, Verdict};
use crate::auth::UserInfo;

/// upstream's `user.SystemPrivilegedGroup`.
pub const SYSTEM_MASTERS: &str = "system:masters";

/// Allows the members of any of its groups; no opinion on anyone else.
pub struct PrivilegedGroups {
    pub groups: Vec<String>,
}

impl PrivilegedGroups {
    /// `system:masters`, as kube-apiserver.
    pub fn system_masters() -> PrivilegedGroups {
        PrivilegedGroups { groups: vec![SYSTEM_MASTERS.to_string()] }
    }
}

impl Authorizer for PrivilegedGroups {
    fn authorize(&self, a: &Attributes<'_>) -> Verdict {
        if self.groups.iter().any(|g| a.user.in_group(g)) {
            Verdict::allow()
        } else {
            Verdict::no_opinion("")
        }
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        Rules::default()
    }
}
