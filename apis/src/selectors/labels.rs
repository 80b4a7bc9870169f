//! Label selectors: the `labelSelector` query parameter (`app=web,tier in (a,b),!canary`) and
//! the `metav1.LabelSelector` object (`matchLabels` + `matchExpressions`).
//!
//! The grammar, the canonical string form (requirements sorted by key, set values sorted) and
//! the error messages follow k8s.io/apimachinery `pkg/labels`:
//!
//! ```text
//! selector    ::= requirement | requirement "," selector
//! requirement ::= ["!"] KEY [ ("in" | "notin") "(" VALUES ")" | ("=" | "==" | "!=" | ">" | "<") VALUE ]
//! ```
//!
//! A requirement with only a key means "exists"; `!key` means "does not exist". Keys are
//! qualified names (optional DNS-subdomain prefix and `/`, then at most 63 characters), values
//! are at most 63 characters and may be empty; `>` and `<` take integers.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::validation::{invalid_value, qualified_name_errors};
use super::SelectorError;
use crate::gofmt::{go_quote, go_string_slice};
use crate::validation::label_value_problems;

/// How a [`Requirement`] relates its key to its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key in (a,b)`: the label is present with one of the values.
    In,
    /// `key notin (a,b)`: the label is absent or has none of the values.
    NotIn,
    /// `key=value`.
    Equals,
    /// `key==value` (same meaning as `=`, kept apart for the canonical string).
    DoubleEquals,
    /// `key!=value`: the label is absent or has another value.
    NotEquals,
    /// `key`: the label is present.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>5`: the label is present and its integer value is greater.
    GreaterThan,
    /// `key<5`: the label is present and its integer value is smaller.
    LessThan,
}

impl Operator {
    /// The operator's name in `selection.Operator` terms (`in`, `notin`, `=`, `gt`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// One condition of a selector: a key, an operator and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Builds a requirement, validating it as upstream's `NewRequirement` does: the key must be
    /// a qualified name, the number of values must suit the operator, values must be valid label
    /// values and `>`/`<` values integers. Error paths are rendered as `key`, `values`,
    /// `values[i]` and `values[i][key]`, as the API does for `metav1.LabelSelector`.
    pub fn new(
        key: impl Into<String>,
        operator: Operator,
        values: Vec<String>,
    ) -> Result<Requirement, SelectorError> {
        let key = key.into();
        let errors = requirement_errors(&key, operator, Some(&values));
        if !errors.is_empty() {
            return Err(SelectorError::new(aggregate(errors)));
        }
        Ok(Requirement { key, operator, values })
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values in the order given (parsing sorts and de-duplicates set values).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether a set of labels satisfies this requirement.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        let value = get(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => !value.is_some_and(|v| self.has_value(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => self.compare_integer(value),
        }
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|v| v == value)
    }

    fn compare_integer(&self, value: Option<&str>) -> bool {
        let Some(Ok(actual)) = value.map(str::parse::<i64>) else { return false };
        let [wanted] = self.values.as_slice() else { return false };
        let Ok(wanted) = wanted.parse::<i64>() else { return false };
        match self.operator {
            Operator::GreaterThan => actual > wanted,
            _ => actual < wanted,
        }
    }
}

/// Upstream's `Requirement.String()`: set values sorted, `!key` for "does not exist".
impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        let mut values = self.values.clone();
        values.sort();
        if set {
            write!(f, "({})", values.join(","))
        } else {
            f.write_str(&values.join(","))
        }
    }
}

/// A parsed label selector: the AND of its requirements, or "nothing".
///
/// Three cases matter to callers: [`LabelSelector::everything`] (no requirements; also what an
/// empty string or an empty `metav1.LabelSelector {}` gives) matches every object,
/// [`LabelSelector::nothing`] (what an absent `metav1.LabelSelector` gives) matches none, and
/// anything else matches objects satisfying every requirement.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    matches_nothing: bool,
}

impl LabelSelector {
    /// The selector that matches every set of labels.
    pub fn everything() -> LabelSelector {
        LabelSelector::default()
    }

    /// The selector that matches no set of labels (an absent `metav1.LabelSelector`).
    pub fn nothing() -> LabelSelector {
        LabelSelector { requirements: Vec::new(), matches_nothing: true }
    }

    /// Parses the string form, as kube-apiserver does for `?labelSelector=`.
    pub fn parse(selector: &str) -> Result<LabelSelector, SelectorError> {
        let mut requirements = Parser::new(selector).parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements, matches_nothing: false })
    }

    /// A selector requiring exactly these labels (upstream's `SelectorFromSet`; no validation,
    /// as for Service and ReplicationController selectors). An empty map matches everything.
    pub fn from_map(labels: &BTreeMap<String, String>) -> LabelSelector {
        let requirements = labels
            .iter()
            .map(|(k, v)| Requirement {
                key: k.clone(),
                operator: Operator::Equals,
                values: vec![v.clone()],
            })
            .collect();
        LabelSelector { requirements, matches_nothing: false }
    }

    /// Converts a `metav1.LabelSelector` (upstream's `LabelSelectorAsSelector`).
    ///
    /// `null` (an absent selector) gives [`LabelSelector::nothing`]; `{}` (no `matchLabels`,
    /// no `matchExpressions`) gives [`LabelSelector::everything`]. Operators are `In`, `NotIn`,
    /// `Exists` and `DoesNotExist`; every requirement is validated as [`Requirement::new`] does.
    pub fn from_api(selector: &Value) -> Result<LabelSelector, SelectorError> {
        let object = match selector {
            Value::Null => return Ok(LabelSelector::nothing()),
            Value::Object(object) => object,
            other => {
                return Err(SelectorError::new(format!(
                    "a label selector must be an object, not {other}"
                )))
            }
        };
        let mut requirements = match_labels_requirements(object.get("matchLabels"))?;
        requirements.extend(match_expressions_requirements(object.get("matchExpressions"))?);
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements, matches_nothing: false })
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// True when the selector does not restrict anything (matches everything).
    pub fn is_empty(&self) -> bool {
        !self.matches_nothing && self.requirements.is_empty()
    }

    /// True for the selector that matches nothing.
    pub fn is_nothing(&self) -> bool {
        self.matches_nothing
    }

    /// Whether these labels satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|key| labels.get(key).map(String::as_str))
    }

    /// Whether the labels that `get` looks up satisfy every requirement; e.g. for an object's
    /// JSON `metadata.labels`: `|k| labels.get(k).and_then(Value::as_str)`.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        !self.matches_nothing && self.requirements.iter().all(|r| r.matches(&get))
    }

    /// The value the selector requires for `label` when it pins exactly one (`=`, `==`, or `in`
    /// with one value), which lets a server narrow a list before filtering.
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let requirement = self.requirements.iter().find(|r| r.key == label)?;
        match (requirement.operator, requirement.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [value]) => Some(value),
            _ => None,
        }
    }
}

/// A `metav1.LabelSelector` as Go's generated `(*LabelSelector).String()` prints it (what
/// upstream's messages show for `%v` of one): `&LabelSelector{MatchLabels:map[string]string{app:
/// web,},MatchExpressions:[]LabelSelectorRequirement{},}`, or `nil` for none.
pub fn go_string(selector: Option<&Value>) -> String {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return "nil".to_string();
    };
    let mut labels: Vec<(&String, &Value)> =
        selector["matchLabels"].as_object().map(|m| m.iter().collect()).unwrap_or_default();
    labels.sort_by(|a, b| a.0.cmp(b.0));
    let labels: String =
        labels.iter().map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or(""))).collect();
    let expressions: String = selector["matchExpressions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let values: Vec<&str> = e["values"]
                .as_array()
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                e["key"].as_str().unwrap_or(""),
                e["operator"].as_str().unwrap_or(""),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

/// The canonical string form (upstream's `Selector.String()`); empty for everything/nothing.
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

fn match_labels_requirements(value: Option<&Value>) -> Result<Vec<Requirement>, SelectorError> {
    let Some(Value::Object(labels)) = value else { return Ok(Vec::new()) };
    let mut keys: Vec<&String> = labels.keys().collect();
    keys.sort();
    keys.into_iter()
        .map(|key| {
            let value = labels[key].as_str().unwrap_or_default().to_string();
            Requirement::new(key.clone(), Operator::Equals, vec![value])
        })
        .collect()
}

fn match_expressions_requirements(
    value: Option<&Value>,
) -> Result<Vec<Requirement>, SelectorError> {
    let Some(Value::Array(expressions)) = value else { return Ok(Vec::new()) };
    expressions.iter().map(match_expression_requirement).collect()
}

fn match_expression_requirement(expression: &Value) -> Result<Requirement, SelectorError> {
    let key = expression.get("key").and_then(Value::as_str).unwrap_or_default();
    let operator_name = expression.get("operator").and_then(Value::as_str).unwrap_or_default();
    let operator = match operator_name {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => {
            return Err(SelectorError::new(format!(
                "{} is not a valid label selector operator",
                go_quote(other)
            )))
        }
    };
    // Upstream copies `values` into a nil slice, so an absent or empty list prints as nil.
    let values: Option<Vec<String>> = match expression.get("values") {
        Some(Value::Array(values)) if !values.is_empty() => {
            Some(values.iter().map(|v| v.as_str().unwrap_or_default().to_string()).collect())
        }
        _ => None,
    };
    let errors = requirement_errors(key, operator, values.as_deref());
    if !errors.is_empty() {
        return Err(SelectorError::new(aggregate(errors)));
    }
    Ok(Requirement { key: key.to_string(), operator, values: values.unwrap_or_default() })
}

/// Upstream's `NewRequirement` checks, each rendered as a `field.Error` string.
fn requirement_errors(key: &str, operator: Operator, values: Option<&[String]>) -> Vec<String> {
    let mut errors = Vec::new();
    if let Some(error) = key_error(key, "key") {
        errors.push(error);
    }
    let list = values.unwrap_or_default();
    let shown = || go_string_slice(values);
    match operator {
        Operator::In | Operator::NotIn if list.is_empty() => errors.push(invalid_value(
            "values",
            &shown(),
            "for 'in', 'notin' operators, values set can't be empty",
        )),
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if list.len() != 1 => {
            errors.push(invalid_value(
                "values",
                &shown(),
                "exact-match compatibility requires one single value",
            ))
        }
        Operator::Exists | Operator::DoesNotExist if !list.is_empty() => {
            errors.push(invalid_value(
                "values",
                &shown(),
                "values set must be empty for exists and does not exist",
            ))
        }
        Operator::GreaterThan | Operator::LessThan => {
            if list.len() != 1 {
                errors.push(invalid_value(
                    "values",
                    &shown(),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                ));
            }
            for (i, value) in list.iter().enumerate() {
                if value.parse::<i64>().is_err() {
                    errors.push(invalid_value(
                        &format!("values[{i}]"),
                        &go_quote(value),
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
        _ => {}
    }
    for (i, value) in list.iter().enumerate() {
        let problems = label_value_problems(value);
        if !problems.is_empty() {
            errors.push(invalid_value(
                &format!("values[{i}][{key}]"),
                &go_quote(value),
                &problems.join("; "),
            ));
        }
    }
    errors
}

/// A label key problem as a `field.Invalid` string, or `None` for a valid key.
fn key_error(key: &str, field: &str) -> Option<String> {
    let problems = qualified_name_errors(key);
    (!problems.is_empty()).then(|| invalid_value(field, &go_quote(key), &problems.join("; ")))
}

/// Upstream's aggregate error: one message alone, several as `[a, b]` without duplicates.
fn aggregate(errors: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::new();
    for error in errors {
        if !unique.contains(&error) {
            unique.push(error);
        }
    }
    match unique.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword_token(literal: &str) -> Option<Token> {
    Some(match literal {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// The byte-wise lexer of upstream: a NUL byte reads as the end of the input.
struct Lexer<'a> {
    input: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    fn read(&mut self) -> u8 {
        match self.input.as_bytes().get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos -= 1;
    }

    fn lex(&mut self) -> (Token, String) {
        let mut ch = self.read();
        while is_whitespace(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special_symbol(ch) {
            self.scan_special_symbol()
        } else {
            self.scan_identifier_or_keyword()
        }
    }

    fn scan_identifier_or_keyword(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut end = start;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special_symbol(ch) || is_whitespace(ch) {
                self.unread();
                break;
            }
            end = self.pos;
        }
        // Boundaries are ASCII bytes or the end, so this slice is on char boundaries.
        let literal = self.input[start..end].to_string();
        (keyword_token(&literal).unwrap_or(Token::Identifier), literal)
    }

    /// Longest run of special symbols that still forms a known operator.
    fn scan_special_symbol(&mut self) -> (Token, String) {
        let mut buffer = String::new();
        let mut last: Option<(Token, String)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special_symbol(ch) {
                self.unread();
                break;
            }
            buffer.push(ch as char);
            match keyword_token(&buffer) {
                Some(token) => last = Some((token, buffer.clone())),
                None if last.is_some() => {
                    self.unread();
                    break;
                }
                None => {}
            }
        }
        // Every single special symbol is an operator, so `last` is always set here.
        last.unwrap_or((Token::EndOfString, String::new()))
    }
}

/// Whether `in`/`notin` read as operators (after a key) or as plain identifiers (as values).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

/// Upstream's recursive-descent parser over the pre-scanned tokens.
struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn new(input: &str) -> Parser {
        let mut lexer = Lexer { input, pos: 0 };
        let mut items = Vec::new();
        loop {
            let item = lexer.lex();
            let done = item.0 == Token::EndOfString;
            items.push(item);
            if done {
                break;
            }
        }
        Parser { items, position: 0 }
    }

    fn in_context(token: Token, context: Context) -> Token {
        match (context, token) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            _ => token,
        }
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        let (token, literal) = &self.items[self.position];
        (Self::in_context(*token, context), literal.clone())
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.lookahead(context);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::DoesNotExist => {
                    let requirement = self.parse_requirement().map_err(|e| {
                        SelectorError::new(format!("unable to parse requirement: {e}"))
                    })?;
                    requirements.push(requirement);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (next, next_literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::DoesNotExist {
                                return Err(SelectorError::new(format!(
                                    "found '{next_literal}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(SelectorError::new(format!(
                                "found '{literal}', expected: ',' or 'end of string'"
                            )))
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(SelectorError::new(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    )))
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(operator) = inferred {
            return new_parsed_requirement(key, operator, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_parsed_requirement(key, operator, values)
    }

    /// Reads `[!]key`; infers Exists/DoesNotExist when nothing but `,` or the end follows, and
    /// (as upstream) also DoesNotExist whenever the key had a `!`.
    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut token, mut literal) = self.consume(Context::Values);
        if token == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        if let Some(error) = key_error(&literal, "<nil>") {
            return Err(error);
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{literal}', expected: in, notin, =, ==, !=, gt, lt")),
        })
    }

    /// `( values )`, returned sorted and de-duplicated like upstream's string set.
    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let values = self.parse_identifiers_list()?;
                let (closing, _) = self.consume(Context::Values);
                if closing != Token::ClosedPar {
                    // Upstream reports the token that opened the list here, not the one found.
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(values)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{literal}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut set = std::collections::BTreeSet::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    set.insert(literal);
                    let (next, next_literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set.into_iter().collect()),
                        _ => return Err(format!("found '{next_literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (next, _) = self.lookahead(Context::Values);
                    if next == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set.into_iter().collect());
                    }
                    if next == Token::Comma {
                        self.consume(Context::Values);
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (token, _) = self.lookahead(Context::Values);
        if matches!(token, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            return Ok(vec![literal]);
        }
        Err(format!("found '{literal}', expected: identifier"))
    }
}

fn new_parsed_requirement(
    key: String,
    operator: Operator,
    values: Vec<String>,
) -> Result<Requirement, String> {
    let errors = requirement_errors(&key, operator, Some(&values));
    if !errors.is_empty() {
        return Err(aggregate(errors));
    }
    Ok(Requirement { key, operator, values })
}
