//! A reader of the simple JSONPath expressions CustomResourceDefinitions use for their
//! printer columns (`.spec.size`, `.status.conditions[?(@.type=="Ready")].status`,
//! `.spec.items[0].name`, `.metadata.labels['app\.kubernetes\.io/name']`), as kubectl's and
//! kube-apiserver's `jsonpath` package reads them with missing keys allowed: a field that is
//! not there yields no value, never an error.
//!
//! Supported: `.field`, `['field']` / `["field"]`, `[N]` (negative counts from the end),
//! `[*]` and `.*`, and filters `[?(@.a.b)]` (the field exists), `[?(@.a == "x")]` and
//! `[?(@.a != 1)]` comparing with a string, number or boolean literal. Recursive descent
//! (`..`), slices and unions are refused as [`JsonPathError`]s, which upstream parses but
//! custom resource columns do not need.

use serde_json::Value;

/// Why an expression is not one this reader understands.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unrecognized JSONPath {path:?}: {why}")]
pub struct JsonPathError {
    pub path: String,
    pub why: &'static str,
}

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    /// Every member of an object or item of a list.
    All,
    Index(i64),
    Filter(Filter),
}

#[derive(Clone, Debug, PartialEq)]
struct Filter {
    /// The fields under `@`.
    path: Vec<String>,
    /// `None`: the field exists.
    test: Option<(bool, Value)>,
}

impl JsonPath {
    /// Parses `path`, with or without the braces of a template (`{.spec.size}`).
    pub fn parse(path: &str) -> Result<JsonPath, JsonPathError> {
        let error = |why| JsonPathError { path: path.to_string(), why };
        let text = path.trim();
        let text = match text.strip_prefix('{') {
            Some(inner) => inner.strip_suffix('}').ok_or_else(|| error("unclosed {"))?,
            None => text,
        };
        let text = text.strip_prefix('$').unwrap_or(text);
        let chars: Vec<char> = text.chars().collect();
        let mut steps = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '.' => {
                    i += 1;
                    if chars.get(i) == Some(&'.') {
                        return Err(error("recursive descent is not supported"));
                    }
                    let start = i;
                    while i < chars.len() && !matches!(chars[i], '.' | '[') {
                        if chars[i] == '\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    let name = unescape(&chars[start..i.min(chars.len())]);
                    match name.as_str() {
                        "" if i >= chars.len() && steps.is_empty() => {} // `.`: the object
                        "" => return Err(error("a field name is missing")),
                        "*" => steps.push(Step::All),
                        _ => steps.push(Step::Field(name)),
                    }
                }
                '[' => {
                    let end = closing_bracket(&chars, i).ok_or_else(|| error("unclosed ["))?;
                    let inner: String = chars[i + 1..end].iter().collect();
                    steps.push(bracket(inner.trim()).ok_or_else(|| error("unsupported [...]"))?);
                    i = end + 1;
                }
                _ => return Err(error("expected . or [")),
            }
        }
        Ok(JsonPath { steps })
    }

    /// The values the path reaches in `obj`, in document order.
    pub fn find<'a>(&self, obj: &'a Value) -> Vec<&'a Value> {
        let mut current = vec![obj];
        for step in &self.steps {
            let mut next = Vec::new();
            for v in current {
                match step {
                    Step::Field(name) => next.extend(v.get(name.as_str())),
                    Step::All => match v {
                        Value::Array(items) => next.extend(items),
                        Value::Object(map) => next.extend(map.values()),
                        _ => {}
                    },
                    Step::Index(n) => {
                        let items = v.as_array().map(Vec::as_slice).unwrap_or_default();
                        let at = if *n < 0 { items.len() as i64 + n } else { *n };
                        next.extend(usize::try_from(at).ok().and_then(|at| items.get(at)));
                    }
                    Step::Filter(filter) => {
                        let items: Vec<&Value> = match v {
                            Value::Array(items) => items.iter().collect(),
                            Value::Object(map) => map.values().collect(),
                            _ => Vec::new(),
                        };
                        next.extend(items.into_iter().filter(|item| filter.matches(item)));
                    }
                }
            }
            current = next;
        }
        current
    }

    /// The first value the path reaches, if any.
    pub fn first<'a>(&self, obj: &'a Value) -> Option<&'a Value> {
        self.find(obj).into_iter().next()
    }
}

impl Filter {
    fn matches(&self, item: &Value) -> bool {
        let found = self.path.iter().try_fold(item, |v, k| v.get(k.as_str()));
        match (&self.test, found) {
            (None, found) => found.is_some(),
            (Some(_), None) => false,
            (Some((equal, literal)), Some(value)) => same(value, literal) == *equal,
        }
    }
}

/// Equality as the filter compares: numbers by value (`1 == 1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Where the `]` closing the `[` at `open` is, skipping quoted text and nested brackets.
fn closing_bracket(chars: &[char], open: usize) -> Option<usize> {
    let (mut depth, mut quote) = (0usize, None::<char>);
    let mut i = open;
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Some(_) if c == '\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    None
}

/// What is between `[` and `]`.
fn bracket(inner: &str) -> Option<Step> {
    if inner == "*" {
        return Some(Step::All);
    }
    if let Some(name) = quoted(inner) {
        return Some(Step::Field(name));
    }
    if let Ok(n) = inner.parse::<i64>() {
        return Some(Step::Index(n));
    }
    let expr = inner.strip_prefix("?(")?.strip_suffix(')')?.trim();
    let expr = expr.strip_prefix('@')?;
    let (left, test) = match expr.find("==").or_else(|| expr.find("!=")) {
        Some(at) => {
            let equal = &expr[at..at + 2] == "==";
            (&expr[..at], Some((equal, literal(expr[at + 2..].trim())?)))
        }
        None => (expr, None),
    };
    let left = left.trim();
    let path: Vec<String> = match left {
        "" => Vec::new(),
        _ => {
            let fields = left.strip_prefix('.')?;
            fields.split('.').map(str::to_string).collect()
        }
    };
    if path.iter().any(String::is_empty) {
        return None;
    }
    Some(Step::Filter(Filter { path, test }))
}

/// A filter's right-hand side: a quoted string, a number, `true` or `false`.
fn literal(text: &str) -> Option<Value> {
    if let Some(s) = quoted(text) {
        return Some(Value::String(s));
    }
    match text {
        "true" => Some(Value::Bool(true)),
        "false" => Some(Value::Bool(false)),
        _ => serde_json::from_str::<serde_json::Number>(text).ok().map(Value::Number),
    }
}

/// The text of `'...'` or `"..."`, escapes undone.
fn quoted(text: &str) -> Option<String> {
    let q = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = text.strip_prefix(q)?.strip_suffix(q)?;
    if inner.is_empty() && text.len() < 2 {
        return None;
    }
    let chars: Vec<char> = inner.chars().collect();
    Some(unescape(&chars))
}

/// `\x` is `x` (`labels.app\.kubernetes\.io/name` names one key).
fn unescape(chars: &[char]) -> String {
    let mut out = String::with_capacity(chars.len());
    let mut escaped = false;
    for c in chars {
        if escaped || *c != '\\' {
            out.push(*c);
            escaped = false;
        } else {
            escaped = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj() -> Value {
        json!({
            "metadata": {"name": "w", "labels": {"app.kubernetes.io/name": "shop"}},
            "spec": {"size": 3, "items": [{"name": "a"}, {"name": "b", "on": true}]},
            "status": {"conditions": [
                {"type": "Synced", "status": "False"},
                {"type": "Ready", "status": "True", "count": 2},
            ]},
        })
    }

    fn read(path: &str) -> Vec<Value> {
        JsonPath::parse(path).unwrap().find(&obj()).into_iter().cloned().collect()
    }

    #[test]
    fn fields_indexes_and_wildcards() {
        assert_eq!(read(".spec.size"), vec![json!(3)]);
        assert_eq!(read("{.spec.size}"), vec![json!(3)]);
        assert_eq!(read("$.metadata.name"), vec![json!("w")]);
        assert_eq!(read(".spec.items[1].name"), vec![json!("b")]);
        assert_eq!(read(".spec.items[-1].name"), vec![json!("b")]);
        assert_eq!(read(".spec.items[*].name"), vec![json!("a"), json!("b")]);
        assert_eq!(read(".spec.items.*.name"), vec![json!("a"), json!("b")]);
        assert_eq!(read(".spec['size']"), vec![json!(3)]);
        assert_eq!(read(".metadata.labels['app.kubernetes.io/name']"), vec![json!("shop")]);
        assert_eq!(read(r".metadata.labels.app\.kubernetes\.io/name"), vec![json!("shop")]);
        assert_eq!(read("."), vec![obj()]);
    }

    #[test]
    fn missing_fields_yield_nothing() {
        assert!(read(".spec.color").is_empty());
        assert!(read(".spec.size.more").is_empty());
        assert!(read(".spec.items[7].name").is_empty());
        assert!(read(".nothing[*]").is_empty());
    }

    #[test]
    fn filters_compare_and_test_for_presence() {
        let ready = r#".status.conditions[?(@.type=="Ready")].status"#;
        assert_eq!(read(ready), vec![json!("True")]);
        assert_eq!(read(".status.conditions[?(@.type == 'Synced')].status"), vec![json!("False")]);
        assert_eq!(read(".status.conditions[?(@.type!='Synced')].type"), vec![json!("Ready")]);
        assert_eq!(read(".status.conditions[?(@.count==2.0)].type"), vec![json!("Ready")]);
        assert_eq!(read(".status.conditions[?(@.count)].type"), vec![json!("Ready")]);
        assert_eq!(read(".spec.items[?(@.on==true)].name"), vec![json!("b")]);
        assert!(read(r#".status.conditions[?(@.type=="Gone")].status"#).is_empty());
    }

    #[test]
    fn what_is_not_understood_is_an_error() {
        for bad in
            ["spec.size", ".spec..size", "..spec", ".spec[", ".spec[1:2]", "{.spec", ".a[?(x)]"]
        {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
    }
}
