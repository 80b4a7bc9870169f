//! Pod and container security contexts: user and group ids, sysctls, seccomp and AppArmor
//! profiles, with upstream's messages.

use super::*;

/// Upstream's UID/GID range (0 to MaxInt32 in v1.33).
pub(super) const MAX_ID: i64 = i32::MAX as i64;

pub(super) fn pod_security_context(spec: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let sc = &spec["securityContext"];
    if !sc.is_object() {
        return;
    }
    for field in ["fsGroup", "runAsUser", "runAsGroup"] {
        id_range(&sc[field], &format!("{at}.{field}"), errors);
    }
    for (i, gid) in sc["supplementalGroups"].as_array().into_iter().flatten().enumerate() {
        id_range(gid, &format!("{at}.supplementalGroups[{i}]"), errors);
    }
    if sc["shareProcessNamespace"] == true && spec["hostPID"] == true {
        errors.push(FieldError::invalid(
            format!("{at}.shareProcessNamespace"),
            &sc["shareProcessNamespace"],
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    sysctls(spec, &format!("{at}.sysctls"), errors);
    errors.extend(one_of(
        &format!("{at}.fsGroupChangePolicy"),
        &sc["fsGroupChangePolicy"],
        &["Always", "OnRootMismatch"],
    ));
    seccomp_profile(&sc["seccompProfile"], &format!("{at}.seccompProfile"), errors);
    app_armor_profile(&sc["appArmorProfile"], &format!("{at}.appArmorProfile"), errors);
    errors.extend(one_of(
        &format!("{at}.supplementalGroupsPolicy"),
        &sc["supplementalGroupsPolicy"],
        &["Merge", "Strict"],
    ));
    errors.extend(one_of(
        &format!("{at}.seLinuxChangePolicy"),
        &sc["seLinuxChangePolicy"],
        &["MountOption", "Recursive"],
    ));
}

pub(super) fn container_security_context(
    sc: &Value,
    at: &str,
    ctx: &Ctx,
    errors: &mut Vec<FieldError>,
) {
    if !sc.is_object() {
        return;
    }
    for field in ["runAsUser", "runAsGroup"] {
        id_range(&sc[field], &format!("{at}.{field}"), errors);
    }
    let proc_mount = &sc["procMount"];
    if !proc_mount.is_null() {
        errors.extend(one_of(&format!("{at}.procMount"), proc_mount, &["Default", "Unmasked"]));
        if ctx.host_users && proc_mount == "Unmasked" {
            errors.push(FieldError::invalid(
                format!("{at}.procMount"),
                proc_mount,
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    seccomp_profile(&sc["seccompProfile"], &format!("{at}.seccompProfile"), errors);
    app_armor_profile(&sc["appArmorProfile"], &format!("{at}.appArmorProfile"), errors);
}

/// Upstream's sysctl name pattern, as its message prints it (the compiled regex, anchors and
/// all): dot- or slash-separated segments of `[a-z0-9]([-_a-z0-9]*[a-z0-9])?`.
const SYSCTL_REGEX: &str =
    "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";
const SYSCTL_MAX_LEN: usize = 253;

/// `IsValidSysctlName`: at most 253 characters of segments separated by `.` or `/`.
pub(super) fn is_sysctl_name(name: &str) -> bool {
    let segment_ok = |s: &str| {
        let b = s.as_bytes();
        !b.is_empty()
            && b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"-_".contains(c))
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
    };
    name.len() <= SYSCTL_MAX_LEN && name.split(['.', '/']).all(segment_ok)
}

/// The kernel namespace a sysctl belongs to (upstream's `GetNamespace` in
/// component-helpers): `Some("Net")`, `Some("IPC")`, or `None` when it is not namespaced.
/// Names written with `/` separators are read with `.` ones, and a `*` ends the name.
pub(super) fn sysctl_namespace(name: &str) -> Option<&'static str> {
    let normalized: String = match name.find(['.', '/']) {
        Some(i) if name.as_bytes()[i] == b'/' => name
            .chars()
            .map(|c| match c {
                '.' => '/',
                '/' => '.',
                c => c,
            })
            .collect(),
        _ => name.to_string(),
    };
    let name = normalized.split('*').next().unwrap_or_default();
    const IPC_NAMES: [&str; 10] = [
        "kernel.sem",
        "kernel.shmall",
        "kernel.shmmax",
        "kernel.shmmni",
        "kernel.shm_rmid_forced",
        "kernel.shm",
        "kernel.msgmax",
        "kernel.msgmnb",
        "kernel.msgmni",
        "kernel.msg",
    ];
    if IPC_NAMES.contains(&name) {
        Some("IPC")
    } else if name.starts_with("net.") {
        Some("Net")
    } else if name.starts_with("fs.mqueue.") {
        Some("IPC")
    } else {
        None
    }
}

/// `validateSysctls`: each name set, well formed and not repeated, and not in a namespace the
/// pod shares with the host (`hostNetwork` for `net.*`, `hostIPC` for the IPC ones). Upstream
/// lets a stored pod keep such a sysctl on update; rkube never stored one, so it is checked
/// always.
fn sysctls(spec: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let mut seen = HashSet::new();
    for (i, s) in items(&spec["securityContext"]["sysctls"]).iter().enumerate() {
        let field = format!("{at}[{i}].name");
        let name = str_of(&s["name"]);
        let shown = Value::String(name.to_string());
        if name.is_empty() {
            errors.push(FieldError::required(&field, ""));
        } else if !is_sysctl_name(name) {
            errors.push(FieldError::invalid(
                &field,
                &shown,
                &format!(
                    "must have at most {SYSCTL_MAX_LEN} characters and match regex {SYSCTL_REGEX}"
                ),
            ));
        } else if seen.contains(name) {
            errors.push(FieldError::duplicate(&field, &shown));
        }
        match sysctl_namespace(name) {
            Some("Net") if spec["hostNetwork"] == true => errors.push(FieldError::invalid(
                &field,
                &shown,
                "may not be specified when 'hostNetwork' is true",
            )),
            Some("IPC") if spec["hostIPC"] == true => errors.push(FieldError::invalid(
                &field,
                &shown,
                "may not be specified when 'hostIPC' is true",
            )),
            _ => {}
        }
        seen.insert(name);
    }
}

/// A UID or GID: 0 to 2147483647.
pub(super) fn id_range(id: &Value, at: &str, errors: &mut Vec<FieldError>) {
    if id.as_i64().is_some_and(|v| !(0..=MAX_ID).contains(&v)) {
        errors.push(FieldError::invalid(at, id, &range_msg(0, MAX_ID)));
    }
}

pub(super) fn seccomp_profile(p: &Value, at: &str, errors: &mut Vec<FieldError>) {
    if p.is_null() {
        return;
    }
    let kind = str_of(&p["type"]);
    match kind {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errors.push(FieldError::required(
            format!("{at}.type"),
            "type is required when seccompProfile is set",
        )),
        _ => errors.push(FieldError::unsupported(
            format!("{at}.type"),
            &p["type"],
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    if kind == "Localhost" {
        match p["localhostProfile"].as_str() {
            None => errors.push(FieldError::required(
                format!("{at}.localhostProfile"),
                "must be set when seccomp type is Localhost",
            )),
            Some(profile) => {
                local_descending_path(profile, &format!("{at}.localhostProfile"), errors)
            }
        }
    }
}

pub(super) fn app_armor_profile(p: &Value, at: &str, errors: &mut Vec<FieldError>) {
    if p.is_null() {
        return;
    }
    let profile = &p["localhostProfile"];
    let field = format!("{at}.localhostProfile");
    match str_of(&p["type"]) {
        "Localhost" => match profile.as_str() {
            None => errors
                .push(FieldError::required(field, "must be set when AppArmor type is Localhost")),
            Some(name) => {
                if name.trim() != name {
                    errors.push(FieldError::invalid(
                        &field,
                        profile,
                        "must not be padded with whitespace",
                    ));
                } else if name.is_empty() {
                    errors.push(FieldError::required(
                        &field,
                        "must be set when AppArmor type is Localhost",
                    ));
                }
                if name.len() > 4095 {
                    errors.push(FieldError::too_long(&field, 4095));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if !profile.is_null() {
                errors.push(FieldError::invalid(
                    field,
                    profile,
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => errors.push(FieldError::required(
            format!("{at}.type"),
            "type is required when appArmorProfile is set",
        )),
        _ => errors.push(FieldError::unsupported(
            format!("{at}.type"),
            &p["type"],
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
}
