//! `windowsHostProcess` (baseline): neither the pod nor a container sets
//! `securityContext.windowsOptions.hostProcess=true`.

use crate::pod_security::evaluator::{Check, Versioned, Violation};
use crate::pod_security::level::Level;
use crate::pod_security::pod::{containers_named, Pod};

pub const CHECK: Check = Check {
    id: "windowsHostProcess",
    level: Level::Baseline,
    versions: &[Versioned { since: 0, check: v1_0, overrides: &[] }],
};

fn v1_0(pod: &Pod) -> Option<Violation> {
    let host_process = |options: Option<
        &k8s_openapi::api::core::v1::WindowsSecurityContextOptions,
    >| { options.and_then(|o| o.host_process) == Some(true) };
    let containers =
        pod.containers_where(|sc| host_process(sc.and_then(|sc| sc.windows_options.as_ref())));
    let mut setters = Vec::new();
    if host_process(pod.security_context().and_then(|sc| sc.windows_options.as_ref())) {
        setters.push("pod".to_string());
    }
    if !containers.is_empty() {
        setters.push(containers_named(&containers));
    }
    (!setters.is_empty()).then(|| {
        Violation::new(
            "hostProcess",
            format!(
                "{} must not set securityContext.windowsOptions.hostProcess=true",
                setters.join(" and ")
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pod_security::checks::{pod, said};
    use serde_json::json;

    #[test]
    fn no_host_process() {
        let p = pod(json!({"spec": {
        "securityContext": {"windowsOptions": {"hostProcess": true}},
        "containers": [
            {"name": "a", "securityContext": {"windowsOptions": {"hostProcess": true}}},
            {"name": "b", "securityContext": {"windowsOptions": {"hostProcess": false}}},
        ]}}));
        assert_eq!(
            said(v1_0(&p)).as_deref(),
            Some("hostProcess (pod and container \"a\" must not set securityContext.windowsOptions.hostProcess=true)")
        );
        let one =
            pod(json!({"spec": {"securityContext": {"windowsOptions": {"hostProcess": true}}}}));
        assert_eq!(
            said(v1_0(&one)).as_deref(),
            Some("hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)")
        );
        assert_eq!(v1_0(&pod(json!({"spec": {"containers": [{"name": "b"}]}}))), None);
    }
}
