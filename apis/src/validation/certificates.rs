//! Validation of certificates.k8s.io/v1: CertificateSigningRequests, with upstream's (v1.33)
//! messages and field paths (`ValidateCertificateSigningRequest{Create,Update}`): the
//! request, signer name, usages and expiration, the conditions, the issued certificate and
//! what an update may change.
//!
//! Metadata is checked by the caller. A CSR's `spec.request` must hold a PEM block of type
//! CERTIFICATE REQUEST, found the way Go's `pem.Decode` finds it. rkube-apis has no X.509
//! parser, so the DER inside (and its signature) is not checked: a request upstream rejects
//! with an x509/asn1 parse error is accepted here. Likewise `status.certificate` is checked
//! for its PEM blocks only. Upstream's "updates may not modify a condition" message ends with
//! a `cmp.Diff` that go-cmp randomises on purpose; rkube gives the first line only (as
//! `core::persistent_volume` does).

use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;
use serde_json::{json, Value};

use super::values::{items, str_of, text};
use super::{name_problems, FieldError, NameRule};
use crate::gofmt::go_quote;

const LEGACY_UNKNOWN_SIGNER: &str = "kubernetes.io/legacy-unknown";
/// Every key usage upstream knows (`allValidUsages.List()`: sorted).
const KEY_USAGES: [&str; 23] = [
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];
const APPROVED: &str = "Approved";
const DENIED: &str = "Denied";
const FAILED: &str = "Failed";
/// Condition types whose status may only be True.
const TRUE_ONLY_CONDITIONS: [&str; 3] = [APPROVED, DENIED, FAILED];
const ALL_STATUSES: [&str; 3] = ["False", "True", "Unknown"];
const MIN_EXPIRATION_SECONDS: i64 = 600;
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const DNS1123_LABEL_MAX: usize = 63;

/// What an update tolerates because the stored object already has it (upstream's
/// `certificateValidationOptions` for a plain update: approval conditions and the
/// certificate can only be set through subresources).
#[derive(Default)]
struct CsrOptions {
    allow_both_approved_and_denied: bool,
    allow_legacy_signer_name: bool,
    allow_duplicate_condition_types: bool,
    allow_empty_condition_type: bool,
    allow_arbitrary_certificate: bool,
    allow_unknown_usages: bool,
    allow_duplicate_usages: bool,
}

impl CsrOptions {
    fn new(obj: &Value, old: Option<&Value>) -> CsrOptions {
        let Some(old) = old else { return CsrOptions::default() };
        let types: Vec<&str> = conditions(old).iter().map(|c| str_of(&c["type"])).collect();
        let usages: Vec<&str> = items(&old["spec"]["usages"]).iter().map(str_of).collect();
        let old_cert = bytes_of(&old["status"]["certificate"]);
        CsrOptions {
            allow_both_approved_and_denied: types.contains(&APPROVED) && types.contains(&DENIED),
            allow_legacy_signer_name: str_of(&old["spec"]["signerName"]) == LEGACY_UNKNOWN_SIGNER,
            allow_duplicate_condition_types: has_duplicates(&types),
            allow_empty_condition_type: types.contains(&""),
            allow_arbitrary_certificate: bytes_of(&obj["status"]["certificate"]) == old_cert
                || certificate_problem(old_cert.as_deref().unwrap_or_default()).is_some(),
            allow_unknown_usages: usages.iter().any(|u| !KEY_USAGES.contains(u)),
            allow_duplicate_usages: has_duplicates(&usages),
        }
    }
}

fn has_duplicates(values: &[&str]) -> bool {
    values.iter().enumerate().any(|(i, v)| values[..i].contains(v))
}

fn conditions(csr: &Value) -> &[Value] {
    items(&csr["status"]["conditions"])
}

/// A `[]byte` field's content (base64 in JSON); `None` when unset, as Go's nil slice.
fn bytes_of(v: &Value) -> Option<Vec<u8>> {
    let s = v.as_str()?;
    let cleaned: String = s.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    Some(go_std_base64().decode(cleaned).unwrap_or_else(|_| s.as_bytes().to_vec()))
}

/// A `[]byte` as `%#v` prints it: `[]byte{0x2d, 0x2d}`, or `[]byte(nil)`.
fn go_bytes(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "[]byte(nil)".to_string(),
        Some(bytes) => {
            let shown: Vec<String> = bytes.iter().map(|b| format!("0x{b:x}")).collect();
            format!("[]byte{{{}}}", shown.join(", "))
        }
    }
}

/// A CertificateSigningRequest, on create (`old` is `None`) or a plain update.
///
/// Upstream's update strategy puts the old spec and status back before validating, so an
/// update never changes them; rkube's registry restores the status but not the spec, so the
/// spec checks here apply to whatever spec the update carries.
pub fn certificate_signing_request(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    csr_write(obj, old, Paths::default())
}

/// What a write through a subresource may set beyond a plain update (upstream's
/// `allowSettingCertificate` and `allowSettingApprovalConditions`).
#[derive(Clone, Copy, Default)]
struct Paths {
    approval: bool,
    certificate: bool,
}

/// A write of a CertificateSigningRequest through its `status` subresource (which may set
/// the certificate, once) or its `approval` subresource (which may add or change the
/// Approved and Denied conditions): upstream's `ValidateCertificateSigningRequestStatusUpdate`
/// and `...ApprovalUpdate`. Other subresources are checked as a plain update.
pub fn certificate_signing_request_subresource(
    obj: &Value,
    old: &Value,
    subresource: &str,
) -> Vec<FieldError> {
    let paths = Paths { approval: subresource == "approval", certificate: subresource == "status" };
    csr_write(obj, Some(old), paths)
}

fn csr_write(obj: &Value, old: Option<&Value>, paths: Paths) -> Vec<FieldError> {
    let opts = CsrOptions::new(obj, old);
    let mut errors = csr_spec(&obj["spec"], &opts);
    csr_conditions(obj, &opts, &mut errors);
    if !opts.allow_arbitrary_certificate {
        let cert = bytes_of(&obj["status"]["certificate"]);
        if let Some(problem) = certificate_problem(cert.as_deref().unwrap_or_default()) {
            errors.push(FieldError::invalid(
                "status.certificate",
                &text("<certificate data>"),
                &problem,
            ));
        }
    }
    if let Some(old) = old {
        csr_update(obj, old, paths, &mut errors);
    }
    errors
}

fn csr_spec(spec: &Value, opts: &CsrOptions) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let request = bytes_of(&spec["request"]);
    if let Some(problem) = request_problem(request.as_deref().unwrap_or_default()) {
        errors.push(FieldError::invalid_shown(
            "spec.request",
            &go_bytes(request.as_deref()),
            problem,
        ));
    }
    let usages = items(&spec["usages"]);
    if usages.is_empty() {
        errors.push(FieldError::required("spec.usages", ""));
    }
    if !opts.allow_unknown_usages {
        for (i, usage) in usages.iter().enumerate() {
            if !KEY_USAGES.contains(&str_of(usage)) {
                errors.push(FieldError::unsupported(
                    format!("spec.usages[{i}]"),
                    &text(str_of(usage)),
                    &KEY_USAGES,
                ));
            }
        }
    }
    if !opts.allow_duplicate_usages {
        for (i, usage) in usages.iter().enumerate() {
            if usages[..i].iter().any(|u| str_of(u) == str_of(usage)) {
                errors
                    .push(FieldError::duplicate(format!("spec.usages[{i}]"), &text(str_of(usage))));
            }
        }
    }
    let signer = str_of(&spec["signerName"]);
    if !opts.allow_legacy_signer_name && signer == LEGACY_UNKNOWN_SIGNER {
        errors.push(FieldError::invalid(
            "spec.signerName",
            &text(signer),
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        signer_name(signer, "spec.signerName", &mut errors);
    }
    if let Some(seconds) = spec["expirationSeconds"].as_i64() {
        if seconds < MIN_EXPIRATION_SECONDS {
            errors.push(FieldError::invalid(
                "spec.expirationSeconds",
                &json!(seconds),
                "may not specify a duration less than 600 seconds (10 minutes)",
            ));
        }
    }
    errors
}

/// Upstream's `ValidateSignerName`: `<domain>/<path>`, the domain made of DNS labels (at
/// least two), the path of DNS subdomains, 571 characters in all.
fn signer_name(name: &str, at: &str, errors: &mut Vec<FieldError>) {
    if name.is_empty() {
        errors.push(FieldError::required(at, ""));
        return;
    }
    let segments: Vec<&str> = name.split('/').collect();
    let [domain, path] = segments[..] else {
        errors.push(FieldError::invalid(
            at,
            &text(name),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return;
    };
    if domain.len() > DNS1123_SUBDOMAIN_MAX {
        errors.push(FieldError::too_long(at, DNS1123_SUBDOMAIN_MAX));
    }
    let domain_labels: Vec<&str> = domain.split('.').collect();
    // Only the first bad label is reported: the others would read the same.
    if let Some((label, problems)) = domain_labels
        .iter()
        .map(|l| (l, name_problems(l, NameRule::Label)))
        .find(|(_, p)| !p.is_empty())
    {
        for p in problems {
            let detail = format!("validating label {}: {p}", go_quote(label));
            errors.push(FieldError::invalid(at, &text(domain), &detail));
        }
    }
    if domain_labels.len() < 2 {
        errors.push(FieldError::invalid(
            at,
            &text(domain),
            "should be a domain with at least two segments separated by dots",
        ));
    }
    if let Some((label, problems)) = path
        .split('.')
        .map(|l| (l, name_problems(l, NameRule::Subdomain)))
        .find(|(_, p)| !p.is_empty())
    {
        for p in problems {
            let detail = format!("validating label {}: {p}", go_quote(label));
            errors.push(FieldError::invalid(at, &text(path), &detail));
        }
    }
    let max = DNS1123_SUBDOMAIN_MAX + (DNS1123_SUBDOMAIN_MAX + DNS1123_LABEL_MAX + 1) + 1;
    if name.len() > max {
        errors.push(FieldError::too_long(at, max));
    }
}

/// `validateConditions`: each condition's type and status, Approved and Denied never
/// together, no type twice (each unless the stored object already breaks the rule).
fn csr_conditions(obj: &Value, opts: &CsrOptions, errors: &mut Vec<FieldError>) {
    let (mut approved, mut denied) = (false, false);
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions(obj).iter().enumerate() {
        let at = format!("status.conditions[{i}]");
        let kind = str_of(&c["type"]);
        if !opts.allow_empty_condition_type && kind.is_empty() {
            errors.push(FieldError::required(format!("{at}.type"), ""));
        }
        let allowed: &[&str] =
            if TRUE_ONLY_CONDITIONS.contains(&kind) { &["True"] } else { &ALL_STATUSES };
        let status = str_of(&c["status"]);
        if status.is_empty() {
            errors.push(FieldError::required(format!("{at}.status"), ""));
        } else if !allowed.contains(&status) {
            errors.push(FieldError::unsupported(format!("{at}.status"), &text(status), allowed));
        }
        if !opts.allow_both_approved_and_denied {
            let clash = match kind {
                APPROVED => {
                    approved = true;
                    denied
                }
                DENIED => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if clash {
                errors.push(FieldError::invalid(
                    format!("{at}.type"),
                    &text(kind),
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !opts.allow_duplicate_condition_types {
            if seen.contains(&kind) {
                errors.push(FieldError::duplicate(format!("{at}.type"), &text(kind)));
            }
            seen.push(kind);
        }
    }
}

/// The conditions of one type, each as Go compares them (unset fields read as empty).
fn conditions_of(csr: &Value, kind: &str) -> Vec<Value> {
    conditions(csr)
        .iter()
        .filter(|c| str_of(&c["type"]) == kind)
        .map(|c| {
            let field = |k: &str| text(str_of(&c[k]));
            json!([
                field("type"),
                field("status"),
                field("reason"),
                field("message"),
                field("lastUpdateTime"),
                field("lastTransitionTime"),
            ])
        })
        .collect()
}

/// What a plain update may not do to the status: drop an Approved, Denied or Failed
/// condition, add or change an Approved or Denied one, or touch the certificate.
fn csr_update(obj: &Value, old: &Value, paths: Paths, errors: &mut Vec<FieldError>) {
    for kind in [APPROVED, DENIED, FAILED] {
        if conditions_of(obj, kind).len() < conditions_of(old, kind).len() {
            errors.push(FieldError::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {}", go_quote(kind)),
            ));
        }
    }
    for kind in [APPROVED, DENIED].into_iter().filter(|_| !paths.approval) {
        let (was, now) = (conditions_of(old, kind), conditions_of(obj, kind));
        let change = if now.len() > was.len() {
            "add"
        } else if now.len() == was.len() && now != was {
            "modify"
        } else {
            continue;
        };
        errors.push(FieldError::forbidden(
            "status.conditions",
            &format!("updates may not {change} a condition of type {}", go_quote(kind)),
        ));
    }
    let cert = bytes_of(&obj["status"]["certificate"]).unwrap_or_default();
    let old_cert = bytes_of(&old["status"]["certificate"]).unwrap_or_default();
    if cert != old_cert {
        let detail = if !paths.certificate {
            Some("updates may not set certificate content")
        } else if !old_cert.is_empty() {
            Some("updates may not modify existing certificate content")
        } else {
            None
        };
        if let Some(detail) = detail {
            errors.push(FieldError::forbidden("status.certificate", detail));
        }
    }
}

/// What is wrong with a request, as upstream's `ParseCSR` says it: the first PEM block must be
/// a CERTIFICATE REQUEST. (The DER inside is not parsed; see the module notes.)
fn request_problem(pem: &[u8]) -> Option<&'static str> {
    match pem_decode(pem) {
        Some((block, _)) if block.kind == b"CERTIFICATE REQUEST" => None,
        _ => Some("PEM block type must be CERTIFICATE REQUEST"),
    }
}

/// Upstream's `validateCertificate`: empty, or only header-less CERTIFICATE blocks, at least
/// one. (A block's DER is not parsed beyond being non-empty.)
fn certificate_problem(mut pem: &[u8]) -> Option<String> {
    if pem.is_empty() {
        return None;
    }
    let mut blocks = 0;
    while let Some((block, rest)) = pem_decode(pem) {
        if block.kind != b"CERTIFICATE" {
            let found = go_quote(&String::from_utf8_lossy(&block.kind));
            return Some(format!("only CERTIFICATE PEM blocks are allowed, found {found}"));
        }
        if block.has_headers {
            return Some("no PEM block headers are permitted".to_string());
        }
        blocks += 1;
        if block.bytes.is_empty() {
            return Some("found CERTIFICATE PEM block containing 0 certificates".to_string());
        }
        pem = rest;
    }
    (blocks == 0).then(|| "must contain at least one CERTIFICATE PEM block".to_string())
}

struct PemBlock {
    kind: Vec<u8>,
    has_headers: bool,
    bytes: Vec<u8>,
}

/// Go's `pem.Decode`: the first well-formed block and what follows it. Malformed blocks are
/// skipped, as Go skips them.
fn pem_decode(data: &[u8]) -> Option<(PemBlock, &[u8])> {
    const START: &[u8] = b"\n-----BEGIN ";
    const END: &[u8] = b"\n-----END ";
    const DASHES: &[u8] = b"-----";
    let mut rest = data;
    loop {
        if rest.starts_with(&START[1..]) {
            rest = &rest[START.len() - 1..];
        } else if let Some(i) = find(rest, START) {
            rest = &rest[i + START.len()..];
        } else {
            return None;
        }
        let (type_line, after) = get_line(rest);
        rest = after;
        let Some(kind) = type_line.strip_suffix(DASHES) else { continue };
        let mut has_headers = false;
        loop {
            if rest.is_empty() {
                return None;
            }
            let (line, next) = get_line(rest);
            if !line.contains(&b':') {
                break;
            }
            has_headers = true;
            rest = next;
        }
        let (end, trailer_at) = if !has_headers && rest.starts_with(&END[1..]) {
            (0, END.len() - 1)
        } else {
            match find(rest, END) {
                Some(i) => (i, i + END.len()),
                None => continue,
            }
        };
        let trailer = &rest[trailer_at..];
        let trailer_len = kind.len() + DASHES.len();
        if trailer.len() < trailer_len {
            continue;
        }
        let (trailer, rest_of_line) = trailer.split_at(trailer_len);
        if !trailer.starts_with(kind) || !trailer.ends_with(DASHES) {
            continue;
        }
        if !get_line(rest_of_line).0.is_empty() {
            continue;
        }
        let body: Vec<u8> = rest[..end]
            .iter()
            .copied()
            .filter(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .collect();
        let Ok(bytes) = go_std_base64().decode(body) else { continue };
        let (_, remaining) = get_line(&rest[end + END.len() - 1..]);
        return Some((PemBlock { kind: kind.to_vec(), has_headers, bytes }, remaining));
    }
}

/// Go's `base64.StdEncoding`: padded, but lenient about the unused bits of the last byte.
fn go_std_base64() -> GeneralPurpose {
    GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
    )
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Go's pem `getLine`: the first line without its line ending and trailing blanks, and the
/// rest after the newline.
fn get_line(data: &[u8]) -> (&[u8], &[u8]) {
    let (mut line, rest) = match data.iter().position(|b| *b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &data[data.len()..]),
    };
    if let Some(stripped) = line.strip_suffix(b"\r") {
        if data.len() > line.len() {
            line = stripped;
        }
    }
    while let Some((last, init)) = line.split_last() {
        if *last != b' ' && *last != b'\t' {
            break;
        }
        line = init;
    }
    (line, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(errors: Vec<FieldError>) -> Vec<String> {
        errors.iter().map(FieldError::line).collect()
    }

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    const REQUEST_PEM: &str =
        "-----BEGIN CERTIFICATE REQUEST-----\nMIIBAA==\n-----END CERTIFICATE REQUEST-----\n";

    fn csr(spec: Value) -> Value {
        let mut obj = json!({
            "metadata": {"name": "csr"},
            "spec": {
                "request": b64(REQUEST_PEM),
                "signerName": "example.com/signer",
                "usages": ["client auth"],
            },
        });
        for (k, v) in spec.as_object().unwrap() {
            obj["spec"][k] = v.clone();
        }
        obj
    }

    fn csr_lines(spec: Value) -> Vec<String> {
        lines(certificate_signing_request(&csr(spec), None))
    }

    #[test]
    fn a_plain_csr_is_valid() {
        assert!(csr_lines(json!({})).is_empty());
        let crlf = REQUEST_PEM.replace('\n', "\r\n");
        assert!(csr_lines(json!({"request": b64(&format!("junk\n{crlf}"))})).is_empty());
        assert!(csr_lines(json!({"expirationSeconds": 600})).is_empty());
    }

    #[test]
    fn csr_requests_must_be_pem_certificate_requests() {
        assert_eq!(
            csr_lines(json!({"request": b64("hi")})),
            ["spec.request: Invalid value: []byte{0x68, 0x69}: PEM block type must be CERTIFICATE REQUEST"]
        );
        assert_eq!(
            csr_lines(json!({"request": null})),
            ["spec.request: Invalid value: []byte(nil): PEM block type must be CERTIFICATE REQUEST"]
        );
        let cert = "-----BEGIN CERTIFICATE-----\nMIIBAA==\n-----END CERTIFICATE-----\n";
        assert_eq!(csr_lines(json!({"request": b64(cert)})).len(), 1);
        // A block whose end line names another type is skipped.
        let mismatched =
            "-----BEGIN CERTIFICATE REQUEST-----\nMIIBAA==\n-----END CERTIFICATE-----\n";
        assert_eq!(csr_lines(json!({"request": b64(mismatched)})).len(), 1);
    }

    #[test]
    fn csr_usages_signer_and_expiration() {
        assert_eq!(
            csr_lines(json!({"usages": [], "signerName": "", "expirationSeconds": 599})),
            [
                "spec.usages: Required value",
                "spec.signerName: Required value",
                "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)",
            ]
        );
        let unknown = csr_lines(json!({"usages": ["client auth", "flying", "client auth"]}));
        assert_eq!(unknown.len(), 2);
        assert!(unknown[0].starts_with(
            "spec.usages[1]: Unsupported value: \"flying\": supported values: \"any\", \"cert sign\", "
        ));
        assert!(unknown[0].ends_with("\"signing\", \"timestamping\""));
        assert_eq!(unknown[1], "spec.usages[2]: Duplicate value: \"client auth\"");
        assert_eq!(
            csr_lines(json!({"signerName": "kubernetes.io/legacy-unknown"})),
            ["spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version"]
        );
    }

    #[test]
    fn signer_names_follow_upstream() {
        let signer = |name: &str| csr_lines(json!({"signerName": name}));
        assert!(signer("kubernetes.io/kube-apiserver-client").is_empty());
        assert!(signer("example.com/ns.name").is_empty());
        assert_eq!(
            signer("example.com"),
            ["spec.signerName: Invalid value: \"example.com\": must be a fully qualified domain and path of the form 'example.com/signer-name'"]
        );
        assert_eq!(signer("a/b/c").len(), 1);
        assert_eq!(
            signer("localhost/x"),
            ["spec.signerName: Invalid value: \"localhost\": should be a domain with at least two segments separated by dots"]
        );
        let bad = signer("Example.com/Signer");
        assert_eq!(bad.len(), 2);
        assert!(bad[0].starts_with(
            "spec.signerName: Invalid value: \"Example.com\": validating label \"Example\": a lowercase RFC 1123 label must consist of"
        ));
        assert!(bad[1].starts_with(
            "spec.signerName: Invalid value: \"Signer\": validating label \"Signer\": a lowercase RFC 1123 subdomain"
        ));
        let label = "a".repeat(250);
        assert_eq!(
            signer(&format!("{label}.com/x")),
            [
                "spec.signerName: Too long: may not be more than 253 bytes".to_string(),
                format!("spec.signerName: Invalid value: \"{label}.com\": validating label \"{label}\": must be no more than 63 characters"),
            ]
        );
        let path =
            format!("example.com/{}.{}.{}", "a".repeat(253), "b".repeat(253), "c".repeat(100));
        assert_eq!(signer(&path), ["spec.signerName: Too long: may not be more than 571 bytes"]);
    }

    #[test]
    fn csr_conditions_and_update_rules() {
        let mut obj = csr(json!({}));
        obj["status"] = json!({"conditions": [
            {"type": "Approved", "status": "True"},
            {"type": "Denied", "status": "False"},
            {"type": "", "status": ""},
            {"type": "Approved", "status": "Maybe"},
        ]});
        assert_eq!(
            lines(certificate_signing_request(&obj, None)),
            [
                "status.conditions[1].status: Unsupported value: \"False\": supported values: \"True\"",
                "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive",
                "status.conditions[2].type: Required value",
                "status.conditions[2].status: Required value",
                "status.conditions[3].status: Unsupported value: \"Maybe\": supported values: \"True\"",
                "status.conditions[3].type: Invalid value: \"Approved\": Approved and Denied conditions are mutually exclusive",
                "status.conditions[3].type: Duplicate value: \"Approved\"",
            ]
        );
        // What the stored object already has is tolerated.
        assert_eq!(
            lines(certificate_signing_request(&obj, Some(&obj))),
            [
                "status.conditions[1].status: Unsupported value: \"False\": supported values: \"True\"",
                "status.conditions[2].status: Required value",
                "status.conditions[3].status: Unsupported value: \"Maybe\": supported values: \"True\"",
            ]
        );

        let approved = {
            let mut o = csr(json!({}));
            o["status"] =
                json!({"conditions": [{"type": "Approved", "status": "True", "reason": "ok"}]});
            o
        };
        let plain = csr(json!({}));
        assert_eq!(
            lines(certificate_signing_request(&approved, Some(&plain))),
            ["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
        );
        assert_eq!(
            lines(certificate_signing_request(&plain, Some(&approved))),
            ["status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""]
        );
        let mut changed = approved.clone();
        changed["status"]["conditions"][0]["reason"] = json!("other");
        assert_eq!(
            lines(certificate_signing_request(&changed, Some(&approved))),
            ["status.conditions: Forbidden: updates may not modify a condition of type \"Approved\""]
        );
        assert!(certificate_signing_request(&approved, Some(&approved)).is_empty());
        // Unknown usages and the legacy signer stay accepted when already stored.
        let legacy =
            csr(json!({"signerName": "kubernetes.io/legacy-unknown", "usages": ["flying"]}));
        assert!(certificate_signing_request(&legacy, Some(&legacy)).is_empty());
    }

    #[test]
    fn subresources_set_what_they_are_for() {
        let plain = csr(json!({}));
        let mut approved = plain.clone();
        approved["status"] =
            json!({"conditions": [{"type": "Approved", "status": "True", "reason": "ok"}]});
        assert!(certificate_signing_request_subresource(&approved, &plain, "approval").is_empty());
        assert_eq!(
            lines(certificate_signing_request_subresource(&approved, &plain, "status")),
            ["status.conditions: Forbidden: updates may not add a condition of type \"Approved\""]
        );
        // Approval may not take a decision back.
        assert_eq!(
            lines(certificate_signing_request_subresource(&plain, &approved, "approval")),
            ["status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""]
        );
        let cert = "-----BEGIN CERTIFICATE-----\nMIIBAA==\n-----END CERTIFICATE-----\n";
        let mut issued = approved.clone();
        issued["status"]["certificate"] = json!(b64(cert));
        assert!(certificate_signing_request_subresource(&issued, &approved, "status").is_empty());
        assert_eq!(
            lines(certificate_signing_request_subresource(&issued, &approved, "approval")),
            ["status.certificate: Forbidden: updates may not set certificate content"]
        );
        let mut reissued = issued.clone();
        reissued["status"]["certificate"] = json!(b64(&cert.replace("MIIBAA==", "MIIBAB==")));
        assert_eq!(
            lines(certificate_signing_request_subresource(&reissued, &issued, "status")),
            ["status.certificate: Forbidden: updates may not modify existing certificate content"]
        );
    }

    #[test]
    fn csr_certificates() {
        let cert = "-----BEGIN CERTIFICATE-----\nMIIBAA==\n-----END CERTIFICATE-----\n";
        let mut obj = csr(json!({}));
        obj["status"] = json!({"certificate": b64(cert)});
        assert!(certificate_signing_request(&obj, None).is_empty());
        assert_eq!(
            lines(certificate_signing_request(&obj, Some(&csr(json!({}))))),
            ["status.certificate: Forbidden: updates may not set certificate content"]
        );
        obj["status"]["certificate"] = json!(b64(REQUEST_PEM));
        assert_eq!(
            lines(certificate_signing_request(&obj, None)),
            ["status.certificate: Invalid value: \"<certificate data>\": only CERTIFICATE PEM blocks are allowed, found \"CERTIFICATE REQUEST\""]
        );
        obj["status"]["certificate"] = json!(b64("nothing"));
        assert_eq!(
            lines(certificate_signing_request(&obj, None)),
            ["status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"]
        );
        let headers =
            "-----BEGIN CERTIFICATE-----\nProc-Type: 4\n\nMIIBAA==\n-----END CERTIFICATE-----\n";
        assert_eq!(
            certificate_problem(headers.as_bytes()).unwrap(),
            "no PEM block headers are permitted"
        );
    }
}
