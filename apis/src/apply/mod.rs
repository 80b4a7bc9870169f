//! Server-side apply and field ownership, as pure functions over `serde_json::Value`, with the
//! behaviour of upstream's structured-merge-diff.
//!
//! Start with [`apply`]: it merges an applied configuration into the live object, removes what
//! the same manager applied before and no longer applies, refuses to change fields another
//! manager owns unless forced ([`ApplyError::Conflicts`]), and records the manager's fields in
//! `metadata.managedFields`. Every other write (create, update, patch) goes through
//! [`record_update`], which gives its manager the fields it changed.
//!
//! Ownership is a [`FieldSet`] of paths ([`PathElement`]s) per manager entry. The schema
//! ([`PatchSchema`]) says how each value is owned and merged: structs field by field, maps
//! entry by entry, associative lists item by item by their key fields, sets value by value,
//! and atomic values whole. Values the schema does not describe are "deduced": objects are
//! maps, lists are atomic.
//!
//! Inside: `path` names the steps of a path, `fieldset` holds sets and their `fieldsV1` form,
//! `types` reads the schema, `applied` gives a configuration's fields, `compare` a write's
//! changes, `merge` merges, `prune` removes what is no longer applied, and `managed` reads and
//! writes `managedFields`.

mod applied;
mod compare;
mod fieldset;
mod managed;
mod merge;
mod path;
mod prune;
#[cfg(test)]
mod tests;
mod types;

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{json, Value};

pub use fieldset::FieldSet;
pub use path::{path_string, PathElement};

use crate::patch::PatchSchema;
use applied::applied_fields;
use compare::compare_objects;
use managed::{without_server_fields, Entry, APPLY, UPDATE};
use merge::{drop_applied_nulls, merge};
use prune::{remove_fields, removed_fields};
use types::{Ty, Types};

/// The manager upstream gives the fields of an object that had no managed fields when it was
/// first applied to.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";

/// The field manager of `kubectl apply --server-side`, the only one whose applies take over
/// the fields of a client-side apply (as upstream; another name opts out).
const KUBECTL: &str = "kubectl";

/// The annotation in which client-side `kubectl apply` keeps the configuration it applied.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What an apply asks for.
pub struct ApplyOptions<'a> {
    /// The field manager (`fieldManager`), non-empty.
    pub manager: &'a str,
    /// Take fields other managers own (`force`).
    pub force: bool,
    /// The apiVersion written into the managedFields entry, e.g. `apps/v1`.
    pub api_version: &'a str,
    /// The time written into the managedFields entry: RFC 3339 with seconds.
    pub time: &'a str,
    /// `status` for an apply through the status subresource: the manager's entry records it,
    /// and is not the entry of its applies to the main resource (through which a status-only
    /// configuration would be taken as everything the manager means to set).
    pub subresource: Option<&'a str>,
}

/// A field another manager owns with a different value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The owner as upstream prints it: `"kubectl"` for an applier, `"kubectl-create" using
    /// apps/v1 at 2026-11-21T10:00:00Z` for an updater (with ` with subresource "status"`
    /// after the name for a subresource's entry).
    pub manager: String,
    /// The field as upstream prints it, e.g. `.spec.template.spec.containers[name="c"].image`.
    pub field: String,
}

/// Why an apply was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// Fields other managers own would change (409); [`ApplyError::message`] gives upstream's
    /// text.
    Conflicts(Vec<Conflict>),
    /// The applied configuration is not one the schema accepts, with upstream's message.
    Invalid(String),
}

impl ApplyError {
    /// The message upstream sends: `Apply failed with 1 conflict: conflict with "m": .a`, or
    /// for several conflicts one `conflicts with "m":` line per manager followed by its
    /// `- .field` lines.
    pub fn message(&self) -> String {
        match self {
            ApplyError::Invalid(message) => message.clone(),
            ApplyError::Conflicts(conflicts) => {
                if let [only] = conflicts.as_slice() {
                    return format!(
                        "Apply failed with 1 conflict: conflict with {}: {}",
                        only.manager, only.field
                    );
                }
                let mut by_manager: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
                for conflict in conflicts {
                    by_manager.entry(&conflict.manager).or_default().push(&conflict.field);
                }
                let mut lines = Vec::new();
                for (manager, fields) in by_manager {
                    lines.push(format!("conflicts with {manager}:"));
                    lines.extend(fields.into_iter().map(|field| format!("- {field}")));
                }
                format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
            }
        }
    }
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ApplyError {}

/// Server-side apply of `config` (the applied configuration: a JSON object with apiVersion,
/// kind and metadata.name) by `opts.manager` to `live` (`None` when the object does not exist
/// yet: the result is then the configuration with its managedFields entry).
///
/// `type_ref` is the OpenAPI definition name of the kind (see
/// [`PatchSchema::definition_for`]); `None` deduces everything. Returns the new object with
/// `metadata.managedFields` updated. Server-set metadata of the live object (uid,
/// resourceVersion, creationTimestamp...) is kept unless the configuration sets it. The whole
/// configuration is applied, `status` included: leaving out what the endpoint does not own
/// (`status` for the main resource) is the caller's part.
///
/// When the result differs from `live` only by managedFields times, `live` itself comes back,
/// so a no-op apply writes nothing.
pub fn apply(
    schema: &PatchSchema,
    type_ref: Option<&str>,
    live: Option<&Value>,
    config: &Value,
    opts: &ApplyOptions,
) -> Result<Value, ApplyError> {
    let subresource = opts.subresource;
    let types = Types::new(schema);
    let ty = types.root(type_ref);
    if !config.is_object() {
        return Err(ApplyError::Invalid("the applied configuration must be an object".into()));
    }
    if config.pointer("/metadata/managedFields").is_some_and(|v| !v.is_null()) {
        return Err(ApplyError::Invalid("metadata.managedFields must be nil".into()));
    }
    let applied = applied_fields(types, ty, config)
        .map_err(|errors| ApplyError::Invalid(typed_patch_error(config, &errors)))?;

    let mut live_object = live.filter(|v| v.is_object()).cloned().unwrap_or_else(|| json!({}));
    // Stored managedFields that cannot be read own nothing, as upstream resets them.
    let mut entries =
        managed::decode(take_managed_fields(&mut live_object).as_ref()).unwrap_or_default();
    if live.is_some() && entries.is_empty() {
        entries.extend(before_first_apply(types, ty, &live_object, opts));
    }

    let mut merged = merge(types, ty, Some(&live_object), config);
    let mine = entries.iter().position(|e| e.is(opts.manager, APPLY, "", subresource));
    let others: Vec<usize> = (0..entries.len()).filter(|i| Some(*i) != mine).collect();
    if let Some(last) = mine.map(|i| &entries[i].fields).filter(|f| !f.is_empty()) {
        // The applier's new set still holds metadata.name & co. here, so metadata itself
        // stays owned, as upstream strips those fields only after pruning.
        let owned =
            others.iter().fold(applied.clone(), |owned, &i| owned.union(&entries[i].fields));
        remove_fields(types, ty, &mut merged, &removed_fields(types, ty, last, &owned));
    }

    let comparison = compare_objects(types, ty, &live_object, &merged);
    if !opts.force {
        let mut changed = comparison.changed();
        if opts.manager == KUBECTL {
            // `kubectl apply --server-side` after `kubectl apply`: what the client-side
            // apply's last configuration says is taken over without conflicts.
            changed = changed.difference(&last_applied_fields(types, ty, &live_object));
        }
        let conflicts = conflicts(&entries, &others, &changed);
        if !conflicts.is_empty() {
            return Err(ApplyError::Conflicts(conflicts));
        }
    }
    // Forced or not, what this apply changed or removed is no longer anyone else's.
    let touched = comparison.touched();
    for &i in &others {
        entries[i].fields = entries[i].fields.difference(&touched);
    }
    let entry = Entry {
        manager: opts.manager.to_string(),
        operation: APPLY.to_string(),
        api_version: opts.api_version.to_string(),
        time: Some(opts.time.to_string()),
        subresource: subresource.map(str::to_string),
        fields: without_server_fields(&applied),
    };
    match mine {
        Some(i) => entries[i] = entry,
        None => entries.push(entry),
    }

    drop_applied_nulls(types, ty, &mut merged, config);
    write_managed_fields(&mut merged, &entries);
    match live {
        Some(live) if same_but_times(live, &merged) => Ok(live.clone()),
        _ => Ok(merged),
    }
}

/// Records a write that is not an apply (create, update, patch) by `manager` as an `Update`:
/// the fields whose values differ between `old` (`None` on create) and `new` become the
/// manager's (its entry for `api_version` is created when missing and its time set to `time`)
/// and stop being anyone else's; entries left with no fields are dropped. A write through a
/// subresource (`status`, `scale`) gets an entry recording it.
///
/// The entries start from `new`'s managedFields when the request sent some (a client may set
/// them; a list of one empty entry clears them), otherwise from `old`'s (always for a
/// subresource, as upstream). Fields the server sets in metadata (uid, resourceVersion,
/// generation, creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds, selfLink,
/// managedFields) and apiVersion, kind, metadata.name and metadata.namespace are never owned;
/// `status` is.
#[allow(clippy::too_many_arguments)] // who, when and through what, besides the objects
pub fn record_update(
    schema: &PatchSchema,
    type_ref: Option<&str>,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    api_version: &str,
    time: &str,
    subresource: Option<&str>,
) {
    if !new.is_object() {
        return;
    }
    let types = Types::new(schema);
    let ty = types.root(type_ref);
    // The objects are compared without their managedFields, taken out (not copied) here.
    let empty = json!({});
    let mut old_object = old.filter(|v| v.is_object()).cloned();
    let old_managed = old_object.as_mut().and_then(take_managed_fields);
    let old_object = old_object.as_ref().unwrap_or(&empty);
    let new_managed = take_managed_fields(new);
    let from_old = || managed::decode(old_managed.as_ref()).unwrap_or_default();
    let mut entries = if subresource.is_some() {
        from_old()
    } else if managed::is_reset(new_managed.as_ref()) {
        Vec::new()
    } else {
        // A request without managedFields (or with unreadable ones) keeps the stored ones.
        match managed::decode(new_managed.as_ref()) {
            Ok(entries) if !entries.is_empty() => entries,
            _ => from_old(),
        }
    };

    let comparison = compare_objects(types, ty, old_object, new);
    let touched = comparison.touched();
    for entry in &mut entries {
        entry.fields = entry.fields.difference(&touched);
    }
    let mine = without_server_fields(&comparison.changed());
    if !mine.is_empty() {
        match entries.iter_mut().find(|e| e.is(manager, UPDATE, api_version, subresource)) {
            Some(entry) => {
                entry.fields = entry.fields.union(&mine);
                entry.time = Some(time.to_string());
            }
            None => entries.push(Entry {
                manager: manager.to_string(),
                operation: UPDATE.to_string(),
                api_version: api_version.to_string(),
                time: Some(time.to_string()),
                subresource: subresource.map(str::to_string),
                fields: mine,
            }),
        }
    }
    write_managed_fields(new, &entries);
}

/// The fields of an object first applied to without managed fields, as upstream assigns them:
/// everything it holds belongs to [`BEFORE_FIRST_APPLY`], so the first apply conflicts where
/// it changes them.
fn before_first_apply(
    types: Types<'_>,
    ty: Ty<'_>,
    live_object: &Value,
    opts: &ApplyOptions,
) -> Option<Entry> {
    let comparison = compare_objects(types, ty, &json!({}), live_object);
    let fields = without_server_fields(&comparison.changed());
    (!fields.is_empty()).then(|| Entry {
        manager: BEFORE_FIRST_APPLY.to_string(),
        operation: UPDATE.to_string(),
        api_version: opts.api_version.to_string(),
        time: Some(opts.time.to_string()),
        subresource: None,
        fields,
    })
}

/// The fields of the configuration a client-side `kubectl apply` last applied (its
/// annotation), empty when there is none or it cannot be read.
fn last_applied_fields(types: Types<'_>, ty: Ty<'_>, live_object: &Value) -> FieldSet {
    live_object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|config| applied_fields(types, ty, &config).ok())
        .map(|fields| without_server_fields(&fields))
        .unwrap_or_default()
}

/// Each field another entry owns that this apply changes, grouped by owner (sorted) in field
/// order.
fn conflicts(entries: &[Entry], others: &[usize], changed: &FieldSet) -> Vec<Conflict> {
    let mut out: Vec<Conflict> =
        others
            .iter()
            .flat_map(|&i| {
                let entry = &entries[i];
                let manager = entry.describe();
                entry.fields.intersection(changed).paths().into_iter().map(move |path| Conflict {
                    manager: manager.clone(),
                    field: path_string(&path),
                })
            })
            .collect();
    out.sort_by(|a, b| a.manager.cmp(&b.manager));
    out
}

/// Upstream's message for a configuration it cannot read as its type (`errors` are field
/// paths with what is wrong there, `.spec.foo: field not declared in schema`).
pub fn typed_patch_error(config: &Value, errors: &[String]) -> String {
    let text = |pointer: &str| config.pointer(pointer).and_then(Value::as_str).unwrap_or("");
    let api_version = text("/apiVersion");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let detail = match errors {
        [only] => only.clone(),
        _ => format!("errors:\n  {}", errors.join("\n  ")),
    };
    format!(
        "failed to create typed patch object ({}/{}; {group}/{version}, Kind={}): {detail}",
        text("/metadata/namespace"),
        text("/metadata/name"),
        text("/kind"),
    )
}

/// Removes `metadata.managedFields` from an object and returns it.
fn take_managed_fields(object: &mut Value) -> Option<Value> {
    object.get_mut("metadata")?.as_object_mut()?.shift_remove("managedFields")
}

/// Writes the entries as `metadata.managedFields` (in upstream's order), or removes it when no
/// entry owns anything.
fn write_managed_fields(object: &mut Value, entries: &[Entry]) {
    let Some(object) = object.as_object_mut() else { return };
    match managed::encode(entries) {
        Some(encoded) => {
            let metadata = object.entry("metadata").or_insert_with(|| json!({}));
            if let Some(metadata) = metadata.as_object_mut() {
                metadata.insert("managedFields".to_string(), encoded);
            }
        }
        None => {
            if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.shift_remove("managedFields");
            }
        }
    }
}

/// Whether two objects differ at most in their managedFields entries' times.
fn same_but_times(a: &Value, b: &Value) -> bool {
    fn without_times(object: &Value) -> Value {
        let mut object = object.clone();
        let entries = object.pointer_mut("/metadata/managedFields").and_then(Value::as_array_mut);
        for entry in entries.into_iter().flatten() {
            if let Some(entry) = entry.as_object_mut() {
                entry.shift_remove("time");
            }
        }
        object
    }
    without_times(a) == without_times(b)
}
