//! The JSONPath of CustomResourceDefinitions' printer columns, read as kube-apiserver's
//! table convertor reads a column's `jsonPath`: the template `{<path>}` of client-go's
//! `jsonpath` package, with missing keys allowed (a field that is not there yields no value,
//! never an error).
//!
//! The grammar is upstream's: `.field` (a `\` escapes the next character, so
//! `.metadata.labels.app\.kubernetes\.io/name` names one key), `.*` (every member or item),
//! `..` (recursive descent: every object, list and non-empty string below, each before its
//! children), `[N]` (negative counts from the end), slices `[start:end:step]` (`[0:2]`,
//! `[-1:]`, `[::2]`), `[*]` (every item of a list), `['key']` (single quotes only; the key is
//! read as `.key`, so dots in it still separate fields, as upstream), unions of any of these
//! (`[0,1]`, `['a','b']`) and filters `[?(@.a.b)]` (the path reaches something) and
//! `[?(@.a <op> <right>)]` with `==`, `!=`, `<`, `>`, `<=`, `>=` against a quoted string, a
//! number, `true`/`false` or another path.
//!
//! Evaluation follows upstream too, errors included: an index or slice out of bounds, an
//! index, slice or filter applied to something that is not a list, a comparison of values of
//! different types (`1 == 1.0` is one: an integer and a float) or of objects fail the whole
//! path, which a column shows as no value. Members are visited in the object's order
//! (upstream's is Go's map order, which is random).

use std::borrow::Cow;

use serde_json::Value;

/// Why an expression does not parse, with upstream's message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unrecognized JSONPath {path:?}: {why}")]
pub struct JsonPathError {
    pub path: String,
    pub why: String,
}

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    /// `.*`: every member of an object, item of a list or byte of a string.
    Wildcard,
    /// `..`: each object, list and non-empty string, then what is below it.
    Recursive,
    Slice(Slice),
    /// `[a,b]`: the values of each part, one after the other.
    Union(Vec<Vec<Step>>),
    Filter(Box<Filter>),
    /// A quoted string: that one value, whatever the input.
    Text(String),
    /// A number or boolean: that value once per input.
    Const(Value),
    /// A bare word other than `true`/`false` (upstream's `range`/`end` of templates): an
    /// error when evaluated.
    Identifier(String),
}

/// `[start:end:step]`; `[N]` is `[N:N+1]` with the end derived.
#[derive(Clone, Debug, PartialEq)]
struct Slice {
    start: Option<i64>,
    end: Option<i64>,
    /// `end` was computed from `start` (`[-1]`: an end of 0 means the length).
    derived: bool,
    step: Option<i64>,
}

#[derive(Clone, Debug, PartialEq)]
struct Filter {
    left: Vec<Step>,
    /// `None`: the left path reaches something.
    test: Option<(String, Vec<Step>)>,
}

impl JsonPath {
    /// Parses a column's `jsonPath` as upstream parses the template `{<path>}`.
    pub fn parse(path: &str) -> Result<JsonPath, JsonPathError> {
        let steps =
            parse_action(path).map_err(|why| JsonPathError { path: path.to_string(), why })?;
        Ok(JsonPath { steps })
    }

    /// The values the path reaches in `obj`, in order; none when evaluating fails.
    pub fn find<'a>(&self, obj: &'a Value) -> Vec<Cow<'a, Value>> {
        eval(&self.steps, vec![Cow::Borrowed(obj)]).unwrap_or_default()
    }

    /// The first value the path reaches, if any: what a column shows.
    pub fn first<'a>(&self, obj: &'a Value) -> Option<Cow<'a, Value>> {
        self.find(obj).into_iter().next()
    }
}

/// The steps of `{text}`: the first action of the template (text after its `}` is template
/// text, which must parse too but yields nothing here).
fn parse_action(text: &str) -> Result<Vec<Step>, String> {
    let mut parser = Parser { chars: format!("{{{text}}}").chars().collect(), pos: 0 };
    let mut first = None;
    while let Some(open) = parser.chars[parser.pos..].iter().position(|c| *c == '{') {
        parser.pos += open + 1;
        let steps = parser.action()?;
        first.get_or_insert(steps);
    }
    Ok(first.unwrap_or_default())
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn next(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied();
        if c.is_some() {
            self.pos += 1;
        }
        c
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn starts_with(&self, prefix: &str) -> bool {
        let prefix: Vec<char> = prefix.chars().collect();
        self.chars[self.pos..].starts_with(&prefix)
    }

    fn text(&self, from: usize, to: usize) -> String {
        self.chars[from..to].iter().collect()
    }

    /// The inside of `{...}`, up to and past its `}`.
    fn action(&mut self) -> Result<Vec<Step>, String> {
        let mut steps = Vec::new();
        loop {
            if self.starts_with("}") {
                self.pos += 1;
                return Ok(steps);
            }
            if self.starts_with("[?(") {
                self.pos += 3;
                steps.push(self.filter()?);
                continue;
            }
            if self.starts_with("..") {
                if steps.last() == Some(&Step::Recursive) {
                    return Err("invalid multiple recursive descent".into());
                }
                self.pos += 2;
                steps.push(Step::Recursive);
                if self.peek().is_some_and(alphanumeric) {
                    steps.push(self.field());
                }
                continue;
            }
            match self.next() {
                None | Some('\r' | '\n') => return Err("unclosed action".into()),
                Some(' ' | '@' | '$') => {}
                Some('[') => self.array(&mut steps)?,
                Some(q @ ('"' | '\'')) => steps.push(self.quote(q)?),
                Some('.') => steps.push(self.field()),
                Some(c) if c == '+' || c == '-' || c.is_ascii_digit() => {
                    self.pos -= 1;
                    steps.push(self.number()?);
                }
                Some(c) if alphanumeric(c) => {
                    self.pos -= 1;
                    steps.push(self.identifier());
                }
                Some(c) => {
                    return Err(format!(
                        "unrecognized character in action: U+{:04X} {c:?}",
                        c as u32
                    ))
                }
            }
        }
    }

    /// A field name up to the next unescaped terminator; `\` escapes and is dropped.
    fn field(&mut self) -> Step {
        let start = self.pos;
        loop {
            match self.next() {
                Some('\\') => {
                    self.next();
                }
                Some(c) if !terminator(c) => {}
                Some(_) => {
                    self.pos -= 1;
                    break;
                }
                None => break,
            }
        }
        match self.text(start, self.pos).as_str() {
            "*" => Step::Wildcard,
            name => Step::Field(name.replace('\\', "")),
        }
    }

    fn identifier(&mut self) -> Step {
        let start = self.pos;
        while self.peek().is_some_and(|c| !terminator(c)) {
            self.pos += 1;
        }
        match self.text(start, self.pos).as_str() {
            "true" => Step::Const(Value::Bool(true)),
            "false" => Step::Const(Value::Bool(false)),
            word => Step::Identifier(word.to_string()),
        }
    }

    fn number(&mut self) -> Result<Step, String> {
        let start = self.pos;
        if matches!(self.peek(), Some('+' | '-')) {
            self.pos += 1;
        }
        while self.peek().is_some_and(|c| c == '.' || c.is_ascii_digit()) {
            self.pos += 1;
        }
        let text = self.text(start, self.pos);
        if let Ok(i) = text.parse::<i64>() {
            return Ok(Step::Const(i.into()));
        }
        match text.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
            Some(f) => Ok(Step::Const(Value::Number(f))),
            None => Err(format!("cannot parse number {text}")),
        }
    }

    /// A quoted string (the opening quote read), its escapes undone.
    fn quote(&mut self, q: char) -> Result<Step, String> {
        let start = self.pos - 1;
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated quoted string".into()),
                Some(c) if c == q && self.chars[self.pos - 2] != '\\' => break,
                Some(_) => {}
            }
        }
        let text = self.text(start, self.pos);
        let inner = &text[1..text.len() - 1];
        unquote(inner, q)
            .map(Step::Text)
            .ok_or_else(|| format!("unquote string {text} error invalid syntax"))
    }

    /// `[...]` after the `[`: a union, a quoted key, an index or a slice.
    fn array(&mut self, steps: &mut Vec<Step>) -> Result<(), String> {
        let start = self.pos;
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated array".into()),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let mut text = self.text(start, self.pos - 1);
        if text == "*" {
            text = ":".into();
        }
        if text.contains(',') {
            let parts = text
                .split(',')
                .map(|part| parse_action(&format!("[{}]", part.trim_matches(' '))))
                .collect::<Result<_, _>>()?;
            steps.push(Step::Union(parts));
            return Ok(());
        }
        let key = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\''));
        if let Some(key) = key.filter(|k| !k.contains('\'')) {
            steps.extend(parse_action(&format!(".{key}"))?);
            return Ok(());
        }
        steps.push(Step::Slice(slice(&text)?));
        Ok(())
    }

    /// `[?(...)]` after the `[?(`.
    fn filter(&mut self) -> Result<Step, String> {
        let start = self.pos;
        let (mut begin, mut end, mut pair) = (false, false, ' ');
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated filter".into()),
                Some(q @ ('"' | '\'')) => {
                    if !begin {
                        (begin, pair) = (true, q);
                    } else if self.chars[self.pos - 2] != '\\' && q == pair {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                Some(_) => {}
            }
        }
        if self.next() != Some(']') {
            return Err("unclosed array expect ]".into());
        }
        let text = self.text(start, self.pos - 2);
        let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
        let split = text.find(is_op).filter(|at| *at > 0).and_then(|at| {
            let op_len = text[at..].find(|c: char| !is_op(c) && c != '~')?;
            let right = &text[at + op_len..];
            (!right.is_empty()).then(|| (&text[..at], &text[at..at + op_len], right))
        });
        let filter = match split {
            None => Filter { left: parse_action(&text)?, test: None },
            Some((left, op, right)) => Filter {
                left: parse_action(left)?,
                test: Some((op.to_string(), parse_action(right)?)),
            },
        };
        Ok(Step::Filter(Box::new(filter)))
    }
}

/// `start:end:step`, each part optional and possibly negative.
fn slice(text: &str) -> Result<Slice, String> {
    let invalid = || format!("invalid array index {text}");
    let parts: Vec<&str> = text.split(':').collect();
    if parts.len() > 3 {
        return Err(invalid());
    }
    let mut values = [None; 3];
    for (i, part) in parts.iter().enumerate() {
        let digits = part.strip_prefix('-').unwrap_or(part);
        if !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(invalid());
        }
        if part.is_empty() {
            continue;
        }
        let n = part.parse::<i64>().map_err(|_| format!("array index {part} is not a number"))?;
        values[i] = Some(n);
    }
    let [start, mut end, step] = values;
    let derived = parts.len() == 1;
    if derived {
        end = Some(start.unwrap_or(0) + 1);
    }
    Ok(Slice { start, end, derived, step })
}

/// Go's unquoting of the inside of a `q`-quoted string; `None` on a bad escape.
fn unquote(inner: &str, q: char) -> Option<String> {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == q {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = match chars.next()? {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\\' => '\\',
            e @ ('\'' | '"') if e == q => e,
            e @ ('x' | 'u' | 'U') => {
                let len = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = chars.by_ref().take(len).collect();
                if hex.len() != len {
                    return None;
                }
                char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
            }
            _ => return None,
        };
        out.push(escaped);
    }
    Some(out)
}

fn alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// What may end a field name or a word.
fn terminator(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}')
}

type Found<'a> = Vec<Cow<'a, Value>>;

/// `steps` applied to `input` in turn.
fn eval<'a>(steps: &[Step], input: Found<'a>) -> Result<Found<'a>, String> {
    steps.iter().try_fold(input, |current, step| eval_step(step, current))
}

fn eval_step<'a>(step: &Step, input: Found<'a>) -> Result<Found<'a>, String> {
    let mut out = Vec::new();
    match step {
        Step::Field(name) => {
            for v in &input {
                out.extend(member(v, name));
            }
        }
        Step::Wildcard => {
            for v in &input {
                out.extend(children(v));
            }
        }
        Step::Recursive => descend(input, &mut out),
        Step::Slice(slice) => {
            for v in &input {
                if v.is_null() {
                    continue;
                }
                let items = items(v).ok_or("not array or slice")?;
                match slice.select(items)? {
                    Some(selected) => out.extend(selected),
                    // Zero items asked for: upstream stops there.
                    None => return Ok(out),
                }
            }
        }
        Step::Union(parts) => {
            for part in parts {
                out.extend(eval(part, input.clone())?);
            }
        }
        Step::Filter(filter) => {
            for v in &input {
                let items = items(v).ok_or("not array or slice and cannot be filtered")?;
                for item in items {
                    if filter.keeps(&item)? {
                        out.push(item);
                    }
                }
            }
        }
        Step::Text(text) => out.push(Cow::Owned(Value::String(text.clone()))),
        Step::Const(value) => out.extend(input.iter().map(|_| Cow::Owned(value.clone()))),
        Step::Identifier(word) => return Err(format!("unrecognized identifier {word}")),
    }
    Ok(out)
}

/// `name` of an object.
fn member<'a>(v: &Cow<'a, Value>, name: &str) -> Option<Cow<'a, Value>> {
    match v {
        Cow::Borrowed(b) => b.get(name).map(Cow::Borrowed),
        Cow::Owned(o) => o.get(name).cloned().map(Cow::Owned),
    }
}

/// The items of a list; `None` for anything else.
fn items<'a>(v: &Cow<'a, Value>) -> Option<Found<'a>> {
    match v {
        Cow::Borrowed(Value::Array(items)) => Some(items.iter().map(Cow::Borrowed).collect()),
        Cow::Owned(Value::Array(items)) => Some(items.iter().cloned().map(Cow::Owned).collect()),
        _ => None,
    }
}

/// The members of an object, the items of a list, the bytes of a string.
fn children<'a>(v: &Cow<'a, Value>) -> Found<'a> {
    let bytes = |s: &str| s.bytes().map(|b| Cow::Owned(Value::from(b))).collect();
    match v {
        Cow::Borrowed(Value::Object(map)) => map.values().map(Cow::Borrowed).collect(),
        Cow::Owned(Value::Object(map)) => map.values().cloned().map(Cow::Owned).collect(),
        Cow::Borrowed(Value::String(s)) => bytes(s),
        Cow::Owned(Value::String(s)) => bytes(s),
        _ => items(v).unwrap_or_default(),
    }
}

/// Each value with children, followed by what is below it.
fn descend<'a>(input: Found<'a>, out: &mut Found<'a>) {
    for v in input {
        let below = children(&v);
        if !below.is_empty() {
            out.push(v);
            descend(below, out);
        }
    }
}

impl Slice {
    /// The items selected, `None` when the slice asks for none.
    fn select<'a>(&self, items: Found<'a>) -> Result<Option<Found<'a>>, String> {
        let len = items.len() as i64;
        let mut start = self.start.unwrap_or(0);
        if start < 0 {
            start += len;
        }
        let mut end = self.end.unwrap_or(len);
        if end < 0 || (end == 0 && self.derived) {
            end += len;
        }
        if start == end {
            return Ok(None);
        }
        if start >= len || start < 0 {
            return Err(format!("array index out of bounds: index {start}, length {len}"));
        }
        if end > len || end < 0 {
            return Err(format!("array index out of bounds: index {}, length {len}", end - 1));
        }
        if start > end {
            return Err(format!("starting index {start} is greater than ending index {end}"));
        }
        let step = match self.step {
            Some(step) if step <= 0 => return Err("step must be > 0".into()),
            Some(step) => step as usize,
            None => 1,
        };
        let selected =
            items.into_iter().skip(start as usize).take((end - start) as usize).step_by(step);
        Ok(Some(selected.collect()))
    }
}

impl Filter {
    fn keeps(&self, item: &Value) -> Result<bool, String> {
        let lefts = eval(&self.left, vec![Cow::Borrowed(item)]);
        let Some((op, right)) = &self.test else {
            return Ok(lefts.is_ok_and(|l| !l.is_empty()));
        };
        let one = |found: Found<'_>| match found.len() {
            0 => Ok(None),
            1 => Ok(found.into_iter().next().map(Cow::into_owned)),
            _ => Err("can only compare one element at a time".to_string()),
        };
        let Some(left) = one(lefts?)? else { return Ok(false) };
        let Some(right) = one(eval(right, vec![Cow::Borrowed(item)])?)? else { return Ok(false) };
        compare(op, &left, &right)
    }
}

/// A value as Go's template comparisons see it.
#[derive(PartialEq, PartialOrd)]
enum Basic<'v> {
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(&'v str),
}

fn basic(v: &Value) -> Result<Basic<'_>, String> {
    match v {
        Value::Bool(b) => Ok(Basic::Bool(*b)),
        Value::Number(n) => Ok(match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Basic::Int(i.into()),
            (_, Some(u)) => Basic::Int(u.into()),
            _ => Basic::Float(n.as_f64().unwrap_or(f64::NAN)),
        }),
        Value::String(s) => Ok(Basic::Str(s)),
        _ => Err("invalid type for comparison".into()),
    }
}

/// `left <op> right` as Go's template functions compare: values of one basic kind only;
/// booleans only for equality.
fn compare(op: &str, left: &Value, right: &Value) -> Result<bool, String> {
    let (l, r) = (basic(left)?, basic(right)?);
    if std::mem::discriminant(&l) != std::mem::discriminant(&r) {
        return Err("incompatible types for comparison".into());
    }
    let ordered = || match l {
        Basic::Bool(_) => Err("invalid type for comparison".to_string()),
        _ => Ok(()),
    };
    Ok(match op {
        "==" => l == r,
        "!=" => l != r,
        "<" => ordered().map(|_| l < r)?,
        ">" => ordered().map(|_| l > r)?,
        "<=" => ordered().map(|_| l <= r)?,
        ">=" => ordered().map(|_| l >= r)?,
        _ => return Err(format!("unrecognized filter operator {op}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj() -> Value {
        json!({
            "metadata": {"name": "w", "labels": {"app.kubernetes.io/name": "shop"}},
            "spec": {"size": 3, "items": [{"name": "a"}, {"name": "b", "on": true}, {"name": "c", "n": {"name": "d"}}]},
            "status": {"conditions": [
                {"type": "Synced", "status": "False"},
                {"type": "Ready", "status": "True", "count": 2},
            ]},
        })
    }

    fn read(path: &str) -> Vec<Value> {
        JsonPath::parse(path).unwrap().find(&obj()).into_iter().map(Cow::into_owned).collect()
    }

    fn strings(path: &str) -> Vec<String> {
        read(path).into_iter().map(|v| v.as_str().unwrap_or("?").to_string()).collect()
    }

    #[test]
    fn fields_indexes_and_wildcards() {
        assert_eq!(read(".spec.size"), vec![json!(3)]);
        assert_eq!(read("$.metadata.name"), vec![json!("w")]);
        assert_eq!(read(".spec.items[1].name"), vec![json!("b")]);
        assert_eq!(read(".spec.items[-1].name"), vec![json!("c")]);
        assert_eq!(strings(".spec.items[*].name"), ["a", "b", "c"]);
        assert_eq!(strings(".spec.items.*.name"), ["a", "b", "c"]);
        assert_eq!(read(".spec['size']"), vec![json!(3)]);
        assert_eq!(read(r".metadata.labels.app\.kubernetes\.io/name"), vec![json!("shop")]);
        assert_eq!(read(r".metadata.labels['app\.kubernetes\.io/name']"), vec![json!("shop")]);
        // A quoted key is read as `.key`: its dots separate fields.
        assert!(read(".metadata.labels['app.kubernetes.io/name']").is_empty());
        // A wildcard over a string yields its bytes.
        assert_eq!(read(".metadata.name.*"), vec![json!(b'w')]);
    }

    #[test]
    fn missing_fields_yield_nothing_and_failures_fail_the_path() {
        assert!(read(".spec.color").is_empty());
        assert!(read(".spec.size.more").is_empty());
        assert!(read(".nothing[*]").is_empty());
        // Errors: out of bounds, an index of a non-list, `[*]` of an object.
        assert!(read(".spec.items[7].name").is_empty());
        assert!(read(".spec.size[0]").is_empty());
        assert!(read(".metadata.labels[*]").is_empty());
        // A failing part of a union fails it all.
        assert!(read(".spec.items[0,7].name").is_empty());
    }

    #[test]
    fn slices() {
        assert_eq!(strings(".spec.items[0:2].name"), ["a", "b"]);
        assert_eq!(strings(".spec.items[1:].name"), ["b", "c"]);
        assert_eq!(strings(".spec.items[-1:].name"), ["c"]);
        assert_eq!(strings(".spec.items[:-1].name"), ["a", "b"]);
        assert_eq!(strings(".spec.items[::2].name"), ["a", "c"]);
        assert_eq!(strings(".spec.items[-2:3:1].name"), ["b", "c"]);
        assert!(read(".spec.items[1:1].name").is_empty());
        // Bounds are not clamped: upstream fails.
        assert!(read(".spec.items[0:5].name").is_empty());
        assert!(read(".spec.items[-5:].name").is_empty());
        assert!(read(".spec.items[2:1].name").is_empty());
        assert!(read(".spec.items[::0].name").is_empty());
    }

    #[test]
    fn unions() {
        assert_eq!(strings(".spec.items[0,2].name"), ["a", "c"]);
        assert_eq!(strings(".spec.items[2, 0].name"), ["c", "a"]);
        assert_eq!(strings(".spec.items[0:1,-1].name"), ["a", "c"]);
        assert_eq!(read(".spec['nope','items'][0]"), vec![json!({"name": "a"})]);
        // The size is no list: indexing it fails the path.
        assert!(read(".spec['size','items'][0]").is_empty());
        assert_eq!(read(".metadata['name','labels']").len(), 2);
    }

    #[test]
    fn recursive_descent() {
        assert_eq!(strings("..name"), ["w", "a", "b", "c", "d"]);
        assert_eq!(strings(".spec..name"), ["a", "b", "c", "d"]);
        assert_eq!(strings(".spec.items..n.name"), ["d"]);
        assert_eq!(strings(r#"..conditions[?(@.type=="Ready")].status"#), ["True"]);
        // Indexing everything below includes objects, which fails.
        assert!(read("..[0]").is_empty());
        assert!(JsonPath::parse("....a").is_err());
    }

    #[test]
    fn filters_compare_and_test_for_presence() {
        let ready = r#".status.conditions[?(@.type=="Ready")].status"#;
        assert_eq!(strings(ready), ["True"]);
        assert_eq!(strings(".status.conditions[?(@.type == 'Synced')].status"), ["False"]);
        assert_eq!(strings(".status.conditions[?(@.type!='Synced')].type"), ["Ready"]);
        assert_eq!(strings(".status.conditions[?(@.count==2)].type"), ["Ready"]);
        assert_eq!(strings(".status.conditions[?(@.count>=2)].type"), ["Ready"]);
        assert_eq!(strings(".status.conditions[?(@.type<'S')].type"), ["Ready"]);
        assert_eq!(strings(".status.conditions[?(@.count)].type"), ["Ready"]);
        assert_eq!(strings(".spec.items[?(@.on==true)].name"), ["b"]);
        assert_eq!(strings(".spec.items[?(@.name==@.name)].name"), ["a", "b", "c"]);
        assert!(read(r#".status.conditions[?(@.type=="Gone")].status"#).is_empty());
        // An integer is not a float; booleans are not ordered; objects do not compare.
        assert!(read(".status.conditions[?(@.count==2.0)].type").is_empty());
        assert!(read(".spec.items[?(@.on>false)].name").is_empty());
        assert!(read(".spec.items[?(@.n=='x')].name").is_empty());
        // Only lists are filtered.
        assert!(read(".spec[?(@.size)]").is_empty());
    }

    #[test]
    fn what_does_not_parse_is_an_error() {
        for bad in [
            ".spec[",
            ".spec[1:2:3:4]",
            ".spec[a]",
            ".spec[\"size\"]",
            ".spec[?(@.a]",
            ".spec[?(@.a)",
            ".a !",
            ".a 'b",
            ".a[-]",
            "....b",
            ".a {",
            ".a 1.2.3",
        ] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
        // Words other than booleans parse but fail when evaluated.
        assert!(read(".spec.size range").is_empty());
    }
}
