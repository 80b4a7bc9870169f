//! Field selectors: operators, escaping, canonical string, the terms the server checks, and
//! kube-apiserver's error messages.

use std::collections::BTreeMap;

use rkube_apis::selectors::fields::{escape_value, unescape_value};
use rkube_apis::selectors::{FieldOperator, FieldRequirement, FieldSelector};

fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn parse(s: &str) -> FieldSelector {
    FieldSelector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

fn requirement(field: &str, operator: FieldOperator, value: &str) -> FieldRequirement {
    FieldRequirement { field: field.into(), operator, value: value.into() }
}

#[test]
fn terms_for_every_operator() {
    use FieldOperator::{Equals, NotEquals};
    let cases: &[(&str, Vec<FieldRequirement>)] = &[
        ("", vec![]),
        (",", vec![]),
        ("=", vec![]),
        ("spec.nodeName=n1", vec![requirement("spec.nodeName", Equals, "n1")]),
        ("spec.nodeName==n1", vec![requirement("spec.nodeName", Equals, "n1")]),
        ("status.phase!=Failed", vec![requirement("status.phase", NotEquals, "Failed")]),
        ("a=", vec![requirement("a", Equals, "")]),
        ("=b", vec![requirement("", Equals, "b")]),
        ("a!=b,a=c", vec![requirement("a", NotEquals, "b"), requirement("a", Equals, "c")]),
        // Terms are sorted by their raw text, so "a==b" comes before "a=c".
        ("a=c,a==b", vec![requirement("a", Equals, "b"), requirement("a", Equals, "c")]),
        ("z=1,a=2", vec![requirement("a", Equals, "2"), requirement("z", Equals, "1")]),
        ("b=1,,a=2", vec![requirement("a", Equals, "2"), requirement("b", Equals, "1")]),
        ("a = b", vec![requirement("a ", Equals, " b")]),
        ("a!b=c", vec![requirement("a!b", Equals, "c")]),
        ("a=!b", vec![requirement("a", Equals, "!b")]),
        ("a=b\\,c", vec![requirement("a", Equals, "b,c")]),
        ("a=b\\=c\\\\d", vec![requirement("a", Equals, "b=c\\d")]),
    ];
    for (input, want) in cases {
        assert_eq!(parse(input).requirements(), want.as_slice(), "terms of {input:?}");
    }
}

#[test]
fn canonical_string() {
    let cases = [
        ("", ""),
        ("b=1,a!=2", "a!=2,b=1"),
        ("a==b", "a=b"),
        ("a=b\\,c", "a=b\\,c"),
        ("a=x\\=y\\\\z", "a=x\\=y\\\\z"),
    ];
    for (input, want) in cases {
        assert_eq!(parse(input).to_string(), want, "canonical form of {input:?}");
    }
}

#[test]
fn matching() {
    let pod =
        fields(&[("metadata.name", "web-1"), ("spec.nodeName", "n1"), ("status.phase", "Running")]);
    let cases = [
        ("", true),
        ("spec.nodeName=n1", true),
        ("spec.nodeName==n1", true),
        ("spec.nodeName=n2", false),
        ("status.phase!=Failed", true),
        ("status.phase!=Running", false),
        ("spec.nodeName=n1,metadata.name=web-1", true),
        ("spec.nodeName=n1,metadata.name=web-2", false),
        // A missing field reads as "".
        ("spec.missing=", true),
        ("spec.missing!=", false),
        ("spec.missing!=x", true),
    ];
    for (selector, want) in cases {
        assert_eq!(parse(selector).matches(&pod), want, "{selector:?}");
    }
    let by_closure = parse("spec.nodeName=n1")
        .matches_with(|f| (f == "spec.nodeName").then(|| "n1".to_string()));
    assert!(by_closure);
}

#[test]
fn introspection() {
    let selector = parse("spec.nodeName=n1,status.phase!=Failed");
    assert_eq!(selector.requires_exact_match("spec.nodeName"), Some("n1"));
    assert_eq!(selector.requires_exact_match("status.phase"), None);
    assert!(!selector.is_empty());
    assert!(parse("").is_empty());
    assert!(FieldSelector::everything().matches(&fields(&[])));
}

#[test]
fn errors_read_as_upstream() {
    let cases = [
        ("abc", "invalid selector: 'abc'; can't understand 'abc'"),
        ("a=b,cd", "invalid selector: 'a=b,cd'; can't understand 'cd'"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        ("a=b\\x", "invalid field selector: invalid escape sequence: \\x"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
    ];
    for (input, want) in cases {
        let error = FieldSelector::parse(input).unwrap_err();
        assert_eq!(error.to_string(), want, "error for {input:?}");
    }
}

#[test]
fn escaping_round_trips() {
    for value in ["", "plain", "a,b", "a=b", "a\\b", "\\,=", "ünï"] {
        let escaped = escape_value(value);
        assert_eq!(unescape_value(&escaped).unwrap(), value);
        let selector = parse(&format!("f={escaped}"));
        assert_eq!(selector.requirements()[0].value, value);
        assert_eq!(selector.to_string(), format!("f={escaped}"));
    }
    assert_eq!(escape_value("a\\b,c=d"), "a\\\\b\\,c\\=d");
}
