//! Container lifecycle hooks, as upstream's `lifecycle/handlers.go` runs them: `postStart`
//! right after the container starts (the sync reports it Running only once the hook is
//! done) and `preStop` before the stop signal, within the termination grace period. A hook
//! runs a command in the container, sends an HTTP GET (`kube-lifecycle/1.33`, the status
//! code is not looked at), or sleeps. A failure gives upstream's message, which the caller
//! records as `FailedPostStartHook` / `FailedPreStopHook`.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, LifecycleHandler, Pod};

use super::handlers::{self, ExecError};
use crate::runtime::Runtime;

/// `name_namespace(uid)`, as upstream's messages name a pod.
pub fn pod_key(pod: &Pod) -> String {
    format!(
        "{}_{}({})",
        pod.metadata.name.as_deref().unwrap_or(""),
        pod.metadata.namespace.as_deref().unwrap_or(""),
        pod.metadata.uid.as_deref().unwrap_or("")
    )
}

/// Go's `%v` of a string slice: `[sh -c exit 1]`.
fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// Runs a hook against a container instance; on failure, upstream's message for the event.
/// The caller bounds how long it may take.
pub async fn run(
    runtime: &dyn Runtime,
    pod: &Pod,
    container: &Container,
    container_id: &str,
    pod_ip: &str,
    handler: &LifecycleHandler,
) -> Result<(), String> {
    if !runtime.runs_processes() {
        return Ok(());
    }
    run_handler(runtime, pod, container, container_id, pod_ip, handler).await
}

async fn run_handler(
    runtime: &dyn Runtime,
    pod: &Pod,
    container: &Container,
    container_id: &str,
    pod_ip: &str,
    handler: &LifecycleHandler,
) -> Result<(), String> {
    let pod_name = pod_key(pod);
    let name = &container.name;
    if let Some(exec) = &handler.exec {
        let command = exec.command.clone().unwrap_or_default();
        let (error, output) = match handlers::exec(runtime, container_id, &command, None).await {
            Ok(r) if r.exit_code == 0 => return Ok(()),
            Ok(r) => (
                format!(
                    "command '{}' exited with {}: {}",
                    command.join(" "),
                    r.exit_code,
                    r.stderr
                ),
                r.output,
            ),
            Err(ExecError::TimedOut) => (handlers::timed_out(&command), String::new()),
            Err(ExecError::Runtime(e)) => (e, String::new()),
        };
        return Err(format!(
            "Exec lifecycle hook ({}) for Container {name:?} in Pod {pod_name:?} failed - error: \
             {error}, message: {output:?}",
            go_list(&command)
        ));
    }
    if let Some(get) = &handler.http_get {
        let path = get.path.clone().unwrap_or_default();
        let fail = |error: String| {
            format!(
                "HTTP lifecycle hook ({path}) for Container {name:?} in Pod {pod_name:?} failed - \
                 error: {error}"
            )
        };
        let request = handlers::http_request(get, container, pod_ip, "lifecycle").map_err(&fail)?;
        // The caller's deadline is the one that counts.
        return match handlers::http_get(&request, Duration::from_secs(24 * 3600)).await {
            Ok(_) => Ok(()),
            Err(e) => Err(fail(e)),
        };
    }
    if let Some(sleep) = &handler.sleep {
        tokio::time::sleep(Duration::from_secs(sleep.seconds.max(0) as u64)).await;
        return Ok(());
    }
    Err(format!(
        "Cannot run handler: invalid handler: {}",
        serde_json::to_string(handler).unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pods_and_commands_are_named_as_upstream() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u-1"}
        }))
        .unwrap();
        assert_eq!(pod_key(&pod), "web_default(u-1)");
        assert_eq!(go_list(&["sh".into(), "-c".into(), "exit 1".into()]), "[sh -c exit 1]");
    }

    #[tokio::test]
    async fn http_hooks_ignore_the_status_and_fail_when_nothing_answers() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u-1"}
        }))
        .unwrap();
        let container: Container =
            serde_json::from_value(json!({"name": "app", "image": "busybox"})).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let mut buf = vec![0u8; 4096];
            let _ = socket.read(&mut buf).await;
            let _ = socket
                .write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n")
                .await;
        });
        // Hooks other than exec never reach the runtime.
        let runtime = crate::runtime::sim::SimulatedRuntime::new();
        let handler: LifecycleHandler =
            serde_json::from_value(json!({"httpGet": {"port": port, "path": "/hook"}})).unwrap();
        run_handler(&runtime, &pod, &container, "id", "127.0.0.1", &handler).await.unwrap();
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let handler: LifecycleHandler =
            serde_json::from_value(json!({"httpGet": {"port": closed, "path": "/hook"}})).unwrap();
        let e =
            run_handler(&runtime, &pod, &container, "id", "127.0.0.1", &handler).await.unwrap_err();
        assert_eq!(
            e,
            format!(
                "HTTP lifecycle hook (/hook) for Container \"app\" in Pod \"web_default(u-1)\" \
                 failed - error: Get \"http://127.0.0.1:{closed}/hook\": dial tcp \
                 127.0.0.1:{closed}: connect: connection refused"
            )
        );
        let handler: LifecycleHandler =
            serde_json::from_value(json!({"sleep": {"seconds": 0}})).unwrap();
        run_handler(&runtime, &pod, &container, "id", "127.0.0.1", &handler).await.unwrap();
    }
}
