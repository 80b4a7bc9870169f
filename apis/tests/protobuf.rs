//! `rkube_apis::protobuf` against real protobuf: objects built as k8s-pb structs and encoded by
//! prost, shaped the way kubectl (Go) writes them (every non-pointer field present, zero or
//! not), must decode to exactly the JSON kube-apiserver serves; and what `encode` writes must
//! read back through prost to the same object.

// In a module named for the feature, so that `cargo test -p rkube-apis protobuf` runs these.
mod protobuf_transcoding {
    use std::collections::BTreeMap;

    use k8s_pb::api::apps::v1 as apps;
    use k8s_pb::api::batch::v1 as batch;
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apimachinery::pkg::api::resource::Quantity;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
    use prost::Message;
    use rkube_apis::protobuf::{self, ProtobufError};
    use serde_json::{json, Value};

    fn s(text: &str) -> Option<String> {
        Some(text.to_string())
    }

    fn envelope(api_version: &str, kind: &str, object: &impl Message) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta { api_version: s(api_version), kind: s(kind) }),
            raw: Some(object.encode_to_vec()),
            content_encoding: s(""),
            content_type: s(""),
        };
        let mut body = b"k8s\0".to_vec();
        body.extend(unknown.encode_to_vec());
        body
    }

    /// The raw message inside an envelope, read back with prost.
    fn raw_of(body: &[u8]) -> Vec<u8> {
        assert_eq!(&body[..4], b"k8s\0");
        let unknown = Unknown::decode(&body[4..]).expect("envelope decodes with prost");
        unknown.raw.unwrap_or_default()
    }

    /// ObjectMeta as Go writes it for a new object: every plain field, and the zero Time.
    fn go_meta(name: &str, labels: &[(&str, &str)]) -> meta::ObjectMeta {
        meta::ObjectMeta {
            name: s(name),
            generate_name: s(""),
            namespace: s(""),
            self_link: s(""),
            uid: s(""),
            resource_version: s(""),
            generation: Some(0),
            creation_timestamp: Some(meta::Time::default()),
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Default::default()
        }
    }

    fn go_container(name: &str, image: &str) -> core::Container {
        core::Container {
            name: s(name),
            image: s(image),
            working_dir: s(""),
            resources: Some(core::ResourceRequirements::default()),
            termination_message_path: s(""),
            termination_message_policy: s(""),
            image_pull_policy: s(""),
            stdin: Some(false),
            stdin_once: Some(false),
            tty: Some(false),
            ..Default::default()
        }
    }

    fn go_pod_spec(containers: Vec<core::Container>, restart_policy: &str) -> core::PodSpec {
        core::PodSpec {
            containers,
            restart_policy: s(restart_policy),
            dns_policy: s(""),
            service_account_name: s(""),
            service_account: s(""),
            node_name: s(""),
            host_network: Some(false),
            host_pid: Some(false),
            host_ipc: Some(false),
            hostname: s(""),
            subdomain: s(""),
            scheduler_name: s(""),
            priority_class_name: s(""),
            ..Default::default()
        }
    }

    fn quantity(text: &str) -> Quantity {
        Quantity { string: s(text) }
    }

    fn int_or_string_int(value: i32) -> IntOrString {
        IntOrString { r#type: Some(0), int_val: Some(value), str_val: s("") }
    }

    fn int_or_string_str(value: &str) -> IntOrString {
        IntOrString { r#type: Some(1), int_val: Some(0), str_val: s(value) }
    }

    /// `value` without its null members. `encode` leaves a null field out, which Go reads as the
    /// same zero value (a zero Time is `null` in JSON and absent or empty on the wire), so a round
    /// trip through protobuf keeps everything but those nulls.
    fn without_nulls(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), without_nulls(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
            other => other.clone(),
        }
    }

    /// Decodes `body`, checks it against `expected`, then checks the way back: `encode` of the
    /// JSON must read through prost as `M` and re-encode (prost) to the same JSON.
    fn check<M: Message + Default>(body: &[u8], expected: Value) {
        let decoded = protobuf::decode(body).unwrap();
        assert_eq!(decoded, expected, "\n got: {decoded:#}\nwant: {expected:#}");
        let encoded = protobuf::encode(&decoded).unwrap();
        let through_prost =
            M::decode(raw_of(&encoded).as_slice()).expect("prost reads our encoding");
        let api_version = expected["apiVersion"].as_str().unwrap();
        let kind = expected["kind"].as_str().unwrap();
        let again = protobuf::decode(&envelope(api_version, kind, &through_prost)).unwrap();
        let expected = without_nulls(&expected);
        assert_eq!(again, expected, "JSON -> protobuf -> prost -> protobuf -> JSON");
        assert_eq!(protobuf::decode(&encoded).unwrap(), expected, "JSON -> protobuf -> JSON");
    }

    #[test]
    fn configmap_with_data_and_binary_data() {
        let cm = core::ConfigMap {
            metadata: Some(go_meta("app-config", &[])),
            immutable: None,
            data: BTreeMap::from([
                ("greeting".to_string(), "hello".to_string()),
                ("empty".to_string(), String::new()),
            ]),
            binary_data: BTreeMap::from([("blob".to_string(), vec![0u8, 1, 2, 0xff])]),
        };
        check::<core::ConfigMap>(
            &envelope("v1", "ConfigMap", &cm),
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "app-config", "creationTimestamp": null},
                "data": {"greeting": "hello", "empty": ""},
                "binaryData": {"blob": "AAEC/w=="},
            }),
        );
    }

    #[test]
    fn secret() {
        let secret = core::Secret {
            metadata: Some(go_meta("db", &[])),
            immutable: Some(false),
            data: BTreeMap::from([("password".to_string(), b"hunter2".to_vec())]),
            string_data: BTreeMap::new(),
            r#type: s("Opaque"),
        };
        // immutable is a pointer in Go: an explicit false survives.
        check::<core::Secret>(
            &envelope("v1", "Secret", &secret),
            json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "db", "creationTimestamp": null},
                "immutable": false,
                "data": {"password": "aHVudGVyMg=="},
                "type": "Opaque",
            }),
        );
    }

    #[test]
    fn deployment_from_kubectl_create() {
        let labels = [("app", "web")];
        let mut container = go_container("nginx", "nginx:1.27");
        container.ports = vec![core::ContainerPort {
            name: s(""),
            host_port: Some(0),
            container_port: Some(80),
            protocol: s("TCP"),
            host_ip: s(""),
        }];
        container.resources = Some(core::ResourceRequirements {
            limits: BTreeMap::from([("memory".to_string(), quantity("256Mi"))]),
            requests: BTreeMap::from([
                ("cpu".to_string(), quantity("100m")),
                ("memory".to_string(), quantity("128Mi")),
            ]),
            claims: vec![],
        });
        let deployment = apps::Deployment {
            metadata: Some(go_meta("web", &labels)),
            spec: Some(apps::DeploymentSpec {
                replicas: Some(3),
                selector: Some(meta::LabelSelector {
                    match_labels: BTreeMap::from([("app".to_string(), "web".to_string())]),
                    match_expressions: vec![],
                }),
                template: Some(core::PodTemplateSpec {
                    metadata: Some(go_meta("", &labels)),
                    spec: Some(go_pod_spec(vec![container], "")),
                }),
                strategy: Some(apps::DeploymentStrategy {
                    r#type: s("RollingUpdate"),
                    rolling_update: Some(apps::RollingUpdateDeployment {
                        max_unavailable: Some(int_or_string_int(1)),
                        max_surge: Some(int_or_string_str("25%")),
                    }),
                }),
                min_ready_seconds: Some(0),
                revision_history_limit: None,
                paused: Some(false),
                progress_deadline_seconds: None,
            }),
            status: Some(apps::DeploymentStatus {
                observed_generation: Some(0),
                replicas: Some(0),
                updated_replicas: Some(0),
                ready_replicas: Some(0),
                available_replicas: Some(0),
                unavailable_replicas: Some(0),
                ..Default::default()
            }),
        };
        check::<apps::Deployment>(
            &envelope("apps/v1", "Deployment", &deployment),
            json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "creationTimestamp": null, "labels": {"app": "web"}},
                "spec": {
                    "replicas": 3,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
                        "spec": {
                            "containers": [{
                                "name": "nginx",
                                "image": "nginx:1.27",
                                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                                "resources": {
                                    "limits": {"memory": "256Mi"},
                                    "requests": {"cpu": "100m", "memory": "128Mi"},
                                },
                            }],
                        },
                    },
                    "strategy": {
                        "type": "RollingUpdate",
                        "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"},
                    },
                },
                "status": {},
            }),
        );
    }

    #[test]
    fn deployment_scaled_to_zero_keeps_replicas() {
        let deployment = apps::Deployment {
            metadata: Some(go_meta("idle", &[])),
            spec: Some(apps::DeploymentSpec { replicas: Some(0), ..Default::default() }),
            status: None,
        };
        let decoded = protobuf::decode(&envelope("apps/v1", "Deployment", &deployment)).unwrap();
        assert_eq!(decoded["spec"], json!({"replicas": 0}));
    }

    #[test]
    fn service_with_ports_and_target_port() {
        let service = core::Service {
            metadata: Some(go_meta("web", &[("app", "web")])),
            spec: Some(core::ServiceSpec {
                ports: vec![
                    core::ServicePort {
                        name: s("http"),
                        protocol: s("TCP"),
                        app_protocol: None,
                        port: Some(80),
                        target_port: Some(int_or_string_int(8080)),
                        node_port: Some(0),
                    },
                    core::ServicePort {
                        name: s("metrics"),
                        protocol: s("TCP"),
                        app_protocol: None,
                        port: Some(9090),
                        target_port: Some(int_or_string_str("metrics")),
                        node_port: Some(0),
                    },
                ],
                selector: BTreeMap::from([("app".to_string(), "web".to_string())]),
                cluster_ip: s(""),
                r#type: s("ClusterIP"),
                session_affinity: s(""),
                load_balancer_ip: s(""),
                external_name: s(""),
                external_traffic_policy: s(""),
                health_check_node_port: Some(0),
                publish_not_ready_addresses: Some(false),
                ..Default::default()
            }),
            status: Some(core::ServiceStatus {
                load_balancer: Some(core::LoadBalancerStatus::default()),
                conditions: vec![],
            }),
        };
        check::<core::Service>(
            &envelope("v1", "Service", &service),
            json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "web", "creationTimestamp": null, "labels": {"app": "web"}},
                "spec": {
                    "ports": [
                        {"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080},
                        {"name": "metrics", "protocol": "TCP", "port": 9090, "targetPort": "metrics"},
                    ],
                    "selector": {"app": "web"},
                    "type": "ClusterIP",
                },
                "status": {"loadBalancer": {}},
            }),
        );
    }

    #[test]
    fn namespace() {
        let namespace = core::Namespace {
            metadata: Some(go_meta("team-a", &[])),
            spec: Some(core::NamespaceSpec::default()),
            status: Some(core::NamespaceStatus { phase: s(""), conditions: vec![] }),
        };
        check::<core::Namespace>(
            &envelope("v1", "Namespace", &namespace),
            json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "team-a", "creationTimestamp": null},
                "spec": {},
                "status": {},
            }),
        );
    }

    #[test]
    fn job_from_kubectl_create() {
        let mut container = go_container("pi", "perl:5.34");
        container.command =
            vec!["perl".into(), "-Mbignum=bpi".into(), "-wle".into(), "print bpi(20)".into()];
        let job = batch::Job {
            metadata: Some(go_meta("pi", &[])),
            spec: Some(batch::JobSpec {
                backoff_limit: Some(4),
                template: Some(core::PodTemplateSpec {
                    metadata: Some(go_meta("", &[])),
                    spec: Some(go_pod_spec(vec![container], "Never")),
                }),
                ..Default::default()
            }),
            status: Some(batch::JobStatus {
                active: Some(0),
                succeeded: Some(0),
                failed: Some(0),
                completed_indexes: s(""),
                ..Default::default()
            }),
        };
        check::<batch::Job>(
            &envelope("batch/v1", "Job", &job),
            json!({
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "pi", "creationTimestamp": null},
                "spec": {
                    "backoffLimit": 4,
                    "template": {
                        "metadata": {"creationTimestamp": null},
                        "spec": {
                            "containers": [{
                                "name": "pi",
                                "image": "perl:5.34",
                                "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(20)"],
                                "resources": {},
                            }],
                            "restartPolicy": "Never",
                        },
                    },
                },
                "status": {},
            }),
        );
    }

    #[test]
    fn pod_with_times_and_status() {
        let created = meta::Time { seconds: Some(1_795_248_923), nanos: Some(0) };
        let mut meta = go_meta("web-0", &[("app", "web")]);
        meta.namespace = s("default");
        meta.uid = s("0d5a5e8c-1f4b-4f7e-9c57-3f1f1c2b7a10");
        meta.resource_version = s("42");
        meta.creation_timestamp = Some(created);
        meta.owner_references = vec![meta::OwnerReference {
            api_version: s("apps/v1"),
            kind: s("StatefulSet"),
            name: s("web"),
            uid: s("6b0c1c55-5f8e-4d3c-8a8f-2a8e7c0b9d11"),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }];
        let mut spec = go_pod_spec(vec![go_container("web", "nginx")], "Always");
        spec.termination_grace_period_seconds = Some(0);
        spec.automount_service_account_token = Some(false);
        spec.security_context =
            Some(core::PodSecurityContext { run_as_user: Some(0), ..Default::default() });
        let pod = core::Pod {
            metadata: Some(meta),
            spec: Some(spec),
            status: Some(core::PodStatus {
                phase: s("Running"),
                conditions: vec![core::PodCondition {
                    r#type: s("Ready"),
                    status: s("True"),
                    last_probe_time: Some(meta::Time::default()),
                    last_transition_time: Some(meta::Time {
                        seconds: Some(1_795_248_930),
                        nanos: Some(500),
                    }),
                    reason: s(""),
                    message: s(""),
                    observed_generation: Some(0),
                }],
                host_ip: s("10.0.0.5"),
                pod_ip: s("10.244.1.7"),
                pod_ips: vec![core::PodIp { ip: s("10.244.1.7") }],
                start_time: Some(created),
                qos_class: s("BestEffort"),
                message: s(""),
                reason: s(""),
                nominated_node_name: s(""),
                ..Default::default()
            }),
        };
        check::<core::Pod>(
            &envelope("v1", "Pod", &pod),
            json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": "web-0",
                    "namespace": "default",
                    "uid": "0d5a5e8c-1f4b-4f7e-9c57-3f1f1c2b7a10",
                    "resourceVersion": "42",
                    "creationTimestamp": "2026-11-21T08:15:23Z",
                    "labels": {"app": "web"},
                    "ownerReferences": [{
                        "apiVersion": "apps/v1",
                        "kind": "StatefulSet",
                        "name": "web",
                        "uid": "6b0c1c55-5f8e-4d3c-8a8f-2a8e7c0b9d11",
                        "controller": true,
                        "blockOwnerDeletion": true,
                    }],
                },
                "spec": {
                    "containers": [{"name": "web", "image": "nginx", "resources": {}}],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 0,
                    "automountServiceAccountToken": false,
                    "securityContext": {"runAsUser": 0},
                },
                "status": {
                    "phase": "Running",
                    "conditions": [{
                        "type": "Ready",
                        "status": "True",
                        "lastProbeTime": null,
                        "lastTransitionTime": "2026-11-21T08:15:30Z",
                    }],
                    "hostIP": "10.0.0.5",
                    "podIP": "10.244.1.7",
                    "podIPs": [{"ip": "10.244.1.7"}],
                    "startTime": "2026-11-21T08:15:23Z",
                    "qosClass": "BestEffort",
                },
            }),
        );
    }

    #[test]
    fn crd_schema_types_round_trip() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com", "creationTimestamp": null},
            "spec": {
                "group": "example.com",
                "names": {"plural": "widgets", "kind": "Widget"},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1",
                    "served": true,
                    "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": false,
                                "required": ["size"],
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1.0, "default": 3},
                                    "tags": {"type": "array", "items": {"type": "string"}},
                                    "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                    "open": {"type": "object", "additionalProperties": true},
                                    "mode": {"type": "string", "enum": ["a", "b"]},
                                },
                                "dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}},
                            },
                        },
                    }},
                }],
            },
        });
        let body = protobuf::encode(&crd).unwrap();
        assert_eq!(protobuf::decode(&body).unwrap(), without_nulls(&crd));
        // And prost agrees on the nested schema shapes.
        use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as ext;
        let parsed = ext::CustomResourceDefinition::decode(raw_of(&body).as_slice()).unwrap();
        let spec_props = &parsed.spec.unwrap().versions[0]
            .schema
            .clone()
            .unwrap()
            .open_apiv3_schema
            .unwrap()
            .properties["spec"];
        assert_eq!(
            spec_props.properties["size"].default.as_ref().unwrap().raw.as_deref(),
            Some(&b"3"[..])
        );
        assert_eq!(
            spec_props.properties["open"].additional_properties.as_ref().unwrap().allows,
            Some(true)
        );
        assert_eq!(spec_props.properties["pair"].items.as_ref().unwrap().j_son_schemas.len(), 2);
    }

    #[test]
    fn embedded_raw_extension_and_managed_fields() {
        let revision = json!({
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": "web-6d4b",
                "creationTimestamp": "2026-11-21T08:15:23Z",
                "managedFields": [{
                    "manager": "kubectl-create",
                    "operation": "Update",
                    "apiVersion": "apps/v1",
                    "time": "2026-11-21T08:15:23Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {}},
                }],
            },
            "data": {"spec": {"template": {"spec": {"containers": [{"name": "web"}]}}}},
            "revision": 1,
        });
        let body = protobuf::encode(&revision).unwrap();
        assert_eq!(protobuf::decode(&body).unwrap(), revision);
    }

    #[test]
    fn events_use_micro_time_and_lists_decode() {
        let list = json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "EventList",
            "metadata": {"resourceVersion": "7"},
            "items": [{
                "metadata": {"name": "web.1", "namespace": "default", "creationTimestamp": null},
                "eventTime": "2026-11-21T08:15:23.123456Z",
                "reportingController": "rkube",
                "reportingInstance": "rkube-1",
                "action": "Scheduled",
                "reason": "Scheduled",
                "regarding": {"kind": "Pod", "name": "web"},
                "type": "Normal",
            }],
        });
        let body = protobuf::encode(&list).unwrap();
        assert_eq!(protobuf::decode(&body).unwrap(), without_nulls(&list));
    }

    #[test]
    fn encode_writes_an_envelope_prost_reads() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}});
        let body = protobuf::encode(&cm).unwrap();
        let unknown = Unknown::decode(&body[4..]).unwrap();
        assert_eq!(
            unknown.type_meta,
            Some(TypeMeta { api_version: s("v1"), kind: s("ConfigMap") })
        );
        assert_eq!(unknown.content_encoding, s(""));
        let parsed = core::ConfigMap::decode(unknown.raw.unwrap().as_slice()).unwrap();
        assert_eq!(parsed.metadata.unwrap().name, s("x"));
        assert_eq!(parsed.data["a"], "b");
    }

    #[test]
    fn decode_errors() {
        let cm = core::ConfigMap { metadata: Some(go_meta("x", &[])), ..Default::default() };
        let good = envelope("v1", "ConfigMap", &cm);

        assert!(matches!(
            protobuf::decode(b"{\"kind\":\"ConfigMap\"}"),
            Err(ProtobufError::NotProtobuf)
        ));
        assert!(matches!(protobuf::decode(b""), Err(ProtobufError::NotProtobuf)));

        let err = protobuf::decode(&envelope("example.com/v1", "Widget", &cm)).unwrap_err();
        assert!(matches!(&err, ProtobufError::UnknownKind { api_version, kind }
        if api_version == "example.com/v1" && kind == "Widget"));
        assert_eq!(
        err.to_string(),
        "protobuf is not supported for apiVersion \"example.com/v1\", kind \"Widget\"; send it \
         as JSON (Content-Type: application/json)"
    );

        let no_type = Unknown { raw: Some(cm.encode_to_vec()), ..Default::default() };
        let mut body = b"k8s\0".to_vec();
        body.extend(no_type.encode_to_vec());
        assert!(matches!(protobuf::decode(&body), Err(ProtobufError::MissingTypeMeta)));

        let gzip = Unknown {
            type_meta: Some(TypeMeta { api_version: s("v1"), kind: s("ConfigMap") }),
            raw: Some(cm.encode_to_vec()),
            content_encoding: s("gzip"),
            content_type: None,
        };
        let mut body = b"k8s\0".to_vec();
        body.extend(gzip.encode_to_vec());
        assert!(
            matches!(protobuf::decode(&body), Err(ProtobufError::ContentEncoding(e)) if e == "gzip")
        );

        let truncated = &good[..good.len() - 3];
        let err = protobuf::decode(truncated).unwrap_err();
        assert!(matches!(err, ProtobufError::Malformed { .. }), "{err}");

        // metadata.name (a string) sent as a varint.
        let wrong = [0x0a, 0x02, 0x08, 0x01];
        let unknown = Unknown {
            type_meta: Some(TypeMeta { api_version: s("v1"), kind: s("ConfigMap") }),
            raw: Some(wrong.to_vec()),
            ..Default::default()
        };
        let mut body = b"k8s\0".to_vec();
        body.extend(unknown.encode_to_vec());
        assert_eq!(
            protobuf::decode(&body).unwrap_err().to_string(),
            "cannot decode the protobuf v1 ConfigMap at metadata.name: wire type 0 (varint) where \
         length-delimited was expected"
        );
    }

    #[test]
    fn encode_errors() {
        assert!(matches!(
            protobuf::encode(&json!({"kind": "ConfigMap"})),
            Err(ProtobufError::MissingTypeMeta)
        ));
        assert!(matches!(
            protobuf::encode(&json!({"apiVersion": "example.com/v1", "kind": "Widget"})),
            Err(ProtobufError::UnknownKind { .. })
        ));
        let err = protobuf::encode(&json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": "three"},
        }))
        .unwrap_err();
        assert_eq!(
        err.to_string(),
        "cannot encode apps/v1 Deployment as protobuf at spec.replicas: expected an integer, found a string"
    );
        let err = protobuf::encode(&json!({
            "apiVersion": "v1", "kind": "Secret", "data": {"k": "not base64!"},
        }))
        .unwrap_err();
        assert!(err.to_string().contains("at data[k]: invalid base64"), "{err}");
    }

    /// xorshift64*: a small deterministic generator, so the fuzz cases are the same on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    fn hostile_input_never_panics() {
        let deployment = protobuf::encode(&json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}, "creationTimestamp": "2026-11-21T08:15:23Z"},
        "spec": {
            "replicas": 2,
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {"spec": {"containers": [{
                "name": "web", "image": "nginx",
                "ports": [{"containerPort": 80}],
                "resources": {"requests": {"cpu": "100m"}},
                "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
            }]}},
        },
    }))
    .unwrap();
        // Every truncation.
        for len in 0..deployment.len() {
            let _ = protobuf::decode(&deployment[..len]);
        }
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        // Random mutations of a valid body: flipped bytes, inserted and deleted runs.
        for _ in 0..20_000 {
            let mut body = deployment.clone();
            for _ in 0..=rng.below(4) {
                let at = 4 + rng.below(body.len() - 4);
                match rng.below(3) {
                    0 => body[at] = rng.next() as u8,
                    1 => {
                        let run: Vec<u8> = (0..rng.below(12)).map(|_| rng.next() as u8).collect();
                        body.splice(at..at, run);
                    }
                    _ => {
                        let end = (at + rng.below(8)).min(body.len());
                        body.drain(at..end);
                    }
                }
                if body.len() <= 4 {
                    break;
                }
            }
            let _ = protobuf::decode(&body);
        }
        // Pure noise behind the magic, also inside a valid envelope.
        for _ in 0..5_000 {
            let noise: Vec<u8> = (0..rng.below(256)).map(|_| rng.next() as u8).collect();
            let mut body = b"k8s\0".to_vec();
            body.extend(&noise);
            let _ = protobuf::decode(&body);
            let unknown = Unknown {
                type_meta: Some(TypeMeta { api_version: s("v1"), kind: s("Pod") }),
                raw: Some(noise),
                ..Default::default()
            };
            let mut body = b"k8s\0".to_vec();
            body.extend(unknown.encode_to_vec());
            let _ = protobuf::decode(&body);
        }
    }
}
