//! CEL benchmark: what a custom resource's `x-kubernetes-validations` rules cost a create.
//!
//! ```text
//! cargo build --release -p rkube -p rkube-conformance --bin rkube --bin cel-bench
//! target/release/cel-bench [--quick] [--output FILE]
//! ```
//!
//! - Custom object creates from 32 kube-rs tasks against one API server
//!   (`--disable scheduler,controllers`), in alternating turns, of two resources with the same
//!   schema: one without rules, one with five typical ones (a comparison of two fields, a
//!   regex on a name, a loop over a list of at most 16 ports, a quantity comparison, and a
//!   rule with a `messageExpression`).
//! - The rules alone: the same five compiled once and evaluated against the same object in
//!   this process, as the API server runs them per create (JSON to CEL, walk, evaluate).
//!
//! Writes the `cel-bench` section of docs/benchmarks.md (or `--output`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use kube::Client;
use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::report::{self, Table};
use serde_json::{json, Value};

const CONCURRENCY: usize = 32;
const TURNS: usize = 4;
const EVALUATIONS: usize = 20_000;

/// The five rules of the ruled resource.
fn rules() -> Value {
    json!([
        {"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"},
        {"rule": "self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')", "message": "name must be a DNS label"},
        {"rule": "self.ports.all(p, p.port > 0 && p.port < 65536)", "message": "ports out of range"},
        {"rule": "quantity(self.memory).isLessThan(quantity('64Gi'))", "message": "memory must be under 64Gi"},
        {"rule": "self.replicas >= 1", "messageExpression": "'replicas must be at least 1, not ' + string(self.replicas)"},
    ])
}

fn schema(with_rules: bool) -> Value {
    let mut spec = json!({
        "type": "object",
        "properties": {
            "replicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "name": {"type": "string", "maxLength": 63},
            "memory": {"type": "string", "maxLength": 32},
            "ports": {"type": "array", "maxItems": 16, "items": {
                "type": "object", "properties": {"port": {"type": "integer"}, "name": {"type": "string", "maxLength": 15}}}},
        },
    });
    if with_rules {
        spec["x-kubernetes-validations"] = rules();
    }
    json!({"type": "object", "properties": {"spec": spec}})
}

fn definition(plural: &str, kind: &str, with_rules: bool) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.bench.example.com")},
        "spec": {"group": "bench.example.com", "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": schema(with_rules)}}]},
    })
}

fn spec() -> Value {
    json!({"replicas": 3, "maxReplicas": 10, "name": "web-frontend", "memory": "512Mi",
           "ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}, {"port": 9090, "name": "metrics"}]})
}

fn resource(plural: &str, kind: &str) -> ApiResource {
    ApiResource {
        group: "bench.example.com".into(),
        version: "v1".into(),
        api_version: "bench.example.com/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// One timed phase: creates per second and sorted latencies.
struct Run {
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Run {
    fn rate(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }
    fn cell(&self) -> String {
        format!(
            "{:.0}/s, p50 {}, p99 {}",
            self.rate(),
            report::ms(report::percentile(&self.latencies, 50.0)),
            report::ms(report::percentile(&self.latencies, 99.0))
        )
    }
}

/// Creates of `ar` objects from [`CONCURRENCY`] tasks for `duration`; any error ends it.
async fn creates(
    client: &Client,
    ar: &ApiResource,
    prefix: &str,
    duration: Duration,
) -> Result<Run> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", ar);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let end = started + duration;
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (api, next, prefix, ar) =
                (api.clone(), next.clone(), prefix.to_string(), ar.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < end {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let mut object = DynamicObject::new(&format!("{prefix}-{i:07}"), &ar);
                    object.data = json!({"spec": spec()});
                    let t = Instant::now();
                    api.create(&PostParams::default(), &object).await?;
                    latencies.push(t.elapsed());
                }
                anyhow::Ok(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await??);
    }
    latencies.sort();
    Ok(Run { latencies, elapsed: started.elapsed() })
}

/// Applies a definition and waits until its resource takes creates.
async fn define(
    client: &Client,
    plural: &str,
    kind: &str,
    with_rules: bool,
) -> Result<ApiResource> {
    let crds: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::erase::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(&()),
    );
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(definition(plural, kind, with_rules))?,
    )
    .await?;
    let ar = resource(plural, kind);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let deadline = Instant::now() + Duration::from_secs(30);
    while api.list(&Default::default()).await.is_err() {
        if Instant::now() > deadline {
            bail!("{plural} not served within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(ar)
}

/// The rules alone: mean time of one validation of the object (all five rules).
fn rules_alone() -> Result<(Duration, Duration)> {
    let schema = schema(true);
    let compiled = rkube_cel::crd::Rules::compile(&schema).context("the rules compile")?;
    let object = json!({"apiVersion": "bench.example.com/v1", "kind": "Ruled",
                        "metadata": {"name": "x", "namespace": "default"}, "spec": spec()});
    if !compiled.validate(&object, None).is_empty() {
        bail!("the object breaks a rule");
    }
    let mut bad = object.clone();
    bad["spec"]["replicas"] = json!(20);
    if compiled.validate(&bad, None).is_empty() {
        bail!("a broken rule went unnoticed");
    }
    for _ in 0..1000 {
        compiled.validate(&object, None);
    }
    let started = Instant::now();
    for _ in 0..EVALUATIONS {
        std::hint::black_box(compiled.validate(std::hint::black_box(&object), None));
    }
    let all = started.elapsed() / EVALUATIONS as u32;
    // One rule on its own, for the per-rule figure.
    let one = rkube_cel::compile("self.replicas <= self.maxReplicas", &["self"])?;
    let mut activation = rkube_cel::Activation::new();
    activation.json("self", &spec());
    let started = Instant::now();
    for _ in 0..EVALUATIONS {
        std::hint::black_box(one.evaluate_bool(&activation, rkube_cel::PER_CALL_LIMIT)?);
    }
    Ok((all, started.elapsed() / EVALUATIONS as u32))
}

struct Figures {
    turns: Vec<(Run, Run)>,
    validation: Duration,
    one_rule: Duration,
}

async fn bench(duration: Duration) -> Result<Figures> {
    let (validation, one_rule) = rules_alone()?;
    eprintln!("rules alone: {validation:?} per object (5 rules), {one_rule:?} per simple rule");
    eprintln!("starting an API server (--disable scheduler,controllers)");
    let server = tokio::task::spawn_blocking(|| {
        RkubeServer::start_with(&["--disable", "scheduler,controllers"])
    })
    .await?;
    let client = server.kube_client().await?;
    let plain = define(&client, "plains", "Plain", false).await?;
    let ruled = define(&client, "ruleds", "Ruled", true).await?;
    // The rules are there: a broken object is refused.
    let mut bad = DynamicObject::new("bad", &ruled);
    bad.data = json!({"spec": {"replicas": 20, "maxReplicas": 10, "name": "x", "memory": "1Gi", "ports": []}});
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ruled);
    if api.create(&PostParams::default(), &bad).await.is_ok() {
        bail!("the ruled resource took an object that breaks its rules");
    }
    creates(&client, &plain, "warm", Duration::from_millis(500)).await?;
    creates(&client, &ruled, "warm", Duration::from_millis(500)).await?;
    let mut turns = Vec::new();
    for turn in 0..TURNS {
        let (a, b) = (format!("r{turn}"), format!("p{turn}"));
        let pair = if matches!(turn % 4, 0 | 3) {
            let with = creates(&client, &ruled, &a, duration).await?;
            (with, creates(&client, &plain, &b, duration).await?)
        } else {
            let without = creates(&client, &plain, &b, duration).await?;
            (creates(&client, &ruled, &a, duration).await?, without)
        };
        eprintln!("  turn {turn}: rules {}; none {}", pair.0.cell(), pair.1.cell());
        turns.push(pair);
    }
    drop(server);
    Ok(Figures { turns, validation, one_rule })
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn render(f: &Figures, quick: bool) -> String {
    let mut table = Table::new(&["turn", "5 rules", "no rules", "rules / none"]);
    let (mut with, mut without) = (0.0, 0.0);
    for (i, (a, b)) in f.turns.iter().enumerate() {
        with += a.rate();
        without += b.rate();
        table.row(vec![
            format!("{}", i + 1),
            a.cell(),
            b.cell(),
            format!("{:.2}x the rate", a.rate() / b.rate()),
        ]);
    }
    let slower = (1.0 - with / without) * 100.0;
    format!(
        "## CEL validation rules (`cel-bench`)\n\n{}{}\n\nCustom object creates, {CONCURRENCY} at a \
         time with kube-rs, on one API server (`--disable scheduler,controllers`) in {TURNS} \
         alternating turns, of two resources with one schema: one with five typical \
         `x-kubernetes-validations` rules on `spec` (two fields compared, a regex on a name, a \
         loop over at most 16 ports, a quantity comparison, a `messageExpression`), one without. \
         Over all turns the rules made creates **{:.1}%** {}.\n\n{}\n\nThe rules alone, in \
         process, {EVALUATIONS} times against the same object: **{}** per object for all five \
         (JSON to CEL values, the walk, five metered evaluations), **{}** for one simple rule \
         (`self.replicas <= self.maxReplicas`).\n",
        report::machine(),
        if quick { " (quick run)" } else { "" },
        slower.abs(),
        if slower >= 0.0 { "slower" } else { "faster" },
        table.markdown(),
        micros(f.validation),
        micros(f.one_rule),
    )
}

#[tokio::main]
async fn main() -> Result<()> {
    let report::Args { quick, output } = report::Args::parse();
    let duration = if quick { Duration::from_secs(1) } else { Duration::from_secs(5) };
    let figures = bench(duration).await?;
    let markdown = render(&figures, quick);
    report::publish(&output, "cel-bench", &markdown, quick)
}
