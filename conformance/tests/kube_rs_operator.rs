//! The kube-rs operator pattern against rkube, unchanged from how operators are written: a
//! CustomResourceDefinition derived in the program (`#[derive(CustomResource)]` with its
//! schema from schemars), applied with server-side apply, awaited until Established, and a
//! `kube::runtime::Controller` that guards its objects with a finalizer, reports status
//! through server-side apply on the status subresource, and cleans up when they are deleted.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{finalizer, Event};
use kube::runtime::{conditions, wait::await_condition, watcher};
use kube::{Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use rkube_conformance::cluster::RkubeServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

const FINALIZER: &str = "gadgets.operator.example.com/cleanup";
const OPERATOR: &str = "gadget-operator";

/// What a gadget should be.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "operator.example.com",
    version = "v1",
    kind = "Gadget",
    namespaced,
    status = "GadgetStatus",
    shortname = "gd"
)]
pub struct GadgetSpec {
    /// How many parts the gadget has.
    pub parts: i32,
}

/// What the operator saw of a gadget.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GadgetStatus {
    pub observed_generation: Option<i64>,
    pub summary: String,
}

struct Context {
    client: Client,
    /// The gadgets the operator cleaned up after.
    cleaned: Mutex<Vec<String>>,
}

async fn reconcile(
    gadget: Arc<Gadget>,
    ctx: Arc<Context>,
) -> Result<Action, kube::runtime::finalizer::Error<kube::Error>> {
    let namespace = gadget.namespace().unwrap_or_default();
    let api: Api<Gadget> = Api::namespaced(ctx.client.clone(), &namespace);
    finalizer(&api, FINALIZER, gadget, |event| async {
        match event {
            Event::Apply(gadget) => {
                let status = json!({
                    "apiVersion": Gadget::api_version(&()),
                    "kind": Gadget::kind(&()),
                    "status": {
                        "observedGeneration": gadget.metadata.generation,
                        "summary": format!("{} parts", gadget.spec.parts),
                    }
                });
                let params = PatchParams::apply(OPERATOR).force();
                api.patch_status(&gadget.name_any(), &params, &Patch::Apply(&status)).await?;
                Ok(Action::await_change())
            }
            Event::Cleanup(gadget) => {
                ctx.cleaned.lock().unwrap().push(gadget.name_any());
                Ok(Action::await_change())
            }
        }
    })
    .await
}

fn error_policy(
    _gadget: Arc<Gadget>,
    _error: &kube::runtime::finalizer::Error<kube::Error>,
    _ctx: Arc<Context>,
) -> Action {
    Action::requeue(Duration::from_millis(200))
}

/// Polls `check` every 100 ms until it answers `Some`, for 30 s at most.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = (Option<T>, String)>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (done, seen) = check().await;
        if let Some(done) = done {
            return done;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within 30 s; last seen: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_kube_rs_controller_runs_with_finalizers_and_status_through_apply() {
    let server = RkubeServer::start();
    let client = server.kube_client().await.unwrap();

    // The definition, derived and applied as an operator installs it.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = Gadget::crd();
    let name = crd.name_any();
    assert_eq!(name, "gadgets.operator.example.com");
    let params = PatchParams::apply(OPERATOR).force();
    crds.patch(&name, &params, &Patch::Apply(&crd)).await.unwrap();
    let established = tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(crds.clone(), &name, conditions::is_crd_established()),
    )
    .await
    .expect("the definition is established within 30 s")
    .unwrap();
    assert!(established.is_some());

    // The controller, as an operator runs it.
    let ctx = Arc::new(Context { client: client.clone(), cleaned: Mutex::new(Vec::new()) });
    let gadgets: Api<Gadget> = Api::all(client.clone());
    let controller = tokio::spawn(
        Controller::new(gadgets, watcher::Config::default())
            .run(reconcile, error_policy, ctx.clone())
            .for_each(|_| async {}),
    );

    let api: Api<Gadget> = Api::namespaced(client.clone(), "default");
    let gadget = Gadget::new("g1", GadgetSpec { parts: 3 });
    api.patch("g1", &PatchParams::apply("test"), &Patch::Apply(&gadget)).await.unwrap();

    // The operator's finalizer is on it and its status says what it saw.
    let seen = eventually("the status of generation 1", || async {
        let g = api.get("g1").await.unwrap();
        let observed = g.status.as_ref().and_then(|s| s.observed_generation);
        let done = (observed == Some(1)).then(|| g.clone());
        (done, format!("{:?} {:?}", g.metadata.finalizers, g.status))
    })
    .await;
    assert_eq!(seen.finalizers(), [FINALIZER.to_string()]);
    assert_eq!(seen.status.as_ref().unwrap().summary, "3 parts");
    // The status apply is recorded as the operator's, through the status subresource.
    let entries = seen.metadata.managed_fields.clone().unwrap_or_default();
    let status_entry = entries
        .iter()
        .find(|e| e.manager.as_deref() == Some(OPERATOR))
        .unwrap_or_else(|| panic!("no entry of {OPERATOR}: {entries:?}"));
    assert_eq!(status_entry.operation.as_deref(), Some("Apply"));
    assert_eq!(status_entry.subresource.as_deref(), Some("status"));

    // A change of the spec is a new generation, which the operator observes.
    let changed = Gadget::new("g1", GadgetSpec { parts: 5 });
    api.patch("g1", &PatchParams::apply("test"), &Patch::Apply(&changed)).await.unwrap();
    eventually("the status of generation 2", || async {
        let g = api.get("g1").await.unwrap();
        let status = g.status.clone().unwrap_or_default();
        let done =
            (status.observed_generation == Some(2) && status.summary == "5 parts").then_some(());
        (done, format!("generation {:?}: {status:?}", g.metadata.generation))
    })
    .await;

    // Deleting it waits for the operator's cleanup, which lets it go.
    api.delete("g1", &DeleteParams::default()).await.unwrap();
    eventually("the deletion", || async {
        let got = api.get_opt("g1").await.unwrap();
        (got.is_none().then_some(()), format!("{:?}", got.map(|g| g.metadata)))
    })
    .await;
    assert_eq!(*ctx.cleaned.lock().unwrap(), ["g1".to_string()]);

    controller.abort();
}
