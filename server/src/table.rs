//! `meta.k8s.io/v1 Table` responses: the columns of `rkube_apis::tables`, one row per object,
//! each row carrying the object's metadata (or the object, with `includeObject=Object`).

use rkube_apis::resources::ResourceInfo;
use rkube_apis::tables;
use serde_json::{json, Value};

/// What each row carries besides its cells (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(value: Option<&str>) -> IncludeObject {
        match value {
            Some("None") => IncludeObject::None,
            Some("Object") => IncludeObject::Object,
            _ => IncludeObject::Metadata,
        }
    }
}

pub fn column_definitions(info: &ResourceInfo) -> Value {
    let columns: Vec<Value> = tables::columns(info)
        .into_iter()
        .map(|c| {
            json!({
                "name": c.name,
                "type": c.kind,
                "format": c.format,
                "description": c.description,
                "priority": c.priority,
            })
        })
        .collect();
    Value::Array(columns)
}

pub fn row(
    info: &ResourceInfo,
    obj: &Value,
    include: IncludeObject,
    now: chrono::DateTime<chrono::Utc>,
) -> Value {
    row_of(Value::Array(tables::cells(info, obj, now)), obj, include)
}

/// A Table row with these cells for `obj`, which it carries as `include` says.
pub fn row_of(cells: Value, obj: &Value, include: IncludeObject) -> Value {
    let mut row = json!({"cells": cells});
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            row["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"].clone(),
            });
        }
        IncludeObject::Object => row["object"] = obj.clone(),
    }
    row
}

/// A Table of `objects`. `headers` false leaves out the column definitions (later events of a
/// watch).
#[allow(clippy::too_many_arguments)]
pub fn table(
    info: &ResourceInfo,
    objects: &[Value],
    include: IncludeObject,
    v1beta1: bool,
    headers: bool,
    resource_version: Option<String>,
    continue_token: Option<String>,
    remaining: Option<i64>,
) -> Value {
    let now = chrono::Utc::now();
    let mut metadata = json!({});
    if let Some(rv) = resource_version {
        metadata["resourceVersion"] = json!(rv);
    }
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(remaining) = remaining {
        metadata["remainingItemCount"] = json!(remaining);
    }
    let rows: Vec<Value> = objects.iter().map(|o| row(info, o, include, now)).collect();
    json!({
        "kind": "Table",
        "apiVersion": if v1beta1 { "meta.k8s.io/v1beta1" } else { "meta.k8s.io/v1" },
        "metadata": metadata,
        "columnDefinitions": if headers { column_definitions(info) } else { json!([]) },
        "rows": rows,
    })
}
