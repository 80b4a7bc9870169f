//! `hostPathVolumes` (baseline): no hostPath volumes. The restricted level's volume-type
//! check replaces it.

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{join_quote, pluralize, Pod};

pub const ID: &str = "hostPathVolumes";

pub const CHECK: Check = Check {
    id: ID,
    level: Level::Baseline,
    versions: &[Versioned { since: 0, check: v1_0, overrides: &[] }],
};

fn v1_0(pod: &Pod) -> Option<Violation> {
    let volumes: Vec<&str> = pod
        .spec
        .volumes
        .iter()
        .flatten()
        .filter(|v| v.host_path.is_some())
        .map(|v| v.name.as_str())
        .collect();
    (!volumes.is_empty()).then(|| {
        Violation::new(
            "hostPath volumes",
            format!("{} {}", pluralize("volume", "volumes", volumes.len()), join_quote(&volumes)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::checks::{pod, said};
    use serde_json::json;

    #[test]
    fn no_host_path_volumes() {
        let p = pod(json!({"spec": {"volumes": [
            {"name": "a", "hostPath": {"path": "/a"}},
            {"name": "b", "emptyDir": {}},
            {"name": "c", "hostPath": {"path": "/c", "type": ""}},
        ]}}));
        assert_eq!(said(v1_0(&p)).as_deref(), Some("hostPath volumes (volumes \"a\", \"c\")"));
        let one = pod(json!({"spec": {"volumes": [{"name": "a", "hostPath": {"path": "/a"}}]}}));
        assert_eq!(said(v1_0(&one)).as_deref(), Some("hostPath volumes (volume \"a\")"));
        assert_eq!(v1_0(&pod(json!({"spec": {"volumes": [{"name": "b", "emptyDir": {}}]}}))), None);
    }
}
