//! The `kubernetes` Service from inside a pod, on a real node (Docker, the service proxy in
//! this machine's iptables): its endpoint is an address pods reach (the host's primary
//! address when the server listens on every address) that the serving certificate covers,
//! and a pod with a token made by `kubectl create token` lists Services over HTTPS through
//! the cluster IP, with curl verifying the certificate for `kubernetes.default.svc`.

use std::time::Duration;

use rkube_conformance::cluster::jsonpath;
use rkube_conformance::node::{assert_route_is_local, ensure_tools_image, NodeServer, TOOLS};

#[test]
fn a_pod_reaches_the_api_server_through_the_kubernetes_service() {
    ensure_tools_image();
    let node = NodeServer::start_with_proxy(&["--bind-address", "0.0.0.0"]);
    let server = &node.server;

    // The endpoint: not loopback, local to this machine, on the server's port.
    let endpoint = server.ok(&[
        "get",
        "endpointslice",
        "kubernetes",
        "-o",
        &jsonpath("{.endpoints[0].addresses[0]}:{.ports[0].port}"),
    ]);
    let (address, port) = endpoint.trim().rsplit_once(':').expect("address:port");
    assert_ne!(address, "127.0.0.1", "pods cannot reach a loopback endpoint");
    assert_eq!(port, server.port.to_string());
    assert_route_is_local(address);
    let endpoints = server.ok(&["get", "endpoints", "kubernetes"]);
    assert!(endpoints.contains(&format!("{address}:{port}")), "{endpoints}");

    // The serving certificate covers it (curl verifies the name against the CA).
    let ca = server.data_dir.path().join("pki/ca.crt");
    let url = format!("https://{address}:{port}/readyz");
    let out = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "10", "--cacert"])
        .arg(&ca)
        .arg(&url)
        .output()
        .expect("curl");
    assert!(out.status.success(), "{url}: {}", String::from_utf8_lossy(&out.stderr));

    // A pod with a token lists Services through the cluster IP.
    let cluster_ip = server.ok(&["get", "svc", "kubernetes", "-o", &jsonpath("{.spec.clusterIP}")]);
    let cluster_ip = cluster_ip.trim();
    assert_route_is_local(cluster_ip);
    server.ok(&["create", "serviceaccount", "reader"]);
    // RBAC: it may list Services in default, and nothing else.
    server.ok(&["create", "role", "service-lister", "--verb=list", "--resource=services"]);
    server.ok(&[
        "create",
        "rolebinding",
        "reader-lists",
        "--role=service-lister",
        "--serviceaccount=default:reader",
    ]);
    let token = server.ok(&["create", "token", "reader"]);
    server.ok(&["create", "configmap", "ca", &format!("--from-file=ca.crt={}", ca.display())]);
    let pod = format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: lister}}
spec:
  restartPolicy: Never
  volumes: [{{name: ca, configMap: {{name: ca}}}}]
  containers:
  - name: curl
    image: "{TOOLS}"
    imagePullPolicy: IfNotPresent
    env: [{{name: TOKEN, value: "{token}"}}]
    volumeMounts: [{{name: ca, mountPath: /ca}}]
    command: ["sh", "-c", "curl -sS --max-time 10 --resolve kubernetes.default.svc:443:{cluster_ip} --cacert /ca/ca.crt -H \"Authorization: Bearer $TOKEN\" https://kubernetes.default.svc/api/v1/namespaces/default/services"]
"#,
        token = token.trim()
    );
    server.ok_stdin(&["apply", "-f", "-"], &pod);
    let phase = node.wait_for(
        &["get", "pod", "lister", "-o", &jsonpath("{.status.phase}")],
        Duration::from_secs(60),
        |phase| phase == "Succeeded" || phase == "Failed",
    );
    let logs = server.ok(&["logs", "lister"]);
    assert_eq!(phase, "Succeeded", "the pod's curl failed: {logs}");
    assert!(logs.contains("\"kind\":\"ServiceList\""), "{logs}");
    assert!(logs.contains("\"name\":\"kubernetes\""), "{logs}");
}
