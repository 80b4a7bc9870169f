//! Defaults of `flowcontrol.apiserver.k8s.io/v1` (`pkg/apis/flowcontrol/v1/defaults.go` upstream):
//! FlowSchemas and PriorityLevelConfigurations.

use serde_json::{json, Value};

use super::{default, default_unset, field};

/// A FlowSchema's defaults: `matchingPrecedence` is a plain integer upstream, so 0 counts as
/// unset too.
pub fn flow_schema(obj: &mut Value) {
    field(obj, "spec")
        .into_iter()
        .for_each(|s| default_unset(s, "matchingPrecedence", json!(1000)));
}

/// A PriorityLevelConfiguration's defaults.
pub fn priority_level_configuration(obj: &mut Value) {
    if let Some(spec) = field(obj, "spec") {
        field(spec, "limited").into_iter().for_each(limited_priority_level);
        field(spec, "exempt").into_iter().for_each(exempt_priority_level);
    }
}

/// A limited priority level: 30 nominal shares (an explicit 0 is kept: the field is a pointer
/// in v1), nothing lent, and the queuing parameters when it queues.
fn limited_priority_level(limited: &mut Value) {
    default(limited, "nominalConcurrencyShares", json!(30));
    default(limited, "lendablePercent", json!(0));
    if let Some(queuing) = field(limited, "limitResponse").and_then(|r| field(r, "queuing")) {
        default_unset(queuing, "handSize", json!(8));
        default_unset(queuing, "queues", json!(64));
        default_unset(queuing, "queueLengthLimit", json!(50));
    }
}

/// The exempt priority level: no nominal shares and nothing lent.
fn exempt_priority_level(exempt: &mut Value) {
    default(exempt, "nominalConcurrencyShares", json!(0));
    default(exempt, "lendablePercent", json!(0));
}

#[cfg(test)]
mod tests {
    use super::super::test_support::defaulted;
    use super::*;

    const FLOW: &str = "flowcontrol.apiserver.k8s.io";

    #[test]
    fn flow_schemas_get_a_matching_precedence() {
        let schema = |spec: Value| json!({"metadata": {"name": "f"}, "spec": spec});
        let plc = json!({"priorityLevelConfiguration": {"name": "global-default"}});
        let mut expected = plc.clone();
        expected["matchingPrecedence"] = json!(1000);
        assert_eq!(defaulted(FLOW, "flowschemas", schema(plc.clone())), schema(expected.clone()));
        let mut zero = plc.clone();
        zero["matchingPrecedence"] = json!(0);
        assert_eq!(defaulted(FLOW, "flowschemas", schema(zero)), schema(expected));
        let mut set = plc;
        set["matchingPrecedence"] = json!(500);
        assert_eq!(defaulted(FLOW, "flowschemas", schema(set.clone())), schema(set));
        let no_spec = json!({"metadata": {"name": "f"}});
        assert_eq!(defaulted(FLOW, "flowschemas", no_spec.clone()), no_spec);
    }

    #[test]
    fn limited_priority_levels_get_shares_and_queuing() {
        let plc = json!({"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {
            "limitResponse": {"type": "Queue", "queuing": {"queues": 0}}
        }}});
        assert_eq!(
            defaulted(FLOW, "prioritylevelconfigurations", plc),
            json!({"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {
                "limitResponse": {"type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}},
                "nominalConcurrencyShares": 30,
                "lendablePercent": 0
            }}})
        );
        // Rejecting adds no queuing; an explicit 0 share is kept (a pointer in v1).
        let reject = json!({"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 0,
            "lendablePercent": 50,
            "borrowingLimitPercent": 10,
            "limitResponse": {"type": "Reject"}
        }}});
        assert_eq!(defaulted(FLOW, "prioritylevelconfigurations", reject.clone()), reject);
    }

    #[test]
    fn exempt_priority_levels_get_zero_shares() {
        let plc = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}});
        assert_eq!(
            defaulted(FLOW, "prioritylevelconfigurations", plc),
            json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {
                "nominalConcurrencyShares": 0,
                "lendablePercent": 0
            }}})
        );
        // `exempt` is not made up when the client leaves it out.
        let bare = json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt"}});
        assert_eq!(defaulted(FLOW, "prioritylevelconfigurations", bare.clone()), bare);
    }
}
