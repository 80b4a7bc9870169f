//! The schema model: a CustomResourceDefinition's `openAPIV3Schema` read once into a typed
//! tree (upstream's internal `JSONSchemaProps`). The definition's validation checks it, and
//! the custom resources it serves are validated, pruned and defaulted by it.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::validation::values::str_of;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Props {
    pub id: String,
    pub schema_uri: String,
    pub reference: Option<String>,
    pub description: String,
    pub type_: String,
    pub nullable: bool,
    pub format: String,
    pub title: String,
    pub default: Option<Value>,
    pub maximum: Option<Value>,
    pub exclusive_maximum: bool,
    pub minimum: Option<Value>,
    pub exclusive_minimum: bool,
    pub max_length: Option<Value>,
    pub min_length: Option<Value>,
    pub pattern: String,
    pub max_items: Option<Value>,
    pub min_items: Option<Value>,
    pub unique_items: bool,
    pub multiple_of: Option<Value>,
    pub enumeration: Option<Vec<Value>>,
    pub max_properties: Option<Value>,
    pub min_properties: Option<Value>,
    pub required: Option<Vec<String>>,
    pub items: Option<Items>,
    pub all_of: Option<Vec<Props>>,
    pub one_of: Option<Vec<Props>>,
    pub any_of: Option<Vec<Props>>,
    pub not: Option<Box<Props>>,
    pub properties: Option<BTreeMap<String, Props>>,
    pub additional_properties: Option<OrBool>,
    pub pattern_properties: Option<BTreeMap<String, Props>>,
    pub dependencies: Option<BTreeMap<String, Dependency>>,
    pub additional_items: Option<OrBool>,
    pub definitions: Option<BTreeMap<String, Props>>,
    pub external_docs: Option<(String, String)>,
    pub example: Option<Value>,
    pub preserve_unknown: Option<bool>,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    pub list_map_keys: Option<Vec<String>>,
    pub list_type: Option<String>,
    pub map_type: Option<String>,
    pub validations: Option<Vec<Rule>>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Items {
    Schema(Box<Props>),
    Array(Vec<Props>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct OrBool {
    pub allows: bool,
    pub schema: Option<Box<Props>>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Dependency {
    Schema(Box<Props>),
    Property(Vec<String>),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rule {
    pub rule: String,
    pub message: String,
    pub message_expression: String,
    pub reason: Option<String>,
    pub field_path: String,
    pub optional_old_self: Option<bool>,
}

impl Rule {
    /// One `x-kubernetes-validations` entry.
    pub fn parse(r: &Value) -> Rule {
        Rule {
            rule: str_of(&r["rule"]).to_string(),
            message: str_of(&r["message"]).to_string(),
            message_expression: str_of(&r["messageExpression"]).to_string(),
            reason: string_opt(&r["reason"]),
            field_path: str_of(&r["fieldPath"]).to_string(),
            optional_old_self: r["optionalOldSelf"].as_bool(),
        }
    }
}

fn set(v: &Value) -> Option<Value> {
    (!v.is_null()).then(|| v.clone())
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array().map(|a| a.iter().map(|s| str_of(s).to_string()).collect())
}

fn schema_list(v: &Value) -> Option<Vec<Props>> {
    v.as_array().map(|a| a.iter().map(Props::parse).collect())
}

fn schema_map(v: &Value) -> Option<BTreeMap<String, Props>> {
    v.as_object().map(|m| m.iter().map(|(k, v)| (k.clone(), Props::parse(v))).collect())
}

fn or_bool(v: &Value) -> Option<OrBool> {
    match v {
        Value::Bool(b) => Some(OrBool { allows: *b, schema: None }),
        Value::Object(_) => Some(OrBool { allows: true, schema: Some(Box::new(Props::parse(v))) }),
        _ => None,
    }
}

fn string_opt(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

impl Props {
    pub fn parse(v: &Value) -> Props {
        let flag = |k: &str| v[k] == true;
        let string = |k: &str| str_of(&v[k]).to_string();
        Props {
            id: string("id"),
            schema_uri: string("$schema"),
            reference: string_opt(&v["$ref"]),
            description: string("description"),
            type_: string("type"),
            nullable: flag("nullable"),
            format: string("format"),
            title: string("title"),
            default: set(&v["default"]),
            maximum: set(&v["maximum"]),
            exclusive_maximum: flag("exclusiveMaximum"),
            minimum: set(&v["minimum"]),
            exclusive_minimum: flag("exclusiveMinimum"),
            max_length: set(&v["maxLength"]),
            min_length: set(&v["minLength"]),
            pattern: string("pattern"),
            max_items: set(&v["maxItems"]),
            min_items: set(&v["minItems"]),
            unique_items: flag("uniqueItems"),
            multiple_of: set(&v["multipleOf"]),
            enumeration: v["enum"].as_array().cloned(),
            max_properties: set(&v["maxProperties"]),
            min_properties: set(&v["minProperties"]),
            required: strings(&v["required"]),
            items: match &v["items"] {
                Value::Array(a) => Some(Items::Array(a.iter().map(Props::parse).collect())),
                Value::Object(_) => Some(Items::Schema(Box::new(Props::parse(&v["items"])))),
                _ => None,
            },
            all_of: schema_list(&v["allOf"]),
            one_of: schema_list(&v["oneOf"]),
            any_of: schema_list(&v["anyOf"]),
            not: v["not"].is_object().then(|| Box::new(Props::parse(&v["not"]))),
            properties: schema_map(&v["properties"]),
            additional_properties: or_bool(&v["additionalProperties"]),
            pattern_properties: schema_map(&v["patternProperties"]),
            dependencies: v["dependencies"].as_object().map(|m| {
                m.iter()
                    .map(|(k, d)| {
                        let dep = match d {
                            Value::Array(_) => Dependency::Property(strings(d).unwrap_or_default()),
                            _ => Dependency::Schema(Box::new(Props::parse(d))),
                        };
                        (k.clone(), dep)
                    })
                    .collect()
            }),
            additional_items: or_bool(&v["additionalItems"]),
            definitions: schema_map(&v["definitions"]),
            external_docs: v["externalDocs"].is_object().then(|| {
                let d = &v["externalDocs"];
                (str_of(&d["description"]).to_string(), str_of(&d["url"]).to_string())
            }),
            example: set(&v["example"]),
            preserve_unknown: v["x-kubernetes-preserve-unknown-fields"].as_bool(),
            embedded_resource: flag("x-kubernetes-embedded-resource"),
            int_or_string: flag("x-kubernetes-int-or-string"),
            list_map_keys: strings(&v["x-kubernetes-list-map-keys"]),
            list_type: string_opt(&v["x-kubernetes-list-type"]),
            map_type: string_opt(&v["x-kubernetes-map-type"]),
            validations: v["x-kubernetes-validations"]
                .as_array()
                .map(|a| a.iter().map(Rule::parse).collect()),
        }
    }

    pub fn item_schema(&self) -> Option<&Props> {
        match &self.items {
            Some(Items::Schema(s)) => Some(s),
            _ => None,
        }
    }

    pub fn property(&self, name: &str) -> Option<&Props> {
        self.properties.as_ref().and_then(|p| p.get(name))
    }

    pub fn properties(&self) -> impl Iterator<Item = (&String, &Props)> {
        self.properties.iter().flatten()
    }

    pub fn has_properties(&self) -> bool {
        self.properties.as_ref().is_some_and(|p| !p.is_empty())
    }

    pub fn preserves_unknown(&self) -> bool {
        self.preserve_unknown == Some(true)
    }

    /// The `JSONSchemaProps` fields in declaration order, with whether each is set (not Go's
    /// zero value).
    pub fn fields_set(&self) -> [(&'static str, bool); 44] {
        [
            ("ID", !self.id.is_empty()),
            ("Schema", !self.schema_uri.is_empty()),
            ("Ref", self.reference.is_some()),
            ("Description", !self.description.is_empty()),
            ("Type", !self.type_.is_empty()),
            ("Nullable", self.nullable),
            ("Format", !self.format.is_empty()),
            ("Title", !self.title.is_empty()),
            ("Default", self.default.is_some()),
            ("Maximum", self.maximum.is_some()),
            ("ExclusiveMaximum", self.exclusive_maximum),
            ("Minimum", self.minimum.is_some()),
            ("ExclusiveMinimum", self.exclusive_minimum),
            ("MaxLength", self.max_length.is_some()),
            ("MinLength", self.min_length.is_some()),
            ("Pattern", !self.pattern.is_empty()),
            ("MaxItems", self.max_items.is_some()),
            ("MinItems", self.min_items.is_some()),
            ("UniqueItems", self.unique_items),
            ("MultipleOf", self.multiple_of.is_some()),
            ("Enum", self.enumeration.is_some()),
            ("MaxProperties", self.max_properties.is_some()),
            ("MinProperties", self.min_properties.is_some()),
            ("Required", self.required.is_some()),
            ("Items", self.items.is_some()),
            ("AllOf", self.all_of.is_some()),
            ("OneOf", self.one_of.is_some()),
            ("AnyOf", self.any_of.is_some()),
            ("Not", self.not.is_some()),
            ("Properties", self.properties.is_some()),
            ("AdditionalProperties", self.additional_properties.is_some()),
            ("PatternProperties", self.pattern_properties.is_some()),
            ("Dependencies", self.dependencies.is_some()),
            ("AdditionalItems", self.additional_items.is_some()),
            ("Definitions", self.definitions.is_some()),
            ("ExternalDocs", self.external_docs.is_some()),
            ("Example", self.example.is_some()),
            ("XPreserveUnknownFields", self.preserve_unknown.is_some()),
            ("XEmbeddedResource", self.embedded_resource),
            ("XIntOrString", self.int_or_string),
            ("XListMapKeys", self.list_map_keys.is_some()),
            ("XListType", self.list_type.is_some()),
            ("XMapType", self.map_type.is_some()),
            ("XValidations", self.validations.is_some()),
        ]
    }

    /// Every schema directly below this one (`SchemaHas`'s walk).
    pub fn children(&self) -> Vec<&Props> {
        let mut out: Vec<&Props> = Vec::new();
        match &self.items {
            Some(Items::Schema(s)) => out.push(s),
            Some(Items::Array(list)) => out.extend(list),
            None => {}
        }
        for list in [&self.all_of, &self.any_of, &self.one_of].into_iter().flatten() {
            out.extend(list);
        }
        out.extend(self.not.as_deref());
        for map in
            [&self.properties, &self.pattern_properties, &self.definitions].into_iter().flatten()
        {
            out.extend(map.values());
        }
        for or in [&self.additional_properties, &self.additional_items].into_iter().flatten() {
            out.extend(or.schema.as_deref());
        }
        for d in self.dependencies.iter().flat_map(BTreeMap::values) {
            if let Dependency::Schema(s) = d {
                out.push(s);
            }
        }
        out
    }
}
