//! The table of a custom resource: a version's `additionalPrinterColumns` after the name, as
//! apiextensions-apiserver's table convertor builds it (v1.33).
//!
//! - Without columns, the table is the name and an `Age` column of type `date` read from
//!   `.metadata.creationTimestamp`; with columns, the name and exactly those (no age unless
//!   one is given).
//! - A column without a description gets `Custom resource definition column (in JSONPath
//!   format): <path>`.
//! - A cell is the first value the column's path reaches ([`JsonPath`], missing keys
//!   allowed; a union, slice, wildcard or `..` may reach several, and only the first is
//!   shown, as upstream); none (a JSON `null`, which kubectl prints `<none>`) when the path reaches
//!   nothing or a value of another type. `string` columns print any value as `jsonpath`
//!   would (numbers as Go prints them, objects and lists as compact JSON); `integer` takes
//!   whole numbers (and truncates others), `number` any number, `boolean` booleans; `date`
//!   turns an RFC 3339 time into an age (`5m`), `<invalid>` when it does not parse.
//! - A column whose path upstream cannot parse ends the table there (upstream logs it and
//!   keeps the columns before it); definitions are validated on create, so only old or
//!   unusual paths get there.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::json_path::JsonPath;
use crate::resources::intern;
use crate::tables::{self, Column};

/// One version's columns and how each reads its cell.
#[derive(Debug, Clone)]
pub struct PrinterColumns {
    /// The name column first, then the definition's.
    columns: Vec<Column>,
    /// The path of each column after the name.
    paths: Vec<JsonPath>,
}

impl PrinterColumns {
    /// The table of a version (`spec.versions[i]`).
    pub fn of(version: &Value) -> PrinterColumns {
        let given = version["additionalPrinterColumns"].as_array().filter(|c| !c.is_empty());
        let default_age = serde_json::json!([{
            "name": "Age",
            "type": "date",
            "description": tables::AGE.description,
            "jsonPath": ".metadata.creationTimestamp",
        }]);
        let definitions = given.unwrap_or_else(|| default_age.as_array().expect("a list"));
        let mut columns = vec![tables::NAME];
        let mut paths = Vec::new();
        for c in definitions {
            let str_of = |field: &str| c[field].as_str().unwrap_or("");
            let json_path = str_of("jsonPath");
            let Ok(path) = JsonPath::parse(json_path) else { break };
            let description = match str_of("description") {
                "" => {
                    format!("Custom resource definition column (in JSONPath format): {json_path}")
                }
                d => d.to_string(),
            };
            columns.push(Column {
                name: intern(str_of("name")),
                kind: intern(str_of("type")),
                format: intern(str_of("format")),
                description: intern(&description),
                priority: c["priority"].as_i64().unwrap_or(0).clamp(0, i32::MAX as i64) as i32,
            });
            paths.push(path);
        }
        PrinterColumns { columns, paths }
    }

    pub fn columns(&self) -> Vec<Column> {
        self.columns.clone()
    }

    /// The row of `obj`: its name, then each column's cell.
    pub fn cells(&self, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
        let mut cells = Vec::with_capacity(self.columns.len());
        cells.push(tables::name(obj));
        for (column, path) in self.columns[1..].iter().zip(&self.paths) {
            let cell = match path.first(obj) {
                Some(value) => cell(column.kind, &value, now),
                None => Value::Null,
            };
            cells.push(cell);
        }
        cells
    }
}

/// A column's cell for the value its path reached.
fn cell(kind: &str, value: &Value, now: DateTime<Utc>) -> Value {
    match (kind, value) {
        (_, Value::Null) => Value::Null,
        ("string", Value::String(_)) => value.clone(),
        ("string", Value::Number(n)) => Value::String(go_number(n)),
        ("string", Value::Bool(b)) => Value::String(b.to_string()),
        ("string", _) => Value::String(sorted(value).to_string()),
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => i.into(),
            None => (n.as_f64().unwrap_or(0.0).trunc() as i64).into(),
        },
        // Go writes a whole float64 without a fraction.
        ("number", Value::Number(n)) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => (f as i64).into(),
            _ => value.clone(),
        },
        ("boolean", Value::Bool(_)) => value.clone(),
        ("date", Value::String(s)) => match DateTime::parse_from_rfc3339(s) {
            Ok(t) => {
                let t = t.with_timezone(&Utc);
                let zero = tables::time(&Value::String(s.clone()), &[]).is_none();
                tables::since((!zero).then_some(t), now).into()
            }
            Err(_) => "<invalid>".into(),
        },
        _ => Value::Null,
    }
}

/// A number as Go's `fmt.Print` writes the `int64` or `float64` a JSON number decodes to:
/// whole numbers in full, others in the shortest form, with an exponent (`1e-05`,
/// `1.5e+06`) when it is below -4 or 6 and above, as `%v` (`%g`) does.
fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let scientific = format!("{f:e}");
    let (mantissa, exp) = scientific.split_once('e').expect("an exponent");
    let exp: i32 = exp.parse().expect("a number");
    if (-4..6).contains(&exp) {
        f.to_string()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// `value` with the members of its objects in key order, as Go's `json.Marshal` writes a map.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries.into_iter().map(|(k, v)| (k.clone(), sorted(v))).collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        _ => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 2, 3, 10, 0).unwrap()
    }

    #[test]
    fn without_columns_the_table_is_name_and_age() {
        let table = PrinterColumns::of(&json!({"name": "v1"}));
        let columns = table.columns();
        let names: Vec<(&str, &str)> = columns.iter().map(|c| (c.name, c.kind)).collect();
        assert_eq!(names, vec![("Name", "string"), ("Age", "date")]);
        assert_eq!(columns[0].format, "name");
        let obj = json!({"metadata": {"name": "w", "creationTimestamp": "2026-01-02T03:05:00Z"}});
        assert_eq!(table.cells(&obj, now()), vec![json!("w"), json!("5m")]);
    }

    #[test]
    fn given_columns_replace_the_age() {
        let version = json!({"additionalPrinterColumns": [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Color", "type": "string", "jsonPath": ".spec.color", "description": "The colour", "priority": 1},
            {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
            {"name": "Ratio", "type": "number", "format": "double", "jsonPath": ".spec.ratio"},
            {"name": "On", "type": "boolean", "jsonPath": ".spec.on"},
            {"name": "Seen", "type": "date", "jsonPath": ".status.seen"},
            {"name": "Labels", "type": "string", "jsonPath": ".metadata.labels"},
        ]});
        let table = PrinterColumns::of(&version);
        let columns = table.columns();
        let names: Vec<&str> = columns.iter().map(|c| c.name).collect();
        assert_eq!(names, ["Name", "Size", "Color", "Ready", "Ratio", "On", "Seen", "Labels"]);
        assert_eq!(
            columns[1].description,
            "Custom resource definition column (in JSONPath format): .spec.size"
        );
        assert_eq!((columns[2].description, columns[2].priority), ("The colour", 1));
        assert_eq!(columns[4].format, "double");
        let obj = json!({
            "metadata": {"name": "w", "labels": {"b": "2", "a": "1"}},
            "spec": {"size": 3.7, "color": "blue", "ratio": 2.0, "on": "yes"},
            "status": {"seen": "2026-01-02T01:10:00Z", "conditions": [{"type": "Ready", "status": "True"}]},
        });
        assert_eq!(
            table.cells(&obj, now()),
            vec![
                json!("w"),
                json!(3),
                json!("blue"),
                json!("True"),
                json!(2),
                Value::Null,
                json!("120m"),
                json!(r#"{"a":"1","b":"2"}"#)
            ]
        );
        // Missing values are null cells (kubectl prints <none>), bad dates <invalid>.
        let bare = json!({"metadata": {"name": "x"}, "status": {"seen": "yesterday"}});
        let cells = table.cells(&bare, now());
        assert_eq!(cells[1..6], [Value::Null, Value::Null, Value::Null, Value::Null, Value::Null]);
        assert_eq!(cells[6], json!("<invalid>"));
    }

    #[test]
    fn string_columns_print_values_as_go_does() {
        let n = |v: Value| cell("string", &v, now());
        assert_eq!(n(json!(3)), json!("3"));
        assert_eq!(n(json!(1.5)), json!("1.5"));
        assert_eq!(n(json!(0.00001)), json!("1e-05"));
        assert_eq!(n(json!(1234567.5)), json!("1.2345675e+06"));
        assert_eq!(n(json!(123456.5)), json!("123456.5"));
        assert_eq!(n(json!(true)), json!("true"));
        assert_eq!(n(json!(["a", 1])), json!(r#"["a",1]"#));
        assert_eq!(cell("date", &json!("0001-01-01T00:00:00Z"), now()), json!("<unknown>"));
    }

    #[test]
    fn a_path_upstream_cannot_parse_ends_the_table() {
        let version = json!({"additionalPrinterColumns": [
            {"name": "A", "type": "string", "jsonPath": ".spec.a"},
            {"name": "B", "type": "string", "jsonPath": ".spec[a]"},
            {"name": "C", "type": "string", "jsonPath": ".spec.c"},
        ]});
        let names: Vec<&str> =
            PrinterColumns::of(&version).columns().iter().map(|c| c.name).collect();
        assert_eq!(names, ["Name", "A"]);
    }
}
