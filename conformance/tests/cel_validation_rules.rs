//! CustomResourceDefinition validation rules (`x-kubernetes-validations`, CEL) as stock
//! kubectl meets them: rules that do not compile, or whose estimated cost is over the
//! limit, refuse the definition with upstream's field paths; custom objects that break a
//! rule are refused on create and update with the rule's message, `messageExpression`,
//! `reason` and `fieldPath`; transition rules (`oldSelf`) run on updates only.

use std::time::Duration;

use rkube_conformance::cluster::{stdout_of, RkubeServer};

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - rule: "self.metadata.name.startsWith('g')"
          message: "the name must start with g"
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.minReplicas <= self.replicas"
              message: "replicas must be at least minReplicas"
            - rule: "self.replicas <= 10"
              messageExpression: "'at most 10 replicas, not ' + string(self.replicas)"
            - rule: "!has(self.memory) || quantity(self.memory).isLessThan(quantity('2Gi'))"
              message: "memory must be under 2Gi"
              reason: FieldValueForbidden
              fieldPath: ".memory"
            properties:
              replicas: {type: integer}
              minReplicas: {type: integer}
              memory: {type: string}
              mode:
                type: string
                x-kubernetes-validations:
                - rule: "self == oldSelf"
                  message: "mode is immutable"
              ports:
                type: array
                maxItems: 8
                items:
                  type: object
                  x-kubernetes-validations:
                  - rule: "self.port > 0 && self.port < 65536"
                    message: "port out of range"
                  properties:
                    port: {type: integer}
"#;

fn gadget(name: &str, spec: &str) -> String {
    format!("apiVersion: example.com/v1\nkind: Gadget\nmetadata: {{name: {name}}}\nspec: {spec}\n")
}

#[test]
fn custom_objects_are_checked_by_the_definitions_rules() {
    let s = RkubeServer::start();
    s.define_crd(CRD, "gadgets.example.com");

    s.ok_stdin(
        &["create", "-f", "-"],
        &gadget(
            "g1",
            "{replicas: 3, minReplicas: 1, memory: 1Gi, mode: fast, ports: [{port: 80}]}",
        ),
    );

    // A rule on the root sees the object's name; its error has no field path.
    let refused =
        s.fails_stdin(&["create", "-f", "-"], &gadget("x1", "{replicas: 1, minReplicas: 1}"));
    assert!(
        refused.contains(r#"The Gadget "x1" is invalid: <nil>: Invalid value: "object": the name must start with g"#),
        "{refused}"
    );

    // Several broken rules: each error, with its message, messageExpression, reason and
    // fieldPath, in the order of the schema.
    let refused = s.fails_stdin(
        &["create", "-f", "-"],
        &gadget(
            "g2",
            "{replicas: 12, minReplicas: 20, memory: 3Gi, ports: [{port: 80}, {port: 70000}]}",
        ),
    );
    for line in [
        r#"The Gadget "g2" is invalid: "#,
        r#"spec: Invalid value: "object": replicas must be at least minReplicas"#,
        r#"spec: Invalid value: "object": at most 10 replicas, not 12"#,
        r#"spec.memory: Forbidden: memory must be under 2Gi"#,
        r#"spec.ports[1]: Invalid value: "object": port out of range"#,
    ] {
        assert!(refused.contains(line), "no {line:?} in:\n{refused}");
    }
    assert!(!refused.contains("ports[0]"), "{refused}");

    // A transition rule runs on updates, against the stored value.
    s.ok(&["patch", "gadget", "g1", "--type", "merge", "-p", r#"{"spec":{"replicas":4}}"#]);
    let refused =
        s.fails(&["patch", "gadget", "g1", "--type", "merge", "-p", r#"{"spec":{"mode":"slow"}}"#]);
    assert!(
        refused.contains(
            r#"The Gadget "g1" is invalid: spec.mode: Invalid value: "string": mode is immutable"#
        ),
        "{refused}"
    );
    // A rule that fails to evaluate says why.
    let refused = s.fails_stdin(&["create", "-f", "-"], &gadget("g3", "{replicas: 1}"));
    assert!(
        refused.contains(r#"spec: Invalid value: "object": no such key: minReplicas evaluating rule: replicas must be at least minReplicas"#),
        "{refused}"
    );
}

#[test]
fn definitions_with_rules_that_do_not_compile_or_cost_too_much_are_refused() {
    let s = RkubeServer::start();
    let bad = CRD
        .replace("gadgets.example.com", "bad.example.com")
        .replace(
            "plural: gadgets, singular: gadget, kind: Gadget",
            "plural: bad, singular: bad, kind: Bad",
        )
        .replace(r#""self.replicas <= 10""#, r#""self.replicas <=""#)
        .replace(r#""self == oldSelf""#, r#""self == other""#)
        .replace(r#""self.minReplicas <= self.replicas""#, r#""self.minReplicas <= self.memory""#)
        .replace(r#""self.port > 0 && self.port < 65536""#, r#""self.prot > 0""#)
        .replace("quantity('2Gi'))", "2)")
        .replace("' + string(self.replicas)", "' + self.replicas")
        .replace(r#""self.metadata.name.startsWith('g')""#, r#""['g', 1].exists(p, p == 'g')""#);
    let refused = s.fails_stdin(&["create", "-f", "-"], &bad);
    // Type errors, found by checking the rules against the schema as cel-go's checker does.
    assert!(
        refused.contains(r#"spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.minReplicas <= self.memory", Message:"replicas must be at least minReplicas", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:18: found no matching overload for '_<=_' applied to '(int, string)'"#),
        "{refused}"
    );
    assert!(
        refused.contains(r#"spec.validation.openAPIV3Schema.properties[spec].properties[ports].items.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.prot > 0", Message:"port out of range", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:5: undefined field 'prot'"#),
        "{refused}"
    );
    // Functions are checked against their signatures, and literals must be homogeneous.
    assert!(
        refused.contains(r#"spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[2].rule: Invalid value: apiextensions.ValidationRule{Rule:"!has(self.memory) || quantity(self.memory).isLessThan(2)", Message:"memory must be under 2Gi", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(0x"#),
        "{refused}"
    );
    assert!(
        refused.contains(r#"FieldPath:".memory", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:54: found no matching overload for 'isLessThan' applied to 'kubernetes.Quantity.(int)'"#),
        "{refused}"
    );
    assert!(
        refused.contains(r#"spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:"['g', 1].exists(p, p == 'g')", Message:"the name must start with g", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:7: expected type 'string' but found 'int'"#),
        "{refused}"
    );
    assert!(
        refused.contains(r#"The CustomResourceDefinition "bad.example.com" is invalid: "#),
        "{refused}"
    );
    assert!(
        refused.contains(r#"spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.replicas <=", Message:"", MessageExpression:"'at most 10 replicas, not ' + self.replicas", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:"#),
        "{refused}"
    );
    // A messageExpression is checked too, and must give a string.
    assert!(
        refused.contains(r#"spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].messageExpression: Invalid value: apiextensions.ValidationRule{Rule:"self.replicas <=", Message:"", MessageExpression:"'at most 10 replicas, not ' + self.replicas", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: messageExpression compilation failed: ERROR: <input>:1:29: found no matching overload for '_+_' applied to '(string, int)'"#),
        "{refused}"
    );
    assert!(
        refused.contains(r#"spec.validation.openAPIV3Schema.properties[spec].properties[mode].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:"self == other", Message:"mode is immutable", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:1: undeclared reference to 'other' (in container '')"#),
        "{refused}"
    );

    // A quadratic rule over a list without maxItems is estimated far over the limit; with
    // maxItems it is accepted.
    let costly = |max_items: &str| {
        format!(
            r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: tags.example.com}}
spec:
  group: example.com
  names: {{plural: tags, singular: tag, kind: Tag}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.names.all(a, self.names.exists_one(b, a == b))"
              message: "names must be unique"
            properties:
              names:
                type: array
                {max_items}
                items: {{type: string, maxLength: 16}}
"#
        )
    };
    let refused = s.fails_stdin(&["create", "-f", "-"], &costly(""));
    assert!(
        refused.contains("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule(s), or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"),
        "{refused}"
    );
    s.ok_stdin(&["create", "-f", "-"], &costly("maxItems: 32"));
    s.ok(&["wait", "--for=condition=Established", "--timeout=20s", "crd/tags.example.com"]);
    s.wait_until("tags in discovery", Duration::from_secs(20), || {
        let out = s.kubectl(&["api-resources", "--api-group=example.com", "--no-headers"]);
        let seen = stdout_of(&out);
        (seen.contains("tags"), seen)
    });
    let tag = |names: &str| {
        format!("apiVersion: example.com/v1\nkind: Tag\nmetadata: {{name: t}}\nspec: {{names: {names}}}\n")
    };
    let refused = s.fails_stdin(&["create", "-f", "-"], &tag("[a, b, a]"));
    assert!(
        refused.contains(r#"spec: Invalid value: "object": names must be unique"#),
        "{refused}"
    );
    s.ok_stdin(&["create", "-f", "-"], &tag("[a, b, c]"));
}

/// Strings of the `date-time`, `duration` and `byte` formats are timestamps, durations and
/// bytes to the rules, as apiextensions' CEL reads them.
const TIMERS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: timers.example.com
spec:
  group: example.com
  names: {plural: timers, singular: timer, kind: Timer}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.every >= duration('1m')"
              message: "every must be a minute or more"
            - rule: "self.start < timestamp('2100-01-01T00:00:00Z') && self.start.getFullYear() >= 2020"
              message: "start must be in this century"
            - rule: "self.key.size() == 4"
              messageExpression: "'the key must be 4 bytes, not ' + string(self.key.size())"
            properties:
              start: {type: string, format: date-time}
              every: {type: string, format: duration}
              key: {type: string, format: byte}
"#;

#[test]
fn formatted_strings_are_timestamps_durations_and_bytes_to_rules() {
    let s = RkubeServer::start();
    s.define_crd(TIMERS, "timers.example.com");
    let timer = |name: &str, spec: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: Timer\nmetadata: {{name: {name}}}\nspec: {spec}\n"
        )
    };
    // "AAECAw==" is 8 characters and 4 bytes.
    s.ok_stdin(
        &["create", "-f", "-"],
        &timer("t1", "{start: '2026-01-02T03:04:05Z', every: 1h30m, key: AAECAw==}"),
    );
    let refused = s.fails_stdin(
        &["create", "-f", "-"],
        &timer("t2", "{start: '2101-01-02T03:04:05+01:00', every: 30s, key: AAECAwQ=}"),
    );
    for line in [
        r#"spec: Invalid value: "object": every must be a minute or more"#,
        r#"spec: Invalid value: "object": start must be in this century"#,
        r#"spec: Invalid value: "object": the key must be 4 bytes, not 5"#,
    ] {
        assert!(refused.contains(line), "no {line:?} in:\n{refused}");
    }
    // A string its format cannot read is refused by the schema, and then, as upstream, the
    // rules are not run (inside them it would be an error value).
    let refused = s.fails_stdin(
        &["create", "-f", "-"],
        &timer("t3", "{start: '2026-01-02T03:04:05Z', every: soon, key: AAECAw==}"),
    );
    assert!(
        refused.contains(r#"spec.every: Invalid value: "soon": spec.every in body must be of type duration: "soon""#),
        "{refused}"
    );
    assert!(refused.contains("some validation rules were not checked"), "{refused}");
    assert!(!refused.contains("every must be a minute or more"), "{refused}");
}

#[test]
fn rules_reach_properties_by_their_escaped_names() {
    let s = RkubeServer::start();
    s.define_crd(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: refs.example.com}
spec:
  group: example.com
  names: {plural: refs, singular: ref, kind: Ref}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "!has(self.__namespace__) || self.__namespace__ != 'kube-system'"
              message: "no references into kube-system"
            - rule: "self.max__dash__count > 0"
              message: "max-count must be positive"
            properties:
              namespace: {type: string}
              max-count: {type: integer}
"#,
        "refs.example.com",
    );
    let object = |spec: &str| {
        format!("apiVersion: example.com/v1\nkind: Ref\nmetadata: {{name: r}}\nspec: {spec}\n")
    };
    let refused =
        s.fails_stdin(&["create", "-f", "-"], &object("{namespace: kube-system, max-count: 0}"));
    for line in [
        r#"spec: Invalid value: "object": no references into kube-system"#,
        r#"spec: Invalid value: "object": max-count must be positive"#,
    ] {
        assert!(refused.contains(line), "no {line:?} in:\n{refused}");
    }
    s.ok_stdin(&["create", "-f", "-"], &object("{namespace: default, max-count: 2}"));
}
