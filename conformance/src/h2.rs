//! A lean HTTP/2 client of `rkube server` for benchmarks: one TLS connection (the admin client
//! certificate from the server's PKI), requests multiplexed on it as client-go does, bodies sent
//! as given and answers read as bytes. It measures the server without a typed client's encoding
//! and decoding on the same cores; tests use it for what only the wire shows (protobuf).

use std::path::Path;

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use openssl::ssl::{SslConnector, SslFiletype, SslMethod};

/// One HTTP/2 connection; clones share it.
#[derive(Clone)]
pub struct H2Client {
    sender: SendRequest<Full<Bytes>>,
    authority: String,
}

impl H2Client {
    /// Connects to `https://127.0.0.1:port` with the admin certificate of the server's data dir
    /// (`DIR/pki`), negotiating `h2` by ALPN.
    pub async fn connect(data_dir: &Path, port: u16) -> Result<H2Client> {
        let pki = data_dir.join("pki");
        let mut builder = SslConnector::builder(SslMethod::tls_client())?;
        builder.set_ca_file(pki.join("ca.crt")).context("loading ca.crt")?;
        builder.set_certificate_chain_file(pki.join("admin.crt")).context("loading admin.crt")?;
        builder.set_private_key_file(pki.join("admin.key"), SslFiletype::PEM)?;
        builder.set_alpn_protos(b"\x02h2")?;
        let ssl = builder.build().configure()?.into_ssl("127.0.0.1")?;
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        tcp.set_nodelay(true)?;
        let mut tls = tokio_openssl::SslStream::new(ssl, tcp)?;
        std::pin::Pin::new(&mut tls).connect().await.context("TLS handshake")?;
        if tls.ssl().selected_alpn_protocol() != Some(b"h2") {
            bail!("the server did not negotiate HTTP/2");
        }
        let (sender, connection) =
            hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                .max_concurrent_reset_streams(0)
                .handshake(hyper_util::rt::TokioIo::new(tls))
                .await
                .context("HTTP/2 handshake")?;
        tokio::spawn(connection);
        Ok(H2Client { sender, authority: format!("127.0.0.1:{port}") })
    }

    /// Sends `method path` with `headers` and `body`; the response with its body still to
    /// read (a watch streams), for tests that speak what only the wire shows (protobuf).
    pub async fn send(
        &self,
        method: http::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<http::Response<hyper::body::Incoming>> {
        let mut request = http::Request::builder()
            .method(method.clone())
            .uri(format!("https://{}{path}", self.authority));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let mut sender = self.sender.clone();
        sender.ready().await.context("HTTP/2 connection")?;
        sender
            .send_request(request.body(Full::new(body))?)
            .await
            .with_context(|| format!("{method} {path}"))
    }

    /// [`H2Client::send`] with the whole answer read: status, headers and body.
    pub async fn request(
        &self,
        method: http::Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<(http::StatusCode, http::HeaderMap, Bytes)> {
        let response = self.send(method, path, headers, body).await?;
        let (parts, body) = response.into_parts();
        let body = body.collect().await?.to_bytes();
        Ok((parts.status, parts.headers, body))
    }

    /// POSTs a JSON `body` to `path`; the answer's status and body.
    pub async fn post_json(&self, path: &str, body: Bytes) -> Result<(http::StatusCode, Bytes)> {
        let request = http::Request::post(format!("https://{}{path}", self.authority))
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(Full::new(body))?;
        let mut sender = self.sender.clone();
        sender.ready().await.context("HTTP/2 connection")?;
        let response =
            sender.send_request(request).await.with_context(|| format!("POST {path}"))?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }
}
