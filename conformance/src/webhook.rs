//! A webhook server for the webhook tests and `webhook-bench`: HTTPS on loopback with a
//! certificate from a CA made here ([`TestCa`]), answering each AdmissionReview (or CRD
//! ConversionReview, in kind) with a function of the caller ([`WebhookServer::start`]). It speaks HTTP/2 when the client offers
//! it by ALPN (kube-apiserver's client does), else HTTP/1.1, and keeps every review it got.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::ssl::{AlpnError, SslAcceptor, SslAcceptorBuilder, SslMethod};
use openssl::x509::extension::{BasicConstraints, ExtendedKeyUsage, SubjectAlternativeName};
use openssl::x509::{X509NameBuilder, X509};
use serde_json::{json, Value};

/// A certificate authority of the test's own.
pub struct TestCa {
    cert: X509,
    key: PKey<Private>,
}

fn new_key() -> PKey<Private> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).expect("curve");
    PKey::from_ec_key(EcKey::generate(&group).expect("key")).expect("key")
}

fn name(cn: &str) -> openssl::x509::X509Name {
    let mut name = X509NameBuilder::new().expect("name");
    name.append_entry_by_nid(Nid::COMMONNAME, cn).expect("cn");
    name.build()
}

fn builder(cn: &str, key: &PKey<Private>) -> openssl::x509::X509Builder {
    let name = name(cn);
    let mut b = X509::builder().expect("builder");
    b.set_version(2).expect("version");
    let mut serial = BigNum::new().expect("bn");
    serial.rand(64, MsbOption::MAYBE_ZERO, false).expect("serial");
    b.set_serial_number(&serial.to_asn1_integer().expect("serial")).expect("serial");
    b.set_subject_name(&name).expect("subject");
    b.set_pubkey(key).expect("key");
    b.set_not_before(&Asn1Time::days_from_now(0).expect("time")).expect("time");
    b.set_not_after(&Asn1Time::days_from_now(1).expect("time")).expect("time");
    b
}

impl TestCa {
    pub fn new(cn: &str) -> TestCa {
        let key = new_key();
        let mut b = builder(cn, &key);
        b.set_issuer_name(&name(cn)).expect("issuer");
        b.append_extension(BasicConstraints::new().critical().ca().build().expect("ca"))
            .expect("ca");
        b.sign(&key, MessageDigest::sha256()).expect("sign");
        TestCa { cert: b.build(), key }
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> Vec<u8> {
        self.cert.to_pem().expect("pem")
    }

    /// The CA certificate as a webhook's `caBundle` (base64 of the PEM).
    pub fn bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.pem())
    }

    /// A serving certificate for these DNS names and IP addresses, with its key.
    pub fn serving(&self, dns: &[&str], ips: &[IpAddr]) -> (X509, PKey<Private>) {
        let key = new_key();
        let mut b = builder(dns.first().copied().unwrap_or("webhook"), &key);
        b.set_issuer_name(self.cert.subject_name()).expect("issuer");
        let mut san = SubjectAlternativeName::new();
        for name in dns {
            san.dns(name);
        }
        for ip in ips {
            san.ip(&ip.to_string());
        }
        let san = san.build(&b.x509v3_context(Some(&self.cert), None)).expect("san");
        b.append_extension(san).expect("san");
        b.append_extension(ExtendedKeyUsage::new().server_auth().build().expect("eku"))
            .expect("eku");
        b.sign(&self.key, MessageDigest::sha256()).expect("sign");
        (b.build(), key)
    }
}

/// What the webhook answers: the review's `response` (its `uid` is filled in unless it has
/// one), after waiting `delay`.
pub struct Answer {
    pub delay: Duration,
    pub response: Value,
}

impl Answer {
    pub fn allow() -> Answer {
        Answer { delay: Duration::ZERO, response: json!({"allowed": true}) }
    }

    /// Refuses with this `status` (a `metav1.Status`).
    pub fn deny(status: Value) -> Answer {
        Answer { delay: Duration::ZERO, response: json!({"allowed": false, "status": status}) }
    }

    /// Allows, with this JSON patch.
    pub fn patch(patch: Value) -> Answer {
        let encoded = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
        Answer {
            delay: Duration::ZERO,
            response: json!({"allowed": true, "patchType": "JSONPatch", "patch": encoded}),
        }
    }
}

/// The function that answers: the request path and the review's `request`.
pub type Handler = Arc<dyn Fn(&str, &Value) -> Answer + Send + Sync>;

/// A function that answers any JSON request whole (a TokenReview's status, say): the path and
/// the whole body in, the whole answer out.
pub type RawHandler = Arc<dyn Fn(&str, &Value) -> Value + Send + Sync>;

/// How the server answers.
#[derive(Clone)]
enum Responder {
    /// Admission and conversion reviews: `{"apiVersion", "kind", "response"}`.
    Review(Handler),
    Raw(RawHandler),
}

/// A kubeconfig that names `url` as its server, trusted by `ca`, with `token` as the
/// caller's credential: how kube-apiserver's webhook configuration files name a remote
/// (`--audit-webhook-config-file`, `--authentication-token-webhook-config-file`), written to
/// `path`.
pub fn write_webhook_kubeconfig(path: &std::path::Path, url: &str, ca: &TestCa, token: &str) {
    let config = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "webhook",
        "clusters": [{"name": "webhook", "cluster": {
            "server": url, "certificate-authority-data": ca.bundle()}}],
        "users": [{"name": "apiserver", "user": {"token": token}}],
        "contexts": [{"name": "webhook", "context": {"cluster": "webhook", "user": "apiserver"}}],
    });
    std::fs::write(path, config.to_string()).expect("write the kubeconfig");
}

/// A running webhook server; stopped when dropped.
pub struct WebhookServer {
    pub addr: SocketAddr,
    /// Every review received (path, whole review), in order.
    pub reviews: Arc<Mutex<Vec<(String, Value)>>>,
    /// The `Authorization` header of each request, in order (`""` without one).
    pub authorizations: Arc<Mutex<Vec<String>>>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl WebhookServer {
    /// Serves on a free loopback port with a certificate of `ca` for `dns` names and
    /// 127.0.0.1.
    pub fn start(ca: &TestCa, dns: &[&str], handler: Handler) -> WebhookServer {
        WebhookServer::start_on(IpAddr::V4(Ipv4Addr::LOCALHOST), ca, dns, handler)
    }

    /// [`WebhookServer::start`] on `ip` (an address of this machine), with a certificate for
    /// it too.
    pub fn start_on(ip: IpAddr, ca: &TestCa, dns: &[&str], handler: Handler) -> WebhookServer {
        WebhookServer::serve(ip, ca, dns, Responder::Review(handler))
    }

    /// A server on loopback answering with `handler`'s whole answers.
    pub fn start_raw(ca: &TestCa, dns: &[&str], handler: RawHandler) -> WebhookServer {
        WebhookServer::serve(IpAddr::V4(Ipv4Addr::LOCALHOST), ca, dns, Responder::Raw(handler))
    }

    fn serve(ip: IpAddr, ca: &TestCa, dns: &[&str], handler: Responder) -> WebhookServer {
        let (cert, key) = ca.serving(dns, &[ip]);
        let acceptor = Arc::new(tls_acceptor(&cert, &key).build());
        let (runtime, listener, addr) = runtime_and_listener(ip);
        let reviews: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let authorizations: Arc<Mutex<Vec<String>>> = Arc::default();
        let kept = (reviews.clone(), authorizations.clone());
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let (acceptor, handler, kept) = (acceptor.clone(), handler.clone(), kept.clone());
                tokio::spawn(async move {
                    let Ok(ssl) = openssl::ssl::Ssl::new(acceptor.context()) else { return };
                    let Ok(mut tls) = tokio_openssl::SslStream::new(ssl, tcp) else { return };
                    if std::pin::Pin::new(&mut tls).accept().await.is_err() {
                        return;
                    }
                    let service = hyper::service::service_fn(move |request| {
                        let (handler, kept) = (handler.clone(), kept.clone());
                        async move {
                            Ok::<_, std::convert::Infallible>(answer(request, handler, kept).await)
                        }
                    });
                    let io = hyper_util::rt::TokioIo::new(tls);
                    let _ = hyper_util::server::conn::auto::Builder::new(
                        hyper_util::rt::TokioExecutor::new(),
                    )
                    .serve_connection(io, service)
                    .await;
                });
            }
        });
        WebhookServer { addr, reviews, authorizations, runtime: Some(runtime) }
    }

    /// `https://<address>:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// The reviews received on `path`.
    pub fn reviews_to(&self, path: &str) -> Vec<Value> {
        let reviews = self.reviews.lock().unwrap_or_else(|e| e.into_inner());
        reviews.iter().filter(|(p, _)| p == path).map(|(_, r)| r.clone()).collect()
    }
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// What the server keeps of each request: (path, body) and its `Authorization` header.
type Kept = (Arc<Mutex<Vec<(String, Value)>>>, Arc<Mutex<Vec<String>>>);

async fn answer(
    request: http::Request<hyper::body::Incoming>,
    handler: Responder,
    kept: Kept,
) -> http::Response<Full<Bytes>> {
    let path = request.uri().path().to_string();
    let authorization = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    kept.0.lock().unwrap_or_else(|e| e.into_inner()).push((path.clone(), review.clone()));
    kept.1.lock().unwrap_or_else(|e| e.into_inner()).push(authorization);
    let handler = match handler {
        Responder::Review(handler) => handler,
        Responder::Raw(handler) => {
            return http::Response::builder()
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(handler(&path, &review).to_string())))
                .expect("response");
        }
    };
    let Answer { delay, mut response } = handler(&path, &review["request"]);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    // The review's uid, unless the answer gives its own (a test of a wrong one).
    if response.get("uid").is_none() {
        response["uid"] = review["request"]["uid"].clone();
    }
    // The same kind of review back: an AdmissionReview, or a ConversionReview.
    let (api_version, kind) = (review["apiVersion"].clone(), review["kind"].clone());
    let kind = if kind.is_string() { kind } else { json!("AdmissionReview") };
    let body = json!({"apiVersion": api_version, "kind": kind, "response": response});
    http::Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("response")
}

/// An IPv4 address of this machine that is neither loopback nor link-local, whose route is
/// local (`ip route get` says `local`): what a Service's hand-written Endpoints may name
/// (the API refuses loopback addresses there, as upstream's) while traffic to it never
/// leaves the machine.
pub fn local_non_loopback_ipv4() -> Option<IpAddr> {
    let out = std::process::Command::new("ip")
        .args(["-4", "-o", "addr", "show", "scope", "global"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    text.lines().find_map(|line| {
        let cidr = line.split_whitespace().skip_while(|w| *w != "inet").nth(1)?;
        let ip: IpAddr = cidr.split('/').next()?.parse().ok()?;
        let route = std::process::Command::new("ip")
            .args(["route", "get", &ip.to_string()])
            .output()
            .ok()?;
        String::from_utf8_lossy(&route.stdout).starts_with("local ").then_some(ip)
    })
}

/// A TLS acceptor that serves `cert` and offers HTTP/2 then HTTP/1.1 by ALPN; the caller may
/// set more (client verification) before building it.
pub fn tls_acceptor(cert: &X509, key: &PKey<Private>) -> SslAcceptorBuilder {
    let mut acceptor =
        SslAcceptor::mozilla_intermediate_v5(SslMethod::tls_server()).expect("acceptor");
    acceptor.set_certificate(cert).expect("cert");
    acceptor.set_private_key(key).expect("key");
    acceptor.set_alpn_select_callback(|_, offered| {
        openssl::ssl::select_next_proto(b"\x02h2\x08http/1.1", offered).ok_or(AlpnError::NOACK)
    });
    acceptor
}

/// A test server's own runtime (two threads) and a listener on a free port of `ip`, bound
/// without blocking on the runtime (callers may be async themselves).
pub fn runtime_and_listener(
    ip: IpAddr,
) -> (tokio::runtime::Runtime, tokio::net::TcpListener, std::net::SocketAddr) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let listener = std::net::TcpListener::bind((ip, 0)).expect("bind");
    listener.set_nonblocking(true).expect("non-blocking");
    let listener = {
        let _inside = runtime.enter();
        tokio::net::TcpListener::from_std(listener).expect("listener")
    };
    let addr = listener.local_addr().expect("addr");
    (runtime, listener, addr)
}
