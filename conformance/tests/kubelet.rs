//! The kubelet on a real Docker engine, checked through stock kubectl: pods that really run,
//! with an IP on the node's pod network, status as upstream reports it, restart policies
//! with back-off, environment and volumes from the API, graceful deletion, and a restarted
//! kubelet adopting its running containers.

use std::io::{Read, Write};
use std::time::Duration;

use rkube_conformance::cluster::jsonpath;
use rkube_conformance::node::{assert_route_is_local, NodeServer};

#[test]
fn kubectl_run_gives_a_running_pod_with_an_ip_that_answers() {
    let n = NodeServer::start();
    let s = &n.server;
    s.ok(&[
        "run",
        "web",
        "--image=busybox:1.36",
        "--image-pull-policy=IfNotPresent",
        "--",
        "httpd",
        "-f",
        "-p",
        "80",
        "-h",
        "/var/www",
    ]);
    s.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=50s"]);
    let ip = s.ok(&["get", "pod", "web", "-o", &jsonpath("{.status.podIP}")]);
    let ip = ip.trim();
    assert!(!ip.is_empty(), "a pod IP");
    let phase = s.ok(&["get", "pod", "web", "-o", &jsonpath("{.status.phase}")]);
    assert_eq!(phase.trim(), "Running");
    let wide = s.ok(&["get", "pod", "web", "-o", "wide"]);
    assert!(wide.contains(ip) && wide.contains(&n.node) && wide.contains("Running"), "{wide}");
    let statuses = s.ok(&["get", "pod", "web", "-o", &jsonpath("{.status.containerStatuses[0]}")]);
    let status: serde_json::Value = serde_json::from_str(&statuses).unwrap();
    assert_eq!(status["ready"], true);
    assert_eq!(status["restartCount"], 0);
    assert!(status["containerID"].as_str().unwrap().starts_with("docker://"));
    assert!(status["state"]["running"]["startedAt"].is_string());
    let host_ip = s.ok(&["get", "pod", "web", "-o", &jsonpath("{.status.hostIP}")]);
    assert_eq!(host_ip.trim(), "127.0.0.1");

    // The pod answers on its IP (a local Docker bridge: checked before connecting).
    assert_route_is_local(ip);
    wait_for_answer(&format!("{ip}:80"), "hello from busybox");

    // The node reports what a kubelet does.
    let node = s.ok(&["get", "node", &n.node, "-o", "json"]);
    let node: serde_json::Value = serde_json::from_str(&node).unwrap();
    assert_eq!(node["status"]["capacity"]["pods"], "110");
    assert!(node["status"]["nodeInfo"]["containerRuntimeVersion"]
        .as_str()
        .unwrap()
        .starts_with("docker://"));
    assert_eq!(node["metadata"]["labels"]["kubernetes.io/hostname"], n.node.as_str());
    let lease = s.ok(&[
        "get",
        "lease",
        "-n",
        "kube-node-lease",
        &n.node,
        "-o",
        &jsonpath("{.spec.holderIdentity}"),
    ]);
    assert_eq!(lease.trim(), n.node);

    // Deleting the pod stops its containers and then removes the object.
    let uid = s.ok(&["get", "pod", "web", "-o", &jsonpath("{.metadata.uid}")]);
    assert!(!n.containers_of(uid.trim()).is_empty());
    // httpd ignores SIGTERM as PID 1: it is killed when the grace period ends.
    s.ok(&["delete", "pod", "web", "--grace-period=2", "--timeout=50s"]);
    assert!(n.containers_of(uid.trim()).is_empty(), "containers left behind");
    // Events are posted in the background, as upstream's are: polled for.
    let reasons = ["Scheduled", "Pulled", "Created", "Started", "Killing"];
    n.wait_for(
        &["get", "events", "-o", &jsonpath("{range .items[*]}{.reason} {end}")],
        Duration::from_secs(10),
        |events| reasons.iter().all(|r| events.contains(r)),
    );
}

#[test]
fn restart_policies_and_crash_loop_back_off() {
    let n = NodeServer::start();
    let s = &n.server;
    let manifest = r#"
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "exit 3"]}
---
apiVersion: v1
kind: Pod
metadata: {name: done}
spec:
  restartPolicy: Never
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo finished > /dev/termination-log"]}
---
apiVersion: v1
kind: Pod
metadata: {name: failed}
spec:
  restartPolicy: Never
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "exit 1"]}
---
apiVersion: v1
kind: Pod
metadata: {name: onfailure}
spec:
  restartPolicy: OnFailure
  containers:
  - {name: app, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "exit 0"]}
"#;
    s.ok_stdin(&["apply", "-f", "-"], manifest);
    let phase = |pod: &str, want: &'static str| {
        n.wait_for(
            &["get", "pod", pod, "-o", &jsonpath("{.status.phase}")],
            Duration::from_secs(60),
            |p| p == want,
        );
    };
    phase("done", "Succeeded");
    phase("failed", "Failed");
    phase("onfailure", "Succeeded");
    let done = s.ok(&[
        "get",
        "pod",
        "done",
        "-o",
        &jsonpath("{.status.containerStatuses[0].state.terminated}"),
    ]);
    let done: serde_json::Value = serde_json::from_str(&done).unwrap();
    assert_eq!(done["reason"], "Completed");
    assert_eq!(done["exitCode"], 0);
    assert_eq!(done["message"], "finished\n", "the termination message");
    let failed = s.ok(&[
        "get",
        "pod",
        "failed",
        "-o",
        &jsonpath("{.status.containerStatuses[0].state.terminated.reason}"),
    ]);
    assert_eq!(failed.trim(), "Error");
    let table = s.ok(&["get", "pods"]);
    assert!(table.contains("Completed"), "{table}");

    // Always: restarted at once, then back-off (10 s, 20 s, ...).
    n.wait_for(
        &["get", "pod", "crash", "-o", &jsonpath("{.status.containerStatuses[0].restartCount}")],
        Duration::from_secs(60),
        |c| c.parse::<u32>().unwrap_or(0) >= 2,
    );
    let status = n.wait_for(
        &["get", "pod", "crash", "-o", &jsonpath("{.status.containerStatuses[0]}")],
        Duration::from_secs(30),
        |s| s.contains("CrashLoopBackOff"),
    );
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["lastState"]["terminated"]["exitCode"], 3);
    assert!(status["state"]["waiting"]["message"].as_str().unwrap().starts_with("back-off "));
    n.wait_for(&["describe", "pod", "crash"], Duration::from_secs(10), |describe| {
        describe.contains("CrashLoopBackOff") && describe.contains("BackOff")
    });
}

#[test]
fn environment_volumes_and_images_as_upstream() {
    let n = NodeServer::start();
    let s = &n.server;
    let manifest = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello, file.txt: "from a configmap"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: env, labels: {app: env}}
spec:
  restartPolicy: Never
  initContainers:
  - {name: prepare, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sh", "-c", "echo init-ran > /work/init"], volumeMounts: [{name: work, mountPath: /work}]}
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "echo \"$POD_NAME $NODE $GREETING $PASSWORD $LIMIT $COMPOSED $(cat /cfg/file.txt) $(cat /work/init) $(cat /info/labels)\" > /dev/termination-log"]
    resources: {limits: {memory: 64Mi, cpu: 250m}}
    env:
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: GREETING, valueFrom: {configMapKeyRef: {name: settings, key: greeting}}}
    - {name: PASSWORD, valueFrom: {secretKeyRef: {name: creds, key: password}}}
    - {name: LIMIT, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: COMPOSED, value: "$(GREETING)-world"}
    volumeMounts:
    - {name: cfg, mountPath: /cfg}
    - {name: work, mountPath: /work}
    - {name: info, mountPath: /info}
  volumes:
  - {name: cfg, configMap: {name: settings}}
  - {name: work, emptyDir: {}}
  - {name: info, downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}}
---
apiVersion: v1
kind: Pod
metadata: {name: never}
spec:
  containers:
  - {name: app, image: "rkube-test/absent:1", imagePullPolicy: Never}
---
apiVersion: v1
kind: Pod
metadata: {name: unpullable}
spec:
  containers:
  - {name: app, image: "127.0.0.1:1/absent:1", imagePullPolicy: Always}
---
apiVersion: v1
kind: Pod
metadata: {name: missing-config}
spec:
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    env: [{name: X, valueFrom: {configMapKeyRef: {name: nothere, key: k}}}]
"#;
    s.ok_stdin(&["apply", "-f", "-"], manifest);
    n.wait_for(
        &["get", "pod", "env", "-o", &jsonpath("{.status.phase}")],
        Duration::from_secs(60),
        |p| p == "Succeeded",
    );
    let message = s.ok(&[
        "get",
        "pod",
        "env",
        "-o",
        &jsonpath("{.status.containerStatuses[0].state.terminated.message}"),
    ]);
    let expected =
        format!("env {} hello s3cret 64 hello-world from a configmap init-ran app=\"env\"", n.node);
    assert_eq!(message.trim(), expected);
    let init = s.ok(&[
        "get",
        "pod",
        "env",
        "-o",
        &jsonpath("{.status.initContainerStatuses[0].state.terminated.reason}"),
    ]);
    assert_eq!(init.trim(), "Completed");

    let waiting = |pod: &str, reason: &'static str| {
        n.wait_for(
            &[
                "get",
                "pod",
                pod,
                "-o",
                &jsonpath("{.status.containerStatuses[0].state.waiting.reason}"),
            ],
            Duration::from_secs(60),
            |r| r == reason,
        )
    };
    waiting("never", "ErrImageNeverPull");
    let message = s.ok(&[
        "get",
        "pod",
        "never",
        "-o",
        &jsonpath("{.status.containerStatuses[0].state.waiting.message}"),
    ]);
    assert_eq!(
        message.trim(),
        "Container image \"rkube-test/absent:1\" is not present with pull policy of Never"
    );
    waiting("unpullable", "ImagePullBackOff");
    waiting("missing-config", "CreateContainerConfigError");
    let message = s.ok(&[
        "get",
        "pod",
        "missing-config",
        "-o",
        &jsonpath("{.status.containerStatuses[0].state.waiting.message}"),
    ]);
    assert_eq!(message.trim(), "configmap \"nothere\" not found");
    let table = s.ok(&["get", "pod", "never"]);
    assert!(table.contains("ErrImageNeverPull"), "{table}");
}

#[test]
fn a_restarted_kubelet_adopts_its_running_containers() {
    let mut n = NodeServer::start();
    n.server.ok(&[
        "run",
        "sleeper",
        "--image=busybox:1.36",
        "--image-pull-policy=IfNotPresent",
        "--",
        "sleep",
        "3600",
    ]);
    n.server.ok(&["wait", "--for=condition=Ready", "pod/sleeper", "--timeout=50s"]);
    let id = n.server.ok(&[
        "get",
        "pod",
        "sleeper",
        "-o",
        &jsonpath("{.status.containerStatuses[0].containerID}"),
    ]);
    n.server.restart();
    n.server.ok(&["wait", "--for=condition=Ready", "pod/sleeper", "--timeout=50s"]);
    // The same container keeps running, for several of the kubelet's sync periods: nothing
    // was recreated.
    for _ in 0..12 {
        let after = n.server.ok(&[
            "get",
            "pod",
            "sleeper",
            "-o",
            &jsonpath("{.status.containerStatuses[0].containerID}"),
        ]);
        assert_eq!(id, after);
        std::thread::sleep(Duration::from_millis(500));
    }
    let restarts = n.server.ok(&[
        "get",
        "pod",
        "sleeper",
        "-o",
        &jsonpath("{.status.containerStatuses[0].restartCount}"),
    ]);
    assert_eq!(restarts.trim(), "0");
    let uid = n.server.ok(&["get", "pod", "sleeper", "-o", &jsonpath("{.metadata.uid}")]);
    assert_eq!(n.containers_of(uid.trim()).len(), 2, "one sandbox and one container");
}

#[test]
fn volume_updates_reach_running_pods_and_oom_kills_are_reported() {
    let n = NodeServer::start();
    let s = &n.server;
    let manifest = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: live}
data: {mode: first}
---
apiVersion: v1
kind: Secret
metadata: {name: live-secret}
stringData: {token: one}
---
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    command: ["sleep", "3600"]
    volumeMounts:
    - {name: cfg, mountPath: /cfg}
    - {name: sec, mountPath: /sec}
  volumes:
  - {name: cfg, configMap: {name: live}}
  - {name: sec, secret: {secretName: live-secret}}
---
apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: "busybox:1.36"
    imagePullPolicy: IfNotPresent
    # Doubles a shell string until the 16Mi limit kills it.
    command: ["sh", "-c", "x=0123456789abcdef; while true; do x=$x$x; done"]
    resources: {limits: {memory: 16Mi}}
"#;
    s.ok_stdin(&["apply", "-f", "-"], manifest);
    s.ok(&["wait", "--for=condition=Ready", "pod/reader", "--timeout=50s"]);
    assert_eq!(s.ok(&["exec", "reader", "--", "cat", "/cfg/mode"]), "first");
    assert_eq!(s.ok(&["exec", "reader", "--", "cat", "/sec/token"]), "one");

    // Edits reach the running pod's files without a restart (upstream: within its sync
    // period; here 10 s).
    s.ok(&["patch", "configmap", "live", "-p", r#"{"data":{"mode":"second","extra":"new"}}"#]);
    s.ok(&["patch", "secret", "live-secret", "-p", r#"{"stringData":{"token":"two"}}"#]);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let mode =
            s.kubectl(&["exec", "reader", "--", "cat", "/cfg/mode", "/cfg/extra", "/sec/token"]);
        if String::from_utf8_lossy(&mode.stdout) == "secondnewtwo" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "volumes not updated: {}",
            String::from_utf8_lossy(&mode.stdout)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let restarts = s.ok(&[
        "get",
        "pod",
        "reader",
        "-o",
        &jsonpath("{.status.containerStatuses[0].restartCount}"),
    ]);
    assert_eq!(restarts, "0");

    // The memory hog is killed by its cgroup limit: OOMKilled, exit code 137, phase Failed.
    let state = n.wait_for(
        &["get", "pod", "hog", "-o", &jsonpath("{.status.phase} {.status.containerStatuses[0].state.terminated.reason} {.status.containerStatuses[0].state.terminated.exitCode}")],
        Duration::from_secs(60),
        |out| out.starts_with("Failed "),
    );
    assert_eq!(state, "Failed OOMKilled 137");
}

/// `GET path` on `addr` (loopback or a local pod IP): the response, or why there is none.
fn http_get(addr: &str, path: &str) -> std::io::Result<String> {
    let mut stream =
        std::net::TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())?;
    let mut body = String::new();
    stream.read_to_string(&mut body)?;
    Ok(body)
}

/// Polls `addr` until it answers with `want` in the body (20 s at most).
fn wait_for_answer(addr: &str, want: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let answer = http_get(addr, "/index.html");
        if answer.as_ref().is_ok_and(|b| b.contains(want)) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "no {want:?} from {addr}: {answer:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_pod_network_gives_addresses_host_ports_and_name_files() {
    let mut n = NodeServer::start();
    let host_port = rkube_store::testing::free_port();
    let manifest = format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: web}}
spec:
  hostAliases: [{{ip: 192.0.2.7, hostnames: [db.example]}}]
  dnsPolicy: None
  dnsConfig: {{nameservers: [10.96.0.10], searches: [default.svc.cluster.local]}}
  containers:
  - name: web
    image: busybox:1.36
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "mkdir -p /srv && echo hello-pod-network > /srv/index.html && exec httpd -f -p 80 -h /srv"]
    ports: [{{containerPort: 80, hostPort: {host_port}}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: client}}
spec:
  containers:
  - {{name: c, image: "busybox:1.36", imagePullPolicy: IfNotPresent, command: ["sleep", "3600"]}}
"#
    );
    let s = &n.server;
    s.ok_stdin(&["apply", "-f", "-"], &manifest);
    s.ok(&["wait", "--for=condition=Ready", "pod/web", "pod/client", "--timeout=50s"]);
    let cidr = s.ok(&["get", "node", &n.node, "-o", &jsonpath("{.spec.podCIDR}")]);
    let ip = s.ok(&["get", "pod", "web", "-o", &jsonpath("{.status.podIP}")]);
    let ip = ip.trim().to_string();
    let client_ip = s.ok(&["get", "pod", "client", "-o", &jsonpath("{.status.podIP}")]);
    let prefix = cidr.trim().trim_end_matches("0/24");
    assert!(ip.starts_with(prefix) && client_ip.starts_with(prefix), "{ip} {client_ip} {cidr}");
    assert_ne!(ip, client_ip.trim());

    // Inside the pod: eth0 with the address, the gateway first in the CIDR, the pod's own
    // name and its aliases in /etc/hosts, its DNS settings in /etc/resolv.conf.
    let addresses = s.ok(&["exec", "web", "--", "ip", "-o", "-4", "address", "show", "eth0"]);
    assert!(addresses.contains(&format!("inet {ip}/24")), "{addresses}");
    let routes = s.ok(&["exec", "web", "--", "ip", "route"]);
    assert!(routes.contains(&format!("default via {prefix}1 dev eth0")), "{routes}");
    let hosts = s.ok(&["exec", "web", "--", "cat", "/etc/hosts"]);
    assert!(hosts.contains(&format!("{ip}\tweb")), "{hosts}");
    assert!(hosts.contains("192.0.2.7\tdb.example"), "{hosts}");
    let resolv = s.ok(&["exec", "web", "--", "cat", "/etc/resolv.conf"]);
    assert!(resolv.contains("nameserver 10.96.0.10"), "{resolv}");
    assert!(resolv.contains("search default.svc.cluster.local"), "{resolv}");

    // Pod to pod, node to pod, and the hostPort on the node's loopback.
    let fetched =
        s.ok(&["exec", "client", "--", "wget", "-q", "-O", "-", &format!("http://{ip}/")]);
    assert!(fetched.contains("hello-pod-network"), "{fetched}");
    assert_route_is_local(&ip);
    wait_for_answer(&format!("{ip}:80"), "hello-pod-network");
    let on_node = format!("127.0.0.1:{host_port}");
    wait_for_answer(&on_node, "hello-pod-network");

    // A restarted kubelet keeps the pod's address and its hostPort.
    n.server.restart();
    let s = &n.server;
    s.ok(&["wait", "--for=condition=Ready", "pod/web", "--timeout=50s"]);
    let after = s.ok(&["get", "pod", "web", "-o", &jsonpath("{.status.podIP}")]);
    assert_eq!(after.trim(), ip);
    wait_for_answer(&on_node, "hello-pod-network");

    // Deleting the pod takes its hostPort rule with it.
    s.ok(&["delete", "pod", "web", "--grace-period=1", "--timeout=50s"]);
    let chain = rkube_kubelet::runtime::podnet::hostport_chain(&n.node);
    let rules = std::process::Command::new("iptables")
        .args(["-t", "nat", "-S", &chain])
        .output()
        .expect("iptables");
    let rules = String::from_utf8_lossy(&rules.stdout);
    assert!(!rules.contains(&ip), "a rule for the deleted pod is left: {rules}");
    assert!(http_get(&on_node, "/").is_err(), "the hostPort still answers");
}
