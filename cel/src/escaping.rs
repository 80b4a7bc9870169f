//! How object property names appear in CEL, as upstream escapes them (k8s.io/apiserver's
//! `cel.Escape`): a name that is a CEL reserved word becomes `__{word}__` (`namespace` is
//! `__namespace__`), and in other names `__` becomes `__underscores__`, `.` `__dot__`, `-`
//! `__dash__` and `/` `__slash__`; names starting with a digit or holding other characters
//! cannot be reached. Only properties of objects are escaped: map keys are read by index.

/// The reserved words of CEL's grammar.
const RESERVED: &[&str] = &rkube_apis::validation::rules::CEL_RESERVED_WORDS;

/// The CEL identifier of the property `name`; `None` when rules cannot reach it.
pub fn escape(name: &str) -> Option<String> {
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// The property name a CEL identifier stands for (the inverse of [`escape`]).
pub fn unescape(ident: &str) -> Option<String> {
    if let Some(word) = ident.strip_prefix("__").and_then(|i| i.strip_suffix("__")) {
        if RESERVED.contains(&word) {
            return Some(word.to_string());
        }
    }
    let mut out = String::with_capacity(ident.len());
    let mut rest = ident;
    while !rest.is_empty() {
        // An escape: `__` then a name without `_`, then `__`.
        if let Some(after) = rest.strip_prefix("__") {
            let word_len = after.find('_').unwrap_or(after.len());
            if word_len > 0 && after[word_len..].starts_with("__") {
                out.push_str(match &after[..word_len] {
                    "underscores" => "__",
                    "dot" => ".",
                    "dash" => "-",
                    "slash" => "/",
                    _ => return None,
                });
                rest = &after[word_len + 2..];
                continue;
            }
        }
        let c = rest.chars().next()?;
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_escape_and_unescape_as_upstreams() {
        for (name, ident) in [
            ("namespace", "__namespace__"),
            ("if", "__if__"),
            ("foo.bar", "foo__dot__bar"),
            ("x-y/z", "x__dash__y__slash__z"),
            ("a__b", "a__underscores__b"),
            ("_private", "_private"),
            ("plain", "plain"),
        ] {
            assert_eq!(escape(name).as_deref(), Some(ident), "{name}");
            assert_eq!(unescape(ident).as_deref(), Some(name), "{ident}");
        }
        assert_eq!(escape("1st"), None);
        assert_eq!(escape("a b"), None);
        assert_eq!(unescape("a__unknown__b"), None);
    }
}
