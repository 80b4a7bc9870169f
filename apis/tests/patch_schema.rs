//! The compiled-in patch-schema digest against the upstream OpenAPI v2 document it is made
//! from: same kinds, same strategies, merge keys, list types, list keys and map types for every
//! property of every definition, same definition map types and structs, same patch results, and
//! the generator reproduces the committed digest.
//!
//! The document lives outside the repository (`../shared/reference/`, or `$RKUBE_OPENAPI_V2`);
//! the tests that need it say so and pass when it is not there.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use rkube_apis::apply::{apply, record_update, ApplyOptions};
use rkube_apis::patch::{strategic_merge_patch, ListType, PatchSchema};
use serde_json::{json, Value};

fn document_path() -> PathBuf {
    match std::env::var_os("RKUBE_OPENAPI_V2") {
        Some(path) => PathBuf::from(path),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/reference/kubernetes-openapi-v2.json"),
    }
}

/// The full document, or `None` (with a note) when it is not here.
fn document() -> Option<&'static Value> {
    static DOCUMENT: OnceLock<Option<Value>> = OnceLock::new();
    DOCUMENT
        .get_or_init(|| {
            let path = document_path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                eprintln!("note: {} not found; skipping the comparison", path.display());
                return None;
            };
            Some(serde_json::from_str(&text).expect("the OpenAPI document is JSON"))
        })
        .as_ref()
}

/// The schema read from the full document, or `None` when it is not here.
fn full_schema() -> Option<&'static PatchSchema> {
    static FULL: OnceLock<Option<PatchSchema>> = OnceLock::new();
    FULL.get_or_init(|| {
        let document = document()?;
        Some(PatchSchema::from_openapi_v2(document).expect("the OpenAPI document has definitions"))
    })
    .as_ref()
}

fn base_definition(type_ref: &str) -> &str {
    let mut type_ref = type_ref;
    while let Some(inner) = type_ref.strip_prefix("map:") {
        type_ref = inner;
    }
    type_ref
}

#[test]
fn full_document_gives_the_known_answers() {
    let Some(full) = full_schema() else { return };
    assert_eq!(full.definition_for("", "v1", "Pod"), Some("io.k8s.api.core.v1.Pod"));
    assert_eq!(
        full.definition_for("apps", "v1", "Deployment"),
        Some("io.k8s.api.apps.v1.Deployment")
    );
    let cases = [
        ("io.k8s.api.core.v1.PodSpec", "containers", Some("merge"), Some("name")),
        ("io.k8s.api.core.v1.PodSpec", "volumes", Some("merge,retainKeys"), Some("name")),
        ("io.k8s.api.core.v1.PodSpec", "tolerations", None, None),
        ("io.k8s.api.core.v1.Container", "ports", Some("merge"), Some("containerPort")),
        ("io.k8s.api.core.v1.Container", "env", Some("merge"), Some("name")),
        ("io.k8s.api.apps.v1.DeploymentSpec", "strategy", Some("retainKeys"), None),
        ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", Some("merge"), None),
        (
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "ownerReferences",
            Some("merge"),
            Some("uid"),
        ),
        ("io.k8s.api.policy.v1.PodDisruptionBudgetSpec", "selector", Some("replace"), None),
    ];
    for (definition, field, strategy, merge_key) in cases {
        for schema in [full, PatchSchema::builtin()] {
            let found = schema.lookup(Some(definition), field);
            assert_eq!(
                (found.strategy, found.merge_key),
                (strategy, merge_key),
                "{definition}.{field}"
            );
        }
    }
    let template = full.lookup(Some("io.k8s.api.apps.v1.DeploymentSpec"), "template");
    assert_eq!(template.value_type, Some("io.k8s.api.core.v1.PodTemplateSpec"));
}

#[test]
fn full_document_gives_the_known_server_side_apply_answers() {
    let Some(full) = full_schema() else { return };
    let map = |keys: &[&'static str]| ListType::Map(keys.to_vec());
    let cases = [
        ("io.k8s.api.core.v1.ServiceSpec", "ports", map(&["port", "protocol"])),
        ("io.k8s.api.core.v1.Container", "ports", map(&["containerPort", "protocol"])),
        ("io.k8s.api.core.v1.PodSpec", "containers", map(&["name"])),
        ("io.k8s.api.core.v1.PodSpec", "tolerations", ListType::Atomic),
        ("io.k8s.api.core.v1.Container", "command", ListType::Atomic),
        ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", ListType::Set),
        ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", map(&["uid"])),
        // x-kubernetes-list-type wins over the patch strategy.
        ("io.k8s.api.batch.v1.JobStatus", "conditions", ListType::Atomic),
        ("io.k8s.api.core.v1.PodStatus", "hostIPs", ListType::Atomic),
    ];
    for (definition, field, list_type) in cases {
        for schema in [full, PatchSchema::builtin()] {
            let found = schema.lookup(Some(definition), field).effective_list_type();
            assert_eq!(found, list_type, "{definition}.{field}");
        }
    }
    for schema in [full, PatchSchema::builtin()] {
        let selector = schema.lookup(Some("io.k8s.api.core.v1.ServiceSpec"), "selector");
        assert_eq!(selector.map_type, Some("atomic"));
        let claim_ref = schema.lookup(Some("io.k8s.api.core.v1.PersistentVolumeSpec"), "claimRef");
        assert_eq!(claim_ref.map_type, Some("granular"));
        for atomic in [
            "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
            "io.k8s.api.core.v1.LocalObjectReference",
            "io.k8s.api.core.v1.ObjectReference",
        ] {
            assert_eq!(schema.definition_map_type(atomic), Some("atomic"), "{atomic}");
        }
        assert_eq!(schema.definition_map_type("io.k8s.api.core.v1.PodSpec"), None);
        assert!(schema.is_struct("io.k8s.api.core.v1.PodOS"));
        assert!(!schema.is_struct("io.k8s.apimachinery.pkg.util.intstr.IntOrString"));
    }
}

#[test]
fn digest_knows_every_struct_and_definition_map_type() {
    let Some(document) = document() else { return };
    let digest = PatchSchema::builtin();
    let definitions = document["definitions"].as_object().unwrap();
    for (name, definition) in definitions {
        let is_struct = definition.get("properties").is_some_and(Value::is_object);
        assert_eq!(digest.is_struct(name), is_struct, "{name} is a struct");
        assert_eq!(
            digest.definition_map_type(name),
            definition.get("x-kubernetes-map-type").and_then(Value::as_str),
            "map type of {name}"
        );
    }
}

#[test]
fn digest_agrees_with_the_full_document_everywhere() {
    let Some(full) = full_schema() else { return };
    let digest = PatchSchema::builtin();
    for (kind, definition) in full.kinds() {
        let (api_version, kind_name) = kind.rsplit_once('/').unwrap();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        assert_eq!(digest.definition_for(group, version, kind_name), Some(definition), "{kind}");
    }
    assert_eq!(digest.kinds().count(), full.kinds().count());
    assert_eq!(digest.definition_names().count(), full.definition_names().count());
    let mut compared = 0;
    for definition in full.definition_names() {
        for (field, meta) in full.fields(definition).into_iter().flatten() {
            let found = digest.lookup(Some(definition), field);
            let at = format!("{definition}.{field}");
            assert_eq!(found.strategy, meta.strategy.as_deref(), "strategy of {at}");
            assert_eq!(found.merge_key, meta.merge_key.as_deref(), "merge key of {at}");
            assert_eq!(found.list_type, meta.list_type.as_deref(), "list type of {at}");
            assert_eq!(found.list_map_keys, meta.list_map_keys.as_slice(), "list keys of {at}");
            assert_eq!(found.map_type, meta.map_type.as_deref(), "map type of {at}");
            match (found.value_type, meta.value_type.as_deref()) {
                (Some(kept), Some(original)) => assert_eq!(kept, original, "type of {at}"),
                (None, Some(original)) => {
                    // Pruned: the type is not a struct (a scalar such as Quantity).
                    let base = base_definition(original);
                    assert!(
                        digest.fields(base).is_none(),
                        "{at} leads to {base}, kept in the digest"
                    );
                }
                (Some(kept), None) => panic!("{at} has type {kept} only in the digest"),
                (None, None) => {}
            }
            compared += 1;
        }
    }
    // Every property that is not a primitive, or carries patch metadata.
    assert!(compared > 1000, "compared only {compared} properties");
}

#[test]
fn digest_and_full_document_patch_alike() {
    let Some(full) = full_schema() else { return };
    let deployment = json!({
        "metadata": {"name": "d", "finalizers": ["a"]},
        "spec": {
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {"spec": {
                "containers": [{"name": "web", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]}],
                "volumes": [{"name": "v", "emptyDir": {}}],
                "tolerations": [{"key": "a"}]
            }}
        }
    });
    let patch = json!({
        "metadata": {"finalizers": ["b"]},
        "spec": {
            "strategy": {"$retainKeys": ["type"], "type": "Recreate"},
            "template": {"spec": {
                "$setElementOrder/containers": [{"name": "side"}, {"name": "web"}],
                "containers": [{"name": "side", "image": "busybox"}, {"name": "web", "env": [{"name": "B", "value": "2"}]}],
                "volumes": [{"name": "v", "$retainKeys": ["name", "secret"], "secret": {"secretName": "s"}}],
                "tolerations": [{"key": "b"}]
            }}
        }
    });
    let name = "io.k8s.api.apps.v1.Deployment";
    let with_full = strategic_merge_patch(&deployment, &patch, full, name).unwrap();
    let with_digest =
        strategic_merge_patch(&deployment, &patch, PatchSchema::builtin(), name).unwrap();
    assert_eq!(with_full, with_digest);
    assert_eq!(
        with_digest,
        json!({
            "metadata": {"name": "d", "finalizers": ["b", "a"]},
            "spec": {
                "strategy": {"type": "Recreate"},
                "template": {"spec": {
                    "containers": [
                        {"name": "side", "image": "busybox"},
                        {"name": "web", "image": "nginx:1", "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]}
                    ],
                    "volumes": [{"name": "v", "secret": {"secretName": "s"}}],
                    "tolerations": [{"key": "b"}]
                }}
            }
        })
    );
}

#[test]
fn digest_and_full_document_apply_alike() {
    let Some(full) = full_schema() else { return };
    let live = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "finalizers": ["a"]},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {"spec": {
                "containers": [{"name": "web", "image": "nginx:1", "ports": [{"containerPort": 80}]}],
                "nodeSelector": {"disk": "ssd"}
            }}
        }
    });
    let config = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "finalizers": ["b"]},
        "spec": {
            "strategy": {"rollingUpdate": {"maxUnavailable": 0}},
            "template": {"spec": {
                "containers": [{"name": "web", "ports": [{"containerPort": 80, "name": "http"}]}],
                "nodeSelector": {"zone": "a"}
            }}
        }
    });
    let opts = ApplyOptions {
        manager: "m",
        force: true,
        api_version: "apps/v1",
        time: "2026-11-21T10:00:00Z",
        subresource: None,
    };
    let name = Some("io.k8s.api.apps.v1.Deployment");
    let mut created = live.clone();
    record_update(
        full,
        name,
        None,
        &mut created,
        "creator",
        "apps/v1",
        "2026-11-21T09:00:00Z",
        None,
    );
    let with_full = apply(full, name, Some(&created), &config, &opts).unwrap();
    let with_digest = apply(PatchSchema::builtin(), name, Some(&created), &config, &opts).unwrap();
    assert_eq!(with_full, with_digest);
    assert_eq!(with_digest["metadata"]["finalizers"], json!(["a", "b"]));
    assert_eq!(with_digest["spec"]["template"]["spec"]["nodeSelector"], json!({"zone": "a"}));
    assert_eq!(
        with_digest["spec"]["template"]["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 80, "name": "http"}])
    );
}

#[test]
fn generator_reproduces_the_committed_digest() {
    let document = document_path();
    if !document.exists() {
        eprintln!("note: {} not found; skipping the generator check", document.display());
        return;
    }
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = match Command::new("python3")
        .arg(manifest_dir.join("tools/gen-patch-schema.py"))
        .arg(&document)
        .output()
    {
        Ok(output) => output,
        Err(e) => {
            eprintln!("note: cannot run python3 ({e}); skipping the generator check");
            return;
        }
    };
    assert!(
        output.status.success(),
        "generator failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let committed = std::fs::read(manifest_dir.join("data/patch-schema.json")).unwrap();
    assert!(
        output.stdout == committed,
        "apis/data/patch-schema.json is stale: rerun apis/tools/gen-patch-schema.py"
    );
}

#[test]
fn digest_is_small() {
    let size = include_str!("../data/patch-schema.json").len();
    assert!(size < 300 * 1024, "the digest is {size} bytes");
}
