//! `/healthz` for the scheduler and the controller-manager, served as kube-scheduler and
//! kube-controller-manager serve it on their secure ports (10259 and 10257): HTTPS with a
//! self-signed certificate made at start, readable without credentials (upstream lets anyone
//! read `/healthz`, `/livez` and `/readyz`; nothing else is served). The API server's
//! ComponentStatus probes it, whether the component runs inside `rkube server` or on its own.
//!
//! A component is healthy while its task runs: `ok`, else a 500 listing the failed check as
//! upstream's healthz does (`[-]scheduler failed: reason withheld`).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use anyhow::Context as _;
use http::{Method, Response, StatusCode};

/// Whether the component works: `Err` with the reason when it does not.
pub type Check = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// A running `/healthz` server; dropping it stops serving.
pub struct Healthz {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Healthz {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves `/healthz` for `component` (a check of that name) on loopback `port`.
pub async fn serve(port: u16, component: &'static str, check: Check) -> anyhow::Result<Healthz> {
    let pair = rkube_certs::Pki::self_signed_serving_cert(
        &format!("{component}@localhost"),
        &["localhost", "127.0.0.1"],
        365,
    )?;
    let cert = pair.cert_pem.as_bytes();
    // No client certificate is asked for anything here; the acceptor wants a CA to check
    // those that come anyway, and its own certificate serves (nothing else is signed by it).
    let acceptor =
        rkube_certs::tls::acceptor(cert, pair.key_pem.as_bytes(), cert, component.as_bytes())?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} for the {component}'s /healthz"))?;
    let task = tokio::spawn(rkube_certs::tls::serve(listener, acceptor, component, move |_| {
        let check = check.clone();
        hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let response = answer(component, &check, request.method(), request.uri().path());
            async move { Ok::<_, std::convert::Infallible>(response) }
        })
    }));
    Ok(Healthz { task })
}

/// The answer to one request.
fn answer(component: &str, check: &Check, method: &Method, path: &str) -> Response<String> {
    let text = |code: StatusCode, body: String| {
        Response::builder()
            .status(code)
            .header(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .header("X-Content-Type-Options", "nosniff")
            .body(body)
            .unwrap_or_default()
    };
    if !matches!(path, "/healthz" | "/livez" | "/readyz") {
        return text(StatusCode::NOT_FOUND, "404 page not found\n".into());
    }
    if !matches!(*method, Method::GET | Method::HEAD) {
        return text(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n".into());
    }
    let what = path.trim_start_matches('/');
    match check() {
        Ok(()) => text(StatusCode::OK, "ok".into()),
        Err(reason) => {
            tracing::warn!(component, reason, "{what} check failed");
            text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!(
                    "[+]ping ok\n[-]{component} failed: reason withheld\n{what} check failed\n"
                ),
            )
        }
    }
}

/// The check of a component that runs as `task`: healthy until the task ends.
pub fn task_check<T>(task: &tokio::task::JoinHandle<T>, what: &'static str) -> Check {
    let handle = task.abort_handle();
    Arc::new(move || match handle.is_finished() {
        false => Ok(()),
        true => Err(format!("the {what} stopped")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_as_upstreams_healthz() {
        let ok: Check = Arc::new(|| Ok(()));
        let response = answer("scheduler", &ok, &Method::GET, "/healthz");
        assert_eq!((response.status(), response.body().as_str()), (StatusCode::OK, "ok"));
        let failing: Check = Arc::new(|| Err("the scheduler stopped".into()));
        let response = answer("scheduler", &failing, &Method::GET, "/livez");
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            response.body(),
            "[+]ping ok\n[-]scheduler failed: reason withheld\nlivez check failed\n"
        );
        let response = answer("scheduler", &ok, &Method::GET, "/metrics");
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let response = answer("scheduler", &ok, &Method::POST, "/healthz");
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    }
}
