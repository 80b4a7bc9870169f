//! A typed client of the gRPC facade: built-in kinds as k8s-openapi types
//! (`get`/`list`/`create`/`delete`/`watch` of any `K: k8s_openapi::Resource`), over one
//! HTTP/2 connection with TLS by openssl (the cluster CA; a client certificate or a bearer
//! token). [`Client::api`] is the generated client for everything else.

use std::pin::Pin;
use std::task::{Context, Poll};

use std::path::Path;

use base64::Engine;
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{Stream, StreamExt};
use hyper_util::rt::TokioIo;
use k8s_openapi::serde::de::DeserializeOwned;
use k8s_openapi::serde::Serialize;
use k8s_openapi::{ListableResource, Resource};
use openssl::ssl::{SslConnector, SslMethod};
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::Status;

use super::proto::api_client::ApiClient;
use super::proto::{
    watch_event, DeleteOptions, DeleteRequest, GetRequest, ListRequest, ResourceRef, WatchRequest,
    WriteRequest,
};

/// Where the server is and who the client is.
#[derive(Clone, Default)]
pub struct ClientConfig {
    /// `https://host:port` (the REST server's URL: gRPC is served on the same port).
    pub server: String,
    /// The CA that signed the server's certificate (PEM).
    pub ca_pem: Vec<u8>,
    /// A client certificate and its key (PEM).
    pub client_cert_pem: Option<Vec<u8>>,
    pub client_key_pem: Option<Vec<u8>>,
    /// A bearer token, sent as `authorization` metadata.
    pub token: Option<String>,
}

impl ClientConfig {
    /// The server, CA and credentials of the kubeconfig's current context.
    pub fn from_kubeconfig(path: &Path) -> Result<ClientConfig, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading {path:?}: {e}"))?;
        let config: serde_json::Value =
            serde_yaml_ng::from_str(&text).map_err(|e| format!("reading {path:?}: {e}"))?;
        let by_name = |list: &str, name: &str, field: &str| -> Result<serde_json::Value, String> {
            config[list]
                .as_array()
                .and_then(|l| l.iter().find(|e| e["name"] == name))
                .map(|e| e[field].clone())
                .ok_or_else(|| format!("the kubeconfig has no {field} {name:?}"))
        };
        let context_name = config["current-context"].as_str().unwrap_or("");
        let context = by_name("contexts", context_name, "context")?;
        let cluster = by_name("clusters", context["cluster"].as_str().unwrap_or(""), "cluster")?;
        let user = by_name("users", context["user"].as_str().unwrap_or(""), "user")?;
        let base = path.parent().unwrap_or(Path::new("."));
        let read = |node: &serde_json::Value,
                    data: &str,
                    file: &str|
         -> Result<Option<Vec<u8>>, String> {
            if let Some(b64) = node[data].as_str() {
                return base64::engine::general_purpose::STANDARD
                    .decode(b64.trim())
                    .map(Some)
                    .map_err(|e| format!("{data}: {e}"));
            }
            match node[file].as_str() {
                Some(f) => std::fs::read(base.join(f)).map(Some).map_err(|e| format!("{f}: {e}")),
                None => Ok(None),
            }
        };
        let server =
            cluster["server"].as_str().ok_or("the kubeconfig names no server")?.to_string();
        if !server.starts_with("https://") {
            return Err(format!("the server {server:?} is not an https:// URL"));
        }
        Ok(ClientConfig {
            server,
            ca_pem: read(&cluster, "certificate-authority-data", "certificate-authority")?
                .unwrap_or_default(),
            client_cert_pem: read(&user, "client-certificate-data", "client-certificate")?,
            client_key_pem: read(&user, "client-key-data", "client-key")?,
            token: user["token"].as_str().map(String::from),
        })
    }
}

/// Why a client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("invalid server URL {0:?}")]
    Url(String),
    #[error("TLS: {0}")]
    Tls(#[from] openssl::error::ErrorStack),
    #[error("the bearer token is not valid metadata")]
    Token,
    #[error("connecting: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Adds the bearer token to every call.
#[derive(Clone)]
pub struct Credentials {
    authorization: Option<MetadataValue<Ascii>>,
}

impl tonic::service::Interceptor for Credentials {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        if let Some(value) = &self.authorization {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// The generated client with the credentials.
pub type Api = ApiClient<InterceptedService<Channel, Credentials>>;

/// A client of the gRPC facade.
#[derive(Clone)]
pub struct Client {
    api: Api,
}

/// A watch event of `K`.
#[derive(Debug)]
pub enum Event<K> {
    Added(K),
    Modified(K),
    Deleted(K),
    /// The resourceVersion the watch has reached.
    Bookmark(String),
}

/// The resource of `K` in `namespace`, named `name`.
fn reference<K: Resource>(namespace: Option<&str>, name: &str) -> ResourceRef {
    ResourceRef {
        group: K::GROUP.to_string(),
        version: K::VERSION.to_string(),
        resource: K::URL_PATH_SEGMENT.to_string(),
        namespace: namespace.unwrap_or("").to_string(),
        name: name.to_string(),
        subresource: String::new(),
    }
}

fn decode<T: DeserializeOwned>(data: &[u8]) -> Result<T, Status> {
    serde_json::from_slice(data)
        .map_err(|e| Status::internal(format!("the server's answer could not be read: {e}")))
}

/// An HTTP/2 channel to the server (lazy: the first call connects), for any service it
/// serves (the API, health, reflection); without the bearer token (see [`Credentials`]).
pub fn channel(config: &ClientConfig) -> Result<Channel, ConnectError> {
    let url: http::Uri =
        config.server.parse().map_err(|_| ConnectError::Url(config.server.clone()))?;
    let host = url.host().ok_or_else(|| ConnectError::Url(config.server.clone()))?;
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let port = url.port_u16().unwrap_or(443);
    let mut tls = SslConnector::builder(SslMethod::tls_client())?;
    for cert in openssl::x509::X509::stack_from_pem(&config.ca_pem)? {
        tls.cert_store_mut().add_cert(cert)?;
    }
    if let (Some(cert), Some(key)) = (&config.client_cert_pem, &config.client_key_pem) {
        let cert = openssl::x509::X509::from_pem(cert)?;
        let key = openssl::pkey::PKey::private_key_from_pem(key)?;
        tls.set_certificate(&cert)?;
        tls.set_private_key(&key)?;
    }
    tls.set_alpn_protos(b"\x02h2")?;
    let tls = tls.build();
    let connector = tower::service_fn(move |_: http::Uri| {
        let (tls, host) = (tls.clone(), host.clone());
        async move {
            let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
            let ssl = tls.configure()?.into_ssl(&host)?;
            let mut stream = tokio_openssl::SslStream::new(ssl, tcp)?;
            Pin::new(&mut stream).connect().await.map_err(std::io::Error::other)?;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(TokioIo::new(stream))
        }
    });
    // TLS is the connector's: the endpoint's scheme only names the authority.
    let endpoint = Endpoint::from_shared(format!(
        "http://{}",
        url.authority().map(|a| a.as_str()).unwrap_or("localhost")
    ))?;
    Ok(endpoint.connect_with_connector_lazy(connector))
}

impl Credentials {
    /// Credentials sending `token` (if any) as a bearer token.
    pub fn new(token: Option<&str>) -> Result<Credentials, ConnectError> {
        let authorization = match token {
            Some(token) => Some(
                MetadataValue::try_from(format!("Bearer {token}"))
                    .map_err(|_| ConnectError::Token)?,
            ),
            None => None,
        };
        Ok(Credentials { authorization })
    }
}

impl Client {
    /// A client of the server `config` names (lazy: the first call connects).
    pub fn new(config: &ClientConfig) -> Result<Client, ConnectError> {
        let channel = channel(config)?;
        let credentials = Credentials::new(config.token.as_deref())?;
        let api =
            ApiClient::with_interceptor(channel, credentials).max_decoding_message_size(64 << 20);
        Ok(Client { api })
    }

    /// The generated client: every call of the service.
    pub fn api(&self) -> Api {
        self.api.clone()
    }

    pub async fn get<K: Resource + DeserializeOwned>(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<K, Status> {
        let request =
            GetRequest { r#ref: Some(reference::<K>(namespace, name)), ..Default::default() };
        decode(&self.api().get(request).await?.into_inner().data)
    }

    /// The objects of `K` (in `namespace`, or all), matching `label_selector` (may be empty).
    pub async fn list<K: ListableResource + DeserializeOwned>(
        &self,
        namespace: Option<&str>,
        label_selector: &str,
    ) -> Result<k8s_openapi::List<K>, Status> {
        let request = ListRequest {
            r#ref: Some(reference::<K>(namespace, "")),
            label_selector: label_selector.to_string(),
            ..Default::default()
        };
        decode(&self.api().list(request).await?.into_inner().data)
    }

    pub async fn create<K: Resource + Serialize + DeserializeOwned>(
        &self,
        namespace: Option<&str>,
        object: &K,
    ) -> Result<K, Status> {
        let body = serde_json::to_vec(object)
            .map_err(|e| Status::invalid_argument(format!("the object: {e}")))?;
        let request = WriteRequest {
            r#ref: Some(reference::<K>(namespace, "")),
            body: Bytes::from(body),
            ..Default::default()
        };
        decode(&self.api().create(request).await?.into_inner().data)
    }

    /// Deletes an object; the answer (the object, or a Status) as JSON.
    pub async fn delete<K: Resource>(
        &self,
        namespace: Option<&str>,
        name: &str,
        options: DeleteOptions,
    ) -> Result<serde_json::Value, Status> {
        let request = DeleteRequest {
            r#ref: Some(reference::<K>(namespace, name)),
            options: Some(options),
            ..Default::default()
        };
        decode(&self.api().delete(request).await?.into_inner().data)
    }

    /// Watches `K` from `resource_version` (empty: the current state, as ADDED events first).
    pub async fn watch<K: Resource + DeserializeOwned + Send + 'static>(
        &self,
        namespace: Option<&str>,
        resource_version: &str,
    ) -> Result<BoxStream<'static, Result<Event<K>, Status>>, Status> {
        let request = WatchRequest {
            r#ref: Some(reference::<K>(namespace, "")),
            resource_version: resource_version.to_string(),
            allow_watch_bookmarks: true,
            ..Default::default()
        };
        let events = self.api().watch(request).await?.into_inner();
        let typed = Events { events, _kind: std::marker::PhantomData };
        Ok(typed.filter_map(|e| std::future::ready(e.transpose())).boxed())
    }
}

/// The typed events of a watch.
struct Events<K> {
    events: tonic::Streaming<super::proto::WatchEvent>,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K: DeserializeOwned> Stream for Events<K> {
    type Item = Result<Option<Event<K>>, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let event = match Pin::new(&mut self.events).poll_next(cx) {
            Poll::Ready(Some(Ok(event))) => event,
            Poll::Ready(Some(Err(status))) => return Poll::Ready(Some(Err(status))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        let typed = match watch_event::Type::try_from(event.r#type) {
            Ok(watch_event::Type::Added) => decode(&event.object).map(|o| Some(Event::Added(o))),
            Ok(watch_event::Type::Modified) => {
                decode(&event.object).map(|o| Some(Event::Modified(o)))
            }
            Ok(watch_event::Type::Deleted) => {
                decode(&event.object).map(|o| Some(Event::Deleted(o)))
            }
            Ok(watch_event::Type::Bookmark) => {
                decode::<serde_json::Value>(&event.object).map(|o| {
                    Some(Event::Bookmark(
                        o["metadata"]["resourceVersion"].as_str().unwrap_or("").to_string(),
                    ))
                })
            }
            _ => Ok(None),
        };
        Poll::Ready(Some(typed))
    }
}
