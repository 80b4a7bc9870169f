//! Nodes, with upstream's (v1.33) messages and field paths (`ValidateNode` and
//! `ValidateNodeUpdate`): taints, pod CIDRs, provider ID, config source, status quantities
//! and the alpha annotations upstream still decodes; an update gets the create checks of the
//! new object and then the update checks, as upstream's strategy runs them (so a spec error
//! shows twice where upstream's does). Metadata is checked by the caller.
//!
//! Upstream validates the internal form of a Node, where `podCIDR` and `podCIDRs` are one
//! list: `podCIDRs`, unless `podCIDR` is set and differs from its first entry (then
//! `podCIDR` alone). The checks here read the v1 object the same way.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::gofmt::{go_json_kind, go_pointer, go_quote, go_string_slice};
use crate::validation::net::cidr_legacy;
use crate::validation::values::{
    config_key_problems, invalid_each, items, quantity_value, str_of, text,
};
use crate::validation::{
    label_value_problems, name_problems, qualified_name_problems, FieldError, NameRule,
};

const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
/// The alpha annotations upstream still validates on Nodes.
const TAINTS_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/taints";
const AVOID_PODS_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/preferAvoidPods";
const POD_CIDR_CHANGE: &str = "node updates may not change podCIDR except from \"\" to valid";
const PROVIDER_ID_CHANGE: &str = "node updates may not change providerID except from \"\" to valid";

/// `ValidateNode`, and on update `ValidateNodeUpdate` after it (the Node strategy runs both).
pub fn node(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = node_create(obj);
    if let Some(old) = old {
        errors.extend(node_update(obj, old));
    }
    errors
}

/// `ValidateNode` without the metadata: the alpha annotations, taints (at upstream's
/// `metadata.taints`), status quantities and pod CIDRs.
fn node_create(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    node_annotations(obj, &mut errors);
    let taint_list = items(&obj["spec"]["taints"]);
    if !taint_list.is_empty() {
        taints(taint_list, "metadata.taints", &mut errors);
    }
    node_resources(obj, &mut errors);
    pod_cidrs(&effective_pod_cidrs(&obj["spec"]), &mut errors);
    errors
}

/// `ValidateNodeUpdate` without the metadata: what may change in the spec (pod CIDRs and the
/// provider ID only from unset, never the external ID), duplicate addresses, the config
/// sources, and again the annotations, quantities and taints.
fn node_update(obj: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    node_annotations(obj, &mut errors);
    node_resources(obj, &mut errors);

    let mut seen = BTreeSet::new();
    for (i, a) in items(&obj["status"]["addresses"]).iter().enumerate() {
        let (kind, address) = (str_of(&a["type"]), str_of(&a["address"]));
        if !seen.insert((kind, address)) {
            errors.push(FieldError::duplicate_shown(
                format!("status.addresses[{i}]"),
                &format!(
                    "core.NodeAddress{{Type:{}, Address:{}}}",
                    go_quote(kind),
                    go_quote(address)
                ),
            ));
        }
    }

    let (new_cidrs, old_cidrs) =
        (effective_pod_cidrs(&obj["spec"]), effective_pod_cidrs(&old["spec"]));
    if !old_cidrs.is_empty() {
        if old_cidrs.len() != new_cidrs.len() {
            errors.push(FieldError::forbidden("spec.podCIDRs", POD_CIDR_CHANGE));
        } else {
            for _ in old_cidrs.iter().zip(&new_cidrs).filter(|(o, n)| o != n) {
                errors.push(FieldError::forbidden("spec.podCIDRs", POD_CIDR_CHANGE));
            }
        }
    }

    let old_provider = str_of(&old["spec"]["providerID"]);
    if !old_provider.is_empty() && old_provider != str_of(&obj["spec"]["providerID"]) {
        errors.push(FieldError::forbidden("spec.providerID", PROVIDER_ID_CHANGE));
    }

    // Upstream drops a new `configSource` unless the stored node already has one (the
    // dynamic kubelet config it served is gone), so only then is it checked.
    let source = &obj["spec"]["configSource"];
    if !source.is_null() && !old["spec"]["configSource"].is_null() {
        config_source(source, "spec.configSource", false, &mut errors);
    }
    let config = &obj["status"]["config"];
    for key in ["assigned", "active", "lastKnownGood"] {
        if !config[key].is_null() {
            config_source(&config[key], &format!("status.config.{key}"), true, &mut errors);
        }
    }

    let taint_list = items(&obj["spec"]["taints"]);
    if !taint_list.is_empty() {
        taints(taint_list, "metadata.taints", &mut errors);
    }

    if str_of(&obj["spec"]["externalID"]) != str_of(&old["spec"]["externalID"]) {
        errors.push(FieldError::forbidden("spec.externalID", "may not be updated"));
    }
    errors
}

/// The pod CIDRs as upstream's conversion to the internal Node reads `podCIDR` and
/// `podCIDRs`: `podCIDR` wins when both are set and differ.
fn effective_pod_cidrs(spec: &Value) -> Vec<String> {
    let single = str_of(&spec["podCIDR"]);
    let list: Vec<String> =
        items(&spec["podCIDRs"]).iter().map(|c| str_of(c).to_string()).collect();
    if !single.is_empty() && list.first().is_none_or(|first| first != single) {
        vec![single.to_string()]
    } else {
        list
    }
}

/// Each CIDR well formed (the legacy check), and more than one only as one IPv4 and one IPv6,
/// without repeats.
fn pod_cidrs(cidrs: &[String], errors: &mut Vec<FieldError>) {
    let at = "spec.podCIDRs";
    for (i, c) in cidrs.iter().enumerate() {
        errors.extend(cidr_legacy(&format!("{at}[{i}]"), c));
    }
    if cidrs.len() < 2 {
        return;
    }
    // `netutils.IsDualStackCIDRStrings`: stops at the first CIDR it cannot read.
    let bad = cidrs.iter().position(|c| !cidr_legacy("", c).is_empty());
    if let Some(i) = bad {
        errors.push(FieldError {
            reason: "InternalError",
            message: format!(
                "Internal error: invalid PodCIDRs. failed to check with dual stack with error:invalid CIDR[{i}]: <nil> (invalid CIDR address: {})",
                cidrs[i]
            ),
            field: at.to_string(),
        });
    }
    let families: BTreeSet<u8> =
        cidrs.iter().filter_map(|c| crate::validation::net::family(c)).collect();
    let dual_stack = bad.is_none() && families.len() == 2;
    if !dual_stack || cidrs.len() > 2 {
        errors.push(FieldError::invalid_shown(
            at,
            &go_string_slice(Some(cidrs)),
            "may specify no more than one CIDR for each IP family",
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, c) in cidrs.iter().enumerate() {
        if !seen.insert(c) {
            errors.push(FieldError::duplicate(format!("{at}[{i}]"), &text(c)));
        }
    }
}

/// `validateNodeTaints`: key a label name, value a label value, effect required and known,
/// and one taint per key and effect.
fn taints(list: &[Value], at: &str, errors: &mut Vec<FieldError>) {
    let mut seen = BTreeSet::new();
    for (i, t) in list.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let (key, value, effect) = (str_of(&t["key"]), str_of(&t["value"]), str_of(&t["effect"]));
        invalid_each(qualified_name_problems(key), &format!("{at}.key"), key, errors);
        let problems = label_value_problems(value);
        if !problems.is_empty() {
            errors.push(FieldError::invalid(
                format!("{at}.value"),
                &text(value),
                &problems.join(";"),
            ));
        }
        if effect.is_empty() {
            errors.push(FieldError::required(format!("{at}.effect"), ""));
        } else if !TAINT_EFFECTS.contains(&effect) {
            errors.push(FieldError::unsupported(
                format!("{at}.effect"),
                &text(effect),
                &TAINT_EFFECTS,
            ));
        }
        if !seen.insert((effect, key)) {
            let shown = format!(
                "core.Taint{{Key:{}, Value:{}, Effect:{}, TimeAdded:{}}}",
                go_quote(key),
                go_quote(value),
                go_quote(effect),
                go_pointer("v1.Time", &t["timeAdded"])
            );
            let mut e = FieldError::duplicate_shown(at, &shown);
            e.message.push_str(": taints must be unique by key and effect pair");
            errors.push(e);
        }
    }
}

/// `ValidateNodeResources`: every capacity and allocatable quantity non-negative, and whole
/// for the resources counted in units (`status.capacity.<name>`, upstream's path).
fn node_resources(obj: &Value, errors: &mut Vec<FieldError>) {
    for list in ["capacity", "allocatable"] {
        for (name, q) in obj["status"][list].as_object().into_iter().flatten() {
            quantity_value(name, q, &format!("status.{list}.{name}"), errors);
        }
    }
}

/// A `NodeConfigSource` in the spec (`status` false: no uid or resourceVersion) or in the
/// status (both required): exactly one reference, a ConfigMap's namespace, name and key.
fn config_source(source: &Value, at: &str, status: bool, errors: &mut Vec<FieldError>) {
    let map = &source["configMap"];
    if !map.is_null() {
        let at = format!("{at}.configMap");
        for (field, what) in [("uid", "uid"), ("resourceVersion", "resourceVersion")] {
            let set = !str_of(&map[field]).is_empty();
            if status && !set {
                errors.push(FieldError::required(
                    format!("{at}.{field}"),
                    &format!("{what} must be set in status"),
                ));
            } else if !status && set {
                errors.push(FieldError::forbidden(
                    format!("{at}.{field}"),
                    &format!("{what} must not be set in spec"),
                ));
            }
        }
        let namespace = str_of(&map["namespace"]);
        if namespace.is_empty() {
            errors.push(FieldError::required(format!("{at}.namespace"), "namespace must be set"));
        } else {
            let problems = name_problems(namespace, NameRule::Label);
            invalid_each(problems, &format!("{at}.namespace"), namespace, errors);
        }
        let name = str_of(&map["name"]);
        if name.is_empty() {
            errors.push(FieldError::required(format!("{at}.name"), "name must be set"));
        } else {
            invalid_each(
                name_problems(name, NameRule::Subdomain),
                &format!("{at}.name"),
                name,
                errors,
            );
        }
        let key = str_of(&map["kubeletConfigKey"]);
        if key.is_empty() {
            errors.push(FieldError::required(
                format!("{at}.kubeletConfigKey"),
                "kubeletConfigKey must be set",
            ));
        } else {
            invalid_each(config_key_problems(key), &format!("{at}.kubeletConfigKey"), key, errors);
        }
    } else {
        errors.push(FieldError::invalid_shown(
            at,
            "core.NodeConfigSource{ConfigMap:(*core.ConfigMapNodeConfigSource)(nil)}",
            "exactly one reference subfield must be non-nil",
        ));
    }
}

// Node annotations upstream still reads: the alpha taints and preferAvoidPods.

/// `ValidateNodeSpecificAnnotations`: each annotation decoded as upstream's `json.Unmarshal`
/// would (its error message is the detail), then its entries checked.
fn node_annotations(obj: &Value, errors: &mut Vec<FieldError>) {
    let annotations = &obj["metadata"]["annotations"];
    let at = "metadata.annotations";
    if let Some(raw) = annotations[TAINTS_ANNOTATION].as_str().filter(|s| !s.is_empty()) {
        match go_decode(raw).and_then(|v| decode_taints(&v)) {
            Err(e) => errors.push(FieldError::invalid(at, &text(TAINTS_ANNOTATION), &e)),
            Ok(list) if !list.is_empty() => {
                taints(&list, &format!("{at}.{TAINTS_ANNOTATION}"), errors);
            }
            Ok(_) => {}
        }
    }
    if let Some(raw) = annotations[AVOID_PODS_ANNOTATION].as_str().filter(|s| !s.is_empty()) {
        match go_decode(raw).and_then(|v| decode_avoid_pods(&v)) {
            Err(e) => errors.push(FieldError::invalid(
                format!("{at}.AvoidPods"),
                &text(AVOID_PODS_ANNOTATION),
                &e,
            )),
            Ok(entries) => {
                for (i, controller) in entries.iter().enumerate() {
                    let at = format!("{at}.{AVOID_PODS_ANNOTATION}[{i}].PodSignature");
                    match controller {
                        None => errors.push(FieldError::required(at, "")),
                        // Upstream dereferences `controller` (a nil one panics there).
                        Some(false) => errors.push(FieldError::invalid(
                            format!("{at}.PodController.Controller"),
                            &json!(false),
                            "must point to a controller",
                        )),
                        Some(true) => {}
                    }
                }
            }
        }
    }
}

/// `json: cannot unmarshal ...`: into a value, or into a struct field (`Struct.path`).
fn type_error(v: &Value, field: Option<(&str, &str)>, type_name: &str) -> String {
    let kind = go_json_kind(v);
    match field {
        None => format!("json: cannot unmarshal {kind} into Go value of type {type_name}"),
        Some((owner, path)) => format!(
            "json: cannot unmarshal {kind} into Go struct field {owner}.{path} of type {type_name}"
        ),
    }
}

/// The field of a JSON object Go's decoder fills for `name`: an exact match, else one that
/// differs only in case (the last such key wins, as it overwrites the others).
fn go_field<'a>(m: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    m.get(name)
        .or_else(|| m.iter().rev().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v))
}

/// `json.Unmarshal` of the taints annotation into `[]core.Taint`: the taints (as v1 JSON),
/// or the error. A type error is kept while decoding goes on; a bad `timeAdded` (decoded by
/// `metav1.Time` itself) stops it.
fn decode_taints(v: &Value) -> Result<Vec<Value>, String> {
    let list = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Array(list) => list,
        other => return Err(type_error(other, None, "[]core.Taint")),
    };
    let mut saved = None;
    let mut out = Vec::new();
    for item in list {
        let m = match item {
            Value::Null => {
                out.push(json!({}));
                continue;
            }
            Value::Object(m) => m,
            other => {
                saved.get_or_insert_with(|| type_error(other, None, "core.Taint"));
                out.push(json!({}));
                continue;
            }
        };
        let mut taint = Map::new();
        for (field, type_name) in
            [("key", "string"), ("value", "string"), ("effect", "core.TaintEffect")]
        {
            match go_field(m, field) {
                None | Some(Value::Null) => {}
                Some(s @ Value::String(_)) => {
                    taint.insert(field.to_string(), s.clone());
                }
                Some(other) => {
                    saved.get_or_insert_with(|| {
                        type_error(other, Some(("Taint", field)), type_name)
                    });
                }
            }
        }
        match go_field(m, "timeAdded") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => {
                if chrono::DateTime::parse_from_rfc3339(s).is_err() {
                    return Err(format!(
                        "parsing time {} as \"2006-01-02T15:04:05Z07:00\": cannot parse {} as \"2006\"",
                        go_quote(s),
                        go_quote(s)
                    ));
                }
                taint.insert("timeAdded".to_string(), json!(s));
            }
            Some(other) => return Err(type_error(other, Some(("Taint", "timeAdded")), "string")),
        }
        out.push(Value::Object(taint));
    }
    saved.map_or(Ok(out), Err)
}

/// `json.Unmarshal` of the preferAvoidPods annotation into `v1.AvoidPods`: per entry, its
/// pod controller's `controller` flag (`None` when there is no pod controller).
fn decode_avoid_pods(v: &Value) -> Result<Vec<Option<bool>>, String> {
    let root = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Object(m) => m,
        other => return Err(type_error(other, None, "v1.AvoidPods")),
    };
    let list = match go_field(root, "preferAvoidPods") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => {
            return Err(type_error(
                other,
                Some(("AvoidPods", "preferAvoidPods")),
                "[]v1.PreferAvoidPodsEntry",
            ))
        }
    };
    let mut saved = None;
    let mut out = Vec::new();
    let mut save = |e: String| {
        saved.get_or_insert(e);
    };
    for entry in list {
        let signature = match entry {
            Value::Object(m) => go_field(m, "podSignature"),
            Value::Null => None,
            other => {
                save(type_error(
                    other,
                    Some(("AvoidPods", "preferAvoidPods")),
                    "v1.PreferAvoidPodsEntry",
                ));
                None
            }
        };
        let controller = match signature {
            Some(Value::Object(m)) => go_field(m, "podController"),
            None | Some(Value::Null) => None,
            Some(other) => {
                let at = ("PreferAvoidPodsEntry", "preferAvoidPods.podSignature");
                save(type_error(other, Some(at), "v1.PodSignature"));
                None
            }
        };
        out.push(match controller {
            Some(Value::Object(m)) => Some(match go_field(m, "controller") {
                Some(Value::Bool(b)) => *b,
                None | Some(Value::Null) => false,
                Some(other) => {
                    let at =
                        ("OwnerReference", "preferAvoidPods.podSignature.podController.controller");
                    save(type_error(other, Some(at), "bool"));
                    false
                }
            }),
            None | Some(Value::Null) => None,
            Some(other) => {
                let at = ("PodSignature", "preferAvoidPods.podSignature.podController");
                save(type_error(other, Some(at), "v1.OwnerReference"));
                None
            }
        });
    }
    saved.map_or(Ok(out), Err)
}

/// Parses an annotation's text as JSON, with Go's syntax error messages when it is not.
fn go_decode(raw: &str) -> Result<Value, String> {
    let mut scan = GoScan { b: raw.as_bytes(), i: 0 };
    scan.ws();
    scan.value()?;
    scan.ws();
    if let Some(c) = scan.peek() {
        return Err(scan.bad(c, "after top-level value"));
    }
    // Go accepts what serde may not (lone surrogates): such text reads as nothing.
    Ok(serde_json::from_str(raw).unwrap_or(Value::Null))
}

/// Go's `encoding/json` scanner, for its messages: `invalid character 'x' looking for
/// beginning of value`, `unexpected end of JSON input`, ...
struct GoScan<'a> {
    b: &'a [u8],
    i: usize,
}

const GO_EOF: &str = "unexpected end of JSON input";

impl GoScan<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Result<u8, String> {
        let c = self.peek().ok_or_else(|| GO_EOF.to_string())?;
        self.i += 1;
        Ok(c)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    /// `invalid character 'c' <context>`, the byte quoted as Go's `quoteChar`.
    fn bad(&self, c: u8, context: &str) -> String {
        let shown = match c {
            b'\'' => "'\\''".to_string(),
            b'"' => "'\"'".to_string(),
            _ => {
                let q = go_quote(&char::from(c).to_string());
                format!("'{}'", &q[1..q.len() - 1])
            }
        };
        format!("invalid character {shown} {context}")
    }

    fn value(&mut self) -> Result<(), String> {
        let c = self.peek().ok_or_else(|| GO_EOF.to_string())?;
        match c {
            b'{' => {
                self.i += 1;
                self.object()
            }
            b'[' => {
                self.i += 1;
                self.array()
            }
            b'"' => {
                self.i += 1;
                self.string()
            }
            b'-' | b'0'..=b'9' => self.number(),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => Err(self.bad(c, "looking for beginning of value")),
        }
    }

    fn object(&mut self) -> Result<(), String> {
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            let c = self.next()?;
            if c != b'"' {
                return Err(self.bad(c, "looking for beginning of object key string"));
            }
            self.string()?;
            self.ws();
            let c = self.next()?;
            if c != b':' {
                return Err(self.bad(c, "after object key"));
            }
            self.ws();
            self.value()?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b'}' => return Ok(()),
                c => return Err(self.bad(c, "after object key:value pair")),
            }
        }
    }

    fn array(&mut self) -> Result<(), String> {
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.value()?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b']' => return Ok(()),
                c => return Err(self.bad(c, "after array element")),
            }
        }
    }

    fn string(&mut self) -> Result<(), String> {
        loop {
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            let c = self.next()?;
                            if !c.is_ascii_hexdigit() {
                                return Err(self.bad(c, "in \\u hexadecimal character escape"));
                            }
                        }
                    }
                    c => return Err(self.bad(c, "in string escape code")),
                },
                c if c < 0x20 => return Err(self.bad(c, "in string literal")),
                _ => {}
            }
        }
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }

    fn number(&mut self) -> Result<(), String> {
        if self.peek() == Some(b'-') {
            self.i += 1;
            let c = self.peek().ok_or_else(|| GO_EOF.to_string())?;
            if !c.is_ascii_digit() {
                return Err(self.bad(c, "in numeric literal"));
            }
        }
        if self.next()? != b'0' {
            self.digits();
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            let c = self.next()?;
            if !c.is_ascii_digit() {
                return Err(self.bad(c, "after decimal point in numeric literal"));
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            let mut c = self.next()?;
            if c == b'+' || c == b'-' {
                c = self.next()?;
            }
            if !c.is_ascii_digit() {
                return Err(self.bad(c, "in exponent of numeric literal"));
            }
            self.digits();
        }
        Ok(())
    }

    fn literal(&mut self, word: &str) -> Result<(), String> {
        self.i += 1;
        for expected in word.bytes().skip(1) {
            let c = self.next()?;
            if c != expected {
                let context = format!("in literal {word} (expecting '{}')", char::from(expected));
                return Err(self.bad(c, &context));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    /// A node as rkube's kubelet registers it, with the status it reports.
    fn kubelet_node() -> Value {
        json!({
            "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"},
                "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                    "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"]},
            "status": {
                "capacity": {"cpu": "4", "memory": "8029256Ki", "ephemeral-storage": "61202244Ki",
                    "pods": "110", "hugepages-1Gi": "0", "hugepages-2Mi": "0"},
                "allocatable": {"cpu": "4", "memory": "7926856Ki", "ephemeral-storage": "56403987978",
                    "pods": "110", "hugepages-1Gi": "0", "hugepages-2Mi": "0"},
                "addresses": [{"type": "InternalIP", "address": "10.0.0.5"},
                    {"type": "Hostname", "address": "n1"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            },
        })
    }

    #[test]
    fn realistic_nodes_are_valid() {
        let n = kubelet_node();
        assert!(node(&n, None).is_empty());
        let mut labelled = n.clone();
        labelled["metadata"]["labels"]["disk"] = json!("ssd");
        labelled["spec"]["unschedulable"] = json!(true);
        labelled["spec"]["taints"] = json!([
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2024-01-01T00:00:00Z"},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
            {"key": "dedicated", "value": "gpu", "effect": "PreferNoSchedule"}]);
        assert!(node(&labelled, Some(&n)).is_empty());
        // The node IPAM controller gives a CIDR to a node without one.
        let mut bare = n.clone();
        bare["spec"] = json!({});
        assert!(node(&n, Some(&bare)).is_empty());
        // The scheduler tests' nodes: no spec, a status with a condition.
        let api_only = json!({"metadata": {"name": "a"}, "spec": {}, "status": {
            "allocatable": {"cpu": "4", "memory": "4Gi", "pods": "110"},
            "capacity": {"cpu": "4", "memory": "4Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}]}});
        assert!(node(&api_only, None).is_empty());
    }

    #[test]
    fn node_taints() {
        let n = json!({"spec": {"taints": [
            {"key": "a b", "value": "-x", "effect": "NoSchedule"},
            {"key": "k", "effect": ""},
            {"key": "k", "effect": "Never"},
            {"key": "k", "value": "v", "effect": "NoExecute", "timeAdded": "2024-01-01T00:00:00Z"},
            {"key": "k", "value": "w", "effect": "NoExecute"}]}});
        assert_eq!(
            lines(node(&n, None)),
            [
                "metadata.taints[0].key: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "metadata.taints[0].value: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "metadata.taints[1].effect: Required value",
                "metadata.taints[2].effect: Unsupported value: \"Never\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                "metadata.taints[4]: Duplicate value: core.Taint{Key:\"k\", Value:\"w\", Effect:\"NoExecute\", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair",
            ]
        );
    }

    #[test]
    fn node_pod_cidrs() {
        let with = |spec: Value| lines(node(&json!({"spec": spec}), None));
        assert!(with(json!({"podCIDRs": ["10.0.0.0/24", "fd00::/64"]})).is_empty());
        // Legacy parsing: host bits and leading zeros are fine.
        assert!(with(json!({"podCIDR": "10.0.0.1/024"})).is_empty());
        assert_eq!(
            with(json!({"podCIDR": "10.0.0.0/33"})),
            ["spec.podCIDRs[0]: Invalid value: \"10.0.0.0/33\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
        );
        assert_eq!(
            with(json!({"podCIDRs": ["10.0.0.0/24", "10.1.0.0/24", "10.0.0.0/24"]})),
            [
                "spec.podCIDRs: Invalid value: []string{\"10.0.0.0/24\", \"10.1.0.0/24\", \"10.0.0.0/24\"}: may specify no more than one CIDR for each IP family",
                "spec.podCIDRs[2]: Duplicate value: \"10.0.0.0/24\"",
            ]
        );
        assert_eq!(
            with(json!({"podCIDRs": ["fd00::/64", "x"]})),
            [
                "spec.podCIDRs[1]: Invalid value: \"x\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                "spec.podCIDRs: Internal error: invalid PodCIDRs. failed to check with dual stack with error:invalid CIDR[1]: <nil> (invalid CIDR address: x)",
                "spec.podCIDRs: Invalid value: []string{\"fd00::/64\", \"x\"}: may specify no more than one CIDR for each IP family",
            ]
        );
        // `podCIDR` wins over a `podCIDRs` that disagrees with it.
        assert_eq!(
            with(json!({"podCIDR": "bad", "podCIDRs": ["10.0.0.0/24", "10.1.0.0/24"]})),
            ["spec.podCIDRs[0]: Invalid value: \"bad\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
        );
    }

    #[test]
    fn node_status_quantities() {
        let n = json!({"status": {"capacity": {"cpu": "-1", "pods": "1500m", "example.com/gpu": "1"},
            "allocatable": {"memory": "-1Gi"}}});
        assert_eq!(
            lines(node(&n, None)),
            [
                "status.capacity.cpu: Invalid value: \"-1\": must be greater than or equal to 0",
                "status.capacity.pods: Invalid value: resource.Quantity{i:resource.int64Amount{value:1500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"1500m\", Format:\"DecimalSI\"}: must be an integer",
                "status.allocatable.memory: Invalid value: \"-1Gi\": must be greater than or equal to 0",
            ]
        );
    }

    #[test]
    fn node_updates() {
        let old = json!({"spec": {"podCIDR": "10.0.0.0/24", "podCIDRs": ["10.0.0.0/24"],
            "providerID": "aws:///i-1", "externalID": "e"},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]}});
        let new = json!({"spec": {"podCIDR": "10.0.1.0/24", "podCIDRs": ["10.0.1.0/24"],
            "providerID": "aws:///i-2"},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.5"},
                {"type": "InternalIP", "address": "10.0.0.5"}]}});
        assert_eq!(
            lines(node(&new, Some(&old))),
            [
                "status.addresses[1]: Duplicate value: core.NodeAddress{Type:\"InternalIP\", Address:\"10.0.0.5\"}",
                "spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid",
                "spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid",
                "spec.externalID: Forbidden: may not be updated",
            ]
        );
        let dual = json!({"spec": {"podCIDRs": ["10.0.1.0/24", "fd00::/64"], "providerID": "aws:///i-1",
            "externalID": "e"}});
        assert_eq!(
            lines(node(&dual, Some(&old))),
            ["spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid"]
        );
        // Taints are checked twice on update, as upstream's strategy does.
        let tainted = json!({"spec": {"taints": [{"key": "k"}]}});
        assert_eq!(
            lines(node(&tainted, Some(&json!({})))),
            [
                "metadata.taints[0].effect: Required value",
                "metadata.taints[0].effect: Required value"
            ]
        );
    }

    #[test]
    fn node_config_sources() {
        let source = json!({"configMap": {"namespace": "kube-system", "name": "c", "uid": "u",
            "kubeletConfigKey": "k"}});
        let new = json!({"spec": {"configSource": source}, "status": {"config": {
            "assigned": {"configMap": {"namespace": "Bad", "name": "", "kubeletConfigKey": "a b"}},
            "active": {}}}});
        let old = json!({"spec": {"configSource": {}}});
        assert_eq!(
            lines(node(&new, Some(&old))),
            [
                "spec.configSource.configMap.uid: Forbidden: uid must not be set in spec",
                "status.config.assigned.configMap.uid: Required value: uid must be set in status",
                "status.config.assigned.configMap.resourceVersion: Required value: resourceVersion must be set in status",
                "status.config.assigned.configMap.namespace: Invalid value: \"Bad\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "status.config.assigned.configMap.name: Required value: name must be set",
                "status.config.assigned.configMap.kubeletConfigKey: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                "status.config.active: Invalid value: core.NodeConfigSource{ConfigMap:(*core.ConfigMapNodeConfigSource)(nil)}: exactly one reference subfield must be non-nil",
            ]
        );
        // A config source the stored node did not have is dropped upstream: no errors.
        let fresh = json!({"spec": {"configSource": {}}});
        assert!(node(&fresh, Some(&json!({}))).is_empty());
        assert!(node(&fresh, None).is_empty());
    }

    #[test]
    fn node_annotations_as_upstream_decodes_them() {
        let with = |key: &str, value: &str| {
            lines(node(&json!({"metadata": {"annotations": {key: value}}}), None))
        };
        assert_eq!(
            with(
                TAINTS_ANNOTATION,
                "[{\"key\": \"k\"}, {\"Key\": \"k\", \"effect\": \"NoSchedule\"}]"
            ),
            ["metadata.annotations.scheduler.alpha.kubernetes.io/taints[0].effect: Required value"]
        );
        assert_eq!(
            with(TAINTS_ANNOTATION, "nope"),
            ["metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/taints\": invalid character 'o' in literal null (expecting 'u')"]
        );
        assert_eq!(
            with(TAINTS_ANNOTATION, "[{\"key\": 1}]"),
            ["metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/taints\": json: cannot unmarshal number into Go struct field Taint.key of type string"]
        );
        assert_eq!(
            with(TAINTS_ANNOTATION, "{}"),
            ["metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/taints\": json: cannot unmarshal object into Go value of type []core.Taint"]
        );
        assert_eq!(
            with(AVOID_PODS_ANNOTATION, "{\"preferAvoidPods\": [{\"podSignature\": {}},
                {\"podSignature\": {\"podController\": {\"kind\": \"ReplicaSet\", \"controller\": false}}}]}"),
            [
                "metadata.annotations.scheduler.alpha.kubernetes.io/preferAvoidPods[0].PodSignature: Required value",
                "metadata.annotations.scheduler.alpha.kubernetes.io/preferAvoidPods[1].PodSignature.PodController.Controller: Invalid value: false: must point to a controller",
            ]
        );
        assert_eq!(
            with(AVOID_PODS_ANNOTATION, "{\"preferAvoidPods\": [] x"),
            ["metadata.annotations.AvoidPods: Invalid value: \"scheduler.alpha.kubernetes.io/preferAvoidPods\": invalid character 'x' after object key:value pair"]
        );
    }

    #[test]
    fn go_json_syntax_messages() {
        let e = |s: &str| go_decode(s).err().unwrap_or_default();
        assert_eq!(e("[1,]"), "invalid character ']' looking for beginning of value");
        assert_eq!(e("[1"), "unexpected end of JSON input");
        assert_eq!(e("{1:2}"), "invalid character '1' looking for beginning of object key string");
        assert_eq!(e("{\"a\" 2}"), "invalid character '2' after object key");
        assert_eq!(e("[1 2]"), "invalid character '2' after array element");
        assert_eq!(e("\"a\nb\""), "invalid character '\\n' in string literal");
        assert_eq!(e("\"\\x\""), "invalid character 'x' in string escape code");
        assert_eq!(e("-x"), "invalid character 'x' in numeric literal");
        assert_eq!(e("1.e3"), "invalid character 'e' after decimal point in numeric literal");
        assert_eq!(e("1e+"), "unexpected end of JSON input");
        assert_eq!(e("01"), "invalid character '1' after top-level value");
        assert_eq!(e("'a'"), "invalid character '\\'' looking for beginning of value");
        assert!(go_decode(" [ {\"a\": [true, false, null, -0.5e-3, \"\\u00e9\"]} ] ").is_ok());
    }
}
