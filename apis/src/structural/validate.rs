//! Validation of a custom object against its version's schema, with the field paths and
//! messages kube-apiserver gives: kube-openapi's schema validation (`<path> in body must be
//! of type integer: "string"`, `<path> in body should match '<pattern>'`, ...) turned into
//! field errors as apiextensions-apiserver turns them, then the uniqueness of
//! `x-kubernetes-list-type` `set` and `map` lists (`Duplicate value`).
//!
//! `x-kubernetes-validations` (CEL) rules are not evaluated here.

use serde_json::{Map, Value};

use super::formats::valid_format;
use super::{Items, Props, Schema};
use crate::gofmt::{go_float, go_quote};
use crate::validation::FieldError;

pub(super) fn object(schema: &Schema, obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    node(schema, &schema.root, obj, "", &mut errors);
    list_sets_and_maps(&schema.root, obj, "", &mut errors);
    errors
}

/// The problems of a value of the schema's root as a validator rooted at it reports them:
/// messages name paths from the value (the value itself as the empty path, as kube-openapi
/// does), and each error's field is under `at`.
pub(super) fn value(schema: &Schema, v: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = object(schema, v);
    for e in &mut errors {
        e.field = match e.field.as_str() {
            "" => at.to_string(),
            relative => format!("{at}.{relative}"),
        };
    }
    errors
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// A bad value as `field.Error` prints it (`%q` for strings, `%v` for numbers and booleans).
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Number(n) if !n.is_i64() && !n.is_u64() => go_float(n.as_f64().unwrap_or(0.0)),
        Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

fn invalid(path: &str, value: &Value, detail: String) -> FieldError {
    FieldError::invalid_shown(path, &shown(value), &detail)
}

/// kube-openapi's `InvalidType`, reported as `field.TypeInvalid`.
fn type_invalid(path: &str, type_name: &str, actual: &str) -> FieldError {
    let quoted = go_quote(actual);
    FieldError {
        reason: "FieldValueTypeInvalid",
        message: format!(
            "Invalid value: {quoted}: {path} in body must be of type {type_name}: {quoted}"
        ),
        field: path.to_string(),
    }
}

fn too_many(path: &str, actual: usize, max: i64) -> FieldError {
    let unit = if max == 1 { "item" } else { "items" };
    FieldError {
        reason: "FieldValueTooMany",
        message: format!("Too many: {actual}: must have at most {max} {unit}"),
        field: path.to_string(),
    }
}

/// The JSON type kube-openapi infers for a decoded value.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The types the value may have (`x-kubernetes-int-or-string` is integer or string).
fn types(s: &Props) -> Vec<&str> {
    if s.int_or_string {
        vec!["integer", "string"]
    } else if s.type_.is_empty() {
        Vec::new()
    } else {
        vec![s.type_.as_str()]
    }
}

fn number(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn count(v: &Option<Value>) -> Option<i64> {
    v.as_ref().and_then(Value::as_i64)
}

/// Whether one schema holds the value, without reporting why not (for `anyOf`, `oneOf`
/// and `not`).
fn holds(schema: &Schema, s: &Props, value: &Value, path: &str) -> bool {
    let mut errors = Vec::new();
    node(schema, s, value, path, &mut errors);
    errors.is_empty()
}

fn node(schema: &Schema, s: &Props, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let allowed = types(s);
    let actual = json_type(value);
    if value.is_null() {
        if !allowed.is_empty() && !s.nullable {
            errors.push(type_invalid(path, &allowed.join(","), "null"));
        }
        return;
    }
    if !allowed.is_empty() {
        let float_int = actual == "number"
            && allowed.contains(&"integer")
            && value.as_f64().is_some_and(|f| f.fract() == 0.0);
        let int_float = actual == "integer" && allowed.contains(&"number");
        if !(allowed.contains(&actual) || float_int || int_float) {
            errors.push(type_invalid(path, &allowed.join(","), actual));
            return;
        }
    }
    compositions(schema, s, value, path, errors);
    match value {
        Value::String(text) => string(schema, s, text, value, path, errors),
        Value::Number(_) => numeric(s, value, path, errors),
        _ => {}
    }
    if let Some(choices) = &s.enumeration {
        if !choices.iter().any(|c| same_value(c, value)) {
            let names: Vec<String> = choices
                .iter()
                .map(|c| match c {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            errors.push(FieldError::unsupported_shown(path, &shown(value), &names));
        }
    }
    match value {
        Value::Array(list) => array(schema, s, list, path, errors),
        Value::Object(map) => object_fields(schema, s, map, path, errors),
        _ => {}
    }
}

/// Equality as Go's `reflect.DeepEqual` sees decoded JSON, but numbers by value.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

fn compositions(
    schema: &Schema,
    s: &Props,
    value: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let at = if path.is_empty() { "" } else { path };
    if let Some(all) = &s.all_of {
        let before = errors.len();
        for sub in all {
            node(schema, sub, value, path, errors);
        }
        if errors.len() > before {
            errors.push(invalid(
                at,
                &Value::String(String::new()),
                format!("{path} in body must validate all the schemas (allOf)"),
            ));
        }
    }
    if let Some(any) = &s.any_of {
        if !any.iter().any(|sub| holds(schema, sub, value, path)) {
            errors.push(invalid(
                at,
                &Value::String(String::new()),
                format!("{path} in body must validate at least one schema (anyOf)"),
            ));
        }
    }
    if let Some(one) = &s.one_of {
        let n = one.iter().filter(|sub| holds(schema, sub, value, path)).count();
        if n != 1 {
            errors.push(invalid(
                at,
                &Value::String(String::new()),
                format!("{path} in body must validate one and only one schema (oneOf)"),
            ));
        }
    }
    if let Some(not) = &s.not {
        if holds(schema, not, value, path) {
            errors.push(invalid(
                at,
                &Value::String(String::new()),
                format!("{path} in body must not validate the schema (not)"),
            ));
        }
    }
}

fn string(
    schema: &Schema,
    s: &Props,
    text: &str,
    value: &Value,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let chars = text.chars().count() as i64;
    if let Some(max) = count(&s.max_length) {
        if chars > max {
            errors.push(FieldError::too_long(path, max as usize));
        }
    }
    if let Some(min) = count(&s.min_length) {
        if chars < min {
            errors.push(invalid(
                path,
                value,
                format!("{path} in body should be at least {min} chars long"),
            ));
        }
    }
    if !s.pattern.is_empty() {
        if let Some(re) = schema.pattern(&s.pattern) {
            if !re.is_match(text) {
                errors.push(invalid(
                    path,
                    value,
                    format!("{path} in body should match '{}'", s.pattern),
                ));
            }
        }
    }
    if !s.format.is_empty() && !valid_format(&s.format, text) {
        errors.push(type_invalid(path, &s.format, text));
    }
}

fn numeric(s: &Props, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    let Some(x) = number(value) else { return };
    if let Some(m) = s.multiple_of.as_ref().and_then(number) {
        if m != 0.0 && ((x / m).fract().abs() > f64::EPSILON * 8.0) {
            errors.push(invalid(
                path,
                value,
                format!("{path} in body should be a multiple of {}", go_float(m)),
            ));
        }
    }
    if let Some(max) = s.maximum.as_ref().and_then(number) {
        if s.exclusive_maximum && x >= max {
            errors.push(invalid(
                path,
                value,
                format!("{path} in body should be less than {}", go_float(max)),
            ));
        } else if x > max {
            errors.push(invalid(
                path,
                value,
                format!("{path} in body should be less than or equal to {}", go_float(max)),
            ));
        }
    }
    if let Some(min) = s.minimum.as_ref().and_then(number) {
        if s.exclusive_minimum && x <= min {
            errors.push(invalid(
                path,
                value,
                format!("{path} in body should be greater than {}", go_float(min)),
            ));
        } else if x < min {
            errors.push(invalid(
                path,
                value,
                format!("{path} in body should be greater than or equal to {}", go_float(min)),
            ));
        }
    }
}

fn array(schema: &Schema, s: &Props, list: &[Value], path: &str, errors: &mut Vec<FieldError>) {
    let len = list.len();
    if let Some(min) = count(&s.min_items) {
        if (len as i64) < min {
            errors.push(invalid(
                path,
                &Value::from(len),
                format!("{path} in body should have at least {min} items"),
            ));
        }
    }
    if let Some(max) = count(&s.max_items) {
        if len as i64 > max {
            errors.push(too_many(path, len, max));
        }
    }
    if s.unique_items {
        let dup = list.iter().enumerate().any(|(i, a)| list[..i].iter().any(|b| same_value(a, b)));
        if dup {
            errors.push(invalid(
                path,
                &Value::String(String::new()),
                format!("{path} in body shouldn't contain duplicates"),
            ));
        }
    }
    match &s.items {
        Some(Items::Schema(item)) => {
            for (i, v) in list.iter().enumerate() {
                node(schema, item, v, &format!("{path}[{i}]"), errors);
            }
        }
        Some(Items::Array(items)) => {
            for (i, (v, item)) in list.iter().zip(items).enumerate() {
                node(schema, item, v, &format!("{path}[{i}]"), errors);
            }
        }
        None => {}
    }
}

fn object_fields(
    schema: &Schema,
    s: &Props,
    map: &Map<String, Value>,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let len = map.len();
    if let Some(min) = count(&s.min_properties) {
        if (len as i64) < min {
            errors.push(invalid(
                path,
                &Value::from(len),
                format!("{path} in body should have at least {min} properties"),
            ));
        }
    }
    if let Some(max) = count(&s.max_properties) {
        if len as i64 > max {
            errors.push(too_many(path, len, max));
        }
    }
    for name in s.required.iter().flatten() {
        if !map.contains_key(name) {
            errors.push(FieldError::required(child(path, name), ""));
        }
    }
    if s.embedded_resource {
        for field in ["apiVersion", "kind"] {
            if map.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
                errors.push(FieldError::required(child(path, field), "must not be empty"));
            }
        }
    }
    let additional = s.additional_properties.as_ref().and_then(|a| a.schema.as_deref());
    for (name, v) in map {
        let at = child(path, name);
        if let Some(prop) = s.property(name) {
            node(schema, prop, v, &at, errors);
        } else if let Some(extra) = additional {
            node(schema, extra, v, &at, errors);
        }
    }
}

/// `ValidateListSetsAndMaps`: the items of a `set` list are unique, and so are the key
/// values of a `map` list's items.
fn list_sets_and_maps(s: &Props, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => {
            let additional = s.additional_properties.as_ref().and_then(|a| a.schema.as_deref());
            for (name, v) in map {
                if let Some(prop) = s.property(name).or(additional) {
                    list_sets_and_maps(prop, v, &child(path, name), errors);
                }
            }
        }
        Value::Array(list) => {
            match s.list_type.as_deref() {
                Some("set") => {
                    for (i, item) in list.iter().enumerate() {
                        if list[..i].iter().any(|b| same_value(item, b)) {
                            errors.push(FieldError::duplicate_shown(
                                format!("{path}[{i}]"),
                                &shown(item),
                            ));
                        }
                    }
                }
                Some("map") => {
                    let keys = s.list_map_keys.clone().unwrap_or_default();
                    let key_of = |item: &Value| -> Vec<Value> {
                        keys.iter().map(|k| item.get(k).cloned().unwrap_or(Value::Null)).collect()
                    };
                    for (i, item) in list.iter().enumerate() {
                        let mine = key_of(item);
                        if list[..i]
                            .iter()
                            .any(|b| key_of(b).iter().zip(&mine).all(|(x, y)| same_value(x, y)))
                        {
                            errors.push(FieldError::duplicate_shown(
                                format!("{path}[{i}]"),
                                &go_key_map(&keys, &mine),
                            ));
                        }
                    }
                }
                _ => {}
            }
            if let Some(item) = s.item_schema() {
                for (i, v) in list.iter().enumerate() {
                    list_sets_and_maps(item, v, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

/// A map list item's keys as `field.Duplicate` prints them: Go's `%#v` of a
/// `map[string]interface{}` (keys sorted).
fn go_key_map(keys: &[String], values: &[Value]) -> String {
    let mut pairs: Vec<(&String, &Value)> =
        keys.iter().zip(values).filter(|(_, v)| !v.is_null()).collect();
    pairs.sort_by(|a, b| a.0.cmp(b.0));
    let body: Vec<String> = pairs
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => go_quote(s),
                other => shown(other),
            };
            format!("{}:{v}", go_quote(k))
        })
        .collect();
    format!("map[string]interface {{}}{{{}}}", body.join(", "))
}
