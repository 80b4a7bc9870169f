//! `--authorization-mode=AllowAuthenticated`, rkube's default until RBAC and Node arrive
//! (issue 18), then to be dropped: every authenticated user may do anything; the anonymous
//! user may only read the server's public endpoints (health, version, metrics, OpenAPI),
//! nothing under `/api` and `/apis`. This is not an upstream mode: kube-apiserver's
//! clusters run `Node,RBAC`, where the bootstrap policy grants anonymous users the health and
//! version endpoints only.
//!
//! It decides from the rules it lists, so its decisions and `SelfSubjectRulesReview` agree.

use super::rules::ALL;
use super::{Attributes, Authorizer, NonResourceRule, ResourceRule, Rules, Verdict};
use crate::auth::UserInfo;

/// What the anonymous user may reach: the paths the server serves outside `/api` and
/// `/apis`.
pub const PUBLIC_PATHS: &[&str] = &[
    "/healthz",
    "/livez",
    "/metrics",
    "/openapi/v2",
    "/openapi/v3",
    "/openapi/v3/*",
    "/readyz",
    "/version",
];

/// The interim default (see the module doc).
pub struct AllowAuthenticated {
    authenticated: Rules,
    anonymous: Rules,
}

impl Default for AllowAuthenticated {
    fn default() -> Self {
        AllowAuthenticated {
            authenticated: Rules {
                resource_rules: vec![ResourceRule::new(&[ALL], &[ALL], &[ALL])],
                non_resource_rules: vec![NonResourceRule::new(&[ALL], &[ALL])],
                incomplete: false,
                evaluation_error: None,
            },
            anonymous: Rules {
                non_resource_rules: vec![NonResourceRule::new(&[ALL], PUBLIC_PATHS)],
                ..Rules::default()
            },
        }
    }
}

/// Whether `user` came with credentials: not the anonymous user, nor in its group (an
/// access review may name either).
fn is_authenticated(user: &UserInfo) -> bool {
    !user.name.is_empty() && !user.is_anonymous() && !user.in_group("system:unauthenticated")
}

impl AllowAuthenticated {
    fn rules(&self, user: &UserInfo) -> &Rules {
        if is_authenticated(user) {
            &self.authenticated
        } else {
            &self.anonymous
        }
    }
}

impl Authorizer for AllowAuthenticated {
    fn authorize(&self, a: &Attributes<'_>) -> Verdict {
        if self.rules(a.user).allow(a) {
            Verdict::allow()
        } else {
            Verdict::no_opinion("")
        }
    }

    fn rules_for(&self, user: &UserInfo, _namespace: &str) -> Rules {
        self.rules(user).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::Decision;

    #[test]
    fn authenticated_users_may_do_anything_anonymous_ones_only_public_paths() {
        let authz = AllowAuthenticated::default();
        let jane = UserInfo::authenticated("jane".into(), vec![]);
        let anonymous = UserInfo::anonymous();
        let decide = |a: Attributes<'_>| authz.authorize(&a).decision;
        let pods = |user| Attributes {
            verb: "list".into(),
            resource: "pods",
            namespace: "default",
            resource_request: true,
            ..Attributes::non_resource(user, "", "/api/v1/namespaces/default/pods")
        };
        assert_eq!(decide(pods(&jane)), Decision::Allow);
        assert_eq!(decide(pods(&anonymous)), Decision::NoOpinion);
        assert_eq!(decide(Attributes::non_resource(&jane, "get", "/api")), Decision::Allow);
        assert_eq!(
            decide(Attributes::non_resource(&anonymous, "get", "/api")),
            Decision::NoOpinion
        );
        assert_eq!(
            decide(Attributes::non_resource(&anonymous, "get", "/apis/apps")),
            Decision::NoOpinion
        );
        for path in [
            "/healthz",
            "/livez",
            "/readyz",
            "/version",
            "/metrics",
            "/openapi/v2",
            "/openapi/v3/api/v1",
        ] {
            assert_eq!(
                decide(Attributes::non_resource(&anonymous, "get", path)),
                Decision::Allow,
                "{path}"
            );
        }
        // The verdict carries no reason: the refusal reads as today's.
        assert_eq!(authz.authorize(&pods(&anonymous)).reason, "");
        assert!(authz.rules_for(&anonymous, "default").resource_rules.is_empty());
        assert_eq!(authz.rules_for(&jane, "default").resource_rules.len(), 1);
    }
}
