//! Whether a `pattern` compiles as Go's `regexp.Compile` would, and Go's error when it does
//! not (`error parsing regexp: missing closing ): `(``), for the definitions' checks that
//! print it (`must be a valid regular expression, but isn't: ...`).
//!
//! The pattern is parsed with `regex-syntax` (RE2-like syntax, as Go's), and its errors are
//! named as Go's `regexp/syntax` names them, with Go's fragment of the pattern. Where the
//! two syntaxes differ, Go decides: a nested repetition (`a**`) and a count over 1000 are
//! errors in Go and refused; a brace that starts no valid count (`x{2`) is a literal in Go
//! and accepted. A parse error with no Go counterpart known here is not reported (the
//! pattern is accepted, and custom objects are not checked against it), so that nothing
//! Go takes is refused.

use regex_syntax::ast::{self, Ast, ErrorKind};

/// Go's largest repetition count.
const MAX_REPEAT: u32 = 1000;

/// Go's error for `pattern`, `None` when Go compiles it.
pub(crate) fn compile_error(pattern: &str) -> Option<String> {
    let (code, fragment) = match ast::parse::Parser::new().parse(pattern) {
        Ok(ast) => nested_repetition(&ast, pattern).or_else(|| translate_error(pattern))?,
        Err(e) => parse_error(&e, pattern)?,
    };
    Some(format!("error parsing regexp: {code}: `{fragment}`"))
}

/// Go's code and fragment for a syntax error.
fn parse_error(e: &ast::Error, pattern: &str) -> Option<(&'static str, String)> {
    let span = e.span();
    let from = |start: usize| pattern.get(start..).unwrap_or("").to_string();
    let spanned = pattern.get(span.start.offset..span.end.offset).unwrap_or("").to_string();
    Some(match e.kind() {
        ErrorKind::GroupUnclosed | ErrorKind::FlagUnexpectedEof => {
            ("missing closing )", pattern.to_string())
        }
        ErrorKind::GroupUnopened => ("unexpected )", pattern.to_string()),
        ErrorKind::ClassUnclosed => ("missing closing ]", from(span.start.offset)),
        ErrorKind::RepetitionMissing => {
            // Go names the operator itself.
            let op: String = pattern[span.start.offset..].chars().take(1).collect();
            ("missing argument to repetition operator", op)
        }
        ErrorKind::RepetitionCountInvalid => ("invalid repeat count", spanned),
        ErrorKind::EscapeUnrecognized | ErrorKind::EscapeHexInvalid => {
            ("invalid escape sequence", spanned)
        }
        ErrorKind::EscapeUnexpectedEof => {
            ("trailing backslash at end of expression", String::new())
        }
        ErrorKind::ClassRangeInvalid => ("invalid character class range", spanned),
        ErrorKind::UnsupportedLookAround | ErrorKind::UnsupportedBackreference => {
            ("invalid or unsupported Perl syntax", spanned)
        }
        _ => return None,
    })
}

/// Go refuses a repetition of a repetition (`a**`, `a+{2}`) that regex-syntax takes.
fn nested_repetition(ast: &Ast, pattern: &str) -> Option<(&'static str, String)> {
    match ast {
        Ast::Repetition(rep) => {
            if let Ast::Repetition(inner) = rep.ast.as_ref() {
                let fragment = pattern.get(inner.op.span.start.offset..rep.op.span.end.offset)?;
                return Some(("invalid nested repetition operator", fragment.to_string()));
            }
            if let ast::RepetitionKind::Range(range) = &rep.op.kind {
                let (ast::RepetitionRange::Exactly(n)
                | ast::RepetitionRange::AtLeast(n)
                | ast::RepetitionRange::Bounded(_, n)) = *range;
                if n > MAX_REPEAT {
                    let fragment = pattern.get(rep.op.span.start.offset..rep.op.span.end.offset)?;
                    return Some(("invalid repeat count", fragment.to_string()));
                }
            }
            nested_repetition(&rep.ast, pattern)
        }
        Ast::Group(group) => nested_repetition(&group.ast, pattern),
        Ast::Alternation(alt) => alt.asts.iter().find_map(|a| nested_repetition(a, pattern)),
        Ast::Concat(concat) => concat.asts.iter().find_map(|a| nested_repetition(a, pattern)),
        _ => None,
    }
}

/// Errors found past the syntax: unknown Unicode classes.
fn translate_error(pattern: &str) -> Option<(&'static str, String)> {
    match regex_syntax::Parser::new().parse(pattern) {
        Err(regex_syntax::Error::Translate(e)) => {
            let span = e.span();
            let fragment = pattern.get(span.start.offset..span.end.offset).unwrap_or("");
            match e.kind() {
                regex_syntax::hir::ErrorKind::UnicodePropertyNotFound
                | regex_syntax::hir::ErrorKind::UnicodePropertyValueNotFound => {
                    Some(("invalid character class range", fragment.to_string()))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::compile_error;

    #[test]
    fn go_errors_and_fragments() {
        let cases = [
            ("(", "missing closing ): `(`"),
            ("a(b", "missing closing ): `a(b`"),
            (")", "unexpected ): `)`"),
            ("x[a-", "missing closing ]: `[a-`"),
            ("+", "missing argument to repetition operator: `+`"),
            ("*a", "missing argument to repetition operator: `*`"),
            ("a**", "invalid nested repetition operator: `**`"),
            ("a{2,1}", "invalid repeat count: `{2,1}`"),
            ("a{1001}", "invalid repeat count: `{1001}`"),
            (r"\q", r"invalid escape sequence: `\q`"),
            ("a\\", "trailing backslash at end of expression: ``"),
            ("[z-a]", "invalid character class range: `z-a`"),
            ("(?=x)", "invalid or unsupported Perl syntax: `(?=`"),
            (r"\p{Foo}", r"invalid character class range: `\p{Foo}`"),
        ];
        for (pattern, want) in cases {
            assert_eq!(
                compile_error(pattern).as_deref(),
                Some(format!("error parsing regexp: {want}").as_str()),
                "{pattern}"
            );
        }
        for fine in ["^[a-z]+$", "a*?", "x{2", r"\d{1,3}", "(?i)abc", "a{1000}"] {
            assert_eq!(compile_error(fine), None, "{fine}");
        }
    }
}
