//! The scheduler inside `rkube server`, on nodes that are only API objects (no kubelet):
//! placement by the filters, the reason for a pending pod as `kubectl describe` shows it, and
//! a pending pod scheduled as soon as a node that fits appears.

use std::time::{Duration, Instant};

use rkube_conformance::cluster::{stderr_of, stdout_of, RkubeServer};

fn node(name: &str, cpu: &str, taint: Option<&str>) -> String {
    let taints = match taint {
        Some(t) => format!("  taints:\n  - key: {t}\n    value: gpu\n    effect: NoSchedule\n"),
        None => String::new(),
    };
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n    kubernetes.io/hostname: \"{name}\"\nspec:\n{taints}status:\n  allocatable:\n    cpu: \"{cpu}\"\n    memory: 4Gi\n    pods: \"110\"\n  capacity:\n    cpu: \"{cpu}\"\n    memory: 4Gi\n    pods: \"110\"\n  conditions:\n  - type: Ready\n    status: \"True\"\n"
    )
}

fn pod(name: &str, cpu: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n  - name: c\n    image: busybox:1.36\n    resources:\n      requests:\n        cpu: \"{cpu}\"\n"
    )
}

/// Runs kubectl until its output contains `want` (30 s at most). A failing run counts as not
/// yet: what it asks for (a Lease a scheduler is about to create) may not exist yet.
fn wait_for(s: &RkubeServer, args: &[&str], want: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run = s.kubectl(args);
        let out = stdout_of(&run);
        if run.status.success() && out.contains(want) {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "waited 30 s for {want:?} in `kubectl {}`:\n{out}{}",
            args.join(" "),
            stderr_of(&run)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn pods_land_on_nodes_that_fit_and_wait_for_one_otherwise() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], &node("small", "1", None));
    s.ok_stdin(&["apply", "-f", "-"], &node("tainted", "8", Some("dedicated")));

    s.ok_stdin(&["apply", "-f", "-"], &pod("fits", "500m"));
    wait_for(&s, &["get", "pod", "fits", "-o", "jsonpath={.spec.nodeName}"], "small");
    let events = wait_for(
        &s,
        &["get", "events", "--field-selector", "involvedObject.name=fits", "-o", "name"],
        "event/",
    );
    assert!(!events.is_empty());

    s.ok_stdin(&["apply", "-f", "-"], &pod("big", "2"));
    let message = wait_for(
        &s,
        &[
            "get",
            "pod",
            "big",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
        ],
        "nodes are available",
    );
    assert!(message.starts_with("0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {dedicated: gpu}."), "{message}");
    let describe = wait_for(&s, &["describe", "pod", "big"], "FailedScheduling");
    assert!(describe.contains("Warning  FailedScheduling"), "{describe}");
    assert_eq!(s.ok(&["get", "pod", "big", "-o", "jsonpath={.spec.nodeName}"]), "");

    // A node that fits appears: the pending pod is placed on it, without any other nudge.
    s.ok_stdin(&["apply", "-f", "-"], &node("large", "4", None));
    wait_for(&s, &["get", "pod", "big", "-o", "jsonpath={.spec.nodeName}"], "large");
    let describe =
        wait_for(&s, &["describe", "pod", "big"], "Successfully assigned default/big to large");
    assert!(describe.contains("Normal   Scheduled"), "{describe}");
}

#[test]
fn node_selectors_and_cordoned_nodes() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], &node("a", "4", None));
    s.ok_stdin(&["apply", "-f", "-"], &node("b", "4", None));
    s.ok(&["label", "node", "b", "disk=ssd"]);
    let selected = pod("picky", "100m") + "  nodeSelector:\n    disk: ssd\n";
    s.ok_stdin(&["apply", "-f", "-"], &selected);
    wait_for(&s, &["get", "pod", "picky", "-o", "jsonpath={.spec.nodeName}"], "b");
    s.ok(&["cordon", "a"]);
    s.ok(&["cordon", "b"]);
    s.ok_stdin(&["apply", "-f", "-"], &pod("nowhere", "100m"));
    let message = wait_for(
        &s,
        &[
            "get",
            "pod",
            "nowhere",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
        ],
        "unschedulable",
    );
    assert!(
        message.starts_with("0/2 nodes are available: 2 node(s) were unschedulable."),
        "{message}"
    );
    s.ok(&["uncordon", "a"]);
    wait_for(&s, &["get", "pod", "nowhere", "-o", "jsonpath={.spec.nodeName}"], "a");
}

/// A standalone `rkube scheduler` process, killed when dropped.
struct SchedulerProcess(std::process::Child);

impl SchedulerProcess {
    fn start(s: &RkubeServer, config: Option<&std::path::Path>) -> SchedulerProcess {
        let mut cmd = std::process::Command::new(rkube_conformance::cluster::rkube_binary());
        cmd.arg("scheduler").arg("--kubeconfig").arg(&s.kubeconfig);
        // Its /healthz on a port of its own: two run side by side here.
        let port = rkube_store::testing::free_port().to_string();
        cmd.args(["--secure-port", &port]);
        if let Some(config) = config {
            cmd.arg("--config").arg(config);
        }
        let child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start rkube scheduler");
        SchedulerProcess(child)
    }
}

impl Drop for SchedulerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_configured_profile_packs_pods_with_most_allocated() {
    let s = RkubeServer::start_with(&["--disable", "scheduler"]);
    let config = s.data_dir.path().join("scheduler.yaml");
    std::fs::write(
        &config,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nleaderElection:\n  leaderElect: false\nprofiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n  plugins:\n    score:\n      disabled:\n      - name: NodeResourcesBalancedAllocation\n",
    )
    .unwrap();
    s.ok_stdin(&["apply", "-f", "-"], &node("a", "4", None));
    s.ok_stdin(&["apply", "-f", "-"], &node("b", "4", None));
    let _scheduler = SchedulerProcess::start(&s, Some(&config));
    s.ok_stdin(&["apply", "-f", "-"], &pod("first", "1"));
    let first = loop {
        let n = s.ok(&["get", "pod", "first", "-o", "jsonpath={.spec.nodeName}"]);
        if !n.is_empty() {
            break n;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // MostAllocated: the second pod goes where the first one is.
    for i in 0..3 {
        let name = format!("more-{i}");
        s.ok_stdin(&["apply", "-f", "-"], &pod(&name, "500m"));
        wait_for(&s, &["get", "pod", &name, "-o", "jsonpath={.spec.nodeName}"], &first);
    }
    // A bad configuration is a clear one-line error.
    std::fs::write(&config, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- plugins:\n    score:\n      enabled:\n      - name: NoSuchPlugin\n").unwrap();
    let out = std::process::Command::new(rkube_conformance::cluster::rkube_binary())
        .args(["scheduler", "--kubeconfig"])
        .arg(&s.kubeconfig)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("NoSuchPlugin"), "{err}");
}

#[test]
fn one_of_two_schedulers_leads_and_the_other_takes_over() {
    let s = RkubeServer::start_with(&["--disable", "scheduler"]);
    s.ok_stdin(&["apply", "-f", "-"], &node("node-n", "4", None));
    let mut first = SchedulerProcess::start(&s, None);
    let holder = wait_for(
        &s,
        &[
            "get",
            "lease",
            "kube-scheduler",
            "-n",
            "kube-system",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ],
        "_",
    );
    let _second = SchedulerProcess::start(&s, None);
    s.ok_stdin(&["apply", "-f", "-"], &pod("before", "100m"));
    wait_for(&s, &["get", "pod", "before", "-o", "jsonpath={.spec.nodeName}"], "node-n");
    // The leader goes away; the other one takes the Lease after its duration and schedules.
    let _ = first.0.kill();
    let _ = first.0.wait();
    s.ok_stdin(&["apply", "-f", "-"], &pod("after", "100m"));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = s.ok(&[
            "get",
            "lease",
            "kube-scheduler",
            "-n",
            "kube-system",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ]);
        if !now.is_empty() && now != holder {
            break;
        }
        assert!(Instant::now() < deadline, "the second scheduler never took the Lease");
        std::thread::sleep(Duration::from_millis(500));
    }
    wait_for(&s, &["get", "pod", "after", "-o", "jsonpath={.spec.nodeName}"], "node-n");
    let transitions = s.ok(&[
        "get",
        "lease",
        "kube-scheduler",
        "-n",
        "kube-system",
        "-o",
        "jsonpath={.spec.leaseTransitions}",
    ]);
    assert_eq!(transitions, "1");
}

#[test]
fn the_embedded_scheduler_holds_the_lease() {
    let s = RkubeServer::start();
    let holder = wait_for(
        &s,
        &[
            "get",
            "lease",
            "kube-scheduler",
            "-n",
            "kube-system",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ],
        "rkube-server-",
    );
    assert_eq!(holder, format!("rkube-server-{}", s.port));
}

#[test]
fn required_anti_affinity_spreads_replicas() {
    let s = RkubeServer::start();
    for n in ["x1", "x2", "x3"] {
        s.ok_stdin(&["apply", "-f", "-"], &node(n, "4", None));
    }
    let spread = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels:\n    app: db\nspec:\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchLabels:\n            app: db\n        topologyKey: kubernetes.io/hostname\n  containers:\n  - name: c\n    image: busybox:1.36\n"
        )
    };
    let mut placed = std::collections::BTreeSet::new();
    for i in 0..3 {
        let name = format!("db-{i}");
        s.ok_stdin(&["apply", "-f", "-"], &spread(&name));
        let deadline = Instant::now() + Duration::from_secs(30);
        let node = loop {
            let n = s.ok(&["get", "pod", &name, "-o", "jsonpath={.spec.nodeName}"]);
            if !n.is_empty() {
                break n;
            }
            assert!(Instant::now() < deadline, "{name} never scheduled");
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(placed.insert(node.clone()), "{name} shares node {node}");
    }
    s.ok_stdin(&["apply", "-f", "-"], &spread("db-3"));
    let message = wait_for(
        &s,
        &[
            "get",
            "pod",
            "db-3",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
        ],
        "anti-affinity",
    );
    assert!(
        message.starts_with(
            "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
        ),
        "{message}"
    );
}

#[test]
fn a_higher_priority_pod_preempts_a_lower_one() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], &node("full", "2", None));
    s.ok(&["create", "priorityclass", "low", "--value=10"]);
    s.ok(&["create", "priorityclass", "high", "--value=1000"]);
    let pod_with = |name: &str, class: &str| {
        pod(name, "1")
            + &format!("  priorityClassName: {class}\n  terminationGracePeriodSeconds: 0\n")
    };
    for name in ["low-a", "low-b"] {
        s.ok_stdin(&["apply", "-f", "-"], &pod_with(name, "low"));
        wait_for(&s, &["get", "pod", name, "-o", "jsonpath={.spec.nodeName}"], "full");
    }
    assert_eq!(s.ok(&["get", "pod", "low-a", "-o", "jsonpath={.spec.priority}"]), "10");
    // A class that does not exist is refused by the Priority admission plugin.
    let err = s.fails_stdin(&["apply", "-f", "-"], &pod_with("lost", "no-such-class"));
    assert!(err.contains("no PriorityClass with name no-such-class was found"), "{err}");

    s.ok_stdin(&["apply", "-f", "-"], &pod_with("urgent", "high"));
    wait_for(&s, &["get", "pod", "urgent", "-o", "jsonpath={.spec.nodeName}"], "full");
    let left = s.ok(&["get", "pods", "-o", "name"]);
    let lows = left.lines().filter(|l| l.starts_with("pod/low-")).count();
    assert_eq!(lows, 1, "exactly one low-priority pod was evicted:\n{left}");
    let events = s.ok(&[
        "get",
        "events",
        "--field-selector",
        "reason=Preempted",
        "-o",
        "jsonpath={.items[*].message}",
    ]);
    assert!(events.contains("Preempted by pod") && events.contains("on node full"), "{events}");
}

#[test]
fn preemption_spares_a_pod_its_disruption_budget_protects() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], &node("full", "2", None));
    s.ok(&["create", "priorityclass", "low", "--value=10"]);
    s.ok(&["create", "priorityclass", "high", "--value=1000"]);
    // No disruption is allowed: one pod selected, one must stay available.
    s.ok(&["create", "poddisruptionbudget", "db", "--selector=app=db", "--min-available=1"]);
    let pod_with = |name: &str, app: &str, class: &str| {
        pod(name, "1").replace(
            &format!("metadata:\n  name: {name}\n"),
            &format!("metadata:\n  name: {name}\n  labels:\n    app: {app}\n"),
        ) + &format!("  priorityClassName: {class}\n  terminationGracePeriodSeconds: 0\n")
    };
    // Without the budget, the pod bound last would be the victim (the others are put back
    // first): the guarded one.
    for (name, app) in [("free", "web"), ("guarded", "db")] {
        s.ok_stdin(&["apply", "-f", "-"], &pod_with(name, app, "low"));
        wait_for(&s, &["get", "pod", name, "-o", "jsonpath={.spec.nodeName}"], "full");
    }
    s.ok_stdin(&["apply", "-f", "-"], &pod_with("urgent", "x", "high"));
    wait_for(&s, &["get", "pod", "urgent", "-o", "jsonpath={.spec.nodeName}"], "full");
    let left = s.ok(&["get", "pods", "-o", "name"]);
    assert!(left.contains("pod/guarded"), "the budget's pod was preempted:\n{left}");
    assert!(!left.contains("pod/free"), "the unprotected pod should have made room:\n{left}");
}

#[test]
fn a_read_write_once_pod_claim_serves_one_pod_at_a_time() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], &node("only", "4", None));
    s.ok_stdin(
        &["apply", "-f", "-"],
        // A volume for the claim to bind to: pods with an unbound claim are not scheduled.
        "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: disk\nspec:\n  storageClassName: \"\"\n  accessModes: [ReadWriteOncePod]\n  capacity:\n    storage: 1Gi\n  hostPath:\n    path: /tmp/rkube-scheduler-test-unused\n---\n\
         apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\nspec:\n  storageClassName: \"\"\n  accessModes: [ReadWriteOncePod]\n  resources:\n    requests:\n      storage: 1Gi\n",
    );
    let pod_with_claim = |name: &str| {
        pod(name, "100m")
            + "    volumeMounts:\n    - {name: data, mountPath: /data}\n  terminationGracePeriodSeconds: 0\n  volumes:\n  - name: data\n    persistentVolumeClaim: {claimName: data}\n"
    };
    s.ok_stdin(&["apply", "-f", "-"], &pod_with_claim("first"));
    wait_for(&s, &["get", "pod", "first", "-o", "jsonpath={.spec.nodeName}"], "only");
    s.ok_stdin(&["apply", "-f", "-"], &pod_with_claim("second"));
    let message = wait_for(
        &s,
        &[
            "get",
            "pod",
            "second",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
        ],
        "ReadWriteOncePod",
    );
    assert!(
        message.starts_with(
            "0/1 nodes are available: 1 node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode."
        ),
        "{message}"
    );
    // Once the claim is free, the waiting pod gets it.
    s.ok(&["delete", "pod", "first"]);
    wait_for(&s, &["get", "pod", "second", "-o", "jsonpath={.spec.nodeName}"], "only");
}

#[test]
fn pods_of_a_service_spread_by_the_default_constraints() {
    let s = RkubeServer::start();
    // The big node wins on free resources alone; the default spread constraints (the
    // Service selects the pods) send the second pod to the small one.
    s.ok_stdin(&["apply", "-f", "-"], &node("big", "64", None));
    s.ok_stdin(&["apply", "-f", "-"], &node("small", "2", None));
    s.ok(&["create", "service", "clusterip", "web", "--tcp=80:80"]);
    // Memory requested too, so that the default request for memory does not even out.
    let labelled = |name: &str| {
        pod(name, "100m")
            .replace(
                &format!("metadata:\n  name: {name}\n"),
                &format!("metadata:\n  name: {name}\n  labels:\n    app: web\n"),
            )
            .replace("        cpu: \"100m\"\n", "        cpu: \"100m\"\n        memory: 1Mi\n")
    };
    s.ok_stdin(&["apply", "-f", "-"], &labelled("web-1"));
    wait_for(&s, &["get", "pod", "web-1", "-o", "jsonpath={.spec.nodeName}"], "big");
    s.ok_stdin(&["apply", "-f", "-"], &labelled("web-2"));
    wait_for(&s, &["get", "pod", "web-2", "-o", "jsonpath={.spec.nodeName}"], "small");
    // A pod nothing selects goes by resources alone.
    s.ok_stdin(&["apply", "-f", "-"], &pod("loner", "100m"));
    wait_for(&s, &["get", "pod", "loner", "-o", "jsonpath={.spec.nodeName}"], "big");
}

/// A 4-cpu node with these labels (and `group`), extra `spec` lines and extra `status`
/// lines (each indented by two spaces).
fn group_node(
    name: &str,
    group: &str,
    labels: &[(&str, &str)],
    spec: &str,
    status: &str,
) -> String {
    let labels: String = labels.iter().map(|(k, v)| format!("    {k}: \"{v}\"\n")).collect();
    format!(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n    kubernetes.io/hostname: \"{name}\"\n    group: {group}\n{labels}spec:\n{spec}status:\n  allocatable: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n  capacity: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n  conditions:\n  - {{type: Ready, status: \"True\"}}\n{status}"
    )
}

/// A pod kept to one group of nodes, with `spec` lines added (indented by two spaces) and
/// its container's lines (indented by four).
fn group_pod(name: &str, group: &str, labels: &str, spec: &str, container: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels: {{{labels}}}\nspec:\n  terminationGracePeriodSeconds: 0\n  nodeSelector: {{group: {group}}}\n{spec}  containers:\n  - name: c\n    image: busybox:1.36\n    resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}\n{container}"
    )
}

fn node_of(s: &RkubeServer, pod: &str) -> String {
    let path = "jsonpath={.spec.nodeName}";
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let node = s.ok(&["get", "pod", pod, "-o", path]);
        if !node.is_empty() {
            return node;
        }
        assert!(Instant::now() < deadline, "pod {pod} was not scheduled in 30 s");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn each_plugin_steers_placement_as_upstream() {
    let s = RkubeServer::start();
    let nodes = [
        group_node("ports-1", "ports", &[], "", ""),
        group_node("ports-2", "ports", &[], "", ""),
        group_node("ssd", "affinity", &[("disk", "ssd")], "", ""),
        group_node("hdd", "affinity", &[("disk", "hdd")], "", ""),
        group_node(
            "tainted",
            "taints",
            &[],
            "  taints:\n  - {key: maintenance, value: soon, effect: PreferNoSchedule}\n",
            "",
        ),
        group_node("clean", "taints", &[], "", ""),
        group_node("near", "pods", &[], "", ""),
        group_node("far", "pods", &[], "", ""),
        group_node("zone-a", "zones", &[("topology.kubernetes.io/zone", "a")], "", ""),
        group_node("zone-b", "zones", &[("topology.kubernetes.io/zone", "b")], "", ""),
        group_node(
            "cached",
            "images",
            &[],
            "",
            "  images:\n  - {names: [\"example.com/big:1\"], sizeBytes: 3000000000}\n",
        ),
        group_node("bare", "images", &[], "", ""),
    ];
    s.ok_stdin(&["apply", "-f", "-"], &nodes.join("---\n"));

    // NodePorts: the same host port twice goes to two nodes, a third time nowhere.
    let port = "    ports: [{containerPort: 80, hostPort: 8080}]\n";
    for name in ["port-a", "port-b", "port-c"] {
        s.ok_stdin(&["apply", "-f", "-"], &group_pod(name, "ports", "", "", port));
    }
    let (a, b) = (node_of(&s, "port-a"), node_of(&s, "port-b"));
    assert_ne!(a, b, "two pods with host port 8080 on one node");
    wait_for(
        &s,
        &["get", "pod", "port-c", "-o", "jsonpath={.status.conditions[0].message}"],
        "2 node(s) didn't have free ports for the requested pod ports",
    );

    // NodeAffinity: a preferred term wins the score, a required term filters.
    let preferred = "  affinity:\n    nodeAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 100\n        preference: {matchExpressions: [{key: disk, operator: In, values: [ssd]}]}\n";
    s.ok_stdin(&["apply", "-f", "-"], &group_pod("wants-ssd", "affinity", "", preferred, ""));
    assert_eq!(node_of(&s, "wants-ssd"), "ssd");
    let required = "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms: [{matchExpressions: [{key: disk, operator: NotIn, values: [ssd]}]}]\n";
    s.ok_stdin(&["apply", "-f", "-"], &group_pod("no-ssd", "affinity", "", required, ""));
    assert_eq!(node_of(&s, "no-ssd"), "hdd");

    // TaintToleration score: a PreferNoSchedule taint the pod does not tolerate ranks last.
    s.ok_stdin(&["apply", "-f", "-"], &group_pod("shy", "taints", "", "", ""));
    assert_eq!(node_of(&s, "shy"), "clean");

    // InterPodAffinity score: a preferred affinity brings a pod next to its peer.
    s.ok_stdin(
        &["apply", "-f", "-"],
        &group_pod("anchor", "pods", "app: cache", "  nodeName: far\n", ""),
    );
    let near_cache = "  affinity:\n    podAffinity:\n      preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 100\n        podAffinityTerm:\n          topologyKey: kubernetes.io/hostname\n          labelSelector: {matchLabels: {app: cache}}\n";
    s.ok_stdin(&["apply", "-f", "-"], &group_pod("follower", "pods", "", near_cache, ""));
    assert_eq!(node_of(&s, "follower"), "far");

    // PodTopologySpread (DoNotSchedule): two pods of a set over two zones, one in each.
    let spread = "  topologySpreadConstraints:\n  - maxSkew: 1\n    topologyKey: topology.kubernetes.io/zone\n    whenUnsatisfiable: DoNotSchedule\n    labelSelector: {matchLabels: {app: spread}}\n";
    s.ok_stdin(&["apply", "-f", "-"], &group_pod("spread-1", "zones", "app: spread", spread, ""));
    let first = node_of(&s, "spread-1");
    s.ok_stdin(&["apply", "-f", "-"], &group_pod("spread-2", "zones", "app: spread", spread, ""));
    assert_ne!(node_of(&s, "spread-2"), first, "both pods in one zone");

    // ImageLocality: the node that has the (large) image already ranks first.
    let image = "    imagePullPolicy: IfNotPresent\n";
    let with_image = group_pod("needs-image", "images", "", "", image)
        .replace("image: busybox:1.36", "image: example.com/big:1");
    s.ok_stdin(&["apply", "-f", "-"], &with_image);
    assert_eq!(node_of(&s, "needs-image"), "cached");

    // NodeResourcesFit counts init containers: one asking for more than a node has.
    let init = "  initContainers:\n  - {name: setup, image: busybox:1.36, resources: {requests: {cpu: \"5\"}}}\n";
    s.ok_stdin(&["apply", "-f", "-"], &group_pod("big-init", "images", "", init, ""));
    wait_for(
        &s,
        &["get", "pod", "big-init", "-o", "jsonpath={.status.conditions[0].message}"],
        "2 Insufficient cpu",
    );
}

/// A field (`status`, `reason`, `message`) of a pod's `PodScheduled` condition.
fn pod_scheduled(s: &RkubeServer, pod: &str, field: &str) -> String {
    let path = format!("jsonpath={{.status.conditions[?(@.type==\"PodScheduled\")].{field}}}");
    s.ok(&["get", "pod", pod, "-o", &path])
}

/// A pod with scheduling gates waits, as `kubectl get` says, while its gate holders may only
/// remove gates and narrow its placement; the last gate removed, the scheduler places it.
#[test]
fn scheduling_gates_hold_a_pod_until_the_last_one_is_removed() {
    let s = RkubeServer::start();
    s.ok_stdin(&["apply", "-f", "-"], &node("plain", "4", None));
    s.ok_stdin(&["apply", "-f", "-"], &node("fast", "4", None));
    s.ok(&["label", "node", "fast", "disk=ssd"]);
    let gated = pod("gated", "100m")
        + "  schedulingGates:\n  - name: example.com/quota\n  - name: example.com/arch\n";
    s.ok_stdin(&["apply", "-f", "-"], &gated);
    let table = s.ok(&["get", "pod", "gated", "--no-headers"]);
    assert!(table.split_whitespace().nth(2) == Some("SchedulingGated"), "{table}");
    assert_eq!(
        pod_scheduled(&s, "gated", "message"),
        "Scheduling is blocked due to non-empty scheduling gates"
    );

    // The scheduler has seen the gated pod once it has placed one created after it.
    let placed_after = |name: &str| {
        s.ok_stdin(&["apply", "-f", "-"], &pod(name, "100m"));
        let deadline = Instant::now() + Duration::from_secs(30);
        while s.ok(&["get", "pod", name, "-o", "jsonpath={.spec.nodeName}"]).is_empty() {
            assert!(Instant::now() < deadline, "{name} never scheduled");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    placed_after("free-1");
    assert_eq!(s.ok(&["get", "pod", "gated", "-o", "jsonpath={.spec.nodeName}"]), "");
    let events =
        s.ok(&["get", "events", "--field-selector", "involvedObject.name=gated", "-o", "name"]);
    assert!(events.is_empty(), "a gated pod gets no scheduling events: {events}");

    let err = s.fails(&[
        "patch",
        "pod",
        "gated",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"x"}}]"#,
    ]);
    assert_eq!(
        err.trim(),
        "The Pod \"gated\" is invalid: spec.schedulingGates[2].name: Forbidden: only deletion is allowed, but found new scheduling gate 'x'"
    );
    let binding = r#"{"apiVersion":"v1","kind":"Binding","metadata":{"name":"gated"},"target":{"apiVersion":"v1","kind":"Node","name":"plain"}}"#;
    let err = s.fails_stdin(
        &["create", "--raw", "/api/v1/namespaces/default/pods/gated/binding", "-f", "-"],
        binding,
    );
    assert!(
        err.contains(
            "Operation cannot be fulfilled on pods/binding \"gated\": pod gated has non-empty .spec.schedulingGates"
        ),
        "{err}"
    );
    // While gated, the placement may be narrowed (but not otherwise changed).
    s.ok(&["patch", "pod", "gated", "-p", r#"{"spec":{"nodeSelector":{"disk":"ssd"}}}"#]);
    let err =
        s.fails(&["patch", "pod", "gated", "-p", r#"{"spec":{"nodeSelector":{"disk":"hdd"}}}"#]);
    assert!(
        err.contains("spec.nodeSelector: Invalid value: map[string]string{\"disk\":\"hdd\"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"),
        "{err}"
    );

    s.ok(&[
        "patch",
        "pod",
        "gated",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/schedulingGates/0"}]"#,
    ]);
    placed_after("free-2");
    assert_eq!(s.ok(&["get", "pod", "gated", "-o", "jsonpath={.spec.nodeName}"]), "");
    s.ok(&[
        "patch",
        "pod",
        "gated",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/schedulingGates"}]"#,
    ]);
    wait_for(&s, &["get", "pod", "gated", "-o", "jsonpath={.spec.nodeName}"], "fast");
    assert_eq!(pod_scheduled(&s, "gated", "status"), "True");
    let err =
        s.fails(&["patch", "pod", "gated", "-p", r#"{"spec":{"nodeSelector":{"zone":"a"}}}"#]);
    assert!(err.contains("spec: Forbidden: pod updates may not change fields other than"), "{err}");
}

/// `matchLabelKeys` in a pod anti-affinity term: the API server adds the pod's own value to
/// the term's selector, so pods of one version repel each other but not pods of another.
#[test]
fn match_label_keys_scope_anti_affinity_to_the_pods_version() {
    let s = RkubeServer::start();
    for n in ["m1", "m2"] {
        s.ok_stdin(&["apply", "-f", "-"], &node(n, "4", None));
    }
    let versioned = |name: &str, version: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels:\n    app: web\n    version: {version}\nspec:\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n      - labelSelector:\n          matchLabels:\n            app: web\n        matchLabelKeys: [version]\n        topologyKey: kubernetes.io/hostname\n  containers:\n  - name: c\n    image: busybox:1.36\n"
        )
    };
    s.ok_stdin(&["apply", "-f", "-"], &versioned("v1-a", "v1"));
    let selector = s.ok(&[
        "get",
        "pod",
        "v1-a",
        "-o",
        "jsonpath={.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector.matchExpressions}",
    ]);
    assert_eq!(selector, r#"[{"key":"version","operator":"In","values":["v1"]}]"#);
    s.ok_stdin(&["apply", "-f", "-"], &versioned("v1-b", "v1"));
    let a = wait_for(&s, &["get", "pod", "v1-a", "-o", "jsonpath={.spec.nodeName}"], "m");
    let b = wait_for(&s, &["get", "pod", "v1-b", "-o", "jsonpath={.spec.nodeName}"], "m");
    assert_ne!(a, b, "two v1 pods share a node");
    s.ok_stdin(&["apply", "-f", "-"], &versioned("v1-c", "v1"));
    wait_for(
        &s,
        &[
            "get",
            "pod",
            "v1-c",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}",
        ],
        "didn't match pod anti-affinity rules",
    );
    s.ok_stdin(&["apply", "-f", "-"], &versioned("v2-a", "v2"));
    wait_for(&s, &["get", "pod", "v2-a", "-o", "jsonpath={.spec.nodeName}"], "m");
}
