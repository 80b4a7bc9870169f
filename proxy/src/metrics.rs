//! The proxy's metrics with kube-proxy's names, served (as kube-proxy's
//! `--metrics-bind-address`, default `127.0.0.1:10249`) at `/metrics`, with `/healthz` and
//! `/proxyMode` beside them.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::routing::get;
use rkube_runtime::metrics::{exponential_buckets, header, linear_buckets, Histogram};

/// What one sync did, for [`Metrics::synced`].
pub struct SyncRecord {
    pub full: bool,
    pub took: Duration,
    /// The rules in each table after the sync.
    pub filter_rules: usize,
    pub nat_rules: usize,
    /// The `last-change-trigger-time`s of the endpoint changes this sync put in place.
    pub triggers: Vec<SystemTime>,
}

struct Inner {
    sync: Histogram,
    full_sync: Histogram,
    partial_sync: Histogram,
    programming: Histogram,
    last_sync: Option<SystemTime>,
    last_queued: Option<SystemTime>,
    endpoint_changes: u64,
    service_changes: u64,
    restore_failures: u64,
    partial_restore_failures: u64,
    filter_rules: usize,
    nat_rules: usize,
}

/// The proxy's metrics; shared between its loop and the endpoint serving them.
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        // kube-proxy's buckets: syncs from 1 ms doubling 15 times; network programming
        // 0.25 s and 0.5 s, then every second to a minute, then coarser to five minutes.
        let sync = || Histogram::new(exponential_buckets(0.001, 2.0, 15));
        let mut programming = linear_buckets(0.25, 0.25, 2);
        programming.extend(linear_buckets(1.0, 1.0, 59));
        programming.extend(linear_buckets(60.0, 5.0, 12));
        programming.extend(linear_buckets(120.0, 30.0, 7));
        Metrics {
            inner: Mutex::new(Inner {
                sync: sync(),
                full_sync: sync(),
                partial_sync: sync(),
                programming: Histogram::new(programming),
                last_sync: None,
                last_queued: None,
                endpoint_changes: 0,
                service_changes: 0,
                restore_failures: 0,
                partial_restore_failures: 0,
                filter_rules: 0,
                nat_rules: 0,
            }),
        }
    }
}

impl Metrics {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Changes came in (a sync is queued).
    pub fn queued(&self, services: usize, endpoints: usize) {
        let mut inner = self.inner();
        inner.service_changes += services as u64;
        inner.endpoint_changes += endpoints as u64;
        inner.last_queued = Some(SystemTime::now());
    }

    /// A sync wrote its rules.
    pub fn synced(&self, record: SyncRecord) {
        let now = SystemTime::now();
        let mut inner = self.inner();
        let seconds = record.took.as_secs_f64();
        inner.sync.observe(seconds);
        match record.full {
            true => inner.full_sync.observe(seconds),
            false => inner.partial_sync.observe(seconds),
        }
        observe_programming(&mut inner, &record.triggers, now);
        inner.last_sync = Some(now);
        inner.filter_rules = record.filter_rules;
        inner.nat_rules = record.nat_rules;
    }

    /// Changes that needed no rule written (e.g. a slice of a Service not known yet) are in
    /// place now.
    pub fn programmed(&self, triggers: &[SystemTime]) {
        observe_programming(&mut self.inner(), triggers, SystemTime::now());
    }

    /// A sync's `iptables-restore` failed.
    pub fn failed(&self, full: bool) {
        let mut inner = self.inner();
        inner.restore_failures += 1;
        if !full {
            inner.partial_restore_failures += 1;
        }
    }

    /// When the rules were last written.
    pub fn last_sync(&self) -> Option<SystemTime> {
        self.inner().last_sync
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let inner = self.inner();
        let mut out = String::new();
        let histograms = [
            (
                "kubeproxy_sync_proxy_rules_duration_seconds",
                "SyncProxyRules latency in seconds",
                &inner.sync,
            ),
            (
                "kubeproxy_sync_full_proxy_rules_duration_seconds",
                "SyncProxyRules latency in seconds for full resyncs",
                &inner.full_sync,
            ),
            (
                "kubeproxy_sync_partial_proxy_rules_duration_seconds",
                "SyncProxyRules latency in seconds for partial resyncs",
                &inner.partial_sync,
            ),
            (
                "kubeproxy_network_programming_duration_seconds",
                "In Cluster Network Programming Latency in seconds",
                &inner.programming,
            ),
        ];
        for (name, help, histogram) in histograms {
            header(&mut out, name, "histogram", help);
            histogram.write(&mut out, name, "");
        }
        let seconds = |t: Option<SystemTime>| {
            t.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map_or(0.0, |d| d.as_secs_f64())
        };
        let gauges = [
            (
                "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
                "The last time proxy rules were successfully synced",
                seconds(inner.last_sync),
            ),
            (
                "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
                "The last time a sync of proxy rules was queued",
                seconds(inner.last_queued),
            ),
        ];
        for (name, help, value) in gauges {
            header(&mut out, name, "gauge", help);
            out.push_str(&format!("{name} {value}\n"));
        }
        let counters = [
            (
                "kubeproxy_sync_proxy_rules_endpoint_changes_total",
                "Cumulative proxy rules Endpoint changes",
                inner.endpoint_changes,
            ),
            (
                "kubeproxy_sync_proxy_rules_service_changes_total",
                "Cumulative proxy rules Service changes",
                inner.service_changes,
            ),
            (
                "kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
                "Cumulative proxy iptables restore failures",
                inner.restore_failures,
            ),
            (
                "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total",
                "Cumulative proxy iptables partial restore failures",
                inner.partial_restore_failures,
            ),
        ];
        for (name, help, value) in counters {
            header(&mut out, name, "counter", help);
            out.push_str(&format!("{name} {value}\n"));
        }
        let name = "kubeproxy_sync_proxy_rules_iptables_total";
        header(&mut out, name, "gauge", "Total number of iptables rules owned by kube-proxy");
        out.push_str(&format!("{name}{{table=\"filter\"}} {}\n", inner.filter_rules));
        out.push_str(&format!("{name}{{table=\"nat\"}} {}\n", inner.nat_rules));
        out
    }
}

fn observe_programming(inner: &mut Inner, triggers: &[SystemTime], now: SystemTime) {
    for trigger in triggers {
        let latency = now.duration_since(*trigger).unwrap_or_default();
        inner.programming.observe(latency.as_secs_f64());
    }
}

/// Serves `/metrics`, `/healthz` and `/proxyMode` on `address` until the task is dropped.
pub async fn serve(
    address: SocketAddr,
    metrics: Arc<Metrics>,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let bound = listener.local_addr()?;
    let app = axum::Router::new()
        .route("/metrics", get(move || async move { metrics.render() }))
        .route("/healthz", get(|| async { "ok" }))
        .route("/proxyMode", get(|| async { "iptables" }));
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::warn!(error = %e, "the proxy's metrics endpoint stopped");
        }
    });
    Ok((bound, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_programming_latency_is_measured_from_the_trigger() {
        let metrics = Metrics::default();
        metrics.queued(1, 2);
        metrics.synced(SyncRecord {
            full: false,
            took: Duration::from_millis(3),
            filter_rules: 4,
            nat_rules: 20,
            triggers: vec![SystemTime::now() - Duration::from_millis(700)],
        });
        let text = metrics.render();
        assert!(
            text.contains("kubeproxy_network_programming_duration_seconds_bucket{le=\"0.5\"} 0\n")
        );
        assert!(
            text.contains("kubeproxy_network_programming_duration_seconds_bucket{le=\"1\"} 1\n")
        );
        assert!(text.contains(
            "kubeproxy_sync_partial_proxy_rules_duration_seconds_bucket{le=\"0.004\"} 1\n"
        ));
        assert!(text.contains("kubeproxy_sync_full_proxy_rules_duration_seconds_count 0\n"));
        assert!(text.contains("kubeproxy_sync_proxy_rules_endpoint_changes_total 2\n"));
        assert!(text.contains("kubeproxy_sync_proxy_rules_iptables_total{table=\"nat\"} 20\n"));
    }
}
