//! Kubernetes' format library: named string formats and their validation.
//! `format.named(name)` is the format of that name (an optional: none for an unknown name),
//! `format.<name>()` the same format directly, and `<format>.validate(s)` none when `s` is
//! valid, else the list of upstream's messages. The names: `dns1123Label`,
//! `dns1123Subdomain`, `dns1035Label`, `qualifiedName`, `dns1123LabelPrefix`,
//! `dns1123SubdomainPrefix`, `dns1035LabelPrefix`, `labelValue`, `uri`, `uuid`, `byte`,
//! `date`, `datetime`.

use std::sync::Arc;

use base64::Engine as _;
use cel::common::types::STRING_TYPE;
use cel::common::value::CowVal;
use cel::objects::{Opaque, OptionalValue};
use cel::{DeclarationError, Env, Value};
use rkube_apis::validation::{
    label_value_problems, name_problems, qualified_name_problems, NameRule,
};

use super::{ok, ok_opaque, opaque, opaque_type, string, Out};

/// The formats, by name.
pub const NAMES: &[&str] = &[
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

/// A named format as a CEL value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedFormat(&'static str);

impl Opaque for NamedFormat {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.NamedFormat"
    }
}

/// Upstream's `maskTrailingDash`: a prefix may end in `-` (a generated suffix follows).
fn mask_trailing_dash(s: &str) -> String {
    if s.len() > 1 && s.ends_with('-') {
        format!("{}a", &s[..s.len() - 2])
    } else {
        s.to_string()
    }
}

impl NamedFormat {
    /// The problems with `s` in this format, as upstream words them.
    pub fn problems(&self, s: &str) -> Vec<String> {
        let one = |ok: bool, message: &str| {
            if ok {
                Vec::new()
            } else {
                vec![message.to_string()]
            }
        };
        match self.0 {
            "dns1123Label" => name_problems(s, NameRule::Label),
            "dns1123Subdomain" => name_problems(s, NameRule::Subdomain),
            "dns1035Label" => name_problems(s, NameRule::Dns1035Label),
            "dns1123LabelPrefix" => name_problems(&mask_trailing_dash(s), NameRule::Label),
            "dns1123SubdomainPrefix" => name_problems(&mask_trailing_dash(s), NameRule::Subdomain),
            "dns1035LabelPrefix" => name_problems(&mask_trailing_dash(s), NameRule::Dns1035Label),
            "qualifiedName" => qualified_name_problems(s),
            "labelValue" => label_value_problems(s),
            "uri" => super::urls::parse(s).err().into_iter().collect(),
            "uuid" => one(is_uuid(s), "does not match the UUID format"),
            "byte" => {
                one(base64::engine::general_purpose::STANDARD.decode(s).is_ok(), "invalid base64")
            }
            "date" => one(
                s.len() == 10 && chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok(),
                "invalid date",
            ),
            "datetime" => one(chrono::DateTime::parse_from_rfc3339(s).is_ok(), "invalid datetime"),
            _ => Vec::new(),
        }
    }
}

/// strfmt's UUID: 32 hexadecimal digits in groups of 8-4-4-4-12, the dashes optional.
fn is_uuid(s: &str) -> bool {
    let groups = [8, 4, 4, 4, 12];
    let mut rest = s;
    for (i, len) in groups.iter().enumerate() {
        if i > 0 {
            rest = rest.strip_prefix('-').unwrap_or(rest);
        }
        let Some(group) = rest.get(..*len) else { return false };
        if !group.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
        rest = &rest[*len..];
    }
    rest.is_empty()
}

macro_rules! constant {
    ($env:expr, $name:literal) => {
        $env.add_overload(concat!("format.", $name), concat!("format-", $name), vec![], |_| {
            ok_opaque(NamedFormat($name))
        })?
    };
}

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], named)?;
    constant!(env, "dns1123Label");
    constant!(env, "dns1123Subdomain");
    constant!(env, "dns1035Label");
    constant!(env, "qualifiedName");
    constant!(env, "dns1123LabelPrefix");
    constant!(env, "dns1123SubdomainPrefix");
    constant!(env, "dns1035LabelPrefix");
    constant!(env, "labelValue");
    constant!(env, "uri");
    constant!(env, "uuid");
    constant!(env, "byte");
    constant!(env, "date");
    constant!(env, "datetime");
    env.add_member_overload(
        "validate",
        "format-validate",
        opaque_type("kubernetes.NamedFormat"),
        vec![STRING_TYPE],
        validate,
    )?;
    Ok(())
}

fn optional(v: Option<Value>) -> Value {
    let o = match v {
        Some(v) => OptionalValue::of(v),
        None => OptionalValue::none(),
    };
    Value::Opaque(Arc::new(o))
}

fn named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let name = string(&args[0])?;
    let format =
        NAMES.iter().find(|n| **n == name).map(|n| Value::Opaque(Arc::new(NamedFormat(n))));
    ok(optional(format))
}

fn validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let format = opaque::<NamedFormat>(&args[0])?;
    let problems = format.problems(string(&args[1])?);
    if problems.is_empty() {
        return ok(optional(None));
    }
    let list = problems.into_iter().map(|p| Value::String(Arc::new(p))).collect();
    ok(optional(Some(Value::List(Arc::new(list)))))
}
