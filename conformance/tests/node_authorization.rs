//! What a node's credentials and the API server's own kubelet-client certificate may reach,
//! end to end with the real binary, stock kubectl and the real kubelet: the Node authorizer
//! gives a kubelet only the Secrets and ConfigMaps of pods bound to it; the nodes/proxy path
//! no longer lends anyone the API server's privileges; the kubelet API asks the API server
//! (SubjectAccessReview) who may use it.

use std::time::Duration;

use rkube_conformance::cluster::{stderr_of, stdout_of, RkubeServer};
use rkube_conformance::identity::Identity;
use rkube_conformance::node::{ensure_tools_image, NodeServer, TOOLS};
use serde_json::json;

#[test]
fn a_node_reads_only_what_its_own_pods_use() {
    let s = RkubeServer::start();
    s.ok(&["create", "secret", "generic", "s1", "--from-literal=k=one"]);
    s.ok(&["create", "secret", "generic", "s2", "--from-literal=k=two"]);
    s.ok(&["create", "configmap", "c1", "--from-literal=k=v"]);
    s.wait_until("the default service account", Duration::from_secs(20), || {
        let out = s.kubectl(&["get", "serviceaccount", "default"]);
        (out.status.success(), stderr_of(&out))
    });
    // Pods bound to n1 and n2 (no kubelet runs them: the authorizer reads the bindings).
    for (pod, node, secret) in [("p1", "n1", "s1"), ("p2", "n2", "s2")] {
        let manifest = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod},
            "spec": {"nodeName": node, "automountServiceAccountToken": false,
                "volumes": [{"name": "s", "secret": {"secretName": secret}}],
                "containers": [{"name": "c", "image": "busybox:1.36",
                    "envFrom": [{"configMapRef": {"name": "c1"}}],
                    "volumeMounts": [{"name": "s", "mountPath": "/s"}]}]}});
        s.ok_stdin(&["create", "-f", "-"], &manifest.to_string());
    }
    let n1 = Identity::issue(&s, "system:node:n1", &["system:nodes"]).kubeconfig(&s, "n1");
    let (ok, out, err) = s.kubectl_as(&n1, &["get", "secret", "s1", "-o", "name"]);
    assert!(ok && out.trim() == "secret/s1", "{out}{err}");
    let (ok, _, err) = s.kubectl_as(&n1, &["get", "configmap", "c1"]);
    assert!(ok, "{err}");
    let (ok, _, err) = s.kubectl_as(&n1, &["get", "secret", "s2"]);
    assert!(!ok);
    assert_eq!(
        err.trim(),
        "Error from server (Forbidden): secrets \"s2\" is forbidden: User \"system:node:n1\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object"
    );
    let (ok, _, err) = s.kubectl_as(&n1, &["get", "secrets"]);
    assert!(!ok && err.trim().ends_with(": No Object name found"), "{err}");
    let (ok, _, err) = s.kubectl_as(&n1, &["get", "secrets", "-n", "kube-system"]);
    assert!(!ok, "{err}");
    // What the node rules give every node: pods and nodes to read; not namespaces to delete.
    let (ok, out, err) = s.kubectl_as(&n1, &["get", "pods", "-o", "name"]);
    assert!(ok && out.contains("pod/p2"), "{out}{err}");
    let (ok, _, err) = s.kubectl_as(&n1, &["delete", "namespace", "default", "--wait=false"]);
    assert!(!ok && err.contains("cannot delete resource \"namespaces\""), "{err}");
    // n2's pod goes: its secret is no longer n2's to read.
    let n2 = Identity::issue(&s, "system:node:n2", &["system:nodes"]).kubeconfig(&s, "n2");
    assert!(s.kubectl_as(&n2, &["get", "secret", "s2"]).0);
    s.ok(&["delete", "pod", "p2", "--grace-period=0", "--force"]);
    s.wait_until("n2 loses its pod's secret", Duration::from_secs(10), || {
        let (ok, out, err) = s.kubectl_as(&n2, &["get", "secret", "s2"]);
        (!ok && err.contains("no relationship found"), out + &err)
    });
}

#[test]
fn the_nodes_proxy_path_lends_nobody_the_api_servers_privileges() {
    let s = RkubeServer::start();
    // An ordinary user may not make a Node at all.
    let jane = Identity::issue(&s, "jane", &[]).kubeconfig(&s, "jane");
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "evil"}});
    let out = s.kubectl_with(
        &s.kubectl,
        &["--kubeconfig", jane.to_str().unwrap(), "create", "-f", "-"],
        Some(&node.to_string()),
    );
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("User \"jane\" cannot create resource \"nodes\""),
        "{}",
        stderr_of(&out)
    );
    // Even a Node that points at the API server itself (made by the admin): the API server's
    // kubelet-client certificate is not system:masters, so it reads no Secrets there.
    s.ok_stdin(&["create", "-f", "-"], &node.to_string());
    let status = json!({"status": {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": s.port}}}});
    s.ok(&[
        "patch",
        "node",
        "evil",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
    let out = s.kubectl(&[
        "get",
        "--raw",
        "/api/v1/nodes/evil/proxy/api/v1/namespaces/kube-system/secrets",
    ]);
    let text = stdout_of(&out) + &stderr_of(&out);
    assert!(!out.status.success(), "{text}");
    assert!(!text.contains("SecretList"), "{text}");
    assert!(text.contains("kube-apiserver-kubelet-client"), "{text}");
}

#[test]
fn the_kubelet_api_asks_the_api_server_who_may_use_it() {
    ensure_tools_image();
    let n = NodeServer::start();
    let s = &n.server;
    s.ok(&[
        "run",
        "web",
        &format!("--image={TOOLS}"),
        "--image-pull-policy=IfNotPresent",
        "--",
        "sleep",
        "3600",
    ]);
    s.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]);
    // Through the API server (its kubelet-client certificate, system:kubelet-api-admin).
    assert_eq!(s.ok(&["exec", "web", "--", "echo", "through"]).trim(), "through");
    // Straight to the kubelet with a user's certificate: refused unless RBAC grants it.
    let address = s.ok(&[
        "get",
        "node",
        &n.node,
        "-o",
        "jsonpath={.status.addresses[?(@.type==\"InternalIP\")].address}",
    ]);
    let port = s.ok(&[
        "get",
        "node",
        &n.node,
        "-o",
        "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}",
    ]);
    rkube_conformance::node::assert_route_is_local(address.trim());
    let kubelet = |file: &str, path: &str| {
        let (cert, key) = (
            s.data_dir.path().join(format!("{file}.crt")),
            s.data_dir.path().join(format!("{file}.key")),
        );
        let out = std::process::Command::new("curl")
            .args(["-sk", "--max-time", "20", "-w", "\n%{http_code}", "--cert"])
            .arg(cert)
            .arg("--key")
            .arg(key)
            .arg(format!("https://{}:{}{path}", address.trim(), port.trim()))
            .output()
            .expect("curl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) =
            text.rsplit_once('\n').map(|(b, c)| (b.to_string(), c.to_string())).unwrap_or_default();
        (code, body)
    };
    Identity::issue(s, "jane", &[]).write(s, "jane");
    Identity::issue(s, "ops", &[]).write(s, "ops");
    s.ok(&[
        "create",
        "clusterrolebinding",
        "ops-kubelet",
        "--clusterrole=system:kubelet-api-admin",
        "--user=ops",
    ]);
    assert_eq!(
        kubelet("jane", "/pods"),
        (
            "403".to_string(),
            "Forbidden (user=jane, verb=get, resource=nodes, subresource=proxy)".to_string()
        )
    );
    assert_eq!(
        kubelet("jane", "/stats/summary").1,
        "Forbidden (user=jane, verb=get, resource=nodes, subresource=stats)"
    );
    s.wait_until("ops's binding is in force", Duration::from_secs(10), || {
        let (code, body) = kubelet("ops", "/pods");
        (code == "200" && body.contains("PodList"), body)
    });
}
