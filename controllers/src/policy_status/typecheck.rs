//! The type checking of a policy's expressions, as upstream's `TypeChecker`: each
//! validation's `expression` and `messageExpression` is checked with `object` and
//! `oldObject` of the schema of each kind the policy matches (and `params` of its
//! `paramKind`'s schema, when that is known); what the checker refuses becomes an
//! `expressionWarning` naming the field and, per kind, the problem in cel-go's words
//! (`apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload ...`).
//! `variables` has the fields the policy's `variables` declare, each of the type its
//! expression checks to (in order: a variable sees those before it); `request` and
//! `namespaceObject` have upstream's hand-made types ([`request_schema`],
//! [`namespace_schema`]); `authorizer` is `dyn` here (upstream types it), so fewer problems
//! are found through it, never more.

use rkube_cel::check::Type;
use serde_json::{json, Map, Value};

/// A kind the policy matches, with its schema (OpenAPI v3, references resolved).
#[derive(Debug, Clone)]
pub struct Target {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub schema: Value,
}

impl Target {
    /// The kind as Go's `schema.GroupVersionKind` prints it.
    fn shown(&self) -> String {
        format!("{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// The `status.typeChecking.expressionWarnings` of `policy` against `targets` (in order),
/// with `params` the schema of its `paramKind` when known.
pub fn expression_warnings(
    policy: &Value,
    targets: &[Target],
    params: Option<&Value>,
) -> Vec<Value> {
    let mut warnings = Vec::new();
    let validations = policy["spec"]["validations"].as_array().into_iter().flatten();
    for (i, validation) in validations.enumerate() {
        for key in ["expression", "messageExpression"] {
            let Some(expression) = validation[key].as_str().filter(|e| !e.is_empty()) else {
                continue;
            };
            let text = check(policy, expression, targets, params);
            if !text.is_empty() {
                warnings.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{key}"),
                    "warning": text,
                }));
            }
        }
    }
    warnings
}

/// Each kind's problem with `expression`, as upstream joins them: `<kind>: <problem>\n`,
/// one a line.
fn check(policy: &Value, expression: &str, targets: &[Target], params: Option<&Value>) -> String {
    let params = params.map_or(Type::Dyn, Type::of_schema);
    let mut problems = Vec::new();
    for target in targets {
        let object = Type::of_schema(&target.schema);
        let composite = composite_variables(policy, &object, &params);
        let variables = declared(&object, &params, Type::of_schema(&composite));
        if let Err(problem) = rkube_cel::type_check(expression, &variables) {
            problems.push(format!("{}: {problem}\n", target.shown()));
        }
    }
    problems.join("\n")
}

/// The type of `request`, as upstream builds it (`BuildRequestType`): the admission request
/// without `uid`, `object` and `oldObject`.
pub fn request_schema() -> &'static Value {
    static SCHEMA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
        let string = json!({"type": "string"});
        let strings = json!({"type": "array", "items": string});
        let object = |fields: &[(&str, &Value)]| {
            let properties: Map<String, Value> =
                fields.iter().map(|(k, v)| (k.to_string(), (*v).clone())).collect();
            json!({"type": "object", "properties": properties})
        };
        let gvk = object(&[("group", &string), ("version", &string), ("kind", &string)]);
        let gvr = object(&[("group", &string), ("version", &string), ("resource", &string)]);
        let extra = json!({"type": "object", "additionalProperties": strings});
        let user = object(&[
            ("username", &string),
            ("uid", &string),
            ("groups", &strings),
            ("extra", &extra),
        ]);
        object(&[
            ("kind", &gvk),
            ("resource", &gvr),
            ("subResource", &string),
            ("requestKind", &gvk),
            ("requestResource", &gvr),
            ("requestSubResource", &string),
            ("name", &string),
            ("namespace", &string),
            ("operation", &string),
            ("userInfo", &user),
            ("dryRun", &json!({"type": "boolean"})),
            ("options", &json!({})),
        ])
    });
    &SCHEMA
}

/// The type of `namespaceObject`, as upstream builds it (`BuildNamespaceType`): some of a
/// Namespace's metadata, its spec and status.
pub fn namespace_schema() -> &'static Value {
    static SCHEMA: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
        let string = json!({"type": "string"});
        let strings = json!({"type": "array", "items": string});
        let time = json!({"type": "string", "format": "date-time"});
        let labels = json!({"type": "object", "additionalProperties": string});
        let integer = json!({"type": "integer"});
        json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {
                "name": string, "generateName": string, "namespace": string, "labels": labels,
                "annotations": labels, "UID": string, "creationTimestamp": time,
                "deletionGracePeriodSeconds": integer, "deletionTimestamp": time,
                "generation": integer, "resourceVersion": string, "finalizers": strings}},
            "spec": {"type": "object", "properties": {"finalizers": strings}},
            "status": {"type": "object", "properties": {
                "conditions": {"type": "array", "items": {"type": "object", "properties": {
                    "status": string, "type": string, "lastTransitionTime": time,
                    "message": string, "reason": string}}},
                "phase": string}},
        }})
    });
    &SCHEMA
}

/// The variables an expression of the policy reads, with their types.
fn declared<'a>(
    object: &Type<'a>,
    params: &Type<'a>,
    variables: Type<'a>,
) -> [(&'static str, Type<'a>); 7] {
    [
        ("object", object.clone()),
        ("oldObject", object.clone()),
        ("params", params.clone()),
        ("request", Type::of_schema(request_schema())),
        ("namespaceObject", Type::of_schema(namespace_schema())),
        ("authorizer", Type::Dyn),
        ("variables", variables),
    ]
}

/// The schema of `variables`: an object with a field per declared variable, of the type its
/// expression checks to (`dyn` when it does not check).
fn composite_variables(policy: &Value, object: &Type<'_>, params: &Type<'_>) -> Value {
    let mut fields = Map::new();
    for variable in policy["spec"]["variables"].as_array().into_iter().flatten() {
        let (Some(name), Some(expression)) =
            (variable["name"].as_str(), variable["expression"].as_str())
        else {
            continue;
        };
        let so_far = json!({"type": "object", "properties": fields.clone()});
        let declared = declared(object, params, Type::of_schema(&so_far));
        let schema = match rkube_cel::type_check(expression, &declared) {
            Ok(t) => t.to_schema(),
            Err(_) => json!({}),
        };
        fields.insert(name.to_string(), schema);
    }
    json!({"type": "object", "properties": fields})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment() -> Target {
        Target {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            schema: json!({"type": "object", "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
                "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}),
        }
    }

    #[test]
    fn warnings_name_the_field_and_the_kind() {
        let policy = json!({"spec": {"validations": [
            {"expression": "object.spec.replicas < 5"},
            {"expression": "object.spec.replicas > \"x\"",
             "messageExpression": "'too many: ' + object.spec.replicas"},
            {"expression": "object.spec.replicsa > 1", "messageExpression": "params.foo + 'x'"},
        ]}});
        let pod = Target {
            group: String::new(),
            version: "v1".into(),
            kind: "Pod".into(),
            schema: json!({"type": "object", "properties": {"spec": {"type": "object",
                "properties": {"replicas": {"type": "string"}}}}}),
        };
        let warnings = expression_warnings(&policy, &[deployment(), pod], None);
        assert_eq!(
            warnings,
            vec![
                json!({"fieldRef": "spec.validations[0].expression",
                       "warning": "/v1, Kind=Pod: ERROR: <input>:1:22: found no matching overload for '_<_' applied to '(string, int)'\n | object.spec.replicas < 5\n | .....................^\n"}),
                json!({"fieldRef": "spec.validations[1].expression",
                       "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n | object.spec.replicas > \"x\"\n | .....................^\n"}),
                json!({"fieldRef": "spec.validations[1].messageExpression",
                       "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:14: found no matching overload for '_+_' applied to '(string, int)'\n | 'too many: ' + object.spec.replicas\n | .............^\n"}),
                json!({"fieldRef": "spec.validations[2].expression",
                       "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicsa'\n | object.spec.replicsa > 1\n | ...........^\n\n/v1, Kind=Pod: ERROR: <input>:1:12: undefined field 'replicsa'\n | object.spec.replicsa > 1\n | ...........^\n"}),
            ]
        );
    }

    #[test]
    fn variables_have_the_types_of_their_expressions() {
        let policy = json!({"spec": {
        "variables": [
            {"name": "replicas", "expression": "object.spec.replicas"},
            {"name": "doubled", "expression": "variables.replicas * 2"},
            {"name": "names", "expression": "[object.metadata.name]"},
        ],
        "validations": [
            {"expression": "variables.doubled < 10 && variables.names.all(n, n.size() < 5)"},
            {"expression": "variables.doubled == 'x'"},
            {"expression": "variables.names[0] + 1 == 2"},
            {"expression": "variables.replica > 1"},
        ]}});
        let warnings = expression_warnings(&policy, &[deployment()], None);
        let lines: Vec<(&str, &str)> = warnings
            .iter()
            .map(|w| {
                let text = w["warning"].as_str().unwrap();
                (w["fieldRef"].as_str().unwrap(), text.lines().next().unwrap())
            })
            .collect();
        assert_eq!(
            lines,
            [
                ("spec.validations[1].expression", "apps/v1, Kind=Deployment: ERROR: <input>:1:19: found no matching overload for '_==_' applied to '(int, string)'"),
                ("spec.validations[2].expression", "apps/v1, Kind=Deployment: ERROR: <input>:1:20: found no matching overload for '_+_' applied to '(string, int)'"),
                ("spec.validations[3].expression", "apps/v1, Kind=Deployment: ERROR: <input>:1:10: undefined field 'replica'"),
            ]
        );
    }

    #[test]
    fn request_and_namespace_have_upstreams_types() {
        let policy = json!({"spec": {"validations": [
            {"expression": "request.operation == 'CREATE' && request.userInfo.groups.exists(g, g == 'x') && request.kind.kind == 'Deployment'"},
            {"expression": "namespaceObject.metadata.labels['env'] == 'prod' && namespaceObject.status.phase == 'Active'"},
            {"expression": "request.operation == 1"},
            {"expression": "request.userinfo.username == 'x'"},
            {"expression": "namespaceObject.metadata.creationTimestamp > 5"},
        ]}});
        let warnings = expression_warnings(&policy, &[deployment()], None);
        let lines: Vec<String> = warnings
            .iter()
            .map(|w| {
                let first = w["warning"].as_str().unwrap().lines().next().unwrap();
                format!("{}: {first}", w["fieldRef"].as_str().unwrap())
            })
            .collect();
        assert_eq!(
            lines,
            [
                "spec.validations[2].expression: apps/v1, Kind=Deployment: ERROR: <input>:1:19: found no matching overload for '_==_' applied to '(string, int)'",
                "spec.validations[3].expression: apps/v1, Kind=Deployment: ERROR: <input>:1:8: undefined field 'userinfo'",
                "spec.validations[4].expression: apps/v1, Kind=Deployment: ERROR: <input>:1:44: found no matching overload for '_>_' applied to '(google.protobuf.Timestamp, int)'",
            ]
        );
    }

    #[test]
    fn no_kinds_or_no_problems_no_warnings() {
        let policy =
            json!({"spec": {"validations": [{"expression": "object.spec.replicas > 'x'"}]}});
        assert!(expression_warnings(&policy, &[], None).is_empty());
        let fine = json!({"spec": {"validations": [{"expression": "object.spec.replicas > 1",
            "messageExpression": "'n: ' + string(object.spec.replicas)"}]}});
        assert!(expression_warnings(&fine, &[deployment()], None).is_empty());
        let params = json!({"type": "object", "properties": {"max": {"type": "integer"}}});
        let with_params = json!({"spec": {"validations": [{"expression": "object.spec.replicas <= params.max"}]}});
        assert!(expression_warnings(&with_params, &[deployment()], Some(&params)).is_empty());
        let wrong_params =
            json!({"spec": {"validations": [{"expression": "object.spec.replicas <= params.mx"}]}});
        assert_eq!(expression_warnings(&wrong_params, &[deployment()], Some(&params)).len(), 1);
    }
}
