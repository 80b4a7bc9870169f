//! Validation of batch/v1: Jobs and CronJobs, with upstream's (v1.33) messages and field
//! paths: counts, completion modes, the pod failure and success policies, `managedBy`, the
//! template's restart policy, schedules (parsed in `cron`) and time zones, and what an update
//! may change.
//!
//! Where upstream shows a Go struct or map as the bad value (`map[string]string{...}`,
//! `v1.LabelSelector{...}`), [`crate::gofmt`] prints it the way Go's `%#v` does. A field
//! upstream defaults is never an error when absent (it is read as its default), whether or
//! not rkube's defaulting (`crate::defaults`, on every write) filled it.

use std::collections::HashSet;

use serde_json::Value;

use super::networking::domain_prefixed_path;
use super::templates::{pod_template, push, selector_matches, selector_parses, template_mismatch};
use super::values::{items, label_selector, non_negative, str_of, IMMUTABLE};
use super::{name_problems, qualified_name_problems, FieldError, NameRule};
use crate::gofmt::{go_label_selector, go_pointee, go_pointer, go_quote, go_slice};
use cron::parse_schedule;

mod cron;

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
    let managed_by = &spec["managedBy"];
    if let Some(manager) = managed_by.as_str() {
        let at = format!("{path}.managedBy");
        errors.extend(domain_prefixed_path(&at, manager));
        if manager.len() > MAX_MANAGED_BY {
            errors.push(FieldError::too_long(at, MAX_MANAGED_BY));
        }
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
    if !spec["podFailurePolicy"].is_null() {
        errors.extend(pod_failure_policy(spec, &format!("{path}.podFailurePolicy")));
    }
    let success = &spec["successPolicy"];
    if !success.is_null() {
        let at = format!("{path}.successPolicy");
        if mode != "Indexed" {
            errors.push(FieldError::invalid_shown(
                at,
                &go_success_policy(success),
                "requires indexed completion mode",
            ));
        } else {
            errors.extend(success_policy(spec, &at));
        }
    }
    // With a podFailurePolicy only `Failed` (which it is defaulted to) is allowed.
    let replacement = &spec["podReplacementPolicy"];
    let allowed: &[&str] = if spec["podFailurePolicy"].is_null() {
        &["Failed", "TerminatingOrFailed"]
    } else {
        &["Failed"]
    };
    if replacement.as_str().is_some_and(|p| !allowed.contains(&p)) {
        errors.push(FieldError::unsupported(
            format!("{path}.podReplacementPolicy"),
            replacement,
            allowed,
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

/// Upstream's limits on a job's policies.
const MAX_MANAGED_BY: usize = 63;
const MAX_FAILURE_RULES: usize = 20;
const MAX_EXIT_CODES: usize = 255;
const MAX_CONDITION_PATTERNS: usize = 20;
const MAX_SUCCESS_RULES: usize = 20;
const MAX_SUCCEEDED_INDEXES: usize = 64 * 1024;

/// Upstream's `field.TooMany`: `Too many: 21: must have at most 20 items`.
fn too_many(field: impl Into<String>, actual: usize, max: usize) -> FieldError {
    FieldError {
        reason: "FieldValueTooMany",
        message: format!("Too many: {actual}: must have at most {max} items"),
        field: field.into(),
    }
}

/// `field.Invalid` with upstream's `OmitValueType` as the value: the line has no value, only
/// the detail.
fn invalid_without_value(field: impl Into<String>, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        message: format!("Invalid value: {detail}"),
        field: field.into(),
    }
}

/// `fmt.Sprintf("valid values: %q", list)`: Go's `%q` of a string slice.
fn valid_values(list: &[&str]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| go_quote(s)).collect();
    format!("valid values: [{}]", quoted.join(" "))
}

/// A required enum of the pod failure policy: `Required` with the [`valid_values`] when empty,
/// `NotSupported` when not one of them.
fn required_enum(field: String, value: &Value, supported: &[&str]) -> Option<FieldError> {
    match str_of(value) {
        "" => Some(FieldError::required(field, &valid_values(supported))),
        s if supported.contains(&s) => None,
        _ => Some(FieldError::unsupported(field, value, supported)),
    }
}

/// A `[]int32` as `%#v` prints it (`(nil)` when absent).
fn go_int32s(v: &Value) -> String {
    go_slice("int32", v, |n| n.as_i64().unwrap_or_default().to_string())
}

/// A `batch.SuccessPolicy` as `%#v` prints it.
fn go_success_policy(policy: &Value) -> String {
    let rules = go_slice("batch.SuccessPolicyRule", &policy["rules"], |r| {
        format!(
            "batch.SuccessPolicyRule{{SucceededIndexes:{}, SucceededCount:{}}}",
            go_pointer("string", &r["succeededIndexes"]),
            go_pointer("int32", &r["succeededCount"])
        )
    });
    format!("batch.SuccessPolicy{{Rules:{rules}}}")
}

/// `validatePodFailurePolicy`: at most 20 rules, each with an action and exactly one of
/// `onExitCodes` and `onPodConditions`.
fn pod_failure_policy(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let rules = items(&spec["podFailurePolicy"]["rules"]);
    if rules.len() > MAX_FAILURE_RULES {
        errors.push(too_many(format!("{at}.rules"), rules.len(), MAX_FAILURE_RULES));
    }
    let pod = &spec["template"]["spec"];
    let containers: HashSet<&str> = items(&pod["containers"])
        .iter()
        .chain(items(&pod["initContainers"]))
        .map(|c| str_of(&c["name"]))
        .collect();
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("{at}.rules[{i}]");
        const ACTIONS: [&str; 4] = ["Count", "FailIndex", "FailJob", "Ignore"];
        let action = &rule["action"];
        errors.extend(required_enum(format!("{at}.action"), action, &ACTIONS));
        if action == "FailIndex" && spec["backoffLimitPerIndex"].is_null() {
            errors.push(FieldError::invalid(
                format!("{at}.action"),
                action,
                "requires the backoffLimitPerIndex to be set",
            ));
        }
        let exit_codes = &rule["onExitCodes"];
        let conditions = items(&rule["onPodConditions"]);
        if !exit_codes.is_null() {
            errors.extend(on_exit_codes(exit_codes, &format!("{at}.onExitCodes"), &containers));
        }
        if !conditions.is_empty() {
            errors.extend(on_pod_conditions(conditions, &format!("{at}.onPodConditions")));
        }
        if !exit_codes.is_null() && !conditions.is_empty() {
            errors.push(invalid_without_value(
                &at,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            ));
        }
        if exit_codes.is_null() && conditions.is_empty() {
            errors.push(invalid_without_value(
                &at,
                "specifying one of OnExitCodes and OnPodConditions is required",
            ));
        }
    }
    errors
}

/// A rule's `onExitCodes`: the operator, a container of the template (when named), and 1 to
/// 255 distinct exit codes in increasing order (no 0 with `In`).
fn on_exit_codes(req: &Value, at: &str, containers: &HashSet<&str>) -> Vec<FieldError> {
    const OPERATORS: [&str; 2] = ["In", "NotIn"];
    let mut errors = Vec::new();
    let operator = &req["operator"];
    errors.extend(required_enum(format!("{at}.operator"), operator, &OPERATORS));
    if let Some(name) = req["containerName"].as_str() {
        if !containers.contains(name) {
            errors.push(FieldError::invalid(
                format!("{at}.containerName"),
                &req["containerName"],
                "must be one of the container or initContainer names in the pod template",
            ));
        }
    }
    let values = items(&req["values"]);
    let values_at = format!("{at}.values");
    if values.is_empty() {
        errors.push(FieldError::invalid_shown(
            &values_at,
            &go_int32s(&req["values"]),
            "at least one value is required",
        ));
    } else if values.len() > MAX_EXIT_CODES {
        errors.push(too_many(&values_at, values.len(), MAX_EXIT_CODES));
    }
    let mut seen = HashSet::new();
    let mut ordered = true;
    for (j, v) in values.iter().enumerate() {
        let code = v.as_i64().unwrap_or_default();
        if operator == "In" && code == 0 {
            errors.push(FieldError::invalid(
                format!("{values_at}[{j}]"),
                v,
                "must not be 0 for the In operator",
            ));
        }
        if !seen.insert(code) {
            errors.push(FieldError::duplicate(format!("{values_at}[{j}]"), v));
        }
        if j > 0 && values[j - 1].as_i64().unwrap_or_default() > code {
            ordered = false;
        }
    }
    if !ordered {
        errors.push(FieldError::invalid_shown(
            values_at,
            &go_int32s(&req["values"]),
            "must be ordered",
        ));
    }
    errors
}

/// A rule's `onPodConditions`: at most 20 patterns, each a condition type (a qualified name)
/// and a status.
fn on_pod_conditions(patterns: &[Value], at: &str) -> Vec<FieldError> {
    const STATUSES: [&str; 3] = ["False", "True", "Unknown"];
    let mut errors = Vec::new();
    if patterns.len() > MAX_CONDITION_PATTERNS {
        errors.push(too_many(at, patterns.len(), MAX_CONDITION_PATTERNS));
    }
    for (j, pattern) in patterns.iter().enumerate() {
        let at = format!("{at}[{j}]");
        let kind = str_of(&pattern["type"]);
        for p in qualified_name_problems(kind) {
            errors.push(FieldError::invalid(
                format!("{at}.type"),
                &Value::String(kind.to_string()),
                &p,
            ));
        }
        errors.extend(required_enum(format!("{at}.status"), &pattern["status"], &STATUSES));
    }
    errors
}

/// `validateSuccessPolicy` (indexed jobs only): 1 to 20 rules, each with succeededIndexes
/// (an interval list within the completions) or succeededCount (at most the completions, and
/// at most the indexes listed), or both.
fn success_policy(spec: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let rules = items(&spec["successPolicy"]["rules"]);
    let rules_at = format!("{at}.rules");
    if rules.is_empty() {
        errors.push(FieldError::required(
            &rules_at,
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if rules.len() > MAX_SUCCESS_RULES {
        errors.push(too_many(&rules_at, rules.len(), MAX_SUCCESS_RULES));
    }
    // Indexed jobs require completions (reported on its own); upstream would fail here
    // without them, so the rules are left alone.
    let Some(completions) = spec["completions"].as_i64() else { return errors };
    for (i, rule) in rules.iter().enumerate() {
        let at = format!("{rules_at}[{i}]");
        let (indexes, count) = (&rule["succeededIndexes"], &rule["succeededCount"]);
        if indexes.is_null() && count.is_null() {
            errors.push(FieldError::required(
                &at,
                "at least one of succeededCount or succeededIndexes must be specified",
            ));
        }
        let mut total = 0;
        if let Some(list) = indexes.as_str() {
            let field = format!("{at}.succeededIndexes");
            if list.len() > MAX_SUCCEEDED_INDEXES {
                errors.push(FieldError::too_long(&field, MAX_SUCCEEDED_INDEXES));
            }
            match index_list_total(list, completions) {
                Ok(n) => total = n,
                Err(e) => errors.push(FieldError::invalid(
                    &field,
                    indexes,
                    &format!("error parsing succeededIndexes: {e}"),
                )),
            }
        }
        if let Some(n) = count.as_i64() {
            let field = format!("{at}.succeededCount");
            push(&mut errors, non_negative(&field, count));
            if n > completions {
                errors.push(FieldError::invalid(
                    &field,
                    count,
                    &format!(
                        "must be less than or equal to {completions} (the number of specified completions)"
                    ),
                ));
            }
            if !indexes.is_null() && n > total {
                errors.push(FieldError::invalid(
                    &field,
                    count,
                    &format!(
                        "must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"
                    ),
                ));
            }
        }
    }
    errors
}

/// Go's `strconv.Atoi` for an index: an optional sign, then decimal digits, within int64.
fn atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Upstream's `validateIndexesFormat`: `1,3-5,7` with increasing, non-overlapping intervals
/// below `completions`; the number of indexes, or the error as upstream words it.
fn index_list_total(list: &str, completions: i64) -> Result<i64, String> {
    if list.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0;
    for interval in list.split(',') {
        let (x, y) = index_interval(interval, completions)?;
        if let Some(last) = last.filter(|l| *l >= x) {
            return Err(format!("non-increasing order, previous: {last}, current: {x}"));
        }
        total += y - x + 1;
        last = Some(y);
    }
    Ok(total)
}

/// Upstream's `parseIndexInterval`: `x` or `x-y`, each below `completions`, with x < y.
fn index_interval(interval: &str, completions: i64) -> Result<(i64, i64), String> {
    let parts: Vec<&str> = interval.split('-').collect();
    if parts.len() > 2 {
        return Err(format!(
            "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
            go_quote(interval)
        ));
    }
    let parse = |s: &str| {
        let n = atoi(s).ok_or_else(|| {
            format!("cannot convert string to integer for index: {}", go_quote(s))
        })?;
        if n >= completions {
            return Err(format!("too large index: {}", go_quote(s)));
        }
        Ok(n)
    };
    let x = parse(parts[0])?;
    match parts.get(1) {
        None => Ok((x, x)),
        Some(second) => {
            let y = parse(second)?;
            if x >= y {
                return Err(format!("non-increasing order, previous: {x}, current: {y}"));
            }
            Ok((x, y))
        }
    }
}

/// `ValidateJob` (and `ValidateJobSpecUpdate` on update). rkube does not generate a job's
/// selector, so an absent one is accepted unless `manualSelector` asks for it.
pub fn job(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
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
        errors.extend(job_update(obj, old));
    }
    errors
}

/// `ValidateJobSpecUpdate`: completions (indexed jobs may scale with parallelism), the
/// selector, the pod template (scheduling directives of a suspended job that never started
/// excepted) and a few more fields are fixed.
fn job_update(obj: &Value, old: &Value) -> Vec<FieldError> {
    // Compare with defaults filled in on both sides (a replace may leave them out).
    let (mut new, mut was) = (obj.clone(), old.clone());
    crate::defaults::batch::job(&mut new);
    crate::defaults::batch::job(&mut was);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Resources;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    fn info(group: &str, plural: &str) -> &'static crate::resources::ResourceInfo {
        Resources::builtin().get(group, "v1", plural).unwrap()
    }

    fn job_obj() -> Value {
        let mut j = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "namespace": "default"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "pi", "image": "perl:5.34.0", "command": ["perl", "-e", "print 1"]}]}}}});
        crate::defaults::apply(info("batch", "jobs"), &mut j);
        j
    }

    fn cron_job_obj() -> Value {
        let mut c = json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "hello", "namespace": "default"},
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "hello", "image": "busybox:1.36", "command": ["date"]}]}}}}}});
        crate::defaults::apply(info("batch", "cronjobs"), &mut c);
        c
    }

    #[test]
    fn realistic_jobs_are_valid() {
        let j = job_obj();
        assert_eq!(lines(job(&j, None)), Vec::<String>::new());
        let mut replaced = j.clone();
        replaced["spec"].as_object_mut().unwrap().remove("completions");
        replaced["spec"].as_object_mut().unwrap().remove("parallelism");
        assert_eq!(lines(job(&replaced, Some(&j))), Vec::<String>::new());
        let c = cron_job_obj();
        assert_eq!(lines(cron_job(&c, None)), Vec::<String>::new());
    }

    /// A defaulted job with `spec` merged into its spec.
    fn job_with(spec: Value) -> Value {
        let mut j = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "work", "namespace": "default"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "initContainers": [{"name": "setup", "image": "busybox:1.36"}],
                "containers": [{"name": "main", "image": "busybox:1.36"}]}}}});
        for (k, v) in spec.as_object().unwrap() {
            j["spec"][k] = v.clone();
        }
        crate::defaults::apply(info("batch", "jobs"), &mut j);
        j
    }

    #[test]
    fn realistic_policies_are_valid() {
        let j = job_with(json!({"completionMode": "Indexed", "completions": 10, "parallelism": 2,
            "backoffLimitPerIndex": 1, "maxFailedIndexes": 3, "managedBy": "kueue.x-k8s.io/multikueue",
            "podFailurePolicy": {"rules": [
                {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [1, 42]}},
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                {"action": "FailIndex", "onExitCodes": {"operator": "NotIn", "values": [0]}},
                {"action": "Count", "onPodConditions": [{"type": "example.com/Custom", "status": "Unknown"}]}]},
            "successPolicy": {"rules": [{"succeededIndexes": "0-2,4,6-9", "succeededCount": 5},
                {"succeededCount": 10}, {"succeededIndexes": "+1"}]}}));
        assert_eq!(j["spec"]["podReplacementPolicy"], "Failed");
        assert_eq!(lines(job(&j, None)), Vec::<String>::new());
        assert_eq!(lines(job(&j, Some(&j))), Vec::<String>::new());
    }

    #[test]
    fn pod_failure_policy_rules() {
        let j = job_with(json!({"podFailurePolicy": {"rules": [
            {"onExitCodes": {"values": [3, 1, 3, 0], "operator": "In", "containerName": "other"}},
            {"action": "Retry", "onExitCodes": {"operator": "Above", "values": []}},
            // A pattern's missing status is defaulted to True, as upstream's.
            {"action": "FailIndex", "onPodConditions": [{"type": "Bad Type", "status": "Maybe"}, {"type": "Ready"}]},
            {"action": "Ignore"},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1]},
                "onPodConditions": [{"type": "Ready", "status": "False"}]},
            {"action": "Count", "onExitCodes": {}}]},
            "podReplacementPolicy": "TerminatingOrFailed"}));
        let qualified = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        let at = "spec.podFailurePolicy.rules";
        assert_eq!(
            lines(job(&j, None)),
            [
                format!("{at}[0].action: Required value: valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]"),
                format!("{at}[0].onExitCodes.containerName: Invalid value: \"other\": must be one of the container or initContainer names in the pod template"),
                format!("{at}[0].onExitCodes.values[2]: Duplicate value: 3"),
                format!("{at}[0].onExitCodes.values[3]: Invalid value: 0: must not be 0 for the In operator"),
                format!("{at}[0].onExitCodes.values: Invalid value: []int32{{3, 1, 3, 0}}: must be ordered"),
                format!("{at}[1].action: Unsupported value: \"Retry\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\""),
                format!("{at}[1].onExitCodes.operator: Unsupported value: \"Above\": supported values: \"In\", \"NotIn\""),
                format!("{at}[1].onExitCodes.values: Invalid value: []int32{{}}: at least one value is required"),
                format!("{at}[2].action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set"),
                format!("{at}[2].onPodConditions[0].type: Invalid value: \"Bad Type\": {qualified}"),
                format!("{at}[2].onPodConditions[0].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\""),
                format!("{at}[3]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required"),
                format!("{at}[4]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"),
                format!("{at}[5].onExitCodes.operator: Required value: valid values: [\"In\" \"NotIn\"]"),
                format!("{at}[5].onExitCodes.values: Invalid value: []int32(nil): at least one value is required"),
                "spec.podReplacementPolicy: Unsupported value: \"TerminatingOrFailed\": supported values: \"Failed\"".to_string(),
            ]
        );
        // Too many rules, too many exit codes and patterns; OnFailure pods.
        let rule = json!({"action": "Ignore", "onExitCodes": {"operator": "In",
            "values": (1..=256).collect::<Vec<i32>>()}});
        let conditions: Vec<Value> =
            (0..21).map(|i| json!({"type": format!("C{i}"), "status": "True"})).collect();
        let mut rules = vec![rule; 20];
        rules.push(json!({"action": "Ignore", "onPodConditions": conditions}));
        let mut j = job_with(json!({"podFailurePolicy": {"rules": rules}}));
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        let got = lines(job(&j, None));
        assert_eq!(got[0], format!("{at}: Too many: 21: must have at most 20 items"));
        assert_eq!(
            got[1],
            format!("{at}[0].onExitCodes.values: Too many: 256: must have at most 255 items")
        );
        assert_eq!(
            got[21],
            format!("{at}[20].onPodConditions: Too many: 21: must have at most 20 items")
        );
        assert_eq!(
            got[22],
            "spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified"
        );
        assert_eq!(got.len(), 23);
    }

    #[test]
    fn success_policy_rules() {
        let j = job_with(json!({"successPolicy": {"rules": [{"succeededCount": 1}]}}));
        assert_eq!(
            lines(job(&j, None)),
            ["spec.successPolicy: Invalid value: batch.SuccessPolicy{Rules:[]batch.SuccessPolicyRule{batch.SuccessPolicyRule{SucceededIndexes:(*string)(nil), SucceededCount:(*int32)(0xc000a1c000)}}}: requires indexed completion mode"]
        );
        let indexed = |policy: Value| {
            job_with(json!({"completionMode": "Indexed", "completions": 5, "parallelism": 5,
                "successPolicy": policy}))
        };
        assert_eq!(
            lines(job(&indexed(json!({})), None)),
            ["spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified"]
        );
        let j = indexed(json!({"rules": [
            {},
            {"succeededIndexes": "0-2,1", "succeededCount": 2},
            {"succeededIndexes": "1-3", "succeededCount": 4},
            {"succeededCount": -1},
            {"succeededCount": 6},
            {"succeededIndexes": "5"},
            {"succeededIndexes": "1-2-3"},
            {"succeededIndexes": "a"},
            {"succeededIndexes": "3-1"},
            {"succeededIndexes": "-1"},
            {"succeededIndexes": ""}]}));
        let at = "spec.successPolicy.rules";
        assert_eq!(
            lines(job(&j, None)),
            [
                format!("{at}[0]: Required value: at least one of succeededCount or succeededIndexes must be specified"),
                format!("{at}[1].succeededIndexes: Invalid value: \"0-2,1\": error parsing succeededIndexes: non-increasing order, previous: 2, current: 1"),
                format!("{at}[1].succeededCount: Invalid value: 2: must be less than or equal to 0 (the number of indexes in the specified succeededIndexes field)"),
                format!("{at}[2].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of indexes in the specified succeededIndexes field)"),
                format!("{at}[3].succeededCount: Invalid value: -1: must be greater than or equal to 0"),
                format!("{at}[4].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)"),
                format!("{at}[5].succeededIndexes: Invalid value: \"5\": error parsing succeededIndexes: too large index: \"5\""),
                format!("{at}[6].succeededIndexes: Invalid value: \"1-2-3\": error parsing succeededIndexes: the fragment \"1-2-3\" violates the requirement that an index interval can have at most two parts separated by '-'"),
                format!("{at}[7].succeededIndexes: Invalid value: \"a\": error parsing succeededIndexes: cannot convert string to integer for index: \"a\""),
                format!("{at}[8].succeededIndexes: Invalid value: \"3-1\": error parsing succeededIndexes: non-increasing order, previous: 3, current: 1"),
                format!("{at}[9].succeededIndexes: Invalid value: \"-1\": error parsing succeededIndexes: cannot convert string to integer for index: \"\""),
            ]
        );
        let rules: Vec<Value> = (0..21).map(|_| json!({"succeededCount": 1})).collect();
        assert_eq!(
            lines(job(&indexed(json!({"rules": rules})), None)),
            ["spec.successPolicy.rules: Too many: 21: must have at most 20 items"]
        );
        let long = json!({"rules": [{"succeededIndexes": "1,".repeat(40_000)}]});
        let got = lines(job(&indexed(long), None));
        assert_eq!(
            got[0],
            "spec.successPolicy.rules[0].succeededIndexes: Too long: may not be more than 65536 bytes"
        );
    }

    #[test]
    fn managed_by_and_per_index_limits() {
        let j = job_with(json!({"managedBy": "kueue", "backoffLimitPerIndex": 1,
            "maxFailedIndexes": 2}));
        assert_eq!(
            lines(job(&j, None)),
            [
                "spec.managedBy: Invalid value: \"kueue\": must be a domain-prefixed path (such as \"acme.io/foo\")",
                "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
                "spec.maxFailedIndexes: Invalid value: 2: requires indexed completion mode",
            ]
        );
        let j = job_with(json!({"managedBy": format!("example.com/{}", "x".repeat(60))}));
        assert_eq!(
            lines(job(&j, None)),
            ["spec.managedBy: Too long: may not be more than 63 bytes"]
        );
        let j = job_with(json!({"completionMode": "Indexed", "completions": 200000,
            "parallelism": 20000, "backoffLimitPerIndex": 1, "maxFailedIndexes": 20000}));
        let detail = "must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index";
        assert_eq!(
            lines(job(&j, None)),
            [
                format!("spec.parallelism: Invalid value: 20000: {detail}"),
                format!("spec.maxFailedIndexes: Invalid value: 20000: {detail}"),
            ]
        );
    }

    #[test]
    fn jobs() {
        let mut j = job_obj();
        j["spec"]["parallelism"] = json!(-1);
        j["spec"]["backoffLimit"] = json!(-2);
        j["spec"]["ttlSecondsAfterFinished"] = json!(-3);
        j["spec"]["completionMode"] = json!("Sometimes");
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            lines(job(&j, None)),
            [
                "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0",
                "spec.ttlSecondsAfterFinished: Invalid value: -3: must be greater than or equal to 0",
                "spec.completionMode: Unsupported value: \"Sometimes\": supported values: \"NonIndexed\", \"Indexed\"",
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            ]
        );
        let mut j = job_obj();
        j["spec"]["selector"] = json!({"matchLabels": {"app": "x"}});
        j["spec"]["backoffLimitPerIndex"] = json!(1);
        assert_eq!(
            lines(job(&j, None)),
            [
                "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
                "spec.template.metadata.labels: Invalid value: map[string]string(nil): `selector` does not match template `labels`",
            ]
        );
        let mut j = job_obj();
        j["metadata"]["name"] = json!("a".repeat(62));
        j["spec"]["completionMode"] = json!("Indexed");
        j["spec"]["completions"] = json!(10);
        assert_eq!(
            lines(job(&j, None)),
            [format!("metadata.name: Invalid value: \"{0}\": will not able to create pod with invalid DNS label: {0}-9", "a".repeat(62))]
        );
        // Updates: completions and the template are fixed.
        let old = job_obj();
        let mut j = job_obj();
        j["spec"]["completions"] = json!(3);
        j["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl:5.36");
        let got = lines(job(&j, Some(&old)));
        assert_eq!(got[0], "spec.completions: Invalid value: 3: field is immutable");
        assert!(
            got[1].starts_with("spec.template: Invalid value: ")
                && got[1].ends_with(": field is immutable")
        );
        // A suspended job that never started may change its scheduling directives.
        let mut old = job_obj();
        old["spec"]["suspend"] = json!(true);
        let mut j = old.clone();
        j["spec"]["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"});
        assert_eq!(lines(job(&j, Some(&old))), Vec::<String>::new());
    }

    #[test]
    fn cron_jobs() {
        let schedule = |s: &str| {
            let mut c = cron_job_obj();
            c["spec"]["schedule"] = json!(s);
            lines(cron_job(&c, None))
        };
        assert_eq!(
            schedule("*/5 * * *"),
            ["spec.schedule: Invalid value: \"*/5 * * *\": expected exactly 5 fields, found 4: [*/5 * * *]"]
        );
        assert_eq!(
            schedule("61 * * * *"),
            ["spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61"]
        );
        assert_eq!(
            schedule("x * * * *"),
            ["spec.schedule: Invalid value: \"x * * * *\": failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"]
        );
        assert_eq!(
            schedule("@often"),
            ["spec.schedule: Invalid value: \"@often\": unrecognized descriptor: @often"]
        );
        assert_eq!(
            schedule("@every 1d"),
            ["spec.schedule: Invalid value: \"@every 1d\": failed to parse duration @every 1d: time: unknown unit \"d\" in duration \"1d\""]
        );
        assert_eq!(
            schedule("CRON_TZ=UTC * * * * *"),
            ["spec.schedule: Invalid value: \"CRON_TZ=UTC * * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"]
        );
        assert_eq!(schedule(""), ["spec.schedule: Required value"]);

        let mut c = cron_job_obj();
        c["spec"]["concurrencyPolicy"] = json!("Never");
        c["spec"]["startingDeadlineSeconds"] = json!(-1);
        c["spec"]["successfulJobsHistoryLimit"] = json!(-1);
        c["spec"]["timeZone"] = json!("Local");
        c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        c["spec"]["jobTemplate"]["spec"]["selector"] = json!({"matchLabels": {"a": "b"}});
        c["metadata"]["name"] = json!("n".repeat(53));
        assert_eq!(
            lines(cron_job(&c, None)),
            [
                "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
                "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
                "spec.concurrencyPolicy: Unsupported value: \"Never\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
                "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
                "spec.jobTemplate.spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"b\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated",
                "spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
                &format!("metadata.name: Invalid value: \"{}\": must be no more than 52 characters", "n".repeat(53)),
            ]
        );
    }
}
