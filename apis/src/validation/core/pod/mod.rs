//! Pods and pod templates: the pod spec (volumes, containers and their ports, env, mounts,
//! resources, probes and hooks, and the pod-level scheduling, DNS and security fields) and what
//! a pod update may change, with upstream's messages, field paths and error order.
//!
//! Upstream validates after defaulting, and so does rkube (`crate::defaults`, on every
//! write), but it does not fill everything upstream fills (a fieldRef's apiVersion, a projected
//! token's expiry, a host-network pod's hostPort): a field upstream would have defaulted is
//! read as its default when unset, never reported as missing.

use std::collections::HashSet;

use serde_json::Value;

use crate::gofmt::{go_pointer, go_quote, go_string_slice};
use crate::quantity::Quantity;
use crate::validation::net::ip_legacy;
use crate::validation::values::{
    config_key_problems, container_resource_name, is_native_resource, items, label_map,
    no_backsteps, non_negative, one_of, one_of_or_empty, port_name, port_name_problems, range_msg,
    str_of, HOST_PATH_TYPES,
};
use crate::validation::{
    label_value_problems, name_problems, qualified_name_problems, FieldError, NameRule,
};

mod container;
mod ephemeral;
mod scheduling;
mod security;
mod update;
mod volume;

use container::*;
use scheduling::*;
use security::*;
use volume::*;

pub use ephemeral::ephemeral_containers_update;
pub use update::{pod_create, pod_update};

/// The pod spec at `path` (`spec` for a pod, `...template.spec` for a template). Errors come
/// in upstream's order: volumes, containers, init containers, then the pod-level fields.
pub fn pod_spec(spec: &Value, path: &str) -> Vec<FieldError> {
    // Only a Pod itself is validated at `spec`; templates get a few looser checks upstream.
    let is_pod = path == "spec";
    let mut errors = Vec::new();
    // Upstream defaults the grace period to 30s before validating.
    let grace = spec["terminationGracePeriodSeconds"].as_i64().or(Some(30));
    let volumes = volumes(&spec["volumes"], &format!("{path}.volumes"), &mut errors);
    let ctx = Ctx { volumes: &volumes, host_users: spec["hostUsers"] != false };

    // Regular containers: names unique among themselves; probes and hooks allowed.
    let containers = spec["containers"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut names = HashSet::new();
    if containers.is_empty() {
        errors.push(FieldError::required(format!("{path}.containers"), ""));
    }
    for (i, c) in containers.iter().enumerate() {
        let at = format!("{path}.containers[{i}]");
        container_common(c, &at, &ctx, &mut errors);
        let name = str_of(&c["name"]);
        if !names.insert(name) {
            errors.push(FieldError::duplicate(format!("{at}.name"), &c["name"]));
        }
        probes_and_hooks(c, &at, grace, &mut errors);
        if !c["restartPolicy"].is_null() {
            errors.push(FieldError::forbidden(
                format!("{at}.restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    host_port_conflicts(containers, &format!("{path}.containers"), &mut errors);

    // Init containers: names unique across both lists; only sidecars (restartPolicy Always)
    // may have probes and hooks; host ports conflict only within one (they run one by one).
    let inits = spec["initContainers"].as_array().map(Vec::as_slice).unwrap_or_default();
    for (i, c) in inits.iter().enumerate() {
        let at = format!("{path}.initContainers[{i}]");
        container_common(c, &at, &ctx, &mut errors);
        let policy = &c["restartPolicy"];
        if !policy.is_null() && policy != "Always" {
            errors.push(FieldError::unsupported(
                format!("{at}.restartPolicy"),
                policy,
                &["Always"],
            ));
        }
        let name = str_of(&c["name"]);
        if names.contains(name) {
            errors.push(FieldError::duplicate(format!("{at}.name"), &c["name"]));
        } else if !name.is_empty() {
            names.insert(name);
        }
        host_port_conflicts(
            std::slice::from_ref(c),
            &format!("{path}.initContainers"),
            &mut errors,
        );
        if policy == "Always" {
            probes_and_hooks(c, &at, grace, &mut errors);
        } else {
            for field in ["lifecycle", "livenessProbe", "readinessProbe", "startupProbe"] {
                if !c[field].is_null() {
                    errors.push(FieldError::forbidden(format!("{at}.{field}"), NOT_FOR_INIT));
                }
            }
        }
    }

    ephemeral::ephemeral_containers(spec, path, &ctx, &names, &mut errors);

    // With hostNetwork a set hostPort must equal containerPort (an unset one is defaulted to it).
    if spec["hostNetwork"] == true {
        for (i, c) in containers.iter().enumerate() {
            for (j, p) in c["ports"].as_array().into_iter().flatten().enumerate() {
                let host = p["hostPort"].as_i64().unwrap_or(0);
                if host != 0 && host != p["containerPort"].as_i64().unwrap_or(0) {
                    errors.push(FieldError::invalid(
                        format!("{path}.containers[{i}].ports[{j}].hostPort"),
                        &p["hostPort"],
                        "must match `containerPort` when `hostNetwork` is true",
                    ));
                }
            }
        }
    }
    errors.extend(one_of_or_empty(
        &format!("{path}.restartPolicy"),
        &spec["restartPolicy"],
        &["Always", "OnFailure", "Never"],
    ));
    errors.extend(one_of_or_empty(
        &format!("{path}.dnsPolicy"),
        &spec["dnsPolicy"],
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
    ));
    errors.extend(label_map(&format!("{path}.nodeSelector"), &spec["nodeSelector"]));
    pod_security_context(spec, &format!("{path}.securityContext"), &mut errors);
    affinity(spec, path, &mut errors);
    dns_config(spec, &format!("{path}.dnsConfig"), &mut errors);
    topology_spread_constraints(spec, path, &mut errors);
    for (field, rule) in
        [("serviceAccountName", NameRule::Subdomain), ("nodeName", NameRule::Subdomain)]
    {
        name_field(&spec[field], &format!("{path}.{field}"), rule, &mut errors);
    }
    if let Some(deadline) = spec["activeDeadlineSeconds"].as_i64() {
        if !(1..=MAX_ID).contains(&deadline) {
            errors.push(FieldError::invalid(
                format!("{path}.activeDeadlineSeconds"),
                &spec["activeDeadlineSeconds"],
                &range_msg(1, MAX_ID),
            ));
        }
    }
    for field in ["hostname", "subdomain"] {
        name_field(&spec[field], &format!("{path}.{field}"), NameRule::Label, &mut errors);
    }
    tolerations(&spec["tolerations"], &format!("{path}.tolerations"), &mut errors);
    host_aliases(&spec["hostAliases"], &format!("{path}.hostAliases"), &mut errors);
    name_field(
        &spec["priorityClassName"],
        &format!("{path}.priorityClassName"),
        NameRule::Subdomain,
        &mut errors,
    );
    // A runtimeClassName that is set must be a valid name, even when empty.
    if let Some(class) = spec["runtimeClassName"].as_str() {
        for p in name_problems(class, NameRule::Subdomain) {
            errors.push(FieldError::invalid(
                format!("{path}.runtimeClassName"),
                &spec["runtimeClassName"],
                &p,
            ));
        }
    }
    errors.extend(one_of_or_empty(
        &format!("{path}.preemptionPolicy"),
        &spec["preemptionPolicy"],
        &["PreemptLowerPriority", "Never"],
    ));
    if !spec["os"].is_null() {
        match str_of(&spec["os"]["name"]) {
            "" => errors.push(FieldError::required(format!("{path}.os.name"), "cannot be empty")),
            "linux" | "windows" => {}
            _ => errors.push(FieldError::unsupported(
                format!("{path}.os"),
                &spec["os"]["name"],
                &["linux", "windows"],
            )),
        }
    }
    // Pods only (not templates): images without surrounding whitespace.
    if is_pod {
        for list in ["containers", "initContainers"] {
            for (i, c) in spec[list].as_array().into_iter().flatten().enumerate() {
                let image = str_of(&c["image"]);
                if image.trim() != image {
                    errors.push(FieldError::invalid(
                        format!("{path}.{list}[{i}].image"),
                        &c["image"],
                        "must not have leading or trailing whitespace",
                    ));
                }
            }
        }
    }
    errors
}

/// What a container's checks need from the rest of the pod.
struct Ctx<'a> {
    /// Names of the volumes that validated cleanly (upstream resolves mounts against these).
    volumes: &'a HashSet<String>,
    host_users: bool,
}

/// Upstream's limits on a pod's resolver configuration (from libc's).
const MAX_DNS_NAMESERVERS: usize = 3;
const MAX_DNS_SEARCHES: usize = 32;
const MAX_DNS_SEARCH_CHARS: usize = 2048;

const SUBDOMAIN_UNDERSCORE_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')";

/// Upstream's `IsDNS1123SubdomainWithUnderscore`: a subdomain whose labels may start with
/// one `_` and hold more inside.
fn subdomain_with_underscore_problems(name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if name.len() > 253 {
        problems.push("must be no more than 253 characters".to_string());
    }
    let label_ok = |l: &str| {
        let l = l.strip_prefix('_').unwrap_or(l).as_bytes();
        !l.is_empty()
            && l.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"-_".contains(c))
            && l[0].is_ascii_alphanumeric()
            && l[l.len() - 1].is_ascii_alphanumeric()
    };
    if !name.split('.').all(label_ok) {
        problems.push(SUBDOMAIN_UNDERSCORE_MSG.to_string());
    }
    problems
}

/// A `[]string` as `%#v` prints it.
fn go_strings(list: &[Value]) -> String {
    let strings: Vec<&str> = list.iter().map(str_of).collect();
    go_string_slice(Some(&strings))
}

/// `ValidateHostAliases`: each entry's IP (read as upstream's legacy IP fields are) and
/// hostnames (DNS subdomains).
fn host_aliases(list: &Value, at: &str, errors: &mut Vec<FieldError>) {
    for (i, alias) in items(list).iter().enumerate() {
        errors.extend(ip_legacy(&format!("{at}[{i}].ip"), str_of(&alias["ip"])));
        for (j, host) in items(&alias["hostnames"]).iter().enumerate() {
            for p in name_problems(str_of(host), NameRule::Subdomain) {
                errors.push(FieldError::invalid(
                    format!("{at}[{i}].hostnames[{j}]"),
                    &string(host),
                    &p,
                ));
            }
        }
    }
}

/// `dnsPolicy: None` needs a `dnsConfig` with a nameserver; limits on the config's lists,
/// nameservers that are IPs and searches that are domain names.
fn dns_config(spec: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let config = &spec["dnsConfig"];
    let nameservers = config["nameservers"].as_array().map(Vec::as_slice).unwrap_or_default();
    if spec["dnsPolicy"] == "None" {
        if config.is_null() {
            errors.push(FieldError::required(
                at,
                "must provide `dnsConfig` when `dnsPolicy` is None",
            ));
            return;
        }
        if nameservers.is_empty() {
            errors.push(FieldError::required(
                format!("{at}.nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            ));
            return;
        }
    }
    if config.is_null() {
        return;
    }
    if nameservers.len() > MAX_DNS_NAMESERVERS {
        errors.push(FieldError::invalid_shown(
            format!("{at}.nameservers"),
            &go_strings(nameservers),
            &format!("must not have more than {MAX_DNS_NAMESERVERS} nameservers"),
        ));
    }
    for (i, ns) in nameservers.iter().enumerate() {
        errors.extend(ip_legacy(&format!("{at}.nameservers[{i}]"), str_of(ns)));
    }
    let searches = items(&config["searches"]);
    if searches.len() > MAX_DNS_SEARCHES {
        errors.push(FieldError::invalid_shown(
            format!("{at}.searches"),
            &go_strings(searches),
            &format!("must not have more than {MAX_DNS_SEARCHES} search paths"),
        ));
    }
    // The list as the resolver sees it, one space between entries.
    let chars =
        searches.iter().map(|s| str_of(s).len()).sum::<usize>() + searches.len().saturating_sub(1);
    if chars > MAX_DNS_SEARCH_CHARS {
        errors.push(FieldError::invalid_shown(
            format!("{at}.searches"),
            &go_strings(searches),
            &format!(
                "must not have more than {MAX_DNS_SEARCH_CHARS} characters (including spaces) in the search list"
            ),
        ));
    }
    // RelaxedDNSSearchValidation (on by default in v1.33): `.` alone is allowed, and names
    // may have underscores; a trailing dot is not part of the name.
    for (i, search) in searches.iter().enumerate() {
        let search = str_of(search);
        if search != "." {
            let name = search.strip_suffix('.').unwrap_or(search);
            for p in subdomain_with_underscore_problems(name) {
                errors.push(FieldError::invalid(
                    format!("{at}.searches[{i}]"),
                    &Value::String(name.to_string()),
                    &p,
                ));
            }
        }
    }
    for (i, option) in config["options"].as_array().into_iter().flatten().enumerate() {
        if str_of(&option["name"]).is_empty() {
            errors.push(FieldError::required(format!("{at}.options[{i}]"), "must not be empty"));
        }
    }
}

/// Upstream's `ValidateTolerations` (pods, and RuntimeClasses' scheduling).
pub(crate) fn tolerations(list: &Value, at: &str, errors: &mut Vec<FieldError>) {
    for (i, t) in list.as_array().into_iter().flatten().enumerate() {
        let at = format!("{at}[{i}]");
        let key = str_of(&t["key"]);
        if !key.is_empty() {
            for p in qualified_name_problems(key) {
                errors.push(FieldError::invalid(format!("{at}.key"), &t["key"], &p));
            }
        }
        let operator = str_of(&t["operator"]);
        let effect = str_of(&t["effect"]);
        if key.is_empty() && operator != "Exists" {
            errors.push(FieldError::invalid(
                format!("{at}.operator"),
                &Value::String(operator.into()),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if !t["tolerationSeconds"].is_null() && effect != "NoExecute" {
            errors.push(FieldError::invalid(
                format!("{at}.effect"),
                &Value::String(effect.into()),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let value = Value::String(str_of(&t["value"]).into());
        match operator {
            "Equal" | "" => {
                let problems = label_value_problems(str_of(&value));
                if !problems.is_empty() {
                    errors.push(FieldError::invalid(
                        format!("{at}.operator"),
                        &value,
                        &problems.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !str_of(&value).is_empty() {
                    errors.push(FieldError::invalid_shown(
                        format!("{at}.operator"),
                        &go_toleration(t),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            _ => errors.push(FieldError::unsupported(
                format!("{at}.operator"),
                &t["operator"],
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute")
        {
            errors.push(FieldError::unsupported(
                format!("{at}.effect"),
                &t["effect"],
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
}

/// A `core.Toleration` as `%#v` prints it.
pub(crate) fn go_toleration(t: &Value) -> String {
    format!(
        "core.Toleration{{Key:{}, Operator:{}, Value:{}, Effect:{}, TolerationSeconds:{}}}",
        go_quote(str_of(&t["key"])),
        go_quote(str_of(&t["operator"])),
        go_quote(str_of(&t["value"])),
        go_quote(str_of(&t["effect"])),
        go_pointer("int64", &t["tolerationSeconds"])
    )
}

/// An optional name field: when set (non-empty), it follows `rule`.
fn name_field(value: &Value, at: &str, rule: NameRule, errors: &mut Vec<FieldError>) {
    let name = str_of(value);
    if !name.is_empty() {
        for p in name_problems(name, rule) {
            errors.push(FieldError::invalid(at, value, &p));
        }
    }
}

/// A string field as upstream shows it in a message: unset is `""`.
fn string(v: &Value) -> Value {
    Value::String(str_of(v).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(spec: Value) -> Vec<String> {
        pod_spec(&spec, "spec").iter().map(FieldError::line).collect()
    }

    /// A defaulted container with `extra` merged in.
    fn container(extra: Value) -> Value {
        let mut c = json!({"name": "app", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "resources": {}});
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    }

    /// A defaulted pod spec with one container (`extra` merged in) and `spec_extra`.
    fn pod(extra: Value, spec_extra: Value) -> Value {
        let mut spec = json!({"containers": [container(extra)], "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst", "securityContext": {},
            "schedulerName": "default-scheduler", "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority"});
        for (k, v) in spec_extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        spec
    }

    #[test]
    fn a_realistic_pod_is_valid() {
        let spec = pod(
            json!({
                "command": ["sh", "-c", "sleep 3600"],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                          {"name": "metrics", "containerPort": 9090, "hostPort": 9090, "protocol": "UDP"}],
                "env": [{"name": "MODE", "value": "prod"},
                        {"name": "my.dotted-Name", "value": "x"},
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                        {"name": "LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
                        {"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
                        {"name": "CFG", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "app.conf", "optional": true}}}],
                "envFrom": [{"configMapRef": {"name": "cfg"}, "prefix": "CFG_"}, {"secretRef": {"name": "db"}}],
                "volumeMounts": [{"name": "config", "mountPath": "/etc/app", "readOnly": true},
                                 {"name": "cache", "mountPath": "/cache", "subPath": "a/b"},
                                 {"name": "data", "mountPath": "/data"},
                                 {"name": "token", "mountPath": "/var/run/token"}],
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi", "nvidia.com/gpu": 1},
                              "limits": {"cpu": 1, "memory": "0.125Gi", "nvidia.com/gpu": "1"}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                    "initialDelaySeconds": 5, "timeoutSeconds": 1, "periodSeconds": 10,
                    "successThreshold": 1, "failureThreshold": 3},
                "readinessProbe": {"tcpSocket": {"port": 8080}, "timeoutSeconds": 1, "periodSeconds": 10,
                    "successThreshold": 2, "failureThreshold": 3},
                "startupProbe": {"exec": {"command": ["true"]}, "timeoutSeconds": 1, "periodSeconds": 10,
                    "successThreshold": 1, "failureThreshold": 30},
                "lifecycle": {"preStop": {"sleep": {"seconds": 5}},
                              "postStart": {"httpGet": {"path": "/", "port": 8080, "scheme": "HTTP"}}},
                "securityContext": {"runAsUser": 1000, "runAsNonRoot": true, "allowPrivilegeEscalation": false,
                    "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
            }),
            json!({
                "initContainers": [container(json!({"name": "init", "command": ["true"]})),
                    container(json!({"name": "sidecar", "restartPolicy": "Always",
                        "readinessProbe": {"grpc": {"port": 9000}, "successThreshold": 1}}))],
                "volumes": [{"name": "config", "configMap": {"name": "cfg", "defaultMode": 420,
                                "items": [{"key": "app.conf", "path": "app.conf"}]}},
                            {"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}},
                            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                            {"name": "token", "projected": {"sources": [
                                {"serviceAccountToken": {"path": "token"}},
                                {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}}],
                "nodeSelector": {"kubernetes.io/os": "linux"},
                "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
                                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                                {"operator": "Exists"}],
                "securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000, "supplementalGroups": [4000]},
                "serviceAccountName": "app",
                "hostname": "web-0",
                "subdomain": "web",
                "activeDeadlineSeconds": 600,
                "priorityClassName": "high-priority",
                "dnsConfig": {"options": [{"name": "ndots", "value": "2"}]}
            }),
        );
        assert_eq!(lines(spec), Vec::<String>::new());
    }

    #[test]
    fn fields_upstream_defaults_may_be_unset() {
        // Fields upstream fills in and rkube's defaulting may not: never reported.
        let spec = json!({"containers": [{"name": "a", "image": "i", "imagePullPolicy": "",
            "ports": [{"containerPort": 80}],
            "env": [{"name": "N", "valueFrom": {"fieldRef": {"apiVersion": "", "fieldPath": "metadata.name"}}}],
            "livenessProbe": {"httpGet": {"port": 80}, "successThreshold": 0, "periodSeconds": 0},
            "lifecycle": {"preStop": {"sleep": {"seconds": 10}}}}]});
        assert_eq!(lines(spec), Vec::<String>::new());
    }

    #[test]
    fn container_enums_and_required_fields() {
        let spec = pod(
            json!({"imagePullPolicy": "Sometimes", "terminationMessagePolicy": "Logs", "image": ""}),
            json!({"restartPolicy": "Sometimes", "dnsPolicy": "", "terminationGracePeriodSeconds": null}),
        );
        assert_eq!(
            lines(spec),
            [
                "spec.containers[0].image: Required value",
                "spec.containers[0].terminationMessagePolicy: Unsupported value: \"Logs\": supported values: \"File\", \"FallbackToLogsOnError\"",
                "spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            ]
        );
        assert_eq!(
            lines(pod(json!({}), json!({"containers": []}))),
            ["spec.containers: Required value"]
        );
        let padded = pod(json!({"image": " busybox"}), json!({}));
        assert_eq!(
            lines(padded.clone()),
            ["spec.containers[0].image: Invalid value: \" busybox\": must not have leading or trailing whitespace"]
        );
        // Templates keep upstream's looser rule.
        assert!(pod_spec(&padded, "spec.template.spec").is_empty());
    }

    #[test]
    fn container_names_are_unique_across_lists() {
        let spec = pod(
            json!({"name": "Web_1"}),
            json!({"initContainers": [container(json!({"name": "Web_1"}))]}),
        );
        assert_eq!(
            lines(spec),
            [
                format!(
                    "spec.containers[0].name: Invalid value: \"Web_1\": {}",
                    crate::validation::meta::LABEL_MSG
                ),
                format!(
                    "spec.initContainers[0].name: Invalid value: \"Web_1\": {}",
                    crate::validation::meta::LABEL_MSG
                ),
                "spec.initContainers[0].name: Duplicate value: \"Web_1\"".to_string(),
            ]
        );
    }

    #[test]
    fn ports() {
        let spec = pod(
            json!({"ports": [
                {"name": "http", "containerPort": 80, "protocol": "TCP"},
                {"name": "http", "containerPort": 70000, "protocol": "XTP"},
                {"name": "Bad_Name", "protocol": "TCP", "hostPort": 80},
                {"containerPort": 81, "protocol": "TCP", "hostPort": 80}]}),
            json!({}),
        );
        assert_eq!(
            lines(spec),
            [
                "spec.containers[0].ports[1].name: Duplicate value: \"http\"",
                "spec.containers[0].ports[1].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].ports[1].protocol: Unsupported value: \"XTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.containers[0].ports[2].name: Invalid value: \"Bad_Name\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "spec.containers[0].ports[2].containerPort: Required value",
                "spec.containers[0].ports[3].hostPort: Duplicate value: \"TCP//80\"",
            ]
        );
        let host = pod(
            json!({"ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"},
                             {"containerPort": 81, "protocol": "TCP"}]}),
            json!({"hostNetwork": true}),
        );
        assert_eq!(
            lines(host),
            ["spec.containers[0].ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` is true"]
        );
    }

    #[test]
    fn env_and_env_from() {
        let spec = pod(
            json!({"env": [
                {"name": ""},
                {"name": "A=B"},
                {"name": "X", "valueFrom": {}},
                {"name": "Y", "value": "v", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "Z", "valueFrom": {"secretKeyRef": {"key": ""}, "configMapKeyRef": {"name": "c", "key": "k"}}},
                {"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}},
                {"name": "G", "valueFrom": {"fieldRef": {"fieldPath": "spec.nope"}}},
                {"name": "R", "valueFrom": {"resourceFieldRef": {"resource": "limits.gpu"}}}],
              "envFrom": [{"prefix": "1=", "configMapRef": {"name": "Cfg"}}, {}]}),
            json!({}),
        );
        let subdomain = crate::validation::meta::SUBDOMAIN_MSG;
        assert_eq!(
            lines(spec),
            [
                "spec.containers[0].env[0].name: Required value".to_string(),
                "spec.containers[0].env[1].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='".into(),
                "spec.containers[0].env[2].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`".into(),
                "spec.containers[0].env[3].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty".into(),
                format!("spec.containers[0].env[4].valueFrom.secretKeyRef.name: Invalid value: \"\": {subdomain}"),
                "spec.containers[0].env[4].valueFrom.secretKeyRef.key: Required value".into(),
                "spec.containers[0].env[4].valueFrom: Invalid value: \"\": may not have more than one field specified at a time".into(),
                "spec.containers[0].env[5].valueFrom.fieldRef.fieldPath: Unsupported value: \"status.phase\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\"".into(),
                "spec.containers[0].env[6].valueFrom.fieldRef.fieldPath: Invalid value: \"spec.nope\": error converting fieldPath: field label not supported: spec.nope".into(),
                "spec.containers[0].env[7].valueFrom.resourceFieldRef.resource: Unsupported value: \"limits.gpu\": supported values: \"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", \"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\"".into(),
                "spec.containers[0].envFrom[0].prefix: Invalid value: \"1=\": a valid environment variable name must consist only of printable ASCII characters other than '='".into(),
                format!("spec.containers[0].envFrom[0].configMapRef.name: Invalid value: \"Cfg\": {subdomain}"),
                "spec.containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`".into(),
            ]
        );
    }

    #[test]
    fn volumes_and_mounts() {
        let spec = pod(
            json!({"volumeMounts": [
                {"name": "config", "mountPath": "/etc"},
                {"name": "missing", "mountPath": "/etc"},
                {"name": "two", "mountPath": ""},
                {"name": "config", "mountPath": "/x", "subPath": "../up", "mountPropagation": "Bidirectional"}]}),
            json!({"volumes": [
                {"name": "config", "configMap": {"name": "cfg"}},
                {"name": "two", "emptyDir": {}, "secret": {"secretName": "s"}},
                {"name": "none"},
                {"name": "config", "hostPath": {"path": "/a/../b", "type": "Dir"}},
                {"name": "Bad.Name", "persistentVolumeClaim": {}},
                {"name": "n", "nfs": {"server": "s", "path": "rel"}},
                {"name": "c", "configMap": {"defaultMode": 1000, "items": [{"key": "k", "path": "/abs"}]}}]}),
        );
        let label = crate::validation::meta::LABEL_MSG;
        assert_eq!(
            lines(spec),
            [
                "spec.volumes[1].secret: Forbidden: may not specify more than 1 volume type".to_string(),
                "spec.volumes[2]: Required value: must specify a volume type".into(),
                "spec.volumes[3].hostPath.path: Invalid value: \"/a/../b\": must not contain '..'".into(),
                "spec.volumes[3].hostPath.type: Unsupported value: \"Dir\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"".into(),
                // Only volumes without errors count for duplicates and mounts.
                "spec.volumes[3].name: Duplicate value: \"config\"".into(),
                "spec.volumes[4].persistentVolumeClaim.claimName: Required value".into(),
                format!("spec.volumes[4].name: Invalid value: \"Bad.Name\": {label}"),
                "spec.volumes[5].nfs.path: Invalid value: \"rel\": must be an absolute path".into(),
                "spec.volumes[6].configMap.name: Required value".into(),
                "spec.volumes[6].configMap.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive".into(),
                "spec.volumes[6].configMap.items[0].path: Invalid value: \"/abs\": must be a relative path".into(),
                "spec.containers[0].volumeMounts[1].name: Not found: \"missing\"".into(),
                "spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/etc\": must be unique".into(),
                "spec.containers[0].volumeMounts[2].name: Not found: \"two\"".into(),
                "spec.containers[0].volumeMounts[2].mountPath: Required value".into(),
                "spec.containers[0].volumeMounts.subPath: Invalid value: \"../up\": must not contain '..'".into(),
                "spec.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers".into(),
            ]
        );
    }

    #[test]
    fn resources() {
        let spec = pod(
            json!({"resources": {
                "limits": {"cpu": "1", "memory": "-1Gi", "cpus": "1", "nvidia.com/gpu": 2},
                "requests": {"cpu": "1500m", "example.com/foo": "1", "nvidia.com/gpu": 1}}}),
            json!({}),
        );
        assert_eq!(
            lines(spec),
            [
                "spec.containers[0].resources.limits[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0",
                "spec.containers[0].resources.limits[cpus]: Invalid value: \"cpus\": must be a standard resource type or fully qualified",
                "spec.containers[0].resources.limits[cpus]: Invalid value: \"cpus\": must be a standard resource for containers",
                "spec.containers[0].resources.requests: Invalid value: \"1500m\": must be less than or equal to cpu limit of 1",
                "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
                "spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to nvidia.com/gpu limit of 2",
            ]
        );
        let huge = pod(json!({"resources": {"limits": {"hugepages-2Mi": "2Mi"}}}), json!({}));
        assert_eq!(
            lines(huge),
            ["spec.containers[0].resources: Forbidden: HugePages require cpu or memory"]
        );
    }

    #[test]
    fn probes_and_hooks() {
        let spec = pod(
            json!({
                "livenessProbe": {"httpGet": {"path": "/", "port": 0, "scheme": "FTP"}, "exec": {"command": ["x"]},
                    "successThreshold": 2, "periodSeconds": -1},
                "readinessProbe": {"terminationGracePeriodSeconds": 5},
                "startupProbe": {"tcpSocket": {"port": "Web"}},
                "lifecycle": {"preStop": {"sleep": {"seconds": 60}}, "postStart": {"exec": {}}}}),
            json!({}),
        );
        assert_eq!(
            lines(spec),
            [
                "spec.containers[0].lifecycle.postStart.exec.command: Required value",
                "spec.containers[0].lifecycle.preStop.sleep: Invalid value: 60: must be non-negative and less than terminationGracePeriodSeconds (30)",
                "spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type",
                "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
                "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
                "spec.containers[0].readinessProbe: Required value: must specify a handler type",
                "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes",
                "spec.containers[0].startupProbe.tcpSocket.port: Invalid value: \"Web\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            ]
        );
        let http =
            pod(json!({"readinessProbe": {"httpGet": {"path": "/", "scheme": "FTP"}}}), json!({}));
        assert_eq!(
            lines(http),
            [
                "spec.containers[0].readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.containers[0].readinessProbe.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"",
            ]
        );
    }

    #[test]
    fn container_restart_policies() {
        let sidecar = json!({"initContainers": [{"name": "s", "image": "i", "restartPolicy": "Always",
            "readinessProbe": {"exec": {"command": ["true"]}}, "lifecycle": {"preStop": {"sleep": {"seconds": 1}}}}],
            "containers": [{"name": "a", "image": "i"}]});
        let defaulted = |mut spec: Value| {
            for list in ["initContainers", "containers"] {
                for c in spec[list].as_array_mut().unwrap() {
                    c["imagePullPolicy"] = json!("Always");
                    c["terminationMessagePolicy"] = json!("File");
                }
            }
            spec["restartPolicy"] = json!("Always");
            spec["dnsPolicy"] = json!("ClusterFirst");
            spec
        };
        assert_eq!(lines(defaulted(sidecar)), Vec::<String>::new());
        let wrong = json!({"initContainers": [{"name": "s", "image": "i", "restartPolicy": "Never"}],
            "containers": [{"name": "a", "image": "i", "restartPolicy": "Always"}]});
        assert_eq!(
            lines(defaulted(wrong)),
            [
                "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
                "spec.initContainers[0].restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            ]
        );
        let plain = json!({"initContainers": [{"name": "s", "image": "i",
            "livenessProbe": {"exec": {"command": ["true"]}}, "lifecycle": {}}],
            "containers": [{"name": "a", "image": "i"}]});
        assert_eq!(
            lines(defaulted(plain)),
            [
                "spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers without restartPolicy=Always",
                "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
            ]
        );
    }

    #[test]
    fn pod_level_fields() {
        let spec = pod(
            json!({"securityContext": {"runAsUser": -1, "procMount": "Unmasked"}}),
            json!({
                "nodeSelector": {"disk type": "ssd"},
                "securityContext": {"runAsGroup": -5, "seccompProfile": {"type": "Localhost"}},
                "serviceAccountName": "Default",
                "activeDeadlineSeconds": 0,
                "hostname": "web_0",
                "tolerations": [
                    {"operator": "Equal", "value": "x"},
                    {"key": "k", "operator": "Exists", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 5},
                    {"key": "k", "operator": "In", "effect": "Never"}],
                "priorityClassName": "High",
                "dnsPolicy": "None"}),
        );
        let label = crate::validation::meta::LABEL_MSG;
        let subdomain = crate::validation::meta::SUBDOMAIN_MSG;
        assert_eq!(
            lines(spec),
            [
                "spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive".to_string(),
                "spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`".into(),
                "spec.nodeSelector: Invalid value: \"disk type\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into(),
                "spec.securityContext.runAsGroup: Invalid value: -5: must be between 0 and 2147483647, inclusive".into(),
                "spec.securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost".into(),
                "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None".into(),
                format!("spec.serviceAccountName: Invalid value: \"Default\": {subdomain}"),
                "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive".into(),
                format!("spec.hostname: Invalid value: \"web_0\": {label}"),
                "spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"".into(),
                "spec.tolerations[1].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set".into(),
                "spec.tolerations[1].operator: Invalid value: core.Toleration{Key:\"k\", Operator:\"Exists\", Value:\"v\", Effect:\"NoSchedule\", TolerationSeconds:(*int64)(0xc000a1c000)}: value must be empty when `operator` is 'Exists'".into(),
                "spec.tolerations[2].operator: Unsupported value: \"In\": supported values: \"Equal\", \"Exists\"".into(),
                "spec.tolerations[2].effect: Unsupported value: \"Never\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"".into(),
                format!("spec.priorityClassName: Invalid value: \"High\": {subdomain}"),
            ]
        );
    }

    #[test]
    fn sysctls() {
        let regex = "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";
        let spec = pod(
            json!({}),
            json!({"hostNetwork": true, "hostIPC": true, "securityContext": {"sysctls": [
                {"name": "kernel.shm_rmid_forced", "value": "1"},
                {"name": "net/ipv4/ip_forward", "value": "1"},
                {"name": "", "value": "1"},
                {"name": "Net.Bad", "value": "1"},
                {"name": "kernel.shm_rmid_forced", "value": "0"},
                {"name": "fs.mqueue.msg_max", "value": "10"},
                {"name": "kernel.msgmax", "value": "10"},
                {"name": "vm.swappiness", "value": "1"},
                {"name": "kernel.shmall.x", "value": "1"}]}}),
        );
        assert_eq!(
            lines(spec),
            [
                "spec.securityContext.sysctls[0].name: Invalid value: \"kernel.shm_rmid_forced\": may not be specified when 'hostIPC' is true".to_string(),
                "spec.securityContext.sysctls[1].name: Invalid value: \"net/ipv4/ip_forward\": may not be specified when 'hostNetwork' is true".into(),
                "spec.securityContext.sysctls[2].name: Required value".into(),
                format!("spec.securityContext.sysctls[3].name: Invalid value: \"Net.Bad\": must have at most 253 characters and match regex {regex}"),
                "spec.securityContext.sysctls[4].name: Duplicate value: \"kernel.shm_rmid_forced\"".into(),
                "spec.securityContext.sysctls[4].name: Invalid value: \"kernel.shm_rmid_forced\": may not be specified when 'hostIPC' is true".into(),
                "spec.securityContext.sysctls[5].name: Invalid value: \"fs.mqueue.msg_max\": may not be specified when 'hostIPC' is true".into(),
                "spec.securityContext.sysctls[6].name: Invalid value: \"kernel.msgmax\": may not be specified when 'hostIPC' is true".into(),
            ]
        );
        // Without the host's namespaces they are fine; a/b.c reads as a.b/c.
        let spec = pod(
            json!({}),
            json!({"securityContext": {"sysctls": [{"name": "net.ipv4.ip_forward", "value": "1"},
                {"name": "net/ipv4/conf/eth0.100/rp_filter", "value": "1"}]}}),
        );
        assert_eq!(lines(spec), Vec::<String>::new());
        assert_eq!(sysctl_namespace("net/ipv4/conf/eth0.100/rp_filter"), Some("Net"));
        assert_eq!(sysctl_namespace("kernel.shm*"), Some("IPC"));
        assert_eq!(sysctl_namespace("kernel.shm_other"), None);
        assert_eq!(sysctl_namespace("network.x"), None);
        assert!(!is_sysctl_name(&"a".repeat(254)));
        assert!(!is_sysctl_name("a..b") && !is_sysctl_name("a._b") && is_sysctl_name("a_b.c-d"));
    }

    #[test]
    fn host_aliases_and_dns_config() {
        let spec = pod(
            json!({}),
            json!({
                "hostAliases": [
                    {"ip": "10.0.0.1", "hostnames": ["db", "db.local"]},
                    {"ip": "010.000.000.001", "hostnames": ["Bad_Host"]},
                    {"ip": "not-an-ip"},
                    {"hostnames": ["x"]}],
                "dnsPolicy": "None",
                "dnsConfig": {
                    "nameservers": ["1.1.1.1", "8.8.8", "::1", "9.9.9.9"],
                    "searches": ["svc.cluster.local.", "_tcp.example.com", ".", "Bad.Example", "a..b"],
                    "options": [{"name": "ndots", "value": "2"}]}}),
        );
        let subdomain = crate::validation::meta::SUBDOMAIN_MSG;
        let ip_msg = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
        assert_eq!(
            lines(spec),
            [
                "spec.dnsConfig.nameservers: Invalid value: []string{\"1.1.1.1\", \"8.8.8\", \"::1\", \"9.9.9.9\"}: must not have more than 3 nameservers".to_string(),
                format!("spec.dnsConfig.nameservers[1]: Invalid value: \"8.8.8\": {ip_msg}"),
                format!("spec.dnsConfig.searches[3]: Invalid value: \"Bad.Example\": {SUBDOMAIN_UNDERSCORE_MSG}"),
                format!("spec.dnsConfig.searches[4]: Invalid value: \"a..b\": {SUBDOMAIN_UNDERSCORE_MSG}"),
                format!("spec.hostAliases[1].hostnames[0]: Invalid value: \"Bad_Host\": {subdomain}"),
                format!("spec.hostAliases[2].ip: Invalid value: \"not-an-ip\": {ip_msg}"),
                format!("spec.hostAliases[3].ip: Invalid value: \"\": {ip_msg}"),
            ]
        );
        let many: Vec<String> = (0..33).map(|i| format!("d{i}.example")).collect();
        let long = format!("{}.example", "a".repeat(60));
        let mut searches: Vec<Value> = many.iter().map(|s| json!(s)).collect();
        searches.extend((0..30).map(|_| json!(long.clone())));
        let spec = pod(json!({}), json!({"dnsConfig": {"searches": searches}}));
        let got = lines(spec);
        assert_eq!(got.len(), 2);
        assert!(
            got[0].starts_with("spec.dnsConfig.searches: Invalid value: []string{\"d0.example\", ")
                && got[0].ends_with("}: must not have more than 32 search paths")
        );
        assert!(got[1].ends_with(
            "}: must not have more than 2048 characters (including spaces) in the search list"
        ));
    }
}
