//! Webhook benchmark: what an admission webhook round trip adds to a create.
//!
//! ```text
//! cargo build --release -p rkube -p rkube-conformance --bin rkube --bin webhook-bench
//! target/release/webhook-bench [--quick] [--output FILE]
//! ```
//!
//! One `rkube server` (`--disable scheduler,controllers`) and a webhook server in this
//! program (HTTPS on loopback, a CA of its own), reached by `url`. ConfigMap creates, one
//! at a time from one kube-rs client, in three namespaces in alternating turns: one no
//! webhook matches, one a validating webhook (allows) matches, one a mutating webhook
//! (adds a label by JSON patch) and the validating one match. The difference of the
//! latencies is the webhooks' round trips (AdmissionReview encoding, HTTPS on a kept
//! connection, the answer's checks and patch).
//!
//! Writes the `webhook-bench` section of docs/benchmarks.md (or `--output`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::report::{self, Table};
use rkube_conformance::webhook::{Answer, TestCa, WebhookServer};
use serde_json::json;

const VARIANTS: [(&str, &str); 3] = [
    ("plain", "no webhook"),
    ("validated", "1 validating webhook"),
    ("both", "1 mutating + 1 validating webhook"),
];

fn configmap(name: String) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}}))
        .expect("a configmap")
}

async fn setup(s: &RkubeServer, server: &WebhookServer, ca: &TestCa) -> Result<()> {
    for (ns, _) in VARIANTS {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": ns, "labels": {"bench": ns}}});
        s.ok_stdin(&["apply", "-f", "-"], &namespace.to_string());
    }
    let hook = |name: &str, path: &str, namespaces: &[&str]| {
        json!({"name": name, "clientConfig": {"url": server.url(path), "caBundle": ca.bundle()},
               "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                          "resources": ["configmaps"]}],
               "namespaceSelector": {"matchExpressions": [{"key": "bench", "operator": "In",
                                                            "values": namespaces}]},
               "sideEffects": "None", "admissionReviewVersions": ["v1"]})
    };
    let configs = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "bench-validate"},
         "webhooks": [hook("validate.bench.rkube", "/validate", &["validated", "both"])]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": "bench-mutate"},
         "webhooks": [hook("mutate.bench.rkube", "/mutate", &["both"])]},
    ]});
    s.ok_stdin(&["apply", "-f", "-"], &configs.to_string());
    Ok(())
}

/// `n` creates one after another; their latencies.
async fn creates(api: &Api<ConfigMap>, prefix: &str, n: usize) -> Result<Vec<Duration>> {
    let mut latencies = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        api.create(&PostParams::default(), &configmap(format!("{prefix}-{i}")))
            .await
            .with_context(|| format!("creating {prefix}-{i}"))?;
        latencies.push(started.elapsed());
    }
    Ok(latencies)
}

#[tokio::main]
async fn main() -> Result<()> {
    let report::Args { quick, output } = report::Args::parse();
    let (turns, per_turn) = if quick { (2, 100) } else { (4, 500) };
    let s = RkubeServer::start_with(&["--disable", "scheduler,controllers"]);
    let ca = TestCa::new("webhook-bench CA");
    let server = WebhookServer::start(
        &ca,
        &[],
        Arc::new(|path, _| match path {
            "/mutate" => Answer::patch(
                json!([{"op": "add", "path": "/metadata/labels", "value": {"bench": "mutated"}}]),
            ),
            _ => Answer::allow(),
        }),
    );
    setup(&s, &server, &ca).await?;
    let client = s.kube_client().await?;
    // Until both webhooks answer (the configurations reach the server's cache).
    let both: Api<ConfigMap> = Api::namespaced(client.clone(), "both");
    let deadline = Instant::now() + Duration::from_secs(30);
    for i in 0.. {
        let created = both.create(&PostParams::default(), &configmap(format!("ready-{i}"))).await?;
        let labelled = created.metadata.labels.unwrap_or_default().contains_key("bench");
        if labelled && !server.reviews_to("/validate").is_empty() {
            break;
        }
        if Instant::now() > deadline {
            bail!("the webhooks were not called within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut latencies: Vec<Vec<Duration>> = vec![Vec::new(); VARIANTS.len()];
    for turn in 0..turns {
        // Alternate the order, so that no variant always runs first.
        let order: Vec<usize> = match turn % 2 {
            0 => (0..VARIANTS.len()).collect(),
            _ => (0..VARIANTS.len()).rev().collect(),
        };
        for v in order {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), VARIANTS[v].0);
            latencies[v].extend(creates(&api, &format!("t{turn}"), per_turn).await?);
        }
    }
    let calls = server.reviews_to("/validate").len() + server.reviews_to("/mutate").len();
    let mut table = Table::new(&[
        "creates (one at a time)",
        "count",
        "p50",
        "p99",
        "p50 overhead",
        "p99 overhead",
    ]);
    for l in &mut latencies {
        l.sort();
    }
    let (base50, base99) =
        (report::percentile(&latencies[0], 50.0), report::percentile(&latencies[0], 99.0));
    for (i, (_, label)) in VARIANTS.iter().enumerate() {
        let (p50, p99) =
            (report::percentile(&latencies[i], 50.0), report::percentile(&latencies[i], 99.0));
        let over = |p: Duration, base: Duration| match i {
            0 => "-".to_string(),
            _ => format!("{:+.2} ms", (p.as_secs_f64() - base.as_secs_f64()) * 1000.0),
        };
        table.row(vec![
            label.to_string(),
            latencies[i].len().to_string(),
            report::ms(p50),
            report::ms(p99),
            over(p50, base50),
            over(p99, base99),
        ]);
    }
    let markdown = format!(
        "## webhook-bench\n\n{}\n\nConfigMap creates one at a time from one kube-rs client against `rkube server --disable scheduler,controllers`, {turns} alternating turns of {per_turn} per variant; webhooks in the benchmark process on loopback over HTTPS (`url`, CA bundle), {calls} webhook calls in all.\n\n{}",
        report::machine(),
        table.markdown()
    );
    println!("{markdown}");
    if !quick {
        report::write_section(&output, "webhook-bench", &markdown)?;
    }
    Ok(())
}
