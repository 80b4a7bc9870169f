//! PodSecurity as a user meets it through stock kubectl: a namespace labelled
//! `pod-security.kubernetes.io/enforce=restricted` refuses a privileged pod with upstream's
//! message and takes a compliant one; `warn=baseline` creates the pod and kubectl prints
//! upstream's warning; a Deployment in a restricted namespace is created with a warning while
//! its pods are refused (the ReplicaSet's events say why); labelling a namespace whose pods
//! would violate the new level warns about them, and a label that does not parse is refused.
//! The expected texts are upstream's (kube-apiserver v1.33 with pod-security-admission).

use std::time::Duration;

use rkube_conformance::cluster::{stderr_of, stdout_of, RkubeServer};

const PRIVILEGED: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: priv}
spec:
  containers:
  - {name: c, image: "busybox:1.36", securityContext: {privileged: true}}
"#;

const COMPLIANT: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: ok}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: c
    image: "busybox:1.36"
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: ["ALL"]}}
"#;

/// What the restricted level finds in one privileged container named `c` (upstream's order
/// and wording).
fn restricted_findings(c: &str) -> String {
    format!(
        "allowPrivilegeEscalation != false (container \"{c}\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"{c}\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"{c}\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"{c}\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    )
}

const PRIVILEGED_FINDING: &str =
    "privileged (container \"c\" must not set securityContext.privileged=true)";

fn namespace(s: &RkubeServer, name: &str, labels: &[&str]) {
    s.ok(&["create", "namespace", name]);
    if !labels.is_empty() {
        let mut args = vec!["label", "namespace", name];
        args.extend_from_slice(labels);
        s.ok(&args);
    }
}

/// `kubectl create -f -` in `ns`: whether it succeeded, stdout, stderr.
fn create(s: &RkubeServer, ns: &str, manifest: &str) -> (bool, String, String) {
    let out = s.kubectl_with(&s.kubectl, &["create", "-n", ns, "-f", "-"], Some(manifest));
    (out.status.success(), stdout_of(&out), stderr_of(&out))
}

#[test]
fn a_restricted_namespace_refuses_a_privileged_pod_with_upstreams_message() {
    let s = RkubeServer::start();
    namespace(&s, "strict", &["pod-security.kubernetes.io/enforce=restricted"]);

    let (created, _, err) = create(&s, "strict", PRIVILEGED);
    assert!(!created);
    assert_eq!(
        err.trim_end(),
        format!(
            "Error from server (Forbidden): error when creating \"STDIN\": pods \"priv\" is forbidden: violates PodSecurity \"restricted:latest\": {PRIVILEGED_FINDING}, {}",
            restricted_findings("c")
        )
    );
    let err = s.fails(&["get", "pod", "priv", "-n", "strict"]);
    assert!(err.contains("NotFound"), "{err}");

    // A compliant pod goes in without a word.
    let (created, out, err) = create(&s, "strict", COMPLIANT);
    assert!(created, "{err}");
    assert_eq!((out.trim(), err.as_str()), ("pod/ok created", ""));

    // kubectl run with --privileged: the same refusal, at the baseline level too.
    namespace(&s, "base", &["pod-security.kubernetes.io/enforce=baseline"]);
    let err = s.fails(&["run", "p", "-n", "base", "--image=busybox:1.36", "--privileged"]);
    assert_eq!(
        err.trim_end(),
        "Error from server (Forbidden): pods \"p\" is forbidden: violates PodSecurity \"baseline:latest\": privileged (container \"p\" must not set securityContext.privileged=true)"
    );
}

#[test]
fn warn_mode_creates_the_pod_and_kubectl_prints_the_warning() {
    let s = RkubeServer::start();
    namespace(&s, "warned", &["pod-security.kubernetes.io/warn=baseline"]);
    let (created, out, err) = create(&s, "warned", PRIVILEGED);
    assert!(created, "{err}");
    assert_eq!(out.trim(), "pod/priv created");
    assert_eq!(
        err.trim_end(),
        format!("Warning: would violate PodSecurity \"baseline:latest\": {PRIVILEGED_FINDING}")
    );
    assert_eq!(s.ok(&["get", "pod", "priv", "-n", "warned", "-o", "name"]).trim(), "pod/priv");
    // Unlabelled namespaces are privileged: no warning at all.
    let (created, _, err) = create(&s, "default", PRIVILEGED);
    assert!(created && err.is_empty(), "{err}");
}

#[test]
fn a_deployment_in_a_restricted_namespace_is_created_with_a_warning_and_its_pods_refused() {
    let s = RkubeServer::start();
    namespace(&s, "strict", &["pod-security.kubernetes.io/enforce=restricted"]);
    let out = s.kubectl(&["create", "deployment", "web", "-n", "strict", "--image=busybox:1.36"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out).trim(), "deployment.apps/web created");
    assert_eq!(
        stderr_of(&out).trim_end(),
        format!(
            "Warning: would violate PodSecurity \"restricted:latest\": {}",
            restricted_findings("busybox")
        )
    );
    // Its ReplicaSet's pods are refused at enforce, each named by its generated name.
    let path = "jsonpath={range .items[*]}{.message}{\"\\n\"}{end}";
    let seen = s.wait_until("the ReplicaSet's refused pods", Duration::from_secs(60), || {
        let out = s.kubectl(&[
            "get",
            "events",
            "-n",
            "strict",
            "--field-selector",
            "reason=FailedCreate",
            "-o",
            path,
        ]);
        let text = stdout_of(&out);
        (text.contains("violates PodSecurity"), text)
    });
    let line = seen.lines().find(|l| l.contains("violates PodSecurity")).unwrap_or_default();
    let generated = line
        .strip_prefix("Error creating: pods \"web-")
        .and_then(|rest| rest.split_once('"'))
        .map(|(suffix, rest)| (suffix.to_string(), rest.to_string()));
    let (suffix, rest) = generated.unwrap_or_else(|| panic!("{line}"));
    assert!(suffix.contains('-') && !suffix.ends_with('-'), "{line}");
    assert_eq!(
        rest,
        format!(
            " is forbidden: violates PodSecurity \"restricted:latest\": {}",
            restricted_findings("busybox")
        )
    );
    let pods = s.ok(&["get", "pods", "-n", "strict", "-o", "name"]);
    assert_eq!(pods.trim(), "");
}

#[test]
fn labelling_a_namespace_with_violating_pods_warns_and_bad_labels_are_refused() {
    let s = RkubeServer::start();
    namespace(&s, "apps", &[]);
    for name in ["a", "b"] {
        let pod = PRIVILEGED.replace("name: priv", &format!("name: {name}"));
        create(&s, "apps", &pod);
    }
    let (created, _, _) = create(&s, "apps", &COMPLIANT.replace("name: ok", "name: z"));
    assert!(created);
    let out =
        s.kubectl(&["label", "namespace", "apps", "pod-security.kubernetes.io/enforce=baseline"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_eq!(stdout_of(&out).trim(), "namespace/apps labeled");
    assert_eq!(
        stderr_of(&out).trim_end(),
        "Warning: existing pods in namespace \"apps\" violate the new PodSecurity enforce level \"baseline:latest\"\nWarning: a (and 1 other pod): privileged"
    );
    // Stricter still: each distinct set of findings, the first pod's name, a count.
    let out = s.kubectl(&[
        "label",
        "--overwrite",
        "namespace",
        "apps",
        "pod-security.kubernetes.io/enforce=restricted",
    ]);
    assert_eq!(
        stderr_of(&out).trim_end(),
        "Warning: existing pods in namespace \"apps\" violate the new PodSecurity enforce level \"restricted:latest\"\nWarning: a (and 1 other pod): privileged, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"
    );
    // Pods already there keep being updated where the standards do not look (metadata), not
    // where they do (an image).
    s.ok(&["label", "pod", "a", "-n", "apps", "team=x"]);
    let err = s.fails(&["set", "image", "pod/a", "-n", "apps", "c=busybox:1.37"]);
    assert!(
        err.contains(&format!(
            "pods \"a\" is forbidden: violates PodSecurity \"restricted:latest\": {PRIVILEGED_FINDING}, {}",
            restricted_findings("c")
        )),
        "{err}"
    );
    // Relaxing says nothing.
    let out = s.kubectl(&[
        "label",
        "--overwrite",
        "namespace",
        "apps",
        "pod-security.kubernetes.io/enforce=privileged",
    ]);
    assert!(out.status.success() && stderr_of(&out).is_empty(), "{}", stderr_of(&out));

    let err = s.fails(&["label", "namespace", "apps", "pod-security.kubernetes.io/warn=strict"]);
    assert_eq!(
        err.trim_end(),
        "The Namespace \"apps\" is invalid: metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: \"strict\": must be one of privileged, baseline, restricted"
    );
    let bad = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: bad\n  labels:\n    pod-security.kubernetes.io/enforce-version: v1\n";
    let err = s.fails_stdin(&["create", "-f", "-"], bad);
    assert_eq!(
        err.trim_end(),
        "The Namespace \"bad\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: \"v1\": must be \"latest\" or \"v1.x\""
    );
}
