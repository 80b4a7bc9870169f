//! JSON to CEL values, as upstream's unstructured values read: objects are maps with string
//! keys, arrays lists, integers `int` (a `uint` only past `int`'s range), other numbers
//! `double`. Read with their schema ([`from_json_typed`]), strings take the type their
//! `format` names, as apiextensions' CEL does: `date-time` and `date` are timestamps,
//! `duration` durations, `byte` (base64) bytes.

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

/// `v` as a rule sees it under `schema` (a structural schema node): as [`from_json`], but
/// strings of a `date-time`, `date`, `duration` or `byte` format are timestamps, durations
/// and bytes. A string that does not read as its format stays a string (upstream makes it an
/// error value, which fails the rules that use it).
pub(crate) fn from_json_typed(v: &serde_json::Value, schema: &serde_json::Value) -> Value {
    if !schema.is_object() {
        return from_json(v);
    }
    match v {
        serde_json::Value::String(s) => match schema["type"].as_str() {
            Some("string") => formatted(s, schema["format"].as_str().unwrap_or_default())
                .unwrap_or_else(|| Value::String(Arc::new(s.clone()))),
            _ => from_json(v),
        },
        serde_json::Value::Array(items) => {
            let item_schema = &schema["items"];
            Value::List(Arc::new(items.iter().map(|i| from_json_typed(i, item_schema)).collect()))
        }
        serde_json::Value::Object(fields) => {
            let properties = &schema["properties"];
            let additional = &schema["additionalProperties"];
            let map: HashMap<Key, Value> = fields
                .iter()
                .map(|(k, v)| {
                    let sub = properties.get(k).unwrap_or(additional);
                    (Key::String(Arc::new(k.clone())), from_json_typed(v, sub))
                })
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
        _ => from_json(v),
    }
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
    let naive = NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f").ok()?;
    Some(naive.and_utc().fixed_offset())
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
