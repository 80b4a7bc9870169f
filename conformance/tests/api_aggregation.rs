//! API aggregation: an extension API server written here (`rkube_conformance::extension_server`,
//! HTTPS with a CA the test makes) serves `wardle.example.com/v1alpha1` flunders behind a
//! selector-less Service whose hand-written Endpoints name an address of this machine (its
//! route checked local). An APIService hands the group to it: the availability controller
//! marks it Available, discovery (legacy and aggregated) lists it, kubectl gets and lists
//! flunders through rkube, which authorizes first and forwards the user in `X-Remote-*`
//! headers with its front-proxy client certificate (the extension server trusts it from the
//! `extension-apiserver-authentication` ConfigMap). Its OpenAPI is merged into rkube's
//! (`kubectl explain`), every document of its v3 index listed and served, also that of a
//! group/version no APIService names (explained once one does). Broken Services make it unavailable with
//! upstream's reasons and requests get 503; an APIService for `metrics.k8s.io` replaces
//! rkube's own metrics API until it is deleted; a Local APIService changes nothing.

use std::time::Duration;

use rkube_conformance::cluster::RkubeServer;
use rkube_conformance::extension_server::{
    ExtensionServer, CORE_TITLE, OTHER_VERSION, OTHER_VERSION_DESCRIPTION, REFERENCE_DESCRIPTION,
};
use rkube_conformance::node::assert_route_is_local;
use rkube_conformance::streaming::{WebSocketClient, CLOSE, TEXT};
use rkube_conformance::webhook::{local_non_loopback_ipv4, TestCa};
use serde_json::{json, Value};

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The `Available` condition of an APIService: (status, reason, message).
fn available(s: &RkubeServer, name: &str) -> (String, String, String) {
    let out = s.kubectl(&["get", "apiservice", name, "-o", "json"]);
    let obj: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let conditions = obj["status"]["conditions"].as_array().cloned().unwrap_or_default();
    let c = conditions.iter().find(|c| c["type"] == "Available").cloned().unwrap_or(Value::Null);
    let text = |k: &str| c[k].as_str().unwrap_or("").to_string();
    (text("status"), text("reason"), text("message"))
}

fn wait_available(s: &RkubeServer, name: &str, want: (&str, &str, &str)) {
    s.wait_until(&format!("{name} Available = {want:?}"), Duration::from_secs(40), || {
        let got = available(s, name);
        (got.0 == want.0 && got.1 == want.1 && got.2 == want.2, format!("{got:?}"))
    });
}

fn api_service(name: &str, group: &str, version: &str, ca_bundle: &str) -> String {
    json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
           "metadata": {"name": name},
           "spec": {"group": group, "version": version,
                    "service": {"namespace": "wardle", "name": "api", "port": 443},
                    "caBundle": ca_bundle, "groupPriorityMinimum": 1000, "versionPriority": 15}})
    .to_string()
}

#[test]
fn an_extension_api_server_serves_its_group_through_rkube() {
    let mut s = RkubeServer::start();

    // What extension servers read to trust this server.
    let cm: Value = serde_json::from_str(&s.ok(&[
        "get",
        "configmap",
        "extension-apiserver-authentication",
        "-n",
        "kube-system",
        "-o",
        "json",
    ]))
    .expect("json");
    let data = &cm["data"];
    let cluster_ca = std::fs::read_to_string(s.data_dir.path().join("pki/ca.crt")).unwrap();
    assert_eq!(data["client-ca-file"], cluster_ca.as_str());
    assert_eq!(data["requestheader-username-headers"], r#"["X-Remote-User"]"#);
    assert_eq!(data["requestheader-group-headers"], r#"["X-Remote-Group"]"#);
    assert_eq!(data["requestheader-extra-headers-prefix"], r#"["X-Remote-Extra-"]"#);
    assert_eq!(data["requestheader-allowed-names"], r#"["front-proxy-client"]"#);
    let front_proxy_ca = data["requestheader-client-ca-file"].as_str().expect("a CA").to_string();
    assert!(front_proxy_ca.contains("BEGIN CERTIFICATE") && front_proxy_ca != cluster_ca);
    let allowed: Vec<String> =
        serde_json::from_str(data["requestheader-allowed-names"].as_str().unwrap()).unwrap();

    // rkube itself authenticates front proxies: a client with the front-proxy client
    // certificate is the user its X-Remote-* headers name; the same headers from an
    // ordinary client are ignored; the proxy's certificate without a user is refused.
    let headers = [
        "X-Remote-User: alice",
        "X-Remote-Group: devs",
        "X-Remote-Group: ops",
        "X-Remote-Extra-Acme.com%2Fproject: apollo",
    ];
    let (code, info) = review_as_front_proxy(&s, &headers);
    assert_eq!(code, 201, "{info}");
    assert_eq!(info["username"], "alice", "{info}");
    assert_eq!(info["groups"], json!(["devs", "ops", "system:authenticated"]));
    assert_eq!(info["extra"], json!({"acme.com/project": ["apollo"]}));
    let mut admin_args: Vec<&str> = Vec::new();
    for h in &headers {
        admin_args.extend(["-H", h]);
    }
    let admin = s.curl_body(
        &admin_args,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(admin.code, 201, "{admin:?}");
    let admin: Value = serde_json::from_str(&admin.body).unwrap();
    assert_ne!(admin["status"]["userInfo"]["username"], "alice", "{admin}");
    assert!(
        admin["status"]["userInfo"]["groups"].to_string().contains("system:masters"),
        "{admin}"
    );
    let (code, _) = review_as_front_proxy(&s, &[]);
    assert_eq!(code, 401);

    // The extension server behind a Service.
    let ip = local_non_loopback_ipv4().expect("this machine has a non-loopback IPv4 address");
    assert_route_is_local(&ip.to_string());
    let ca = TestCa::new("rkube aggregation test CA");
    let ext =
        ExtensionServer::start(ip, &ca, &["api.wardle.svc"], front_proxy_ca.as_bytes(), allowed);
    let port = ext.addr.port();
    let service = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "wardle"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "wardle"},
         "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}},
        {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "api", "namespace": "wardle"},
         "subsets": [{"addresses": [{"ip": ip.to_string()}], "ports": [{"name": "https", "port": port}]}]},
    ]});
    s.ok_stdin(&["apply", "-f", "-"], &service.to_string());
    let name = "v1alpha1.wardle.example.com";
    s.ok_stdin(
        &["apply", "-f", "-"],
        &api_service(name, "wardle.example.com", "v1alpha1", &ca.bundle()),
    );
    wait_available(&s, name, ("True", "Passed", "all checks passed"));
    let table = s.ok(&["get", "apiservice", name]);
    assert!(table.contains("wardle/api") && table.contains("True"), "{table}");

    // Discovery: kubectl finds the resource, with its short name.
    let resources = s.ok(&["api-resources", "--api-group=wardle.example.com"]);
    assert!(
        resources.contains("flunders")
            && resources.contains("fl ")
            && resources.contains("wardle.example.com/v1alpha1")
            && resources.contains("Flunder"),
        "{resources}"
    );
    // Legacy discovery lists the group; /apis/<group> is answered here.
    let groups = s.curl(&[], "/apis");
    assert_eq!(groups.code, 200, "{}", groups.body);
    let groups: Value = serde_json::from_str(&groups.body).unwrap();
    let wardle = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "wardle.example.com")
        .cloned()
        .expect("the group in /apis");
    assert_eq!(wardle["preferredVersion"]["groupVersion"], "wardle.example.com/v1alpha1");
    let group = s.curl(&[], "/apis/wardle.example.com");
    assert_eq!(group.code, 200, "{}", group.body);
    assert!(group.body.contains(r#""kind":"APIGroup""#), "{}", group.body);
    // Aggregated discovery has its resources.
    let accept = format!("Accept: {AGGREGATED}");
    let aggregated = s.curl(&["-H", &accept], "/apis");
    assert_eq!(aggregated.header("content-type"), [AGGREGATED]);
    let aggregated: Value = serde_json::from_str(&aggregated.body).unwrap();
    let item = aggregated["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == "wardle.example.com")
        .cloned()
        .expect("the group in aggregated discovery");
    let version = &item["versions"][0];
    assert_eq!(version["version"], "v1alpha1");
    assert_eq!(version["freshness"], "Current");
    assert_eq!(version["resources"][0]["resource"], "flunders");
    assert_eq!(version["resources"][0]["scope"], "Namespaced");
    assert_eq!(version["resources"][0]["responseKind"]["kind"], "Flunder");

    // The extension's OpenAPI, merged into rkube's: kubectl explain reads its v3 document
    // (listed in /openapi/v3) and its v2 definitions.
    s.wait_until("kubectl explain knows flunders", Duration::from_secs(40), || {
        let out = s.kubectl(&["explain", "flunders.spec"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (text.contains(REFERENCE_DESCRIPTION), text + &String::from_utf8_lossy(&out.stderr))
    });
    let explained = s.ok(&["explain", "flunders"]);
    assert!(explained.contains("KIND:       Flunder"), "{explained}");
    assert!(explained.contains("Flunder is an example type"), "{explained}");
    assert!(
        explained
            .lines()
            .any(|l| l.trim_start().starts_with("spec") && l.contains("<FlunderSpec>")),
        "{explained}"
    );
    let spec = s.ok(&["explain", "flunders.spec.reference"]);
    assert!(
        spec.contains("FIELD: reference <string>") && spec.contains(REFERENCE_DESCRIPTION),
        "{spec}"
    );
    let v2 = s.ok(&["explain", "--output=plaintext-openapiv2", "flunders.spec"]);
    assert!(v2.contains("reference\t<string>") && v2.contains(REFERENCE_DESCRIPTION), "{v2}");
    // The extension's ObjectMeta is not rkube's: merged as kube-aggregator merges it, under
    // a new name its references follow, rkube's own left as it is.
    let merged: Value = serde_json::from_str(&s.curl(&[], "/openapi/v2").body).unwrap();
    let meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    let definitions = &merged["definitions"];
    assert!(definitions[meta]["properties"]["uid"].is_object(), "rkube's ObjectMeta kept");
    let theirs = &definitions[format!("{meta}_v2")]["properties"];
    assert_eq!(theirs.as_object().map(|p| p.len()), Some(2), "{theirs}");
    assert_eq!(
        definitions["com.example.wardle.v1alpha1.Flunder"]["properties"]["metadata"]["$ref"],
        format!("#/definitions/{meta}_v2")
    );
    let v2_meta = s.ok(&["explain", "--output=plaintext-openapiv2", "flunders.metadata"]);
    assert!(!v2_meta.contains("uid\t<string>") && v2_meta.contains("name\t<string>"), "{v2_meta}");
    let index: Value = serde_json::from_str(&s.curl(&[], "/openapi/v3").body).unwrap();
    assert!(index["paths"]["apis/apps/v1"].is_object(), "rkube's own documents stay: {index}");
    // Every document the extension's v3 index lists is listed and served here, as upstream's
    // aggregator lists each extension's whole index: also that of a group/version no
    // APIService names. A path rkube serves itself (`api/v1`) stays rkube's.
    let other = format!("apis/wardle.example.com/{OTHER_VERSION}");
    let url = index["paths"][&other]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{other} is not in /openapi/v3: {index}"));
    let listed = s.curl(&[], url);
    assert_eq!(listed.code, 200, "{listed:?}");
    let doc: Value = serde_json::from_str(&listed.body).unwrap();
    let flunder =
        &doc["components"]["schemas"][format!("com.example.wardle.{OTHER_VERSION}.Flunder")];
    assert_eq!(flunder["description"], OTHER_VERSION_DESCRIPTION, "{doc}");
    let plain = s.curl(&[], &format!("/openapi/v3/{other}"));
    assert_eq!((plain.code, &plain.body), (200, &listed.body));
    let core = s.curl(&[], "/openapi/v3/api/v1");
    assert_eq!(core.code, 200, "{core:?}");
    assert!(!core.body.contains(CORE_TITLE) && core.body.contains("io.k8s.api.core.v1.Pod"));
    let fetched = ext.seen_with_user(&format!("/openapi/v3/{other}"));
    assert!(fetched.iter().any(|r| r.user.as_deref() == Some("system:aggregator")), "{fetched:?}");
    // Fetched as upstream's aggregator user.
    let fetched = ext.seen_with_user("/openapi/");
    assert!(
        fetched.iter().any(|r| r.path == "/openapi/v2"
            && r.user.as_deref() == Some("system:aggregator")
            && r.groups == ["system:masters"]
            && r.client_cn.as_deref() == Some("front-proxy-client")),
        "{fetched:?}"
    );

    // kubectl get, list and get by short name, through rkube.
    let list = s.ok(&["get", "flunders", "-n", "default"]);
    assert!(list.contains("alpha") && list.contains("beta"), "{list}");
    let alpha: Value = serde_json::from_str(&s.ok(&["get", "fl", "alpha", "-o", "json"])).unwrap();
    assert_eq!(alpha["spec"]["reference"], "ref-alpha");
    let missing = s.fails(&["get", "flunders", "gamma"]);
    assert!(missing.contains(r#"flunders.wardle.example.com "gamma" not found"#), "{missing}");
    // kubectl 1.27 (aggregated discovery v2beta1) finds and lists them too.
    let old_kubectl = std::path::Path::new("/usr/lib/google-cloud-sdk/bin/kubectl.1.27");
    let resources =
        s.ok_with(old_kubectl, &["api-resources", "--api-group=wardle.example.com"], None);
    assert!(resources.contains("flunders"), "{resources}");
    let list = s.ok_with(old_kubectl, &["get", "fl", "-o", "name"], None);
    assert_eq!(list.lines().count(), 2, "{list}");
    // The extension server saw the user through the headers, from the front proxy only.
    let seen = ext.seen_with_user("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders");
    let admin = seen.first().expect("a proxied request").clone();
    assert_eq!(admin.user.as_deref(), Some("system:admin"));
    assert!(admin.groups.contains(&"system:masters".to_string()), "{admin:?}");
    assert!(admin.groups.contains(&"system:authenticated".to_string()), "{admin:?}");
    assert_eq!(admin.client_cn.as_deref(), Some("front-proxy-client"));
    assert!(!admin.credentials, "credentials were forwarded: {admin:?}");

    // Proxied requests are counted as any other.
    let metrics = s.curl(&[], "/metrics");
    assert!(
        metrics.body.lines().any(|l| l.starts_with("apiserver_request_total")
            && l.contains(r#"group="wardle.example.com""#)
            && l.contains(r#"resource="flunders""#)),
        "no request metrics for the aggregated group"
    );

    // Raw HTTPS: get and a watch that streams.
    let beta = s.curl(&[], "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/beta");
    assert_eq!(beta.code, 200, "{}", beta.body);
    assert!(beta.body.contains(r#""name":"beta""#), "{}", beta.body);
    let watch = s.curl(
        &["--max-time", "4", "-N"],
        "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders?watch=true",
    );
    assert_eq!(watch.code, 200, "{watch:?}");
    let events: Vec<Value> =
        watch.body.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(events.len(), 2, "{}", watch.body);
    assert_eq!(events[1]["type"], "ADDED");
    assert_eq!(events[1]["object"]["metadata"]["name"], "beta");

    // A connection upgrade (an exec-style subresource) goes through: rkube answers 101 and
    // splices both ways; the extension server knows the user from the headers.
    let echo = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/alpha/echo";
    let mut ws = WebSocketClient::connect(&s, echo, "echo.wardle.example.com");
    assert_eq!(ws.status, 101, "{}", ws.head);
    let head = ws.head.to_ascii_lowercase();
    assert!(head.contains("sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo="), "{}", ws.head);
    ws.send(TEXT, b"hello");
    assert_eq!(ws.read(), (TEXT, b"system:admin: hello".to_vec()));
    let long = "x".repeat(300);
    ws.send(TEXT, long.as_bytes());
    assert_eq!(ws.read(), (TEXT, format!("system:admin: {long}").into_bytes()));
    ws.send(CLOSE, b"");
    assert_eq!(ws.read().0, CLOSE);
    let upgraded = ext.seen_with_user(echo);
    assert_eq!(upgraded.len(), 1, "{upgraded:?}");
    assert_eq!(upgraded[0].client_cn.as_deref(), Some("front-proxy-client"));
    assert!(!upgraded[0].credentials, "{upgraded:?}");
    // Without an upgrade the extension server's own refusal comes back.
    let plain = s.curl(&[], echo);
    assert_eq!(plain.code, 400, "{plain:?}");
    assert!(plain.body.contains("Upgrade request required"), "{}", plain.body);

    // rkube authorizes before it proxies: a user without RBAC permission never gets there.
    let refused = s.fails(&["get", "flunders", "--as=someone"]);
    assert!(
        refused.contains(
            r#"User "someone" cannot list resource "flunders" in API group "wardle.example.com""#
        ),
        "{refused}"
    );
    assert!(ext.seen_with_user("/apis/").iter().all(|r| r.user.as_deref() != Some("someone")));
    // An impersonated user with permission is forwarded as that user, with the impersonation
    // headers removed.
    s.ok(&[
        "create",
        "clusterrole",
        "flunder-reader",
        "--verb=get,list",
        "--resource=flunders.wardle.example.com",
    ]);
    s.ok(&[
        "create",
        "clusterrolebinding",
        "flunder-reader",
        "--clusterrole=flunder-reader",
        "--user=reader",
    ]);
    s.wait_until("reader may list flunders", Duration::from_secs(20), || {
        let out = s.kubectl(&["get", "flunders", "--as=reader", "--as-group=readers"]);
        (out.status.success(), String::from_utf8_lossy(&out.stderr).to_string())
    });
    let reader = ext
        .seen_with_user("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")
        .into_iter()
        .find(|r| r.user.as_deref() == Some("reader"))
        .expect("the impersonated user reached the extension server");
    assert!(reader.groups.contains(&"readers".to_string()), "{reader:?}");
    assert!(!reader.credentials, "{reader:?}");

    // rkube's own group/versions have their Local APIServices, as kube-apiserver registers
    // them; applying one changes nothing.
    wait_available(&s, "v1.", ("True", "Local", "Local APIServices are always available"));
    let listed = s.ok(&["get", "apiservices"]);
    for want in ["v1.apps", "v2.autoscaling", "v1.rbac.authorization.k8s.io"] {
        assert!(listed.lines().any(|l| l.starts_with(want) && l.contains("Local")), "{listed}");
    }
    let label = s.ok(&["get", "apiservice", "v1.apps", "-o", "jsonpath={.metadata.labels}"]);
    assert!(label.contains(r#""kube-aggregator.kubernetes.io/automanaged":"onstart""#), "{label}");
    let local = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                       "metadata": {"name": "v1.apps"},
                       "spec": {"group": "apps", "version": "v1",
                                "groupPriorityMinimum": 17800, "versionPriority": 15}});
    s.ok_stdin(&["apply", "-f", "-"], &local.to_string());
    wait_available(&s, "v1.apps", ("True", "Local", "Local APIServices are always available"));
    s.ok(&["get", "deployments", "-A"]);

    // An APIService for metrics.k8s.io replaces rkube's own metrics API; the extension
    // server refuses its discovery (no user in the headers), so it is unavailable and
    // requests get 503.
    let own = s.curl(&[], "/apis/metrics.k8s.io/v1beta1/nodes");
    assert_eq!(own.code, 200, "{}", own.body);
    let metrics = "v1beta1.metrics.k8s.io";
    s.ok_stdin(
        &["apply", "-f", "-"],
        &api_service(metrics, "metrics.k8s.io", "v1beta1", &ca.bundle()),
    );
    let url = "https://api.wardle.svc:443/apis/metrics.k8s.io/v1beta1";
    let message = format!("failing or missing response from {url}: bad status from {url}: 403");
    wait_available(&s, metrics, ("False", "FailedDiscoveryCheck", &message));
    s.wait_until("metrics.k8s.io goes to the APIService", Duration::from_secs(20), || {
        let r = s.curl(&[], "/apis/metrics.k8s.io/v1beta1/nodes");
        (r.code == 503, format!("{r:?}"))
    });
    let replaced = s.curl(&[], "/apis/metrics.k8s.io/v1beta1/nodes");
    assert_eq!(replaced.body, "service unavailable\n");
    assert_eq!(replaced.header("content-type"), ["text/plain; charset=utf-8"]);
    let top = s.fails(&["get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes"]);
    assert!(top.contains("the server is currently unable to handle the request"), "{top}");
    s.ok(&["delete", "apiservice", metrics]);
    s.wait_until("rkube's own metrics API is back", Duration::from_secs(20), || {
        let r = s.curl(&[], "/apis/metrics.k8s.io/v1beta1/nodes");
        (r.code == 200 && r.body.contains("NodeMetricsList"), format!("{r:?}"))
    });

    // A restart keeps the PKI: the extension server, which trusts the front-proxy CA it read
    // before, still gets the requests, and the ConfigMap says the same.
    // An automanaged APIService for something this server does not serve goes at the
    // restart; one of the user's own stays.
    for (name, labels) in [
        ("v1.gone.example.com", json!({"kube-aggregator.kubernetes.io/automanaged": "onstart"})),
        ("v1.kept.example.com", json!({})),
    ] {
        let group = name.trim_start_matches("v1.");
        let obj = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                         "metadata": {"name": name, "labels": labels},
                         "spec": {"group": group, "version": "v1",
                                  "groupPriorityMinimum": 100, "versionPriority": 10}});
        s.ok_stdin(&["create", "-f", "-"], &obj.to_string());
    }
    s.restart();
    let gone = s.fails(&["get", "apiservice", "v1.gone.example.com"]);
    assert!(gone.contains("NotFound") || gone.contains("not found"), "{gone}");
    s.ok(&["get", "apiservice", "v1.kept.example.com"]);
    let after: Value = serde_json::from_str(&s.ok(&[
        "get",
        "configmap",
        "extension-apiserver-authentication",
        "-n",
        "kube-system",
        "-o",
        "json",
    ]))
    .expect("json");
    assert_eq!(after["data"], *data);
    assert_eq!(
        after["metadata"]["resourceVersion"], cm["metadata"]["resourceVersion"],
        "an unchanged ConfigMap is not written again"
    );
    s.wait_until("flunders are served again", Duration::from_secs(40), || {
        let out = s.kubectl(&["get", "flunders", "beta", "-o", "name"]);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        (
            out.status.success() && stdout.contains("beta"),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    });

    // Broken Services: upstream's reasons, and 503 for the group's requests.
    s.ok(&["delete", "endpoints", "api", "-n", "wardle"]);
    wait_available(
        &s,
        name,
        ("False", "MissingEndpoints", r#"cannot find endpoints for service/api in "wardle""#),
    );
    let unavailable = s.curl(&[], "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders");
    assert_eq!(unavailable.code, 503, "{unavailable:?}");
    let out = s.fails(&["get", "flunders"]);
    assert!(out.contains("the server is currently unable to handle the request"), "{out}");
    let table = s.ok(&["get", "apiservice", name]);
    assert!(table.contains("False (MissingEndpoints)"), "{table}");
    // Discovery keeps the group, marked stale.
    let aggregated: Value = serde_json::from_str(&s.curl(&["-H", &accept], "/apis").body).unwrap();
    let item = aggregated["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == "wardle.example.com")
        .cloned()
        .expect("the group stays in aggregated discovery");
    assert_eq!(item["versions"][0]["freshness"], "Stale");
    s.ok(&["delete", "service", "api", "-n", "wardle"]);
    wait_available(
        &s,
        name,
        ("False", "ServiceNotFound", r#"service/api in "wardle" is not present"#),
    );
    // An unavailable extension's OpenAPI stays; a deleted APIService's goes.
    let index = s.curl(&[], "/openapi/v3").body;
    assert!(index.contains("apis/wardle.example.com/v1alpha1"), "{index}");
    s.ok(&["delete", "apiservice", name]);
    s.wait_until("the extension's OpenAPI is gone", Duration::from_secs(30), || {
        let index = s.curl(&[], "/openapi/v3").body;
        let v2 = s.curl(&[], "/openapi/v2").body;
        (
            !index.contains("wardle.example.com")
                && !v2.contains("com.example.wardle.v1alpha1.Flunder"),
            index,
        )
    });
    for path in ["/openapi/v3/apis/wardle.example.com/v1alpha1", &format!("/openapi/v3/{other}")] {
        let gone = s.curl(&[], path);
        assert_eq!(gone.code, 404, "{gone:?}");
    }
    let v2: Value = serde_json::from_str(&s.curl(&[], "/openapi/v2").body).unwrap();
    assert!(v2["definitions"]["io.k8s.api.apps.v1.Deployment"].is_object());

    // An ExternalName Service is reached at its externalName and the APIService's port, as
    // upstream's default service resolver does (here `localhost`, where a second extension
    // server listens; its certificate is for the Service's name).
    let allowed: Vec<String> =
        serde_json::from_str(data["requestheader-allowed-names"].as_str().unwrap()).unwrap();
    let loopback = ExtensionServer::start(
        std::net::Ipv4Addr::LOCALHOST.into(),
        &ca,
        &["external.wardle.svc"],
        front_proxy_ca.as_bytes(),
        allowed,
    );
    let external = json!({"apiVersion": "v1", "kind": "Service",
                          "metadata": {"name": "external", "namespace": "wardle"},
                          "spec": {"type": "ExternalName", "externalName": "localhost"}});
    s.ok_stdin(&["apply", "-f", "-"], &external.to_string());
    let mut obj: Value =
        serde_json::from_str(&api_service(name, "wardle.example.com", "v1alpha1", &ca.bundle()))
            .unwrap();
    obj["spec"]["service"] =
        json!({"namespace": "wardle", "name": "external", "port": loopback.addr.port()});
    s.ok_stdin(&["apply", "-f", "-"], &obj.to_string());
    wait_available(&s, name, ("True", "Passed", "all checks passed"));
    let list = s.ok(&["get", "flunders", "-o", "name"]);
    assert_eq!(list.lines().count(), 2, "{list}");
    let reached = loopback.seen_with_user("/apis/wardle.example.com/v1alpha1/namespaces/default");
    assert!(
        reached.iter().any(|r| r.user.as_deref() == Some("system:admin")),
        "the ExternalName's host was not reached: {reached:?}"
    );

    // The extension's other group/version, once an APIService names it too: kubectl explain
    // reads its v3 document.
    let beta = format!("{OTHER_VERSION}.wardle.example.com");
    obj["metadata"]["name"] = json!(beta);
    obj["spec"]["version"] = json!(OTHER_VERSION);
    s.ok_stdin(&["apply", "-f", "-"], &obj.to_string());
    wait_available(&s, &beta, ("True", "Passed", "all checks passed"));
    let api_version = format!("--api-version=wardle.example.com/{OTHER_VERSION}");
    s.wait_until("kubectl explain reads the other version", Duration::from_secs(40), || {
        let out = s.kubectl(&["explain", "flunders", &api_version]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (text.contains(OTHER_VERSION_DESCRIPTION), text + &String::from_utf8_lossy(&out.stderr))
    });
}

/// A SelfSubjectReview over raw HTTPS with the front-proxy client certificate and `headers`:
/// (status code, the review's `status.userInfo`).
fn review_as_front_proxy(s: &RkubeServer, headers: &[&str]) -> (u16, Value) {
    let pki = s.data_dir.path().join("pki");
    let (cert, key) = (pki.join("front-proxy-client.crt"), pki.join("front-proxy-client.key"));
    let mut args = vec!["--cert", cert.to_str().unwrap(), "--key", key.to_str().unwrap()];
    for h in headers {
        args.extend(["-H", h]);
    }
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let out = s.curl_body(
        &args,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        review.to_string().as_bytes(),
    );
    let body: Value = serde_json::from_str(&out.body).unwrap_or(Value::Null);
    (out.code, body["status"]["userInfo"].clone())
}

#[test]
fn requestheader_flags_name_the_headers_and_the_proxies_trusted() {
    let mut s = RkubeServer::start_with(&[
        "--requestheader-username-headers=X-Proxy-User",
        "--requestheader-group-headers=X-Proxy-Group",
        "--requestheader-extra-headers-prefix=X-Proxy-Extra-",
    ]);
    let data = |s: &RkubeServer| -> Value {
        let cm = s.ok(&[
            "get",
            "configmap",
            "extension-apiserver-authentication",
            "-n",
            "kube-system",
            "-o",
            "jsonpath={.data}",
        ]);
        serde_json::from_str(&cm).expect("json")
    };
    let published = data(&s);
    assert_eq!(published["requestheader-username-headers"], r#"["X-Proxy-User"]"#);
    assert_eq!(published["requestheader-group-headers"], r#"["X-Proxy-Group"]"#);
    assert_eq!(published["requestheader-extra-headers-prefix"], r#"["X-Proxy-Extra-"]"#);
    let (code, user) = review_as_front_proxy(
        &s,
        &["X-Proxy-User: bob", "X-Proxy-Group: qa", "X-Proxy-Extra-Team: blue"],
    );
    assert_eq!(code, 201, "{user}");
    assert_eq!(user["username"], "bob");
    assert_eq!(user["groups"], json!(["qa", "system:authenticated"]));
    assert_eq!(user["extra"], json!({"team": ["blue"]}));
    // The default names mean nothing now: no user, so 401.
    let (code, _) = review_as_front_proxy(&s, &["X-Remote-User: alice"]);
    assert_eq!(code, 401);

    // A proxy whose name is not allowed is no one.
    s.restart_with(&["--requestheader-allowed-names=other-proxy"]);
    assert_eq!(data(&s)["requestheader-allowed-names"], r#"["other-proxy"]"#);
    let (code, _) = review_as_front_proxy(&s, &["X-Remote-User: alice"]);
    assert_eq!(code, 401);
    // Any name, when the list is empty.
    s.restart_with(&["--requestheader-allowed-names="]);
    assert_eq!(data(&s)["requestheader-allowed-names"], "[]");
    let (code, user) = review_as_front_proxy(&s, &["X-Remote-User: alice"]);
    assert_eq!((code, &user["username"]), (201, &json!("alice")), "{user}");
}
