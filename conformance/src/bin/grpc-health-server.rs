//! A gRPC health server for pods: the standard `grpc.health.v1.Health/Check` answered
//! `SERVING` over HTTP/2 without TLS, what upstream's `agnhost grpc-health-checking` gives
//! gRPC liveness and readiness probes. The probe tests put it in a local image.
//!
//! ```text
//! grpc-health-server [PORT]    (5000 unless given)
//! ```
//!
//! Any other method answers gRPC status 12 (UNIMPLEMENTED). Each Check is printed on stdout,
//! so that a pod's log shows the probes that reached it.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::StreamBody;
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};

const CHECK: &str = "/grpc.health.v1.Health/Check";

/// A `HealthCheckResponse{status: SERVING}` in a gRPC message: no compression, length 2,
/// then field 1 (varint) = 1.
const SERVING: [u8; 7] = [0, 0, 0, 0, 2, 0x08, 0x01];

type Body =
    StreamBody<futures_util::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, Infallible>>>>;

fn answer(path: &str) -> hyper::Response<Body> {
    let mut trailers = http::HeaderMap::new();
    let mut frames = Vec::new();
    if path == CHECK {
        println!("check");
        frames.push(Ok(Frame::data(Bytes::from_static(&SERVING))));
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    } else {
        trailers.insert("grpc-status", http::HeaderValue::from_static("12"));
        trailers.insert("grpc-message", http::HeaderValue::from_static("unknown method"));
    }
    frames.push(Ok(Frame::trailers(trailers)));
    let mut response = hyper::Response::new(StreamBody::new(futures_util::stream::iter(frames)));
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/grpc"));
    response
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args().nth(1).and_then(|p| p.parse().ok()).unwrap_or(5000);
    let listener = tokio::net::TcpListener::bind(("0.0.0.0", port)).await?;
    println!("serving grpc.health.v1 on port {port}");
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(async move {
            let service = hyper::service::service_fn(|request: hyper::Request<_>| {
                let response = answer(request.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
