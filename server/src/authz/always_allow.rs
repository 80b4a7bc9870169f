//! `--authorization-mode=AlwaysAllow`: every request is allowed, anonymous ones too.

use super::rules::ALL;
use super::{Attributes, Authorizer, NonResourceRule, ResourceRule, Rules, Verdict};
use crate::auth::UserInfo;

/// Allows everything; lists `*` for everything.
pub struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize(&self, _a: &Attributes<'_>) -> Verdict {
        Verdict::allow()
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        Rules {
            resource_rules: vec![ResourceRule::new(&[ALL], &[ALL], &[ALL])],
            non_resource_rules: vec![NonResourceRule::new(&[ALL], &[ALL])],
            incomplete: false,
            evaluation_error: None,
        }
    }
}
