//! The gRPC facade (`rkube.api.v1.Api`, on the REST port) against the real binary, beside
//! stock kubectl on REST: one cluster seen through both; the same RBAC denials and quota
//! refusals, with the same Status; bad input answered with a clear status; watches that
//! end when cancelled or at their deadline; health and reflection for grpcurl-style tools;
//! the `rkube grpc` subcommand.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use rkube_conformance::cluster::{rkube_binary, stdout_of, RkubeServer};
use rkube_conformance::identity::service_account_kubeconfig;
use rkube_server::grpc::client::{self, Client, ClientConfig, Event};
use rkube_server::grpc::errors::kubernetes_status;
use rkube_server::grpc::proto::{
    patch_request, watch_event, DeleteOptions, DeleteRequest, Encoding, GetRequest, ListRequest,
    PatchRequest, Preconditions, ResourceRef, WatchRequest, WriteRequest,
};
use serde_json::{json, Value};
use tonic::Code;

fn admin(s: &RkubeServer) -> (ClientConfig, Client) {
    let config = ClientConfig::from_kubeconfig(&s.kubeconfig).expect("admin kubeconfig");
    let client = Client::new(&config).expect("client");
    (config, client)
}

fn configmap(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap()
}

fn configmaps(namespace: &str, name: &str) -> Option<ResourceRef> {
    Some(ResourceRef {
        version: "v1".into(),
        resource: "configmaps".into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Default::default()
    })
}

/// The code of a failed call, and the Kubernetes Status in its details.
fn failure<T: std::fmt::Debug>(result: Result<T, tonic::Status>) -> (Code, String, Value) {
    let status = result.expect_err("the call should fail");
    let detail =
        kubernetes_status(&status).unwrap_or_else(|| panic!("no Kubernetes Status in {status:?}"));
    assert_eq!(detail["kind"], "Status", "{detail}");
    assert_eq!(detail["message"], status.message(), "{detail}");
    (status.code(), status.message().to_string(), detail)
}

/// Waits (15 s at most) until `lines` yields a line with `want`.
fn wait_for_line(lines: &std::sync::mpsc::Receiver<String>, want: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        if let Ok(line) = lines.recv_timeout(Duration::from_millis(200)) {
            let found = line.contains(want);
            seen.push(line);
            if found {
                return seen;
            }
        }
    }
    panic!("no line with {want:?} within 15 s: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_and_rest_are_one_cluster() {
    let s = RkubeServer::start();
    let (_, grpc) = admin(&s);
    // kubectl watches over REST while gRPC writes.
    let mut kubectl_watch = s
        .kubectl_command(&s.kubectl)
        .args(["get", "configmaps", "-n", "default", "-w", "-o", "name", "--request-timeout=60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get -w");
    let (tx, lines) = std::sync::mpsc::channel();
    let stdout = kubectl_watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let created =
        grpc.create(Some("default"), &configmap("from-grpc", json!({"a": "1"}))).await.unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();
    assert!(created.metadata.uid.is_some());
    wait_for_line(&lines, "configmap/from-grpc");
    let _ = kubectl_watch.kill();
    let _ = kubectl_watch.wait();
    // kubectl reads what gRPC wrote, field for field.
    let rest: Value =
        serde_json::from_str(&s.ok(&["get", "configmap", "from-grpc", "-o", "json"])).unwrap();
    assert_eq!(rest["metadata"]["uid"], json!(created.metadata.uid));
    assert_eq!(rest["data"], json!({"a": "1"}));
    // A REST update arrives on a gRPC watch resumed from the create.
    let mut events = grpc.watch::<ConfigMap>(Some("default"), &rv).await.unwrap();
    s.ok(&["label", "configmap", "from-grpc", "via=rest"]);
    let modified = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            match events.next().await {
                Some(Ok(Event::Modified(cm))) => break cm,
                Some(Ok(_)) => continue,
                other => panic!("watch ended: {other:?}"),
            }
        }
    })
    .await
    .expect("the REST update on the gRPC watch within 15 s");
    assert_eq!(modified.metadata.name.as_deref(), Some("from-grpc"));
    assert_eq!(modified.metadata.labels.unwrap()["via"], "rest");
    drop(events);
    // Reads: get, list with a label selector.
    let got: ConfigMap = grpc.get(Some("default"), "from-grpc").await.unwrap();
    assert_eq!(got.metadata.labels.unwrap()["via"], "rest");
    let listed = grpc.list::<ConfigMap>(Some("default"), "via=rest").await.unwrap();
    let names: Vec<_> = listed.items.iter().filter_map(|c| c.metadata.name.clone()).collect();
    assert_eq!(names, ["from-grpc"]);
    // Chunked lists: limit and continue.
    for i in 0..3 {
        grpc.create(Some("default"), &configmap(&format!("chunk-{i}"), json!({}))).await.unwrap();
    }
    let mut api = grpc.api();
    let page = |token: String| ListRequest {
        r#ref: configmaps("default", ""),
        label_selector: String::new(),
        limit: 2,
        continue_token: token,
        ..Default::default()
    };
    let first: Value =
        serde_json::from_slice(&api.list(page(String::new())).await.unwrap().into_inner().data)
            .unwrap();
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    let token = first["metadata"]["continue"].as_str().expect("a continue token").to_string();
    let second: Value =
        serde_json::from_slice(&api.list(page(token)).await.unwrap().into_inner().data).unwrap();
    assert!(!second["items"].as_array().unwrap().is_empty());
    // Patches, by type.
    let patch = |kind: patch_request::Type, body: &str| PatchRequest {
        r#ref: configmaps("default", "from-grpc"),
        r#type: kind as i32,
        patch: body.to_string().into(),
        field_manager: "grpc-test".into(),
        ..Default::default()
    };
    api.patch(patch(patch_request::Type::Merge, r#"{"data":{"b":"2"}}"#)).await.unwrap();
    api.patch(patch(patch_request::Type::Json, r#"[{"op":"add","path":"/data/c","value":"3"}]"#))
        .await
        .unwrap();
    api.patch(patch(patch_request::Type::Strategic, r#"{"data":{"d":"4"}}"#)).await.unwrap();
    api.patch(patch(
        patch_request::Type::Apply,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-grpc"},"data":{"e":"5"}}"#,
    ))
    .await
    .unwrap();
    assert_eq!(
        s.ok(&["get", "configmap", "from-grpc", "-o", "jsonpath={.data}"]),
        r#"{"a":"1","b":"2","c":"3","d":"4","e":"5"}"#
    );
    // An update with a stale resourceVersion is a Conflict: ABORTED.
    let mut stale = serde_json::to_value(&created).unwrap();
    stale["data"] = json!({"x": "y"});
    let update = WriteRequest {
        r#ref: configmaps("default", "from-grpc"),
        body: serde_json::to_vec(&stale).unwrap().into(),
        ..Default::default()
    };
    let (code, _, status) = failure(api.update(update).await);
    assert_eq!((code, status["reason"].as_str()), (Code::Aborted, Some("Conflict")));
    // Creating it again: ALREADY_EXISTS, with REST's message.
    let (code, message, _) =
        failure(grpc.create(Some("default"), &configmap("from-grpc", json!({}))).await);
    assert_eq!(code, Code::AlreadyExists);
    assert_eq!(message, "configmaps \"from-grpc\" already exists");
    // Delete with a wrong uid precondition: refused; with none: done.
    let wrong_uid = DeleteOptions {
        preconditions: Some(Preconditions { uid: Some("not-it".into()), resource_version: None }),
        ..Default::default()
    };
    let (code, message, _) =
        failure(grpc.delete::<ConfigMap>(Some("default"), "from-grpc", wrong_uid).await);
    assert_eq!(code, Code::Aborted, "{message}");
    assert!(message.contains("Precondition failed: UID in precondition: not-it"), "{message}");
    let dry = DeleteOptions { dry_run: true, ..Default::default() };
    grpc.delete::<ConfigMap>(Some("default"), "from-grpc", dry).await.unwrap();
    s.ok(&["get", "configmap", "from-grpc"]);
    grpc.delete::<ConfigMap>(Some("default"), "from-grpc", Default::default()).await.unwrap();
    // NOT_FOUND, with the message kubectl shows for the same object.
    let (code, message, status) =
        failure(grpc.get::<ConfigMap>(Some("default"), "from-grpc").await);
    assert_eq!((code, status["code"].as_u64()), (Code::NotFound, Some(404)));
    let rest = s.fails(&["get", "configmap", "from-grpc"]);
    assert!(rest.contains(&message), "REST: {rest}, gRPC: {message}");
    // DeleteCollection by label selector.
    let mut collection = rkube_server::grpc::proto::DeleteCollectionRequest {
        r#ref: configmaps("default", ""),
        ..Default::default()
    };
    collection.label_selector = "!nothing".into();
    s.ok(&["label", "configmap", "chunk-0", "chunk-1", "chunk-2", "sweep=yes"]);
    collection.label_selector = "sweep=yes".into();
    let deleted: Value =
        serde_json::from_slice(&api.delete_collection(collection).await.unwrap().into_inner().data)
            .unwrap();
    assert_eq!(deleted["items"].as_array().unwrap().len(), 3, "{deleted}");
    assert_eq!(s.ok(&["get", "configmaps", "-l", "sweep=yes", "-o", "name"]), "");
    // gRPC calls are in the request metrics as REST's are (only gRPC deleted a collection).
    let metrics = s.ok(&["get", "--raw", "/metrics"]);
    assert!(
        metrics.lines().any(|l| l.starts_with(
            "apiserver_request_total{verb=\"DELETECOLLECTION\",group=\"\",version=\"v1\",resource=\"configmaps\",subresource=\"\",scope=\"namespace\",code=\"200\"} 1"
        )),
        "{metrics}"
    );
    // UpdateStatus: the namespace's status subresource.
    let ns: Value = serde_json::from_slice(
        &api.get(GetRequest {
            r#ref: Some(ResourceRef {
                version: "v1".into(),
                resource: "namespaces".into(),
                name: "default".into(),
                ..Default::default()
            }),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .data,
    )
    .unwrap();
    let status_update = WriteRequest {
        r#ref: Some(ResourceRef {
            version: "v1".into(),
            resource: "namespaces".into(),
            name: "default".into(),
            ..Default::default()
        }),
        body: serde_json::to_vec(&ns).unwrap().into(),
        ..Default::default()
    };
    let updated: Value =
        serde_json::from_slice(&api.update_status(status_update).await.unwrap().into_inner().data)
            .unwrap();
    assert_eq!(updated["status"]["phase"], "Active");
    // The `rkube grpc` subcommand lists and watches through gRPC.
    s.ok(&["create", "configmap", "for-cli", "--from-literal=k=v"]);
    let out = Command::new(rkube_binary())
        .args(["grpc", "get", "configmaps", "-n", "default"])
        .env("KUBECONFIG", &s.kubeconfig)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(stdout_of(&out).lines().any(|l| l.starts_with("default/for-cli ")), "{out:?}");
    let out = Command::new(rkube_binary())
        .args(["grpc", "watch", "configmaps", "-n", "default", "--timeout", "2"])
        .env("KUBECONFIG", &s.kubeconfig)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(stdout_of(&out).lines().any(|l| l.starts_with("ADDED default/for-cli ")), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denials_refusals_and_bad_input_get_rests_status() {
    let s = RkubeServer::start();
    let (config, grpc) = admin(&s);
    let mut api = grpc.api();
    // A service account without rights: PERMISSION_DENIED with REST's Forbidden message.
    let sa = service_account_kubeconfig(&s, "nobody");
    let nobody = Client::new(&ClientConfig::from_kubeconfig(&sa).unwrap()).unwrap();
    let (code, message, status) = failure(nobody.list::<ConfigMap>(Some("default"), "").await);
    assert_eq!((code, status["reason"].as_str()), (Code::PermissionDenied, Some("Forbidden")));
    assert_eq!(
        message,
        "configmaps is forbidden: User \"system:serviceaccount:default:nobody\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    let (_, _, rest) = s.kubectl_as(&sa, &["get", "configmaps", "-n", "default"]);
    assert!(rest.contains(&message), "REST: {rest}");
    // The admin impersonating the service account (REST's headers, as gRPC metadata): the
    // same refusal.
    let mut as_nobody =
        tonic::Request::new(ListRequest { r#ref: configmaps("default", ""), ..Default::default() });
    as_nobody
        .metadata_mut()
        .insert("impersonate-user", "system:serviceaccount:default:nobody".parse().unwrap());
    let (code, impersonated, _) = failure(api.list(as_nobody).await);
    assert_eq!((code, impersonated), (Code::PermissionDenied, message.clone()));
    // Granted over REST, allowed over gRPC.
    s.ok(&["create", "role", "read-cm", "--verb=list", "--resource=configmaps"]);
    s.ok(&[
        "create",
        "rolebinding",
        "nobody-reads",
        "--role=read-cm",
        "--serviceaccount=default:nobody",
    ]);
    let deadline = Instant::now() + Duration::from_secs(15);
    while nobody.list::<ConfigMap>(Some("default"), "").await.is_err() {
        assert!(Instant::now() < deadline, "the RoleBinding did not take effect within 15 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A token the server did not issue: UNAUTHENTICATED.
    let forged = Client::new(&ClientConfig {
        client_cert_pem: None,
        client_key_pem: None,
        token: Some("not-a-token".into()),
        ..config.clone()
    })
    .unwrap();
    let (code, _, status) = failure(forged.list::<ConfigMap>(Some("default"), "").await);
    assert_eq!((code, status["code"].as_u64()), (Code::Unauthenticated, Some(401)));
    // A quota refusal: the same 403 and message as REST's.
    s.ok(&["create", "namespace", "q"]);
    s.ok(&["create", "quota", "cm", "--hard=configmaps=2", "-n", "q"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.ok(&["get", "quota", "cm", "-n", "q", "-o", "jsonpath={.status.hard.configmaps}"])
        != "2"
    {
        assert!(Instant::now() < deadline, "the quota was not counted within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    // kube-root-ca.crt is the first; one more fills the quota.
    let deadline = Instant::now() + Duration::from_secs(30);
    while grpc.create(Some("q"), &configmap("one", json!({}))).await.is_err() {
        assert!(Instant::now() < deadline, "no room in the quota within 30 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rest = s.fails(&["create", "configmap", "two", "-n", "q"]);
    let (code, message, status) =
        failure(grpc.create(Some("q"), &configmap("two", json!({}))).await);
    assert_eq!((code, status["code"].as_u64()), (Code::PermissionDenied, Some(403)));
    assert!(message.contains("exceeded quota: cm"), "{message}");
    assert!(rest.contains(&message), "REST: {rest}, gRPC: {message}");
    // A body in the Kubernetes protobuf encoding.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pb"},
        "data": {"k": "v"}});
    let create = WriteRequest {
        r#ref: configmaps("default", ""),
        body: rkube_apis::protobuf::encode(&cm).unwrap().into(),
        body_encoding: Encoding::Protobuf as i32,
        ..Default::default()
    };
    api.create(create).await.unwrap();
    assert_eq!(s.ok(&["get", "configmap", "pb", "-o", "jsonpath={.data.k}"]), "v");
    // An answer in it: protobuf where REST answers protobuf, else REST's 406.
    let get = GetRequest {
        r#ref: configmaps("default", "pb"),
        encoding: Encoding::Protobuf as i32,
        ..Default::default()
    };
    match api.get(get).await {
        Ok(answer) => {
            let answer = answer.into_inner();
            assert_eq!(answer.content_type, "application/vnd.kubernetes.protobuf");
            let decoded = rkube_apis::protobuf::decode(&answer.data).unwrap();
            assert_eq!(decoded["data"]["k"], "v");
        }
        Err(status) => {
            let (code, _, status) = failure::<()>(Err(status));
            assert_eq!((code, status["code"].as_u64()), (Code::InvalidArgument, Some(406)));
        }
    }
    // An unknown resource: NOT_FOUND.
    let unknown = GetRequest {
        r#ref: Some(ResourceRef {
            version: "v1".into(),
            resource: "widgets".into(),
            namespace: "default".into(),
            name: "w".into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let (code, message, _) = failure(api.get(unknown).await);
    assert_eq!(code, Code::NotFound);
    assert_eq!(message, "the server could not find the requested resource");
    // No resource at all: INVALID_ARGUMENT.
    let (code, _, _) = failure(api.get(GetRequest::default()).await);
    assert_eq!(code, Code::InvalidArgument);
    // A malformed JSON body: INVALID_ARGUMENT, a 400 BadRequest.
    let malformed = WriteRequest {
        r#ref: configmaps("default", ""),
        body: b"{\"metadata\": {\"name\": ".to_vec().into(),
        ..Default::default()
    };
    let (code, _, status) = failure(api.create(malformed).await);
    assert_eq!((code, status["reason"].as_str()), (Code::InvalidArgument, Some("BadRequest")));
    // A field of the wrong type: the same.
    let wrong_type = WriteRequest {
        r#ref: configmaps("default", ""),
        body: br#"{"metadata":{"name":"w"},"data":{"a":1}}"#.to_vec().into(),
        ..Default::default()
    };
    let (code, message, _) = failure(api.create(wrong_type).await);
    assert_eq!(code, Code::InvalidArgument, "{message}");
    // An invalid object: INVALID_ARGUMENT, 422 Invalid with its causes.
    let invalid = WriteRequest {
        r#ref: configmaps("default", ""),
        body: br#"{"metadata":{"name":"Not_Valid"}}"#.to_vec().into(),
        ..Default::default()
    };
    let (code, _, status) = failure(api.create(invalid).await);
    assert_eq!((code, status["code"].as_u64()), (Code::InvalidArgument, Some(422)));
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.name", "{status}");
    // A body over REST's 3 MiB: RESOURCE_EXHAUSTED, 413.
    let big = format!(
        r#"{{"metadata":{{"name":"big"}},"data":{{"a":"{}"}}}}"#,
        "x".repeat(3 * 1024 * 1024 + 512)
    );
    let oversize = WriteRequest {
        r#ref: configmaps("default", ""),
        body: big.into_bytes().into(),
        ..Default::default()
    };
    let (code, _, status) = failure(api.create(oversize).await);
    assert_eq!((code, status["code"].as_u64()), (Code::ResourceExhausted, Some(413)));
    // An unknown patch type: INVALID_ARGUMENT.
    s.ok(&["create", "configmap", "p"]);
    let patch = PatchRequest {
        r#ref: configmaps("default", "p"),
        r#type: 42,
        patch: b"{}".to_vec().into(),
        ..Default::default()
    };
    let (code, message, _) = failure(api.patch(patch).await);
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.contains("Unsupported value: 42"), "{message}");
    // A delete that names nothing, a list that names something.
    let (code, _, _) = failure(
        api.delete(DeleteRequest { r#ref: configmaps("default", ""), ..Default::default() }).await,
    );
    assert_eq!(code, Code::InvalidArgument);
    // The server is fine after all that.
    s.ok(&["get", "configmap", "p"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_end_when_cancelled_or_due_and_tools_find_the_service() {
    let s = RkubeServer::start();
    let (config, grpc) = admin(&s);
    let mut api = grpc.api();
    for i in 0..5 {
        s.ok(&["create", "configmap", &format!("w{i}")]);
    }
    // Watches cancelled midway (after their first event) free the server: many in a row on
    // one connection, then writes and a fresh watch are as prompt as before.
    for _ in 0..40 {
        let request = WatchRequest { r#ref: configmaps("default", ""), ..Default::default() };
        let mut events = api.watch(request).await.unwrap().into_inner();
        let first = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("a first event within 10 s");
        assert!(matches!(first, Some(Ok(_))), "{first:?}");
        drop(events);
    }
    let started = Instant::now();
    for i in 0..20 {
        grpc.create(Some("default"), &configmap(&format!("after-{i}"), json!({}))).await.unwrap();
    }
    assert!(started.elapsed() < Duration::from_secs(20), "writes slowed: {:?}", started.elapsed());
    // Resume from a resourceVersion with bookmarks: the later objects only.
    let all = grpc.list::<ConfigMap>(Some("default"), "").await.unwrap();
    let rv = all.metadata.resource_version.clone().unwrap();
    s.ok(&["create", "configmap", "latest"]);
    let request = WatchRequest {
        r#ref: configmaps("default", ""),
        resource_version: rv,
        allow_watch_bookmarks: true,
        timeout_seconds: Some(3),
        ..Default::default()
    };
    let started = Instant::now();
    let events: Vec<_> = api.watch(request).await.unwrap().into_inner().collect().await;
    assert!(started.elapsed() < Duration::from_secs(10), "timeoutSeconds not honoured");
    let added: Vec<String> = events
        .iter()
        .filter_map(|e| e.as_ref().ok())
        .filter(|e| e.r#type == watch_event::Type::Added as i32)
        .map(|e| {
            serde_json::from_slice::<Value>(&e.object).unwrap()["metadata"]["name"].to_string()
        })
        .collect();
    assert_eq!(added, ["\"latest\""], "{events:?}");
    // The call's deadline (grpc-timeout) ends a watch that has nothing more to say.
    let mut request = tonic::Request::new(WatchRequest {
        r#ref: configmaps("default", "nothing-happens-here"),
        ..Default::default()
    });
    request.set_timeout(Duration::from_secs(2));
    let started = Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(15), async {
        let mut events = api.watch(request).await?.into_inner();
        while let Some(event) = events.next().await {
            event?;
        }
        Ok::<(), tonic::Status>(())
    })
    .await
    .expect("the watch outlived its deadline by 13 s");
    if let Err(status) = ended {
        assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    }
    assert!(started.elapsed() >= Duration::from_millis(1500), "{:?}", started.elapsed());
    // A resourceVersion ahead of the server: the ERROR ends the stream with its status.
    let ahead = WatchRequest {
        r#ref: configmaps("default", ""),
        resource_version: "999999999".into(),
        ..Default::default()
    };
    let outcome = tokio::time::timeout(Duration::from_secs(15), async {
        let mut events = api.watch(ahead).await?.into_inner();
        while let Some(event) = events.next().await {
            event?;
        }
        Ok::<(), tonic::Status>(())
    })
    .await
    .expect("the watch ahead of the server ended within 15 s");
    let (_, _, status) = failure(outcome);
    assert_eq!(status["reason"], "Timeout", "{status}");
    // Health: SERVING, for the server and the API service.
    let channel = client::channel(&config).unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    for service in ["", "rkube.api.v1.Api"] {
        let answer = health
            .check(tonic_health::pb::HealthCheckRequest { service: service.into() })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            answer.status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32,
            "{service:?}"
        );
    }
    // Reflection lists the services, and describes the API's file.
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    let mut reflection = ServerReflectionClient::new(channel);
    let ask = |m: MessageRequest| ServerReflectionRequest {
        host: String::new(),
        message_request: Some(m),
    };
    let requests = futures_util::stream::iter(vec![
        ask(MessageRequest::ListServices(String::new())),
        ask(MessageRequest::FileContainingSymbol("rkube.api.v1.Api".into())),
    ]);
    let mut answers = reflection.server_reflection_info(requests).await.unwrap().into_inner();
    let Some(Ok(listed)) = answers.next().await else { panic!("no list of services") };
    let Some(MessageResponse::ListServicesResponse(list)) = listed.message_response else {
        panic!("{listed:?}")
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    assert!(names.contains(&"rkube.api.v1.Api".to_string()), "{names:?}");
    let Some(Ok(file)) = answers.next().await else { panic!("no file for the service") };
    let Some(MessageResponse::FileDescriptorResponse(file)) = file.message_response else {
        panic!("{file:?}")
    };
    assert!(!file.file_descriptor_proto.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_port_of_its_own_serves_grpc_alone() {
    let port = rkube_store::testing::free_port();
    let s = RkubeServer::start_with(&["--grpc-port", &port.to_string()]);
    let (mut config, _) = admin(&s);
    config.server = format!("https://127.0.0.1:{port}");
    let grpc = Client::new(&config).unwrap();
    // The same cluster, with the same authentication, as on the REST port.
    s.ok(&["create", "configmap", "on-rest"]);
    let got: ConfigMap = grpc.get(Some("default"), "on-rest").await.unwrap();
    assert_eq!(got.metadata.name.as_deref(), Some("on-rest"));
    let anonymous = Client::new(&ClientConfig {
        client_cert_pem: None,
        client_key_pem: None,
        ..config.clone()
    })
    .unwrap();
    let (code, message, _) = failure(anonymous.get::<ConfigMap>(Some("default"), "on-rest").await);
    assert_eq!(code, Code::PermissionDenied);
    assert!(message.contains("User \"system:anonymous\" cannot get resource"), "{message}");
    // REST is not served there: a request of another protocol is an unknown gRPC method.
    let out = Command::new("curl")
        .args(["-s", "-D", "-", "--max-time", "10", "--cacert"])
        .arg(s.data_dir.path().join("pki/ca.crt"))
        .arg(format!("https://127.0.0.1:{port}/api/v1/namespaces"))
        .output()
        .unwrap();
    let answer = stdout_of(&out).to_ascii_lowercase();
    assert!(answer.contains("grpc-status: 12"), "{answer}");
    assert!(!answer.contains("namespacelist"), "{answer}");
}
