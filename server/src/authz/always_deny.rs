//! `--authorization-mode=AlwaysDeny`: no opinion on anything, with upstream's reason, so
//! that a request no later mode allows is refused (and `system:masters`, allowed before any
//! mode is asked, still gets in).

use super::{Attributes, Authorizer, Rules, Verdict};
use crate::auth::UserInfo;

/// upstream's reason, shown after the refusal message.
pub const REASON: &str = "Everything is forbidden.";

/// Allows nothing; lists nothing.
pub struct AlwaysDeny;

impl Authorizer for AlwaysDeny {
    fn authorize(&self, _a: &Attributes<'_>) -> Verdict {
        Verdict::no_opinion(REASON)
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        Rules::default()
    }
}
