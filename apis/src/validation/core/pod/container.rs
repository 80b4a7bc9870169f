//! One container of a pod spec: ports, env and envFrom, volume mounts, resources, probes and
//! lifecycle handlers, with upstream's messages and error order.

use super::*;

pub(super) const RELAXED_ENV_MSG: &str =
    "a valid environment variable name must consist only of printable ASCII characters other than '='";

pub(super) const HTTP_HEADER_MSG: &str = "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')";

pub(super) const NOT_FOR_INIT: &str =
    "may not be set for init containers without restartPolicy=Always";

/// The checks every container gets (upstream's validateContainerCommon), in its order.
pub(super) fn container_common(c: &Value, at: &str, ctx: &Ctx, errors: &mut Vec<FieldError>) {
    match str_of(&c["name"]) {
        "" => errors.push(FieldError::required(format!("{at}.name"), "")),
        name => {
            for p in name_problems(name, NameRule::Label) {
                errors.push(FieldError::invalid(format!("{at}.name"), &c["name"], &p));
            }
        }
    }
    // Upstream only requires an image here; whitespace is checked for pods at the end.
    if str_of(&c["image"]).is_empty() {
        errors.push(FieldError::required(format!("{at}.image"), ""));
    }
    errors.extend(one_of_or_empty(
        &format!("{at}.terminationMessagePolicy"),
        &c["terminationMessagePolicy"],
        &["File", "FallbackToLogsOnError"],
    ));
    ports(&c["ports"], &format!("{at}.ports"), errors);
    env(&c["env"], &format!("{at}.env"), errors);
    env_from(&c["envFrom"], &format!("{at}.envFrom"), errors);
    volume_mounts(c, &format!("{at}.volumeMounts"), ctx.volumes, errors);
    errors.extend(one_of_or_empty(
        &format!("{at}.imagePullPolicy"),
        &c["imagePullPolicy"],
        &["Always", "IfNotPresent", "Never"],
    ));
    resources(&c["resources"], &format!("{at}.resources"), errors);
    container_security_context(
        &c["securityContext"],
        &format!("{at}.securityContext"),
        ctx,
        errors,
    );
}

/// Lifecycle hooks and the three probes (regular containers and sidecars).
pub(super) fn probes_and_hooks(
    c: &Value,
    at: &str,
    grace: Option<i64>,
    errors: &mut Vec<FieldError>,
) {
    let lifecycle = &c["lifecycle"];
    for hook in ["postStart", "preStop"] {
        if !lifecycle[hook].is_null() {
            let kinds = ["exec", "httpGet", "tcpSocket", "sleep"];
            handler(&lifecycle[hook], &format!("{at}.lifecycle.{hook}"), &kinds, grace, errors);
        }
    }
    for (field, kind) in [
        ("livenessProbe", "liveness"),
        ("readinessProbe", "readiness"),
        ("startupProbe", "startup"),
    ] {
        let probe = &c[field];
        if probe.is_null() {
            continue;
        }
        let at = format!("{at}.{field}");
        handler(probe, &at, &["exec", "httpGet", "tcpSocket", "grpc"], grace, errors);
        for n in [
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
        ] {
            errors.extend(non_negative(&format!("{at}.{n}"), &probe[n]));
        }
        let probe_grace = &probe["terminationGracePeriodSeconds"];
        if probe_grace.as_i64().is_some_and(|g| g <= 0) {
            errors.push(FieldError::invalid(
                format!("{at}.terminationGracePeriodSeconds"),
                probe_grace,
                "must be greater than 0",
            ));
        }
        if kind == "readiness" {
            if !probe_grace.is_null() {
                errors.push(FieldError::invalid(
                    format!("{at}.terminationGracePeriodSeconds"),
                    probe_grace,
                    "must not be set for readinessProbes",
                ));
            }
        } else if !matches!(probe["successThreshold"].as_i64().unwrap_or(0), 0 | 1) {
            // (Upstream defaults an unset or zero threshold to 1.)
            errors.push(FieldError::invalid(
                format!("{at}.successThreshold"),
                &probe["successThreshold"],
                "must be 1",
            ));
        }
    }
}

/// A probe or hook handler: exactly one of `kinds`, each checked.
pub(super) fn handler(
    h: &Value,
    at: &str,
    kinds: &[&str],
    grace: Option<i64>,
    errors: &mut Vec<FieldError>,
) {
    let mut count = 0;
    for &kind in kinds {
        let action = &h[kind];
        if action.is_null() {
            continue;
        }
        let path = format!("{at}.{kind}");
        if count > 0 {
            errors.push(FieldError::forbidden(path, "may not specify more than 1 handler type"));
            continue;
        }
        count += 1;
        match kind {
            "exec" if action["command"].as_array().is_none_or(Vec::is_empty) => {
                errors.push(FieldError::required(format!("{path}.command"), ""));
            }
            "httpGet" => {
                // Upstream defaults an empty path to "/" and scheme to HTTP.
                port_num_or_name(&action["port"], &format!("{path}.port"), errors);
                errors.extend(one_of_or_empty(
                    &format!("{path}.scheme"),
                    &action["scheme"],
                    &["HTTP", "HTTPS"],
                ));
                for header in action["httpHeaders"].as_array().into_iter().flatten() {
                    let name = str_of(&header["name"]);
                    let ok = !name.is_empty()
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
                    if !ok {
                        errors.push(FieldError::invalid(
                            format!("{path}.httpHeaders"),
                            &Value::String(name.to_string()),
                            HTTP_HEADER_MSG,
                        ));
                    }
                }
            }
            "tcpSocket" => port_num_or_name(&action["port"], &format!("{path}.port"), errors),
            "grpc" => {
                let port = action["port"].as_i64().unwrap_or(0);
                if !(1..=65535).contains(&port) {
                    errors.push(FieldError::invalid(
                        format!("{path}.port"),
                        &Value::from(port),
                        &range_msg(1, 65535),
                    ));
                }
            }
            "sleep" => {
                let seconds = action["seconds"].as_i64().unwrap_or(0);
                if let Some(grace) = grace {
                    if seconds < 0 || seconds > grace {
                        errors.push(FieldError::invalid(
                            path,
                            &Value::from(seconds),
                            &format!("must be non-negative and less than terminationGracePeriodSeconds ({grace})"),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    if count == 0 {
        errors.push(FieldError::required(at, "must specify a handler type"));
    }
}

/// An IntOrString port: a number in range, or a valid port name (unset reads as 0).
pub(super) fn port_num_or_name(port: &Value, at: &str, errors: &mut Vec<FieldError>) {
    match port {
        Value::String(name) => {
            for p in port_name_problems(name) {
                errors.push(FieldError::invalid(at, port, &p));
            }
        }
        _ => {
            let n = port.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&n) {
                errors.push(FieldError::invalid(at, &Value::from(n), &range_msg(1, 65535)));
            }
        }
    }
}

pub(super) fn ports(list: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let mut names = HashSet::new();
    for (i, p) in list.as_array().into_iter().flatten().enumerate() {
        let at = format!("{at}[{i}]");
        let name = str_of(&p["name"]);
        if !name.is_empty() {
            let problems = port_name(&format!("{at}.name"), &p["name"]);
            let valid = problems.is_empty();
            errors.extend(problems);
            if valid && !names.insert(name) {
                errors.push(FieldError::duplicate(format!("{at}.name"), &p["name"]));
            }
        }
        match p["containerPort"].as_i64().unwrap_or(0) {
            0 => errors.push(FieldError::required(format!("{at}.containerPort"), "")),
            n if !(1..=65535).contains(&n) => errors.push(FieldError::invalid(
                format!("{at}.containerPort"),
                &p["containerPort"],
                &range_msg(1, 65535),
            )),
            _ => {}
        }
        let host = p["hostPort"].as_i64().unwrap_or(0);
        if host != 0 && !(1..=65535).contains(&host) {
            errors.push(FieldError::invalid(
                format!("{at}.hostPort"),
                &p["hostPort"],
                &range_msg(1, 65535),
            ));
        }
        errors.extend(one_of_or_empty(
            &format!("{at}.protocol"),
            &p["protocol"],
            &["SCTP", "TCP", "UDP"],
        ));
    }
}

/// Two ports may not claim the same protocol, host IP and host port.
pub(super) fn host_port_conflicts(containers: &[Value], at: &str, errors: &mut Vec<FieldError>) {
    let mut seen = HashSet::new();
    for (i, c) in containers.iter().enumerate() {
        for (j, p) in c["ports"].as_array().into_iter().flatten().enumerate() {
            let port = p["hostPort"].as_i64().unwrap_or(0);
            if port == 0 {
                continue;
            }
            let key = format!("{}/{}/{port}", str_of(&p["protocol"]), str_of(&p["hostIP"]));
            if !seen.insert(key.clone()) {
                errors.push(FieldError::duplicate(
                    format!("{at}[{i}].ports[{j}].hostPort"),
                    &Value::String(key),
                ));
            }
        }
    }
}

pub(super) fn env(list: &Value, at: &str, errors: &mut Vec<FieldError>) {
    for (i, e) in list.as_array().into_iter().flatten().enumerate() {
        let at = format!("{at}[{i}]");
        match str_of(&e["name"]) {
            "" => errors.push(FieldError::required(format!("{at}.name"), "")),
            name => {
                for p in env_name_problems(name) {
                    errors.push(FieldError::invalid(format!("{at}.name"), &e["name"], &p));
                }
            }
        }
        let from = &e["valueFrom"];
        if from.is_null() {
            continue;
        }
        let at = format!("{at}.valueFrom");
        let mut sources = 0;
        if !from["fieldRef"].is_null() {
            sources += 1;
            field_ref(&from["fieldRef"], &format!("{at}.fieldRef"), errors);
        }
        let resource_ref = &from["resourceFieldRef"];
        if !resource_ref.is_null() {
            sources += 1;
            const RESOURCES: [&str; 6] = [
                "limits.cpu",
                "limits.ephemeral-storage",
                "limits.memory",
                "requests.cpu",
                "requests.ephemeral-storage",
                "requests.memory",
            ];
            let resource = str_of(&resource_ref["resource"]);
            if resource.is_empty() {
                errors.push(FieldError::required(format!("{at}.resourceFieldRef.resource"), ""));
            } else if !RESOURCES.contains(&resource)
                && !resource.starts_with("requests.hugepages-")
                && !resource.starts_with("limits.hugepages-")
            {
                errors.push(FieldError::unsupported(
                    format!("{at}.resourceFieldRef.resource"),
                    &resource_ref["resource"],
                    &RESOURCES,
                ));
            }
        }
        for kind in ["configMapKeyRef", "secretKeyRef"] {
            let r = &from[kind];
            if r.is_null() {
                continue;
            }
            sources += 1;
            let at = format!("{at}.{kind}");
            // Upstream checks the name as a DNS subdomain without requiring it first.
            for p in name_problems(str_of(&r["name"]), NameRule::Subdomain) {
                errors.push(FieldError::invalid(format!("{at}.name"), &string(&r["name"]), &p));
            }
            match str_of(&r["key"]) {
                "" => errors.push(FieldError::required(format!("{at}.key"), "")),
                key => {
                    for p in config_key_problems(key) {
                        errors.push(FieldError::invalid(format!("{at}.key"), &r["key"], &p));
                    }
                }
            }
        }
        let empty = Value::String(String::new());
        if sources == 0 {
            errors.push(FieldError::invalid(
                at,
                &empty,
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ));
        } else if !str_of(&e["value"]).is_empty() {
            errors.push(FieldError::invalid(
                at,
                &empty,
                "may not be specified when `value` is not empty",
            ));
        } else if sources > 1 {
            errors.push(FieldError::invalid(
                at,
                &empty,
                "may not have more than one field specified at a time",
            ));
        }
    }
}

/// An env var's downward API field (`metadata.name`, `metadata.labels['app']`, ...).
pub(super) fn field_ref(r: &Value, at: &str, errors: &mut Vec<FieldError>) {
    // Upstream defaults an empty apiVersion to v1.
    let version = r["apiVersion"].as_str().filter(|v| !v.is_empty()).unwrap_or("v1");
    let path = str_of(&r["fieldPath"]);
    if path.is_empty() {
        errors.push(FieldError::required(format!("{at}.fieldPath"), ""));
        return;
    }
    let subscripted = path
        .strip_suffix("']")
        .and_then(|p| p.split_once("['"))
        .filter(|(base, _)| !base.is_empty());
    let converted = if version != "v1" {
        Err(format!("unsupported pod version: {version}"))
    } else if let Some((base, _)) = subscripted {
        if matches!(base, "metadata.annotations" | "metadata.labels") {
            Ok(path)
        } else {
            Err(format!("field label does not support subscript: {path}"))
        }
    } else {
        match path {
            "metadata.annotations"
            | "metadata.labels"
            | "metadata.name"
            | "metadata.namespace"
            | "metadata.uid"
            | "spec.nodeName"
            | "spec.restartPolicy"
            | "spec.serviceAccountName"
            | "spec.schedulerName"
            | "status.phase"
            | "status.hostIP"
            | "status.hostIPs"
            | "status.podIP"
            | "status.podIPs" => Ok(path),
            "spec.host" => Ok("spec.nodeName"),
            _ => Err(format!("field label not supported: {path}")),
        }
    };
    let path = match converted {
        Ok(path) => path,
        Err(e) => {
            errors.push(FieldError::invalid(
                format!("{at}.fieldPath"),
                &r["fieldPath"],
                &format!("error converting fieldPath: {e}"),
            ));
            return;
        }
    };
    if let Some((base, key)) = subscripted {
        let key = if base == "metadata.annotations" { key.to_lowercase() } else { key.to_string() };
        for p in qualified_name_problems(&key) {
            errors.push(FieldError::invalid(at, &Value::String(key.clone()), &p));
        }
        return;
    }
    const ENV_FIELDS: [&str; 9] = [
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.serviceAccountName",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
    ];
    if !ENV_FIELDS.contains(&path) {
        errors.push(FieldError::unsupported(
            format!("{at}.fieldPath"),
            &Value::String(path.to_string()),
            &ENV_FIELDS,
        ));
    }
}

pub(super) fn env_from(list: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let empty = Value::String(String::new());
    for (i, e) in list.as_array().into_iter().flatten().enumerate() {
        let item = format!("{at}[{i}]");
        let prefix = str_of(&e["prefix"]);
        if !prefix.is_empty() {
            for p in env_name_problems(prefix) {
                errors.push(FieldError::invalid(format!("{item}.prefix"), &e["prefix"], &p));
            }
        }
        let mut sources = 0;
        for kind in ["configMapRef", "secretRef"] {
            let r = &e[kind];
            if r.is_null() {
                continue;
            }
            sources += 1;
            match str_of(&r["name"]) {
                "" => errors.push(FieldError::required(format!("{item}.{kind}.name"), "")),
                name => {
                    // Validated as a name prefix: a trailing '-' is allowed.
                    let masked = match name.strip_suffix('-') {
                        Some(rest) => format!("{rest}a"),
                        None => name.to_string(),
                    };
                    for p in name_problems(&masked, NameRule::Subdomain) {
                        errors.push(FieldError::invalid(
                            format!("{item}.{kind}.name"),
                            &r["name"],
                            &p,
                        ));
                    }
                }
            }
        }
        // Upstream reports these two at the list, not the item.
        if sources == 0 {
            errors.push(FieldError::invalid(
                at,
                &empty,
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if sources > 1 {
            errors.push(FieldError::invalid(
                at,
                &empty,
                "may not have more than one field specified at a time",
            ));
        }
    }
}

pub(super) fn volume_mounts(
    c: &Value,
    at: &str,
    volumes: &HashSet<String>,
    errors: &mut Vec<FieldError>,
) {
    let privileged = c["securityContext"]["privileged"] == true;
    let mut paths = HashSet::new();
    for (i, m) in c["volumeMounts"].as_array().into_iter().flatten().enumerate() {
        let item = format!("{at}[{i}]");
        let name = str_of(&m["name"]);
        if name.is_empty() {
            errors.push(FieldError::required(format!("{item}.name"), ""));
        }
        if !volumes.contains(name) {
            errors.push(FieldError::not_found(format!("{item}.name"), &string(&m["name"])));
        }
        let mount_path = str_of(&m["mountPath"]);
        if mount_path.is_empty() {
            errors.push(FieldError::required(format!("{item}.mountPath"), ""));
        }
        if !paths.insert(mount_path) {
            errors.push(FieldError::invalid(
                format!("{item}.mountPath"),
                &string(&m["mountPath"]),
                "must be unique",
            ));
        }
        // Upstream reports subPath problems at the list's path, not the item's.
        let sub_path = str_of(&m["subPath"]);
        if !sub_path.is_empty() {
            local_descending_path(sub_path, &format!("{at}.subPath"), errors);
        }
        let expr = str_of(&m["subPathExpr"]);
        if !expr.is_empty() {
            if !sub_path.is_empty() {
                errors.push(FieldError::invalid(
                    format!("{item}.subPathExpr"),
                    &m["subPathExpr"],
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            local_descending_path(expr, &format!("{at}.subPathExpr"), errors);
        }
        let propagation = &m["mountPropagation"];
        if let Some(mode) = propagation.as_str() {
            let at = format!("{at}.mountPropagation");
            if !matches!(mode, "Bidirectional" | "HostToContainer" | "None") {
                errors.push(FieldError::unsupported(
                    &at,
                    propagation,
                    &["Bidirectional", "HostToContainer", "None"],
                ));
            }
            if mode == "Bidirectional" && !privileged {
                errors.push(FieldError::forbidden(
                    at,
                    "Bidirectional mount propagation is available only to privileged containers",
                ));
            }
        }
        let rro = &m["recursiveReadOnly"];
        if let Some(mode) = rro.as_str() {
            let at = format!("{at}.recursiveReadOnly");
            match mode {
                "Disabled" => {}
                "Enabled" | "IfPossible" => {
                    if m["readOnly"] != true {
                        errors.push(FieldError::forbidden(
                            &at,
                            "may only be specified when readOnly is true",
                        ));
                    }
                    if propagation.as_str().is_some_and(|p| p != "None") {
                        errors.push(FieldError::forbidden(
                            &at,
                            "may only be specified when mountPropagation is None or not specified",
                        ));
                    }
                }
                _ => errors.push(FieldError::unsupported(
                    &at,
                    rro,
                    &["Disabled", "Enabled", "IfPossible"],
                )),
            }
        }
    }
}

/// Container resource requests and limits: names, non-negative quantities, requests within
/// limits (equal for resources that cannot be overcommitted).
pub(super) fn resources(r: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let limits = r["limits"].as_object();
    let mut cpu_or_memory = false;
    let mut hugepages = false;
    for (name, q) in limits.into_iter().flatten() {
        let field = format!("{at}.limits[{name}]");
        container_resource_name(name, &field, errors);
        if let Some(q) = Quantity::parse(q) {
            if q.nanos < 0 {
                errors.push(FieldError::invalid(
                    &field,
                    &Value::String(q.canonical()),
                    "must be greater than or equal to 0",
                ));
            }
        }
        hugepages |= name.starts_with("hugepages-");
        cpu_or_memory |= name == "cpu" || name == "memory";
    }
    for (name, q) in r["requests"].as_object().into_iter().flatten() {
        let field = format!("{at}.requests[{name}]");
        container_resource_name(name, &field, errors);
        let request = Quantity::parse(q);
        if let Some(q) = &request {
            if q.nanos < 0 {
                errors.push(FieldError::invalid(
                    &field,
                    &Value::String(q.canonical()),
                    "must be greater than or equal to 0",
                ));
            }
        }
        let overcommit = is_native_resource(name) && !name.starts_with("hugepages-");
        match limits.and_then(|l| l.get(name)) {
            Some(limit) => {
                if let (Some(request), Some(limit)) = (request, Quantity::parse(limit)) {
                    let detail = if request.nanos != limit.nanos && !overcommit {
                        Some("must be equal to")
                    } else if request.nanos > limit.nanos {
                        Some("must be less than or equal to")
                    } else {
                        None
                    };
                    if let Some(detail) = detail {
                        errors.push(FieldError::invalid(
                            format!("{at}.requests"),
                            &Value::String(request.canonical()),
                            &format!("{detail} {name} limit of {}", limit.canonical()),
                        ));
                    }
                }
            }
            None if !overcommit => errors.push(FieldError::required(
                format!("{at}.limits"),
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
        hugepages |= name.starts_with("hugepages-");
        cpu_or_memory |= name == "cpu" || name == "memory";
    }
    if hugepages && !cpu_or_memory {
        errors.push(FieldError::forbidden(at, "HugePages require cpu or memory"));
    }
}

/// Env var names (and envFrom prefixes) under upstream's relaxed rule, on by default in
/// v1.33 (RelaxedEnvironmentVariableValidation).
pub(super) fn env_name_problems(name: &str) -> Vec<String> {
    if name.is_empty() {
        return vec!["environment variable name must be non-empty".to_string()];
    }
    if name.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        return vec![RELAXED_ENV_MSG.to_string()];
    }
    Vec::new()
}
