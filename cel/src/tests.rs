//! The library's behaviour, expression by expression.

use std::time::{Duration, Instant};

use serde_json::json;

use super::*;

fn eval(source: &str, self_: serde_json::Value) -> Result<Value, EvalError> {
    let program = compile(source, &["self"]).unwrap_or_else(|e| panic!("{source}: {e}"));
    let mut activation = Activation::new();
    activation.json("self", &self_);
    program.evaluate(&activation, PER_CALL_LIMIT).map(|(v, _)| v)
}

fn truth(source: &str, self_: serde_json::Value) -> bool {
    match eval(source, self_) {
        Ok(Value::Bool(b)) => b,
        other => panic!("{source}: {other:?}"),
    }
}

#[test]
fn json_reads_as_maps_lists_and_ints() {
    let obj = json!({"spec": {"replicas": 3, "name": "web", "tags": ["a", "b"], "ratio": 0.5}});
    assert!(truth("self.spec.replicas == 3 && self.spec.name == 'web'", obj.clone()));
    assert!(truth("self.spec.tags.size() == 2 && 'a' in self.spec.tags", obj.clone()));
    assert!(truth(
        "self.spec.ratio < 1.0 && has(self.spec.name) && !has(self.spec.x)",
        obj.clone()
    ));
    assert!(truth("self.spec.tags.all(t, t.size() == 1)", obj.clone()));
    assert_eq!(
        eval("self.spec.missing", obj),
        Err(EvalError::Failed("no such key: missing".into()))
    );
}

#[test]
fn compile_errors_read_as_cel_gos() {
    let e = compile("self.x >", &["self"]).unwrap_err();
    assert!(e.to_string().starts_with("ERROR: <input>:1:"), "{e}");
    let e = compile("other.x > 1", &["self"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "ERROR: <input>:1:1: undeclared reference to 'other' (in container '')"
    );
    let p = compile("self.a.exists(x, x == oldSelf.b)", &["self", "oldSelf"]).unwrap();
    assert!(p.uses("oldSelf") && !p.uses("x"));
}

#[test]
fn the_kubernetes_list_library() {
    assert!(truth("[1, 2, 2, 3].isSorted() && ![2, 1].isSorted()", json!({})));
    assert!(truth("[1, 2, 3].sum() == 6 && [].sum() == 0 && [1.5, 1.5].sum() == 3.0", json!({})));
    assert!(truth("[3, 1, 2].min() == 1 && ['b', 'c', 'a'].max() == 'c'", json!({})));
    assert!(truth("[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2", json!({})));
    assert!(truth("[1].indexOf(5) == -1", json!({})));
    assert!(eval("[].min()", json!({})).is_err());
}

#[test]
fn the_strings_extension() {
    assert!(truth("'TacoCat'.lowerAscii() == 'tacocat' && 'a'.upperAscii() == 'A'", json!({})));
    assert!(truth(
        "'a,b,c'.split(',') == ['a', 'b', 'c'] && ['a', 'b'].join('-') == 'a-b'",
        json!({})
    ));
    assert!(truth("'hello'.substring(1, 3) == 'el' && '  x '.trim() == 'x'", json!({})));
    assert!(truth("'aXbX'.replace('X', 'y') == 'ayby' && 'abc'.indexOf('c') == 2", json!({})));
    assert!(truth("'hello'.replace('l', 'L', 1) == 'heLlo'", json!({})));
}

#[test]
fn the_regex_library() {
    assert!(truth("'abc 123 def 456'.find('[0-9]+') == '123'", json!({})));
    assert!(truth("'abc 123 def 456'.findAll('[0-9]+') == ['123', '456']", json!({})));
    assert!(truth(
        "'a1b2c3'.findAll('[0-9]', 2) == ['1', '2'] && 'x'.find('[0-9]') == ''",
        json!({})
    ));
    assert!(truth("'web-1'.matches('^[a-z]+-[0-9]$')", json!({})));
}

#[test]
fn the_url_library() {
    assert!(truth(
        "url('https://user@example.com:8080/a/b?x=1&x=2&y=3').getHost() == 'example.com:8080'",
        json!({})
    ));
    assert!(truth("url('https://example.com:8080/a').getHostname() == 'example.com' && url('https://example.com:8080/a').getPort() == '8080'", json!({})));
    assert!(truth("url('https://[::1]:80/').getHostname() == '::1'", json!({})));
    assert!(truth("url('https://example.com/a/b').getEscapedPath() == '/a/b' && url('https://example.com').getScheme() == 'https'", json!({})));
    assert!(truth("url('/healthz?verbose=1').getQuery() == {'verbose': ['1']}", json!({})));
    assert!(truth("url('https://a.com/?x=1&x=2').getQuery()['x'] == ['1', '2']", json!({})));
    assert!(truth(
        "isURL('https://a.com') && !isURL('not a url') && !isURL('relative/path')",
        json!({})
    ));
    assert!(eval("url('nope')", json!({})).is_err());
}

#[test]
fn the_quantity_library() {
    assert!(truth("quantity('1Gi') == quantity('1024Mi')", json!({})));
    assert!(truth("quantity('500m').isLessThan(quantity('1')) && quantity('2').isGreaterThan(quantity('1500m'))", json!({})));
    assert!(truth("quantity('1').compareTo(quantity('1000m')) == 0 && quantity('2').compareTo(quantity('3')) == -1", json!({})));
    assert!(truth("quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi') && quantity('5').sub(2) == quantity('3')", json!({})));
    assert!(truth(
        "quantity('5').asInteger() == 5 && quantity('500m').asApproximateFloat() == 0.5",
        json!({})
    ));
    assert!(truth(
        "quantity('1.5').isInteger() == false && quantity('-3').sign() == -1",
        json!({})
    ));
    assert!(truth("isQuantity('100Mi') && !isQuantity('100MB')", json!({})));
    assert!(truth(
        "quantity(self.limits.memory).isLessThan(quantity('2Gi'))",
        json!({"limits": {"memory": "1Gi"}})
    ));
    assert!(eval("quantity('500m').asInteger()", json!({})).is_err());
}

#[test]
fn the_ip_and_cidr_libraries() {
    assert!(truth(
        "ip('10.0.0.1').family() == 4 && ip('::1').family() == 6 && ip('::1').isLoopback()",
        json!({})
    ));
    assert!(truth(
        "isIP('1.2.3.4') && !isIP('1.2.3') && !isIP('fe80::1%eth0') && !isIP('::ffff:1.2.3.4')",
        json!({})
    ));
    assert!(truth("ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')", json!({})));
    assert!(truth("ip('10.1.2.3').isGlobalUnicast() && !ip('0.0.0.0').isGlobalUnicast() && ip('0.0.0.0').isUnspecified()", json!({})));
    assert!(truth(
        "ip('169.254.1.1').isLinkLocalUnicast() && ip('224.0.0.5').isLinkLocalMulticast()",
        json!({})
    ));
    assert!(truth("cidr('10.0.0.0/8').containsIP(ip('10.2.3.4')) && cidr('10.0.0.0/8').containsIP('10.2.3.4') && !cidr('10.0.0.0/8').containsIP('11.0.0.1')", json!({})));
    assert!(truth("cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && !cidr('10.1.0.0/16').containsCIDR('10.0.0.0/8')", json!({})));
    assert!(truth("cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8') && cidr('10.1.2.3/8').ip() == ip('10.1.2.3')", json!({})));
    assert!(truth("cidr('10.0.0.0/8').prefixLength() == 8 && string(cidr('10.0.0.0/8')) == '10.0.0.0/8' && string(ip('::1')) == '::1'", json!({})));
    assert!(truth("isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0')", json!({})));
}

#[test]
fn the_sets_extension() {
    assert!(truth("sets.contains([1, 2, 3], [2, 3]) && !sets.contains([1], [2])", json!({})));
    assert!(truth(
        "sets.equivalent([1, 2], [2, 1, 1]) && sets.intersects([1, 2], [2, 5])",
        json!({})
    ));
}

struct Grants;

impl Authorizer for Grants {
    fn authorize(&self, who: &library::authz::Principal, a: &ResourceAttributes) -> Decision {
        if who.name == "alice"
            && a.verb == "create"
            && a.resource == "deployments"
            && a.group == "apps"
        {
            Decision::Allow(String::new())
        } else {
            Decision::NoOpinion(format!("{} may not {} {}", who.name, a.verb, a.resource))
        }
    }
}

#[test]
fn the_authorizer_asks_about_the_user() {
    let program = compile(
        "authorizer.group('apps').resource('deployments').namespace('ns').check('create').allowed() && !authorizer.group('').resource('pods').check('delete').allowed()",
        &["authorizer"],
    )
    .unwrap();
    let principal = library::authz::Principal { name: "alice".into(), ..Default::default() };
    let mut activation = Activation::new();
    activation
        .authorizer("authorizer", AuthorizerValue::new(std::sync::Arc::new(Grants), principal));
    assert!(program.evaluate_bool(&activation, PER_CALL_LIMIT).unwrap().0);
    let reason = compile(
        "authorizer.serviceAccount('ns', 'sa').resource('pods').check('get').reason()",
        &["authorizer"],
    )
    .unwrap();
    let (reason, _) = reason.evaluate_string(&activation, PER_CALL_LIMIT).unwrap();
    assert_eq!(reason, "system:serviceaccount:ns:sa may not get pods");
}

#[test]
fn a_quadratic_expression_on_large_input_is_stopped_quickly() {
    let items: Vec<i64> = (0..20_000).collect();
    let obj = json!({"items": items});
    let started = Instant::now();
    let result = eval("self.items.all(x, self.items.all(y, x == y || x != y))", obj.clone());
    assert_eq!(result, Err(EvalError::CostLimit));
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    // Nested maps grow the work as the cube of the input: stopped too.
    let started = Instant::now();
    let result = eval(
        "self.items.map(a, self.items.map(b, self.items.map(c, a + b + c))).size() > 0",
        obj.clone(),
    );
    assert_eq!(result, Err(EvalError::CostLimit));
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    // A blow-up in size (an empty pattern replaced by the whole string, twice) too.
    let big = "x".repeat(20_000);
    let result =
        eval("self.s.replace('', self.s).replace('', self.s).size() > 0", json!({"s": big}));
    assert_eq!(result, Err(EvalError::CostLimit));
    // An error absorbed by `||` still counts as the limit passed.
    let result =
        eval("self.items.all(x, self.items.all(y, x == y || x != y)) || true", obj.clone());
    assert_eq!(result, Err(EvalError::CostLimit));
    // The same expression on a small input runs to the end.
    assert!(truth(
        "self.items.all(x, self.items.all(y, x == y || x != y))",
        json!({"items": [1, 2, 3]})
    ));
}

#[test]
fn estimates_follow_the_sizes_of_the_inputs() {
    struct Bounded(u64);
    impl estimate::Sizes for Bounded {
        fn max_size(&self, _: &[String]) -> Option<u64> {
            Some(self.0)
        }
    }
    let p = compile("self.items.all(x, self.items.all(y, x != y))", &["self"]).unwrap();
    let small = p.estimated_cost(&Bounded(10));
    let large = p.estimated_cost(&Bounded(10_000));
    assert!(small < 1_000, "{small}");
    assert!(large > crd::ESTIMATED_RULE_LIMIT, "{large}");
}

#[test]
fn compiling_and_evaluating_fit_a_small_stack() {
    let worker = std::thread::Builder::new().stack_size(2 << 20).spawn(|| {
        let p = compile(
            "!has(self.memory) || quantity(self.memory).isLessThan(quantity('2Gi'))",
            &["self", "oldSelf"],
        )
        .unwrap();
        let mut a = Activation::new();
        a.json("self", &json!({"memory": "1Gi"}));
        p.evaluate_bool(&a, PER_CALL_LIMIT).unwrap().0
    });
    assert!(worker.unwrap().join().unwrap());
}

#[test]
fn crd_rules_report_upstreams_errors() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": "self.a <= self.b", "message": "a over b"}],
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
            "items": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3"}]}}}}}});
    let rules = crd::Rules::compile(&schema).unwrap();
    let errors = rules.validate(&json!({"spec": {"a": 2, "b": 1, "items": ["ok", "long"]}}), None);
    let lines: Vec<String> = errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect();
    assert_eq!(
        lines,
        [
            "spec: Invalid value: \"object\": a over b",
            "spec.items[1]: Invalid value: \"string\": failed rule: self.size() < 3",
        ]
    );
    assert!(crd::Rules::compile(
        &json!({"type": "object", "properties": {"a": {"type": "string"}}})
    )
    .is_none());
}

#[test]
fn crd_strings_take_the_type_of_their_format() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {
            "at": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "every": {"type": "string", "format": "duration"},
            "data": {"type": "string", "format": "byte"},
            "plain": {"type": "string"},
            "times": {"type": "array", "items": {"type": "string", "format": "date-time"}},
            "waits": {"type": "object", "additionalProperties": {"type": "string", "format": "duration"}}},
        "x-kubernetes-validations": [
            {"rule": "self.at < timestamp('2030-01-01T00:00:00Z')", "message": "at too late"},
            {"rule": "self.at.getFullYear() == 2026", "message": "at year"},
            {"rule": "self.day == timestamp('2026-03-04T00:00:00Z')", "message": "day"},
            {"rule": "self.every > duration('1h')", "message": "every too short"},
            {"rule": "self.data == b'hello'", "message": "data"},
            {"rule": "self.plain == '2026-01-01T00:00:00Z'", "message": "plain"},
            {"rule": "self.times.all(t, t > timestamp('2020-01-01T00:00:00Z'))", "message": "times"},
            {"rule": "self.waits.all(k, self.waits[k] < duration('72h'))", "message": "waits"}]}}});
    let rules = crd::Rules::compile(&schema).unwrap();
    let good = json!({"spec": {"at": "2026-05-06T07:08:09.5+02:00", "day": "2026-03-04",
        "every": "1h30m", "data": "aGVsbG8=", "plain": "2026-01-01T00:00:00Z",
        "times": ["2021-01-01T00:00:00Z"], "waits": {"a": "2 days", "b": "1w"}}});
    let errors = rules.validate(&good, None);
    let lines: Vec<String> = errors.iter().map(|e| e.message.clone()).collect();
    assert_eq!(lines, ["Invalid value: \"object\": waits"], "a week is over 72h");
    let mut bad = good.clone();
    bad["spec"]["at"] = json!("2031-01-01T00:00:00Z");
    bad["spec"]["every"] = json!("59m59s");
    bad["spec"]["waits"] = json!({"a": "71h"});
    let errors = rules.validate(&bad, None);
    let lines: Vec<String> = errors.iter().map(|e| e.message.clone()).collect();
    assert_eq!(
        lines,
        [
            "Invalid value: \"object\": at too late",
            "Invalid value: \"object\": at year",
            "Invalid value: \"object\": every too short"
        ]
    );
}

#[test]
fn durations_read_as_go_and_the_openapi_formats_do() {
    use crate::convert::from_json_typed;
    let d = |s: &str| match from_json_typed(
        &json!(s),
        &json!({"type": "string", "format": "duration"}),
    ) {
        Value::Duration(d) => Some(d.num_milliseconds()),
        _ => None,
    };
    assert_eq!(d("1h30m"), Some(5_400_000));
    assert_eq!(d("1.5s"), Some(1_500));
    assert_eq!(d("-300ms"), Some(-300));
    assert_eq!(d("0"), Some(0));
    assert_eq!(d("3 days"), Some(3 * 86_400_000));
    assert_eq!(d("1w2d"), Some(9 * 86_400_000));
    assert_eq!(d("soon"), None);
    assert_eq!(d("5 fortnights"), None);
    assert_eq!(d(""), None);
    let bytes =
        from_json_typed(&json!("not base64!"), &json!({"type": "string", "format": "byte"}));
    assert!(matches!(bytes, Value::Opaque(_)), "unreadable is an error value");
}

#[test]
fn type_errors_are_refused_as_cel_gos_checker_refuses_them() {
    let schema = json!({"type": "object", "properties": {
        "replicas": {"type": "integer"}, "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "since": {"type": "string", "format": "date-time"},
        "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "either": {"x-kubernetes-int-or-string": true}}});
    let own = check::Type::of_schema(&schema);
    let checked = |rule: &str| type_check(rule, &[("self", own.clone()), ("oldSelf", own.clone())]);
    for fine in [
        "self.replicas + 1 > 2 && self.name.startsWith('a')",
        "self.tags.all(t, t.size() < 10) && self.labels['app'] == 'web'",
        "self.since < timestamp('2030-01-01T00:00:00Z') && self.replicas < 2.5",
        "self.open.anything.goes == 1 && self.either == 'x' && has(self.name)",
        "self.metadata.name == 'x' && self.kind == 'Widget'",
        "self.tags.map(t, t + '!').exists(t, t == 'a!') && self.replicas == oldSelf.replicas",
        "quantity(self.name).isGreaterThan(quantity('1'))",
    ] {
        assert!(checked(fine).is_ok(), "{fine}: {:?}", checked(fine));
    }
    assert_eq!(
        checked("self.replicas + 'a' > 0").unwrap_err(),
        "ERROR: <input>:1:15: found no matching overload for '_+_' applied to '(int, string)'\n | self.replicas + 'a' > 0\n | ..............^"
    );
    assert_eq!(
        checked("self.nmae == 'x'").unwrap_err(),
        "ERROR: <input>:1:5: undefined field 'nmae'\n | self.nmae == 'x'\n | ....^"
    );
    assert!(checked("self.tags.exists(t, t > 1)")
        .unwrap_err()
        .contains("found no matching overload for '_>_' applied to '(string, int)'"));
    assert!(checked("self.name && true")
        .unwrap_err()
        .contains("found no matching overload for '_&&_' applied to '(string, bool)'"));
    assert_eq!(checked("self.replicas + 1"), Ok(check::Type::Int));

    // In a definition: upstream's field errors.
    let crd_schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"size": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.size == 'big'"}, {"rule": "self.size + 1"},
                                     {"rule": "self.color == 'red'"}, {"rule": "self.size > 1"},
                                     {"rule": "self.size > 2", "messageExpression": "'size ' + self.size"},
                                     {"rule": "self.size > 3", "messageExpression": "self.size"},
                                     {"rule": "self.size > 4", "messageExpression": "'size ' + string(self.size)"}]}}});
    use rkube_apis::validation::rules::RuleEngine;
    let problems = crd::Engine.check(&crd_schema, "spec.validation.openAPIV3Schema");
    let details: Vec<String> = problems
        .iter()
        .map(|p| match p {
            rkube_apis::validation::rules::RuleProblem::Invalid { field, detail, .. } => {
                format!("{field}: {}", detail.lines().next().unwrap_or(""))
            }
            other => format!("{other:?}"),
        })
        .collect();
    let at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(
        details,
        [
            format!("{at}[0].rule: compilation failed: ERROR: <input>:1:11: found no matching overload for '_==_' applied to '(int, string)'"),
            format!("{at}[1].rule: cel expression must evaluate to a bool"),
            format!("{at}[2].rule: compilation failed: ERROR: <input>:1:5: undefined field 'color'"),
            format!("{at}[4].messageExpression: messageExpression compilation failed: ERROR: <input>:1:9: found no matching overload for '_+_' applied to '(string, int)'"),
            format!("{at}[5].messageExpression: messageExpression must evaluate to a string"),
        ]
    );
}

#[test]
fn calls_are_checked_against_the_functions_signatures() {
    let schema = json!({"type": "object", "properties": {
        "replicas": {"type": "integer"}, "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "counts": {"type": "array", "items": {"type": "integer"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "since": {"type": "string", "format": "date-time"},
        "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "either": {"x-kubernetes-int-or-string": true}}});
    let own = check::Type::of_schema(&schema);
    let checked = |rule: &str| type_check(rule, &[("self", own.clone()), ("oldSelf", own.clone())]);
    for fine in [
        "self.name.startsWith('a') && self.name.endsWith('b') && self.name.contains('c')",
        "self.name.matches('^a') && matches(self.name, 'b') && size(self.tags) == self.tags.size()",
        "int(self.name) + self.replicas > 0 && string(self.replicas) == '3' && double(self.replicas) > 1.5",
        "self.since.getFullYear() > 2000 && duration('1h').getMinutes() == 60 && timestamp(self.replicas) > self.since",
        "self.tags.map(t, t.size()).sum() > 3 && self.tags.filter(t, t != '').all(t, t.lowerAscii() == t)",
        "self.labels.exists(k, k.startsWith('x')) && self.tags.exists_one(t, t == 'a')",
        "self.counts.min() < 3 && self.tags.isSorted() && self.counts.indexOf(2) >= 0",
        "url(self.name).getHost() == 'a' && url(self.name).getQuery()['x'][0] == 'y'",
        "quantity(self.name).add(1).isGreaterThan(quantity('1')) && quantity('1').compareTo(quantity('2')) < 0",
        "cidr(self.name).containsIP(ip('10.0.0.1')) && cidr('10.0.0.0/8').containsIP(self.name) && ip(self.name).family() == 4",
        "ip.isCanonical(self.name) && sets.contains(self.tags, ['a']) && base64.encode(b'a') == 'YQ=='",
        "self.name.split(',').join('-') == self.name && self.name.find('[0-9]+').size() > 0",
        "self.open.whatever.startsWith('a') && self.either.size() > 0 && dyn(self.replicas) == 'x'",
        "self.tags.all(t, self.open.x.contains(t)) && [self.open.a, 1].size() == 2",
        "'%s'.format([self.name]) != '' && strings.quote(self.name) != ''",
        "type(self.replicas) == int && self.?name.orValue('') == ''",
        "[1, 2] + [] == [] && {}.size() == 0 && ([] + [self.name])[0].startsWith('a')",
        "self.replicas in [1, 2] && 'a' in self.labels && (self.replicas > 1 ? 'a' : 'b').size() > 0",
    ] {
        assert!(checked(fine).is_ok(), "{fine}: {:?}", checked(fine));
    }
    let first_line = |rule: &str| checked(rule).unwrap_err().lines().next().unwrap().to_string();
    assert_eq!(
        checked("self.name.startsWith(1)").unwrap_err(),
        "ERROR: <input>:1:21: found no matching overload for 'startsWith' applied to 'string.(int)'\n | self.name.startsWith(1)\n | ....................^"
    );
    assert_eq!(
        first_line("size(self.replicas) > 0"),
        "ERROR: <input>:1:5: found no matching overload for 'size' applied to '(int)'"
    );
    assert_eq!(
        first_line("self.name.size() + 'x' == 'y'"),
        "ERROR: <input>:1:18: found no matching overload for '_+_' applied to '(int, string)'"
    );
    assert_eq!(
        first_line("self.name.frobnicate()"),
        "ERROR: <input>:1:21: undeclared reference to 'frobnicate' (in container '')"
    );
    assert_eq!(
        first_line("frob(self.name)"),
        "ERROR: <input>:1:5: undeclared reference to 'frob' (in container '')"
    );
    assert!(first_line("self.tags.map(t, t.size()).exists(n, n.startsWith('a'))")
        .ends_with("found no matching overload for 'startsWith' applied to 'int.(string)'"));
    assert!(first_line("self.counts.filter(c, c > 1)[0] == 'a'")
        .ends_with("found no matching overload for '_==_' applied to '(int, string)'"));
    assert!(first_line("quantity(self.name).isLessThan(1)").ends_with(
        "found no matching overload for 'isLessThan' applied to 'kubernetes.Quantity.(int)'"
    ));
    assert!(first_line("self.counts.indexOf('a') > 0")
        .ends_with("found no matching overload for 'indexOf' applied to 'list(int).(string)'"));
    assert!(first_line("self.since.getHours() + self.name == 1")
        .ends_with("found no matching overload for '_+_' applied to '(int, string)'"));
    assert!(first_line("self.replicas.all(x, x > 1)").ends_with(
        "expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)"
    ));
    assert!(first_line("self.replicas.value == 1")
        .ends_with("type 'int' does not support field selection"));
    assert!(first_line("'a' in self.counts")
        .ends_with("found no matching overload for '@in' applied to '(string, list(int))'"));
    assert!(first_line("self.tags['a'] == 'b'")
        .ends_with("found no matching overload for '_[_]' applied to '(list(string), string)'"));
    assert!(first_line("(self.replicas > 1 ? 1 : 'a') == 1")
        .ends_with("found no matching overload for '_?_:_' applied to '(bool, int, string)'"));
    assert_eq!(checked("self.name.size()"), Ok(check::Type::Int));
    // Every problem, in the order of their positions, as cel-go lists them; what a problem
    // makes refuses nothing further out.
    assert_eq!(
        checked("self.replicas + 'a' > 0 || self.nmae.size() > 0").unwrap_err(),
        "ERROR: <input>:1:15: found no matching overload for '_+_' applied to '(int, string)'\n | self.replicas + 'a' > 0 || self.nmae.size() > 0\n | ..............^\nERROR: <input>:1:32: undefined field 'nmae'\n | self.replicas + 'a' > 0 || self.nmae.size() > 0\n | ...............................^"
    );
    assert_eq!(
        checked("self.tags.map(t, t.size())"),
        Ok(check::Type::List(Box::new(check::Type::Int)))
    );
}

#[test]
fn aggregate_literals_are_homogeneous() {
    let checked = |rule: &str| type_check(rule, &[("self", check::Type::Dyn)]);
    assert_eq!(
        checked("[1, 'a'].size() > 0").unwrap_err(),
        "ERROR: <input>:1:5: expected type 'int' but found 'string'\n | [1, 'a'].size() > 0\n | ....^"
    );
    assert!(checked("{'a': 1, 'b': 'x'}.size() > 0")
        .unwrap_err()
        .contains("expected type 'int' but found 'string'"));
    assert!(checked("{'a': 1, 2: 1}.size() > 0")
        .unwrap_err()
        .contains("expected type 'string' but found 'int'"));
    assert!(checked("[[1], ['a']].size() > 0")
        .unwrap_err()
        .contains("expected type 'list(int)' but found 'list(string)'"));
    for fine in ["[1, self.x, 2].size() > 0", "[[], [1]].size() > 0", "[null, 'a'].size() > 0"] {
        assert!(checked(fine).is_ok(), "{fine}: {:?}", checked(fine));
    }
}

#[test]
fn values_take_the_types_the_checker_gives_their_schema() {
    use crate::convert::{from_json_typed, unreadable_in};
    let number = json!({"type": "number"});
    assert_eq!(from_json_typed(&json!(2), &number), Value::Float(2.0));
    assert_eq!(from_json_typed(&json!(2.5), &number), Value::Float(2.5));
    assert_eq!(from_json_typed(&json!(3.0), &json!({"type": "integer"})), Value::Int(3));
    let either = json!({"x-kubernetes-int-or-string": true});
    assert_eq!(from_json_typed(&json!(3), &either), Value::Int(3));
    assert!(matches!(from_json_typed(&json!("3"), &either), Value::String(_)));

    let schema = json!({"type": "object", "properties": {
        "d": {"type": "string", "format": "duration"},
        "t": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "b": {"type": "string", "format": "byte"},
        "email": {"type": "string", "format": "email"}}});
    let typed = from_json_typed(
        &json!({"d": "soon", "t": "yesterday", "day": "2024-13-01", "b": "not base64!", "email": "x"}),
        &schema,
    );
    assert_eq!(
        unreadable_in(&typed),
        vec![
            ("b".to_string(), "Invalid byte formatted string not base64!: illegal base64 data at input byte 3".to_string()),
            ("d".to_string(), "Invalid duration soon: unable to parse soon as duration".to_string()),
            ("day".to_string(), "Invalid date formatted string 2024-13-01: parsing time \"2024-13-01\": month out of range".to_string()),
            ("t".to_string(), "Invalid date-time formatted string yesterday: parsing time \"yesterday\" as \"2006-01-02\": cannot parse \"yesterday\" as \"2006\"".to_string()),
        ]
    );
    let day = |s: &str| from_json_typed(&json!(s), &json!({"type": "string", "format": "date"}));
    assert!(matches!(day("2024-02-29"), Value::Timestamp(_)));
    let messages = |s: &str| unreadable_in(&day(s)).into_iter().map(|(_, m)| m).collect::<Vec<_>>();
    assert_eq!(
        messages("2023-02-29"),
        ["Invalid date formatted string 2023-02-29: parsing time \"2023-02-29\": day out of range"]
    );
    assert_eq!(messages("2023/02/01"), ["Invalid date formatted string 2023/02/01: parsing time \"2023/02/01\" as \"2006-01-02\": cannot parse \"/02/01\" as \"-\""]);
    assert_eq!(messages("2023-02-01x"), ["Invalid date formatted string 2023-02-01x: parsing time \"2023-02-01x\": extra text: \"x\""]);
    let date_time = json!({"type": "string", "format": "date-time"});
    for fine in [
        "2024-01-02T03:04:05Z",
        "2024-01-02T03:04:05",
        "2024-01-02 03:04:05",
        "2024-01-02T03:04Z",
        "2024-01-02",
    ] {
        assert!(matches!(from_json_typed(&json!(fine), &date_time), Value::Timestamp(_)), "{fine}");
    }
}

#[test]
fn a_rule_using_an_unreadable_value_fails_with_its_error() {
    let schema = json!({"type": "object", "properties": {
        "since": {"type": "string", "format": "date-time"}, "name": {"type": "string"}},
        "x-kubernetes-validations": [
            {"rule": "self.since < timestamp('2030-01-01T00:00:00Z')"},
            {"rule": "self.name.startsWith('a')"}]});
    let rules = crd::Rules::compile(&schema).unwrap();
    let errors: Vec<String> = rules
        .validate(&json!({"since": "yesterday", "name": "abc"}), None)
        .iter()
        .map(|e| e.line())
        .collect();
    assert_eq!(
        errors,
        ["<nil>: Invalid value: \"object\": Invalid date-time formatted string yesterday: parsing time \"yesterday\" as \"2006-01-02\": cannot parse \"yesterday\" as \"2006\" evaluating rule: self.since < timestamp('2030-01-01T00:00:00Z')"]
    );
}

#[test]
fn properties_are_reached_by_their_escaped_names() {
    let schema = json!({"type": "object", "properties": {
        "namespace": {"type": "string"}, "x-y": {"type": "integer"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}},
        "x-kubernetes-validations": [
            {"rule": "has(self.__namespace__) && self.__namespace__ != 'kube-system'"},
            {"rule": "self.x__dash__y > 0"},
            {"rule": "!('app.kubernetes.io/name' in self.labels) || self.labels['app.kubernetes.io/name'] != ''"}]});
    use rkube_apis::validation::rules::RuleEngine;
    assert_eq!(crd::Engine.check(&schema, "s"), vec![]);
    let rules = crd::Rules::compile(&schema).unwrap();
    let lines = |obj: serde_json::Value| -> Vec<String> {
        rules.validate(&obj, None).iter().map(|e| e.line()).collect()
    };
    let fine = json!({"namespace": "a", "x-y": 1, "labels": {"app.kubernetes.io/name": "x"}});
    assert_eq!(lines(fine), Vec::<String>::new());
    let bad =
        json!({"namespace": "kube-system", "x-y": 0, "labels": {"app.kubernetes.io/name": ""}});
    let got = lines(bad);
    assert_eq!(got.len(), 3, "{got:?}");
    let own = check::Type::of_schema(&schema);
    assert!(type_check("self.namespaec == 'x'", &[("self", own)])
        .unwrap_err()
        .contains("undefined field 'namespaec'"));
}

#[test]
fn the_format_library() {
    let eval = |src: &str| {
        compile(src, &["self"])
            .unwrap()
            .evaluate(Activation::new().json("self", &json!("x")), PER_CALL_LIMIT)
            .map(|(v, _)| v)
    };
    assert_eq!(
        eval("format.dns1123Label().validate('my-name') == optional.none()"),
        Ok(Value::Bool(true))
    );
    assert_eq!(
        eval("format.dns1123Label().validate('My_Name').value()[0]"),
        Ok(Value::String(Arc::new("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".into())))
    );
    assert_eq!(
        eval("format.named('dns1035Label').value().validate('1abc').hasValue()"),
        Ok(Value::Bool(true))
    );
    assert_eq!(eval("format.named('nope').hasValue()"), Ok(Value::Bool(false)));
    assert_eq!(
        eval("format.dns1123LabelPrefix().validate('my-prefix-').hasValue()"),
        Ok(Value::Bool(false))
    );
    assert_eq!(
        eval("format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()"),
        Ok(Value::Bool(false))
    );
    assert_eq!(
        eval("format.uuid().validate('nope').value()"),
        Ok(Value::List(Arc::new(vec![Value::String(Arc::new(
            "does not match the UUID format".into()
        ))])))
    );
    assert_eq!(
        eval("format.uri().validate('not a uri').value()[0]"),
        Ok(Value::String(Arc::new("parse \"not a uri\": invalid URI for request".into())))
    );
    assert_eq!(eval("format.date().validate('2021-01-01').hasValue() || format.byte().validate('aGVsbG8=').hasValue()"), Ok(Value::Bool(false)));
    // The checker knows them.
    let checked = |rule: &str| type_check(rule, &[("self", check::Type::String)]);
    assert!(checked("size(self) == 0 || format.dns1123Label().validate(self) == optional.none()")
        .is_ok());
    assert!(checked("format.dns1123Label().validate(1) == optional.none()").unwrap_err().contains(
        "found no matching overload for 'validate' applied to 'kubernetes.NamedFormat.(int)'"
    ));
    assert!(checked("format.dns1124Label().validate(self) == optional.none()")
        .unwrap_err()
        .contains("undeclared reference to 'dns1124Label'"));
}
