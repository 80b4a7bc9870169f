//! The service CIDR routed to a local dummy device: a packet to a cluster IP that no rule
//! has translated (a Service not programmed yet, an address not allocated) is dropped on
//! this machine instead of following the default route out of it. On kernels built without
//! dummy devices (`CONFIG_DUMMY`), the device is a bridge without ports, which drops what
//! is sent to it just as surely. Packets to programmed
//! cluster IPs are translated before routing (nat PREROUTING and OUTPUT), so they never
//! reach the device.

use std::process::Command;

use ipnet::Ipv4Net;

/// Why the route could not be made or removed.
#[derive(Debug, thiserror::Error)]
#[error("cannot {what}: {message} (the proxy needs iproute2's `ip` and root, CAP_NET_ADMIN)")]
pub struct DeviceError {
    what: String,
    message: String,
}

/// The device for a proxy whose chains are named with `prefix` (`KUBE` gives `kube-svc`):
/// an interface name, at most 15 characters.
pub fn device_name(prefix: &str) -> String {
    let mut name = format!("{}-svc", prefix.to_ascii_lowercase());
    name.truncate(15);
    name
}

fn ip(args: &[&str], what: &str) -> Result<(), DeviceError> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| DeviceError { what: what.to_string(), message: e.to_string() })?;
    if output.status.success() {
        return Ok(());
    }
    Err(DeviceError {
        what: what.to_string(),
        message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
    })
}

/// Makes the dummy device `name` (if missing), brings it up and routes `cidr` to it.
pub fn route_to_dummy(name: &str, cidr: Ipv4Net) -> Result<(), DeviceError> {
    if !std::path::Path::new(&format!("/sys/class/net/{name}")).exists() {
        let what = format!("make the dummy device {name}");
        if let Err(e) = ip(&["link", "add", name, "type", "dummy"], &what) {
            if !e.message.contains("Unknown device type") {
                return Err(e);
            }
            ip(&["link", "add", name, "type", "bridge"], &what)?;
        }
    }
    ip(&["link", "set", name, "up"], &format!("bring {name} up"))?;
    let cidr = cidr.trunc().to_string();
    ip(&["route", "replace", &cidr, "dev", name], &format!("route {cidr} to {name}"))
}

/// Removes the device (and with it its route); true when there was one.
pub fn remove(name: &str) -> Result<bool, DeviceError> {
    if !std::path::Path::new(&format!("/sys/class/net/{name}")).exists() {
        return Ok(false);
    }
    ip(&["link", "del", name], &format!("remove {name}"))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_an_interface_name() {
        assert_eq!(device_name("KUBE"), "kube-svc");
        assert_eq!(device_name("RKTEST1234567890"), "rktest123456789");
    }
}
