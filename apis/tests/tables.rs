//! The tables `kubectl get` prints, checked cell by cell against what kube-apiserver v1.33
//! sends for the same objects.

// In a module so that `cargo test tables` selects these too.
mod tables {
    use chrono::{DateTime, Duration, Utc};
    use rkube_apis::resources::{ResourceInfo, Resources};
    use rkube_apis::tables::{cells, columns, human_duration};
    use serde_json::{json, Value};

    fn now() -> DateTime<Utc> {
        "2024-06-01T12:00:00Z".parse().unwrap()
    }

    /// `now` minus a duration, as an RFC 3339 timestamp.
    fn ago(d: Duration) -> String {
        (now() - d).format("%Y-%m-%dT%H:%M:%SZ").to_string()
    }

    fn info(group: &str, version: &str, plural: &str) -> &'static ResourceInfo {
        Resources::builtin()
            .get(group, version, plural)
            .unwrap_or_else(|| panic!("no resource {group}/{version}/{plural}"))
    }

    fn names(info: &ResourceInfo) -> Vec<&'static str> {
        columns(info).iter().map(|c| c.name).collect()
    }

    /// Checks each case's cells, labelled so a failure names its case.
    fn check(info: &ResourceInfo, cases: &[(&str, Value, Value)]) {
        for (label, obj, want) in cases {
            let got = Value::Array(cells(info, obj, now()));
            assert_eq!(&got, want, "{} / {label}", info.plural);
        }
    }

    #[test]
    fn human_duration_matches_upstream_thresholds() {
        let s = Duration::seconds;
        let cases = [
            (s(0), "0s"),
            (Duration::milliseconds(-1500), "0s"),
            (s(-2), "<invalid>"),
            (s(59), "59s"),
            (s(119), "119s"),
            (s(120), "2m"),
            (s(125), "2m5s"),
            (s(9 * 60 + 59), "9m59s"),
            (Duration::minutes(10), "10m"),
            (Duration::minutes(179), "179m"),
            (Duration::hours(3), "3h"),
            (Duration::minutes(185), "3h5m"),
            (Duration::hours(8) + Duration::minutes(30), "8h"),
            (Duration::hours(47), "47h"),
            (Duration::hours(48), "2d"),
            (Duration::hours(51), "2d3h"),
            (Duration::days(7) + Duration::hours(23), "7d23h"),
            (Duration::days(8) + Duration::hours(5), "8d"),
            (Duration::days(400), "400d"),
            (Duration::days(729), "729d"),
            (Duration::days(730), "2y"),
            (Duration::days(3 * 365 + 12), "3y12d"),
            (Duration::days(9 * 365 + 100), "9y"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(d), want, "{d:?}");
        }
    }

    #[test]
    fn pod_columns_are_upstreams() {
        let pods = info("", "v1", "pods");
        let cols = columns(pods);
        let got: Vec<_> = cols.iter().map(|c| (c.name, c.kind, c.format, c.priority)).collect();
        assert_eq!(
            got,
            [
                ("Name", "string", "name", 0),
                ("Ready", "string", "", 0),
                ("Status", "string", "", 0),
                ("Restarts", "string", "", 0),
                ("Age", "string", "", 0),
                ("IP", "string", "", 1),
                ("Node", "string", "", 1),
                ("Nominated Node", "string", "", 1),
                ("Readiness Gates", "string", "", 1),
            ]
        );
        assert!(cols[0].description.starts_with("Name must be unique within a namespace."));
        assert!(cols[4].description.starts_with("CreationTimestamp is a timestamp"));
    }

    #[test]
    fn pod_rows() {
        let pods = info("", "v1", "pods");
        let created = ago(Duration::days(2) + Duration::hours(3));
        let meta = |name: &str| json!({"name": name, "namespace": "default", "creationTimestamp": created});
        let running = json!({
            "metadata": meta("web-1"),
            "spec": {"nodeName": "worker-1", "containers": [{"name": "app"}, {"name": "proxy"}]},
            "status": {
                "phase": "Running",
                "podIP": "10.244.1.5",
                "podIPs": [{"ip": "10.244.1.5"}],
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [
                    {"name": "app", "ready": true, "restartCount": 3,
                     "state": {"running": {"startedAt": ago(Duration::minutes(5))}},
                     "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                                  "finishedAt": ago(Duration::minutes(5))}}},
                    {"name": "proxy", "ready": true, "restartCount": 0,
                     "state": {"running": {"startedAt": created}}}
                ]
            }
        });
        let pending = json!({
            "metadata": meta("pending"),
            "spec": {"containers": [{"name": "app"}]},
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
        });
        let creating = json!({
            "metadata": meta("creating"),
            "spec": {"nodeName": "worker-2", "containers": [{"name": "app"}]},
            "status": {"phase": "Pending", "containerStatuses": [
                {"name": "app", "ready": false, "restartCount": 0,
                 "state": {"waiting": {"reason": "ContainerCreating"}}}]}
        });
        let init = json!({
            "metadata": meta("init"),
            "spec": {"nodeName": "worker-1", "initContainers": [{"name": "migrate"}, {"name": "seed"}],
                     "containers": [{"name": "app"}]},
            "status": {"phase": "Pending",
                       "conditions": [{"type": "Initialized", "status": "False"}],
                       "initContainerStatuses": [
                           {"name": "migrate", "ready": true, "restartCount": 0,
                            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                           {"name": "seed", "ready": false, "restartCount": 0,
                            "state": {"running": {}}}],
                       "containerStatuses": [
                           {"name": "app", "ready": false, "restartCount": 0,
                            "state": {"waiting": {"reason": "PodInitializing"}}}]}
        });
        let init_pull = json!({
            "metadata": meta("init-pull"),
            "spec": {"initContainers": [{"name": "fetch"}], "containers": [{"name": "app"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "fetch", "restartCount": 0, "state": {"waiting": {"reason": "ErrImagePull"}}}]}
        });
        let crash = json!({
            "metadata": meta("crash"),
            "spec": {"containers": [{"name": "app"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "app", "ready": false, "restartCount": 12,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 2, "finishedAt": ago(Duration::seconds(40))}}}]}
        });
        let terminating = json!({
            "metadata": {"name": "old", "creationTimestamp": created,
                         "deletionTimestamp": ago(Duration::seconds(-30))},
            "spec": {"containers": [{"name": "app"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "app", "ready": true, "restartCount": 0, "state": {"running": {}}}]}
        });
        let node_lost = json!({
            "metadata": {"name": "lost", "creationTimestamp": created, "deletionTimestamp": created},
            "spec": {"containers": [{"name": "app"}]},
            "status": {"phase": "Running", "reason": "NodeLost"}
        });
        let completed = json!({
            "metadata": meta("done"),
            "spec": {"containers": [{"name": "app"}]},
            "status": {"phase": "Succeeded", "containerStatuses": [
                {"name": "app", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}
        });
        let exit_code = json!({
            "metadata": meta("killed"),
            "spec": {"containers": [{"name": "app"}]},
            "status": {"phase": "Failed", "containerStatuses": [
                {"name": "app", "restartCount": 0, "state": {"terminated": {"exitCode": 137}}}]}
        });
        let sidecar = json!({
            "metadata": meta("sidecar"),
            "spec": {"initContainers": [{"name": "log", "restartPolicy": "Always"}],
                     "containers": [{"name": "app"}],
                     "readinessGates": [{"conditionType": "example.com/lb"}]},
            "status": {"phase": "Running",
                       "conditions": [{"type": "Initialized", "status": "True"},
                                      {"type": "Ready", "status": "True"},
                                      {"type": "example.com/lb", "status": "True"}],
                       "nominatedNodeName": "worker-9",
                       "initContainerStatuses": [
                           {"name": "log", "ready": true, "started": true, "restartCount": 1,
                            "state": {"running": {}},
                            "lastState": {"terminated": {"exitCode": 1,
                                                         "finishedAt": ago(Duration::hours(1))}}}],
                       "containerStatuses": [
                           {"name": "app", "ready": true, "restartCount": 0, "state": {"running": {}}}]}
        });
        let gated = json!({
            "metadata": meta("gated"),
            "spec": {"containers": [{"name": "app"}], "schedulingGates": [{"name": "wait"}]},
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}
        });
        let n = "<none>";
        check(
            pods,
            &[
                (
                    "running with restarts",
                    running,
                    json!([
                        "web-1",
                        "2/2",
                        "Running",
                        "3 (5m ago)",
                        "2d3h",
                        "10.244.1.5",
                        "worker-1",
                        n,
                        n
                    ]),
                ),
                ("pending", pending, json!(["pending", "0/1", "Pending", "0", "2d3h", n, n, n, n])),
                (
                    "container creating",
                    creating,
                    json!([
                        "creating",
                        "0/1",
                        "ContainerCreating",
                        "0",
                        "2d3h",
                        n,
                        "worker-2",
                        n,
                        n
                    ]),
                ),
                (
                    "init 1 of 2",
                    init,
                    json!(["init", "0/1", "Init:1/2", "0", "2d3h", n, "worker-1", n, n]),
                ),
                (
                    "init image pull",
                    init_pull,
                    json!(["init-pull", "0/1", "Init:ErrImagePull", "0", "2d3h", n, n, n, n]),
                ),
                (
                    "crash loop",
                    crash,
                    json!(["crash", "0/1", "CrashLoopBackOff", "12 (40s ago)", "2d3h", n, n, n, n]),
                ),
                (
                    "terminating",
                    terminating,
                    json!(["old", "1/1", "Terminating", "0", "2d3h", n, n, n, n]),
                ),
                (
                    "node lost",
                    node_lost,
                    json!(["lost", "0/1", "Unknown", "0", "2d3h", n, n, n, n]),
                ),
                (
                    "completed",
                    completed,
                    json!(["done", "0/1", "Completed", "0", "2d3h", n, n, n, n]),
                ),
                (
                    "exit code",
                    exit_code,
                    json!(["killed", "0/1", "ExitCode:137", "0", "2d3h", n, n, n, n]),
                ),
                (
                    "sidecar",
                    sidecar,
                    json!([
                        "sidecar",
                        "2/2",
                        "Running",
                        "1 (60m ago)",
                        "2d3h",
                        n,
                        n,
                        "worker-9",
                        "1/1"
                    ]),
                ),
                (
                    "scheduling gated",
                    gated,
                    json!(["gated", "0/1", "SchedulingGated", "0", "2d3h", n, n, n, n]),
                ),
            ],
        );
    }

    #[test]
    fn service_rows() {
        let services = info("", "v1", "services");
        assert_eq!(
            names(services),
            ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]
        );
        let created = ago(Duration::minutes(10));
        check(
            services,
            &[
                (
                    "node port",
                    json!({"metadata": {"name": "web", "creationTimestamp": created},
                       "spec": {"type": "NodePort", "clusterIP": "10.96.10.20",
                                "clusterIPs": ["10.96.10.20"], "selector": {"app": "web", "tier": "fe"},
                                "ports": [{"port": 80, "targetPort": 8080, "nodePort": 30080, "protocol": "TCP"},
                                          {"port": 53, "nodePort": 30053, "protocol": "UDP"}]}}),
                    json!([
                        "web",
                        "NodePort",
                        "10.96.10.20",
                        "<none>",
                        "80:30080/TCP,53:30053/UDP",
                        "10m",
                        "app=web,tier=fe"
                    ]),
                ),
                (
                    "headless",
                    json!({"metadata": {"name": "db", "creationTimestamp": created},
                       "spec": {"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"],
                                "selector": {"app": "db"}}}),
                    json!(["db", "ClusterIP", "None", "<none>", "<none>", "10m", "app=db"]),
                ),
                (
                    "load balancer pending",
                    json!({"metadata": {"name": "lb", "creationTimestamp": created},
                       "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.7"],
                                "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]}}),
                    json!([
                        "lb",
                        "LoadBalancer",
                        "10.96.0.7",
                        "<pending>",
                        "443:31443/TCP",
                        "10m",
                        "<none>"
                    ]),
                ),
                (
                    "load balancer ready",
                    json!({"metadata": {"name": "lb", "creationTimestamp": created},
                       "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.7"],
                                "externalIPs": ["192.0.2.9"],
                                "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]},
                       "status": {"loadBalancer": {"ingress": [
                           {"ip": "203.0.113.10"}, {"hostname": "lb.example.com"}]}}}),
                    json!([
                        "lb",
                        "LoadBalancer",
                        "10.96.0.7",
                        "203.0.113.10,lb.example.com,192.0.2.9",
                        "443:31443/TCP",
                        "10m",
                        "<none>"
                    ]),
                ),
                (
                    "external name",
                    json!({"metadata": {"name": "ext", "creationTimestamp": created},
                       "spec": {"type": "ExternalName", "externalName": "db.example.com"}}),
                    json!([
                        "ext",
                        "ExternalName",
                        "<none>",
                        "db.example.com",
                        "<none>",
                        "10m",
                        "<none>"
                    ]),
                ),
            ],
        );
    }

    #[test]
    fn workload_rows() {
        let created = ago(Duration::hours(26));
        let template = json!({"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"},
                                                  {"name": "sidecar", "image": "busybox"}]}});
        let deployments = info("apps", "v1", "deployments");
        assert_eq!(
            names(deployments),
            ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]
        );
        check(
            deployments,
            &[(
                "mid rollout",
                json!({"metadata": {"name": "web", "creationTimestamp": created},
                   "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"},
                            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "canary"]}]},
                            "template": template},
                   "status": {"replicas": 4, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1}}),
                json!([
                    "web",
                    "1/3",
                    2,
                    1,
                    "26h",
                    "nginx,sidecar",
                    "nginx:1.27,busybox",
                    "app=web,env in (canary,prod)"
                ]),
            )],
        );
        check(
            info("apps", "v1", "replicasets"),
            &[(
                "replica set",
                json!({"metadata": {"name": "web-5d9c", "creationTimestamp": created},
                   "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template},
                   "status": {"replicas": 2, "readyReplicas": 2}}),
                json!([
                    "web-5d9c",
                    2,
                    2,
                    2,
                    "26h",
                    "nginx,sidecar",
                    "nginx:1.27,busybox",
                    "app=web"
                ]),
            )],
        );
        check(
            info("apps", "v1", "statefulsets"),
            &[(
                "stateful set",
                json!({"metadata": {"name": "db", "creationTimestamp": created},
                   "spec": {"replicas": 3, "template": template}, "status": {"readyReplicas": 2}}),
                json!(["db", "2/3", "26h", "nginx,sidecar", "nginx:1.27,busybox"]),
            )],
        );
        check(
            info("apps", "v1", "daemonsets"),
            &[(
                "daemon set",
                json!({"metadata": {"name": "agent", "creationTimestamp": created},
                   "spec": {"selector": {"matchLabels": {"app": "agent"}},
                            "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                                  "containers": [{"name": "agent", "image": "agent:1"}]}}},
                   "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                              "updatedNumberScheduled": 3, "numberAvailable": 2}}),
                json!([
                    "agent",
                    3,
                    3,
                    2,
                    3,
                    2,
                    "kubernetes.io/os=linux",
                    "26h",
                    "agent",
                    "agent:1",
                    "app=agent"
                ]),
            )],
        );
        check(
            info("", "v1", "replicationcontrollers"),
            &[(
                "replication controller",
                json!({"metadata": {"name": "legacy", "creationTimestamp": created},
                   "spec": {"selector": {"app": "legacy"}}, "status": {"replicas": 1}}),
                json!(["legacy", 1, 1, 0, "26h", "", "", "app=legacy"]),
            )],
        );
    }

    #[test]
    fn job_and_cronjob_rows() {
        let jobs = info("batch", "v1", "jobs");
        assert_eq!(
            names(jobs),
            [
                "Name",
                "Status",
                "Completions",
                "Duration",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        let created = ago(Duration::minutes(30));
        let template = json!({"spec": {"containers": [{"name": "pi", "image": "perl:5.34"}]}});
        let selector = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "0f6c"}});
        check(
            jobs,
            &[
                (
                    "complete",
                    json!({"metadata": {"name": "pi", "creationTimestamp": created},
                       "spec": {"completions": 1, "parallelism": 1, "selector": selector, "template": template},
                       "status": {"succeeded": 1, "startTime": ago(Duration::minutes(29)),
                                  "completionTime": ago(Duration::minutes(29) - Duration::seconds(15)),
                                  "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                                                 {"type": "Complete", "status": "True"}]}}),
                    json!([
                        "pi",
                        "Complete",
                        "1/1",
                        "15s",
                        "30m",
                        "pi",
                        "perl:5.34",
                        "batch.kubernetes.io/controller-uid=0f6c"
                    ]),
                ),
                (
                    "running",
                    json!({"metadata": {"name": "work", "creationTimestamp": created},
                       "spec": {"parallelism": 2, "selector": selector, "template": template},
                       "status": {"active": 2, "startTime": ago(Duration::seconds(90))}}),
                    json!([
                        "work",
                        "Running",
                        "0/1 of 2",
                        "90s",
                        "30m",
                        "pi",
                        "perl:5.34",
                        "batch.kubernetes.io/controller-uid=0f6c"
                    ]),
                ),
                (
                    "failed",
                    json!({"metadata": {"name": "bad", "creationTimestamp": created},
                       "spec": {"completions": 3, "template": template},
                       "status": {"succeeded": 1, "failed": 6, "startTime": ago(Duration::minutes(20)),
                                  "conditions": [{"type": "FailureTarget", "status": "True"},
                                                 {"type": "Failed", "status": "True"}]}}),
                    json!(["bad", "Failed", "1/3", "20m", "30m", "pi", "perl:5.34", "<none>"]),
                ),
                (
                    "suspended",
                    json!({"metadata": {"name": "later", "creationTimestamp": created},
                       "spec": {"completions": 1, "suspend": true, "template": template},
                       "status": {"conditions": [{"type": "Suspended", "status": "True"}]}}),
                    json!(["later", "Suspended", "0/1", "", "30m", "pi", "perl:5.34", "<none>"]),
                ),
            ],
        );

        let cronjobs = info("batch", "v1", "cronjobs");
        assert_eq!(
            names(cronjobs),
            [
                "Name",
                "Schedule",
                "Timezone",
                "Suspend",
                "Active",
                "Last Schedule",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        check(
            cronjobs,
            &[
                (
                    "scheduled",
                    json!({"metadata": {"name": "report", "creationTimestamp": ago(Duration::days(3))},
                       "spec": {"schedule": "*/5 * * * *", "suspend": false,
                                "jobTemplate": {"spec": {"template": template}}},
                       "status": {"active": [{"kind": "Job", "name": "report-28630"}],
                                  "lastScheduleTime": ago(Duration::minutes(3))}}),
                    json!([
                        "report",
                        "*/5 * * * *",
                        "<none>",
                        "False",
                        1,
                        "3m",
                        "3d",
                        "pi",
                        "perl:5.34",
                        "<none>"
                    ]),
                ),
                (
                    "never ran",
                    json!({"metadata": {"name": "nightly", "creationTimestamp": ago(Duration::days(3))},
                       "spec": {"schedule": "0 2 * * *", "timeZone": "Europe/Berlin", "suspend": true}}),
                    json!([
                        "nightly",
                        "0 2 * * *",
                        "Europe/Berlin",
                        "True",
                        0,
                        "<none>",
                        "3d",
                        "",
                        "",
                        "<none>"
                    ]),
                ),
            ],
        );
    }

    #[test]
    fn node_rows() {
        let nodes = info("", "v1", "nodes");
        let cols = columns(nodes);
        assert_eq!(
            cols.iter().map(|c| (c.name, c.priority)).collect::<Vec<_>>(),
            [
                ("Name", 0),
                ("Status", 0),
                ("Roles", 0),
                ("Age", 0),
                ("Version", 0),
                ("Internal-IP", 1),
                ("External-IP", 1),
                ("OS-Image", 1),
                ("Kernel-Version", 1),
                ("Container-Runtime", 1),
            ]
        );
        check(
            nodes,
            &[
                (
                    "not ready cordoned control plane",
                    json!({"metadata": {"name": "cp-1", "creationTimestamp": ago(Duration::days(40)),
                                    "labels": {"node-role.kubernetes.io/control-plane": "",
                                               "kubernetes.io/hostname": "cp-1"}},
                       "spec": {"unschedulable": true},
                       "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                                 {"type": "Ready", "status": "False"}],
                                  "addresses": [{"type": "InternalIP", "address": "192.168.1.10"},
                                                {"type": "Hostname", "address": "cp-1"}],
                                  "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Debian GNU/Linux 12 (bookworm)",
                                               "kernelVersion": "6.1.0-18-amd64",
                                               "containerRuntimeVersion": "containerd://1.7.13"}}}),
                    json!([
                        "cp-1",
                        "NotReady,SchedulingDisabled",
                        "control-plane",
                        "40d",
                        "v1.33.1",
                        "192.168.1.10",
                        "<none>",
                        "Debian GNU/Linux 12 (bookworm)",
                        "6.1.0-18-amd64",
                        "containerd://1.7.13"
                    ]),
                ),
                (
                    "ready worker",
                    json!({"metadata": {"name": "w-1", "creationTimestamp": ago(Duration::hours(5)),
                                    "labels": {"kubernetes.io/role": "worker",
                                               "node-role.kubernetes.io/ingress": ""}},
                       "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                  "addresses": [{"type": "ExternalIP", "address": "203.0.113.4"}],
                                  "nodeInfo": {"kubeletVersion": "v1.33.1"}}}),
                    json!([
                        "w-1",
                        "Ready",
                        "ingress,worker",
                        "5h",
                        "v1.33.1",
                        "<none>",
                        "203.0.113.4",
                        "<unknown>",
                        "<unknown>",
                        "<unknown>"
                    ]),
                ),
                (
                    "new node",
                    json!({"metadata": {"name": "w-2"}}),
                    json!([
                        "w-2",
                        "Unknown",
                        "<none>",
                        "<unknown>",
                        "",
                        "<none>",
                        "<none>",
                        "<unknown>",
                        "<unknown>",
                        "<unknown>"
                    ]),
                ),
            ],
        );
    }

    #[test]
    fn event_rows() {
        let core = info("", "v1", "events");
        assert_eq!(
            names(core),
            [
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject",
                "Source",
                "Message",
                "First Seen",
                "Count",
                "Name"
            ]
        );
        let name_col = columns(core)[9];
        assert_eq!((name_col.format, name_col.priority), ("name", 1));
        check(
            core,
            &[(
                "back off",
                json!({"metadata": {"name": "web-1.17d", "namespace": "default"},
                   "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": "default",
                                      "fieldPath": "spec.containers{app}"},
                   "reason": "BackOff", "type": "Warning",
                   "message": "Back-off restarting failed container app\n",
                   "source": {"component": "kubelet", "host": "worker-1"},
                   "firstTimestamp": ago(Duration::minutes(25)), "lastTimestamp": ago(Duration::seconds(30)),
                   "count": 5}),
                json!([
                    "30s",
                    "Warning",
                    "BackOff",
                    "pod/web-1",
                    "spec.containers{app}",
                    "kubelet, worker-1",
                    "Back-off restarting failed container app",
                    "25m",
                    5,
                    "web-1.17d"
                ]),
            )],
        );
        check(
            info("events.k8s.io", "v1", "events"),
            &[(
                "new api singleton",
                json!({"metadata": {"name": "web.18a"},
                   "regarding": {"kind": "Deployment", "name": "web"},
                   "reason": "ScalingReplicaSet", "type": "Normal", "note": "Scaled up replica set web-5d9c to 3",
                   "reportingController": "deployment-controller",
                   "eventTime": ago(Duration::minutes(4))}),
                json!([
                    "4m",
                    "Normal",
                    "ScalingReplicaSet",
                    "deployment/web",
                    "",
                    "deployment-controller",
                    "Scaled up replica set web-5d9c to 3",
                    "4m",
                    1,
                    "web.18a"
                ]),
            )],
        );
    }

    #[test]
    fn config_and_access_rows() {
        let created = ago(Duration::minutes(90));
        check(
            info("", "v1", "configmaps"),
            &[(
                "data and binary data",
                json!({"metadata": {"name": "cfg", "creationTimestamp": created},
                   "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}),
                json!(["cfg", 3, "90m"]),
            )],
        );
        check(
            info("", "v1", "secrets"),
            &[(
                "tls",
                json!({"metadata": {"name": "tls", "creationTimestamp": created},
                   "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}),
                json!(["tls", "kubernetes.io/tls", 2, "90m"]),
            )],
        );
        check(
            info("", "v1", "serviceaccounts"),
            &[(
                "default",
                json!({"metadata": {"name": "default", "creationTimestamp": created}}),
                json!(["default", 0, "90m"]),
            )],
        );
        check(
            info("", "v1", "namespaces"),
            &[(
                "active",
                json!({"metadata": {"name": "kube-system", "creationTimestamp": created}, "status": {"phase": "Active"}}),
                json!(["kube-system", "Active", "90m"]),
            )],
        );

        let roles = info("rbac.authorization.k8s.io", "v1", "roles");
        let cols = columns(roles);
        assert_eq!(
            cols.iter().map(|c| (c.name, c.kind, c.format)).collect::<Vec<_>>(),
            [("Name", "string", "name"), ("Created At", "date", "")]
        );
        check(
            roles,
            &[
                (
                    "role",
                    json!({"metadata": {"name": "reader", "creationTimestamp": "2024-05-01T10:00:00Z"}}),
                    json!(["reader", "2024-05-01T10:00:00Z"]),
                ),
                (
                    "no timestamp",
                    json!({"metadata": {"name": "x"}}),
                    json!(["x", "0001-01-01T00:00:00Z"]),
                ),
            ],
        );
        let bindings = info("rbac.authorization.k8s.io", "v1", "rolebindings");
        assert_eq!(names(bindings), ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]);
        check(
            bindings,
            &[(
                "subjects",
                json!({"metadata": {"name": "read", "creationTimestamp": created},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                   "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                                {"kind": "Group", "name": "devs"},
                                {"kind": "ServiceAccount", "name": "ci", "namespace": "tools"}]}),
                json!(["read", "ClusterRole/view", "90m", "alice, bob", "devs", "tools/ci"]),
            )],
        );
    }

    #[test]
    fn storage_and_policy_rows() {
        let created = ago(Duration::days(12));
        check(
            info("storage.k8s.io", "v1", "storageclasses"),
            &[(
                "default class",
                json!({"metadata": {"name": "standard", "creationTimestamp": created,
                                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                   "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"}),
                json!([
                    "standard (default)",
                    "rancher.io/local-path",
                    "Delete",
                    "WaitForFirstConsumer",
                    false,
                    "12d"
                ]),
            )],
        );
        check(
            info("", "v1", "persistentvolumes"),
            &[(
                "bound",
                json!({"metadata": {"name": "pv-1", "creationTimestamp": created},
                   "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                            "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "standard",
                            "volumeMode": "Filesystem",
                            "claimRef": {"namespace": "default", "name": "data"}},
                   "status": {"phase": "Bound"}}),
                json!([
                    "pv-1",
                    "10Gi",
                    "RWO,RWX",
                    "Retain",
                    "Bound",
                    "default/data",
                    "standard",
                    "<unset>",
                    "",
                    "12d",
                    "Filesystem"
                ]),
            )],
        );
        check(
            info("", "v1", "persistentvolumeclaims"),
            &[
                (
                    "bound",
                    json!({"metadata": {"name": "data", "creationTimestamp": created},
                       "spec": {"volumeName": "pv-1", "storageClassName": "standard", "volumeMode": "Filesystem",
                                "resources": {"requests": {"storage": "5Gi"}}},
                       "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"]}}),
                    json!([
                        "data",
                        "Bound",
                        "pv-1",
                        "10Gi",
                        "RWO",
                        "standard",
                        "<unset>",
                        "12d",
                        "Filesystem"
                    ]),
                ),
                (
                    "pending",
                    json!({"metadata": {"name": "wait", "creationTimestamp": created},
                       "spec": {"storageClassName": "standard"}, "status": {"phase": "Pending"}}),
                    json!(["wait", "Pending", "", "", "", "standard", "<unset>", "12d", "<unset>"]),
                ),
            ],
        );
        check(
            info("policy", "v1", "poddisruptionbudgets"),
            &[(
                "min available",
                json!({"metadata": {"name": "web", "creationTimestamp": created},
                   "spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}}),
                json!(["web", "50%", "N/A", 1, "12d"]),
            )],
        );
        check(
            info("autoscaling", "v2", "horizontalpodautoscalers"),
            &[(
                "cpu",
                json!({"metadata": {"name": "web", "creationTimestamp": created},
                   "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 10,
                            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                                         "target": {"type": "Utilization", "averageUtilization": 80}}}]},
                   "status": {"currentReplicas": 2, "currentMetrics": [{"type": "Resource",
                              "resource": {"name": "cpu", "current": {"averageUtilization": 50}}}]}}),
                json!(["web", "Deployment/web", "cpu: 50%/80%", "1", 10, 2, "12d"]),
            )],
        );
        check(
            info("autoscaling", "v1", "horizontalpodautoscalers"),
            &[(
                "v1 cpu",
                json!({"metadata": {"name": "web", "creationTimestamp": created},
                   "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2,
                            "maxReplicas": 5, "targetCPUUtilizationPercentage": 70}}),
                json!(["web", "Deployment/web", "cpu: <unknown>/70%", "2", 5, 0, "12d"]),
            )],
        );
        check(
            info("", "v1", "resourcequotas"),
            &[(
                "quota",
                json!({"metadata": {"name": "q", "creationTimestamp": created},
                   "status": {"hard": {"pods": "10", "limits.cpu": "4", "requests.cpu": "2"},
                              "used": {"pods": "3", "requests.cpu": "500m"}}}),
                json!(["q", "pods: 3/10, requests.cpu: 500m/2", "limits.cpu: 0/4", "12d"]),
            )],
        );
    }

    #[test]
    fn network_rows() {
        let created = ago(Duration::seconds(45));
        check(
            info("", "v1", "endpoints"),
            &[
                (
                    "many",
                    json!({"metadata": {"name": "web", "creationTimestamp": created},
                       "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                                    "ports": [{"port": 8080}, {"port": 9090}]}]}),
                    json!(["web", "10.0.0.1:8080,10.0.0.2:8080,10.0.0.1:9090 + 1 more...", "45s"]),
                ),
                (
                    "none",
                    json!({"metadata": {"name": "x", "creationTimestamp": created}}),
                    json!(["x", "<none>", "45s"]),
                ),
            ],
        );
        check(
            info("discovery.k8s.io", "v1", "endpointslices"),
            &[(
                "slice",
                json!({"metadata": {"name": "web-abc", "creationTimestamp": created}, "addressType": "IPv4",
                   "ports": [{"name": "http", "port": 80}],
                   "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]}),
                json!(["web-abc", "IPv4", "80", "10.0.0.1,10.0.0.2", "45s"]),
            )],
        );
        check(
            info("networking.k8s.io", "v1", "ingresses"),
            &[(
                "tls",
                json!({"metadata": {"name": "web", "creationTimestamp": created},
                   "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["a.example.com"]}],
                            "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}]},
                   "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}}),
                json!([
                    "web",
                    "nginx",
                    "a.example.com,b.example.com",
                    "192.0.2.1",
                    "80, 443",
                    "45s"
                ]),
            )],
        );
        check(
            info("networking.k8s.io", "v1", "networkpolicies"),
            &[(
                "all pods",
                json!({"metadata": {"name": "deny", "creationTimestamp": created}, "spec": {"podSelector": {}}}),
                json!(["deny", "<none>", "45s"]),
            )],
        );
        check(
            info("coordination.k8s.io", "v1", "leases"),
            &[(
                "held",
                json!({"metadata": {"name": "kube-scheduler", "creationTimestamp": created},
                   "spec": {"holderIdentity": "cp-1_7f3a"}}),
                json!(["kube-scheduler", "cp-1_7f3a", "45s"]),
            )],
        );
        check(
            info("apiregistration.k8s.io", "v1", "apiservices"),
            &[
                (
                    "local",
                    json!({"metadata": {"name": "v1.apps", "creationTimestamp": created},
                       "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}}),
                    json!(["v1.apps", "Local", "True", "45s"]),
                ),
                (
                    "unavailable",
                    json!({"metadata": {"name": "v1beta1.metrics.k8s.io", "creationTimestamp": created},
                       "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
                       "status": {"conditions": [{"type": "Available", "status": "False",
                                                  "reason": "MissingEndpoints"}]}}),
                    json!([
                        "v1beta1.metrics.k8s.io",
                        "kube-system/metrics-server",
                        "False (MissingEndpoints)",
                        "45s"
                    ]),
                ),
            ],
        );
        check(
            info("apps", "v1", "controllerrevisions"),
            &[(
                "owned",
                json!({"metadata": {"name": "web-7d", "creationTimestamp": created,
                                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                                     "name": "Web", "controller": true}]},
                   "revision": 2}),
                json!(["web-7d", "statefulset.apps/Web", 2, "45s"]),
            )],
        );
    }

    #[test]
    fn kinds_without_a_printer_print_name_and_created_at_or_age() {
        let crds = info("apiextensions.k8s.io", "v1", "customresourcedefinitions");
        assert_eq!(names(crds), ["Name", "Created At"]);
        let limits = info("", "v1", "limitranges");
        assert_eq!(names(limits), ["Name", "Created At"]);
        // A resource rkube knows nothing of (say, a custom resource) gets Name and Age.
        let custom = ResourceInfo {
            group: "example.com",
            version: "v1",
            kind: "Widget",
            plural: "widgets",
            strategy: std::sync::Arc::new(rkube_apis::strategy::Generic),
            ..limits.clone()
        };
        let cols = columns(&custom);
        assert_eq!(
            cols.iter().map(|c| (c.name, c.kind)).collect::<Vec<_>>(),
            [("Name", "string"), ("Age", "string")]
        );
        check(
            &custom,
            &[(
                "widget",
                json!({"metadata": {"name": "w", "creationTimestamp": ago(Duration::hours(3))}}),
                json!(["w", "3h"]),
            )],
        );
    }

    #[test]
    fn every_resource_has_a_cell_per_column_whatever_the_object() {
        let odd = [
            json!({}),
            json!(null),
            json!({"metadata": {"name": "x", "creationTimestamp": "yesterday"}, "spec": "nope", "status": []}),
            json!({"metadata": {"name": "x"}, "spec": {"containers": "no", "ports": [1, "a", null],
               "selector": {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}},
               "status": {"conditions": [null, 3], "containerStatuses": [{"state": null}]}}),
        ];
        for info in Resources::builtin().all() {
            let cols = columns(info);
            assert!(!cols.is_empty(), "{}", info.plural);
            assert!(cols
                .iter()
                .all(|c| ["string", "integer", "number", "boolean", "date"].contains(&c.kind)));
            assert_eq!(
                cols.iter().filter(|c| c.format == "name").count(),
                cols.iter().filter(|c| c.name == "Name" || c.name == "Attacher").count()
            );
            for obj in &odd {
                assert_eq!(
                    cells(info, obj, now()).len(),
                    cols.len(),
                    "{} {obj}",
                    info.group_resource()
                );
            }
        }
    }
}
