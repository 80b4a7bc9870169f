//! Kubernetes' IP and CIDR libraries: `ip(s)`, `isIP(s)`, `ip.isCanonical(s)`, on IPs
//! `family()`, `isUnspecified()`, `isLoopback()`, `isLinkLocalMulticast()`,
//! `isLinkLocalUnicast()`, `isGlobalUnicast()`; `cidr(s)`, `isCIDR(s)`, on CIDRs
//! `containsIP(ip|s)`, `containsCIDR(cidr|s)`, `ip()`, `masked()`, `prefixLength()`; and
//! `string(ip)`, `string(cidr)`. Addresses parse as Go's `netip` parses them: no zones and no
//! IPv4-mapped IPv6 addresses.

use std::net::IpAddr;
use std::sync::Arc;

use cel::common::types::STRING_TYPE;
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};
use ipnet::IpNet;

use super::{fail, ok, ok_opaque, opaque, opaque_type, string, Out};

/// An IP address as a CEL value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CelIp(pub IpAddr);

impl Opaque for CelIp {
    fn runtime_type_name(&self) -> &str {
        "net.IP"
    }
}

/// A CIDR as a CEL value: the address as written and its prefix length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CelCidr(pub IpNet);

impl Opaque for CelCidr {
    fn runtime_type_name(&self) -> &str {
        "net.CIDR"
    }
}

pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let (ip, cidr) = (|| opaque_type("net.IP"), || opaque_type("net.CIDR"));
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], to_ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload("ip.isCanonical", "ip_is_canonical", vec![STRING_TYPE], is_canonical)?;
    env.add_overload("string", "ip_to_string", vec![ip()], to_string)?;
    env.add_overload("string", "cidr_to_string", vec![cidr()], to_string)?;
    env.add_member_overload("family", "ip_family", ip(), vec![], family)?;
    for (name, f) in [
        ("isUnspecified", is_unspecified as cel::common::functions::Function),
        ("isLoopback", is_loopback),
        ("isLinkLocalMulticast", is_link_local_multicast),
        ("isLinkLocalUnicast", is_link_local_unicast),
        ("isGlobalUnicast", is_global_unicast),
    ] {
        env.add_member_overload(name, &format!("ip_{name}"), ip(), vec![], f)?;
    }
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], to_cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_member_overload("containsIP", "cidr_contains_ip_ip", cidr(), vec![ip()], contains_ip)?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip_string",
        cidr(),
        vec![STRING_TYPE],
        contains_ip,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr",
        cidr(),
        vec![cidr()],
        contains_cidr,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr_string",
        cidr(),
        vec![STRING_TYPE],
        contains_cidr,
    )?;
    env.add_member_overload("ip", "cidr_ip", cidr(), vec![], cidr_ip)?;
    env.add_member_overload("masked", "cidr_masked", cidr(), vec![], masked)?;
    env.add_member_overload("prefixLength", "cidr_prefix_length", cidr(), vec![], prefix_length)?;
    Ok(())
}

/// An address as `netip.ParseAddr` reads it, refusing what Kubernetes refuses.
fn parse_ip(s: &str) -> Result<IpAddr, String> {
    if s.contains('%') {
        return Err("IP address with zone value is not allowed".to_string());
    }
    let ip: IpAddr = s.parse().map_err(|_| format!("ParseAddr({s:?}): unable to parse IP"))?;
    if let IpAddr::V6(v6) = ip {
        if v6.to_ipv4_mapped().is_some() {
            return Err("IPv4-mapped IPv6 address is not allowed".to_string());
        }
    }
    Ok(ip)
}

fn parse_cidr(s: &str) -> Result<IpNet, String> {
    let (addr, _) = s.split_once('/').ok_or_else(|| format!("netip.ParsePrefix({s:?}): no '/'"))?;
    parse_ip(addr)?;
    s.parse::<IpNet>().map_err(|_| format!("netip.ParsePrefix({s:?}): bad bits after slash"))
}

fn to_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let s = string(&args[0])?;
    let ip = parse_ip(s).map_err(|e| {
        fail("ip", format!("IP Address {s:?} parse error during conversion from string: {e}"))
    })?;
    ok_opaque(CelIp(ip))
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(parse_ip(string(&args[0])?).is_ok()))
}

fn is_canonical<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let s = string(&args[0])?;
    let ip = parse_ip(s).map_err(|e| {
        fail(
            "ip.isCanonical",
            format!("IP Address {s:?} parse error during conversion from string: {e}"),
        )
    })?;
    ok(Value::Bool(ip.to_string() == s))
}

fn to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let text = match opaque::<CelIp>(&args[0]) {
        Ok(ip) => ip.0.to_string(),
        Err(_) => opaque::<CelCidr>(&args[0])?.0.to_string(),
    };
    ok(Value::String(Arc::new(text)))
}

fn this_ip(args: &[CowVal<'_, '_>]) -> Result<IpAddr, ExecutionError> {
    opaque::<CelIp>(&args[0]).map(|ip| ip.0)
}

fn family<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Int(if this_ip(&args)?.is_ipv4() { 4 } else { 6 }))
}

fn is_unspecified<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(this_ip(&args)?.is_unspecified()))
}

fn is_loopback<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(this_ip(&args)?.is_loopback()))
}

fn link_local_multicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
        IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
    }
}

fn link_local_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
    }
}

fn is_link_local_multicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(link_local_multicast(&this_ip(&args)?)))
}

fn is_link_local_unicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(link_local_unicast(&this_ip(&args)?)))
}

/// Go's `IsGlobalUnicast`: neither unspecified, loopback, multicast, link-local nor the
/// IPv4 broadcast address (private addresses count).
fn is_global_unicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let ip = this_ip(&args)?;
    let broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    ok(Value::Bool(
        !(ip.is_unspecified()
            || ip.is_loopback()
            || ip.is_multicast()
            || link_local_unicast(&ip)
            || broadcast),
    ))
}

fn to_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let s = string(&args[0])?;
    let cidr = parse_cidr(s).map_err(|e| {
        fail(
            "cidr",
            format!("network address {s:?} parse error during conversion from string: {e}"),
        )
    })?;
    ok_opaque(CelCidr(cidr))
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Bool(parse_cidr(string(&args[0])?).is_ok()))
}

fn this_cidr(args: &[CowVal<'_, '_>]) -> Result<IpNet, ExecutionError> {
    opaque::<CelCidr>(&args[0]).map(|c| c.0)
}

fn contains_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let cidr = this_cidr(&args)?;
    let ip = match opaque::<CelIp>(&args[1]) {
        Ok(ip) => ip.0,
        Err(_) => parse_ip(string(&args[1])?).map_err(|e| fail("containsIP", e))?,
    };
    ok(Value::Bool(cidr.contains(&ip)))
}

fn contains_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    let cidr = this_cidr(&args)?;
    let other = match opaque::<CelCidr>(&args[1]) {
        Ok(c) => c.0,
        Err(_) => parse_cidr(string(&args[1])?).map_err(|e| fail("containsCIDR", e))?,
    };
    ok(Value::Bool(cidr.contains(&other.trunc()) && other.prefix_len() >= cidr.prefix_len()))
}

fn cidr_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok_opaque(CelIp(this_cidr(&args)?.addr()))
}

fn masked<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok_opaque(CelCidr(this_cidr(&args)?.trunc()))
}

fn prefix_length<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Out<'b, 'v> {
    ok(Value::Int(i64::from(this_cidr(&args)?.prefix_len())))
}
