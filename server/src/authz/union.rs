//! The chain of authorizers kube-apiserver builds from `--authorization-mode` (upstream's
//! `union` authorizer and rule resolver): each is asked in order, the first `Allow` or
//! `Deny` decides, and when none has an opinion the answer is `NoOpinion` with every
//! reason given (which refuses the request). Rules are the concatenation of every member's.

use super::{Attributes, Authorizer, Decision, Rules, Verdict};
use crate::auth::UserInfo;

/// Several authorizers asked in order.
pub struct Union {
    members: Vec<Box<dyn Authorizer>>,
}

impl Union {
    pub fn new(members: Vec<Box<dyn Authorizer>>) -> Union {
        Union { members }
    }
}

/// Upstream's aggregate of several errors: one as it is, more as `[a, b]`.
fn aggregate(errors: Vec<String>) -> Option<String> {
    match errors.len() {
        0 => None,
        1 => errors.into_iter().next(),
        _ => Some(format!("[{}]", errors.join(", "))),
    }
}

impl Authorizer for Union {
    fn authorize(&self, a: &Attributes<'_>) -> Verdict {
        let mut reasons = Vec::new();
        let mut errors = Vec::new();
        for member in &self.members {
            let verdict = member.authorize(a);
            if verdict.decision != Decision::NoOpinion {
                return verdict;
            }
            if !verdict.reason.is_empty() {
                reasons.push(verdict.reason);
            }
            errors.extend(verdict.evaluation_error);
        }
        Verdict {
            decision: Decision::NoOpinion,
            reason: reasons.join("\n"),
            evaluation_error: aggregate(errors),
        }
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let mut all = Rules::default();
        let mut errors = Vec::new();
        for member in &self.members {
            let rules = member.rules_for(user, namespace);
            all.resource_rules.extend(rules.resource_rules);
            all.non_resource_rules.extend(rules.non_resource_rules);
            all.incomplete |= rules.incomplete;
            errors.extend(rules.evaluation_error);
        }
        all.evaluation_error = aggregate(errors);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::{NonResourceRule, ResourceRule};

    /// Answers `decision` with `reason`, lists one rule named after itself, and counts
    /// how often it was asked.
    struct Fixed {
        decision: Decision,
        reason: &'static str,
        error: Option<&'static str>,
        asked: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Authorizer for Fixed {
        fn authorize(&self, _a: &Attributes<'_>) -> Verdict {
            self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Verdict {
                decision: self.decision,
                reason: self.reason.to_string(),
                evaluation_error: self.error.map(String::from),
            }
        }

        fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
            Rules {
                resource_rules: vec![ResourceRule::new(&["get"], &[""], &[self.reason])],
                non_resource_rules: vec![NonResourceRule::new(&["get"], &["/x"])],
                incomplete: self.error.is_some(),
                evaluation_error: self.error.map(String::from),
            }
        }
    }

    type Counter = std::sync::Arc<std::sync::atomic::AtomicUsize>;

    fn chain(members: &[(Decision, &'static str, Option<&'static str>)]) -> (Union, Vec<Counter>) {
        let counters: Vec<Counter> = members.iter().map(|_| Counter::default()).collect();
        let union = Union::new(
            members
                .iter()
                .zip(&counters)
                .map(|(&(decision, reason, error), asked)| {
                    Box::new(Fixed { decision, reason, error, asked: asked.clone() })
                        as Box<dyn Authorizer>
                })
                .collect(),
        );
        (union, counters)
    }

    fn asked(counters: &[Counter]) -> Vec<usize> {
        counters.iter().map(|c| c.load(std::sync::atomic::Ordering::SeqCst)).collect()
    }

    #[test]
    fn the_first_allow_or_deny_decides_and_later_members_are_not_asked() {
        use Decision::*;
        let user = UserInfo::anonymous();
        let a = Attributes::non_resource(&user, "get", "/healthz");
        let (union, counters) =
            chain(&[(NoOpinion, "a", None), (Allow, "b", None), (Deny, "c", None)]);
        assert_eq!(
            union.authorize(&a),
            Verdict { decision: Allow, reason: "b".into(), evaluation_error: None }
        );
        assert_eq!(asked(&counters), [1, 1, 0]);
        let (union, counters) = chain(&[(Deny, "a", None), (Allow, "b", None)]);
        assert_eq!(union.authorize(&a).decision, Deny);
        assert_eq!(asked(&counters), [1, 0]);
    }

    #[test]
    fn without_an_opinion_every_reason_and_error_is_kept() {
        use Decision::*;
        let user = UserInfo::anonymous();
        let a = Attributes::non_resource(&user, "get", "/healthz");
        let (union, counters) = chain(&[
            (NoOpinion, "a", Some("e1")),
            (NoOpinion, "", None),
            (NoOpinion, "c", Some("e2")),
        ]);
        let verdict = union.authorize(&a);
        assert_eq!(verdict.decision, NoOpinion);
        assert_eq!(verdict.reason, "a\nc");
        assert_eq!(verdict.evaluation_error.as_deref(), Some("[e1, e2]"));
        assert_eq!(asked(&counters), [1, 1, 1]);
        assert_eq!(Union::new(vec![]).authorize(&a), Verdict::no_opinion(""));
    }

    #[test]
    fn rules_are_every_members_in_order() {
        use Decision::*;
        let user = UserInfo::anonymous();
        let (union, _) = chain(&[(NoOpinion, "a", None), (Allow, "b", Some("broken"))]);
        let rules = union.rules_for(&user, "default");
        let resources: Vec<&str> =
            rules.resource_rules.iter().map(|r| r.resources[0].as_str()).collect();
        assert_eq!(resources, ["a", "b"]);
        assert_eq!(rules.non_resource_rules.len(), 2);
        assert!(rules.incomplete);
        assert_eq!(rules.evaluation_error.as_deref(), Some("broken"));
    }
}
