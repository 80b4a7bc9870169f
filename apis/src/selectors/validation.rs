//! The label-key check selectors need (upstream's `IsQualifiedName`), with upstream's
//! messages, and the `field.Invalid` rendering of selector errors. Label values are checked
//! with [`crate::validation::label_value_problems`] and quoted with [`crate::gofmt`].
//!
//! `IsQualifiedName` stays here rather than using `validation::qualified_name_problems`:
//! that one reads a key with several `/` as prefix and name (a name-part error), and gives only
//! "must be non-empty" for an empty name part, where upstream (and selector errors kubectl
//! shows) say "a qualified name ..." and add the regex error.

use crate::validation::{name_problems, NameRule};

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_MAX_LEN: usize = 63;

/// Upstream's `RegexError`: the message, examples, and the regex shown to the user.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{example}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

fn max_len_error(len: usize) -> String {
    format!("must be no more than {len} characters")
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, anchored.
fn is_qualified_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else { return false };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// Upstream's `IsQualifiedName`: an optional DNS-subdomain prefix and `/`, then a name of at
/// most 63 characters. Returns the problems found, empty when the key is valid.
pub(crate) fn qualified_name_errors(value: &str) -> Vec<String> {
    let parts: Vec<&str> = value.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    name_problems(prefix, NameRule::Subdomain)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            *name
        }
        _ => {
            let regex = regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"],
            );
            errs.push(format!(
                "a qualified name {regex} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LEN {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX_LEN)));
    }
    if !is_qualified_name_part(name) {
        let regex =
            regex_error(QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"]);
        errs.push(format!("name part {regex}"));
    }
    errs
}

/// A `field.Invalid` error rendered the way apimachinery prints it:
/// `<field>: Invalid value: <value>: <detail>`.
pub(crate) fn invalid_value(field: &str, rendered_value: &str, detail: &str) -> String {
    format!("{field}: Invalid value: {rendered_value}: {detail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names() {
        assert!(qualified_name_errors("app").is_empty());
        assert!(qualified_name_errors("app.kubernetes.io/name").is_empty());
        assert!(qualified_name_errors("a_b-c.d").is_empty());
        assert_eq!(qualified_name_errors("/a"), vec!["prefix part must be non-empty"]);
        assert_eq!(qualified_name_errors("a/").len(), 2);
        assert!(qualified_name_errors("Example.com/a")[0].starts_with("prefix part a lowercase"));
        assert!(qualified_name_errors("a/b/c")[0].starts_with("a qualified name must consist"));
        assert_eq!(
            qualified_name_errors(&"a".repeat(64))[0],
            "name part must be no more than 63 characters"
        );
    }
}
