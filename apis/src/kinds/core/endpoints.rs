//! Endpoints (`v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, arr, int, name, st, text, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct Endpoints;

impl Strategy for Endpoints {
    fn default(&self, obj: &mut Value) {
        defaults::core::endpoints(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::core::endpoints::endpoints(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter =
    TablePrinter { columns: &[NAME, text("Endpoints", D_EP_SUBSETS), AGE], row };

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    vec![name(obj), endpoints(arr(obj, &["subsets"])).into(), age(obj, now)]
}

fn endpoints(subsets: &[Value]) -> String {
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    const MAX: usize = 3;
    let mut list = Vec::new();
    let mut more = false;
    let mut count = 0;
    for subset in subsets {
        let addresses = arr(subset, &["addresses"]);
        let ports = arr(subset, &["ports"]);
        if ports.is_empty() {
            // Headless services may have no ports.
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(st(a, &["ip"]).to_string());
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(st(a, &["ip"]), int(port, &["port"])));
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

// Column descriptions: the API field documentation upstream takes them from.
const D_EP_SUBSETS: &str = "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_hosts_are_bracketed() {
        assert_eq!(join_host_port("fd00::1", 80), "[fd00::1]:80");
    }
}
