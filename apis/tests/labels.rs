//! Label selectors: every operator, the canonical string, matching, `metav1.LabelSelector`,
//! and kube-apiserver's error messages (what kubectl prints after "Error from server
//! (BadRequest): ...").

use std::collections::BTreeMap;

use rkube_apis::selectors::{LabelSelector, Operator, Requirement};
use serde_json::json;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn parse(s: &str) -> LabelSelector {
    LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

fn parse_error(s: &str) -> String {
    match LabelSelector::parse(s) {
        Ok(selector) => panic!("{s:?} should not parse, got {selector:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn canonical_string_of_every_operator() {
    let cases = [
        ("", ""),
        ("x=a", "x=a"),
        ("x==a", "x==a"),
        ("x!=a", "x!=a"),
        ("x in (b,a,a)", "x in (a,b)"),
        ("x notin (a)", "x notin (a)"),
        ("x", "x"),
        ("!x", "!x"),
        ("x>5", "x>5"),
        ("x<5", "x<5"),
        ("x=", "x="),
        ("x= ", "x="),
        ("x=,z= ", "x=,z="),
        ("x in ()", "x in ()"),
        ("x in (,a)", "x in (,a)"),
        ("x in (a,,b)", "x in (,a,b)"),
        ("  z = 1 ,\ta\n", "a,z=1"),
        ("x=a,a=x", "a=x,x=a"),
        ("app.kubernetes.io/name=web", "app.kubernetes.io/name=web"),
        ("in in (in,notin)", "in in (in,notin)"),
        ("notin=in", "notin=in"),
    ];
    for (input, want) in cases {
        assert_eq!(parse(input).to_string(), want, "canonical form of {input:?}");
    }
}

#[test]
fn parsed_requirements() {
    let selector = parse("b notin (y,x),a in (q),!c,d,e>3,f<4,g!=1,h==2,i=3");
    let got: Vec<(&str, Operator, Vec<&str>)> = selector
        .requirements()
        .iter()
        .map(|r| (r.key(), r.operator(), r.values().iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("a", Operator::In, vec!["q"]),
            ("b", Operator::NotIn, vec!["x", "y"]),
            ("c", Operator::DoesNotExist, vec![]),
            ("d", Operator::Exists, vec![]),
            ("e", Operator::GreaterThan, vec!["3"]),
            ("f", Operator::LessThan, vec!["4"]),
            ("g", Operator::NotEquals, vec!["1"]),
            ("h", Operator::DoubleEquals, vec!["2"]),
            ("i", Operator::Equals, vec!["3"]),
        ]
    );
}

/// A selector, a label set, and whether the selector matches it.
type MatchCase = (&'static str, &'static [(&'static str, &'static str)], bool);

#[test]
fn matching_for_every_operator() {
    let cases: &[MatchCase] = &[
        ("", &[("x", "y")], true),
        ("x=y", &[("x", "y")], true),
        ("x=y", &[("x", "z")], false),
        ("x=z", &[], false),
        ("x==y", &[("x", "y")], true),
        ("x!=y", &[("x", "z")], true),
        ("x!=y", &[], true),
        ("x!=y", &[("x", "y")], false),
        ("x in (a,b)", &[("x", "b")], true),
        ("x in (a,b)", &[("x", "c")], false),
        ("x in (a,b)", &[], false),
        ("x in ()", &[("x", "")], true),
        ("x notin (a,b)", &[("x", "c")], true),
        ("x notin (a,b)", &[], true),
        ("x notin (a,b)", &[("x", "a")], false),
        ("x", &[("x", "")], true),
        ("x", &[("y", "z")], false),
        ("!x", &[("y", "z")], true),
        ("!x", &[("x", "z")], false),
        ("x>1", &[("x", "2")], true),
        ("x>1", &[("x", "1")], false),
        ("x>1", &[("x", "a")], false),
        ("x>1", &[], false),
        ("x<1", &[("x", "-3")], true),
        ("x<1", &[("x", "2")], false),
        ("x=y,z=w", &[("x", "y"), ("z", "w")], true),
        ("x=y,z=w", &[("x", "y"), ("z", "v")], false),
        ("notin=in", &[("notin", "in")], true),
    ];
    for (selector, set, want) in cases {
        assert_eq!(parse(selector).matches(&labels(set)), *want, "{selector:?} on {set:?}");
    }
}

#[test]
fn matches_json_labels_through_a_closure() {
    let object_labels = json!({"app": "web", "tier": "front"});
    let selector = parse("app=web,tier in (front,back)");
    assert!(selector.matches_with(|k| object_labels.get(k).and_then(|v| v.as_str())));
    assert!(!parse("app=db").matches_with(|k| object_labels.get(k).and_then(|v| v.as_str())));
}

#[test]
fn empty_everything_and_nothing() {
    assert!(parse("").is_empty());
    assert!(LabelSelector::everything().matches(&labels(&[])));
    assert!(!LabelSelector::nothing().matches(&labels(&[])));
    assert!(!LabelSelector::nothing().is_empty());
    assert!(LabelSelector::nothing().is_nothing());
    assert!(!parse("a").is_empty());
}

#[test]
fn exact_match_introspection() {
    let selector = parse("a=1,b in (2),c in (3,4),d!=5");
    assert_eq!(selector.requires_exact_match("a"), Some("1"));
    assert_eq!(selector.requires_exact_match("b"), Some("2"));
    assert_eq!(selector.requires_exact_match("c"), None);
    assert_eq!(selector.requires_exact_match("d"), None);
    assert_eq!(selector.requires_exact_match("e"), None);
}

const NAME_PART_REGEX: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_REGEX: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

#[test]
fn syntax_errors_read_as_upstream() {
    let cases = [
        ("x=a||y=b", format!("unable to parse requirement: values[0][x]: Invalid value: \"a||y\": {LABEL_VALUE_REGEX}")),
        ("x==a==b", "found '==', expected: ',' or 'end of string'".to_string()),
        ("!x=a", "found '=', expected: ',' or 'end of string'".to_string()),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".to_string()),
        ("a,", "found '', expected: identifier after ','".to_string()),
        ("a,,b", "found ',', expected: identifier after ','".to_string()),
        (",a", "found ',', expected: !, identifier, or 'end of string'".to_string()),
        ("=a", "found '=', expected: !, identifier, or 'end of string'".to_string()),
        ("!", "unable to parse requirement: found '', expected: identifier".to_string()),
        ("x in a", "unable to parse requirement: found 'a' expected: '('".to_string()),
        ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'".to_string()),
        ("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'".to_string()),
        ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".to_string()),
        ("x in (,=)", "unable to parse requirement: found '=', expected: ',', or identifier".to_string()),
        ("x=(a)", "unable to parse requirement: found '(', expected: identifier".to_string()),
        ("x in (a),", "found '', expected: identifier after ','".to_string()),
    ];
    for (input, want) in cases {
        assert_eq!(parse_error(input), want, "error for {input:?}");
    }
}

#[test]
fn key_and_value_validation_errors_read_as_upstream() {
    let cases = [
        ("app:web", format!("unable to parse requirement: <nil>: Invalid value: \"app:web\": {NAME_PART_REGEX}")),
        ("-a=b", format!("unable to parse requirement: <nil>: Invalid value: \"-a\": {NAME_PART_REGEX}")),
        (
            "app.kubernetes_io/name=x",
            "unable to parse requirement: <nil>: Invalid value: \"app.kubernetes_io/name\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string(),
        ),
        ("/a", "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty".to_string()),
        (
            "a/b/c",
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string(),
        ),
        (
            &format!("{}=x", "k".repeat(64)),
            format!("unable to parse requirement: <nil>: Invalid value: \"{}\": name part must be no more than 63 characters", "k".repeat(64)),
        ),
        ("a=-b", format!("unable to parse requirement: values[0][a]: Invalid value: \"-b\": {LABEL_VALUE_REGEX}")),
        ("a in (ok,b_)", format!("unable to parse requirement: values[0][a]: Invalid value: \"b_\": {LABEL_VALUE_REGEX}")),
        (
            &format!("a={}", "v".repeat(64)),
            format!("unable to parse requirement: values[0][a]: Invalid value: \"{}\": must be no more than 63 characters", "v".repeat(64)),
        ),
        ("a>b", "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer".to_string()),
        ("x<-5", format!("unable to parse requirement: values[0][x]: Invalid value: \"-5\": {LABEL_VALUE_REGEX}")),
        ("a<", "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer".to_string()),
        (
            "a>b_",
            format!("unable to parse requirement: [values[0]: Invalid value: \"b_\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][a]: Invalid value: \"b_\": {LABEL_VALUE_REGEX}]"),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(parse_error(input), want, "error for {input:?}");
    }
}

#[test]
fn from_api_covers_every_operator() {
    let selector = LabelSelector::from_api(&json!({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["front", "back"]},
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "team", "operator": "Exists"},
        ]
    }))
    .unwrap();
    assert_eq!(selector.to_string(), "app=web,!canary,env notin (prod),team,tier in (back,front)");
    assert!(selector.matches(&labels(&[("app", "web"), ("tier", "back"), ("team", "x")])));
    assert!(!selector.matches(&labels(&[("app", "web"), ("tier", "back")])));
    assert!(!selector.matches(&labels(&[
        ("app", "web"),
        ("tier", "back"),
        ("team", "x"),
        ("canary", "")
    ])));
}

#[test]
fn from_api_empty_matches_everything_and_absent_matches_nothing() {
    let empty = LabelSelector::from_api(&json!({})).unwrap();
    assert!(empty.is_empty());
    assert!(empty.matches(&labels(&[("a", "b")])));
    let empty_lists = LabelSelector::from_api(&json!({"matchLabels": {}, "matchExpressions": []}));
    assert!(empty_lists.unwrap().is_empty());
    let absent = LabelSelector::from_api(&serde_json::Value::Null).unwrap();
    assert!(absent.is_nothing());
    assert!(!absent.matches(&labels(&[])));
}

#[test]
fn from_api_errors_read_as_upstream() {
    let cases = [
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]}),
            "\"Foo\" is not a valid label selector operator".to_string(),
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty".to_string(),
        ),
        (
            json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
            "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist".to_string(),
        ),
        (
            json!({"matchLabels": {"a b": "c"}}),
            format!("key: Invalid value: \"a b\": {NAME_PART_REGEX}"),
        ),
        (
            json!({"matchLabels": {"a": "c d"}}),
            format!("values[0][a]: Invalid value: \"c d\": {LABEL_VALUE_REGEX}"),
        ),
    ];
    for (selector, want) in cases {
        let error = LabelSelector::from_api(&selector).unwrap_err();
        assert_eq!(error.to_string(), want, "error for {selector}");
    }
}

#[test]
fn requirement_new_validates() {
    assert!(Requirement::new("a", Operator::In, vec!["x".into()]).is_ok());
    let error = Requirement::new("a", Operator::Equals, vec![]).unwrap_err();
    assert_eq!(
        error.message(),
        "values: Invalid value: []string{}: exact-match compatibility requires one single value"
    );
    let error = Requirement::new("a", Operator::GreaterThan, vec!["1".into(), "2".into()]);
    assert_eq!(
        error.unwrap_err().message(),
        "values: Invalid value: []string{\"1\", \"2\"}: for 'Gt', 'Lt' operators, exactly one value is required"
    );
}

#[test]
fn from_map_matches_exactly_those_labels() {
    let selector = LabelSelector::from_map(&labels(&[("b", "2"), ("a", "1")]));
    assert_eq!(selector.to_string(), "a=1,b=2");
    assert!(selector.matches(&labels(&[("a", "1"), ("b", "2"), ("c", "3")])));
    assert!(!selector.matches(&labels(&[("a", "1")])));
    assert!(LabelSelector::from_map(&BTreeMap::new()).is_empty());
}
