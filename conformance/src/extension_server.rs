//! An extension API server for the aggregation tests: HTTPS with a certificate of a
//! [`TestCa`] for `<service>.<namespace>.svc`, serving `wardle.example.com/v1alpha1`
//! `flunders` (namespaced; discovery, list, get, watch) from a fixed set of objects, and
//! their OpenAPI documents (`/openapi/v2`, the `/openapi/v3` index and
//! `/openapi/v3/apis/wardle.example.com/v1alpha1`). Its v3 index also lists a document of
//! [`OTHER_VERSION`] (whose discovery it answers too, but no objects) and one of `api/v1`
//! (a path the cluster serves itself), as a server with several group/versions would.
//! `flunders/<name>/echo` upgrades to a
//! WebSocket that answers each message with `<user>: <message>` (an exec-style subresource).
//!
//! It authenticates as an aggregated server does with kube-apiserver's request-header
//! authentication: a client certificate verified against the front-proxy CA it is given
//! (`requestheader-client-ca-file`), with a common name among the allowed names, and the
//! user in `X-Remote-User`/`X-Remote-Group`. Without that certificate every request gets 401;
//! with it but without a user, only discovery is answered (the availability checks). It
//! keeps each request it saw ([`Seen`]) for the test to inspect.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use openssl::nid::Nid;
use openssl::ssl::SslVerifyMode;
use openssl::x509::store::X509StoreBuilder;
use openssl::x509::X509;
use serde_json::{json, Value};

use crate::webhook::{runtime_and_listener, tls_acceptor, TestCa};

pub const GROUP: &str = "wardle.example.com";
pub const VERSION: &str = "v1alpha1";

/// What one request carried.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The verified client certificate's common name.
    pub client_cn: Option<String>,
    pub user: Option<String>,
    pub groups: Vec<String>,
    /// `X-Remote-Extra-*` headers, (lowercase name, value).
    pub extra: Vec<(String, String)>,
    /// Whether an `Authorization` or `Impersonate-User` header reached it.
    pub credentials: bool,
}

/// A running extension server; stopped when dropped.
pub struct ExtensionServer {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    runtime: Option<tokio::runtime::Runtime>,
}

/// The flunders it serves: (namespace, name).
pub const FLUNDERS: [(&str, &str); 2] = [("default", "alpha"), ("default", "beta")];

impl ExtensionServer {
    /// Serves on `ip` with a certificate of `ca` for `dns` names, trusting client
    /// certificates of `front_proxy_ca_pem` named one of `allowed_names`.
    pub fn start(
        ip: IpAddr,
        ca: &TestCa,
        dns: &[&str],
        front_proxy_ca_pem: &[u8],
        allowed_names: Vec<String>,
    ) -> ExtensionServer {
        let (cert, key) = ca.serving(dns, &[ip]);
        let mut acceptor = tls_acceptor(&cert, &key);
        let mut store = X509StoreBuilder::new().expect("store");
        for c in X509::stack_from_pem(front_proxy_ca_pem).expect("front-proxy CA") {
            store.add_cert(c).expect("CA");
        }
        acceptor.set_verify_cert_store(store.build()).expect("store");
        // Asked for, not required: a request without one is answered 401.
        acceptor.set_verify(SslVerifyMode::PEER);
        let acceptor = Arc::new(acceptor.build());
        let (runtime, listener, addr) = runtime_and_listener(ip);
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let kept = seen.clone();
        let allowed = Arc::new(allowed_names);
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let (acceptor, kept, allowed) = (acceptor.clone(), kept.clone(), allowed.clone());
                tokio::spawn(async move {
                    let Ok(ssl) = openssl::ssl::Ssl::new(acceptor.context()) else { return };
                    let Ok(mut tls) = tokio_openssl::SslStream::new(ssl, tcp) else { return };
                    if std::pin::Pin::new(&mut tls).accept().await.is_err() {
                        return;
                    }
                    let cn = tls.ssl().peer_certificate().and_then(|c| {
                        let entry = c.subject_name().entries_by_nid(Nid::COMMONNAME).next()?;
                        Some(String::from_utf8_lossy(entry.data().as_slice()).into_owned())
                    });
                    let service = hyper::service::service_fn(move |request| {
                        let (kept, allowed, cn) = (kept.clone(), allowed.clone(), cn.clone());
                        async move {
                            Ok::<_, Infallible>(answer(request, cn, &allowed, &kept).await)
                        }
                    });
                    let io = hyper_util::rt::TokioIo::new(tls);
                    let _ = hyper_util::server::conn::auto::Builder::new(
                        hyper_util::rt::TokioExecutor::new(),
                    )
                    .serve_connection_with_upgrades(io, service)
                    .await;
                });
            }
        });
        ExtensionServer { addr, seen, runtime: Some(runtime) }
    }

    /// The requests seen on paths starting with `prefix` that carried a user.
    pub fn seen_with_user(&self, prefix: &str) -> Vec<Seen> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.iter().filter(|s| s.path.starts_with(prefix) && s.user.is_some()).cloned().collect()
    }
}

impl Drop for ExtensionServer {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn json_response(code: u16, value: &Value) -> http::Response<Body> {
    http::Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(value.to_string() + "\n")).boxed())
        .expect("response")
}

fn status(code: u16, reason: &str, message: &str) -> http::Response<Body> {
    json_response(
        code,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": message, "reason": reason, "code": code}),
    )
}

fn flunder(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": format!("{GROUP}/{VERSION}"), "kind": "Flunder",
           "metadata": {"name": name, "namespace": namespace, "uid": format!("uid-{name}"),
                        "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "spec": {"reference": format!("ref-{name}")}})
}

/// `flunders/<name>/echo`: switches to a WebSocket (RFC 6455 handshake) and answers each
/// text message with `<user>: <message>` until the client closes (at most 100 messages,
/// 30 s).
fn echo(mut request: http::Request<hyper::body::Incoming>, user: &str) -> http::Response<Body> {
    let headers = request.headers();
    let asks =
        headers.get("upgrade").is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    let Some(key) = headers.get("sec-websocket-key").filter(|_| asks) else {
        return status(400, "BadRequest", "Upgrade request required");
    };
    let accept = openssl::base64::encode_block(&openssl::sha::sha1(
        format!("{}258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key.to_str().unwrap_or("")).as_bytes(),
    ));
    let upgrade = hyper::upgrade::on(&mut request);
    let user = user.to_string();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let Ok(upgraded) = upgrade.await else { return };
        let mut io = hyper_util::rt::TokioIo::new(upgraded);
        let session = async {
            for _ in 0..100 {
                let mut head = [0u8; 2];
                io.read_exact(&mut head).await?;
                let len = match head[1] & 0x7f {
                    126 => u64::from(io.read_u16().await?),
                    127 => io.read_u64().await?,
                    n => u64::from(n),
                };
                let mut mask = [0u8; 4];
                if head[1] & 0x80 != 0 {
                    io.read_exact(&mut mask).await?;
                }
                let mut payload = vec![0u8; len.min(1 << 20) as usize];
                io.read_exact(&mut payload).await?;
                payload.iter_mut().enumerate().for_each(|(i, b)| *b ^= mask[i % 4]);
                let opcode = head[0] & 0x0f;
                let reply = match opcode {
                    8 => Vec::new(),
                    _ => [format!("{user}: ").into_bytes(), payload].concat(),
                };
                let mut frame = vec![0x80 | opcode];
                match reply.len() {
                    n if n < 126 => frame.push(n as u8),
                    n => {
                        frame.push(126);
                        frame.extend_from_slice(
                            &(n.min(usize::from(u16::MAX)) as u16).to_be_bytes(),
                        );
                    }
                }
                frame.extend_from_slice(&reply[..reply.len().min(usize::from(u16::MAX))]);
                io.write_all(&frame).await?;
                if opcode == 8 {
                    break;
                }
            }
            io.shutdown().await
        };
        let _ = tokio::time::timeout(Duration::from_secs(30), session).await;
    });
    http::Response::builder()
        .status(101)
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-accept", accept)
        .body(Full::new(Bytes::new()).boxed())
        .expect("response")
}

/// The hash its `/openapi/v3` index gives its documents.
const OPENAPI_HASH: &str = "0123456789ABCDEF";

/// What `kubectl explain flunders.spec` prints of its one field.
pub const REFERENCE_DESCRIPTION: &str = "The name of another flunder this one refers to.";

/// The other version of its group whose v3 document its index lists.
pub const OTHER_VERSION: &str = "v1beta1";

/// The description of [`OTHER_VERSION`]'s Flunder.
pub const OTHER_VERSION_DESCRIPTION: &str = "Flunder in v1beta1, listed in the v3 index only.";

/// The title of its document of `api/v1`.
pub const CORE_TITLE: &str = "Wardle's own view of the core group";

/// Its OpenAPI document of `version`, v3 (`components.schemas`) or v2 (`definitions`),
/// references starting with `refs`.
fn openapi(refs: &str, v3: bool, version: &str) -> Value {
    let meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    let kind = format!("com.example.wardle.{version}.Flunder");
    let spec = format!("com.example.wardle.{version}.FlunderSpec");
    let (kind, spec) = (kind.as_str(), spec.as_str());
    let reference = |name: &str| json!({"$ref": format!("{refs}{name}")});
    let description = match version {
        VERSION => "Flunder is an example type served by an aggregated API server.",
        _ => OTHER_VERSION_DESCRIPTION,
    };
    let schemas = json!({
        kind: {
            "description": description,
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."},
                "kind": {"type": "string", "description": "Kind is a string value representing the REST resource this object represents."},
                "metadata": if v3 { json!({"allOf": [reference(meta)], "default": {}, "description": "Standard object's metadata."}) } else { reference(meta) },
                "spec": if v3 { json!({"allOf": [reference(spec)], "default": {}, "description": "What the flunder is."}) } else { reference(spec) },
            },
            "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": "Flunder", "version": version}],
        },
        spec: {
            "description": "FlunderSpec is the specification of a Flunder.",
            "type": "object",
            "properties": {"reference": {"type": "string", "description": REFERENCE_DESCRIPTION}},
        },
        meta: {
            "description": "ObjectMeta is metadata that all persisted resources must have.",
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Name must be unique within a namespace."},
                           "namespace": {"type": "string", "description": "Namespace defines the space within which each name must be unique."}},
        },
    });
    let list = format!("/apis/{GROUP}/{version}/namespaces/{{namespace}}/flunders");
    let ok = if v3 {
        json!({"200": {"description": "OK", "content": {"application/json": {"schema": reference(kind)}}}})
    } else {
        json!({"200": {"description": "OK", "schema": reference(kind)}})
    };
    let operation = format!("listWardle{}NamespacedFlunder", version.replacen('v', "V", 1));
    let paths = json!({list: {"get": {"operationId": operation,
                                      "responses": ok,
                                      "x-kubernetes-action": "list",
                                      "x-kubernetes-group-version-kind": {"group": GROUP, "kind": "Flunder", "version": version}}}});
    let info = json!({"title": "Wardle", "version": "v0.1"});
    if v3 {
        json!({"openapi": "3.0.0", "info": info, "paths": paths, "components": {"schemas": schemas}})
    } else {
        json!({"swagger": "2.0", "info": info, "paths": paths, "definitions": schemas})
    }
}

async fn answer(
    request: http::Request<hyper::body::Incoming>,
    cn: Option<String>,
    allowed: &[String],
    kept: &Mutex<Vec<Seen>>,
) -> http::Response<Body> {
    let headers = request.headers();
    let text = |v: &http::HeaderValue| v.to_str().unwrap_or("").to_string();
    let trusted = cn.as_ref().is_some_and(|cn| allowed.contains(cn));
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or("").to_string();
    let seen = Seen {
        method: request.method().to_string(),
        path: path.clone(),
        client_cn: cn.clone(),
        user: headers.get("x-remote-user").map(text),
        groups: headers.get_all("x-remote-group").iter().map(text).collect(),
        extra: headers
            .iter()
            .filter(|(n, _)| n.as_str().starts_with("x-remote-extra-"))
            .map(|(n, v)| (n.as_str().to_string(), text(v)))
            .collect(),
        credentials: headers.contains_key("authorization")
            || headers.contains_key("impersonate-user"),
    };
    kept.lock().unwrap_or_else(|e| e.into_inner()).push(seen.clone());
    if !trusted {
        return status(401, "Unauthorized", "Unauthorized");
    }
    let discovery = format!("/apis/{GROUP}/{VERSION}");
    if let Some(version) =
        [VERSION, OTHER_VERSION].into_iter().find(|v| path == format!("/apis/{GROUP}/{v}"))
    {
        return json_response(
            200,
            &json!({"kind": "APIResourceList", "apiVersion": "v1",
                    "groupVersion": format!("{GROUP}/{version}"),
                    "resources": [{"name": "flunders", "singularName": "flunder",
                                   "namespaced": true, "kind": "Flunder",
                                   "verbs": ["get", "list", "watch"], "shortNames": ["fl"],
                                   "categories": ["wardle"]}]}),
        );
    }
    let Some(user) = seen.user else {
        return status(403, "Forbidden", "forbidden: no user in the request headers");
    };
    let v3_paths = [
        format!("apis/{GROUP}/{VERSION}"),
        format!("apis/{GROUP}/{OTHER_VERSION}"),
        "api/v1".into(),
    ];
    match path.as_str() {
        "/openapi/v2" => return json_response(200, &openapi("#/definitions/", false, VERSION)),
        "/openapi/v3" => {
            let paths: serde_json::Map<String, Value> = v3_paths
                .iter()
                .map(|p| {
                    let url = format!("/openapi/v3/{p}?hash={OPENAPI_HASH}");
                    (p.clone(), json!({"serverRelativeURL": url}))
                })
                .collect();
            return json_response(200, &json!({ "paths": paths }));
        }
        "/openapi/v3/api/v1" => {
            return json_response(
                200,
                &json!({"openapi": "3.0.0", "info": {"title": CORE_TITLE, "version": "v0.1"},
                        "paths": {}, "components": {"schemas": {}}}),
            )
        }
        p => {
            for version in [VERSION, OTHER_VERSION] {
                if p == format!("/openapi/v3/apis/{GROUP}/{version}") {
                    return json_response(200, &openapi("#/components/schemas/", true, version));
                }
            }
        }
    }
    let rest = path.strip_prefix(&discovery).unwrap_or("");
    let parts: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let (namespace, name) = match parts.as_slice() {
        ["flunders"] => (None, None),
        ["namespaces", ns, "flunders"] => (Some(*ns), None),
        ["namespaces", ns, "flunders", name] => (Some(*ns), Some(*name)),
        ["namespaces", _, "flunders", _, "echo"] => (None, None),
        _ => return status(404, "NotFound", "the server could not find the requested resource"),
    };
    if let (["namespaces", _, "flunders", _, "echo"], true) =
        (parts.as_slice(), request.method() == http::Method::GET)
    {
        return echo(request, &user);
    }
    if request.method() != http::Method::GET {
        return status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        );
    }
    let items: Vec<Value> = FLUNDERS
        .iter()
        .filter(|(ns, _)| namespace.is_none_or(|n| n == *ns))
        .map(|(ns, n)| flunder(ns, n))
        .collect();
    if let Some(name) = name {
        return match items.iter().find(|f| f["metadata"]["name"] == name) {
            Some(f) => json_response(200, f),
            None => status(404, "NotFound", &format!("flunders.{GROUP} {name:?} not found")),
        };
    }
    if query.split('&').any(|p| p == "watch=true" || p == "watch=1") {
        // Each object as ADDED, a moment apart, then the stream stays open (a while).
        let events = futures_util::stream::iter(items).then(|item| async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let line = json!({"type": "ADDED", "object": item}).to_string() + "\n";
            Ok::<_, Infallible>(hyper::body::Frame::data(Bytes::from(line)))
        });
        let hold = futures_util::stream::once(async {
            tokio::time::sleep(Duration::from_secs(20)).await;
            Ok::<_, Infallible>(hyper::body::Frame::data(Bytes::new()))
        });
        return http::Response::builder()
            .header("content-type", "application/json")
            .body(BodyExt::boxed(StreamBody::new(events.chain(hold))))
            .expect("response");
    }
    let _ = user;
    json_response(
        200,
        &json!({"kind": "FlunderList", "apiVersion": format!("{GROUP}/{VERSION}"),
                "metadata": {"resourceVersion": "1"}, "items": items}),
    )
}
