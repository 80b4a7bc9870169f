//! JSON to CEL values, as upstream's unstructured values read: objects are maps with string
//! keys, arrays lists, integers `int` (a `uint` only past `int`'s range), other numbers
//! `double`. Read with their schema ([`from_json_typed`]), values take the type the checker
//! gives the schema (`check::Type::of_schema`), as apiextensions' CEL does: `number`s are
//! `double` even when whole, `integer`s sent as whole floats are `int`, and strings of a
//! `date-time` or `date` format are timestamps, `duration` durations, `byte` (base64) bytes.
//! A string its format cannot read is an error value ([`Unreadable`], upstream's `Invalid
//! duration ...` and the like), which fails the rules that use it.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;
use cel::objects::{Key, Map};
use cel::Value;
use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime};

pub(crate) fn from_json(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => {
            Value::List(Arc::new(items.iter().map(from_json).collect()))
        }
        serde_json::Value::Object(fields) => {
            let map: HashMap<Key, Value> = fields
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), from_json(v)))
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}

/// A string its schema's format cannot read, as the error upstream makes of it: any use of
/// the value fails, and the rule's error is this message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    pub message: String,
}

impl cel::objects::Opaque for Unreadable {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.invalid"
    }
}

/// `v` as a rule sees it under `schema` (a structural schema node): as [`from_json`], but
/// `number`s are doubles, whole `integer`s ints, and strings of a `date-time`, `date`,
/// `duration` or `byte` format timestamps, durations and bytes, or [`Unreadable`].
pub(crate) fn from_json_typed(v: &serde_json::Value, schema: &serde_json::Value) -> Value {
    if !schema.is_object() || schema["x-kubernetes-int-or-string"] == true {
        return from_json(v);
    }
    match v {
        serde_json::Value::String(s) => match schema["type"].as_str() {
            Some("string") => read_format(s, schema["format"].as_str().unwrap_or_default()),
            _ => from_json(v),
        },
        serde_json::Value::Number(n) => match (schema["type"].as_str(), n.as_f64()) {
            (Some("number"), Some(f)) => Value::Float(f),
            (Some("integer"), Some(f)) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.2e18 => {
                Value::Int(f as i64)
            }
            _ => from_json(v),
        },
        serde_json::Value::Array(items) => {
            let item_schema = &schema["items"];
            Value::List(Arc::new(items.iter().map(|i| from_json_typed(i, item_schema)).collect()))
        }
        serde_json::Value::Object(fields) => {
            let properties = &schema["properties"];
            let additional = &schema["additionalProperties"];
            // An object's properties are named as CEL reaches them (escaped); a map's keys
            // stay as they are.
            let object = properties.is_object();
            let map: HashMap<Key, Value> = fields
                .iter()
                .map(|(k, v)| {
                    let sub = properties.get(k).unwrap_or(additional);
                    let name = match object {
                        true => crate::escaping::escape(k).unwrap_or_else(|| k.clone()),
                        false => k.clone(),
                    };
                    (Key::String(Arc::new(name)), from_json_typed(v, sub))
                })
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
        _ => from_json(v),
    }
}

/// A string of `format` as its CEL type: a string for other formats, [`Unreadable`] (with
/// upstream's message) when the format cannot read it.
fn read_format(s: &str, format: &str) -> Value {
    if let Some(value) = formatted(s, format) {
        return value;
    }
    let message = match format {
        "duration" => format!("Invalid duration {s}: unable to parse {s} as duration"),
        "date" => format!("Invalid date formatted string {s}: {}", go_time_error(s, "2006-01-02")),
        "date-time" => format!(
            "Invalid date-time formatted string {s}: {}",
            go_time_error(s, LAST_DATE_TIME_LAYOUT)
        ),
        "byte" => format!(
            "Invalid byte formatted string {s}: illegal base64 data at input byte {}",
            base64_error_offset(s)
        ),
        _ => return Value::String(Arc::new(s.to_string())),
    };
    Value::Opaque(Arc::new(Unreadable { message }))
}

/// The last layout kube-openapi's `ParseDateTime` tries, whose error it returns.
const LAST_DATE_TIME_LAYOUT: &str = "2006-01-02";

/// Go's `time.Parse` error for `value` against a layout of year, month and day elements and
/// literal text (what the date layouts are made of): the element that does not read, a
/// field out of range, or extra text.
fn go_time_error(value: &str, layout: &str) -> String {
    let quote = |t: &str| format!("{t:?}");
    let cannot = |rest: &str, element: &str| {
        format!(
            "parsing time {} as {}: cannot parse {} as {}",
            quote(value),
            quote(layout),
            quote(rest),
            quote(element)
        )
    };
    let mut rest = value;
    let mut layout_rest = layout;
    let (mut month, mut day, mut year) = (1u32, 1u32, 0i32);
    while !layout_rest.is_empty() {
        let element = ["2006", "01", "02"].into_iter().find(|e| layout_rest.starts_with(e));
        match element {
            Some(element) => {
                let digits = if element == "2006" { 4 } else { 2 };
                let field = rest.get(..digits).filter(|f| f.bytes().all(|b| b.is_ascii_digit()));
                let Some(field) = field else { return cannot(rest, element) };
                let n: i32 = field.parse().unwrap_or_default();
                match element {
                    "2006" => year = n,
                    "01" => month = n as u32,
                    _ => day = n as u32,
                }
                rest = &rest[digits..];
                layout_rest = &layout_rest[element.len()..];
            }
            None => {
                let literal_len =
                    layout_rest.find(['2', '0']).filter(|i| *i > 0).unwrap_or(layout_rest.len());
                let literal = &layout_rest[..literal_len];
                if !rest.starts_with(literal) {
                    return cannot(rest, literal);
                }
                rest = &rest[literal.len()..];
                layout_rest = &layout_rest[literal_len..];
            }
        }
    }
    if !rest.is_empty() {
        return format!("parsing time {}: extra text: {}", quote(value), quote(rest));
    }
    if !(1..=12).contains(&month) {
        return format!("parsing time {}: month out of range", quote(value));
    }
    let valid_day = NaiveDate::from_ymd_opt(year, month, day).is_some();
    if !valid_day {
        return format!("parsing time {}: day out of range", quote(value));
    }
    format!("parsing time {}: cannot parse", quote(value))
}

/// Where Go's base64 decoder stops on `s`: the first byte outside the alphabet, or for a
/// bad length or padding, where the incomplete quantum starts.
fn base64_error_offset(s: &str) -> usize {
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    let bytes = s.as_bytes();
    let data_end = bytes.iter().position(|b| *b == b'=').unwrap_or(bytes.len());
    if let Some(bad) =
        bytes[..data_end].iter().position(|b| !alphabet(*b) && *b != b'\r' && *b != b'\n')
    {
        return bad;
    }
    let padding = &bytes[data_end..];
    if let Some(bad) = padding.iter().position(|b| *b != b'=') {
        return data_end + bad;
    }
    data_end - data_end % 4
}

/// A string of `format` as its CEL type; `None` for other formats and unreadable strings.
fn formatted(s: &str, format: &str) -> Option<Value> {
    match format {
        "date-time" => date_time(s).map(Value::Timestamp),
        "date" => {
            let day = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()?;
            Some(Value::Timestamp(day.and_hms_opt(0, 0, 0)?.and_utc().fixed_offset()))
        }
        "duration" => duration(s).map(Value::Duration),
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(s)
            .ok()
            .map(|b| Value::Bytes(Arc::new(b))),
        _ => None,
    }
}

/// A `date-time` as the OpenAPI formats read one: RFC 3339, with or without fractional
/// seconds, with a `Z`, `+hh:mm` or `+hhmm` zone, or none (UTC).
fn date_time(s: &str) -> Option<DateTime<FixedOffset>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t);
    }
    if let Ok(t) = DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f%z") {
        return Some(t);
    }
    // The local and reduced-precision forms kube-openapi also reads, in UTC.
    let naive = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%MZ", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S"]
        .iter()
        .find_map(|layout| NaiveDateTime::parse_from_str(s, layout).ok())
        .or_else(|| {
            let day = NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().filter(|_| s.len() == 10)?;
            day.and_hms_opt(0, 0, 0)
        })?;
    Some(naive.and_utc().fixed_offset())
}

/// The [`Unreadable`] values in `v` (a rule's `self`), each with the name of the field (or
/// key) that holds it, in the value's order.
pub(crate) fn unreadable_in(v: &Value) -> Vec<(String, String)> {
    fn walk(v: &Value, name: &str, found: &mut Vec<(String, String)>) {
        match v {
            Value::Opaque(o) => {
                if let Some(u) = o.downcast_ref::<Unreadable>() {
                    found.push((name.to_string(), u.message.clone()));
                }
            }
            Value::List(items) => items.iter().for_each(|i| walk(i, name, found)),
            Value::Map(map) => {
                let mut entries: Vec<_> = map.map.iter().collect();
                entries.sort_by_key(|(k, _)| k.to_string());
                for (key, value) in entries {
                    walk(value, &key.to_string(), found);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(v, "", &mut found);
    found
}

/// A `duration` as the OpenAPI formats read one: Go's (`1h30m`, `1.5s`, `-300ms`), else
/// numbers with units summed (`3 days`, `1w 2d`; units `ns`, `us`/`µs`, `ms`, `s`, `m`, `h`,
/// `d`, `w` and their long names).
fn duration(s: &str) -> Option<chrono::Duration> {
    go_duration(s).or_else(|| unit_duration(s))
}

fn unit_nanos(unit: &str) -> Option<f64> {
    const SECOND: f64 = 1e9;
    Some(match unit {
        "ns" | "nanosecond" | "nanoseconds" => 1.0,
        "us" | "µs" | "μs" | "microsecond" | "microseconds" => 1e3,
        "ms" | "millisecond" | "milliseconds" => 1e6,
        "s" | "sec" | "secs" | "second" | "seconds" => SECOND,
        "m" | "min" | "mins" | "minute" | "minutes" => 60.0 * SECOND,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0 * SECOND,
        "d" | "day" | "days" => 86400.0 * SECOND,
        "w" | "wk" | "wks" | "week" | "weeks" => 7.0 * 86400.0 * SECOND,
        _ => return None,
    })
}

/// Go's `time.ParseDuration`: an optional sign, then numbers each with a unit (`ns` to `h`).
fn go_duration(s: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return None;
        }
        total += number * unit_nanos(unit)?;
        rest = &rest[unit_len..];
    }
    nanos(if negative { -total } else { total })
}

/// Numbers with units, spaces allowed between and around them (`3 days`, `1w2d`).
fn unit_duration(s: &str) -> Option<chrono::Duration> {
    let mut rest = s.trim();
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !c.is_ascii_digit())?;
        if number_len == 0 {
            return None;
        }
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = rest[number_len..].trim_start();
        let unit_len = rest.find(|c: char| !c.is_alphabetic()).unwrap_or(rest.len());
        total += number * unit_nanos(&rest[..unit_len])?;
        rest = rest[unit_len..].trim_start();
    }
    nanos(total)
}

fn nanos(n: f64) -> Option<chrono::Duration> {
    (n.abs() < i64::MAX as f64).then(|| chrono::Duration::nanoseconds(n.round() as i64))
}
