//! Checks of single values that many kinds share (ports, port names and protocols, counts,
//! percents, enums, names used as field values, label and annotation maps, label selectors,
//! config keys, resource names and quantities), each giving upstream's field error.
//! Each takes the field path first, then the value.

use serde_json::Value;

use super::{label_value_problems, name_problems, qualified_name_problems, FieldError, NameRule};
use crate::gofmt::{go_int_or_string, go_quantity};
use crate::quantity::Quantity;

const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// The message of every "may not change" error.
pub const IMMUTABLE: &str = "field is immutable";

/// Upstream's `InclusiveRangeError`: "must be between `lo` and `hi`, inclusive".
pub fn range_msg(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

/// `1..=65535`, or upstream's "must be between 1 and 65535, inclusive".
pub fn port_number(field: &str, value: &Value) -> Option<FieldError> {
    let ok = value.as_i64().is_some_and(|p| (1..=65535).contains(&p));
    (!ok).then(|| FieldError::invalid(field, value, &range_msg(1, 65535)))
}

/// The problems with a port name (an IANA service name), as upstream's `IsValidPortName`.
pub fn port_name_problems(name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if name.len() > 15 {
        problems.push("must be no more than 15 characters".to_string());
    }
    let b = name.as_bytes();
    if b.is_empty() || !b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    {
        problems.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !b.iter().any(u8::is_ascii_lowercase) {
        problems.push("must contain at least one letter (a-z)".to_string());
    }
    if name.contains("--") {
        problems.push("must not contain consecutive hyphens".to_string());
    }
    if b.first() == Some(&b'-') || b.last() == Some(&b'-') {
        problems.push("must not begin or end with a hyphen".to_string());
    }
    problems
}

/// A port name's field errors (one `Invalid value` per problem).
pub fn port_name(field: &str, value: &Value) -> Vec<FieldError> {
    let name = value.as_str().unwrap_or_default();
    port_name_problems(name).iter().map(|p| FieldError::invalid(field, value, p)).collect()
}

/// An integer field that may be absent but not negative (upstream's
/// `ValidateNonnegativeField`).
pub fn non_negative(field: &str, value: &Value) -> Option<FieldError> {
    let bad = value.as_i64().is_some_and(|v| v < 0);
    bad.then(|| FieldError::invalid(field, value, "must be greater than or equal to 0"))
}

/// A string field that, when set, is one of `supported` (listed in the order upstream
/// prints them).
pub fn one_of(field: &str, value: &Value, supported: &[&str]) -> Option<FieldError> {
    let bad = match value {
        Value::Null => false,
        Value::String(s) => !supported.contains(&s.as_str()),
        _ => true,
    };
    bad.then(|| FieldError::unsupported(field, value, supported))
}

/// [`one_of`] for a field upstream defaults when unset or empty (so its `Required` never
/// fires there): `""` is accepted too, for the defaults rkube does not fill.
pub fn one_of_or_empty(field: &str, value: &Value, supported: &[&str]) -> Option<FieldError> {
    if value == "" {
        return None;
    }
    one_of(field, value, supported)
}

/// Upstream's `ValidateLabels`: every key a qualified name, every value a label value, all
/// reported at the map's path.
pub fn label_map(field: &str, labels: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (k, v) in labels.as_object().into_iter().flatten() {
        for p in qualified_name_problems(k) {
            errors.push(FieldError::invalid(field, &Value::String(k.clone()), &p));
        }
        match v.as_str() {
            Some(s) => {
                for p in label_value_problems(s) {
                    errors.push(FieldError::invalid(field, v, &p));
                }
            }
            // Only an untyped object gets here (built-in kinds are decoded first).
            None => errors.push(FieldError::invalid(field, v, "must be a string")),
        }
    }
    errors
}

/// Upstream's `ValidateAnnotations`: keys are (lower-cased) qualified names, 256 KiB in all.
pub fn annotation_map(field: &str, annotations: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut total = 0;
    for (k, v) in annotations.as_object().into_iter().flatten() {
        for p in qualified_name_problems(&k.to_lowercase()) {
            errors.push(FieldError::invalid(field, &Value::String(k.clone()), &p));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
    }
    if total > 256 * 1024 {
        errors.push(FieldError::too_long(field, 256 * 1024));
    }
    errors
}

/// ConfigMap and Secret keys, as upstream's `IsConfigMapKey`.
pub fn config_key_problems(key: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if key.len() > 253 {
        problems.push("must be no more than 253 characters".to_string());
    }
    if key.is_empty()
        || !key.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        problems.push(CONFIG_KEY_MSG.to_string());
    }
    match key {
        "." => problems.push("must not be '.'".to_string()),
        ".." => problems.push("must not be '..'".to_string()),
        _ if key.starts_with("..") => problems.push("must not start with '..'".to_string()),
        _ => {}
    }
    problems
}

/// A `LabelSelector` (`matchLabels` and `matchExpressions`), as upstream's
/// `ValidateLabelSelector`: keys and values of `matchLabels`, then each expression's operator
/// (against its number of values), key and values (at `...matchExpressions[i].values[j]`).
/// A null selector has no errors.
pub fn label_selector(field: &str, selector: &Value) -> Vec<FieldError> {
    let mut errors = label_map(&format!("{field}.matchLabels"), &selector["matchLabels"]);
    let expressions = selector["matchExpressions"].as_array();
    for (i, e) in expressions.into_iter().flatten().enumerate() {
        let at = format!("{field}.matchExpressions[{i}]");
        let values = e["values"].as_array().map_or(0, Vec::len);
        match e["operator"].as_str() {
            Some("In" | "NotIn") if values == 0 => errors.push(FieldError::required(
                format!("{at}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            Some("Exists" | "DoesNotExist") if values > 0 => errors.push(FieldError::forbidden(
                format!("{at}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            Some("In" | "NotIn" | "Exists" | "DoesNotExist") => {}
            _ => errors.push(FieldError::invalid(
                format!("{at}.operator"),
                &e["operator"],
                "not a valid selector operator",
            )),
        }
        let key = e["key"].as_str().unwrap_or_default();
        for p in qualified_name_problems(key) {
            errors.push(FieldError::invalid(format!("{at}.key"), &e["key"], &p));
        }
        for (j, v) in e["values"].as_array().into_iter().flatten().enumerate() {
            for p in label_value_problems(v.as_str().unwrap_or_default()) {
                errors.push(FieldError::invalid(format!("{at}.values[{j}]"), v, &p));
            }
        }
    }
    errors
}

/// A resource name in the `kubernetes.io` domain (or without a domain): cpu, memory,
/// hugepages-2Mi, ... (upstream's `IsNativeResource`).
pub fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// The resources counted in whole units (upstream's `integerResources`), all of them
/// standard resource names (and standard quota resource names) too.
pub const INTEGER_RESOURCES: [&str; 9] = [
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// Upstream's `IsIntegerResourceName`: an integer resource or an extended resource.
pub fn is_integer_resource(name: &str) -> bool {
    INTEGER_RESOURCES.contains(&name) || is_extended_resource(name)
}

/// One of the resource names upstream knows (`IsStandardResourceName`), for containers and
/// quotas alike: the [`INTEGER_RESOURCES`], these, and hugepages.
pub fn is_standard_resource(name: &str) -> bool {
    const STANDARD: [&str; 11] = [
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "storage",
        "requests.storage",
    ];
    STANDARD.contains(&name)
        || INTEGER_RESOURCES.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
}

/// A quantity in thousandths, rounded up, as upstream's `MilliValue`.
pub fn milli(q: &Quantity) -> i128 {
    let m = q.nanos.div_euclid(1_000_000);
    if q.nanos.rem_euclid(1_000_000) != 0 {
        m + 1
    } else {
        m
    }
}

/// Upstream's `ValidateResourceQuantityValue`: not negative, and whole for an integer
/// resource (`name`). A value that is not a quantity is left alone.
pub fn quantity_value(name: &str, v: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let Some(q) = Quantity::parse(v) else { return };
    if q.nanos < 0 {
        let canonical = Value::String(q.canonical());
        errors.push(FieldError::invalid(at, &canonical, "must be greater than or equal to 0"));
    }
    if is_integer_resource(name) && milli(&q) % 1000 != 0 {
        errors.push(FieldError::invalid_shown(at, &go_quantity(v, false), "must be an integer"));
    }
}

/// A hostPath volume's `type`, as upstream lists them (`""` is no check).
pub const HOST_PATH_TYPES: [&str; 8] = [
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];

/// A string as a bad value.
pub fn text(s: &str) -> Value {
    Value::String(s.to_string())
}

/// A string field as a `&str`: `""` when unset (or not a string), as Go reads it.
pub fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// A list field's items: none when unset.
pub fn items(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

/// A path with `..` as one of its segments: upstream's "must not contain '..'".
pub fn no_backsteps(path: &str, at: &str, errors: &mut Vec<FieldError>) {
    if path.replace('\\', "/").split('/').any(|part| part == "..") {
        errors.push(FieldError::invalid(at, &Value::String(path.into()), "must not contain '..'"));
    }
}

/// Upstream's `ValidateResourceName`: a qualified name, and one of the standard names
/// unless it has a domain prefix.
pub fn resource_name(name: &str, at: &str, errors: &mut Vec<FieldError>) {
    let value = Value::String(name.to_string());
    let problems = qualified_name_problems(name);
    for p in &problems {
        errors.push(FieldError::invalid(at, &value, p));
    }
    if problems.is_empty() && !name.contains('/') && !is_standard_resource(name) {
        errors.push(FieldError::invalid(
            at,
            &value,
            "must be a standard resource type or fully qualified",
        ));
    }
}

/// An extended resource name (`example.com/foo`): outside `kubernetes.io`, and a valid
/// quota key as `requests.<name>` (upstream's `IsExtendedResourceName`).
pub fn is_extended_resource(name: &str) -> bool {
    !is_native_resource(name)
        && !name.starts_with("requests.")
        && qualified_name_problems(&format!("requests.{name}")).is_empty()
}

/// A container resource name: [`resource_name`], then upstream's
/// `validateContainerResourceName` (cpu, memory, ephemeral-storage, hugepages, or an extended
/// resource).
pub fn container_resource_name(name: &str, at: &str, errors: &mut Vec<FieldError>) {
    resource_name(name, at, errors);
    let value = Value::String(name.to_string());
    if !name.contains('/') {
        let container = matches!(name, "cpu" | "memory" | "ephemeral-storage")
            || name.starts_with("hugepages-");
        if !container {
            errors.push(FieldError::invalid(
                at,
                &value,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native_resource(name) && !is_extended_resource(name) {
        errors.push(FieldError::invalid(
            at,
            &value,
            "doesn't follow extended resource name standard",
        ));
    }
}

// ---------------------------------------------------------------------------------------
// Names and protocols as field values.

/// One `Invalid` error per problem upstream's name check found.
pub fn problems_at(field: &str, value: &str, problems: Vec<String>) -> Vec<FieldError> {
    problems.iter().map(|p| FieldError::invalid(field, &text(value), p)).collect()
}

/// `ValidateDNS1123Label`.
pub fn dns_label(field: &str, value: &str) -> Vec<FieldError> {
    problems_at(field, value, name_problems(value, NameRule::Label))
}

/// `ValidateNodeName`: a DNS subdomain.
pub fn node_name(field: &str, value: &str) -> Vec<FieldError> {
    problems_at(field, value, name_problems(value, NameRule::Subdomain))
}

/// `ValidateQualifiedName`.
pub fn qualified_name(field: &str, value: &str) -> Vec<FieldError> {
    problems_at(field, value, qualified_name_problems(value))
}

/// An `appProtocol` when set: a qualified name.
pub fn app_protocol(field: &str, value: &Value) -> Vec<FieldError> {
    match value {
        Value::Null => Vec::new(),
        v => qualified_name(field, str_of(v)),
    }
}

pub fn invalid_each(problems: Vec<String>, at: &str, value: &str, errors: &mut Vec<FieldError>) {
    for p in problems {
        errors.push(FieldError::invalid(at, &text(value), &p));
    }
}

/// `field.Required(path, "")` when empty, else one `Invalid` per path-segment problem (the
/// rule for object references' kinds and names and RBAC role names).
pub fn path_segment(at: &str, v: &Value, errors: &mut Vec<FieldError>) {
    let s = str_of(v);
    if s.is_empty() {
        errors.push(FieldError::required(at, ""));
    } else {
        for p in name_problems(s, NameRule::PathSegment) {
            errors.push(FieldError::invalid(at, v, &p));
        }
    }
}

pub const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];

/// A port's protocol: required, and TCP, UDP or SCTP.
pub fn protocol(field: &str, value: &Value) -> Option<FieldError> {
    if str_of(value).is_empty() {
        return Some(FieldError::required(field, ""));
    }
    one_of(field, value, &PROTOCOLS)
}

// ---------------------------------------------------------------------------------------
// Lists of strings.

pub fn strings(v: &Value) -> Option<Vec<&str>> {
    v.as_array().map(|a| a.iter().map(str_of).collect())
}

// ---------------------------------------------------------------------------------------
// Resource names of quotas and limit ranges.

pub fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// Upstream's `IsStandardQuotaResourceName`: the integer resources, these, and hugepages.
pub fn is_standard_quota_resource(name: &str) -> bool {
    const STANDARD: [&str; 10] = [
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.storage",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
    ];
    STANDARD.contains(&name)
        || INTEGER_RESOURCES.contains(&name)
        || is_hugepages(name)
        || name.starts_with("requests.hugepages-")
}

// ---------------------------------------------------------------------------------------
// Percents (int-or-string counts).

/// `IsValidPercent`: the number of a `NN%` string.
pub fn percent(s: &str) -> Option<i64> {
    let digits = s.strip_suffix('%')?;
    let ok = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    ok.then(|| digits.parse().unwrap_or(i64::MAX))
}

/// `getIntOrPercentValue`: a percent's number, else the value as an integer (a string that
/// is no number counts as 0).
pub fn int_or_percent_value(v: &Value) -> i64 {
    match v {
        Value::String(s) => percent(s).unwrap_or_else(|| s.parse().unwrap_or(0)),
        other => other.as_i64().unwrap_or(0),
    }
}

pub const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// `ValidatePositiveIntOrPercent`.
pub fn positive_int_or_percent(field: &str, v: &Value) -> Option<FieldError> {
    match v {
        Value::String(s) if percent(s).is_none() => {
            Some(FieldError::invalid_shown(field, &go_int_or_string(v), PERCENT_MSG))
        }
        Value::String(_) => None,
        other => non_negative(field, other),
    }
}

/// `IsNotMoreThan100Percent`.
pub fn not_over_100_percent(field: &str, v: &Value) -> Option<FieldError> {
    let over = v.as_str().and_then(percent).is_some_and(|p| p > 100);
    over.then(|| {
        FieldError::invalid_shown(field, &go_int_or_string(v), "must not be greater than 100%")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn port_names_follow_iana_rules() {
        assert!(port_name_problems("http").is_empty());
        assert!(port_name_problems("web-8080").is_empty());
        assert_eq!(
            port_name_problems("Bad_Name"),
            ["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"]
        );
        assert_eq!(port_name_problems("8080"), ["must contain at least one letter (a-z)"]);
        assert_eq!(
            port_name_problems("-a--b-"),
            ["must not contain consecutive hyphens", "must not begin or end with a hyphen"]
        );
        assert_eq!(port_name_problems("abcdefghijklmnop"), ["must be no more than 15 characters"]);
    }

    #[test]
    fn selectors_and_scalars() {
        let lines = |e: Vec<FieldError>| e.iter().map(FieldError::line).collect::<Vec<_>>();
        assert_eq!(
            lines(label_selector(
                "spec.selector",
                &json!({"matchExpressions": [{"key": "a", "operator": "In"},
                    {"key": "b", "operator": "Exists", "values": ["x"]},
                    {"key": "c", "operator": "Maybe"}]})
            )),
            [
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                "spec.selector.matchExpressions[2].operator: Invalid value: \"Maybe\": not a valid selector operator",
            ]
        );
        assert_eq!(
            non_negative("spec.replicas", &json!(-2)).unwrap().line(),
            "spec.replicas: Invalid value: -2: must be greater than or equal to 0"
        );
        assert!(non_negative("spec.replicas", &Value::Null).is_none());
        assert_eq!(
            one_of("p", &json!("XTP"), &["SCTP", "TCP", "UDP"]).unwrap().line(),
            "p: Unsupported value: \"XTP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
        );
        assert!(port_number("p", &json!(70000)).is_some());
        assert!(port_number("p", &json!(80)).is_none());
    }

    #[test]
    fn selector_values_enums_and_config_keys() {
        let lines = |e: Vec<FieldError>| e.iter().map(FieldError::line).collect::<Vec<_>>();
        // Upstream's order: each expression's operator, key, then values.
        assert_eq!(
            lines(label_selector(
                "s",
                &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["ok", "-x"]},
                    {"key": "b/c/d", "operator": "In", "values": ["y"]}]})
            ))
            .iter()
            .map(|l| l.split(": ").next().unwrap_or_default())
            .collect::<Vec<_>>(),
            ["s.matchExpressions[0].values[1]", "s.matchExpressions[1].key"]
        );
        assert!(one_of_or_empty("f", &json!(""), &["A"]).is_none());
        assert!(one_of_or_empty("f", &Value::Null, &["A"]).is_none());
        assert!(one_of("f", &json!(""), &["A"]).is_some());
        assert_eq!(
            one_of_or_empty("f", &json!("B"), &["A"]).unwrap().line(),
            "f: Unsupported value: \"B\": supported values: \"A\""
        );
        assert!(config_key_problems("key.name").is_empty());
        assert_eq!(config_key_problems("."), ["must not be '.'"]);
        assert_eq!(config_key_problems("..a"), ["must not start with '..'"]);
        assert_eq!(config_key_problems(&"a".repeat(254)), ["must be no more than 253 characters"]);
    }
}
