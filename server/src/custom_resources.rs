//! Serves the resources of CustomResourceDefinitions, as apiextensions-apiserver's
//! controllers do inside kube-apiserver: a definition's served versions join the live
//! resource table ([`Registry::add_resource`]) with their watch cache, discovery and OpenAPI;
//! its status says so (`NamesAccepted`, `Established`, `acceptedNames`, `storedVersions`); a
//! definition being deleted has its objects deleted first (the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer its delete added), then leaves the
//! table.
//!
//! Each served group/version gets its Local APIService
//! ([`crate::aggregator::autoregister::sync`]), as upstream's `crd-autoregister` controller
//! makes them.
//!
//! While a definition is terminating, creates of its objects are refused
//! ([`refuse_create_while_terminating`]), as upstream's custom resource handler does: its
//! clean-up would otherwise chase new objects.
//!
//! What a custom resource's objects get (and do not yet get) is in
//! `rkube_apis::kinds::custom`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rkube_apis::kinds::custom;
use rkube_apis::resources::{ResourceInfo, Resources};
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;

use crate::aggregator::autoregister;
use crate::object;
use crate::registry::{DeleteOptions, Filter, Registry, WriteOptions};
use crate::status::{ApiError, ApiResult};

/// The finalizer a definition's delete adds: its objects go before it does.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// What one definition serves now.
struct Served {
    /// The spec it was served from (serialized): a new spec is served anew.
    spec: String,
    /// Group, version and plural of each served version.
    versions: Vec<(&'static str, &'static str, &'static str)>,
    /// Why its names were not accepted, if they were not.
    conflict: Option<String>,
}

/// Starts following the definitions; runs as long as the server.
pub fn start(registry: Arc<Registry>) {
    tokio::spawn(async move {
        if let Err(e) = run(registry).await {
            tracing::error!(error = %e, "custom resources are not served");
        }
    });
}

fn definitions() -> &'static Arc<ResourceInfo> {
    Resources::builtin()
        .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .expect("CustomResourceDefinitions are built in")
}

async fn run(registry: Arc<Registry>) -> Result<(), String> {
    let cache = registry.cache(definitions()).map_err(|e| e.message)?;
    let prefix = definitions().key_prefix();
    let mut live = cache.watch(None, &prefix).map_err(|e| e.message)?.live;
    // A Local APIService deleted or changed by hand is put back.
    let api_services =
        Resources::builtin().get("apiregistration.k8s.io", "v1", "apiservices").expect("built in");
    let mut api_service_events = registry
        .cache(api_services)
        .and_then(|c| c.watch(None, &api_services.key_prefix()))
        .map_err(|e| e.message)?
        .live;
    let mut served: HashMap<String, Served> = HashMap::new();
    let mut cleaning: HashSet<String> = HashSet::new();
    let (cleaned_tx, mut cleaned) = tokio::sync::mpsc::unbounded_channel::<String>();
    loop {
        let everything = Filter::everything();
        let crds: Vec<Value> =
            cache.list(&prefix, &everything).0.iter().map(|c| c.value()).collect();
        reconcile(&registry, &crds, &mut served).await;
        autoregister::sync(&registry, &autoregister::definitions_desired(&crds)).await;
        for crd in crds.iter().filter(|c| object::is_terminating(c)) {
            let name = object::name(crd).unwrap_or("").to_string();
            if object::finalizers(crd).iter().any(|f| f == CLEANUP_FINALIZER)
                && cleaning.insert(name.clone())
            {
                let (registry, done) = (registry.clone(), cleaned_tx.clone());
                let crd = crd.clone();
                tokio::spawn(async move {
                    clean_up(&registry, &crd).await;
                    let _ = done.send(name);
                });
            }
        }
        // Level-triggered: any change (or a missed one) reconciles every definition.
        tokio::select! {
            event = live.recv() => match event {
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return Ok(()),
            },
            Some(name) = cleaned.recv() => {
                cleaning.remove(&name);
            }
            event = api_service_events.recv() => match event {
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return Ok(()),
            },
        }
    }
}

/// Serves what the definitions ask for, and stops serving what none asks for any more.
async fn reconcile(registry: &Registry, crds: &[Value], served: &mut HashMap<String, Served>) {
    let mut present = HashSet::new();
    for crd in crds {
        let name = object::name(crd).unwrap_or("").to_string();
        present.insert(name.clone());
        let spec = crd["spec"].to_string();
        if served.get(&name).is_none_or(|s| s.spec != spec) {
            if let Some(old) = served.remove(&name) {
                for (group, version, plural) in old.versions {
                    registry.remove_resource(group, version, plural);
                }
            }
            served.insert(name.clone(), serve(registry, crd, spec).await);
        }
        let state = &served[&name];
        if !object::is_terminating(crd) {
            set_status(registry, crd, state.conflict.as_deref()).await;
        }
    }
    served.retain(|name, state| {
        let keep = present.contains(name);
        if !keep {
            for (group, version, plural) in &state.versions {
                registry.remove_resource(group, version, plural);
            }
        }
        keep
    });
}

/// Adds the definition's served versions to the table.
async fn serve(registry: &Registry, crd: &Value, spec: String) -> Served {
    let mut versions = Vec::new();
    let mut conflict = None;
    match custom::resources_of(crd) {
        Ok(resources) => {
            for info in resources {
                let gvr = (info.group, info.version, info.plural);
                match registry.add_resource(info).await {
                    Ok(()) => versions.push(gvr),
                    Err(e) => conflict = Some(e.message),
                }
            }
        }
        Err(e) => conflict = Some(e),
    }
    Served { spec, versions, conflict }
}

/// Refuses a create of a custom resource whose definition is being deleted, as
/// apiextensions-apiserver does: `405 MethodNotAllowed`, "create not allowed while custom
/// resource definition is terminating". Built-in resources are never refused here.
pub(crate) fn refuse_create_while_terminating(
    registry: &Registry,
    info: &ResourceInfo,
) -> ApiResult<()> {
    if Resources::builtin().get(info.group, info.version, info.plural).is_some() {
        return Ok(());
    }
    let Ok(cache) = registry.cache(definitions()) else { return Ok(()) };
    let key = definitions().key(None, &format!("{}.{}", info.plural, info.group));
    let Some(crd) = cache.get(&key) else { return Ok(()) };
    if !has_deletion_timestamp(&crd.json) {
        return Ok(());
    }
    let mut e = ApiError::method_not_allowed(
        "create not allowed while custom resource definition is terminating",
    );
    e.details.group = Some(info.group.to_string());
    e.details.kind = Some(info.plural.to_string());
    Err(e)
}

/// Whether a definition's JSON has a `metadata.deletionTimestamp`, reading only its
/// metadata's members (the rest, its schemas, is skipped, not built).
fn has_deletion_timestamp(json: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Definition {
        metadata: Metadata,
    }
    #[derive(serde::Deserialize)]
    struct Metadata {
        #[serde(rename = "deletionTimestamp")]
        deletion_timestamp: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Definition>(json)
        .is_ok_and(|d| d.metadata.deletion_timestamp.is_some())
}

/// The status upstream's controllers give a definition whose names are accepted (or not).
async fn set_status(registry: &Registry, crd: &Value, conflict: Option<&str>) {
    let names = &crd["spec"]["names"];
    let stored: Vec<Value> = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["storage"] == true)
        .map(|v| v["name"].clone())
        .collect();
    let (accepted, reason, message) = match conflict {
        None => ("True", "NoConflicts", "no conflicts found".to_string()),
        Some(why) => ("False", "NameConflict", why.to_string()),
    };
    let (established, established_reason, established_message) = match conflict {
        None => ("True", "InitialNamesAccepted", "the initial names have been accepted"),
        Some(_) => ("False", "NotAccepted", "not all names are accepted"),
    };
    let status = &crd["status"];
    let condition = |kind: &str| {
        status["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == kind).cloned()
    };
    let up_to_date = condition("NamesAccepted").is_some_and(|c| c["status"] == accepted)
        && condition("Established").is_some_and(|c| c["status"] == established)
        && (conflict.is_some() || status["acceptedNames"] == accepted_names(names))
        && stored
            .iter()
            .all(|v| status["storedVersions"].as_array().is_some_and(|s| s.contains(v)));
    if up_to_date {
        return;
    }
    let now = object::now();
    let name = object::name(crd).unwrap_or("").to_string();
    let write = |old: &Value| {
        let mut new = old.clone();
        let kept = |kind: &str, state: &str| {
            // A condition keeps its transition time while its status stays.
            old["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == kind && c["status"] == state)
                .and_then(|c| c["lastTransitionTime"].as_str().map(String::from))
                .unwrap_or_else(|| now.clone())
        };
        let mut stored_versions: Vec<Value> =
            old["status"]["storedVersions"].as_array().cloned().unwrap_or_default();
        for v in &stored {
            if !stored_versions.contains(v) {
                stored_versions.push(v.clone());
            }
        }
        // Set in place, or added: other conditions (anyone's) stay, as upstream's
        // SetCRDCondition leaves them.
        let mut conditions: Vec<Value> =
            old["status"]["conditions"].as_array().cloned().unwrap_or_default();
        for condition in [
            json!({"type": "NamesAccepted", "status": accepted, "lastTransitionTime": kept("NamesAccepted", accepted),
                   "reason": reason, "message": message}),
            json!({"type": "Established", "status": established, "lastTransitionTime": kept("Established", established),
                   "reason": established_reason, "message": established_message}),
        ] {
            match conditions.iter_mut().find(|c| c["type"] == condition["type"]) {
                Some(existing) => *existing = condition,
                None => conditions.push(condition),
            }
        }
        new["status"]["conditions"] = json!(conditions);
        new["status"]["acceptedNames"] = if conflict.is_none() {
            accepted_names(names)
        } else {
            json!({"plural": "", "kind": ""})
        };
        new["status"]["storedVersions"] = json!(stored_versions);
        Ok(new)
    };
    let options =
        WriteOptions { field_manager: Some("kube-apiserver".to_string()), ..Default::default() };
    let info = definitions();
    if let Err(e) = registry.modify(info, None, &name, Some("status"), &options, None, write).await
    {
        tracing::warn!(definition = name, error = %e.message, "cannot write the definition's status");
    }
}

/// Sets the definition's `Terminating` condition, as upstream's finalizer controller does
/// before it deletes the objects.
async fn mark_terminating(registry: &Registry, name: &str) {
    let now = object::now();
    let write = |old: &Value| {
        let mut new = old.clone();
        let mut conditions: Vec<Value> = old["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["type"] != "Terminating")
            .cloned()
            .collect();
        conditions.push(json!({
            "type": "Terminating", "status": "True", "lastTransitionTime": now,
            "reason": "InstanceDeletionInProgress", "message": "CustomResource deletion is in progress",
        }));
        new["status"]["conditions"] = json!(conditions);
        Ok(new)
    };
    let options =
        WriteOptions { field_manager: Some("kube-apiserver".to_string()), ..Default::default() };
    if let Err(e) =
        registry.modify(definitions(), None, name, Some("status"), &options, None, write).await
    {
        tracing::warn!(definition = name, error = %e.message, "cannot mark the definition terminating");
    }
}

/// The names as the status lists them: the spec's, with upstream's defaults filled in.
fn accepted_names(names: &Value) -> Value {
    let mut accepted = names.clone();
    if accepted["singular"].as_str().is_none_or(str::is_empty) {
        accepted["singular"] = json!(names["kind"].as_str().unwrap_or("").to_ascii_lowercase());
    }
    if accepted["listKind"].as_str().is_none_or(str::is_empty) {
        accepted["listKind"] = json!(format!("{}List", names["kind"].as_str().unwrap_or("")));
    }
    accepted
}

/// Deletes every object of a definition being deleted, waits for them to go (their own
/// finalizers may hold them), then takes the cleanup finalizer off the definition, which
/// lets its delete finish.
async fn clean_up(registry: &Registry, crd: &Value) {
    let name = object::name(crd).unwrap_or("").to_string();
    mark_terminating(registry, &name).await;
    let table = registry.resources();
    let group = crd["spec"]["group"].as_str().unwrap_or("");
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or("");
    if let Some(info) = table.storage_version_of(group, plural).cloned() {
        let everything = Filter::everything();
        let mut pause = Duration::from_millis(100);
        loop {
            let Ok(cache) = registry.cache(&info) else { break };
            let objects = cache.list(&info.key_prefix(), &everything).0;
            if objects.is_empty() {
                break;
            }
            for obj in objects {
                let obj = obj.value();
                if object::is_terminating(&obj) {
                    continue;
                }
                let (ns, obj_name) = (object::namespace(&obj), object::name(&obj).unwrap_or(""));
                if let Err(e) =
                    registry.delete(&info, ns, obj_name, &DeleteOptions::default()).await
                {
                    tracing::warn!(definition = name, object = obj_name, error = %e.message, "cannot delete a custom object");
                }
            }
            // Objects held by their own finalizers may take long: ask less and less often.
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(5));
        }
    }
    let options =
        WriteOptions { field_manager: Some("kube-apiserver".to_string()), ..Default::default() };
    let without_finalizer = |old: &Value| {
        let mut new = old.clone();
        let kept: Vec<String> =
            object::finalizers(old).into_iter().filter(|f| f != CLEANUP_FINALIZER).collect();
        new["metadata"]["finalizers"] = json!(kept);
        Ok(new)
    };
    let info = definitions();
    match registry.modify(info, None, &name, None, &options, None, without_finalizer).await {
        // Gone already: an earlier clean-up finished it.
        Ok(_) => {}
        Err(e) if e.code == http::StatusCode::NOT_FOUND => {}
        Err(e) => {
            tracing::warn!(definition = name, error = %e.message, "cannot finish the definition's delete")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deletion_timestamp_is_read_from_the_metadata_alone() {
        let deleting = br#"{"metadata":{"name":"a","deletionTimestamp":"2026-01-01T00:00:00Z"},"spec":{"x":[1,2]}}"#;
        assert!(has_deletion_timestamp(deleting));
        assert!(!has_deletion_timestamp(br#"{"metadata":{"name":"a"},"spec":{}}"#));
        assert!(!has_deletion_timestamp(br#"{"metadata":{"deletionTimestamp":null}}"#));
        assert!(!has_deletion_timestamp(b"not json"));
    }
}
