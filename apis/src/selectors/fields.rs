//! Field selectors: the `fieldSelector` query parameter (`spec.nodeName=n1,status.phase!=Failed`).
//!
//! Terms are `field=value`, `field==value` or `field!=value`, separated by commas and ANDed.
//! In values, `\,`, `\=` and `\\` stand for `,`, `=` and `\`; any other escape, or a bare `=`
//! in a value, is an error. There is no whitespace trimming. A field an object does not have
//! reads as the empty string. Parsing and printing follow k8s.io/apimachinery `pkg/fields`.

use std::collections::BTreeMap;
use std::fmt;

use super::SelectorError;

/// How a [`FieldRequirement`] relates the field to its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One term of a field selector, with the value unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field path, e.g. `metadata.name` or `spec.nodeName`.
    pub field: String,
    /// The comparison.
    pub operator: FieldOperator,
    /// The unescaped value.
    pub value: String,
}

impl FieldRequirement {
    fn matches(&self, actual: &str) -> bool {
        match self.operator {
            FieldOperator::Equals => actual == self.value,
            FieldOperator::NotEquals => actual != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{}{}", self.field, op, escape_value(&self.value))
    }
}

/// A parsed field selector: the AND of its terms; no terms matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// The selector that matches everything.
    pub fn everything() -> FieldSelector {
        FieldSelector::default()
    }

    /// Parses the string form as kube-apiserver does for `?fieldSelector=`. Terms come out in
    /// the order upstream keeps them: sorted by their raw text.
    pub fn parse(selector: &str) -> Result<FieldSelector, SelectorError> {
        let mut terms = split_terms(selector);
        terms.sort_unstable();
        let mut requirements = Vec::new();
        for term in terms.into_iter().filter(|t| !t.is_empty()) {
            let Some((field, operator, raw_value)) = split_term(term) else {
                return Err(SelectorError::new(format!(
                    "invalid selector: '{selector}'; can't understand '{term}'"
                )));
            };
            let value = unescape_value(raw_value)?;
            // Upstream's transform step turns a term with empty field and value into "everything".
            if field.is_empty() && value.is_empty() {
                continue;
            }
            requirements.push(FieldRequirement { field: field.to_string(), operator, value });
        }
        Ok(FieldSelector { requirements })
    }

    /// The terms, so the server can check each field is supported for the kind.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// True when the selector does not restrict anything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object whose selectable fields are `fields` satisfies every term; a field
    /// missing from the map reads as "".
    pub fn matches(&self, fields: &BTreeMap<String, String>) -> bool {
        self.matches_with(|field| fields.get(field).cloned())
    }

    /// Whether the object whose fields `get` looks up satisfies every term; `None` reads as "".
    pub fn matches_with(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| r.matches(get(&r.field).as_deref().unwrap_or_default()))
    }

    /// The value the selector requires for `field` when a `=` term pins it (the kubelet's
    /// `spec.nodeName=<node>` watch, for instance).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }
}

/// The canonical string form: terms joined by `,`, values escaped, `==` written as `=`.
impl fmt::Display for FieldSelector {
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

/// Escapes `\`, `,` and `=` in a value so it can be put in a selector string.
pub fn escape_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Reverses [`escape_value`], with upstream's errors for bad escapes and bare `,` or `=`.
pub fn unescape_value(value: &str) -> Result<String, SelectorError> {
    if !value.contains(['\\', ',', '=']) {
        return Ok(value.to_string());
    }
    let mut out = String::with_capacity(value.len());
    let mut in_slash = false;
    for c in value.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(invalid_escape(&format!("\\{c}")));
            }
            out.push(c);
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if matches!(c, ',' | '=') {
            // Upstream prints the rune with %v, i.e. as its code point number.
            return Err(SelectorError::new(format!(
                "invalid field selector: unescaped character in value: {}",
                c as u32
            )));
        } else {
            out.push(c);
        }
    }
    if in_slash {
        return Err(invalid_escape("\\"));
    }
    Ok(out)
}

fn invalid_escape(sequence: &str) -> SelectorError {
    SelectorError::new(format!("invalid field selector: invalid escape sequence: {sequence}"))
}

/// Splits on commas that are not escaped; an empty selector has no terms.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// Finds the first operator in the term, trying `!=`, `==`, `=` at each position.
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    const OPERATORS: [(&str, FieldOperator); 3] = [
        ("!=", FieldOperator::NotEquals),
        ("==", FieldOperator::Equals),
        ("=", FieldOperator::Equals),
    ];
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (text, operator) in OPERATORS {
            if let Some(value) = rest.strip_prefix(text) {
                return Some((&term[..i], operator, value));
            }
        }
    }
    None
}
