//! The server as an operator runs it: restarts keep everything, etcd as the store, and the
//! `kubectl create` generators (which send protobuf bodies).

use rkube_conformance::cluster::RkubeServer;
use rkube_store::testing::EtcdServer;
use serde_json::Value;

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"))
}

#[test]
fn a_restart_keeps_objects_revisions_and_the_pki() {
    let mut s = RkubeServer::start();
    s.ok(&["create", "namespace", "keep"]);
    s.ok(&["create", "configmap", "cm", "-n", "keep", "--from-literal=a=1"]);
    s.ok(&["create", "service", "clusterip", "svc", "-n", "keep", "--tcp=80:8080"]);
    let before = json(&s.ok(&["get", "configmap", "cm", "-n", "keep", "-o", "json"]));
    let ip = s.ok(&["get", "svc", "svc", "-n", "keep", "-o", "jsonpath={.spec.clusterIP}"]);
    let ca_before = std::fs::read(s.data_dir.path().join("pki/ca.crt")).unwrap();
    s.restart();
    // The same kubeconfig still works: the PKI was kept.
    assert_eq!(std::fs::read(s.data_dir.path().join("pki/ca.crt")).unwrap(), ca_before);
    let after = json(&s.ok(&["get", "configmap", "cm", "-n", "keep", "-o", "json"]));
    assert_eq!(after, before, "the object and its resourceVersion survive the restart");
    assert_eq!(s.ok(&["get", "svc", "svc", "-n", "keep", "-o", "jsonpath={.spec.clusterIP}"]), ip);
    // New writes go on from the old revisions, and the allocated IP is not handed out again.
    s.ok(&["create", "service", "clusterip", "svc2", "-n", "keep", "--tcp=80:8080"]);
    assert_ne!(s.ok(&["get", "svc", "svc2", "-n", "keep", "-o", "jsonpath={.spec.clusterIP}"]), ip);
    let rv_after: u64 =
        s.ok(&["get", "ns", "keep", "-o", "jsonpath={.metadata.resourceVersion}"]).parse().unwrap();
    assert!(rv_after > 0);
}

#[test]
fn etcd_as_the_store() {
    let etcd = EtcdServer::start();
    let s = RkubeServer::start_with(&["--etcd-servers", etcd.client_url()]);
    s.ok(&["create", "deployment", "web", "--image=busybox:1.36"]);
    s.ok(&["scale", "deployment", "web", "--replicas=3"]);
    assert_eq!(s.ok(&["get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"]), "3");
    let all = s.ok(&["get", "namespaces", "-o", "name"]);
    assert!(all.contains("namespace/kube-system"), "{all}");
    let out = s.ok(&["get", "--raw", "/api/v1/namespaces/default/services/kubernetes"]);
    assert_eq!(json(&out)["spec"]["clusterIP"], "10.43.0.1");
}

#[test]
fn kubectl_create_generators() {
    let s = RkubeServer::start();
    s.ok(&["create", "secret", "generic", "creds", "--from-literal=password=s3cret"]);
    let secret = json(&s.ok(&["get", "secret", "creds", "-o", "json"]));
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(secret["data"]["password"], "czNjcmV0");
    s.ok(&["create", "service", "nodeport", "np", "--tcp=80:8080"]);
    let svc = json(&s.ok(&["get", "service", "np", "-o", "json"]));
    let node_port = svc["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&node_port), "{svc}");
    assert!(svc["spec"]["clusterIP"].as_str().unwrap().starts_with("10.43."));
    s.ok(&["create", "job", "once", "--image=busybox:1.36", "--", "echo", "hi"]);
    let job = json(&s.ok(&["get", "job", "once", "-o", "json"]));
    assert_eq!(job["spec"]["backoffLimit"], 6);
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["command"],
        serde_json::json!(["echo", "hi"])
    );
    s.ok(&["create", "cronjob", "tick", "--image=busybox:1.36", "--schedule=*/5 * * * *"]);
    s.ok(&["create", "serviceaccount", "robot"]);
    s.ok(&["create", "role", "reader", "--verb=get,list", "--resource=pods"]);
    s.ok(&["create", "rolebinding", "reader", "--role=reader", "--serviceaccount=default:robot"]);
    let table = s.ok(&["get", "secret,svc,job,cronjob,sa,role,rolebinding", "-o", "name"]);
    for name in [
        "secret/creds",
        "service/np",
        "job.batch/once",
        "cronjob.batch/tick",
        "serviceaccount/robot",
        "role.rbac.authorization.k8s.io/reader",
        "rolebinding.rbac.authorization.k8s.io/reader",
    ] {
        assert!(table.lines().any(|l| l == name), "{name} missing:\n{table}");
    }
}

/// A Service changing type takes and gives back what its types need, as upstream's update does:
/// NodePorts when it becomes a NodePort (and free again when it goes back to ClusterIP, with
/// the fields that type does not use dropped), its ClusterIP when it becomes an ExternalName
/// (and a new one when it leaves it).
#[test]
fn service_type_changes_take_and_release_what_they_need() {
    let s = RkubeServer::start();
    let svc = |name: &str| json(&s.ok(&["get", "service", name, "-o", "json"]));
    s.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let ip = svc("web")["spec"]["clusterIP"].as_str().unwrap().to_string();
    s.ok(&["patch", "service", "web", "-p", r#"{"spec":{"type":"NodePort"}}"#]);
    let web = svc("web");
    let node_port = web["spec"]["ports"][0]["nodePort"].as_i64().unwrap_or(0);
    assert!((30000..=32767).contains(&node_port), "{web}");
    assert_eq!(
        (&web["spec"]["clusterIP"], &web["spec"]["externalTrafficPolicy"]),
        (&ip.clone().into(), &"Cluster".into())
    );
    // The ClusterIP is fixed once set; upstream lists that with the service's other errors.
    let moved = r#"{"spec":{"clusterIP":"10.43.200.200","sessionAffinity":"Sometimes"}}"#;
    let err = s.fails(&["patch", "service", "web", "-p", moved]);
    assert_eq!(
        err.trim(),
        "The Service \"web\" is invalid: \n* spec.clusterIPs[0]: Invalid value: []string{\"10.43.200.200\"}: may not change once set\n* spec.sessionAffinity: Unsupported value: \"Sometimes\": supported values: \"ClientIP\", \"None\""
    );
    let taken = format!("--node-port={node_port}");
    let err = s.fails(&["create", "service", "nodeport", "other", "--tcp=81:8080", &taken]);
    assert!(err.contains("provided port is already allocated"), "{err}");

    s.ok(&["patch", "service", "web", "-p", r#"{"spec":{"type":"ClusterIP"}}"#]);
    let web = svc("web");
    assert!(web["spec"]["ports"][0].get("nodePort").is_none(), "{web}");
    assert!(web["spec"].get("externalTrafficPolicy").is_none(), "{web}");
    s.ok(&["create", "service", "nodeport", "other", "--tcp=81:8080", &taken]);

    let external = r#"{"spec":{"type":"ExternalName","externalName":"db.example.com"}}"#;
    s.ok(&["patch", "service", "web", "-p", external]);
    let web = svc("web");
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        assert!(web["spec"].get(field).is_none(), "{field}: {web}");
    }
    // The IP went back to the pool: it can be asked for by name.
    let reuse = format!("--clusterip={ip}");
    s.ok(&["create", "service", "clusterip", "reuse", "--tcp=80:8080", &reuse]);
    let back = r#"{"spec":{"type":"ClusterIP","externalName":null}}"#;
    s.ok(&["patch", "service", "web", "-p", back]);
    let web = svc("web");
    let new_ip = web["spec"]["clusterIP"].as_str().unwrap_or("");
    assert!(new_ip.starts_with("10.43.") && new_ip != ip, "{web}");
    assert_eq!(web["spec"]["clusterIPs"], serde_json::json!([new_ip]));
}
