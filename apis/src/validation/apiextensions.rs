//! Validation of apiextensions.k8s.io/v1: CustomResourceDefinitions, with upstream's (v1.33)
//! messages and field paths (`ValidateCustomResourceDefinition[Update]` of
//! apiextensions-apiserver).
//!
//! Upstream validates a CRD in its internal form, which moves what every version shares to
//! the spec: when all `versions[*].schema` are equal (the usual single-version case), the
//! schema is checked as `spec.validation.openAPIV3Schema`, and likewise for `subresources`
//! and `additionalPrinterColumns`. [`Crd`] reproduces that view, so the paths read as
//! kube-apiserver's do. Internal field names show in a few paths too
//! (`spec.conversion.webhookClientConfig`, `...additionalPrinterColumns[0].JSONPath`).
//!
//! `x-kubernetes-validations` rules (CEL) are compiled and their costs estimated by the
//! engine the server installs (`super::rules`), reported after the schema's own errors.
//!
//! `selectableFields` are resolved against the schema they select from (the version's, or
//! the one all versions share) as upstream's `ValidateCustomResourceSelectableFields` does.
//!
//! `default` values are checked against their schema, pruning and rules (`super::crd_defaults`),
//! and `pattern`s compile as Go's regular expressions (`super::go_regexp`).
//!
//! Left out, as needing more than a static look at the object:
//! `x-kubernetes-validations[].fieldPath` resolution, the conversion
//! webhook's `caBundle` (PEM parsing; upstream skips it until the CRD is established) and the
//! final "error building validator" check. Upstream walks `properties` in Go's random map
//! order; rkube walks them sorted.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::rules::RuleProblem;
use super::values::{items, str_of, text, IMMUTABLE};
use super::webhook::{go_url, webhook_service, webhook_url};
use super::{crd_defaults, go_regexp};
use super::{name_problems, FieldError, NameRule};
use crate::gofmt::{go_pointer, go_quote, go_slice, go_string_slice, go_v};
use crate::structural::{Dependency, Items, Props, Rule};

const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";
/// `openapiV3Types`, sorted as `sets.List` gives them.
const OPENAPI_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const COLUMN_TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];
const COLUMN_FORMATS: [&str; 8] =
    ["byte", "date", "date-time", "double", "float", "int32", "int64", "password"];
const VALIDATION_REASONS: [&str; 4] =
    ["FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"];
/// The schema fields allowed at the root when the status subresource is on.
const ROOT_FIELDS_WITH_STATUS: [&str; 22] = [
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];

static NULL: Value = Value::Null;

fn dns1035(s: &str) -> Vec<String> {
    name_problems(s, NameRule::Dns1035Label)
}

fn subdomain(s: &str) -> Vec<String> {
    name_problems(s, NameRule::Subdomain)
}

/// `validateEnumStrings`: required (when asked) and one of `accepted`.
fn enum_strings(field: &str, value: &Value, accepted: &[&str], errors: &mut Vec<FieldError>) {
    let s = str_of(value);
    if s.is_empty() {
        errors.push(FieldError::required(field, ""));
    } else if !accepted.contains(&s) {
        errors.push(FieldError::unsupported(field, value, accepted));
    }
}

// ---------------------------------------------------------------------------------------
// CustomResourceDefinition

/// A CRD spec as upstream's internal type holds it: what all versions share moved to the spec.
struct Crd<'a> {
    spec: &'a Value,
    versions: Vec<Version<'a>>,
    /// `spec.validation` (a `{openAPIV3Schema}` wrapper), `Null` when per-version.
    validation: &'a Value,
    subresources: &'a Value,
    columns: &'a Value,
    selectable: &'a Value,
}

struct Version<'a> {
    raw: &'a Value,
    schema: &'a Value,
    subresources: &'a Value,
    columns: &'a Value,
    selectable: &'a Value,
}

/// Equality as `apiequality.Semantic.DeepEqual` sees decoded JSON: unset, `null` and an empty
/// list are alike.
fn same(a: &Value, b: &Value) -> bool {
    let unset = |v: &Value| v.is_null() || v.as_array().is_some_and(Vec::is_empty);
    match (a, b) {
        _ if unset(a) && unset(b) => true,
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().all(|k| same(&a[k.as_str()], &b[k.as_str()]))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        _ => a == b,
    }
}

impl<'a> Crd<'a> {
    /// The v1 → internal conversion: per-version fields that are equal in every version move
    /// to the spec.
    fn new(spec: &'a Value) -> Crd<'a> {
        let mut versions: Vec<Version<'a>> = items(&spec["versions"])
            .iter()
            .map(|v| Version {
                raw: v,
                schema: &v["schema"],
                subresources: &v["subresources"],
                columns: &v["additionalPrinterColumns"],
                selectable: &v["selectableFields"],
            })
            .collect();
        let mut crd = Crd {
            spec,
            versions: Vec::new(),
            validation: &NULL,
            subresources: &NULL,
            columns: &NULL,
            selectable: &NULL,
        };
        if let Some(first) = versions.first() {
            let (schema, subresources, columns, selectable) =
                (first.schema, first.subresources, first.columns, first.selectable);
            let all = |f: &dyn Fn(&Version<'a>) -> bool| versions.iter().all(f);
            let hoist_schema = all(&|v| same(v.schema, schema));
            let hoist_subresources = all(&|v| same(v.subresources, subresources));
            let hoist_columns = all(&|v| same(v.columns, columns));
            let hoist_selectable = all(&|v| same(v.selectable, selectable));
            for v in &mut versions {
                if hoist_schema {
                    v.schema = &NULL;
                }
                if hoist_subresources {
                    v.subresources = &NULL;
                }
                if hoist_columns {
                    v.columns = &NULL;
                }
                if hoist_selectable {
                    v.selectable = &NULL;
                }
            }
            if hoist_schema {
                crd.validation = schema;
            }
            if hoist_subresources {
                crd.subresources = subresources;
            }
            if hoist_columns {
                crd.columns = columns;
            }
            if hoist_selectable {
                crd.selectable = selectable;
            }
        }
        crd.versions = versions;
        crd
    }

    /// `getSubresourcesForVersion`.
    fn subresources_for(&self, v: &Version<'a>) -> &'a Value {
        if self.versions.iter().all(|v| v.subresources.is_null()) {
            self.subresources
        } else {
            v.subresources
        }
    }

    fn any_status_enabled(&self) -> bool {
        !self.subresources["status"].is_null()
            || self.versions.iter().any(|v| !v.subresources["status"].is_null())
    }

    /// `spec.versions` as `%#v` prints the internal slice.
    fn go_versions(&self) -> String {
        if self.spec["versions"].is_null() {
            return "[]apiextensions.CustomResourceDefinitionVersion(nil)".to_string();
        }
        let shown: Vec<String> = self.versions.iter().map(go_version).collect();
        format!("[]apiextensions.CustomResourceDefinitionVersion{{{}}}", shown.join(", "))
    }
}

fn go_bool(v: &Value) -> &'static str {
    if v == true {
        "true"
    } else {
        "false"
    }
}

fn go_version(v: &Version) -> String {
    let columns = go_slice("apiextensions.CustomResourceColumnDefinition", v.columns, |c| {
        format!(
            "apiextensions.CustomResourceColumnDefinition{{Name:{}, Type:{}, Format:{}, Description:{}, Priority:{}, JSONPath:{}}}",
            go_quote(str_of(&c["name"])),
            go_quote(str_of(&c["type"])),
            go_quote(str_of(&c["format"])),
            go_quote(str_of(&c["description"])),
            c["priority"].as_i64().unwrap_or(0),
            go_quote(str_of(&c["jsonPath"])),
        )
    });
    let selectable = go_slice("apiextensions.SelectableField", v.selectable, |f| {
        format!("apiextensions.SelectableField{{JSONPath:{}}}", go_quote(str_of(&f["jsonPath"])))
    });
    format!(
        "apiextensions.CustomResourceDefinitionVersion{{Name:{}, Served:{}, Storage:{}, Deprecated:{}, DeprecationWarning:{}, Schema:{}, Subresources:{}, AdditionalPrinterColumns:{}, SelectableFields:{}}}",
        go_quote(str_of(&v.raw["name"])),
        go_bool(&v.raw["served"]),
        go_bool(&v.raw["storage"]),
        go_bool(&v.raw["deprecated"]),
        go_pointer("string", &v.raw["deprecationWarning"]),
        go_pointer("apiextensions.CustomResourceValidation", v.schema),
        go_pointer("apiextensions.CustomResourceSubresources", v.subresources),
        columns,
        selectable,
    )
}

/// What upstream relaxes on update for objects stored under older rules
/// (`validationOptions`); all strict on create.
#[derive(Clone, Copy)]
struct Opts {
    require_recognized_review_version: bool,
    require_openapi_schema: bool,
    require_valid_property_type: bool,
    require_structural: bool,
    require_atomic_set_type: bool,
    require_map_list_keys: bool,
    require_pruned_defaults: bool,
}

impl Opts {
    fn new(old: Option<&Value>) -> Opts {
        let Some(old) = old else {
            return Opts {
                require_recognized_review_version: true,
                require_openapi_schema: true,
                require_valid_property_type: true,
                require_structural: true,
                require_atomic_set_type: true,
                require_map_list_keys: true,
                require_pruned_defaults: true,
            };
        };
        let spec = &old["spec"];
        let schemas = version_schemas(spec);
        let any = |pred: &dyn Fn(&Props) -> bool| schemas.iter().any(|s| schema_has(s, pred));
        let review_versions = items(&spec["conversion"]["webhook"]["conversionReviewVersions"]);
        Opts {
            require_recognized_review_version: spec["conversion"].is_null()
                || review_versions.is_empty()
                || review_versions.iter().any(|v| is_accepted_review_version(str_of(v))),
            require_openapi_schema: items(&spec["versions"])
                .iter()
                .all(|v| !v["schema"]["openAPIV3Schema"].is_null()),
            require_valid_property_type: !any(&|s| {
                !s.type_.is_empty() && !OPENAPI_TYPES.contains(&s.type_.as_str())
            }),
            require_structural: !schemas
                .iter()
                .any(|s| structural_error(s).is_err() || !validate_structural(s, "").is_empty()),
            require_atomic_set_type: !any(&has_non_atomic_set_type),
            require_map_list_keys: !any(&|s| !map_list_keys_map_set(s, "").is_empty()),
            require_pruned_defaults: !items(&spec["versions"])
                .iter()
                .any(|v| crd_defaults::has_unpruned_default(&v["schema"]["openAPIV3Schema"])),
        }
    }
}

/// Every version's `schema.openAPIV3Schema`, parsed.
fn version_schemas(spec: &Value) -> Vec<Props> {
    items(&spec["versions"])
        .iter()
        .map(|v| &v["schema"]["openAPIV3Schema"])
        .filter(|s| !s.is_null())
        .map(Props::parse)
        .collect()
}

/// A CustomResourceDefinition, on create (`old` is `None`) or update.
pub fn custom_resource_definition(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let crd = Crd::new(spec);
    let mut errors = Vec::new();
    if old.is_none() {
        errors.extend(crd_name(obj));
    }
    errors.extend(crd_spec(&crd, Opts::new(old)));
    if let Some(old) = old {
        errors.extend(crd_spec_update(spec, &old["spec"], is_established(old)));
    }
    errors.extend(crd_names(&obj["status"]["acceptedNames"], "status.acceptedNames"));
    errors.extend(stored_versions(obj));
    errors.extend(api_approval(obj, old));
    if old.is_none_or(|old| old["spec"]["preserveUnknownFields"] != true)
        && spec["preserveUnknownFields"] == true
    {
        errors.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            &Value::Bool(true),
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errors
}

/// The name (and a generateName) must be `<plural>.<group>`; only checked on create, as the
/// name, group and plural cannot change afterwards.
fn crd_name(obj: &Value) -> Vec<FieldError> {
    let spec = &obj["spec"];
    let required = format!("{}.{}", str_of(&spec["names"]["plural"]), str_of(&spec["group"]));
    let meta = &obj["metadata"];
    ["generateName", "name"]
        .into_iter()
        .filter(|f| !str_of(&meta[*f]).is_empty() && str_of(&meta[*f]) != required)
        .map(|f| {
            FieldError::invalid(
                format!("metadata.{f}"),
                &meta[f],
                "must be spec.names.plural+\".\"+spec.group",
            )
        })
        .collect()
}

fn is_established(crd: &Value) -> bool {
    items(&crd["status"]["conditions"])
        .iter()
        .any(|c| c["type"] == "Established" && c["status"] == "True")
}

fn crd_spec(crd: &Crd, mut opts: Opts) -> Vec<FieldError> {
    let spec = crd.spec;
    let mut errors = Vec::new();
    let group = str_of(&spec["group"]);
    if group.is_empty() {
        errors.push(FieldError::required("spec.group", ""));
    } else if let problems @ [_, ..] = subdomain(group).as_slice() {
        errors.push(FieldError::invalid("spec.group", &spec["group"], &problems.join(",")));
    } else if !group.contains('.') {
        errors.push(FieldError::invalid(
            "spec.group",
            &spec["group"],
            "should be a domain with at least one dot",
        ));
    }
    enum_strings("spec.scope", &spec["scope"], &["Cluster", "Namespaced"], &mut errors);

    let preserve = spec["preserveUnknownFields"] == true;
    if !preserve {
        opts.require_structural = true;
    }
    if crd.validation["openAPIV3Schema"].is_null() {
        for (i, v) in crd.versions.iter().enumerate() {
            if !v.schema["openAPIV3Schema"].is_null() {
                continue;
            }
            let at = format!("spec.versions[{i}].schema.openAPIV3Schema");
            if opts.require_openapi_schema {
                errors.push(FieldError::required(at, "schemas are required"));
            } else if !preserve && v.raw["served"] == true {
                errors.push(FieldError::required(at, "because otherwise all fields are pruned"));
            }
        }
    }
    let schemas = version_schemas(spec);
    if schemas.iter().any(|s| schema_has(s, &|p| p.default.is_some())) {
        opts.require_structural = true;
        if preserve {
            errors.push(FieldError::invalid(
                "spec.preserveUnknownFields",
                &Value::Bool(true),
                "must be false in order to use defaults in the schema",
            ));
        }
    }
    if schemas.iter().any(|s| schema_has(s, &has_kubernetes_extensions)) {
        opts.require_structural = true;
    }

    let mut storage = 0;
    let mut seen = BTreeSet::new();
    let mut unique = true;
    for (i, v) in crd.versions.iter().enumerate() {
        if v.raw["storage"] == true {
            storage += 1;
        }
        let name = str_of(&v.raw["name"]);
        unique &= seen.insert(name);
        if let problems @ [_, ..] = dns1035(name).as_slice() {
            errors.push(FieldError::invalid(
                format!("spec.versions[{i}].name"),
                &text(name),
                &problems.join(","),
            ));
        }
        let status = !crd.subresources_for(v)["status"].is_null();
        errors.extend(crd_version(v, &format!("spec.versions[{i}]"), status, opts));
        errors.extend(crd_version_selectable(crd, v, &format!("spec.versions[{i}]")));
    }
    if !unique {
        errors.push(FieldError::invalid_shown(
            "spec.versions",
            &crd.go_versions(),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errors.push(FieldError::invalid_shown(
            "spec.versions",
            &crd.go_versions(),
            "must have exactly one version marked as storage version",
        ));
    }
    // The internal `spec.version` is the first version's name.
    if let Some(first) = crd.versions.first() {
        let name = str_of(&first.raw["name"]);
        if let problems @ [_, ..] = dns1035(name).as_slice() {
            if !name.is_empty() {
                errors.push(FieldError::invalid("spec.version", &text(name), &problems.join(",")));
            }
        }
    }

    let names = &spec["names"];
    for field in ["plural", "singular", "kind", "listKind"] {
        if str_of(&names[field]).is_empty() {
            errors.push(FieldError::required(format!("spec.names.{field}"), ""));
        }
    }
    errors.extend(crd_names(names, "spec.names"));
    errors.extend(crd_validation(
        crd.validation,
        crd.any_status_enabled(),
        opts,
        "spec.validation",
    ));
    errors.extend(crd_subresources(crd.subresources, "spec.subresources"));
    errors.extend(crd_columns(crd.columns, "spec.additionalPrinterColumns"));
    if !items(crd.selectable).is_empty() {
        match &crd.validation["openAPIV3Schema"] {
            Value::Null => errors.push(FieldError::invalid(
                "spec.selectableFields",
                &text(""),
                "selectableFields may only be set when validations.schema is included",
            )),
            schema => errors.extend(crd_selectable_fields(
                crd.selectable,
                schema,
                "spec.selectableFields",
            )),
        }
    }

    let conversion = &spec["conversion"];
    if !conversion.is_null() && conversion["strategy"] != "None" && preserve {
        errors.push(FieldError::invalid(
            "spec.conversion.strategy",
            &text(str_of(&conversion["strategy"])),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    errors.extend(crd_conversion(conversion, opts.require_recognized_review_version));
    errors
}

/// One version: its deprecation warning, then its own schema, subresources and columns (those
/// not shared by every version).
fn crd_version(v: &Version, at: &str, status_enabled: bool, opts: Opts) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let warning = &v.raw["deprecationWarning"];
    for p in deprecation_warning_problems(v.raw["deprecated"] == true, warning) {
        errors.push(FieldError::invalid(format!("{at}.deprecationWarning"), warning, &p));
    }
    errors.extend(crd_validation(v.schema, status_enabled, opts, &format!("{at}.schema")));
    errors.extend(crd_subresources(v.subresources, &format!("{at}.subresources")));
    errors.extend(crd_columns(v.columns, &format!("{at}.additionalPrinterColumns")));
    errors
}

/// A version's own `selectableFields` (those not shared by every version), resolved against
/// its schema, or the schema every version shares (upstream would look at the version's
/// own only, which is unset when the schemas were all alike).
fn crd_version_selectable(crd: &Crd, v: &Version, at: &str) -> Vec<FieldError> {
    if items(v.selectable).is_empty() {
        return Vec::new();
    }
    let at = format!("{at}.selectableFields");
    let schema = match &v.schema["openAPIV3Schema"] {
        Value::Null => &crd.validation["openAPIV3Schema"],
        own => own,
    };
    if schema.is_null() {
        return vec![FieldError::invalid(
            at,
            &text(""),
            "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
        )];
    }
    crd_selectable_fields(v.selectable, schema, &at)
}

/// Upstream's limit on a version's selectable fields.
const MAX_SELECTABLE_FIELDS: usize = 8;

/// `ValidateCustomResourceSelectableFields`: each path names a string, boolean or integer
/// field of the schema outside `metadata`, once; at most [`MAX_SELECTABLE_FIELDS`].
fn crd_selectable_fields(fields: &Value, schema: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut unique: Vec<String> = Vec::new();
    for (i, f) in items(fields).iter().enumerate() {
        let at = format!("{at}[{i}].jsonPath");
        let path = str_of(&f["jsonPath"]);
        if path.is_empty() {
            errors.push(FieldError::required(at, ""));
            continue;
        }
        let (resolved, found) = match schema_field(path, schema) {
            Ok(found) => found,
            Err(why) => {
                errors.push(FieldError::invalid(
                    at,
                    &text(path),
                    &format!("is an invalid path: {why}"),
                ));
                continue;
            }
        };
        if resolved.split(['.', '[']).next() == Some("metadata") {
            errors.push(FieldError::invalid(
                &at,
                &text(path),
                "must not point to fields in metadata",
            ));
        }
        if !matches!(str_of(&found["type"]), "string" | "boolean" | "integer") {
            errors.push(FieldError::invalid(
                &at,
                &text(path),
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if unique.contains(&resolved) {
            errors.push(FieldError::duplicate(&at, &text(path)));
        } else {
            unique.push(resolved);
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        errors.push(FieldError::too_many(at, unique.len(), MAX_SELECTABLE_FIELDS));
    }
    errors
}

/// The field a selectable field's path (`.spec.color`, `.spec.labels['a.b']` refused: no
/// array notation) names in `schema`, with the path as a field path (`spec.color`), as
/// upstream's `cel.ValidFieldPath` resolves it: through `properties`, or the keys of an
/// `additionalProperties` map.
fn schema_field<'a>(path: &str, schema: &'a Value) -> Result<(String, &'a Value), String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    for c in path.chars() {
        if matches!(c, '.' | '[' | ']') {
            if !word.is_empty() {
                tokens.push(std::mem::take(&mut word));
            }
            tokens.push(c.to_string());
        } else {
            word.push(c);
        }
    }
    if !word.is_empty() {
        tokens.push(word);
    }
    let mut tokens = tokens.into_iter();
    let (mut resolved, mut at) = (String::new(), schema);
    while let Some(token) = tokens.next() {
        match token.as_str() {
            "[" => return Err("array notation is not allowed".to_string()),
            "." => {
                let name = tokens.next().ok_or("unexpected end of JSON path")?;
                if at["properties"].is_object() {
                    at = at["properties"].get(&name).ok_or("does not refer to a valid field")?;
                    if !resolved.is_empty() {
                        resolved.push('.');
                    }
                    resolved.push_str(&name);
                } else if at["additionalProperties"].is_object() {
                    at = &at["additionalProperties"];
                    resolved.push_str(&format!("[{name}]"));
                } else {
                    return Err("does not refer to a valid field".to_string());
                }
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok((resolved, at))
}

/// Go's `unicode.IsPrint`, near enough: no controls, no spaces but U+0020, no format or
/// private-use characters.
fn is_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    let format = matches!(c as u32,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E | 0x200B..=0x200F
        | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB
        | 0xE000..=0xF8FF | 0xF0000..=0x10FFFF);
    !c.is_control() && !c.is_whitespace() && !format
}

fn deprecation_warning_problems(deprecated: bool, warning: &Value) -> Vec<String> {
    let Some(w) = warning.as_str() else { return Vec::new() };
    if !deprecated {
        return vec!["can only be set for deprecated versions".to_string()];
    }
    let mut problems = Vec::new();
    if w.len() > 256 {
        problems.push("must be <= 256 characters long".to_string());
    }
    if w.is_empty() {
        problems.push("must not be an empty string".to_string());
    }
    if let Some((i, _)) = w.char_indices().find(|(_, c)| !is_printable(*c)) {
        problems.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        ));
    }
    problems
}

/// `ValidateCustomResourceDefinitionNames`, for `spec.names` and `status.acceptedNames`.
fn crd_names(names: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for field in ["plural", "singular"] {
        let name = str_of(&names[field]);
        if let problems @ [_, ..] = dns1035(name).as_slice() {
            if !name.is_empty() {
                errors.push(FieldError::invalid(
                    format!("{at}.{field}"),
                    &text(name),
                    &problems.join(","),
                ));
            }
        }
    }
    for field in ["kind", "listKind"] {
        let kind = str_of(&names[field]);
        if let problems @ [_, ..] = dns1035(&kind.to_lowercase()).as_slice() {
            if !kind.is_empty() {
                errors.push(FieldError::invalid(
                    format!("{at}.{field}"),
                    &text(kind),
                    &format!(
                        "may have mixed case, but should otherwise match: {}",
                        problems.join(",")
                    ),
                ));
            }
        }
    }
    for (i, short) in items(&names["shortNames"]).iter().enumerate() {
        if let problems @ [_, ..] = dns1035(str_of(short)).as_slice() {
            errors.push(FieldError::invalid(
                format!("{at}.shortNames[{i}]"),
                &text(str_of(short)),
                &problems.join(","),
            ));
        }
    }
    let kind = str_of(&names["kind"]);
    if !kind.is_empty() && kind == str_of(&names["listKind"]) {
        errors.push(FieldError::invalid(
            format!("{at}.listKind"),
            &text(kind),
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in items(&names["categories"]).iter().enumerate() {
        if let problems @ [_, ..] = dns1035(str_of(category)).as_slice() {
            errors.push(FieldError::invalid(
                format!("{at}.categories[{i}]"),
                &text(str_of(category)),
                &problems.join(","),
            ));
        }
    }
    errors
}

/// Immutable fields: the group and plural always (they make the name), the scope and kind
/// once the CRD is established.
fn crd_spec_update(spec: &Value, old: &Value, established: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut immutable = |field: &str, new: &Value, was: &Value| {
        if str_of(new) != str_of(was) {
            errors.push(FieldError::invalid(field, &text(str_of(new)), IMMUTABLE));
        }
    };
    if established {
        immutable("spec.scope", &spec["scope"], &old["scope"]);
        immutable("spec.names.kind", &spec["names"]["kind"], &old["names"]["kind"]);
    }
    immutable("spec.group", &spec["group"], &old["group"]);
    immutable("spec.names.plural", &spec["names"]["plural"], &old["names"]["plural"]);
    errors
}

/// `status.storedVersions`, as the registry leaves it before validation: the storage version
/// is added when missing (on create the list is just that version).
fn stored_versions(obj: &Value) -> Vec<FieldError> {
    let path = "status.storedVersions";
    let versions = items(&obj["spec"]["versions"]);
    let mut stored: Option<Vec<String>> = obj["status"]["storedVersions"]
        .as_array()
        .map(|a| a.iter().map(|v| str_of(v).to_string()).collect());
    if let Some(storage) = versions.iter().find(|v| v["storage"] == true) {
        let name = str_of(&storage["name"]).to_string();
        let list = stored.get_or_insert_with(Vec::new);
        if !list.contains(&name) {
            list.push(name);
        }
    }
    let shown = go_string_slice(stored.as_deref());
    let stored = stored.unwrap_or_default();
    if stored.is_empty() {
        return vec![FieldError::invalid_shown(
            path,
            &shown,
            "must have at least one stored version",
        )];
    }
    let mut errors = Vec::new();
    let mut remaining: BTreeMap<&str, usize> =
        stored.iter().enumerate().map(|(i, v)| (v.as_str(), i)).collect();
    for v in versions {
        let name = str_of(&v["name"]);
        let found = remaining.contains_key(name);
        if v["storage"] == true && !found {
            errors.push(FieldError::invalid_shown(
                path,
                &shown,
                &format!("must have the storage version {name}"),
            ));
        }
        remaining.remove(name);
    }
    let mut missing: Vec<(usize, &str)> = remaining.into_iter().map(|(v, i)| (i, v)).collect();
    missing.sort();
    for (i, v) in missing {
        errors.push(FieldError::invalid(
            format!("{path}[{i}]"),
            &text(v),
            &format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"),
        ));
    }
    errors
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Approval {
    Invalid,
    Approved,
    Bypassed,
    Missing,
}

fn approval_state(crd: &Value) -> (Approval, String) {
    let annotation = str_of(&crd["metadata"]["annotations"][APPROVAL_ANNOTATION]);
    let quoted = go_quote(APPROVAL_ANNOTATION);
    if annotation.is_empty() {
        return (
            Approval::Missing,
            format!("protected groups must have approval annotation {quoted}, see https://github.com/kubernetes/enhancements/pull/1111"),
        );
    }
    if annotation.starts_with("unapproved") {
        return (Approval::Bypassed, format!("not approved: {}", go_quote(annotation)));
    }
    if go_url::parse_request_uri(annotation)
        .is_ok_and(|u| !u.host.is_empty() && !u.scheme.is_empty())
    {
        return (Approval::Approved, format!("approved in {annotation}"));
    }
    (
        Approval::Invalid,
        format!("protected groups must have approval annotation {quoted} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
    )
}

/// Groups under `k8s.io` and `kubernetes.io` need the API approval annotation (unless it
/// did not change on an update).
fn api_approval(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let group = str_of(&obj["spec"]["group"]);
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|d| group == *d || group.ends_with(&format!(".{d}")));
    if !protected {
        return Vec::new();
    }
    let (state, reason) = approval_state(obj);
    if old.is_some_and(|old| approval_state(old).0 == state) {
        return Vec::new();
    }
    let field = format!("metadata.annotations[{APPROVAL_ANNOTATION}]");
    let value = text(str_of(&obj["metadata"]["annotations"][APPROVAL_ANNOTATION]));
    match state {
        Approval::Missing => vec![FieldError::required(field, &reason)],
        Approval::Invalid => vec![FieldError::invalid(field, &value, &reason)],
        Approval::Approved | Approval::Bypassed => Vec::new(),
    }
}

fn crd_subresources(sub: &Value, at: &str) -> Vec<FieldError> {
    let scale = &sub["scale"];
    if scale.is_null() {
        return Vec::new();
    }
    let mut errors = Vec::new();
    for (field, prefix) in [("specReplicasPath", ".spec."), ("statusReplicasPath", ".status.")] {
        let path = format!("{at}.scale.{field}");
        let value = str_of(&scale[field]);
        if value.is_empty() {
            errors.push(FieldError::required(path, ""));
        } else if let Some(e) = simple_json_path(value, &path) {
            errors.push(e);
        } else if !value.starts_with(prefix) {
            let under = prefix.trim_end_matches('.');
            errors.push(FieldError::invalid(
                path,
                &text(value),
                &format!("should be a json path under {under}"),
            ));
        }
    }
    let selector = str_of(&scale["labelSelectorPath"]);
    if !selector.is_empty() {
        let path = format!("{at}.scale.labelSelectorPath");
        if let Some(e) = simple_json_path(selector, &path) {
            errors.push(e);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            errors.push(FieldError::invalid(
                path,
                &text(selector),
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errors
}

fn simple_json_path(s: &str, at: &str) -> Option<FieldError> {
    if s.is_empty() {
        Some(FieldError::invalid(at, &text(s), "must not be empty"))
    } else if !s.starts_with('.') {
        Some(FieldError::invalid(at, &text(s), "must be a simple json path starting with ."))
    } else {
        None
    }
}

fn crd_columns(columns: &Value, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, c) in items(columns).iter().enumerate() {
        let at = format!("{at}[{i}]");
        if str_of(&c["name"]).is_empty() {
            errors.push(FieldError::required(format!("{at}.name"), ""));
        }
        let types = format!("must be one of {}", COLUMN_TYPES.join(","));
        let kind = str_of(&c["type"]);
        if kind.is_empty() {
            errors.push(FieldError::required(format!("{at}.type"), &types));
        } else if !COLUMN_TYPES.contains(&kind) {
            errors.push(FieldError::invalid(format!("{at}.type"), &text(kind), &types));
        }
        let format = str_of(&c["format"]);
        if !format.is_empty() && !COLUMN_FORMATS.contains(&format) {
            errors.push(FieldError::invalid(
                format!("{at}.format"),
                &text(format),
                &format!("must be one of {}", COLUMN_FORMATS.join(",")),
            ));
        }
        let path = str_of(&c["jsonPath"]);
        if path.is_empty() {
            errors.push(FieldError::required(format!("{at}.JSONPath"), ""));
        } else if let Some(e) = simple_json_path(path, &format!("{at}.JSONPath")) {
            errors.push(e);
        }
    }
    errors
}

fn is_accepted_review_version(v: &str) -> bool {
    v == "v1" || v == "v1beta1"
}

/// `spec.conversion`: the strategy, and the webhook exactly when the strategy is Webhook
/// (upstream's internal paths: `webhookClientConfig`, `conversionReviewVersions`).
fn crd_conversion(conversion: &Value, require_recognized: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if conversion.is_null() {
        return errors;
    }
    let at = "spec.conversion";
    enum_strings(
        &format!("{at}.strategy"),
        &conversion["strategy"],
        &["None", "Webhook"],
        &mut errors,
    );
    let config = &conversion["webhook"]["clientConfig"];
    let review = &conversion["webhook"]["conversionReviewVersions"];
    let config_at = format!("{at}.webhookClientConfig");
    let review_at = format!("{at}.conversionReviewVersions");
    if conversion["strategy"] != "Webhook" {
        let detail = "should not be set when strategy is not set to Webhook";
        if !config.is_null() {
            errors.push(FieldError::forbidden(config_at, detail));
        }
        if !items(review).is_empty() {
            errors.push(FieldError::forbidden(review_at, detail));
        }
        return errors;
    }
    if config.is_null() {
        errors.push(FieldError::required(&config_at, "required when strategy is set to Webhook"));
    } else {
        let (url, service) = (&config["url"], &config["service"]);
        if url.is_null() == service.is_null() {
            errors.push(FieldError::required(
                &config_at,
                "exactly one of url or service is required",
            ));
        } else if let Some(url) = url.as_str() {
            errors.extend(webhook_url(&format!("{config_at}.url"), url));
        } else {
            // As upstream: the name goes where its check takes the namespace (see `webhook`).
            errors.extend(webhook_service(
                &format!("{config_at}.service"),
                str_of(&service["name"]),
                str_of(&service["namespace"]),
                service["path"].as_str(),
                &Value::from(service["port"].as_i64().unwrap_or(443)),
            ));
        }
    }
    let versions = items(review);
    if versions.is_empty() {
        errors.push(FieldError::required(&review_at, ""));
        return errors;
    }
    let mut seen = BTreeSet::new();
    let mut accepted = false;
    for (i, v) in versions.iter().enumerate() {
        let name = str_of(v);
        let field = format!("{review_at}[{i}]");
        if !seen.insert(name) {
            errors.push(FieldError::invalid(field, &text(name), "duplicate version"));
            continue;
        }
        for p in dns1035(name) {
            errors.push(FieldError::invalid(&field, &text(name), &p));
        }
        accepted |= is_accepted_review_version(name);
    }
    if require_recognized && !accepted {
        let names: Vec<&str> = versions.iter().map(str_of).collect();
        errors.push(FieldError::invalid_shown(
            review_at,
            &go_string_slice(Some(&names)),
            "must include at least one of v1, v1beta1",
        ));
    }
    errors
}

// ---------------------------------------------------------------------------------------
// OpenAPI v3 schemas (the model is `crate::structural`'s)

/// A rule as Go's `%#v` prints it.
fn go_rule(r: &Rule) -> String {
    let ptr = |ty: &str, set: bool| go_present(ty, set);
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        go_quote(&r.rule),
        go_quote(&r.message),
        go_quote(&r.message_expression),
        ptr("apiextensions.FieldValueErrorReason", r.reason.is_some()),
        go_quote(&r.field_path),
        ptr("bool", r.optional_old_self.is_some()),
    )
}

fn schema_has(p: &Props, pred: &dyn Fn(&Props) -> bool) -> bool {
    pred(p) || p.children().into_iter().any(|c| schema_has(c, pred))
}

fn has_kubernetes_extensions(s: &Props) -> bool {
    s.embedded_resource
        || s.preserve_unknown.is_some()
        || s.int_or_string
        || s.list_map_keys.as_ref().is_some_and(|k| !k.is_empty())
        || s.list_type.is_some()
        || s.validations.as_ref().is_some_and(|v| !v.is_empty())
}

fn has_non_atomic_set_type(s: &Props) -> bool {
    if s.list_type.as_deref() != Some("set") {
        return false;
    }
    match s.item_schema() {
        Some(i) if i.type_ == "array" => i.list_type.as_deref().is_some_and(|t| t != "atomic"),
        Some(i) if i.type_ == "object" => i.map_type.as_deref() != Some("atomic"),
        _ => false,
    }
}

// `%#v` of the internal schema types, for the few errors that show a whole schema.

fn go_json(v: &Value, nil: &str) -> String {
    match v {
        Value::Null => format!("{nil}(nil)"),
        Value::String(s) => go_quote(s),
        Value::Array(a) => {
            let shown: Vec<String> = a.iter().map(|x| go_json(x, "interface {}")).collect();
            format!("[]interface {{}}{{{}}}", shown.join(", "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let shown: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", go_quote(k), go_json(&m[k.as_str()], "interface {}")))
                .collect();
            format!("map[string]interface {{}}{{{}}}", shown.join(", "))
        }
        other => go_v(other),
    }
}

fn go_opt_strings(v: &Option<Vec<String>>) -> String {
    go_string_slice(v.as_deref())
}

fn go_present(type_name: &str, present: bool) -> String {
    go_pointer(type_name, if present { &Value::Bool(true) } else { &NULL })
}

fn go_schema_list(list: &Option<Vec<Props>>) -> String {
    match list {
        None => "[]apiextensions.JSONSchemaProps(nil)".to_string(),
        Some(list) => {
            let shown: Vec<String> = list.iter().map(go_props).collect();
            format!("[]apiextensions.JSONSchemaProps{{{}}}", shown.join(", "))
        }
    }
}

fn go_schema_map(type_name: &str, map: &Option<BTreeMap<String, Props>>) -> String {
    match map {
        None => format!("{type_name}(nil)"),
        Some(map) => {
            let shown: Vec<String> =
                map.iter().map(|(k, v)| format!("{}:{}", go_quote(k), go_props(v))).collect();
            format!("{type_name}{{{}}}", shown.join(", "))
        }
    }
}

fn go_items(items: &Items) -> String {
    let (schema, list) = match items {
        Items::Schema(_) => (true, None),
        Items::Array(list) => (false, Some(list.clone())),
    };
    format!(
        "apiextensions.JSONSchemaPropsOrArray{{Schema:{}, JSONSchemas:{}}}",
        go_present("apiextensions.JSONSchemaProps", schema),
        go_schema_list(&list)
    )
}

fn go_props(p: &Props) -> String {
    let ptr = |t: &str, present: bool| go_present(t, present);
    let props = "apiextensions.JSONSchemaProps";
    let enumeration = match &p.enumeration {
        None => "[]apiextensions.JSON(nil)".to_string(),
        Some(list) => {
            let shown: Vec<String> =
                list.iter().map(|v| go_json(v, "apiextensions.JSON")).collect();
            format!("[]apiextensions.JSON{{{}}}", shown.join(", "))
        }
    };
    let dependencies = match &p.dependencies {
        None => "apiextensions.JSONSchemaDependencies(nil)".to_string(),
        Some(map) => {
            let shown: Vec<String> = map
                .iter()
                .map(|(k, d)| {
                    let (schema, property) = match d {
                        Dependency::Schema(_) => (true, None),
                        Dependency::Property(list) => (false, Some(list.clone())),
                    };
                    format!(
                        "{}:apiextensions.JSONSchemaPropsOrStringArray{{Schema:{}, Property:{}}}",
                        go_quote(k),
                        ptr(props, schema),
                        go_opt_strings(&property)
                    )
                })
                .collect();
            format!("apiextensions.JSONSchemaDependencies{{{}}}", shown.join(", "))
        }
    };
    let validations = match &p.validations {
        None => "apiextensions.ValidationRules(nil)".to_string(),
        Some(rules) => {
            let shown: Vec<String> = rules.iter().map(go_rule).collect();
            format!("apiextensions.ValidationRules{{{}}}", shown.join(", "))
        }
    };
    let fields = [
        format!("ID:{}", go_quote(&p.id)),
        format!("Schema:{}", go_quote(&p.schema_uri)),
        format!("Ref:{}", ptr("string", p.reference.is_some())),
        format!("Description:{}", go_quote(&p.description)),
        format!("Type:{}", go_quote(&p.type_)),
        format!("Nullable:{}", p.nullable),
        format!("Format:{}", go_quote(&p.format)),
        format!("Title:{}", go_quote(&p.title)),
        format!("Default:{}", ptr("apiextensions.JSON", p.default.is_some())),
        format!("Maximum:{}", ptr("float64", p.maximum.is_some())),
        format!("ExclusiveMaximum:{}", p.exclusive_maximum),
        format!("Minimum:{}", ptr("float64", p.minimum.is_some())),
        format!("ExclusiveMinimum:{}", p.exclusive_minimum),
        format!("MaxLength:{}", ptr("int64", p.max_length.is_some())),
        format!("MinLength:{}", ptr("int64", p.min_length.is_some())),
        format!("Pattern:{}", go_quote(&p.pattern)),
        format!("MaxItems:{}", ptr("int64", p.max_items.is_some())),
        format!("MinItems:{}", ptr("int64", p.min_items.is_some())),
        format!("UniqueItems:{}", p.unique_items),
        format!("MultipleOf:{}", ptr("float64", p.multiple_of.is_some())),
        format!("Enum:{enumeration}"),
        format!("MaxProperties:{}", ptr("int64", p.max_properties.is_some())),
        format!("MinProperties:{}", ptr("int64", p.min_properties.is_some())),
        format!("Required:{}", go_opt_strings(&p.required)),
        format!("Items:{}", ptr("apiextensions.JSONSchemaPropsOrArray", p.items.is_some())),
        format!("AllOf:{}", go_schema_list(&p.all_of)),
        format!("OneOf:{}", go_schema_list(&p.one_of)),
        format!("AnyOf:{}", go_schema_list(&p.any_of)),
        format!("Not:{}", ptr(props, p.not.is_some())),
        format!(
            "Properties:{}",
            go_schema_map("map[string]apiextensions.JSONSchemaProps", &p.properties)
        ),
        format!(
            "AdditionalProperties:{}",
            ptr("apiextensions.JSONSchemaPropsOrBool", p.additional_properties.is_some())
        ),
        format!(
            "PatternProperties:{}",
            go_schema_map("map[string]apiextensions.JSONSchemaProps", &p.pattern_properties)
        ),
        format!("Dependencies:{dependencies}"),
        format!(
            "AdditionalItems:{}",
            ptr("apiextensions.JSONSchemaPropsOrBool", p.additional_items.is_some())
        ),
        format!(
            "Definitions:{}",
            go_schema_map("apiextensions.JSONSchemaDefinitions", &p.definitions)
        ),
        format!(
            "ExternalDocs:{}",
            ptr("apiextensions.ExternalDocumentation", p.external_docs.is_some())
        ),
        format!("Example:{}", ptr("apiextensions.JSON", p.example.is_some())),
        format!("XPreserveUnknownFields:{}", ptr("bool", p.preserve_unknown.is_some())),
        format!("XEmbeddedResource:{}", p.embedded_resource),
        format!("XIntOrString:{}", p.int_or_string),
        format!("XListMapKeys:{}", go_opt_strings(&p.list_map_keys)),
        format!("XListType:{}", ptr("string", p.list_type.is_some())),
        format!("XMapType:{}", ptr("string", p.map_type.is_some())),
        format!("XValidations:{validations}"),
    ];
    format!("apiextensions.JSONSchemaProps{{{}}}", fields.join(", "))
}

// ---------------------------------------------------------------------------------------
// Schema validation (`validateCustomResourceDefinitionValidation` and what it calls)

/// A `{openAPIV3Schema}` wrapper at `at`: the status-subresource root rules, the structural
/// rules, then the OpenAPI walk; `NewStructural`'s own error only when nothing else was found.
fn crd_validation(wrapper: &Value, status_enabled: bool, opts: Opts, at: &str) -> Vec<FieldError> {
    let raw = &wrapper["openAPIV3Schema"];
    if raw.is_null() {
        return Vec::new();
    }
    let schema = Props::parse(raw);
    let root = format!("{at}.openAPIV3Schema");
    let mut errors = Vec::new();
    if status_enabled {
        for (name, is_set) in schema.fields_set() {
            if !is_set {
                continue;
            }
            if name == "Type" {
                if schema.type_ != "object" {
                    errors.push(FieldError::invalid(
                        format!("{root}.type"),
                        &text(&schema.type_),
                        "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                    ));
                    break;
                }
                continue;
            }
            if !ROOT_FIELDS_WITH_STATUS.contains(&name) {
                errors.push(FieldError::invalid_shown(
                    &root,
                    &go_props(&schema),
                    &format!(
                        "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                        ROOT_FIELDS_WITH_STATUS.join(" ")
                    ),
                ));
                break;
            }
        }
    }
    if schema.nullable {
        errors.push(FieldError::forbidden(
            format!("{root}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut init_error = None;
    // The rules are checked only on a schema that is structural with valid defaults, as
    // upstream's CEL context is made only then.
    let mut rules_checked = true;
    if opts.require_structural {
        match structural_error(&schema) {
            Err(e) => init_error = Some(FieldError::invalid(&root, &text(""), &e)),
            Ok(()) => {
                let structural = validate_structural(&schema, &root);
                let problems = match structural.is_empty() {
                    true => crd_defaults::problems(raw, &root, opts.require_pruned_defaults),
                    false => structural,
                };
                rules_checked = problems.is_empty();
                errors.extend(problems);
            }
        }
    }
    let ssv = Ssv {
        allow_defaults: true,
        forbidden_reason: String::new(),
        inside_meta: false,
        require_valid_type: opts.require_valid_property_type,
    };
    openapi_schema(&schema, &root, &ssv, true, opts, &mut errors);
    if rules_checked {
        errors.extend(rule_problems(raw, &root));
    }
    if errors.is_empty() {
        errors.extend(init_error);
    }
    errors
}

/// The CEL rules' compile errors and estimated costs over the limits (upstream's
/// `CELErrors`), from the installed rule engine.
fn rule_problems(schema: &Value, at: &str) -> Vec<FieldError> {
    let Some(engine) = super::rules::engine() else { return Vec::new() };
    engine
        .check(schema, at)
        .into_iter()
        .map(|problem| match problem {
            RuleProblem::Invalid { field, rule, detail } => {
                FieldError::invalid_shown(field, &go_rule(&Rule::parse(&rule)), &detail)
            }
            RuleProblem::Forbidden { field, detail } => FieldError::forbidden(field, &detail),
        })
        .collect()
}

/// `specStandardValidatorV3`'s state.
#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    forbidden_reason: String,
    inside_meta: bool,
    require_valid_type: bool,
}

impl Ssv {
    fn forbid_defaults(&self, reason: &str) -> Ssv {
        Ssv { allow_defaults: false, forbidden_reason: reason.to_string(), ..self.clone() }
    }

    fn validate(&self, s: &Props, at: &str, errors: &mut Vec<FieldError>) {
        if self.require_valid_type
            && !s.type_.is_empty()
            && !OPENAPI_TYPES.contains(&s.type_.as_str())
        {
            errors.push(FieldError::unsupported(
                format!("{at}.type"),
                &text(&s.type_),
                &OPENAPI_TYPES,
            ));
        }
        if s.default.is_some() && !self.allow_defaults {
            let mut detail = "must not be set".to_string();
            if !self.forbidden_reason.is_empty() {
                detail = format!("{detail} {}", self.forbidden_reason);
            }
            errors.push(FieldError::forbidden(format!("{at}.default"), &detail));
        }
        let mut forbid = |field: &str, detail: &str| {
            errors.push(FieldError::forbidden(format!("{at}.{field}"), detail));
        };
        if !s.id.is_empty() {
            forbid("id", "id is not supported");
        }
        if s.additional_items.is_some() {
            forbid("additionalItems", "additionalItems is not supported");
        }
        if s.pattern_properties.as_ref().is_some_and(|m| !m.is_empty()) {
            forbid("patternProperties", "patternProperties is not supported");
        }
        if s.definitions.as_ref().is_some_and(|m| !m.is_empty()) {
            forbid("definitions", "definitions is not supported");
        }
        if s.dependencies.is_some() {
            forbid("dependencies", "dependencies is not supported");
        }
        if s.reference.is_some() {
            forbid("$ref", "$ref is not supported");
        }
        if s.type_ == "null" {
            forbid("type", "type cannot be set to null, use nullable as an alternative");
        }
        if matches!(&s.items, Some(Items::Array(list)) if !list.is_empty()) {
            forbid("items", "items must be a schema object and not an array");
        }
        if self.inside_meta && s.embedded_resource {
            forbid("x-kubernetes-embedded-resource", "must not be used inside of resource meta");
        }
    }
}

/// `ValidateCustomResourceDefinitionOpenAPISchema` without its CEL part: this schema, its
/// sub-schemas, then the list and map extensions and the rules' static checks.
fn openapi_schema(
    s: &Props,
    at: &str,
    ssv: &Ssv,
    is_root: bool,
    opts: Opts,
    errors: &mut Vec<FieldError>,
) {
    ssv.validate(s, at, errors);
    if s.unique_items {
        errors.push(FieldError::forbidden(
            format!("{at}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(additional) = &s.additional_properties {
        if s.has_properties() && (!additional.allows || additional.schema.is_some()) {
            errors.push(FieldError::forbidden(
                format!("{at}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ssv.inside_meta {
            ssv.forbid_defaults("inside additionalProperties applying to object metadata")
        } else {
            ssv.clone()
        };
        if let Some(schema) = &additional.schema {
            openapi_schema(
                schema,
                &format!("{at}.additionalProperties"),
                &sub,
                false,
                opts,
                errors,
            );
        }
    }
    for (name, property) in s.properties() {
        let mut sub = ssv.clone();
        if (is_root || s.embedded_resource)
            && ["metadata", "kind", "apiVersion"].contains(&name.as_str())
        {
            sub.inside_meta = true;
            if is_root {
                sub = sub.forbid_defaults(&format!("in top-level {name}"));
            }
        }
        openapi_schema(property, &format!("{at}.properties[{name}]"), &sub, false, opts, errors);
    }
    if let Some(not) = &s.not {
        openapi_schema(not, &format!("{at}.not"), ssv, false, opts, errors);
    }
    for (field, list) in [("allOf", &s.all_of), ("oneOf", &s.one_of), ("anyOf", &s.any_of)] {
        for (i, sub) in list.iter().flatten().enumerate() {
            openapi_schema(sub, &format!("{at}.{field}[{i}]"), ssv, false, opts, errors);
        }
    }
    for (name, sub) in s.definitions.iter().flatten() {
        openapi_schema(sub, &format!("{at}.definitions[{name}]"), ssv, false, opts, errors);
    }
    match &s.items {
        Some(Items::Schema(sub)) => {
            openapi_schema(sub, &format!("{at}.items"), ssv, false, opts, errors)
        }
        Some(Items::Array(list)) => {
            for (i, sub) in list.iter().enumerate() {
                openapi_schema(sub, &format!("{at}.items[{i}]"), ssv, false, opts, errors);
            }
        }
        None => {}
    }
    for (name, dep) in s.dependencies.iter().flatten() {
        if let Dependency::Schema(sub) = dep {
            openapi_schema(sub, &format!("{at}.dependencies[{name}]"), ssv, false, opts, errors);
        }
    }
    if s.preserve_unknown == Some(false) {
        errors.push(FieldError::invalid(
            format!("{at}.x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(false),
            "must be true or undefined",
        ));
    }
    list_and_map_types(s, at, opts, errors);
    if opts.require_map_list_keys {
        errors.extend(map_list_keys_map_set(s, at));
    }
    for (i, rule) in s.validations.iter().flatten().enumerate() {
        validation_rule(rule, &format!("{at}.x-kubernetes-validations[{i}]"), errors);
    }
}

/// `x-kubernetes-map-type`, `x-kubernetes-list-type` and `x-kubernetes-list-map-keys`.
fn list_and_map_types(s: &Props, at: &str, opts: Opts, errors: &mut Vec<FieldError>) {
    let type_at = format!("{at}.type");
    let wrong_type = |detail: &str| {
        if s.type_.is_empty() {
            FieldError::required(&type_at, detail)
        } else {
            FieldError::invalid(&type_at, &text(&s.type_), detail)
        }
    };
    if let Some(map_type) = &s.map_type {
        if s.type_ != "object" {
            errors.push(wrong_type("must be object if x-kubernetes-map-type is specified"));
        }
        if map_type != "atomic" && map_type != "granular" {
            errors.push(FieldError::unsupported(
                format!("{at}.x-kubernetes-map-type"),
                &text(map_type),
                &["atomic", "granular"],
            ));
        }
    }
    let atomic_msg = "must be atomic as item of a list with x-kubernetes-list-type=set";
    if let Some(list_type) = &s.list_type {
        if s.type_ != "array" {
            errors.push(wrong_type("must be array if x-kubernetes-list-type is specified"));
        } else if opts.require_atomic_set_type && list_type == "set" {
            if let Some(item) = s.item_schema() {
                // Upstream shows the item's list type for both cases (null when unset).
                let shown = text(item.list_type.as_deref().unwrap_or("null"));
                if item.type_ == "array" && item.list_type.as_deref().is_some_and(|t| t != "atomic")
                {
                    errors.push(FieldError::invalid(
                        format!("{at}.items.x-kubernetes-list-type"),
                        &shown,
                        atomic_msg,
                    ));
                } else if item.type_ == "object" && item.map_type.as_deref() != Some("atomic") {
                    errors.push(FieldError::invalid(
                        format!("{at}.items.x-kubernetes-map-type"),
                        &shown,
                        atomic_msg,
                    ));
                }
            }
        }
        if !["atomic", "set", "map"].contains(&list_type.as_str()) {
            errors.push(FieldError::unsupported(
                format!("{at}.x-kubernetes-list-type"),
                &text(list_type),
                &["atomic", "set", "map"],
            ));
        }
    }
    let keys = s.list_map_keys.clone().unwrap_or_default();
    let list_type_at = format!("{at}.x-kubernetes-list-type");
    let map_detail = "must be map if x-kubernetes-list-map-keys is non-empty";
    if !keys.is_empty() {
        match &s.list_type {
            None => errors.push(FieldError::required(&list_type_at, map_detail)),
            Some(t) if t != "map" => {
                errors.push(FieldError::invalid(&list_type_at, &text(t), map_detail))
            }
            Some(_) => {}
        }
    }
    if s.list_type.as_deref() != Some("map") {
        return;
    }
    let keys_at = format!("{at}.x-kubernetes-list-map-keys");
    if keys.is_empty() {
        errors.push(FieldError::required(
            &keys_at,
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    let item = match &s.items {
        None => {
            errors.push(FieldError::required(
                format!("{at}.items"),
                "must have a schema if x-kubernetes-list-type is map",
            ));
            return;
        }
        Some(items @ Items::Array(_)) => {
            errors.push(FieldError::invalid_shown(
                format!("{at}.items"),
                &go_items(items),
                "must only have a single schema if x-kubernetes-list-type is map",
            ));
            return;
        }
        Some(Items::Schema(item)) => item,
    };
    if item.type_ != "object" {
        errors.push(FieldError::invalid(
            format!("{at}.items.type"),
            &text(&item.type_),
            "must be object if parent array's x-kubernetes-list-type is map",
        ));
        return;
    }
    let shown_keys = go_string_slice(Some(&keys));
    let mut seen = BTreeSet::new();
    for k in &keys {
        match item.property(k) {
            Some(p) if p.type_ == "array" || p.type_ == "object" => {
                errors.push(FieldError::invalid(
                    format!("{at}.items.properties[{k}].type"),
                    &text(&item.type_),
                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                ));
            }
            Some(_) => {}
            None => errors.push(FieldError::invalid_shown(
                &keys_at,
                &shown_keys,
                "entries must all be names of item properties",
            )),
        }
        if !seen.insert(k) {
            errors.push(FieldError::invalid_shown(
                &keys_at,
                &shown_keys,
                "must not contain duplicate entries",
            ));
        }
    }
}

/// `validateMapListKeysMapSet`: set and map items not nullable, map keys required or
/// defaulted and not nullable.
fn map_list_keys_map_set(s: &Props, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let (Some(item), Some(list_type)) = (s.item_schema(), s.list_type.as_deref()) else {
        return errors;
    };
    if list_type != "set" && list_type != "map" {
        return errors;
    }
    if item.nullable {
        errors.push(FieldError::forbidden(
            format!("{at}.items.nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
        ));
    }
    if list_type == "map" {
        let required = item.required.clone().unwrap_or_default();
        for k in s.list_map_keys.iter().flatten() {
            let Some(p) = item.property(k) else { continue };
            let field = format!("{at}.items.properties[{k}]");
            if !required.contains(k) && p.default.is_none() {
                errors.push(FieldError::required(
                    format!("{field}.default"),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ));
            }
            if p.nullable {
                errors.push(FieldError::forbidden(
                    format!("{field}.nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    errors
}

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// One `x-kubernetes-validations` entry's static checks (its CEL is not compiled here).
fn validation_rule(rule: &Rule, at: &str, errors: &mut Vec<FieldError>) {
    let (trimmed_rule, trimmed_message) = (rule.rule.trim(), rule.message.trim());
    if trimmed_rule.is_empty() {
        errors.push(FieldError::required(format!("{at}.rule"), "rule is not specified"));
    } else if !rule.message.is_empty() && trimmed_message.is_empty() {
        errors.push(FieldError::invalid(
            format!("{at}.message"),
            &text(&rule.message),
            "message must be non-empty if specified",
        ));
    } else if has_newlines(trimmed_message) {
        errors.push(FieldError::invalid(
            format!("{at}.message"),
            &text(&rule.message),
            "message must not contain line breaks",
        ));
    } else if has_newlines(trimmed_rule) && trimmed_message.is_empty() {
        errors.push(FieldError::required(
            format!("{at}.message"),
            "message must be specified if rule contains line breaks",
        ));
    }
    if !rule.message_expression.is_empty() && rule.message_expression.trim().is_empty() {
        errors.push(FieldError::required(
            format!("{at}.messageExpression"),
            "messageExpression must be non-empty if specified",
        ));
    }
    if let Some(reason) = rule.reason.as_deref().filter(|r| !VALIDATION_REASONS.contains(r)) {
        errors.push(FieldError::unsupported(
            format!("{at}.reason"),
            &text(reason),
            &VALIDATION_REASONS,
        ));
    }
    let path = &rule.field_path;
    if !path.is_empty() && path.trim().is_empty() {
        errors.push(FieldError::invalid(
            format!("{at}.fieldPath"),
            &text(path),
            "fieldPath must be non-empty if specified",
        ));
    }
    if has_newlines(path) {
        errors.push(FieldError::invalid(
            format!("{at}.fieldPath"),
            &text(path),
            "fieldPath must not contain line breaks",
        ));
    }
}

// ---------------------------------------------------------------------------------------
// Structural schemas (`NewStructural` and `ValidateStructural`)

/// What `NewStructural` refuses (each also reported by the OpenAPI walk, except `$schema`).
fn structural_error(s: &Props) -> Result<(), String> {
    let unsupported = |what: &str| Err(format!("OpenAPIV3Schema '{what}' is not supported"));
    if !s.id.is_empty() {
        return unsupported("id");
    }
    if !s.schema_uri.is_empty() {
        return unsupported("schema");
    }
    if s.reference.as_deref().is_some_and(|r| !r.is_empty()) {
        return unsupported("$ref");
    }
    if s.pattern_properties.as_ref().is_some_and(|m| !m.is_empty()) {
        return unsupported("patternProperties");
    }
    if s.dependencies.as_ref().is_some_and(|m| !m.is_empty()) {
        return unsupported("dependencies");
    }
    if s.additional_items.is_some() {
        return unsupported("additionalItems");
    }
    if s.definitions.as_ref().is_some_and(|m| !m.is_empty()) {
        return unsupported("definitions");
    }
    if let Some(not) = &s.not {
        structural_error(not)?;
    }
    for list in [&s.all_of, &s.any_of, &s.one_of] {
        for sub in list.iter().flatten() {
            structural_error(sub)?;
        }
    }
    if s.preserve_unknown == Some(false) {
        return Err(
            "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                .to_string(),
        );
    }
    match &s.items {
        Some(Items::Array(list)) if !list.is_empty() => {
            return Err("OpenAPIV3Schema 'items' must be a schema, but is an array".to_string())
        }
        Some(Items::Schema(item)) => structural_error(item)?,
        _ => {}
    }
    for (_, p) in s.properties() {
        structural_error(p)?;
    }
    if let Some(schema) = s.additional_properties.as_ref().and_then(|a| a.schema.as_deref()) {
        structural_error(schema)?;
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// `ValidateStructural`: the invariants and the completeness of the value validations,
/// sorted as upstream sorts them.
fn validate_structural(s: &Props, at: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    invariants(s, Level::Root, at, &mut errors);
    vv_completeness(s, s, at, at, &mut errors);
    errors.sort_by_key(FieldError::line);
    errors
}

/// A copy of `p` without what the shape comparisons below ignore: its external docs and
/// example, and `allOf`, `anyOf`, `oneOf` and `enum` lists that are empty (as if absent).
fn bare(p: &Props) -> Props {
    let mut q = p.clone();
    q.external_docs = None;
    q.example = None;
    for list in [&mut q.all_of, &mut q.any_of, &mut q.one_of] {
        if list.as_ref().is_some_and(Vec::is_empty) {
            *list = None;
        }
    }
    if q.enumeration.as_ref().is_some_and(Vec::is_empty) {
        q.enumeration = None;
    }
    q
}

/// A junctor branch that is exactly `{type: <t>}` (for the int-or-string patterns).
fn is_only_type(p: &Props, t: &str) -> bool {
    let mut q = bare(p);
    if q.additional_properties.as_ref().is_some_and(|a| !a.allows && a.schema.is_none()) {
        q.additional_properties = None;
    }
    q == Props { type_: t.to_string(), ..Props::default() }
}

fn is_int_or_string_any_of(list: &Option<Vec<Props>>) -> bool {
    matches!(list.as_deref(), Some([a, b]) if is_only_type(a, "integer") && is_only_type(b, "string"))
}

fn invariants(s: &Props, lvl: Level, at: &str, errors: &mut Vec<FieldError>) {
    let item = s.item_schema();
    if s.type_ == "array" && item.is_none() {
        errors.push(FieldError::required(format!("{at}.items"), "must be specified"));
    }
    if let Some(item) = item {
        invariants(item, Level::Item, &format!("{at}.items"), errors);
    }
    for (name, p) in s.properties() {
        invariants(p, Level::Field, &format!("{at}.properties[{name}]"), errors);
    }
    if let Some(additional) = &s.additional_properties {
        if lvl == Level::Root {
            errors.push(FieldError::forbidden(
                format!("{at}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(schema) = &additional.schema {
            invariants(schema, Level::Field, &format!("{at}.additionalProperties"), errors);
        }
    }
    if s.int_or_string && s.preserves_unknown() {
        errors.push(FieldError::invalid(
            format!("{at}.x-kubernetes-preserve-unknown-fields"),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.int_or_string && s.embedded_resource {
        errors.push(FieldError::invalid(
            format!("{at}.x-kubernetes-embedded-resource"),
            &Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(&s.any_of);
    let skip_first_all_of_any_of = s
        .all_of
        .as_ref()
        .and_then(|l| l.first())
        .is_some_and(|f| is_int_or_string_any_of(&f.any_of));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, lvl, at, errors);

    let type_at = format!("{at}.type");
    if s.embedded_resource && s.type_ != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        if s.type_.is_empty() {
            errors.push(FieldError::required(&type_at, detail));
        } else {
            errors.push(FieldError::invalid(&type_at, &text(&s.type_), detail));
        }
    } else if s.type_.is_empty() && !s.int_or_string && !s.preserves_unknown() {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errors.push(FieldError::required(&type_at, detail));
    }
    if s.embedded_resource && s.additional_properties.is_some() {
        errors.push(FieldError::forbidden(
            format!("{at}.additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.type_.is_empty() && s.type_ != "object" {
        errors.push(FieldError::invalid(&type_at, &text(&s.type_), "must be object at the root"));
    }
    let check_metadata = lvl == Level::Root || s.embedded_resource;
    if check_metadata {
        for field in ["kind", "apiVersion"] {
            if let Some(p) = s.property(field).filter(|p| p.type_ != "string") {
                errors.push(FieldError::invalid(
                    format!("{at}.properties[{field}].type"),
                    &text(&p.type_),
                    "must be string",
                ));
            }
        }
    }
    if let Some(metadata) = s.property("metadata") {
        let meta_at = format!("{at}.properties[metadata]");
        if check_metadata && metadata.type_ != "object" {
            errors.push(FieldError::invalid(
                format!("{meta_at}.type"),
                &text(&metadata.type_),
                "must be object",
            ));
        }
        if lvl == Level::Root && !metadata_only_names(metadata) {
            errors.push(FieldError::forbidden(
                meta_at,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if s.embedded_resource && !s.preserves_unknown() && !s.has_properties() {
        errors.push(FieldError::required(
            format!("{at}.properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// The root `metadata` schema may restrict `name` and `generateName` only.
fn metadata_only_names(m: &Props) -> bool {
    let mut q = bare(m);
    q.type_.clear();
    q.default = None;
    if let Some(props) = &q.properties {
        let (name, generate) = (props.contains_key("name"), props.contains_key("generateName"));
        if props.is_empty()
            || (name && generate && props.len() == 2)
            || ((name || generate) && props.len() == 1)
        {
            q.properties = None;
        }
    }
    if matches!(&q.items, Some(Items::Array(list)) if list.is_empty()) {
        q.items = None;
    }
    q == Props::default()
}

/// The junctors (`anyOf`, `allOf`, `oneOf`, `not`) of a node.
fn value_validation(
    v: &Props,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    at: &str,
    errors: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, sub) in v.any_of.iter().flatten().enumerate() {
            nested(sub, false, false, lvl, &format!("{at}.anyOf[{i}]"), errors);
        }
    }
    for (i, sub) in v.all_of.iter().flatten().enumerate() {
        nested(
            sub,
            skip_first_all_of_any_of && i == 0,
            false,
            lvl,
            &format!("{at}.allOf[{i}]"),
            errors,
        );
    }
    for (i, sub) in v.one_of.iter().flatten().enumerate() {
        nested(sub, false, false, lvl, &format!("{at}.oneOf[{i}]"), errors);
    }
    if let Some(not) = &v.not {
        nested(not, false, false, lvl, &format!("{at}.not"), errors);
    }
    if let Some(problem) =
        (!v.pattern.is_empty()).then(|| go_regexp::compile_error(&v.pattern)).flatten()
    {
        errors.push(FieldError::invalid(
            format!("{at}.pattern"),
            &Value::String(v.pattern.clone()),
            &format!("must be a valid regular expression, but isn't: {problem}"),
        ));
    }
}

/// A schema under a junctor: value validations only.
fn nested(
    v: &Props,
    skip_any_of: bool,
    skip_all_of_any_of: bool,
    lvl: Level,
    at: &str,
    errors: &mut Vec<FieldError>,
) {
    value_validation(v, skip_any_of, skip_all_of_any_of, lvl, at, errors);
    if let Some(item) = v.item_schema() {
        nested(item, false, false, lvl, &format!("{at}.items"), errors);
    }
    for (name, p) in v.properties() {
        nested(p, false, false, Level::Field, &format!("{at}.properties[{name}]"), errors);
    }
    let mut forbid = |field: &str, detail: &str| {
        errors.push(FieldError::forbidden(format!("{at}.{field}"), detail));
    };
    let empty = "must be empty to be structural";
    let undefined = "must be undefined to be structural";
    let not_false = "must be false to be structural";
    if !v.type_.is_empty() {
        forbid("type", empty);
    }
    if v.additional_properties.as_ref().is_some_and(|a| a.allows || a.schema.is_some()) {
        forbid("additionalProperties", undefined);
    }
    if v.default.is_some() {
        forbid("default", undefined);
    }
    if !v.title.is_empty() {
        forbid("title", empty);
    }
    if !v.description.is_empty() {
        forbid("description", empty);
    }
    if v.nullable {
        forbid("nullable", not_false);
    }
    if v.preserves_unknown() {
        forbid("x-kubernetes-preserve-unknown-fields", not_false);
    }
    if v.embedded_resource {
        forbid("x-kubernetes-embedded-resource", not_false);
    }
    if v.int_or_string {
        forbid("x-kubernetes-int-or-string", not_false);
    }
    if v.list_map_keys.as_ref().is_some_and(|k| !k.is_empty()) {
        forbid("x-kubernetes-list-map-keys", empty);
    }
    if v.list_type.is_some() {
        forbid("x-kubernetes-list-type", undefined);
    }
    if v.map_type.is_some() {
        forbid("x-kubernetes-map-type", undefined);
    }
    if v.validations.as_ref().is_some_and(|r| !r.is_empty()) {
        forbid("x-kubernetes-validations", empty);
    }
    if v.property("metadata").is_some() {
        forbid("properties[metadata]", "must not be specified in a nested context");
    }
}

/// `validateValueValidationCompleteness`: what a junctor names must exist in the structure.
fn vv_completeness(v: &Props, s: &Props, s_at: &str, v_at: &str, errors: &mut Vec<FieldError>) {
    if let Some(not) = &v.not {
        nested_completeness(not, Some(s), s_at, &format!("{v_at}.not"), errors);
    }
    for (field, list) in [("allOf", &v.all_of), ("anyOf", &v.any_of), ("oneOf", &v.one_of)] {
        for (i, sub) in list.iter().flatten().enumerate() {
            nested_completeness(sub, Some(s), s_at, &format!("{v_at}.{field}[{i}]"), errors);
        }
    }
}

fn nested_completeness(
    v: &Props,
    s: Option<&Props>,
    s_at: &str,
    v_at: &str,
    errors: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errors.push(FieldError::required(s_at, &format!("because it is defined in {v_at}")));
        return;
    };
    vv_completeness(v, s, s_at, v_at, errors);
    if let Some(item) = v.item_schema() {
        nested_completeness(
            item,
            s.item_schema(),
            &format!("{s_at}.items"),
            &format!("{v_at}.items"),
            errors,
        );
    }
    for (name, p) in v.properties() {
        let (s_field, v_field) =
            (format!("{s_at}.properties[{name}]"), format!("{v_at}.properties[{name}]"));
        match s.property(name) {
            Some(sp) => nested_completeness(p, Some(sp), &s_field, &v_field, errors),
            None => errors.push(FieldError::required(
                s_field,
                &format!("because it is defined in {v_field}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    /// A CRD as it reaches validation (defaulted: singular, listKind, conversion, storedVersions).
    fn crd(schema: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}],
                "conversion": {"strategy": "None"}
            },
            "status": {"storedVersions": ["v1"]}
        })
    }

    fn good_schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "default": 1},
                "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
            }},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 63}}}
        }})
    }

    #[test]
    fn defaults_must_hold_against_their_schema_and_be_pruned() {
        let at = "spec.validation.openAPIV3Schema.properties[spec].properties";
        let mut schema = good_schema();
        schema["properties"]["spec"]["properties"]["name"] =
            json!({"type": "string", "default": true});
        schema["properties"]["spec"]["properties"]["size"] =
            json!({"type": "integer", "minimum": 2, "default": 1});
        schema["properties"]["spec"]["properties"]["box"] = json!({"type": "object",
            "properties": {"w": {"type": "integer"}}, "default": {"w": "wide", "extra": 1}});
        assert_eq!(
            lines(custom_resource_definition(&crd(schema), None)),
            [
                format!(
                    r#"{at}[box].default: Invalid value: map[string]interface {{}}{{"extra":1, "w":"wide"}}: must not have unknown fields"#
                ),
                format!(
                    r#"{at}[box].default.w: Invalid value: "string": w in body must be of type integer: "string""#
                ),
                format!(
                    r#"{at}[name].default: Invalid value: "boolean":  in body must be of type string: "boolean""#
                ),
                format!(
                    r#"{at}[size].default: Invalid value: 1:  in body should be greater than or equal to 2"#
                ),
            ]
        );
        // Defaults under an embedded resource's metadata are ObjectMeta's, not checked here.
        let mut schema = good_schema();
        schema["properties"]["spec"]["properties"]["template"] = json!({"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"metadata": {"type": "object", "default": {"name": "x"}}}});
        assert_eq!(lines(custom_resource_definition(&crd(schema), None)), Vec::<String>::new());
    }

    #[test]
    fn patterns_must_compile_as_go_regular_expressions() {
        let mut schema = good_schema();
        schema["properties"]["spec"]["properties"]["name"] =
            json!({"type": "string", "pattern": "+"});
        assert_eq!(
            lines(custom_resource_definition(&crd(schema), None)),
            ["spec.validation.openAPIV3Schema.properties[spec].properties[name].pattern: Invalid value: \"+\": must be a valid regular expression, but isn't: error parsing regexp: missing argument to repetition operator: `+`"]
        );
    }

    #[test]
    fn a_good_crd_passes() {
        let mut obj = crd(good_schema());
        obj["spec"]["versions"][0]["subresources"] = json!({"status": {}, "scale": {
            "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}});
        obj["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]);
        assert_eq!(lines(custom_resource_definition(&obj, None)), Vec::<String>::new());
        assert!(custom_resource_definition(&obj, Some(&obj)).is_empty());
    }

    #[test]
    fn selectable_fields_name_scalar_fields_of_the_schema() {
        let mut obj = crd(good_schema());
        let fields =
            |paths: &[&str]| Value::Array(paths.iter().map(|p| json!({"jsonPath": p})).collect());
        obj["spec"]["versions"][0]["selectableFields"] =
            fields(&[".spec.replicas", ".spec.labels.team"]);
        assert_eq!(lines(custom_resource_definition(&obj, None)), Vec::<String>::new());
        obj["spec"]["versions"][0]["selectableFields"] = fields(&[
            ".spec.replicas",
            "",
            ".spec.nope",
            "spec.replicas",
            ".spec.ports[0]",
            ".spec.raw",
            ".metadata.name",
            ".spec.replicas",
        ]);
        let at = "spec.selectableFields";
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            vec![
                format!("{at}[1].jsonPath: Required value"),
                format!("{at}[2].jsonPath: Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field"),
                format!("{at}[3].jsonPath: Invalid value: \"spec.replicas\": is an invalid path: expected [ or . but got: spec"),
                format!("{at}[4].jsonPath: Invalid value: \".spec.ports[0]\": is an invalid path: array notation is not allowed"),
                format!("{at}[5].jsonPath: Invalid value: \".spec.raw\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."),
                format!("{at}[6].jsonPath: Invalid value: \".metadata.name\": must not point to fields in metadata"),
                format!("{at}[7].jsonPath: Duplicate value: \".spec.replicas\""),
            ]
        );
        // Nine distinct fields are one too many.
        let mut schema = good_schema();
        let many: Vec<String> = (0..9).map(|i| format!(".spec.f{i}")).collect();
        for i in 0..9 {
            schema["properties"]["spec"]["properties"][format!("f{i}")] = json!({"type": "string"});
        }
        let mut obj = crd(schema);
        let paths: Vec<&str> = many.iter().map(String::as_str).collect();
        obj["spec"]["versions"][0]["selectableFields"] = fields(&paths);
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            vec!["spec.selectableFields: Too many: 9: must have at most 8 items"]
        );
    }

    #[test]
    fn name_group_scope_and_names() {
        let mut obj = crd(good_schema());
        obj["metadata"]["name"] = json!("gadgets.example.com");
        obj["spec"]["scope"] = json!("Global");
        obj["spec"]["names"]["shortNames"] = json!(["w", "W_1"]);
        obj["spec"]["names"]["listKind"] = json!("Widget");
        obj["spec"]["names"]["categories"] = json!(["all", "-bad"]);
        let dns1035 = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            [
                "metadata.name: Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group".to_string(),
                "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"".to_string(),
                format!("spec.names.shortNames[1]: Invalid value: \"W_1\": {dns1035}"),
                "spec.names.listKind: Invalid value: \"Widget\": kind and listKind may not be the same".to_string(),
                format!("spec.names.categories[1]: Invalid value: \"-bad\": {dns1035}"),
            ]
        );
        let mut obj = crd(good_schema());
        obj["spec"]["group"] = json!("example");
        obj["metadata"]["name"] = json!("widgets.example");
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            ["spec.group: Invalid value: \"example\": should be a domain with at least one dot"]
        );
        obj["spec"]["names"]["kind"] = json!("");
        obj["spec"]["names"]["plural"] = json!("Widgets");
        obj["metadata"]["name"] = json!("Widgets.example");
        let errors = lines(custom_resource_definition(&obj, None));
        assert!(errors.contains(&"spec.names.kind: Required value".to_string()), "{errors:?}");
        assert!(
            errors.contains(&format!("spec.names.plural: Invalid value: \"Widgets\": {dns1035}"))
        );
    }

    #[test]
    fn versions_need_schemas_unique_names_and_one_storage() {
        let mut obj = crd(good_schema());
        obj["spec"]["versions"] = json!([{"name": "v1", "served": true, "storage": true}]);
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]
        );
        obj["spec"]["versions"] = json!([
            {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}},
            {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}}
        ]);
        let version = "apiextensions.CustomResourceDefinitionVersion{Name:\"v1\", Served:true, Storage:true, Deprecated:false, DeprecationWarning:(*string)(nil), Schema:(*apiextensions.CustomResourceValidation)(nil), Subresources:(*apiextensions.CustomResourceSubresources)(nil), AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), SelectableFields:[]apiextensions.SelectableField(nil)}";
        let shown =
            format!("[]apiextensions.CustomResourceDefinitionVersion{{{version}, {version}}}");
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            [
                format!("spec.versions: Invalid value: {shown}: must contain unique version names"),
                format!("spec.versions: Invalid value: {shown}: must have exactly one version marked as storage version"),
                // The first v1 takes the stored entry, so the second finds none (as upstream).
                "status.storedVersions: Invalid value: []string{\"v1\"}: must have the storage version v1".to_string(),
            ]
        );
        obj["spec"]["versions"] = json!([
            {"name": "V1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
        ]);
        obj["status"] = json!({});
        let errors = lines(custom_resource_definition(&obj, None));
        assert!(
            errors[0].starts_with("spec.versions[0].name: Invalid value: \"V1\": a DNS-1035 label")
        );
        assert!(errors[1].starts_with("spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{apiextensions.CustomResourceDefinitionVersion{Name:\"V1\", Served:true, Storage:false,"));
        assert!(errors[2].starts_with("spec.version: Invalid value: \"V1\": a DNS-1035 label"));
        assert_eq!(
            errors[3],
            "status.storedVersions: Invalid value: []string(nil): must have at least one stored version"
        );
        assert_eq!(errors.len(), 4);
    }

    #[test]
    fn shared_schemas_are_checked_at_spec_validation() {
        let obj =
            crd(json!({"properties": {"spec": {"properties": {"size": {"type": "integer"}}}}}));
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            [
                "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
                "spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root",
            ]
        );
        // Different schemas per version keep their own paths.
        let mut obj = crd(json!({"type": "object"}));
        obj["spec"]["versions"] = json!([
            {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}},
            {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "string"}}}
        ]);
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            ["spec.versions[1].schema.openAPIV3Schema.type: Invalid value: \"string\": must be object at the root"]
        );
    }

    #[test]
    fn structural_rules() {
        let obj = crd(json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
            "a": {"type": "string", "x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true},
            "b": {"type": "array"},
            "c": {"type": "string", "x-kubernetes-embedded-resource": true},
            "d": {"type": "object", "anyOf": [{"type": "string", "properties": {"x": {"description": "y"}}}]},
            "e": {"type": "object", "additionalProperties": {"type": "string"}, "properties": {"f": {"type": "string"}}}
        }}));
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            [
                "spec.validation.openAPIV3Schema.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
                "spec.validation.openAPIV3Schema.properties[b].items: Required value: must be specified",
                "spec.validation.openAPIV3Schema.properties[c].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
                "spec.validation.openAPIV3Schema.properties[c].type: Invalid value: \"string\": must be object if x-kubernetes-embedded-resource is true",
                "spec.validation.openAPIV3Schema.properties[d].anyOf[0].properties[x].description: Forbidden: must be empty to be structural",
                "spec.validation.openAPIV3Schema.properties[d].anyOf[0].type: Forbidden: must be empty to be structural",
                "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
                "spec.validation.openAPIV3Schema.properties[e].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
            ]
        );
        // A junctor naming a field the structure lacks.
        let obj = crd(json!({"type": "object", "properties": {"spec": {"type": "object"}},
            "anyOf": [{"properties": {"spec": {"properties": {"x": {"minimum": 1}}}}}, {"required": ["y"]}]}));
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            ["spec.validation.openAPIV3Schema.properties[spec].properties[x]: Required value: because it is defined in spec.validation.openAPIV3Schema.anyOf[0].properties[spec].properties[x]"]
        );
    }

    #[test]
    fn openapi_rules() {
        let obj = crd(json!({"type": "object", "properties": {
            "metadata": {"type": "object", "default": {}},
            "a": {"type": "null"},
            "b": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "x-kubernetes-list-type": "set"},
            "c": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"k": {"type": "object"}}}, "x-kubernetes-list-map-keys": ["k", "z"]},
            "d": {"type": "object", "x-kubernetes-map-type": "other", "$ref": "#/x"},
            "e": {"type": "string", "x-kubernetes-validations": [{"rule": " "}, {"rule": "self.x\n> 1"}, {"rule": "true", "reason": "Bad"}]}
        }}));
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            [
                "spec.validation.openAPIV3Schema.properties[a].type: Unsupported value: \"null\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
                "spec.validation.openAPIV3Schema.properties[a].type: Forbidden: type cannot be set to null, use nullable as an alternative",
                "spec.validation.openAPIV3Schema.properties[b].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
                "spec.validation.openAPIV3Schema.properties[c].items.properties[k].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map",
                "spec.validation.openAPIV3Schema.properties[c].x-kubernetes-list-map-keys: Invalid value: []string{\"k\", \"z\"}: entries must all be names of item properties",
                "spec.validation.openAPIV3Schema.properties[c].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                "spec.validation.openAPIV3Schema.properties[d].$ref: Forbidden: $ref is not supported",
                "spec.validation.openAPIV3Schema.properties[d].x-kubernetes-map-type: Unsupported value: \"other\": supported values: \"atomic\", \"granular\"",
                "spec.validation.openAPIV3Schema.properties[e].x-kubernetes-validations[0].rule: Required value: rule is not specified",
                "spec.validation.openAPIV3Schema.properties[e].x-kubernetes-validations[1].message: Required value: message must be specified if rule contains line breaks",
                "spec.validation.openAPIV3Schema.properties[e].x-kubernetes-validations[2].reason: Unsupported value: \"Bad\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"",
                "spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata",
            ]
        );
    }

    #[test]
    fn status_subresource_limits_the_root() {
        let mut obj = crd(
            json!({"type": "object", "nullable": true, "properties": {"spec": {"type": "object"}}}),
        );
        obj["spec"]["versions"][0]["subresources"] = json!({"status": {}});
        let errors = lines(custom_resource_definition(&obj, None));
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("spec.validation.openAPIV3Schema: Invalid value: apiextensions.JSONSchemaProps{ID:\"\", Schema:\"\", Ref:(*string)(nil), Description:\"\", Type:\"object\", Nullable:true,"));
        assert!(errors[0].ends_with("XValidations:apiextensions.ValidationRules(nil)}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"));
        assert!(errors[0].contains("Properties:map[string]apiextensions.JSONSchemaProps{\"spec\":apiextensions.JSONSchemaProps{ID:\"\""));
        assert_eq!(errors[1], "spec.validation.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root");
        let mut obj = crd(json!({"type": "array", "items": {"type": "string"}}));
        obj["spec"]["versions"][0]["subresources"] = json!({"status": {}});
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            [
                "spec.validation.openAPIV3Schema.type: Invalid value: \"array\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                "spec.validation.openAPIV3Schema.type: Invalid value: \"array\": must be object at the root",
            ]
        );
    }

    #[test]
    fn subresources_columns_and_deprecation() {
        let mut obj = crd(json!({"type": "object"}));
        let v = &mut obj["spec"]["versions"][0];
        v["subresources"] = json!({"scale": {"specReplicasPath": "spec.replicas", "statusReplicasPath": ".spec.replicas", "labelSelectorPath": ".metadata.x"}});
        v["additionalPrinterColumns"] = json!([{"type": "time", "format": "uuid", "jsonPath": ""}]);
        v["deprecationWarning"] = json!("old");
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            [
                "spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for deprecated versions",
                "spec.subresources.scale.specReplicasPath: Invalid value: \"spec.replicas\": must be a simple json path starting with .",
                "spec.subresources.scale.statusReplicasPath: Invalid value: \".spec.replicas\": should be a json path under .status",
                "spec.subresources.scale.labelSelectorPath: Invalid value: \".metadata.x\": should be a json path under either .spec or .status",
                "spec.additionalPrinterColumns[0].name: Required value",
                "spec.additionalPrinterColumns[0].type: Invalid value: \"time\": must be one of boolean,date,integer,number,string",
                "spec.additionalPrinterColumns[0].format: Invalid value: \"uuid\": must be one of byte,date,date-time,double,float,int32,int64,password",
                "spec.additionalPrinterColumns[0].JSONPath: Required value",
            ]
        );
    }

    #[test]
    fn conversion_webhooks() {
        let mut obj = crd(json!({"type": "object"}));
        obj["spec"]["conversion"] = json!({"strategy": "Webhook"});
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            [
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value",
            ]
        );
        obj["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "http://user@conv.example.com/x?y=1#z"},
            "conversionReviewVersions": ["v2", "v2"]}});
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            [
                "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"user\": user information is not permitted in the URL",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"z\": fragments are not permitted in the URL",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"y=1\": query parameters are not permitted in the URL",
                "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version",
                "spec.conversion.conversionReviewVersions: Invalid value: []string{\"v2\", \"v2\"}: must include at least one of v1, v1beta1",
            ]
        );
        obj["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"namespace": "ns", "name": "", "path": "/a//B", "port": 0}},
            "conversionReviewVersions": ["v1"]}});
        let errors = lines(custom_resource_definition(&obj, None));
        // Upstream passes the name where its check takes the namespace.
        assert_eq!(errors[0], "spec.conversion.webhookClientConfig.service.namespace: Required value: service namespace is required");
        assert_eq!(errors[1], "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive");
        assert_eq!(errors[2], "spec.conversion.webhookClientConfig.service.path: Invalid value: \"/a//B\": segment[1] may not be empty");
        assert!(errors[3].starts_with("spec.conversion.webhookClientConfig.service.path: Invalid value: \"/a//B\": segment[2]: a lowercase RFC 1123 subdomain"));
        obj["spec"]["conversion"] =
            json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}});
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            ["spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"]
        );
    }

    #[test]
    fn updates_keep_group_plural_and_stored_versions() {
        let old = crd(json!({"type": "object"}));
        let mut new = old.clone();
        new["spec"]["group"] = json!("example.org");
        new["spec"]["names"]["plural"] = json!("gadgets");
        new["spec"]["scope"] = json!("Cluster");
        assert_eq!(
            lines(custom_resource_definition(&new, Some(&old))),
            [
                "spec.group: Invalid value: \"example.org\": field is immutable",
                "spec.names.plural: Invalid value: \"gadgets\": field is immutable",
            ]
        );
        let mut established = old.clone();
        established["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
        new["spec"]["group"] = json!("example.com");
        new["spec"]["names"]["plural"] = json!("widgets");
        assert_eq!(
            lines(custom_resource_definition(&new, Some(&established))),
            ["spec.scope: Invalid value: \"Cluster\": field is immutable"]
        );
        // Dropping a version still listed as stored.
        let mut new = old.clone();
        new["spec"]["versions"][0]["name"] = json!("v2");
        new["status"]["storedVersions"] = json!(["v1"]);
        assert_eq!(
            lines(custom_resource_definition(&new, Some(&old))),
            ["status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"]
        );
    }

    #[test]
    fn protected_groups_need_approval() {
        let mut obj = crd(json!({"type": "object"}));
        obj["spec"]["group"] = json!("widgets.k8s.io");
        obj["metadata"]["name"] = json!("widgets.widgets.k8s.io");
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            ["metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"]
        );
        obj["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "yes"});
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            ["metadata.annotations[api-approved.kubernetes.io]: Invalid value: \"yes\": protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"]
        );
        obj["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/enhancements/pull/1111"});
        assert!(custom_resource_definition(&obj, None).is_empty());
        obj["metadata"]["annotations"] =
            json!({"api-approved.kubernetes.io": "unapproved, testing"});
        assert!(custom_resource_definition(&obj, None).is_empty());
    }

    #[test]
    fn preserve_unknown_fields_true_is_refused() {
        let mut obj =
            crd(json!({"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}));
        obj["spec"]["preserveUnknownFields"] = json!(true);
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            [
                "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema",
                "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
            ]
        );
    }

    #[test]
    fn schema_uri_and_missing_versions() {
        // `$schema` is refused only by NewStructural, reported when nothing else is wrong.
        let obj =
            crd(json!({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"}));
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            ["spec.validation.openAPIV3Schema: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported"]
        );
        let mut obj = crd(json!({"type": "object"}));
        obj["spec"].as_object_mut().unwrap().remove("versions");
        obj["status"] = json!({});
        assert_eq!(
            lines(custom_resource_definition(&obj, None)),
            [
                "spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion(nil): must have exactly one version marked as storage version",
                "status.storedVersions: Invalid value: []string(nil): must have at least one stored version",
            ]
        );
    }
}
