//! Validation of built-in kinds against the real `rkube server`, as a user meets it: stock
//! kubectl applying a manifest with mistakes gets upstream's `... is invalid:` lines (field
//! path, reason, message) and nothing is stored; ordinary manifests and kubectl's own
//! generators still pass; and defaults are filled on updates too, as upstream's decoding does.

use std::path::Path;

use rkube_conformance::cluster::RkubeServer;
use serde_json::Value;

const KUBECTL_1_27: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.27";

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: bad
spec:
  replicas: -2
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      restartPolicy: Sometimes
      containers:
      - name: c
        image: busybox
        imagePullPolicy: Maybe
        ports:
        - containerPort: 70000
          protocol: XTP
        - name: Bad_Name
          containerPort: 80
        env:
        - name: ""
        resources:
          requests: {cpu: "2"}
          limits: {cpu: "1"}
      - name: c
        image: busybox
"#;

const DEPLOYMENT_ERRORS: &str = r#"The Deployment "bad" is invalid: 
* spec.replicas: Invalid value: -2: must be greater than or equal to 0
* spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive
* spec.template.spec.containers[0].ports[0].protocol: Unsupported value: "XTP": supported values: "SCTP", "TCP", "UDP"
* spec.template.spec.containers[0].ports[1].name: Invalid value: "Bad_Name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)
* spec.template.spec.containers[0].env[0].name: Required value
* spec.template.spec.containers[0].imagePullPolicy: Unsupported value: "Maybe": supported values: "Always", "IfNotPresent", "Never"
* spec.template.spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1
* spec.template.spec.containers[1].name: Duplicate value: "c"
* spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"
* spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always"
"#;

const SERVICE: &str = r#"apiVersion: v1
kind: Service
metadata:
  name: bad-svc
spec:
  type: ClusterIP
  selector: {app: web}
  ports:
  - name: http
    port: 80
    protocol: HTTP
    nodePort: 30080
  - name: http
    port: 443
    targetPort: Not_A_Name
"#;

const SERVICE_ERRORS: &str = r#"The Service "bad-svc" is invalid: 
* spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"
* spec.ports[1].name: Duplicate value: "http"
* spec.ports[1].targetPort: Invalid value: "Not_A_Name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)
* spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'
"#;

const POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: bad-pod
spec:
  volumes:
  - name: data
    emptyDir: {}
    hostPath: {path: /tmp}
  - name: conf
    configMap: {name: settings}
  containers:
  - name: main
    image: busybox
    volumeMounts:
    - name: config
      mountPath: /etc/app
    livenessProbe:
      periodSeconds: 5
    env:
    - name: A
      value: x
      valueFrom:
        fieldRef: {fieldPath: metadata.name}
  tolerations:
  - key: k
    operator: Exists
    value: v
"#;

const POD_ERRORS: &str = r#"The Pod "bad-pod" is invalid: 
* spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type
* spec.containers[0].env[0].valueFrom: Invalid value: "": may not be specified when `value` is not empty
* spec.containers[0].volumeMounts[0].name: Not found: "config"
* spec.containers[0].livenessProbe: Required value: must specify a handler type
* spec.tolerations[0].operator: Invalid value: core.Toleration{Key:"k", Operator:"Exists", Value:"v", Effect:"", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'
"#;

const JOB: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: bad-job
spec:
  backoffLimit: -1
  template:
    spec:
      restartPolicy: Always
      containers:
      - name: main
        image: busybox
"#;

const JOB_ERRORS: &str = r#"The Job "bad-job" is invalid: 
* spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0
* spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"
"#;

/// `kubectl apply -f -` of `manifest` fails with exactly `errors`, and `what` is not there.
fn refused(s: &RkubeServer, kubectl: &Path, manifest: &str, errors: &str, what: &[&str]) {
    let out = s.kubectl_with(kubectl, &["apply", "-f", "-"], Some(manifest));
    assert_eq!(out.status.code(), Some(1), "{}: {out:?}", kubectl.display());
    assert_eq!(String::from_utf8_lossy(&out.stderr), errors, "{}", kubectl.display());
    let mut get = vec!["get"];
    get.extend_from_slice(what);
    let err = s.fails(&get);
    assert!(err.contains("NotFound"), "{err}");
}

#[test]
fn kubectl_shows_upstreams_field_errors_and_nothing_is_stored() {
    let s = RkubeServer::start();
    let kubectls = [s.kubectl.clone(), KUBECTL_1_27.into()];
    for kubectl in kubectls.iter().filter(|k| k.exists()) {
        refused(&s, kubectl, DEPLOYMENT, DEPLOYMENT_ERRORS, &["deployment", "bad"]);
        refused(&s, kubectl, SERVICE, SERVICE_ERRORS, &["service", "bad-svc"]);
        refused(&s, kubectl, POD, POD_ERRORS, &["pod", "bad-pod"]);
        refused(&s, kubectl, JOB, JOB_ERRORS, &["job", "bad-job"]);
    }
    let err = s.fails(&["create", "cronjob", "c", "--image=busybox", "--schedule=*/5 * * *"]);
    assert_eq!(
        err.trim(),
        "error: failed to create cronjob: CronJob.batch \"c\" is invalid: spec.schedule: Invalid value: \"*/5 * * *\": expected exactly 5 fields, found 4: [*/5 * * *]"
    );
}

const OTHER_KINDS: &str = r#"apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteSometimes]
  resources:
    requests: {storage: "0"}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  rules:
  - host: 10.0.0.1
    http:
      paths:
      - path: api
        pathType: Prefix
        backend:
          service: {name: web, port: {number: 80, name: http}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Roles, name: reader}
subjects:
- {kind: Robot, name: r2d2}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 5
  maxReplicas: 2
"#;

const OTHER_KINDS_ERRORS: &str = r#"Error from server (Invalid): error when creating "STDIN": PersistentVolumeClaim "data" is invalid: [spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod", spec.resources[storage]: Invalid value: "0": must be greater than zero]
Error from server (Invalid): error when creating "STDIN": Ingress.networking.k8s.io "web" is invalid: [spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address, spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path, spec.rules[0].http.paths[0].backend: Invalid value: "": cannot set both port name & port number]
Error from server (Invalid): error when creating "STDIN": RoleBinding.rbac.authorization.k8s.io "rb" is invalid: [roleRef.kind: Unsupported value: "Roles": supported values: "Role", "ClusterRole", subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"]
Error from server (Invalid): error when creating "STDIN": HorizontalPodAutoscaler.autoscaling "web" is invalid: spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`
"#;

const CLAIM: &str = "apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ok}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
";

/// Claims, Ingresses, RBAC bindings and autoscalers too: one multi-document apply, each
/// object refused with its own lines, none stored.
#[test]
fn other_kinds_are_refused_with_their_own_field_errors() {
    let s = RkubeServer::start();
    let out = s.kubectl_with(&s.kubectl, &["apply", "-f", "-"], Some(OTHER_KINDS));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), OTHER_KINDS_ERRORS);
    let err = s.fails(&["get", "pvc/data", "ingress/web", "rolebinding/rb", "hpa/web"]);
    assert_eq!(err.matches("NotFound").count(), 4, "{err}");
    // A claim's spec is fixed once created (an unbound claim may not even grow).
    s.ok_stdin(&["apply", "-f", "-"], CLAIM);
    let err =
        s.fails(&["patch", "pvc", "ok", "-p", r#"{"spec":{"accessModes":["ReadWriteMany"]}}"#]);
    assert_eq!(
        err.trim(),
        "The PersistentVolumeClaim \"ok\" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
    );
}

/// The kinds machines write and the ones that configure the cluster: webhook
/// configurations, CRDs, Leases, EndpointSlices, Nodes, FlowSchemas, and the newer pod, Job
/// and Service fields (sysctls, pod failure policies, external IPs).
const MORE_KINDS: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: vw}
webhooks:
- name: check
  sideEffects: Maybe
  admissionReviewVersions: [v1]
  timeoutSeconds: 60
  clientConfig:
    url: http://example.com/check
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.org
  scope: Galactic
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object}
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: l}
spec: {leaseDurationSeconds: -1}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: es}
addressType: IPv5
endpoints: []
---
apiVersion: v1
kind: Node
metadata: {name: node-a}
spec:
  taints:
  - {key: dedicated, effect: Sometimes}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: fs}
spec:
  matchingPrecedence: 20000
  priorityLevelConfiguration: {name: global-default}
---
apiVersion: v1
kind: Service
metadata: {name: ext}
spec:
  ports: [{port: 80}]
  externalIPs: [127.0.0.1]
---
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  podFailurePolicy:
    rules:
    - action: Explode
      onExitCodes: {operator: In, values: [1]}
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  hostNetwork: true
  securityContext:
    sysctls: [{name: net.core.somaxconn, value: "1024"}]
  containers: [{name: c, image: busybox}]
"#;

const MORE_KINDS_ERRORS: &str = r#"Error from server (Invalid): error when creating "STDIN": ValidatingWebhookConfiguration.admissionregistration.k8s.io "vw" is invalid: [webhooks[0].name: Invalid value: "check": should be a domain with at least three segments separated by dots, webhooks[0].sideEffects: Unsupported value: "Maybe": supported values: "None", "NoneOnDryRun", webhooks[0].timeoutSeconds: Invalid value: 60: the timeout value must be between 1 and 30 seconds, webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]]
Error from server (Invalid): error when creating "STDIN": CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" is invalid: [metadata.name: Invalid value: "widgets.example.com": must be spec.names.plural+"."+spec.group, spec.scope: Unsupported value: "Galactic": supported values: "Cluster", "Namespaced"]
Error from server (Invalid): error when creating "STDIN": Lease.coordination.k8s.io "l" is invalid: spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0
Error from server (Invalid): error when creating "STDIN": EndpointSlice.discovery.k8s.io "es" is invalid: addressType: Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6"
Error from server (Invalid): error when creating "STDIN": Node "node-a" is invalid: metadata.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"
Error from server (Invalid): error when creating "STDIN": FlowSchema.flowcontrol.apiserver.k8s.io "fs" is invalid: spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000
Error from server (Invalid): error when creating "STDIN": Service "ext" is invalid: spec.externalIPs[0]: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128)
Error from server (Invalid): error when creating "STDIN": Job.batch "j" is invalid: spec.podFailurePolicy.rules[0].action: Unsupported value: "Explode": supported values: "Count", "FailIndex", "FailJob", "Ignore"
Error from server (Invalid): error when creating "STDIN": Pod "p" is invalid: spec.securityContext.sysctls[0].name: Invalid value: "net.core.somaxconn": may not be specified when 'hostNetwork' is true
"#;

#[test]
fn cluster_configuration_and_machine_written_kinds_are_validated_too() {
    let s = RkubeServer::start_with(&["--disable", "scheduler,controllers,kubelet"]);
    // The account pods run as (no controller here makes it): without it, the pod would be
    // refused by the ServiceAccount admission plugin before its validation.
    s.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: default}\n",
    );
    let out = s.kubectl_with(&s.kubectl, &["apply", "-f", "-"], Some(MORE_KINDS));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), MORE_KINDS_ERRORS);
    let err = s.fails(&[
        "get",
        "validatingwebhookconfiguration/vw",
        "crd/widgets.example.com",
        "lease/l",
        "endpointslice/es",
        "node/node-a",
        "flowschema/fs",
        "service/ext",
        "job/j",
        "pod/p",
    ]);
    assert_eq!(err.matches("NotFound").count(), 9, "{err}");
    // The server's own `kubernetes` endpoints point at its loopback advertise address, which
    // a client may not write.
    let ip =
        s.ok(&["get", "endpoints", "kubernetes", "-o", "jsonpath={.subsets[0].addresses[0].ip}"]);
    assert_eq!(ip, "127.0.0.1");
}

/// The Status behind those lines: 422 `Invalid`, one cause per field with its reason.
#[tokio::test]
async fn the_status_lists_every_field_error_as_a_cause() {
    let s = RkubeServer::start();
    let client = s.kube_client().await.unwrap();
    let body = serde_json::to_vec(&job_json()).unwrap();
    let request = http::Request::post("/apis/batch/v1/namespaces/default/jobs")
        .header("content-type", "application/json")
        .body(body)
        .unwrap();
    let response = client.send(request.map(Into::into)).await.unwrap();
    assert_eq!(response.status(), 422);
    let bytes = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
    let status: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(status["details"]["kind"], "Job");
    assert_eq!(status["details"]["group"], "batch");
    let causes: Vec<(String, String)> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["reason"].as_str().unwrap().into(), c["field"].as_str().unwrap().into()))
        .collect();
    assert_eq!(
        causes,
        [
            ("FieldValueInvalid".to_string(), "spec.backoffLimit".to_string()),
            ("FieldValueRequired".to_string(), "spec.template.spec.restartPolicy".to_string()),
        ]
    );
}

/// [`JOB`] as JSON.
fn job_json() -> Value {
    serde_json::json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bad-job"},
        "spec": {"backoffLimit": -1, "template": {"spec": {"restartPolicy": "Always",
            "containers": [{"name": "main", "image": "busybox"}]}}}
    })
}

/// What kubectl's generators and everyday edits send is still accepted, and an update gets
/// the defaults a create gets (a container added by a patch has its pull policy).
#[test]
fn everyday_commands_pass_and_updates_are_defaulted() {
    let s = RkubeServer::start();
    for args in [
        &["create", "deployment", "web", "--image=nginx:1.27", "--replicas=2", "--port=80"][..],
        &["expose", "deployment", "web", "--port=80", "--target-port=http", "--type=NodePort"],
        &["create", "job", "j", "--image=busybox", "--", "echo", "hi"],
        &["create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", "--", "true"],
        &["run", "p", "--image=busybox", "--restart=Never", "--env=A=b", "--port=8080"],
        &["create", "service", "clusterip", "s", "--tcp=80:8080,443:8443"],
        &["create", "configmap", "cm", "--from-literal=a.b=c"],
        &["set", "image", "deploy/web", "nginx=nginx:1.28"],
        &["scale", "deploy", "web", "--replicas=0"],
        &[
            "set",
            "resources",
            "deploy",
            "web",
            "--limits=cpu=200m,memory=512Mi",
            "--requests=cpu=100m",
        ],
        &["autoscale", "deployment", "web", "--min=2", "--max=5", "--cpu-percent=80"],
        &["create", "pdb", "budget", "--selector=app=web", "--min-available=50%"],
        &["create", "role", "reader", "--verb=get,list", "--resource=pods"],
        &["create", "rolebinding", "reader", "--role=reader", "--serviceaccount=default:default"],
        &["create", "clusterrole", "health", "--verb=get", "--non-resource-url=/healthz"],
        &["create", "clusterrolebinding", "alice", "--clusterrole=view", "--user=alice"],
        &["create", "quota", "q", "--hard=pods=10,requests.cpu=2"],
        &["create", "priorityclass", "high", "--value=1000"],
        &[
            "create",
            "ingress",
            "simple",
            "--rule=foo.com/bar=svc1:8080,tls=my-cert",
            "--class=nginx",
        ],
    ] {
        s.ok(args);
    }
    assert_eq!(
        s.ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.strategy}"]),
        r#"{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"}"#
    );
    s.ok(&[
        "patch",
        "deploy",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"side","image":"busybox"}}]"#,
    ]);
    let side: Value = serde_json::from_str(&s.ok(&[
        "get",
        "deploy",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[1]}",
    ]))
    .unwrap();
    assert_eq!(side["imagePullPolicy"], "Always");
    assert_eq!(side["terminationMessagePolicy"], "File");
}
