//! Jobs and CronJobs: counts, completion modes, the template's restart policy, schedules and
//! time zones, and what an update may change.

use super::*;

/// `validateJobSpec`: what a job and a cron job's job template share. `path` is `spec` or
/// `spec.jobTemplate.spec`.
fn job_spec(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for field in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        push(&mut errors, non_negative(&format!("{path}.{field}"), &spec[field]));
    }
    let (completions, parallelism) = (&spec["completions"], &spec["parallelism"]);
    let (per_index, max_failed) = (&spec["backoffLimitPerIndex"], &spec["maxFailedIndexes"]);
    if !max_failed.is_null() && per_index.is_null() {
        errors.push(FieldError::required(
            format!("{path}.backoffLimitPerIndex"),
            "when maxFailedIndexes is specified",
        ));
    }
    let mode = &spec["completionMode"];
    if mode.as_str().is_some_and(|m| !matches!(m, "NonIndexed" | "Indexed")) {
        errors.push(FieldError::unsupported(
            format!("{path}.completionMode"),
            mode,
            &["NonIndexed", "Indexed"],
        ));
    }
    let big = |v: &Value, limit: i64| v.as_i64().is_some_and(|n| n > limit);
    if mode == "Indexed" {
        if completions.is_null() {
            errors.push(FieldError::required(
                format!("{path}.completions"),
                "when completion mode is Indexed",
            ));
        }
        if big(parallelism, 100_000) {
            errors.push(FieldError::invalid(
                format!("{path}.parallelism"),
                parallelism,
                "must be less than or equal to 100000 when completion mode is Indexed",
            ));
        }
        if let (Some(c), Some(m)) = (completions.as_i64(), max_failed.as_i64()) {
            if m > c {
                errors.push(FieldError::invalid(
                    format!("{path}.maxFailedIndexes"),
                    max_failed,
                    "must be less than or equal to completions",
                ));
            }
        }
        if big(max_failed, 100_000) {
            errors.push(FieldError::invalid(
                format!("{path}.maxFailedIndexes"),
                max_failed,
                "must be less than or equal to 100000",
            ));
        }
        if big(completions, 100_000) && !per_index.is_null() {
            if max_failed.is_null() {
                errors.push(FieldError::required(
                    format!("{path}.maxFailedIndexes"),
                    "must be specified when completions is above 100000",
                ));
            }
            let detail = "must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index";
            if big(parallelism, 10_000) {
                errors.push(FieldError::invalid(
                    format!("{path}.parallelism"),
                    parallelism,
                    detail,
                ));
            }
            if big(max_failed, 10_000) {
                errors.push(FieldError::invalid(
                    format!("{path}.maxFailedIndexes"),
                    max_failed,
                    detail,
                ));
            }
        }
    } else if mode.is_null() || mode == "NonIndexed" {
        for (field, v) in [("backoffLimitPerIndex", per_index), ("maxFailedIndexes", max_failed)] {
            if !v.is_null() {
                errors.push(FieldError::invalid(
                    format!("{path}.{field}"),
                    v,
                    "requires indexed completion mode",
                ));
            }
        }
    }
    // With a podFailurePolicy upstream defaults (and allows) only `Failed`; rkube's defaults
    // do not know that yet, so only the plain enum is checked here.
    let replacement = &spec["podReplacementPolicy"];
    if replacement.as_str().is_some_and(|p| !matches!(p, "Failed" | "TerminatingOrFailed")) {
        errors.push(FieldError::unsupported(
            format!("{path}.podReplacementPolicy"),
            replacement,
            &["Failed", "TerminatingOrFailed"],
        ));
    }
    let template = &spec["template"];
    errors.extend(pod_template(template, &format!("{path}.template")));
    let restart = &template["spec"]["restartPolicy"];
    let restart_path = format!("{path}.template.spec.restartPolicy");
    match restart.as_str().unwrap_or("") {
        "Always" | "" => errors
            .push(FieldError::required(restart_path, "valid values: \"OnFailure\", \"Never\"")),
        "OnFailure" if !spec["podFailurePolicy"].is_null() => errors.push(FieldError::invalid(
            restart_path,
            restart,
            "only \"Never\" is supported when podFailurePolicy is specified",
        )),
        "OnFailure" | "Never" => {}
        _ => errors.push(FieldError::unsupported(restart_path, restart, &["OnFailure", "Never"])),
    }
    errors
}

/// `ValidateJob` (and `ValidateJobSpecUpdate` on update). rkube does not generate a job's
/// selector, so an absent one is accepted unless `manualSelector` asks for it.
pub fn job(info: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    errors.extend(job_spec(spec, "spec"));
    let (sel, template) = (&spec["selector"], &spec["template"]);
    if sel.is_null() {
        if spec["manualSelector"] == true {
            errors.push(FieldError::required("spec.selector", ""));
        }
    } else {
        errors.extend(label_selector("spec.selector", sel));
        if selector_parses(sel) && !selector_matches(sel, &template["metadata"]["labels"]) {
            errors.push(template_mismatch(template, "spec.template"));
        }
    }
    // Indexed pods are named <job>-<index>, which must make a DNS label.
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    if let (Some("Indexed"), Some(c)) =
        (spec["completionMode"].as_str(), spec["completions"].as_i64())
    {
        let hostname = format!("{name}-{}", c - 1);
        if c > 0 && !name.is_empty() && !name_problems(&hostname, NameRule::Label).is_empty() {
            errors.push(FieldError::invalid(
                "metadata.name",
                &obj["metadata"]["name"],
                &format!("will not able to create pod with invalid DNS label: {hostname}"),
            ));
        }
    }
    if let Some(old) = old {
        errors.extend(job_update(info, obj, old));
    }
    errors
}

/// `ValidateJobSpecUpdate`: completions (indexed jobs may scale with parallelism), the
/// selector, the pod template (scheduling directives of a suspended job that never started
/// excepted) and a few more fields are fixed.
fn job_update(info: &ResourceInfo, obj: &Value, old: &Value) -> Vec<FieldError> {
    // Compare with defaults filled in on both sides (a replace may leave them out).
    let (mut new, mut was) = (obj.clone(), old.clone());
    crate::defaults::apply(info, &mut new);
    crate::defaults::apply(info, &mut was);
    let (spec, old_spec) = (&new["spec"], &was["spec"]);
    let mut errors = Vec::new();
    let completions = &spec["completions"];
    if completions != &old_spec["completions"] {
        if spec["completionMode"] != "Indexed" {
            errors.push(FieldError::invalid(
                "spec.completions",
                &go_pointee(completions),
                IMMUTABLE,
            ));
        } else if !completions.is_null() && completions != &spec["parallelism"] {
            errors.push(FieldError::invalid(
                "spec.completions",
                completions,
                "can only be modified in tandem with spec.parallelism",
            ));
        }
    }
    if spec["selector"] != old_spec["selector"] {
        errors.push(FieldError::invalid_shown(
            "spec.selector",
            &go_label_selector(&obj["spec"]["selector"]),
            IMMUTABLE,
        ));
    }
    let (mut template, mut old_template) = (spec["template"].clone(), old_spec["template"].clone());
    // Allowed only while the job was suspended and never started.
    if old_spec["suspend"] == true && old["status"]["startTime"].is_null() {
        for t in [&mut template, &mut old_template] {
            if let Some(m) = t["metadata"].as_object_mut() {
                m.remove("labels");
                m.remove("annotations");
            }
            if let Some(m) = t["spec"].as_object_mut() {
                for f in ["nodeSelector", "tolerations", "schedulingGates"] {
                    m.remove(f);
                }
                if let Some(a) = m.get_mut("affinity").and_then(Value::as_object_mut) {
                    a.remove("nodeAffinity");
                    if a.is_empty() {
                        m.remove("affinity");
                    }
                }
            }
        }
    }
    if template != old_template {
        // Upstream prints the whole Go struct here; JSON is the nearest readable stand-in.
        errors.push(FieldError::invalid("spec.template", &obj["spec"]["template"], IMMUTABLE));
    }
    for field in
        ["completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"]
    {
        if spec[field] != old_spec[field] {
            errors.push(FieldError::invalid(
                format!("spec.{field}"),
                &go_pointee(&spec[field]),
                IMMUTABLE,
            ));
        }
    }
    errors
}

/// `ValidateCronJobCreate` / `ValidateCronJobUpdate`.
pub fn cron_job(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let mut errors = Vec::new();
    let schedule = spec["schedule"].as_str().unwrap_or("");
    if schedule.is_empty() {
        errors.push(FieldError::required("spec.schedule", ""));
    } else {
        let shown = &spec["schedule"];
        if let Err(e) = parse_schedule(schedule) {
            errors.push(FieldError::invalid("spec.schedule", shown, &e));
        }
        let tz_allowed =
            old.is_some_and(|o| o["spec"]["schedule"].as_str().unwrap_or("").contains("TZ"));
        if schedule.contains("TZ") {
            if !tz_allowed {
                errors.push(FieldError::invalid(
                    "spec.schedule",
                    shown,
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                ));
            } else if !spec["timeZone"].is_null() {
                errors.push(FieldError::invalid(
                    "spec.schedule",
                    shown,
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                ));
            }
        }
    }
    push(
        &mut errors,
        non_negative("spec.startingDeadlineSeconds", &spec["startingDeadlineSeconds"]),
    );
    if old.is_none_or(|o| o["spec"]["timeZone"] != spec["timeZone"]) {
        errors.extend(time_zone(&spec["timeZone"]));
    }
    let concurrency = &spec["concurrencyPolicy"];
    if concurrency.as_str().is_some_and(|c| !matches!(c, "" | "Allow" | "Forbid" | "Replace")) {
        errors.push(FieldError::unsupported(
            "spec.concurrencyPolicy",
            concurrency,
            &["Allow", "Forbid", "Replace"],
        ));
    }
    let job = &spec["jobTemplate"]["spec"];
    errors.extend(job_spec(job, "spec.jobTemplate.spec"));
    if !job["selector"].is_null() {
        errors.push(FieldError::invalid_shown(
            "spec.jobTemplate.spec.selector",
            &go_label_selector(&job["selector"]),
            "`selector` will be auto-generated",
        ));
    }
    if job["manualSelector"] == true {
        errors.push(FieldError::unsupported(
            "spec.jobTemplate.spec.manualSelector",
            &job["manualSelector"],
            &["nil", "false"],
        ));
    }
    for field in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        push(&mut errors, non_negative(&format!("spec.{field}"), &spec[field]));
    }
    // Job names are the cron job's plus an 11-character suffix, and at most 63 long.
    let name = &obj["metadata"]["name"];
    if old.is_none() && name.as_str().is_some_and(|n| n.len() > 52) {
        errors.push(FieldError::invalid(
            "metadata.name",
            name,
            "must be no more than 52 characters",
        ));
    }
    errors
}

/// `validateTimeZone`, without the time zone database lookup.
fn time_zone(tz: &Value) -> Vec<FieldError> {
    let Some(zone) = tz.as_str() else { return Vec::new() };
    let field = "spec.timeZone";
    if zone.is_empty() {
        return vec![FieldError::invalid(field, tz, "timeZone must be nil or non-empty string")];
    }
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.len() <= 14
            && p != "."
            && p != ".."
            && !p.starts_with('-')
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'+'))
    };
    if !zone.split('/').all(part_ok) {
        return vec![FieldError::invalid(field, tz, &format!("unknown time zone {zone}"))];
    }
    if zone.eq_ignore_ascii_case("Local") {
        return vec![FieldError::invalid(
            field,
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        )];
    }
    Vec::new()
}
