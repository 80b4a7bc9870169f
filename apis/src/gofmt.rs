//! Go's `fmt` renderings of values, for the error messages rkube copies from kube-apiserver
//! (kubectl shows them verbatim, so they must read exactly as Go prints them).
//!
//! - Decoded JSON as `interface{}`: [`go_v`] (`%v`), [`go_s`] (`%s`), [`go_type_name`]
//!   (`reflect.TypeOf`), used by patch and apply errors.
//! - Strings: [`go_quote`] (`%q`, `strconv.Quote`).
//! - Typed values as `%#v` prints them, which validation errors embed as the bad value:
//!   [`go_string_slice`], [`go_string_map`], [`go_label_selector`], [`go_int_or_string`],
//!   [`go_pointer`] and [`go_pointee`].
//!
//! Everything here is pure and `pub(crate)`: one place for Go's formatting, shared by
//! `patch`, `apply`, `selectors` and `validation`.

use serde_json::{json, Number, Value};

use crate::quantity::Quantity;

const NANOS: i128 = 1_000_000_000;

/// A decoded JSON value as `field.Invalid` prints a bad value: integers, floats and
/// booleans with `%v`, strings with `%q`, null as `null`, maps and lists with `%#v`
/// (`map[string]interface {}{"a":"b", "n":1}`).
pub(crate) fn go_field_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::String(s) => go_quote(s),
        Value::Bool(_) | Value::Number(_) => go_v(value),
        Value::Array(_) | Value::Object(_) => go_sharp_v(value),
    }
}

/// `fmt.Sprintf("%#v", v)` for a value decoded into `interface{}`.
pub(crate) fn go_sharp_v(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".to_string(),
        Value::String(s) => go_quote(s),
        Value::Bool(_) | Value::Number(_) => go_v(value),
        Value::Array(items) => {
            let shown: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", shown.join(", "))
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let shown: Vec<String> =
                keys.iter().map(|k| format!("{}:{}", go_quote(k), go_sharp_v(&map[*k]))).collect();
            format!("map[string]interface {{}}{{{}}}", shown.join(", "))
        }
    }
}

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

/// Compact JSON as Go's `encoding/json` writes it: `<`, `>`, `&`, U+2028 and U+2029
/// escaped. Those characters only occur inside strings, so escaping them in the output is
/// safe.
pub fn go_json(value: &Value) -> String {
    let text = value.to_string();
    if !text.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The word Go's `encoding/json` uses for the kind of a JSON value in its errors
/// (`json: cannot unmarshal string into ...`).
pub(crate) fn go_json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `fmt.Sprintf("%q", s)`: a double-quoted Go string literal, with Go's escapes for quotes,
/// backslashes and control characters.
pub fn go_quote(s: &str) -> String {
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
pub(crate) fn go_float(f: f64) -> String {
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

// ---------------------------------------------------------------------------------------
// Typed values as Go's `%#v` prints them.

/// A `[]string`: `[]string{"a", "b"}`, or `[]string(nil)` when absent.
pub(crate) fn go_string_slice<S: AsRef<str>>(values: Option<&[S]>) -> String {
    match values {
        None => "[]string(nil)".to_string(),
        Some(values) => {
            let quoted: Vec<String> = values.iter().map(|v| go_quote(v.as_ref())).collect();
            format!("[]string{{{}}}", quoted.join(", "))
        }
    }
}

/// A `map[string]string` (labels, selectors) held as a JSON object: keys sorted, `(nil)` when
/// absent.
pub(crate) fn go_string_map(v: &Value) -> String {
    let Some(map) = v.as_object() else { return "map[string]string(nil)".to_string() };
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let shown: Vec<String> = entries
        .iter()
        .map(|(k, v)| format!("{}:{}", go_quote(k), go_quote(v.as_str().unwrap_or_default())))
        .collect();
    format!("map[string]string{{{}}}", shown.join(", "))
}

/// A slice as `%#v` prints it: `[]T{a, b}` with each element printed by `each`, or `[]T(nil)`
/// when absent.
pub(crate) fn go_slice(type_name: &str, list: &Value, each: impl Fn(&Value) -> String) -> String {
    match list.as_array() {
        None => format!("[]{type_name}(nil)"),
        Some(list) => {
            let shown: Vec<String> = list.iter().map(each).collect();
            format!("[]{type_name}{{{}}}", shown.join(", "))
        }
    }
}

/// A list of selector requirements (`{Key, Operator, Values}` structs) of the Go type
/// `type_name` (`v1.LabelSelectorRequirement`, `core.NodeSelectorRequirement`): a nil slice
/// when absent.
pub(crate) fn go_requirements(list: &Value, type_name: &str) -> String {
    go_slice(type_name, list, |r| {
        let values: Option<Vec<&str>> = r["values"]
            .as_array()
            .map(|vs| vs.iter().map(|v| v.as_str().unwrap_or_default()).collect());
        format!(
            "{type_name}{{Key:{}, Operator:{}, Values:{}}}",
            go_quote(r["key"].as_str().unwrap_or_default()),
            go_quote(r["operator"].as_str().unwrap_or_default()),
            go_string_slice(values.as_deref())
        )
    })
}

/// A `*metav1.LabelSelector` held as JSON (a nil pointer prints as `"null"`).
pub(crate) fn go_label_selector(sel: &Value) -> String {
    if sel.is_null() {
        return "\"null\"".to_string();
    }
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{}}}",
        go_string_map(&sel["matchLabels"]),
        go_requirements(&sel["matchExpressions"], "v1.LabelSelectorRequirement")
    )
}

/// An `intstr.IntOrString` (maxSurge, maxUnavailable, targetPort).
pub(crate) fn go_int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => {
            format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}", go_quote(s))
        }
        other => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            other.as_i64().unwrap_or(0)
        ),
    }
}

/// A pointer field inside a struct: Go prints `(*T)(nil)` or the address. The address
/// differs on every request upstream, so any stand-in is as good as the real one.
pub(crate) fn go_pointer(type_name: &str, v: &Value) -> String {
    if v.is_null() {
        format!("(*{type_name})(nil)")
    } else {
        format!("(*{type_name})(0xc000a1c000)")
    }
}

/// A pointer field's value as `field.Invalid` shows it: a nil pointer reads `"null"`.
pub(crate) fn go_pointee(v: &Value) -> Value {
    if v.is_null() {
        json!("null")
    } else {
        v.clone()
    }
}

/// A quantity as `ParseQuantity` holds it, the parts `%#v` shows.
struct GoQuantity {
    value: i64,
    scale: i32,
    /// The cached string: the input when it was already canonical.
    s: String,
    format: &'static str,
    /// Too big or too precise for an int64 amount: held as an `inf.Dec`.
    dec: bool,
}

/// Upstream's `ParseQuantity`, for the parts it keeps (`None` when it does not parse).
fn go_parse_quantity(input: &str) -> Option<GoQuantity> {
    if input == "0" {
        return Some(GoQuantity {
            value: 0,
            scale: 0,
            s: "0".into(),
            format: "DecimalSI",
            dec: false,
        });
    }
    let b = input.as_bytes();
    let mut pos = 0;
    let positive = b.first() != Some(&b'-');
    if matches!(b.first(), Some(b'-' | b'+')) {
        pos = 1;
    }
    while pos < b.len() && b[pos] == b'0' {
        pos += 1;
    }
    let start = pos;
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if start == pos { "0" } else { &input[start..pos] };
    let mut denom = "";
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &input[start..pos];
    }
    let (binary, exponent, format) = match &input[pos..] {
        "" => (false, 0, "DecimalSI"),
        "n" => (false, -9, "DecimalSI"),
        "u" => (false, -6, "DecimalSI"),
        "m" => (false, -3, "DecimalSI"),
        "k" => (false, 3, "DecimalSI"),
        "M" => (false, 6, "DecimalSI"),
        "G" => (false, 9, "DecimalSI"),
        "T" => (false, 12, "DecimalSI"),
        "P" => (false, 15, "DecimalSI"),
        "E" => (false, 18, "DecimalSI"),
        "Ki" => (true, 10, "BinarySI"),
        "Mi" => (true, 20, "BinarySI"),
        "Gi" => (true, 30, "BinarySI"),
        "Ti" => (true, 40, "BinarySI"),
        "Pi" => (true, 50, "BinarySI"),
        "Ei" => (true, 60, "BinarySI"),
        s if s.starts_with(['e', 'E']) => (false, s[1..].parse::<i32>().ok()?, "DecimalExponent"),
        _ => return None,
    };
    let digits = (num.len() + denom.len()) as i32;
    let (mut scale, precision, mantissa) = if binary {
        if denom.is_empty() {
            let precision = 15 - num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1;
            (0, precision, 1i64 << exponent)
        } else {
            (0, -1, 1)
        }
    } else {
        (exponent, 18 - digits, 1)
    };
    if precision >= 0 {
        scale -= denom.len() as i32;
        if scale >= -9 {
            let shifted = format!("{num}{denom}");
            let value: i64 = shifted.parse().ok()?;
            if let Some(result) = value.checked_mul(mantissa) {
                let canonical = if binary {
                    exponent % 10 == 0 && value & 7 != 0
                } else {
                    scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
                };
                return Some(GoQuantity {
                    value: if positive { result } else { -result },
                    scale,
                    s: if canonical { input.to_string() } else { String::new() },
                    format,
                    dec: false,
                });
            }
        }
    }
    // The slow path: an inf.Dec, BinarySI below one shown as DecimalSI.
    let nanos = Quantity::parse(&Value::String(input.to_string())).map_or(0, |q| q.nanos);
    let format = if binary && nanos > 0 && nanos < NANOS { "DecimalSI" } else { format };
    Some(GoQuantity { value: 0, scale: 0, s: String::new(), format, dec: true })
}

/// A `resource.Quantity` as `%#v` prints it. `stringified`: upstream called `String()` on
/// this very value before printing it (which caches the canonical form in `s`).
pub(crate) fn go_quantity(v: &Value, stringified: bool) -> String {
    let input = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    };
    let q = go_parse_quantity(&input).unwrap_or(GoQuantity {
        value: 0,
        scale: 0,
        s: String::new(),
        format: "",
        dec: false,
    });
    let s = if stringified {
        Quantity::parse(v).map(|q| q.canonical()).unwrap_or_default()
    } else {
        q.s
    };
    let dec = if q.dec { "(*inf.Dec)(0xc000a1c000)" } else { "(*inf.Dec)(nil)" };
    format!(
        "resource.Quantity{{i:resource.int64Amount{{value:{}, scale:{}}}, d:resource.infDecAmount{{Dec:{dec}}}, s:{}, Format:{}}}",
        q.value,
        q.scale,
        go_quote(&s),
        go_quote(q.format)
    )
}

/// Go's `time.ParseDuration`, in nanoseconds (`1h30m`, `1.5s`, `-2m`, `0`), with its error
/// messages and its range (a negative duration may reach -2^63 ns).
pub(crate) fn go_duration(s: &str) -> Result<i64, String> {
    let quoted = go_quote(s);
    let invalid = || format!("time: invalid duration {quoted}");
    let (negative, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int, after) = rest.split_at(int_len);
        let (frac, after) = match after.strip_prefix('.') {
            Some(f) => {
                let len = f.bytes().take_while(u8::is_ascii_digit).count();
                (Some(&f[..len]), &f[len..])
            }
            None => (None, after),
        };
        if int.is_empty() && frac.is_none_or(str::is_empty) {
            return Err(invalid());
        }
        let unit_len = after.find(|c: char| c == '.' || c.is_ascii_digit()).unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let scale: i128 = match unit {
            "" => return Err(format!("time: missing unit in duration {quoted}")),
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            other => {
                return Err(format!("time: unknown unit {} in duration {quoted}", go_quote(other)))
            }
        };
        let whole: i128 = if int.is_empty() { 0 } else { int.parse().map_err(|_| invalid())? };
        let mut value = whole.checked_mul(scale).ok_or_else(invalid)?;
        if let Some(frac) = frac.filter(|f| !f.is_empty()) {
            // Enough digits for nanosecond precision; Go drops the rest too.
            let digits = &frac[..frac.len().min(18)];
            let numerator: i128 = digits.parse().map_err(|_| invalid())?;
            value += numerator * scale / 10i128.pow(digits.len() as u32);
        }
        total = total
            .checked_add(value)
            .filter(|t| *t <= i128::from(i64::MAX) + 1)
            .ok_or_else(invalid)?;
        rest = after;
    }
    i64::try_from(if negative { -total } else { total }).map_err(|_| invalid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("1h30m"), Ok(5_400_000_000_000));
        assert_eq!(go_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(go_duration(".5s"), Ok(500_000_000));
        assert_eq!(go_duration("-2m"), Ok(-120_000_000_000));
        assert_eq!(go_duration("0"), Ok(0));
        assert_eq!(go_duration("1d"), Err("time: unknown unit \"d\" in duration \"1d\"".into()));
        assert_eq!(go_duration("."), Err("time: invalid duration \".\"".into()));
        assert_eq!(go_duration("5"), Err("time: missing unit in duration \"5\"".to_string()));
        assert_eq!(go_duration("x"), Err("time: invalid duration \"x\"".to_string()));
    }
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

    #[test]
    fn quoting() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(go_string_slice::<String>(None), "[]string(nil)");
        assert_eq!(go_string_slice(Some(&["a".to_string()])), "[]string{\"a\"}");
    }

    #[test]
    fn go_values_print_like_go() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(go_string_map(&json!({})), "map[string]string{}");
        assert_eq!(
            go_int_or_string(&json!(3)),
            "intstr.IntOrString{Type:0, IntVal:3, StrVal:\"\"}"
        );
    }
}
