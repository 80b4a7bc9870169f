//! The rkube API server.
//!
//! Start at [`Server::start`]: it takes a store and the TLS material, bootstraps what every
//! cluster has (the default namespaces), and serves HTTPS. A request goes through
//! [`listener`] (TLS, client certificate → [`auth::UserInfo`]), [`authn`] (bearer tokens: the
//! service-account JWTs of the TokenRequest API), [`authz`] (may this user do this?), then
//! the axum router: the
//! health and version endpoints here, everything under `/api` and `/apis` in [`api`], which
//! reads the request ([`request`]), negotiates the encoding ([`negotiate`]) and calls the one
//! generic [`registry`] (per-kind behaviour lives in `rkube_apis::strategy`), answering
//! errors as `Status` objects ([`status`]). Watches stream from [`watch`]; discovery is in
//! [`discovery`]; `kubectl get` tables in [`table`]. Logs, exec, attach, port-forward and
//! `nodes/proxy` go on to the node's kubelet ([`kubelet`], over the upgrade-aware
//! [`proxy`]). The resource metrics API (`metrics.k8s.io`, `kubectl top`) is
//! [`metrics_api`], read from the kubelets on request.

pub mod admission;
pub mod admission_webhooks;
pub mod aggregator;
pub mod api;
pub mod apply;
pub mod audit;
pub mod auth;
pub mod authn;
pub mod authz;
pub mod cache;
pub mod component_status;
pub mod crd_conversion;
pub mod custom_resources;
pub mod discovery;
pub mod duplicates;
pub mod endpoint_reconciler;
pub mod error;
pub mod eviction;
pub mod grpc;
pub mod handlers;
pub mod inflight;
pub mod kubeconfig_webhook;
pub mod kubelet;
pub mod listener;
pub mod metrics;
pub mod metrics_api;
pub mod negotiate;
pub mod object;
pub mod openapi;
pub mod pod_proxy;
pub mod proxy;
pub mod registry;
pub mod request;
pub mod reviews;
pub mod service_client;
pub mod service_proxy;
pub mod services;
pub mod status;
pub mod subresources;
pub mod table;
pub mod ttl_cache;
pub mod warnings;
pub mod watch;
pub mod websocket_stream;
pub mod write_hooks;
pub mod yaml;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Query as AxumQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rkube_store::Store;
use serde_json::json;

pub use error::{StartError, StartResult};
pub use kubelet::{KubeletClientConfig, KubeletServerVerification};
pub use listener::TlsMaterial;
pub use rkube_admission;
pub use rkube_admission::default_toleration_seconds::DefaultTolerationSeconds;

/// The Kubernetes version rkube serves (`/version`).
pub use rkube_apis::KUBERNETES_VERSION;

/// What the API server needs to run.
pub struct ServerConfig {
    pub bind: SocketAddr,
    /// A second port serving only the gRPC facade (`--grpc-port`); it is always served on
    /// `bind` too.
    pub grpc_bind: Option<SocketAddr>,
    /// The address clients reach the server at, for `/api` (e.g. `127.0.0.1:6443`).
    pub advertise_address: String,
    /// This server's address in the `kubernetes` Service's endpoints: where pods reach it
    /// (see [`endpoint_reconciler`]).
    pub endpoint_address: std::net::IpAddr,
    pub tls: TlsMaterial,
    pub store: Arc<dyn Store>,
    /// `--service-cluster-ip-range` and `--service-node-port-range`.
    pub service_ranges: services::ServiceRanges,
    /// `--cluster-dns`: the `kube-system/kube-dns` Service's cluster IP, made at startup
    /// (each node's DNS keeps its EndpointSlices). None: no such Service.
    pub cluster_dns: Option<std::net::Ipv4Addr>,
    /// The front-proxy client certificate for aggregated API servers. `None`:
    /// APIServices with a service cannot be reached (their requests get a 500 saying so).
    pub front_proxy: Option<aggregator::FrontProxy>,
    /// `--requestheader-*`: front proxies this server trusts (its own front-proxy CA by
    /// default), published for extension servers. `None`: no request-header authentication.
    pub requestheader: Option<authn::requestheader::RequestHeaderOptions>,
    /// The admission chain (`--enable-admission-plugins`, `--disable-admission-plugins` and
    /// the plugins' own flags).
    pub admission: rkube_admission::Chain,
    /// How to reach kubelets for logs, exec, attach, port-forward and `nodes/proxy`: the
    /// API server's kubelet-client certificate and the rules for choosing an address. `None`:
    /// no kubelet access (those requests get a 503 saying so).
    pub kubelet_client: Option<KubeletClientConfig>,
    /// Service-account tokens: the keys that sign and verify them, the issuer, audiences
    /// and expiration limits (`--service-account-*`).
    pub service_account_tokens: authn::TokenOptions,
    /// What one client may cost: connection timeouts and HTTP/2 streams, requests in flight.
    pub limits: ServingLimits,
    /// Where ComponentStatus probes the scheduler and the controller-manager.
    pub component_ports: component_status::ComponentPorts,
    /// `--authorization-mode`: the authorizers asked, in order, after `system:masters`.
    pub authorization_modes: Vec<authz::Mode>,
    /// `--authorization-webhook-config-file` and its flags, for the `Webhook` mode.
    pub authorization_webhook: Option<Arc<authz::webhook::WebhookAuthorizer>>,
    /// `--anonymous-auth`, `--token-auth-file`, `--enable-bootstrap-token-auth`,
    /// `--service-account-jwks-uri`.
    pub authentication: authn::AuthenticationOptions,
    /// `--audit-policy-file` and `--audit-log-*`: what is recorded, and where.
    pub auditor: audit::Auditor,
    /// `--audit-webhook-*`: a receiver the events are also sent to (when there is a policy).
    pub audit_webhook: Option<audit::webhook::WebhookOptions>,
}

/// kube-apiserver's serving limits: per connection (header-read and idle timeouts, HTTP/2
/// streams) and for the whole server (`--max-requests-inflight`,
/// `--max-mutating-requests-inflight`; 0 is no limit).
#[derive(Clone, Debug)]
pub struct ServingLimits {
    pub connection: rkube_certs::tls::ConnectionLimits,
    pub max_requests_inflight: usize,
    pub max_mutating_requests_inflight: usize,
}

impl Default for ServingLimits {
    /// kube-apiserver's defaults.
    fn default() -> Self {
        ServingLimits {
            connection: rkube_certs::tls::ConnectionLimits::default(),
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
        }
    }
}

/// A running API server.
pub struct Server {
    pub local_addr: SocketAddr,
    /// The gRPC-only listener's address (`--grpc-port`), if any.
    pub grpc_addr: Option<SocketAddr>,
    task: tokio::task::JoinHandle<()>,
    grpc_task: Option<tokio::task::JoinHandle<()>>,
    endpoints: tokio::task::JoinHandle<()>,
}

struct Health {
    ready: AtomicBool,
    started: Instant,
    store: Arc<dyn Store>,
}

impl Server {
    /// Binds, bootstraps the cluster's default objects and starts serving.
    pub async fn start(mut config: ServerConfig) -> StartResult<Server> {
        let mut registry =
            registry::Registry::new(config.store.clone(), config.service_ranges.clone());
        registry.admission = std::mem::take(&mut config.admission);
        let rbac_index: authz::rbac::SharedIndex = Default::default();
        let escalation =
            Arc::new(authz::rbac::escalation::EscalationCheck::new(rbac_index.clone()));
        registry.guards.push(escalation.clone());
        registry.start_caches().await.map_err(|e| StartError::Caches(e.message))?;
        let registry = Arc::new(registry);
        // The server's HTTPS client to URLs and Services (admission and conversion webhooks).
        let service_client =
            Arc::new(service_client::ServiceClient::new(Arc::downgrade(&registry)));
        registry.admission.set_webhook_backend(Arc::new(admission_webhooks::WebhookBackend {
            registry: Arc::downgrade(&registry),
            client: service_client.clone(),
        }));
        // The same client calls custom resources' conversion webhooks.
        registry.set_converter(Arc::new(crd_conversion::Converter::new(service_client.clone())));
        bootstrap(&registry, &config).await?;
        let front_proxy = config.front_proxy.take();
        let authentication_info = aggregator::authentication_info::data(
            &config.tls.client_ca_pem,
            config.requestheader.as_ref(),
        );
        let requestheader = match &config.requestheader {
            Some(options) => Some(Arc::new(
                authn::requestheader::RequestHeader::new(options.clone())
                    .map_err(StartError::Tokens)?,
            )),
            None => None,
        };
        aggregator::authentication_info::publish(&registry, authentication_info).await.map_err(
            |message| StartError::Bootstrap {
                resource: "configmaps",
                name: aggregator::authentication_info::NAME.into(),
                message,
            },
        )?;
        aggregator::autoregister::register(&registry).await.map_err(|message| {
            StartError::Bootstrap { resource: "apiservices", name: String::new(), message }
        })?;
        let aggregator =
            aggregator::Aggregator::new(registry.clone(), service_client.clone(), front_proxy);
        aggregator::availability::start(aggregator.clone());
        authz::rbac::reconcile::bootstrap_policy(&registry).await.map_err(|e| {
            StartError::Bootstrap {
                resource: "clusterroles",
                name: String::new(),
                message: e.message,
            }
        })?;
        authz::rbac::feed::start(registry.clone(), rbac_index.clone())
            .await
            .map_err(|e| StartError::Caches(e.message))?;
        let authz_sources = authz::modes::Sources {
            webhook: config.authorization_webhook.take(),
            rbac: rbac_index,
            node_graph: Arc::new(authz::node::CacheGraph { registry: registry.clone() }),
        };
        // CEL for the definitions' `x-kubernetes-validations`, before any is served.
        rkube_apis::validation::rules::install(Arc::new(rkube_cel::crd::Engine));
        // And for the admission configurations' expressions, checked when they are written.
        rkube_apis::validation::rules::install_expression_checker(Arc::new(
            rkube_cel::admission_expressions::Expressions,
        ));
        custom_resources::start(registry.clone());
        let registry_for_endpoints = registry.clone();
        let acceptor = listener::acceptor(
            &config.tls,
            requestheader.as_ref().map(|r| r.options().ca_pem.as_slice()).unwrap_or_default(),
        )?;
        let kubelet = kubelet::KubeletClient::new(config.kubelet_client.as_ref())?;
        let tokens = authn::ServiceAccountTokens::new(&config.service_account_tokens)
            .map_err(|e| StartError::Tokens(e.to_string()))?;
        let tcp = tokio::net::TcpListener::bind(config.bind)
            .await
            .map_err(|error| StartError::Listen { addr: config.bind, error })?;
        let local_addr = tcp.local_addr()?;
        let health = Arc::new(Health {
            ready: AtomicBool::new(true),
            started: Instant::now(),
            store: config.store.clone(),
        });
        let authorizer: Arc<dyn authz::Authorizer> =
            Arc::new(authz::modes::chain(&config.authorization_modes, &authz_sources));
        escalation.set_authorizer(authorizer.clone());
        registry
            .admission
            .set_authorizer(Arc::new(authz::admission::ForAdmission(authorizer.clone())));
        let openapi_docs = Arc::new(openapi::OpenApi::new(registry.clone(), aggregator.clone()));
        let mut auditor = std::mem::take(&mut config.auditor);
        if let Some(options) = config.audit_webhook.take().filter(|_| auditor.has_policy()) {
            let webhook = audit::webhook::WebhookBackend::start(options);
            auditor.add_sink(Arc::new(webhook));
        }
        let auditor = Arc::new(auditor);
        let oidc = oidc_discovery(&config);
        let api_state = Arc::new(api::ApiState {
            registry,
            server_address: config.advertise_address.clone(),
            metrics: metrics::Metrics::default(),
            kubelet,
            tokens,
            authentication: config.authentication,
            component_ports: config.component_ports,
            authorizer: authorizer.clone(),
            token_cache: Default::default(),
            aggregator,
            auditor: auditor.clone(),
        });
        let rest = Router::new()
            .route("/healthz", get(healthz))
            .route("/livez", get(healthz))
            .route("/readyz", get(readyz))
            .route("/version", get(version))
            .route("/metrics", get(metrics_handler).with_state(api_state.clone()))
            .with_state(health)
            .merge(openapi::routes(openapi_docs))
            .merge(oidc.map(|d| d.routes()).unwrap_or_default())
            .fallback(api::handle)
            .with_state(api_state.clone())
            .layer(axum::middleware::from_fn_with_state(authorizer.clone(), authz::authorize));
        // The layers every request goes through, on every port: the audit ID,
        // authentication, auditing, impersonation, the in-flight limits.
        let inflight = Arc::new(inflight::InflightLimits::new(
            config.limits.max_requests_inflight,
            config.limits.max_mutating_requests_inflight,
        ));
        let layered = |router: Router| {
            router
                .layer(axum::middleware::from_fn_with_state(inflight.clone(), inflight::limit))
                .layer(axum::middleware::from_fn_with_state(
                    authorizer.clone(),
                    authn::impersonation::impersonate,
                ))
                .layer(axum::middleware::from_fn_with_state(auditor.clone(), audit::layer))
                .layer(axum::middleware::from_fn_with_state(api_state.clone(), authn::authenticate))
                .layer(axum::middleware::from_fn(grpc::refusals_as_status))
                .layer(axum::middleware::from_fn(audit::init))
        };
        // gRPC on the same port (authorized per call once its message names the resource),
        // and alone on `--grpc-port` when asked.
        let grpc_routes = grpc::routes(api_state.clone()).await;
        let router = layered(grpc::by_content_type(grpc_routes.clone(), rest));
        let grpc = match config.grpc_bind {
            Some(addr) => {
                let tcp = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|error| StartError::Listen { addr, error })?;
                let grpc_addr = tcp.local_addr()?;
                let task = tokio::spawn(listener::serve(
                    tcp,
                    acceptor.clone(),
                    config.limits.connection,
                    layered(grpc_routes),
                    requestheader.clone(),
                ));
                tracing::info!(%grpc_addr, "gRPC API listening");
                Some((grpc_addr, task))
            }
            None => None,
        };
        // Build the OpenAPI documents now rather than on kubectl's first request.
        tokio::task::spawn_blocking(|| {
            rkube_apis::openapi::Documents::builtin();
        });
        let task = tokio::spawn(listener::serve(
            tcp,
            acceptor,
            config.limits.connection,
            router,
            requestheader,
        ));
        tracing::info!(%local_addr, "API server listening");
        let me = endpoint_reconciler::Endpoint {
            address: config.endpoint_address,
            port: local_addr.port(),
        };
        let endpoints =
            endpoint_reconciler::start(registry_for_endpoints, config.store.clone(), me);
        let (grpc_addr, grpc_task) = grpc.unzip();
        Ok(Server { local_addr, grpc_addr, task, grpc_task, endpoints })
    }

    /// Stops accepting connections.
    pub fn stop(&self) {
        self.task.abort();
        if let Some(task) = &self.grpc_task {
            task.abort();
        }
        self.endpoints.abort();
    }
}

/// The service-account issuer discovery documents, unless the issuer cannot be discovered
/// (then, as upstream, a log line and no endpoints).
fn oidc_discovery(config: &ServerConfig) -> Option<Arc<authn::oidc_discovery::Discovery>> {
    let tokens = &config.service_account_tokens;
    let issuer = tokens.issuers.first()?;
    let mut keys: Vec<&[u8]> = tokens.verification_keys_pem.iter().map(Vec::as_slice).collect();
    if keys.is_empty() {
        keys.push(&tokens.signing_key_pem);
    }
    match authn::oidc_discovery::Discovery::new(
        issuer,
        config.authentication.jwks_uri.as_deref(),
        &config.advertise_address,
        &keys,
    ) {
        Ok(d) => Some(Arc::new(d)),
        Err(error) => {
            tracing::warn!(%error, "service-account issuer discovery endpoints are not served");
            None
        }
    }
}

/// What every cluster has: the default namespaces, and the `kubernetes` Service in
/// `default` with its Endpoints and EndpointSlice pointing at this API server.
async fn bootstrap(registry: &registry::Registry, config: &ServerConfig) -> StartResult<()> {
    let resources = registry.resources();
    let options = registry::WriteOptions {
        field_manager: Some("kube-apiserver".to_string()),
        ..Default::default()
    };
    let ensure = |group: &'static str,
                  version: &'static str,
                  plural: &'static str,
                  obj: serde_json::Value| {
        let info = resources.get(group, version, plural).expect("built-in resource");
        let namespace = obj["metadata"]["namespace"].as_str().map(String::from);
        let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
        let mut options = options.clone();
        // The endpoints may hold a loopback address (see `WriteOptions::trusted`).
        options.trusted = matches!(plural, "endpoints" | "endpointslices");
        async move {
            match registry.create(info, namespace.as_deref(), obj, &options).await {
                Ok(_) => {
                    tracing::info!(resource = plural, name, "created");
                    Ok(())
                }
                Err(e) if e.reason == "AlreadyExists" => Ok(()),
                Err(e) => Err(StartError::Bootstrap { resource: plural, name, message: e.message }),
            }
        }
    };
    for (name, value) in rkube_admission::priority::SYSTEM_CLASSES {
        ensure(
            "scheduling.k8s.io",
            "v1",
            "priorityclasses",
            json!({
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "description": "Used for system critical pods that must not be moved from their current node.",
                "preemptionPolicy": "PreemptLowerPriority",
            }),
        )
        .await?;
    }
    for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        ensure(
            "",
            "v1",
            "namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        )
        .await?;
    }
    let ip = config.service_ranges.first().to_string();
    let port = match config.advertise_address.rsplit_once(':') {
        Some((_, p)) => p.parse::<u16>().unwrap_or(6443),
        None => 6443,
    };
    ensure("", "v1", "services", json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": "ClusterIP", "clusterIP": ip, "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
    }))
    .await?;
    // The endpoints: this server (and the others that serve), kept by the reconciler.
    let me = endpoint_reconciler::Endpoint { address: config.endpoint_address, port };
    endpoint_reconciler::reconcile(registry, config.store.as_ref(), &me).await.map_err(
        |message| StartError::Bootstrap {
            resource: "endpoints",
            name: "kubernetes".into(),
            message,
        },
    )?;
    if let Some(ip) = config.cluster_dns {
        // As CoreDNS's Service, without a selector: each node's DNS keeps an EndpointSlice of
        // its own, and `Local` keeps each pod's queries on its node. Not fatal: in a cluster
        // made before, another Service may hold the address.
        let made = ensure("", "v1", "services", json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": {
                "k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
                "kubernetes.io/name": "CoreDNS"}},
            "spec": {"type": "ClusterIP", "clusterIP": ip.to_string(), "clusterIPs": [ip.to_string()],
                "internalTrafficPolicy": "Local",
                "ports": [{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                          {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53}]},
        }))
        .await;
        if let Err(e) = made {
            tracing::warn!(error = %e, %ip, "no kube-dns Service: pods cannot reach the cluster DNS");
        }
    }
    Ok(())
}

#[derive(serde::Deserialize)]
struct HealthQuery {
    verbose: Option<String>,
}

/// The checks behind `/livez` and `/readyz`: name and result.
async fn checks(health: &Health) -> Vec<(&'static str, Result<(), String>)> {
    let store = match tokio::time::timeout(
        std::time::Duration::from_secs(2),
        health.store.current_revision(),
    )
    .await
    {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the store did not answer within 2s".to_string()),
    };
    let ready = if health.ready.load(Ordering::SeqCst) { Ok(()) } else { Err("not ready".into()) };
    vec![("ping", Ok(())), ("etcd", store), ("poststarthook/bootstrap-controller", ready)]
}

async fn health_response(health: &Health, verbose: bool, what: &str) -> Response {
    let results = checks(health).await;
    let ok = results.iter().all(|(_, r)| r.is_ok());
    let body = if verbose || !ok {
        let mut lines: Vec<String> = results
            .iter()
            .map(|(name, r)| match r {
                Ok(()) => format!("[+]{name} ok"),
                Err(_) => format!("[-]{name} failed: reason withheld"),
            })
            .collect();
        lines.push(if ok {
            format!("{what} check passed")
        } else {
            format!("{what} check failed")
        });
        lines.join("\n") + "\n"
    } else {
        "ok".to_string()
    };
    let code = if ok { http::StatusCode::OK } else { http::StatusCode::INTERNAL_SERVER_ERROR };
    let mut response = (code, body).into_response();
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

async fn healthz(
    State(health): State<Arc<Health>>,
    AxumQuery(q): AxumQuery<HealthQuery>,
) -> Response {
    health_response(&health, q.verbose.is_some(), "livez").await
}

async fn readyz(
    State(health): State<Arc<Health>>,
    AxumQuery(q): AxumQuery<HealthQuery>,
) -> Response {
    health_response(&health, q.verbose.is_some(), "readyz").await
}

async fn version(State(health): State<Arc<Health>>) -> Response {
    let _ = health.started;
    let body = json!({
        "major": "1",
        "minor": "33",
        "emulationMajor": "1",
        "emulationMinor": "33",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "32",
        "gitVersion": KUBERNETES_VERSION,
        "gitCommit": env!("CARGO_PKG_VERSION"),
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "rust",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, if std::env::consts::ARCH == "x86_64" { "amd64" } else { std::env::consts::ARCH }),
    });
    negotiate::respond(http::StatusCode::OK, &body, negotiate::Output::Json, &[]).into_response()
}

async fn metrics_handler(State(api): State<Arc<api::ApiState>>) -> Response {
    let objects: Vec<(String, usize)> = api
        .registry
        .resources()
        .all()
        .iter()
        .filter(|r| r.storage_version)
        .filter_map(|r| api.registry.cache(r).ok().map(|c| (r.group_resource(), c.size().0)))
        .collect();
    let mut response = (http::StatusCode::OK, api.metrics.render(&objects)).into_response();
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}
