//! Go's `fmt` renderings of decoded JSON (`%v`, `%s`, `reflect.TypeOf`), which upstream's
//! patch error messages embed and kubectl shows verbatim.

use serde_json::{Number, Value};

/// `fmt.Sprintf("%v", v)` for a value decoded into `interface{}` (integers kept as int64).
pub(crate) fn go_v(value: &Value) -> String {
    let mut out = String::new();
    write_v(&mut out, value);
    out
}

/// `%v` of a `[]interface{}`.
pub(crate) fn go_v_list(values: &[Value]) -> String {
    let mut out = String::new();
    write_list(&mut out, values);
    out
}

/// `%v` of a `map[string]interface{}`.
pub(crate) fn go_v_map(map: &serde_json::Map<String, Value>) -> String {
    let mut out = String::new();
    write_map(&mut out, map);
    out
}

fn write_v(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n)),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => write_list(out, items),
        Value::Object(map) => write_map(out, map),
    }
}

fn write_list(out: &mut String, items: &[Value]) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_v(out, item);
    }
    out.push(']');
}

fn write_map(out: &mut String, map: &serde_json::Map<String, Value>) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push_str("map[");
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(key);
        out.push(':');
        write_v(out, &map[key]);
    }
    out.push(']');
}

/// `%s` of an `interface{}`: strings as they are, other values in Go's `%!s(type=value)` form.
pub(crate) fn go_s(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".to_string(),
        other => format!("%!s({}={})", go_type_name(other), go_v(other)),
    }
}

/// `reflect.TypeOf(v).String()` for a decoded JSON value (`%s` of a nil type for null).
pub(crate) fn go_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if is_go_int(n) => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// `fmt.Sprintf("%q", s)`: a double-quoted Go string literal, with Go's escapes for quotes,
/// backslashes and control characters.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x80 && c.is_control() => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() && (c as u32) <= 0xffff => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\U{:08x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether the apiserver's decoder (which keeps integers as int64) sees this number as one.
pub(crate) fn is_go_int(n: &Number) -> bool {
    n.is_i64()
}

fn go_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    go_float(n.as_f64().unwrap_or_default())
}

/// Go's `%v` for a float64: strconv's 'g' format with shortest digits, which switches to the
/// exponent form below 1e-4 and from 1e6 upward.
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{f:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    format!("{f}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_like_go() {
        assert_eq!(
            go_v(&json!({"b": [1, "x", null], "a": {"c": true}})),
            "map[a:map[c:true] b:[1 x <nil>]]"
        );
        assert_eq!(go_v(&json!(1.5)), "1.5");
        assert_eq!(go_v(&json!(1e21)), "1e+21");
        assert_eq!(go_v(&json!(0.00001)), "1e-05");
        assert_eq!(go_v(&json!(123456789.5)), "1.234567895e+08");
        assert_eq!(go_v(&json!(123456.5)), "123456.5");
        assert_eq!(go_s(&json!(true)), "%!s(bool=true)");
        assert_eq!(go_type_name(&json!([1])), "[]interface {}");
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), r#""a\"b\\c\n\x01é""#);
    }
}
