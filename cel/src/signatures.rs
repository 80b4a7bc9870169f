//! The declarations the checker ([`crate::check`]) resolves calls against: every function of
//! the environment (`library::env`) with the overloads cel-go and Kubernetes declare for it —
//! the standard library, the `strings` and `base64` extensions and Kubernetes' lists, regex,
//! URL, quantity, IP/CIDR, sets and format libraries. A signature is written as cel-go prints types
//! (`list(A)`, `map(A, B)`, `kubernetes.Quantity`), `A` and `B` being type parameters.
//! Functions whose types the checker does not follow (the authorizer's, optionals') are
//! declared without overloads: calls to them are accepted and their results are `dyn`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

/// A type in a signature.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Pattern {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Timestamp,
    Duration,
    Dyn,
    /// A type parameter (`A`, `B`).
    Param(char),
    List(Box<Pattern>),
    Map(Box<Pattern>, Box<Pattern>),
    /// An opaque type of a Kubernetes library (`kubernetes.Quantity`, `net.IP`).
    Opaque(&'static str),
}

/// One overload: a receiver type for a member function, the arguments and the result.
#[derive(Debug)]
pub(crate) struct Overload {
    pub receiver: Option<Pattern>,
    pub args: Vec<Pattern>,
    pub result: Pattern,
}

/// A function's overloads; `None` when the checker does not follow its types.
pub(crate) fn lookup(name: &str) -> Option<Option<&'static [Overload]>> {
    if UNCHECKED.contains(&name) {
        return Some(None);
    }
    DECLARED.get(name).map(|o| Some(o.as_slice()))
}

/// Functions the environment has whose types the checker does not follow.
const UNCHECKED: &[&str] = &[
    // The authorizer library: its checks are values of several opaque types.
    "group",
    "resource",
    "subresource",
    "namespace",
    "name",
    "path",
    "check",
    "serviceAccount",
    "allowed",
    "reason",
    "errored",
    "error",
    // Optionals.
    "optional.none",
    "optional.of",
    "optional.ofNonZeroValue",
    "value",
    "hasValue",
    "or",
    "orValue",
    // Types as values.
    "type",
    // Formats by name, and validation results (optionals).
    "format.named",
];

/// Receiver (empty for a global function), name, arguments, result.
const SIGNATURES: &[(&str, &str, &str, &str)] = &[
    // Standard: sizes and strings.
    ("", "size", "string", "int"),
    ("", "size", "bytes", "int"),
    ("", "size", "list(A)", "int"),
    ("", "size", "map(A, B)", "int"),
    ("string", "size", "", "int"),
    ("bytes", "size", "", "int"),
    ("list(A)", "size", "", "int"),
    ("map(A, B)", "size", "", "int"),
    ("string", "contains", "string", "bool"),
    ("string", "startsWith", "string", "bool"),
    ("string", "endsWith", "string", "bool"),
    ("string", "matches", "string", "bool"),
    ("", "matches", "string, string", "bool"),
    // Conversions.
    ("", "bool", "bool", "bool"),
    ("", "bool", "string", "bool"),
    ("", "bytes", "bytes", "bytes"),
    ("", "bytes", "string", "bytes"),
    ("", "double", "double", "double"),
    ("", "double", "int", "double"),
    ("", "double", "uint", "double"),
    ("", "double", "string", "double"),
    ("", "int", "int", "int"),
    ("", "int", "uint", "int"),
    ("", "int", "double", "int"),
    ("", "int", "string", "int"),
    ("", "int", "google.protobuf.Timestamp", "int"),
    ("", "uint", "uint", "uint"),
    ("", "uint", "int", "uint"),
    ("", "uint", "double", "uint"),
    ("", "uint", "string", "uint"),
    ("", "string", "string", "string"),
    ("", "string", "bool", "string"),
    ("", "string", "int", "string"),
    ("", "string", "uint", "string"),
    ("", "string", "double", "string"),
    ("", "string", "bytes", "string"),
    ("", "string", "google.protobuf.Timestamp", "string"),
    ("", "string", "google.protobuf.Duration", "string"),
    ("", "string", "net.IP", "string"),
    ("", "string", "net.CIDR", "string"),
    ("", "duration", "google.protobuf.Duration", "google.protobuf.Duration"),
    ("", "duration", "string", "google.protobuf.Duration"),
    ("", "timestamp", "google.protobuf.Timestamp", "google.protobuf.Timestamp"),
    ("", "timestamp", "string", "google.protobuf.Timestamp"),
    ("", "timestamp", "int", "google.protobuf.Timestamp"),
    ("", "dyn", "A", "dyn"),
    // Timestamp and duration accessors.
    ("google.protobuf.Timestamp", "getFullYear", "", "int"),
    ("google.protobuf.Timestamp", "getFullYear", "string", "int"),
    ("google.protobuf.Timestamp", "getMonth", "", "int"),
    ("google.protobuf.Timestamp", "getMonth", "string", "int"),
    ("google.protobuf.Timestamp", "getDayOfYear", "", "int"),
    ("google.protobuf.Timestamp", "getDayOfYear", "string", "int"),
    ("google.protobuf.Timestamp", "getDayOfMonth", "", "int"),
    ("google.protobuf.Timestamp", "getDayOfMonth", "string", "int"),
    ("google.protobuf.Timestamp", "getDate", "", "int"),
    ("google.protobuf.Timestamp", "getDate", "string", "int"),
    ("google.protobuf.Timestamp", "getDayOfWeek", "", "int"),
    ("google.protobuf.Timestamp", "getDayOfWeek", "string", "int"),
    ("google.protobuf.Timestamp", "getHours", "", "int"),
    ("google.protobuf.Timestamp", "getHours", "string", "int"),
    ("google.protobuf.Timestamp", "getMinutes", "", "int"),
    ("google.protobuf.Timestamp", "getMinutes", "string", "int"),
    ("google.protobuf.Timestamp", "getSeconds", "", "int"),
    ("google.protobuf.Timestamp", "getSeconds", "string", "int"),
    ("google.protobuf.Timestamp", "getMilliseconds", "", "int"),
    ("google.protobuf.Timestamp", "getMilliseconds", "string", "int"),
    ("google.protobuf.Duration", "getHours", "", "int"),
    ("google.protobuf.Duration", "getMinutes", "", "int"),
    ("google.protobuf.Duration", "getSeconds", "", "int"),
    ("google.protobuf.Duration", "getMilliseconds", "", "int"),
    // The strings extension.
    ("string", "charAt", "int", "string"),
    ("string", "indexOf", "string", "int"),
    ("string", "indexOf", "string, int", "int"),
    ("string", "lastIndexOf", "string", "int"),
    ("string", "lastIndexOf", "string, int", "int"),
    ("string", "lowerAscii", "", "string"),
    ("string", "upperAscii", "", "string"),
    ("string", "replace", "string, string", "string"),
    ("string", "replace", "string, string, int", "string"),
    ("string", "split", "string", "list(string)"),
    ("string", "split", "string, int", "list(string)"),
    ("string", "substring", "int", "string"),
    ("string", "substring", "int, int", "string"),
    ("string", "trim", "", "string"),
    ("string", "reverse", "", "string"),
    ("string", "format", "list(dyn)", "string"),
    ("list(string)", "join", "", "string"),
    ("list(string)", "join", "string", "string"),
    ("", "strings.quote", "string", "string"),
    // The base64 extension.
    ("", "base64.encode", "bytes", "string"),
    ("", "base64.decode", "string", "bytes"),
    // Kubernetes lists.
    ("list(A)", "indexOf", "A", "int"),
    ("list(A)", "lastIndexOf", "A", "int"),
    ("list(int)", "sum", "", "int"),
    ("list(uint)", "sum", "", "uint"),
    ("list(double)", "sum", "", "double"),
    ("list(google.protobuf.Duration)", "sum", "", "google.protobuf.Duration"),
    // Kubernetes regex.
    ("string", "find", "string", "string"),
    ("string", "findAll", "string", "list(string)"),
    ("string", "findAll", "string, int", "list(string)"),
    // Kubernetes URLs.
    ("", "url", "string", "kubernetes.URL"),
    ("", "isURL", "string", "bool"),
    ("kubernetes.URL", "getScheme", "", "string"),
    ("kubernetes.URL", "getHost", "", "string"),
    ("kubernetes.URL", "getHostname", "", "string"),
    ("kubernetes.URL", "getPort", "", "string"),
    ("kubernetes.URL", "getEscapedPath", "", "string"),
    ("kubernetes.URL", "getQuery", "", "map(string, list(string))"),
    // Kubernetes quantities.
    ("", "quantity", "string", "kubernetes.Quantity"),
    ("", "isQuantity", "string", "bool"),
    ("kubernetes.Quantity", "sign", "", "int"),
    ("kubernetes.Quantity", "isInteger", "", "bool"),
    ("kubernetes.Quantity", "asInteger", "", "int"),
    ("kubernetes.Quantity", "asApproximateFloat", "", "double"),
    ("kubernetes.Quantity", "add", "kubernetes.Quantity", "kubernetes.Quantity"),
    ("kubernetes.Quantity", "add", "int", "kubernetes.Quantity"),
    ("kubernetes.Quantity", "sub", "kubernetes.Quantity", "kubernetes.Quantity"),
    ("kubernetes.Quantity", "sub", "int", "kubernetes.Quantity"),
    ("kubernetes.Quantity", "isLessThan", "kubernetes.Quantity", "bool"),
    ("kubernetes.Quantity", "isGreaterThan", "kubernetes.Quantity", "bool"),
    ("kubernetes.Quantity", "compareTo", "kubernetes.Quantity", "int"),
    // Kubernetes IPs and CIDRs.
    ("", "ip", "string", "net.IP"),
    ("", "isIP", "string", "bool"),
    ("", "ip.isCanonical", "string", "bool"),
    ("net.IP", "family", "", "int"),
    ("net.IP", "isUnspecified", "", "bool"),
    ("net.IP", "isLoopback", "", "bool"),
    ("net.IP", "isLinkLocalMulticast", "", "bool"),
    ("net.IP", "isLinkLocalUnicast", "", "bool"),
    ("net.IP", "isGlobalUnicast", "", "bool"),
    ("", "cidr", "string", "net.CIDR"),
    ("", "isCIDR", "string", "bool"),
    ("net.CIDR", "containsIP", "net.IP", "bool"),
    ("net.CIDR", "containsIP", "string", "bool"),
    ("net.CIDR", "containsCIDR", "net.CIDR", "bool"),
    ("net.CIDR", "containsCIDR", "string", "bool"),
    ("net.CIDR", "ip", "", "net.IP"),
    ("net.CIDR", "masked", "", "net.CIDR"),
    ("net.CIDR", "prefixLength", "", "int"),
    // Kubernetes formats (`format.<name>()` are added below).
    ("kubernetes.NamedFormat", "validate", "string", "dyn"),
    // Kubernetes sets.
    ("", "sets.contains", "list(A), list(A)", "bool"),
    ("", "sets.equivalent", "list(A), list(A)", "bool"),
    ("", "sets.intersects", "list(A), list(A)", "bool"),
];

/// The element types Kubernetes' `isSorted`, `min` and `max` take lists of.
const COMPARABLE: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "google.protobuf.Duration",
    "google.protobuf.Timestamp",
];

static DECLARED: LazyLock<BTreeMap<String, Vec<Overload>>> = LazyLock::new(|| {
    let mut declared: BTreeMap<String, Vec<Overload>> = BTreeMap::new();
    let mut add = |receiver: &str, name: &str, args: &str, result: &str| {
        let overload = Overload {
            receiver: (!receiver.is_empty()).then(|| parse(receiver)),
            args: split(args).into_iter().map(parse).collect(),
            result: parse(result),
        };
        declared.entry(name.to_string()).or_default().push(overload);
    };
    for (receiver, name, args, result) in SIGNATURES {
        add(receiver, name, args, result);
    }
    for name in crate::library::format::NAMES {
        add("", &format!("format.{name}"), "", "kubernetes.NamedFormat");
    }
    for element in COMPARABLE {
        let list = format!("list({element})");
        add(&list, "isSorted", "", "bool");
        add(&list, "min", "", element);
        add(&list, "max", "", element);
    }
    declared
});

/// `text` split at its top-level commas.
fn split(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = text[start..].trim();
    if !last.is_empty() {
        parts.push(last);
    }
    parts
}

/// A type as cel-go prints it.
fn parse(text: &str) -> Pattern {
    let text = text.trim();
    if let Some(inner) = text.strip_prefix("list(").and_then(|t| t.strip_suffix(')')) {
        return Pattern::List(Box::new(parse(inner)));
    }
    if let Some(inner) = text.strip_prefix("map(").and_then(|t| t.strip_suffix(')')) {
        let parts = split(inner);
        return Pattern::Map(Box::new(parse(parts[0])), Box::new(parse(parts[1])));
    }
    match text {
        "bool" => Pattern::Bool,
        "int" => Pattern::Int,
        "uint" => Pattern::Uint,
        "double" => Pattern::Double,
        "string" => Pattern::String,
        "bytes" => Pattern::Bytes,
        "null_type" => Pattern::Null,
        "google.protobuf.Timestamp" => Pattern::Timestamp,
        "google.protobuf.Duration" => Pattern::Duration,
        "dyn" => Pattern::Dyn,
        "A" => Pattern::Param('A'),
        "B" => Pattern::Param('B'),
        "kubernetes.URL" => Pattern::Opaque("kubernetes.URL"),
        "kubernetes.Quantity" => Pattern::Opaque("kubernetes.Quantity"),
        "net.IP" => Pattern::Opaque("net.IP"),
        "net.CIDR" => Pattern::Opaque("net.CIDR"),
        "kubernetes.NamedFormat" => Pattern::Opaque("kubernetes.NamedFormat"),
        other => panic!("unknown type {other:?} in a signature"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_signature_reads() {
        assert!(super::DECLARED.len() > 50);
        let size = super::lookup("size").unwrap().unwrap();
        assert_eq!(size.len(), 8);
        assert!(super::lookup("authorizerThing").is_none());
        assert!(super::lookup("check").unwrap().is_none());
    }
}
