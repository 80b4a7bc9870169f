//! Ingresses (`networking.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, arr, at, load_balancer_ips, name, st, text, TablePrinter, AGE, NAME};
use crate::validation;
use crate::validation::FieldError;

/// The strategy of this resource.
#[derive(Debug)]
pub struct Ingresses;

impl Strategy for Ingresses {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::networking::ingress(obj, old)
    }

    fn validate_subresource_update(
        &self,
        new: &Value,
        _old: &Value,
        _sub: &str,
    ) -> Vec<FieldError> {
        validation::networking::ingress_status(new)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
            NAME,
            text(
                "Class",
                "The name of the IngressClass resource that should be used for additional configuration",
            ),
            text(
                "Hosts",
                "Hosts that incoming requests are matched against before the ingress rule",
            ),
            text("Address", "Address is a list containing ingress points for the load-balancer"),
            text("Ports", "Ports of TLS configurations that open"),
            AGE,
        ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let class = at(obj, &["spec", "ingressClassName"]).and_then(Value::as_str).unwrap_or("<none>");
    let ports = if arr(obj, &["spec", "tls"]).is_empty() { "80" } else { "80, 443" };
    vec![
        name(obj),
        class.into(),
        ingress_hosts(arr(obj, &["spec", "rules"])).into(),
        load_balancer_ips(obj).into(),
        ports.into(),
        age(obj, now),
    ]
}

fn ingress_hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut hosts = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == MAX {
            more = true;
        }
        let host = st(rule, &["host"]);
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    if hosts.is_empty() {
        return "*".to_string();
    }
    let list = hosts.join(",");
    if more {
        format!("{list} + {} more...", rules.len() - MAX)
    } else {
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hosts_past_the_first_three_are_counted() {
        let rules: Vec<Value> =
            ["a", "", "b", "c", "d"].iter().map(|h| json!({"host": h})).collect();
        // Upstream counts the rules, not the hosts, past the first three.
        assert_eq!(ingress_hosts(&rules), "a,b,c + 2 more...");
        assert_eq!(ingress_hosts(&[json!({})]), "*");
    }
}
