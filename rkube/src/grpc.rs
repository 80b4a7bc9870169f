//! `rkube grpc`: reads and watches resources through the gRPC facade (`rkube.api.v1.Api`),
//! with the server, CA and credentials of a kubeconfig, e.g. `rkube grpc get pods -n default`
//! or `rkube grpc watch configmaps`.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use futures::StreamExt;
use rkube_server::grpc::client::{Client, ClientConfig};
use rkube_server::grpc::errors;
use rkube_server::grpc::proto::{watch_event, GetRequest, ListRequest, ResourceRef, WatchRequest};
use serde_json::Value;

#[derive(clap::Args)]
pub struct GrpcArgs {
    /// The kubeconfig naming the server (its current context); default: `$KUBECONFIG`, else
    /// `~/.kube/config`.
    #[arg(long)]
    kubeconfig: Option<String>,
    #[command(subcommand)]
    command: GrpcCommand,
}

#[derive(clap::Subcommand)]
enum GrpcCommand {
    /// One object, or the list of a resource.
    Get(Target),
    /// The resource's events, from its current state on.
    Watch(WatchArgs),
}

#[derive(clap::Args)]
struct Target {
    /// The resource: `pods`, or group-qualified (`deployments.apps`).
    resource: String,
    /// An object's name (none: the list).
    name: Option<String>,
    #[arg(short, long)]
    namespace: Option<String>,
    /// Across all namespaces.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// The API version of the resource's group.
    #[arg(long, default_value = "v1")]
    api_version: String,
    #[arg(short, long)]
    selector: Option<String>,
    /// `name` (a line per object) or `json`.
    #[arg(short, long, default_value = "name")]
    output: String,
}

#[derive(clap::Args)]
struct WatchArgs {
    #[command(flatten)]
    target: Target,
    /// Stop after this many seconds.
    #[arg(long)]
    timeout: Option<i64>,
}

impl Target {
    fn reference(&self) -> ResourceRef {
        let (resource, group) = self.resource.split_once('.').unwrap_or((&self.resource, ""));
        let namespace = match (&self.namespace, self.all_namespaces) {
            (_, true) => String::new(),
            (Some(ns), false) => ns.clone(),
            (None, false) => "default".to_string(),
        };
        ResourceRef {
            group: group.to_string(),
            version: self.api_version.clone(),
            resource: resource.to_string(),
            namespace,
            name: self.name.clone().unwrap_or_default(),
            subresource: String::new(),
        }
    }

    fn print(&self, object: &Value) {
        if self.output == "json" {
            println!("{}", serde_json::to_string_pretty(object).unwrap_or_default());
            return;
        }
        let items = match object["items"].as_array() {
            Some(items) => items.clone(),
            None => vec![object.clone()],
        };
        for item in items {
            println!("{}", describe(&item));
        }
    }
}

/// `namespace/name resourceVersion`.
fn describe(object: &Value) -> String {
    let meta = &object["metadata"];
    let name = meta["name"].as_str().unwrap_or("");
    let rv = meta["resourceVersion"].as_str().unwrap_or("");
    match meta["namespace"].as_str() {
        Some(ns) => format!("{ns}/{name} {rv}"),
        None => format!("{name} {rv}"),
    }
}

fn status_error(status: tonic::Status) -> anyhow::Error {
    match errors::kubernetes_status(&status) {
        Some(s) => anyhow!(
            "{} ({:?}, {} {})",
            status.message(),
            status.code(),
            s["code"],
            s["reason"].as_str().unwrap_or("")
        ),
        None => anyhow!("{} ({:?})", status.message(), status.code()),
    }
}

pub async fn run(args: GrpcArgs) -> anyhow::Result<()> {
    let path = args
        .kubeconfig
        .or_else(|| std::env::var("KUBECONFIG").ok().filter(|k| !k.is_empty()))
        .unwrap_or_else(|| "~/.kube/config".to_string());
    let config = ClientConfig::from_kubeconfig(&expand(&path)).map_err(|e| anyhow!(e))?;
    let client = Client::new(&config)?;
    let mut api = client.api();
    match args.command {
        GrpcCommand::Get(target) => {
            let reference = Some(target.reference());
            let data = if target.name.is_some() {
                let request = GetRequest { r#ref: reference, ..Default::default() };
                api.get(request).await.map_err(status_error)?.into_inner().data
            } else {
                let request = ListRequest {
                    r#ref: reference,
                    label_selector: target.selector.clone().unwrap_or_default(),
                    ..Default::default()
                };
                api.list(request).await.map_err(status_error)?.into_inner().data
            };
            target.print(&serde_json::from_slice(&data)?);
        }
        GrpcCommand::Watch(watch) => {
            let target = &watch.target;
            let request = WatchRequest {
                r#ref: Some(target.reference()),
                label_selector: target.selector.clone().unwrap_or_default(),
                timeout_seconds: watch.timeout,
                ..Default::default()
            };
            let mut events = api.watch(request).await.map_err(status_error)?.into_inner();
            while let Some(event) = events.next().await {
                let event = event.map_err(status_error)?;
                let kind = watch_event::Type::try_from(event.r#type)
                    .map(|t| t.as_str_name())
                    .unwrap_or("UNKNOWN");
                let object: Value = serde_json::from_slice(&event.object)?;
                if target.output == "json" {
                    println!("{}", serde_json::json!({"type": kind, "object": object}));
                } else {
                    println!("{kind} {}", describe(&object));
                }
            }
        }
    }
    Ok(())
}

fn expand(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(path.split(':').next().unwrap_or(path)),
    }
}
