//! Prometheus metrics in the text exposition format, for the components' `/metrics`
//! endpoints: a [`Histogram`] with fixed bucket bounds, and the `# HELP`/`# TYPE` header
//! every metric family starts with. Small on purpose: each component keeps its metrics as
//! plain fields and writes them out with these.

use std::fmt::Write;

/// A histogram: cumulative counts per upper bound, the sum and the count of observations.
#[derive(Clone, Debug)]
pub struct Histogram {
    bounds: Vec<f64>,
    /// Per bound, the observations at or under it.
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    /// A histogram with these (increasing) upper bounds; `+Inf` is implied.
    pub fn new(bounds: Vec<f64>) -> Histogram {
        let counts = vec![0; bounds.len()];
        Histogram { bounds, counts, sum: 0.0, count: 0 }
    }

    pub fn observe(&mut self, value: f64) {
        for (bound, count) in self.bounds.iter().zip(&mut self.counts) {
            if value <= *bound {
                *count += 1;
            }
        }
        self.sum += value;
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Writes `name_bucket`, `name_sum` and `name_count` lines; `labels` (`a="b",c="d"`, or
    /// empty) go on each.
    pub fn write(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (bound, count) in self.bounds.iter().zip(&self.counts) {
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {count}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", self.count);
        let braces =
            |labels: &str| if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
        let _ = writeln!(out, "{name}_sum{} {}", braces(labels), self.sum);
        let _ = writeln!(out, "{name}_count{} {}", braces(labels), self.count);
    }
}

/// `count` bounds from `start`, each `factor` times the last (Prometheus's
/// `ExponentialBuckets`).
pub fn exponential_buckets(start: f64, factor: f64, count: usize) -> Vec<f64> {
    std::iter::successors(Some(start), |b| Some(b * factor)).take(count).collect()
}

/// `count` bounds from `start`, `width` apart (`LinearBuckets`).
pub fn linear_buckets(start: f64, width: f64, count: usize) -> Vec<f64> {
    (0..count).map(|i| start + width * i as f64).collect()
}

/// The `# HELP` and `# TYPE` lines of a metric family.
pub fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative() {
        let mut h = Histogram::new(vec![0.1, 1.0]);
        h.observe(0.05);
        h.observe(0.5);
        h.observe(5.0);
        let mut out = String::new();
        h.write(&mut out, "x_seconds", "a=\"b\"");
        assert_eq!(
            out,
            "x_seconds_bucket{a=\"b\",le=\"0.1\"} 1\nx_seconds_bucket{a=\"b\",le=\"1\"} 2\nx_seconds_bucket{a=\"b\",le=\"+Inf\"} 3\nx_seconds_sum{a=\"b\"} 5.55\nx_seconds_count{a=\"b\"} 3\n"
        );
        let mut out = String::new();
        Histogram::new(vec![1.0]).write(&mut out, "y", "");
        assert_eq!(out, "y_bucket{le=\"1\"} 0\ny_bucket{le=\"+Inf\"} 0\ny_sum 0\ny_count 0\n");
        assert_eq!(exponential_buckets(0.001, 2.0, 3), [0.001, 0.002, 0.004]);
        assert_eq!(linear_buckets(0.25, 0.25, 2), [0.25, 0.5]);
    }
}
