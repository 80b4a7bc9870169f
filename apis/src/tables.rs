//! Server-side table printing: the `meta.k8s.io/v1 Table` columns and cells `kubectl get`
//! shows for each resource.
//!
//! kubectl asks for a Table and prints what the server sends, so the column names, types,
//! priorities and cell formatting here follow kube-apiserver v1.33's printers (the
//! `pkg/printers/internalversion` handlers, the default `Name`/`Created At` convertor for
//! kinds without a printer, and the aggregator's APIService convertor). Like kube-apiserver,
//! [`cells`] always returns the wide (`priority: 1`) cells too; kubectl drops them unless
//! asked for `-o wide`.
//!
//! Objects are the JSON as stored, so every field may be missing: a missing field prints as
//! upstream prints the defaulted or zero value, never a panic.

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use crate::resources::ResourceInfo;
use docs::*;

/// One column of a table, as `meta.k8s.io/v1 TableColumnDefinition` carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub kind: &'static str,
    /// `name` for the column holding the object's name, else empty.
    pub format: &'static str,
    pub description: &'static str,
    /// 0 for default columns, 1 for those kubectl shows only with `-o wide`.
    pub priority: i32,
}

const fn col(name: &'static str, kind: &'static str, description: &'static str) -> Column {
    Column { name, kind, format: "", description, priority: 0 }
}

const fn wide(name: &'static str, kind: &'static str, description: &'static str) -> Column {
    Column { name, kind, format: "", description, priority: 1 }
}

const fn text(name: &'static str, description: &'static str) -> Column {
    col(name, "string", description)
}

const NAME: Column =
    Column { name: "Name", kind: "string", format: "name", description: D_NAME, priority: 0 };
const AGE: Column = text("Age", D_CREATED);
const CONTAINERS: Column = wide("Containers", "string", "Names of each container in the template.");
const IMAGES: Column =
    wide("Images", "string", "Images referenced by each container in the template.");
const WEBHOOKS: Column = col(
    "Webhooks",
    "integer",
    "Webhooks indicates the number of webhooks registered in this configuration",
);

/// How one resource is printed: each resource's strategy names its printer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Printer {
    Pod,
    PodTemplate,
    PodDisruptionBudget,
    ReplicationController,
    ReplicaSet,
    DaemonSet,
    Job,
    CronJob,
    Service,
    Ingress,
    IngressClass,
    StatefulSet,
    Endpoints,
    Node,
    Event,
    Namespace,
    Secret,
    ServiceAccount,
    PersistentVolume,
    PersistentVolumeClaim,
    ComponentStatus,
    Deployment,
    HorizontalPodAutoscaler,
    ConfigMap,
    NetworkPolicy,
    RoleBinding,
    ClusterRoleBinding,
    CertificateSigningRequest,
    Lease,
    StorageClass,
    ControllerRevision,
    ResourceQuota,
    PriorityClass,
    RuntimeClass,
    VolumeAttachment,
    EndpointSlice,
    CsiNode,
    CsiDriver,
    CsiStorageCapacity,
    MutatingWebhook,
    ValidatingWebhook,
    ValidatingAdmissionPolicy,
    ValidatingAdmissionPolicyBinding,
    FlowSchema,
    PriorityLevelConfiguration,
    ServiceCidr,
    IpAddress,
    ApiService,
    /// kube-apiserver's default convertor for built-in kinds without a printer.
    CreatedAt,
    /// Everything else.
    NameAge,
}

fn printer(info: &ResourceInfo) -> Printer {
    info.strategy.printer()
}

/// The columns of `info`'s table, in order, wide ones included.
pub fn columns(info: &ResourceInfo) -> Vec<Column> {
    use Printer::*;
    let cols: &[Column] = match printer(info) {
        Pod => &[
            NAME,
            text("Ready", "The aggregate readiness state of this pod for accepting traffic."),
            text("Status", "The aggregate status of the containers in this pod."),
            text(
                "Restarts",
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            ),
            AGE,
            wide("IP", "string", D_POD_IP),
            wide("Node", "string", D_POD_NODE),
            wide("Nominated Node", "string", D_POD_NOMINATED),
            wide("Readiness Gates", "string", D_POD_GATES),
        ],
        PodTemplate => &[
            NAME,
            text("Containers", "Names of each container in the template."),
            text("Images", "Images referenced by each container in the template."),
            text("Pod Labels", "The labels for the pod template."),
        ],
        PodDisruptionBudget => &[
            NAME,
            text("Min Available", "The minimum number of pods that must be available."),
            text("Max Unavailable", "The maximum number of pods that may be unavailable."),
            col(
                "Allowed Disruptions",
                "integer",
                "Calculated number of pods that may be disrupted at this time.",
            ),
            AGE,
        ],
        ReplicationController => &[
            NAME,
            col("Desired", "integer", D_RC_REPLICAS),
            col("Current", "integer", D_RC_CURRENT),
            col("Ready", "integer", D_RC_READY),
            AGE,
            CONTAINERS,
            IMAGES,
            wide("Selector", "string", D_RC_SELECTOR),
        ],
        ReplicaSet => &[
            NAME,
            col("Desired", "integer", D_RS_REPLICAS),
            col("Current", "integer", D_RS_CURRENT),
            col("Ready", "integer", D_RS_READY),
            AGE,
            CONTAINERS,
            IMAGES,
            wide("Selector", "string", D_RS_SELECTOR),
        ],
        DaemonSet => &[
            NAME,
            col("Desired", "integer", D_DS_DESIRED),
            col("Current", "integer", D_DS_CURRENT),
            col("Ready", "integer", D_DS_READY),
            col("Up-to-date", "integer", D_DS_UPDATED),
            col("Available", "integer", D_DS_AVAILABLE),
            text("Node Selector", D_NODE_SELECTOR),
            AGE,
            CONTAINERS,
            IMAGES,
            wide("Selector", "string", D_DS_SELECTOR),
        ],
        Job => &[
            NAME,
            text("Status", "Status of the job."),
            text("Completions", D_JOB_SUCCEEDED),
            text("Duration", "Time required to complete the job."),
            AGE,
            CONTAINERS,
            IMAGES,
            wide("Selector", "string", D_JOB_SELECTOR),
        ],
        CronJob => &[
            NAME,
            text("Schedule", D_CJ_SCHEDULE),
            text("Timezone", D_CJ_TIMEZONE),
            col("Suspend", "boolean", D_CJ_SUSPEND),
            col("Active", "integer", D_CJ_ACTIVE),
            text("Last Schedule", D_CJ_LAST),
            AGE,
            CONTAINERS,
            IMAGES,
            wide("Selector", "string", D_JOB_SELECTOR),
        ],
        Service => &[
            NAME,
            text("Type", D_SVC_TYPE),
            text("Cluster-IP", D_SVC_CLUSTER_IP),
            text("External-IP", D_SVC_EXTERNAL_IPS),
            text("Port(s)", D_SVC_PORTS),
            AGE,
            wide("Selector", "string", D_SVC_SELECTOR),
        ],
        Ingress => &[
            NAME,
            text(
                "Class",
                "The name of the IngressClass resource that should be used for additional configuration",
            ),
            text(
                "Hosts",
                "Hosts that incoming requests are matched against before the ingress rule",
            ),
            text("Address", "Address is a list containing ingress points for the load-balancer"),
            text("Ports", "Ports of TLS configurations that open"),
            AGE,
        ],
        IngressClass => &[
            NAME,
            text("Controller", "Controller that is responsible for handling this class"),
            text("Parameters", "A reference to a resource with additional parameters"),
            AGE,
        ],
        StatefulSet => &[
            NAME,
            text("Ready", "Number of the pod with ready state"),
            AGE,
            CONTAINERS,
            IMAGES,
        ],
        Endpoints => &[NAME, text("Endpoints", D_EP_SUBSETS), AGE],
        Node => &[
            NAME,
            text("Status", "The status of the node"),
            text("Roles", "The roles of the node"),
            AGE,
            text("Version", D_NODE_KUBELET),
            wide("Internal-IP", "string", D_NODE_ADDRESSES),
            wide("External-IP", "string", D_NODE_ADDRESSES),
            wide("OS-Image", "string", D_NODE_OS_IMAGE),
            wide("Kernel-Version", "string", D_NODE_KERNEL),
            wide("Container-Runtime", "string", D_NODE_RUNTIME),
        ],
        Event => &[
            text("Last Seen", D_EV_LAST),
            text("Type", D_EV_TYPE),
            text("Reason", D_EV_REASON),
            text("Object", D_EV_OBJECT),
            wide("Subobject", "string", D_EV_FIELD_PATH),
            wide("Source", "string", D_EV_SOURCE),
            text("Message", D_EV_MESSAGE),
            wide("First Seen", "string", D_EV_FIRST),
            wide("Count", "string", D_EV_COUNT),
            Column { priority: 1, ..NAME },
        ],
        Namespace => &[NAME, text("Status", "The status of the namespace"), AGE],
        Secret => &[NAME, text("Type", D_SECRET_TYPE), text("Data", D_SECRET_DATA), AGE],
        ServiceAccount => &[NAME, text("Secrets", D_SA_SECRETS), AGE],
        PersistentVolume => &[
            NAME,
            text("Capacity", D_PV_CAPACITY),
            text("Access Modes", D_PV_ACCESS),
            text("Reclaim Policy", D_PV_RECLAIM),
            text("Status", D_PV_PHASE),
            text("Claim", D_PV_CLAIM),
            text("StorageClass", "StorageClass of the pv"),
            text("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
            text("Reason", D_PV_REASON),
            AGE,
            wide("VolumeMode", "string", D_PV_MODE),
        ],
        PersistentVolumeClaim => &[
            NAME,
            text("Status", D_PVC_PHASE),
            text("Volume", D_PVC_VOLUME),
            text("Capacity", D_PVC_CAPACITY),
            text("Access Modes", D_PVC_ACCESS),
            text("StorageClass", "StorageClass of the pvc"),
            text("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
            AGE,
            wide("VolumeMode", "string", D_PVC_MODE),
        ],
        ComponentStatus => &[
            NAME,
            text("Status", "Status of the component conditions"),
            text("Message", "Message of the component conditions"),
            text("Error", "Error of the component conditions"),
        ],
        Deployment => &[
            NAME,
            text("Ready", "Number of the pod with ready state"),
            text("Up-to-date", D_DEPLOY_UPDATED),
            text("Available", D_DEPLOY_AVAILABLE),
            AGE,
            CONTAINERS,
            IMAGES,
            wide("Selector", "string", D_DEPLOY_SELECTOR),
        ],
        HorizontalPodAutoscaler => &[
            NAME,
            text("Reference", D_HPA_REF),
            text("Targets", D_HPA_METRICS),
            text("MinPods", D_HPA_MIN),
            text("MaxPods", D_HPA_MAX),
            text("Replicas", D_HPA_CURRENT),
            AGE,
        ],
        ConfigMap => &[NAME, text("Data", D_CM_DATA), AGE],
        NetworkPolicy => &[NAME, text("Pod-Selector", D_NETPOL_SELECTOR), AGE],
        RoleBinding => &[
            NAME,
            text("Role", D_RB_ROLE),
            AGE,
            wide("Users", "string", "Users in the roleBinding"),
            wide("Groups", "string", "Groups in the roleBinding"),
            wide("ServiceAccounts", "string", "ServiceAccounts in the roleBinding"),
        ],
        ClusterRoleBinding => &[
            NAME,
            text("Role", D_CRB_ROLE),
            AGE,
            wide("Users", "string", "Users in the clusterRoleBinding"),
            wide("Groups", "string", "Groups in the clusterRoleBinding"),
            wide("ServiceAccounts", "string", "ServiceAccounts in the clusterRoleBinding"),
        ],
        CertificateSigningRequest => &[
            NAME,
            AGE,
            text("SignerName", D_CSR_SIGNER),
            text("Requestor", D_CSR_REQUEST),
            text("RequestedDuration", D_CSR_EXPIRATION),
            text("Condition", D_CSR_CONDITIONS),
        ],
        Lease => &[NAME, text("Holder", D_LEASE_HOLDER), AGE],
        StorageClass => &[
            NAME,
            text("Provisioner", D_SC_PROVISIONER),
            text("ReclaimPolicy", D_SC_RECLAIM),
            text("VolumeBindingMode", D_SC_BINDING),
            text("AllowVolumeExpansion", D_SC_EXPANSION),
            AGE,
        ],
        ControllerRevision => &[
            NAME,
            text("Controller", "Controller of the object"),
            text("Revision", D_CR_REVISION),
            AGE,
        ],
        ResourceQuota => &[
            NAME,
            text(
                "Request",
                "Request represents a minimum amount of cpu/memory that a container may consume.",
            ),
            text(
                "Limit",
                "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
            ),
            AGE,
        ],
        PriorityClass => &[
            NAME,
            col("Value", "integer", D_PC_VALUE),
            col("Global-Default", "boolean", D_PC_DEFAULT),
            AGE,
            text("PreemptionPolicy", D_PC_PREEMPTION),
        ],
        // Upstream documents this column with a field ObjectMeta does not have: empty.
        RuntimeClass => &[NAME, text("Handler", ""), AGE],
        VolumeAttachment => &[
            NAME,
            Column { format: "name", ..text("Attacher", D_VA_ATTACHER) },
            text("PV", D_VA_PV),
            text("Node", D_VA_NODE),
            col("Attached", "boolean", D_VA_ATTACHED),
            AGE,
        ],
        EndpointSlice => &[
            NAME,
            text("AddressType", D_EPS_ADDRESS_TYPE),
            text("Ports", D_EPS_PORTS),
            text("Endpoints", D_EPS_ENDPOINTS),
            AGE,
        ],
        CsiNode => &[
            NAME,
            col(
                "Drivers",
                "integer",
                "Drivers indicates the number of CSI drivers registered on the node",
            ),
            AGE,
        ],
        CsiDriver => &[
            NAME,
            col("AttachRequired", "boolean", D_CSID_ATTACH),
            col("PodInfoOnMount", "boolean", D_CSID_POD_INFO),
            col("StorageCapacity", "boolean", D_CSID_CAPACITY),
            text("TokenRequests", D_CSID_TOKENS),
            col("RequiresRepublish", "boolean", D_CSID_REPUBLISH),
            text("Modes", D_CSID_MODES),
            AGE,
        ],
        CsiStorageCapacity => {
            &[NAME, text("StorageClassName", D_CSISC_CLASS), text("Capacity", D_CSISC_CAPACITY)]
        }
        MutatingWebhook | ValidatingWebhook => &[NAME, WEBHOOKS, AGE],
        ValidatingAdmissionPolicy => &[
            NAME,
            col(
                "Validations",
                "integer",
                "Validations indicates the number of validation rules defined in this configuration",
            ),
            text(
                "ParamKind",
                "ParamKind specifies the kind of resources used to parameterize this policy",
            ),
            AGE,
        ],
        ValidatingAdmissionPolicyBinding => &[
            NAME,
            text(
                "PolicyName",
                "PolicyName indicates the policy definition which the policy binding binded to",
            ),
            text(
                "ParamRef",
                "ParamRef indicates the param resource which sets the configration param",
            ),
            AGE,
        ],
        FlowSchema => &[
            NAME,
            text("PriorityLevel", D_FS_PL),
            text("MatchingPrecedence", D_FS_PRECEDENCE),
            text("DistinguisherMethod", D_FS_DISTINGUISHER),
            AGE,
            text("MissingPL", "references a broken or non-existent PriorityLevelConfiguration"),
        ],
        PriorityLevelConfiguration => &[
            NAME,
            text("Type", D_PL_TYPE),
            text("NominalConcurrencyShares", D_PL_SHARES),
            text("Queues", D_PL_QUEUES),
            text("HandSize", D_PL_HAND),
            text("QueueLengthLimit", D_PL_QLIMIT),
            AGE,
        ],
        ServiceCidr => &[NAME, text("CIDRs", D_SCIDR_CIDRS), AGE],
        // Upstream prints no Age for IP addresses.
        IpAddress => &[NAME, text("ParentRef", D_IP_PARENT)],
        ApiService => &[
            NAME,
            text("Service", "The reference to the service that hosts this API endpoint."),
            text("Available", "Whether this service is available."),
            AGE,
        ],
        CreatedAt => &[NAME, col("Created At", "date", D_CREATED)],
        NameAge => &[NAME, AGE],
    };
    cols.to_vec()
}

/// One row's cells for `obj`, in the order of [`columns`]; `now` is what ages count from.
pub fn cells(info: &ResourceInfo, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    use Printer::*;
    let name = || Value::from(st(obj, &["metadata", "name"]));
    let age = || Value::from(since(time(obj, &["metadata", "creationTimestamp"]), now));
    match printer(info) {
        Pod => pod(obj, now),
        PodTemplate => {
            let (names, images) = containers(at(obj, &["template", "spec", "containers"]));
            vec![
                name(),
                names.into(),
                images.into(),
                format_labels(at(obj, &["template", "metadata", "labels"])).into(),
            ]
        }
        PodDisruptionBudget => vec![
            name(),
            int_or_string(at(obj, &["spec", "minAvailable"])).into(),
            int_or_string(at(obj, &["spec", "maxUnavailable"])).into(),
            int(obj, &["status", "disruptionsAllowed"]).into(),
            age(),
        ],
        ReplicationController => {
            let (names, images) = containers(at(obj, &["spec", "template", "spec", "containers"]));
            vec![
                name(),
                int_or(obj, &["spec", "replicas"], 1).into(),
                int(obj, &["status", "replicas"]).into(),
                int(obj, &["status", "readyReplicas"]).into(),
                age(),
                names.into(),
                images.into(),
                format_labels(at(obj, &["spec", "selector"])).into(),
            ]
        }
        ReplicaSet => {
            let (names, images) = containers(at(obj, &["spec", "template", "spec", "containers"]));
            vec![
                name(),
                int_or(obj, &["spec", "replicas"], 1).into(),
                int(obj, &["status", "replicas"]).into(),
                int(obj, &["status", "readyReplicas"]).into(),
                age(),
                names.into(),
                images.into(),
                format_label_selector(at(obj, &["spec", "selector"])).into(),
            ]
        }
        DaemonSet => {
            let (names, images) = containers(at(obj, &["spec", "template", "spec", "containers"]));
            vec![
                name(),
                int(obj, &["status", "desiredNumberScheduled"]).into(),
                int(obj, &["status", "currentNumberScheduled"]).into(),
                int(obj, &["status", "numberReady"]).into(),
                int(obj, &["status", "updatedNumberScheduled"]).into(),
                int(obj, &["status", "numberAvailable"]).into(),
                format_labels(at(obj, &["spec", "template", "spec", "nodeSelector"])).into(),
                age(),
                names.into(),
                images.into(),
                format_label_selector(at(obj, &["spec", "selector"])).into(),
            ]
        }
        Job => job(obj, now),
        CronJob => {
            let last = match time(obj, &["status", "lastScheduleTime"]) {
                Some(t) => since(Some(t), now),
                None => "<none>".to_string(),
            };
            let template = &["spec", "jobTemplate", "spec", "template", "spec", "containers"];
            let (names, images) = containers(at(obj, template));
            vec![
                name(),
                st(obj, &["spec", "schedule"]).into(),
                at(obj, &["spec", "timeZone"]).and_then(Value::as_str).unwrap_or("<none>").into(),
                // Defaulted to false when stored.
                if boolean(obj, &["spec", "suspend"]).unwrap_or(false) { "True" } else { "False" }
                    .into(),
                (arr(obj, &["status", "active"]).len() as i64).into(),
                last.into(),
                age(),
                names.into(),
                images.into(),
                format_label_selector(at(obj, &["spec", "jobTemplate", "spec", "selector"])).into(),
            ]
        }
        Service => service(obj, now),
        Ingress => {
            let class =
                at(obj, &["spec", "ingressClassName"]).and_then(Value::as_str).unwrap_or("<none>");
            let ports = if arr(obj, &["spec", "tls"]).is_empty() { "80" } else { "80, 443" };
            vec![
                name(),
                class.into(),
                ingress_hosts(arr(obj, &["spec", "rules"])).into(),
                load_balancer_ips(obj).into(),
                ports.into(),
                age(),
            ]
        }
        IngressClass => {
            let parameters = match at(obj, &["spec", "parameters"]) {
                Some(p) if p.is_object() => {
                    let mut s = st(p, &["kind"]).to_string();
                    if let Some(group) = at(p, &["apiGroup"]).and_then(Value::as_str) {
                        s = format!("{s}.{group}");
                    }
                    format!("{s}/{}", st(p, &["name"]))
                }
                _ => "<none>".to_string(),
            };
            vec![name(), st(obj, &["spec", "controller"]).into(), parameters.into(), age()]
        }
        StatefulSet => {
            let (names, images) = containers(at(obj, &["spec", "template", "spec", "containers"]));
            let ready = format!(
                "{}/{}",
                int(obj, &["status", "readyReplicas"]),
                int_or(obj, &["spec", "replicas"], 1)
            );
            vec![name(), ready.into(), age(), names.into(), images.into()]
        }
        Endpoints => vec![name(), endpoints(arr(obj, &["subsets"])).into(), age()],
        Node => node(obj, now),
        Event => event(info, obj, now),
        Namespace => vec![name(), or(st(obj, &["status", "phase"]), "Active").into(), age()],
        Secret => vec![
            name(),
            or(st(obj, &["type"]), "Opaque").into(),
            (len(obj, &["data"]) as i64).into(),
            age(),
        ],
        ServiceAccount => vec![name(), (arr(obj, &["secrets"]).len() as i64).into(), age()],
        PersistentVolume => persistent_volume(obj, now),
        PersistentVolumeClaim => persistent_volume_claim(obj, now),
        ComponentStatus => {
            let (mut status, mut message, mut error) = ("Unknown", "", "");
            if let Some(c) =
                arr(obj, &["conditions"]).iter().find(|c| st(c, &["type"]) == "Healthy")
            {
                status = if st(c, &["status"]) == "True" { "Healthy" } else { "Unhealthy" };
                message = st(c, &["message"]);
                error = st(c, &["error"]);
            }
            vec![name(), status.into(), message.into(), error.into()]
        }
        Deployment => {
            let (names, images) = containers(at(obj, &["spec", "template", "spec", "containers"]));
            let ready = format!(
                "{}/{}",
                int(obj, &["status", "readyReplicas"]),
                int_or(obj, &["spec", "replicas"], 1)
            );
            let selector = match label_selector(at(obj, &["spec", "selector"])) {
                Ok(s) => s,
                Err(()) => "<invalid>".to_string(),
            };
            vec![
                name(),
                ready.into(),
                int(obj, &["status", "updatedReplicas"]).into(),
                int(obj, &["status", "availableReplicas"]).into(),
                age(),
                names.into(),
                images.into(),
                selector.into(),
            ]
        }
        HorizontalPodAutoscaler => {
            let reference = format!(
                "{}/{}",
                st(obj, &["spec", "scaleTargetRef", "kind"]),
                st(obj, &["spec", "scaleTargetRef", "name"])
            );
            vec![
                name(),
                reference.into(),
                hpa_targets(obj).into(),
                int_or(obj, &["spec", "minReplicas"], 1).to_string().into(),
                int(obj, &["spec", "maxReplicas"]).into(),
                int(obj, &["status", "currentReplicas"]).into(),
                age(),
            ]
        }
        ConfigMap => {
            let n = len(obj, &["data"]) + len(obj, &["binaryData"]);
            vec![name(), (n as i64).into(), age()]
        }
        NetworkPolicy => {
            // The pod selector is not optional: a missing one is the empty selector.
            let selector = at(obj, &["spec", "podSelector"]).cloned().unwrap_or(Value::Null);
            let selector = if selector.is_null() { serde_json::json!({}) } else { selector };
            vec![name(), format_label_selector(Some(&selector)).into(), age()]
        }
        RoleBinding | ClusterRoleBinding => {
            let role =
                format!("{}/{}", st(obj, &["roleRef", "kind"]), st(obj, &["roleRef", "name"]));
            let (users, groups, sas) = subjects(arr(obj, &["subjects"]));
            vec![name(), role.into(), age(), users.into(), groups.into(), sas.into()]
        }
        CertificateSigningRequest => {
            let duration = match opt_int(obj, &["spec", "expirationSeconds"]) {
                Some(s) => human_duration(Duration::seconds(s)),
                None => "<none>".to_string(),
            };
            vec![
                name(),
                age(),
                or_none(st(obj, &["spec", "signerName"])).into(),
                st(obj, &["spec", "username"]).into(),
                duration.into(),
                csr_condition(obj).into(),
            ]
        }
        Lease => vec![name(), st(obj, &["spec", "holderIdentity"]).into(), age()],
        StorageClass => {
            let mut display = st(obj, &["metadata", "name"]).to_string();
            let annotations = ["metadata", "annotations"];
            let is_default = |key: &str| {
                at(obj, &annotations).and_then(|a| a.get(key)).and_then(Value::as_str)
                    == Some("true")
            };
            if is_default("storageclass.kubernetes.io/is-default-class")
                || is_default("storageclass.beta.kubernetes.io/is-default-class")
            {
                display.push_str(" (default)");
            }
            vec![
                display.into(),
                st(obj, &["provisioner"]).into(),
                or(st(obj, &["reclaimPolicy"]), "Delete").into(),
                or(st(obj, &["volumeBindingMode"]), "Immediate").into(),
                boolean(obj, &["allowVolumeExpansion"]).unwrap_or(false).into(),
                age(),
            ]
        }
        ControllerRevision => {
            let owner = arr(obj, &["metadata", "ownerReferences"])
                .iter()
                .find(|o| boolean(o, &["controller"]) == Some(true));
            let controller = match owner {
                Some(o) => {
                    // `group/version` or `version`; the group is what names the kind.
                    let api_version = st(o, &["apiVersion"]);
                    let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
                    let kind = st(o, &["kind"]);
                    let name = st(o, &["name"]);
                    match (kind, group) {
                        ("", "") => name.to_string(),
                        (kind, "") => format!("{}/{name}", kind.to_lowercase()),
                        (kind, group) => {
                            format!("{}/{name}", format!("{kind}.{group}").to_lowercase())
                        }
                    }
                }
                None => "<none>".to_string(),
            };
            vec![name(), controller.into(), int(obj, &["revision"]).into(), age()]
        }
        ResourceQuota => {
            let (request, limit) = resource_quota(obj);
            vec![name(), request.into(), limit.into(), age()]
        }
        PriorityClass => vec![
            name(),
            int(obj, &["value"]).into(),
            boolean(obj, &["globalDefault"]).unwrap_or(false).into(),
            age(),
            or(st(obj, &["preemptionPolicy"]), "PreemptLowerPriority").into(),
        ],
        RuntimeClass => vec![name(), st(obj, &["handler"]).into(), age()],
        VolumeAttachment => vec![
            name(),
            st(obj, &["spec", "attacher"]).into(),
            st(obj, &["spec", "source", "persistentVolumeName"]).into(),
            st(obj, &["spec", "nodeName"]).into(),
            boolean(obj, &["status", "attached"]).unwrap_or(false).into(),
            age(),
        ],
        EndpointSlice => vec![
            name(),
            st(obj, &["addressType"]).into(),
            slice_ports(arr(obj, &["ports"])).into(),
            slice_endpoints(arr(obj, &["endpoints"])).into(),
            age(),
        ],
        CsiNode => vec![name(), (arr(obj, &["spec", "drivers"]).len() as i64).into(), age()],
        CsiDriver => {
            let token_requests = match at(obj, &["spec", "tokenRequests"]) {
                Some(Value::Array(t)) => {
                    t.iter().map(|t| st(t, &["audience"])).collect::<Vec<_>>().join(",")
                }
                _ => "<unset>".to_string(),
            };
            // Defaulted to Persistent when stored.
            let modes = match at(obj, &["spec", "volumeLifecycleModes"]) {
                Some(Value::Array(m)) => {
                    m.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(",")
                }
                _ => "Persistent".to_string(),
            };
            vec![
                name(),
                boolean(obj, &["spec", "attachRequired"]).unwrap_or(true).into(),
                boolean(obj, &["spec", "podInfoOnMount"]).unwrap_or(false).into(),
                boolean(obj, &["spec", "storageCapacity"]).unwrap_or(false).into(),
                token_requests.into(),
                boolean(obj, &["spec", "requiresRepublish"]).unwrap_or(false).into(),
                or_none(&modes).into(),
                age(),
            ]
        }
        CsiStorageCapacity => {
            let capacity = match at(obj, &["capacity"]) {
                Some(q) if !q.is_null() => quantity(q),
                _ => "<unset>".to_string(),
            };
            vec![name(), st(obj, &["storageClassName"]).into(), capacity.into()]
        }
        MutatingWebhook | ValidatingWebhook => {
            vec![name(), (arr(obj, &["webhooks"]).len() as i64).into(), age()]
        }
        ValidatingAdmissionPolicy => {
            let param_kind = match at(obj, &["spec", "paramKind"]) {
                Some(p) if p.is_object() => {
                    format!("{}/{}", st(p, &["apiVersion"]), st(p, &["kind"]))
                }
                _ => "<unset>".to_string(),
            };
            vec![
                name(),
                (arr(obj, &["spec", "validations"]).len() as i64).into(),
                param_kind.into(),
                age(),
            ]
        }
        ValidatingAdmissionPolicyBinding => vec![
            name(),
            st(obj, &["spec", "policyName"]).into(),
            param_ref(at(obj, &["spec", "paramRef"])).into(),
            age(),
        ],
        FlowSchema => {
            let distinguisher = match at(obj, &["spec", "distinguisherMethod"]) {
                Some(d) if d.is_object() => st(d, &["type"]).to_string(),
                _ => "<none>".to_string(),
            };
            let missing = arr(obj, &["status", "conditions"])
                .iter()
                .find(|c| st(c, &["type"]) == "Dangling")
                .map(|c| st(c, &["status"]))
                .unwrap_or("?");
            vec![
                name(),
                st(obj, &["spec", "priorityLevelConfiguration", "name"]).into(),
                int(obj, &["spec", "matchingPrecedence"]).into(),
                distinguisher.into(),
                age(),
                missing.into(),
            ]
        }
        PriorityLevelConfiguration => {
            let none = || Value::from("<none>");
            let (mut shares, mut queues, mut hand, mut limit) = (none(), none(), none(), none());
            if let Some(limited) = at(obj, &["spec", "limited"]).filter(|l| l.is_object()) {
                // v1 defaults, applied when stored.
                shares = int_or(limited, &["nominalConcurrencyShares"], 30).into();
                if let Some(q) =
                    at(limited, &["limitResponse", "queuing"]).filter(|q| q.is_object())
                {
                    queues = int_or(q, &["queues"], 64).into();
                    hand = int_or(q, &["handSize"], 8).into();
                    limit = int_or(q, &["queueLengthLimit"], 50).into();
                }
            }
            vec![name(), st(obj, &["spec", "type"]).into(), shares, queues, hand, limit, age()]
        }
        ServiceCidr => vec![name(), strings(at(obj, &["spec", "cidrs"])).join(",").into(), age()],
        IpAddress => {
            let parent = match at(obj, &["spec", "parentRef"]) {
                Some(p) if p.is_object() => {
                    let (group, resource) = (st(p, &["group"]), st(p, &["resource"]));
                    let mut s = if group.is_empty() {
                        resource.to_lowercase()
                    } else {
                        format!("{resource}.{group}").to_lowercase()
                    };
                    let namespace = st(p, &["namespace"]);
                    if !namespace.is_empty() {
                        s = format!("{s}/{namespace}");
                    }
                    format!("{s}/{}", st(p, &["name"]))
                }
                _ => "<none>".to_string(),
            };
            vec![name(), parent.into()]
        }
        ApiService => {
            let service = match at(obj, &["spec", "service"]) {
                Some(s) if s.is_object() => {
                    format!("{}/{}", st(s, &["namespace"]), st(s, &["name"]))
                }
                _ => "Local".to_string(),
            };
            let available = arr(obj, &["status", "conditions"])
                .iter()
                .find(|c| st(c, &["type"]) == "Available")
                .map(|c| {
                    let (status, reason) = (st(c, &["status"]), st(c, &["reason"]));
                    if status == "True" || reason.is_empty() {
                        status.to_string()
                    } else {
                        format!("{status} ({reason})")
                    }
                })
                .unwrap_or_else(|| "Unknown".to_string());
            vec![name(), service.into(), available.into(), age()]
        }
        CreatedAt => {
            let created = time(obj, &["metadata", "creationTimestamp"])
                .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
                .unwrap_or_else(|| "0001-01-01T00:00:00Z".to_string());
            vec![name(), created.into()]
        }
        NameAge => vec![name(), age()],
    }
}

/// A duration for people, with two or three significant figures, as kubectl shows ages:
/// `59s`, `2m5s`, `10m`, `3h5m`, `20h`, `2d3h`, `400d`, `3y12d`, `9y`. Durations a little
/// below zero (clock skew) print `0s`; more negative ones `<invalid>`.
pub fn human_duration(d: Duration) -> String {
    // Whole units, truncated towards zero.
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = d.num_minutes();
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = d.num_hours();
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

// ---------------------------------------------------------------------------------------
// Per-kind rows that take more than a few lines.

fn pod(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let phase = st(obj, &["status", "phase"]);
    let mut reason = or(st(obj, &["status", "reason"]), phase).to_string();
    let conditions = arr(obj, &["status", "conditions"]);
    if conditions
        .iter()
        .any(|c| st(c, &["type"]) == "PodScheduled" && st(c, &["reason"]) == "SchedulingGated")
    {
        reason = "SchedulingGated".to_string();
    }

    let init_specs = arr(obj, &["spec", "initContainers"]);
    // Sidecars: init containers that keep running next to the app containers.
    let restartable =
        |name: &str| init_specs.iter().any(|c| st(c, &["name"]) == name && is_sidecar(c));
    let mut total = arr(obj, &["spec", "containers"]).len() as i64;
    total += init_specs.iter().filter(|c| is_sidecar(c)).count() as i64;
    let mut ready = 0i64;
    let mut restarts = 0i64;
    let mut sidecar_restarts = 0i64;
    let mut last_restart: Option<DateTime<Utc>> = None;
    let mut last_sidecar_restart: Option<DateTime<Utc>> = None;
    let later = |a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>| match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };

    let mut initializing = false;
    for (i, c) in arr(obj, &["status", "initContainerStatuses"]).iter().enumerate() {
        let count = int(c, &["restartCount"]);
        let finished = time(c, &["lastState", "terminated", "finishedAt"]);
        restarts += count;
        last_restart = later(last_restart, finished);
        let sidecar = restartable(st(c, &["name"]));
        if sidecar {
            sidecar_restarts += count;
            last_sidecar_restart = later(last_sidecar_restart, finished);
        }
        let terminated = at(c, &["state", "terminated"]).filter(|t| t.is_object());
        let waiting = at(c, &["state", "waiting"]).filter(|w| w.is_object());
        if terminated.is_some_and(|t| int(t, &["exitCode"]) == 0) {
            continue;
        }
        if sidecar && boolean(c, &["started"]) == Some(true) {
            if boolean(c, &["ready"]) == Some(true) {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            reason = match st(t, &["reason"]) {
                "" if int(t, &["signal"]) != 0 => format!("Init:Signal:{}", int(t, &["signal"])),
                "" => format!("Init:ExitCode:{}", int(t, &["exitCode"])),
                r => format!("Init:{r}"),
            };
        } else if let Some(r) =
            waiting.map(|w| st(w, &["reason"])).filter(|r| !r.is_empty() && *r != "PodInitializing")
        {
            reason = format!("Init:{r}");
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    let initialized = conditions
        .iter()
        .any(|c| st(c, &["type"]) == "Initialized" && st(c, &["status"]) == "True");
    if !initializing || initialized {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for c in arr(obj, &["status", "containerStatuses"]).iter().rev() {
            restarts += int(c, &["restartCount"]);
            last_restart = later(last_restart, time(c, &["lastState", "terminated", "finishedAt"]));
            let waiting = at(c, &["state", "waiting"]).filter(|w| w.is_object());
            let terminated = at(c, &["state", "terminated"]).filter(|t| t.is_object());
            let running = at(c, &["state", "running"]).is_some_and(Value::is_object);
            if let Some(r) = waiting.map(|w| st(w, &["reason"])).filter(|r| !r.is_empty()) {
                reason = r.to_string();
            } else if let Some(t) = terminated {
                reason = match st(t, &["reason"]) {
                    "" if int(t, &["signal"]) != 0 => format!("Signal:{}", int(t, &["signal"])),
                    "" => format!("ExitCode:{}", int(t, &["exitCode"])),
                    r => r.to_string(),
                };
            } else if boolean(c, &["ready"]) == Some(true) && running {
                has_running = true;
                ready += 1;
            }
        }
        // A pod whose finished containers report Completed while others still run.
        if reason == "Completed" && has_running {
            let pod_ready = conditions
                .iter()
                .any(|c| st(c, &["type"]) == "Ready" && st(c, &["status"]) == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.to_string();
        }
    }

    if at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|d| !d.is_null()) {
        if st(obj, &["status", "reason"]) == "NodeLost" {
            reason = "Unknown".to_string();
        } else if phase != "Succeeded" && phase != "Failed" {
            reason = "Terminating".to_string();
        }
    }

    let restarts = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", since(Some(t), now)),
        _ => restarts.to_string(),
    };

    // Older objects carry only the singular podIP.
    let ip = arr(obj, &["status", "podIPs"])
        .first()
        .map(|p| st(p, &["ip"]))
        .unwrap_or_else(|| st(obj, &["status", "podIP"]));
    let gates = arr(obj, &["spec", "readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let passing = gates
            .iter()
            .filter(|g| {
                let kind = st(g, &["conditionType"]);
                conditions
                    .iter()
                    .find(|c| st(c, &["type"]) == kind)
                    .is_some_and(|c| st(c, &["status"]) == "True")
            })
            .count();
        format!("{passing}/{}", gates.len())
    };

    vec![
        st(obj, &["metadata", "name"]).into(),
        format!("{ready}/{total}").into(),
        reason.into(),
        restarts.into(),
        since(time(obj, &["metadata", "creationTimestamp"]), now).into(),
        or_none(ip).into(),
        or_none(st(obj, &["spec", "nodeName"])).into(),
        or_none(st(obj, &["status", "nominatedNodeName"])).into(),
        readiness_gates.into(),
    ]
}

fn is_sidecar(container: &Value) -> bool {
    st(container, &["restartPolicy"]) == "Always"
}

fn job(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let succeeded = int(obj, &["status", "succeeded"]);
    let completions = match opt_int(obj, &["spec", "completions"]) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int(obj, &["spec", "parallelism"]) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration =
        match (time(obj, &["status", "startTime"]), time(obj, &["status", "completionTime"])) {
            (None, _) => String::new(),
            (Some(start), None) => human_duration(now - start),
            (Some(start), Some(end)) => human_duration(end - start),
        };
    // The first condition of a type decides whether the job has it.
    let conditions = arr(obj, &["status", "conditions"]);
    let has = |kind: &str| {
        conditions
            .iter()
            .find(|c| st(c, &["type"]) == kind)
            .is_some_and(|c| st(c, &["status"]) == "True")
    };
    let status = if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|d| !d.is_null()) {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = containers(at(obj, &["spec", "template", "spec", "containers"]));
    vec![
        st(obj, &["metadata", "name"]).into(),
        status.into(),
        completions.into(),
        duration.into(),
        since(time(obj, &["metadata", "creationTimestamp"]), now).into(),
        names.into(),
        images.into(),
        format_label_selector(at(obj, &["spec", "selector"])).into(),
    ]
}

fn service(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let kind = or(st(obj, &["spec", "type"]), "ClusterIP");
    let cluster_ip = strings(at(obj, &["spec", "clusterIPs"]))
        .first()
        .copied()
        .unwrap_or_else(|| st(obj, &["spec", "clusterIP"]));
    let external_ips = strings(at(obj, &["spec", "externalIPs"]));
    let external = match kind {
        "ClusterIP" | "NodePort" if !external_ips.is_empty() => external_ips.join(","),
        "ClusterIP" | "NodePort" => "<none>".to_string(),
        "LoadBalancer" => {
            let lb = load_balancer_ips(obj);
            let mut all: Vec<&str> = lb.split(',').filter(|s| !s.is_empty()).collect();
            all.extend(&external_ips);
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => st(obj, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = arr(obj, &["spec", "ports"])
        .iter()
        .map(|p| {
            let (port, protocol) = (int(p, &["port"]), or(st(p, &["protocol"]), "TCP"));
            match int(p, &["nodePort"]) {
                n if n > 0 => format!("{port}:{n}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    vec![
        st(obj, &["metadata", "name"]).into(),
        kind.into(),
        or_none(cluster_ip).into(),
        external.into(),
        or_none(&ports.join(",")).into(),
        since(time(obj, &["metadata", "creationTimestamp"]), now).into(),
        format_labels(at(obj, &["spec", "selector"])).into(),
    ]
}

/// The load balancer's addresses (IP, else hostname), sorted and unique. kube-apiserver
/// prints tables wide, so they are never clipped.
fn load_balancer_ips(obj: &Value) -> String {
    let mut ips: Vec<&str> = arr(obj, &["status", "loadBalancer", "ingress"])
        .iter()
        .map(|i| or(st(i, &["ip"]), st(i, &["hostname"])))
        .filter(|s| !s.is_empty())
        .collect();
    ips.sort_unstable();
    ips.dedup();
    ips.join(",")
}

fn ingress_hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut hosts = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == MAX {
            more = true;
        }
        let host = st(rule, &["host"]);
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    if hosts.is_empty() {
        return "*".to_string();
    }
    let list = hosts.join(",");
    if more {
        format!("{list} + {} more...", rules.len() - MAX)
    } else {
        list
    }
}

fn endpoints(subsets: &[Value]) -> String {
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    const MAX: usize = 3;
    let mut list = Vec::new();
    let mut more = false;
    let mut count = 0;
    for subset in subsets {
        let addresses = arr(subset, &["addresses"]);
        let ports = arr(subset, &["ports"]);
        if ports.is_empty() {
            // Headless services may have no ports.
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(st(a, &["ip"]).to_string());
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(st(a, &["ip"]), int(port, &["port"])));
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn slice_ports(ports: &[Value]) -> String {
    let list: Vec<String> = ports
        .iter()
        .map(|p| match (opt_int(p, &["port"]), at(p, &["name"]).and_then(Value::as_str)) {
            (Some(n), _) => n.to_string(),
            (None, Some(name)) => name.to_string(),
            (None, None) => "*".to_string(),
        })
        .collect();
    list_with_more(list, 3)
}

fn slice_endpoints(endpoints: &[Value]) -> String {
    let list: Vec<String> =
        endpoints.iter().flat_map(|e| strings(at(e, &["addresses"]))).map(str::to_string).collect();
    list_with_more(list, 3)
}

/// The first `max` items, then how many more; `<unset>` when there are none.
fn list_with_more(list: Vec<String>, max: usize) -> String {
    match list.len() {
        0 => "<unset>".to_string(),
        n if n > max => format!("{} + {} more...", list[..max].join(","), n - max),
        _ => list.join(","),
    }
}

fn node(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    // The last Ready condition wins, as upstream keys them by type.
    let mut status: Vec<String> = Vec::new();
    if let Some(c) =
        arr(obj, &["status", "conditions"]).iter().rev().find(|c| st(c, &["type"]) == "Ready")
    {
        status.push(if st(c, &["status"]) == "True" { "Ready" } else { "NotReady" }.to_string());
    }
    if status.is_empty() {
        status.push("Unknown".to_string());
    }
    if boolean(obj, &["spec", "unschedulable"]) == Some(true) {
        status.push("SchedulingDisabled".to_string());
    }

    let mut roles: Vec<&str> = Vec::new();
    if let Some(labels) = at(obj, &["metadata", "labels"]).and_then(Value::as_object) {
        for (key, value) in labels {
            if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.push(role);
                }
            } else if key == "kubernetes.io/role" {
                if let Some(v) = value.as_str().filter(|v| !v.is_empty()) {
                    roles.push(v);
                }
            }
        }
    }
    roles.sort_unstable();
    roles.dedup();

    let address = |kind: &str| {
        arr(obj, &["status", "addresses"])
            .iter()
            .find(|a| st(a, &["type"]) == kind)
            .map(|a| st(a, &["address"]).to_string())
            .unwrap_or_else(|| "<none>".to_string())
    };
    let info = |field: &str| or(st(obj, &["status", "nodeInfo", field]), "<unknown>").to_string();
    vec![
        st(obj, &["metadata", "name"]).into(),
        status.join(",").into(),
        or_none(&roles.join(",")).into(),
        since(time(obj, &["metadata", "creationTimestamp"]), now).into(),
        st(obj, &["status", "nodeInfo", "kubeletVersion"]).into(),
        address("InternalIP").into(),
        address("ExternalIP").into(),
        info("osImage").into(),
        info("kernelVersion").into(),
        info("containerRuntimeVersion").into(),
    ]
}

/// Core v1 events and events.k8s.io/v1 events print alike; the latter name their fields
/// differently.
fn event(info: &ResourceInfo, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let v1 = info.group == "events.k8s.io";
    let field = |core: &'static str, events: &'static str| if v1 { events } else { core };
    let involved = field("involvedObject", "regarding");

    let first = match time(obj, &[field("firstTimestamp", "deprecatedFirstTimestamp")]) {
        Some(t) => since(Some(t), now),
        None => since(time(obj, &["eventTime"]), now),
    };
    let mut last = match time(obj, &[field("lastTimestamp", "deprecatedLastTimestamp")]) {
        Some(t) => since(Some(t), now),
        None => first.clone(),
    };
    let mut count = int(obj, &[field("count", "deprecatedCount")]);
    match at(obj, &["series"]).filter(|s| s.is_object()) {
        Some(series) => {
            last = since(time(series, &["lastObservedTime"]), now);
            count = int(series, &["count"]);
        }
        // Singleton events of the new API have no count.
        None if count == 0 => count = 1,
        None => {}
    }

    let kind = st(obj, &[involved, "kind"]).to_lowercase();
    let target = match st(obj, &[involved, "name"]) {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let source = field("source", "deprecatedSource");
    let component = or(
        st(obj, &[source, "component"]),
        st(obj, &[field("reportingComponent", "reportingController")]),
    );
    let host = or(st(obj, &[source, "host"]), st(obj, &["reportingInstance"]));
    let source =
        if host.is_empty() { component.to_string() } else { format!("{component}, {host}") };

    vec![
        last.into(),
        st(obj, &["type"]).into(),
        st(obj, &["reason"]).into(),
        target.into(),
        st(obj, &[involved, "fieldPath"]).into(),
        source.into(),
        st(obj, &[field("message", "note")]).trim().into(),
        first.into(),
        count.into(),
        st(obj, &["metadata", "name"]).into(),
    ]
}

fn persistent_volume(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let claim = match at(obj, &["spec", "claimRef"]) {
        Some(c) if c.is_object() => format!("{}/{}", st(c, &["namespace"]), st(c, &["name"])),
        _ => String::new(),
    };
    let phase = if at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|d| !d.is_null()) {
        "Terminating"
    } else {
        st(obj, &["status", "phase"])
    };
    let class = match annotation(obj, "volume.beta.kubernetes.io/storage-class") {
        Some(c) => c,
        None => st(obj, &["spec", "storageClassName"]),
    };
    vec![
        st(obj, &["metadata", "name"]).into(),
        quantity_or_zero(at(obj, &["spec", "capacity", "storage"])).into(),
        access_modes(at(obj, &["spec", "accessModes"])).into(),
        st(obj, &["spec", "persistentVolumeReclaimPolicy"]).into(),
        phase.into(),
        claim.into(),
        class.into(),
        or_unset(at(obj, &["spec", "volumeAttributesClassName"])).into(),
        st(obj, &["status", "reason"]).into(),
        since(time(obj, &["metadata", "creationTimestamp"]), now).into(),
        or_unset(at(obj, &["spec", "volumeMode"])).into(),
    ]
}

fn persistent_volume_claim(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let phase = if at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|d| !d.is_null()) {
        "Terminating"
    } else {
        st(obj, &["status", "phase"])
    };
    let volume = st(obj, &["spec", "volumeName"]);
    // Capacity and access modes are the bound volume's; none before binding.
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity_or_zero(at(obj, &["status", "capacity", "storage"])),
            access_modes(at(obj, &["status", "accessModes"])),
        )
    };
    let class = match annotation(obj, "volume.beta.kubernetes.io/storage-class") {
        Some(c) => c,
        None => st(obj, &["spec", "storageClassName"]),
    };
    vec![
        st(obj, &["metadata", "name"]).into(),
        phase.into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        class.into(),
        or_unset(at(obj, &["spec", "volumeAttributesClassName"])).into(),
        since(time(obj, &["metadata", "creationTimestamp"]), now).into(),
        or_unset(at(obj, &["spec", "volumeMode"])).into(),
    ]
}

fn access_modes(modes: Option<&Value>) -> String {
    let modes = strings(modes);
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| modes.contains(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// `Targets` of an HPA: autoscaling/v2 metrics, or the v1 CPU target.
fn hpa_targets(obj: &Value) -> String {
    let specs = arr(obj, &["spec", "metrics"]);
    let statuses = arr(obj, &["status", "currentMetrics"]);
    if specs.is_empty() {
        return match opt_int(obj, &["spec", "targetCPUUtilizationPercentage"]) {
            Some(target) => {
                let current = match opt_int(obj, &["status", "currentCPUUtilizationPercentage"]) {
                    Some(c) => format!("{c}%"),
                    None => "<unknown>".to_string(),
                };
                format!("cpu: {current}/{target}%")
            }
            None => "<none>".to_string(),
        };
    }
    const MAX: usize = 2;
    let mut list = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i);
        // The status's source of the same type, when it reports one.
        let current_of =
            |source: &str| status.and_then(|s| at(s, &[source])).filter(|s| s.is_object());
        let item = match st(spec, &["type"]) {
            "External" | "Object" => {
                let source = if st(spec, &["type"]) == "External" { "external" } else { "object" };
                let target = at(spec, &[source, "target"]);
                match target.and_then(|t| at(t, &["averageValue"])).filter(|v| !v.is_null()) {
                    Some(avg) => {
                        let current = current_of(source)
                            .and_then(|c| at(c, &["current", "averageValue"]))
                            .filter(|v| !v.is_null())
                            .map(quantity)
                            .unwrap_or_else(|| "<unknown>".to_string());
                        format!("{current}/{} (avg)", quantity(avg))
                    }
                    None => {
                        let current = match current_of(source) {
                            Some(c) => quantity_or_nil(at(c, &["current", "value"])),
                            None => "<unknown>".to_string(),
                        };
                        let target = quantity_or_nil(target.and_then(|t| at(t, &["value"])));
                        format!("{current}/{target}")
                    }
                }
            }
            "Pods" => {
                let current = match current_of("pods") {
                    Some(c) => quantity_or_nil(at(c, &["current", "averageValue"])),
                    None => "<unknown>".to_string(),
                };
                let target = quantity_or_nil(at(spec, &["pods", "target", "averageValue"]));
                format!("{current}/{target}")
            }
            "Resource" | "ContainerResource" => {
                let source = if st(spec, &["type"]) == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let resource = st(spec, &[source, "name"]);
                let target = at(spec, &[source, "target"]);
                match target.and_then(|t| at(t, &["averageValue"])).filter(|v| !v.is_null()) {
                    Some(avg) => {
                        let current = match current_of(source) {
                            Some(c) => quantity_or_nil(at(c, &["current", "averageValue"])),
                            None => "<unknown>".to_string(),
                        };
                        format!("{resource}: {current}/{}", quantity(avg))
                    }
                    None => {
                        let current = current_of(source)
                            .and_then(|c| opt_int(c, &["current", "averageUtilization"]))
                            .map(|u| format!("{u}%"))
                            .unwrap_or_else(|| "<unknown>".to_string());
                        let target = target
                            .and_then(|t| opt_int(t, &["averageUtilization"]))
                            .map(|u| format!("{u}%"))
                            .unwrap_or_else(|| "<auto>".to_string());
                        format!("{resource}: {current}/{target}")
                    }
                }
            }
            _ => "<unknown type>".to_string(),
        };
        list.push(item);
    }
    let count = list.len();
    if count > MAX {
        format!("{} + {} more...", list[..MAX].join(", "), count - MAX)
    } else {
        list.join(", ")
    }
}

/// Users, groups and service accounts (`namespace/name`) a binding names, each `, `-joined.
fn subjects(subjects: &[Value]) -> (String, String, String) {
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for s in subjects {
        match st(s, &["kind"]) {
            "ServiceAccount" => sas.push(format!("{}/{}", st(s, &["namespace"]), st(s, &["name"]))),
            "User" => users.push(st(s, &["name"]).to_string()),
            "Group" => groups.push(st(s, &["name"]).to_string()),
            _ => {}
        }
    }
    (users.join(", "), groups.join(", "), sas.join(", "))
}

fn csr_condition(obj: &Value) -> String {
    let conditions = arr(obj, &["status", "conditions"]);
    let has = |kind: &str| conditions.iter().any(|c| st(c, &["type"]) == kind);
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !st(obj, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    status
}

/// `Request` and `Limit` of a quota: `resource: used/hard` pairs, sorted by resource, the
/// `limits.*` ones in the second.
fn resource_quota(obj: &Value) -> (String, String) {
    let Some(hard) = at(obj, &["status", "hard"]).and_then(Value::as_object) else {
        return (String::new(), String::new());
    };
    let mut names: Vec<&String> = hard.keys().collect();
    names.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for name in names {
        let used = quantity_or_zero(at(obj, &["status", "used", name]));
        let entry = format!("{name}: {used}/{}", quantity(&hard[name]));
        let pieces: Vec<&str> = name.split('.').collect();
        if pieces.len() > 1 && pieces[0] == "limits" {
            limits.push(entry);
        } else {
            requests.push(entry);
        }
    }
    (requests.join(", "), limits.join(", "))
}

fn param_ref(param_ref: Option<&Value>) -> String {
    let Some(p) = param_ref.filter(|p| p.is_object()) else {
        return "<unset>".to_string();
    };
    let (name, namespace) = (st(p, &["name"]), st(p, &["namespace"]));
    if !name.is_empty() {
        if namespace.is_empty() {
            // Cannot tell here whether the param is cluster-scoped.
            format!("*/{name}")
        } else {
            format!("{namespace}/{name}")
        }
    } else if let Some(selector) = at(p, &["selector"]).filter(|s| s.is_object()) {
        go_label_selector(selector)
    } else {
        "<unset>".to_string()
    }
}

/// A label selector the way Go's generated `LabelSelector.String()` prints it.
fn go_label_selector(selector: &Value) -> String {
    let mut labels: Vec<(&String, &Value)> = at(selector, &["matchLabels"])
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    labels.sort_by(|a, b| a.0.cmp(b.0));
    let labels: String =
        labels.iter().map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or(""))).collect();
    let expressions: String = arr(selector, &["matchExpressions"])
        .iter()
        .map(|e| {
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                st(e, &["key"]),
                st(e, &["operator"]),
                strings(at(e, &["values"])).join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

// ---------------------------------------------------------------------------------------
// Formatting shared by several kinds.

/// Container names and images of a pod template, each comma-joined.
fn containers(list: Option<&Value>) -> (String, String) {
    let list = list.and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    let names: Vec<&str> = list.iter().map(|c| st(c, &["name"])).collect();
    let images: Vec<&str> = list.iter().map(|c| st(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

/// A label map as `a=b,c=d`, sorted by key; `<none>` when empty.
fn format_labels(labels: Option<&Value>) -> String {
    let Some(labels) = labels.and_then(Value::as_object).filter(|l| !l.is_empty()) else {
        return "<none>".to_string();
    };
    let mut pairs: Vec<String> =
        labels.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
    pairs.sort();
    pairs.join(",")
}

/// A `metav1.LabelSelector` in selector syntax; `<none>` when it selects everything or
/// nothing, `<error>` when it is invalid.
fn format_label_selector(selector: Option<&Value>) -> String {
    match label_selector(selector) {
        Ok(s) if s.is_empty() => "<none>".to_string(),
        Ok(s) => s,
        Err(()) => "<error>".to_string(),
    }
}

/// A `metav1.LabelSelector` in selector syntax (`app=web,tier in (a,b),!canary`), its
/// requirements sorted by key; empty for a missing or empty selector.
fn label_selector(selector: Option<&Value>) -> Result<String, ()> {
    let Some(selector) = selector.filter(|s| s.is_object()) else {
        return Ok(String::new());
    };
    let mut requirements: Vec<(&str, String)> = Vec::new();
    if let Some(labels) = at(selector, &["matchLabels"]).and_then(Value::as_object) {
        for (key, value) in labels {
            requirements.push((key, format!("{key}={}", value.as_str().unwrap_or(""))));
        }
    }
    for e in arr(selector, &["matchExpressions"]) {
        let key = st(e, &["key"]);
        let mut values = strings(at(e, &["values"]));
        values.sort_unstable();
        let requirement = match (st(e, &["operator"]), values.is_empty()) {
            ("In", false) => format!("{key} in ({})", values.join(",")),
            ("NotIn", false) => format!("{key} notin ({})", values.join(",")),
            ("Exists", true) => key.to_string(),
            ("DoesNotExist", true) => format!("!{key}"),
            _ => return Err(()),
        };
        requirements.push((key, requirement));
    }
    requirements.sort_by(|a, b| a.0.cmp(b.0));
    Ok(requirements.into_iter().map(|(_, r)| r).collect::<Vec<_>>().join(","))
}

fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "N/A".to_string(),
    }
}

/// A resource quantity as stored (quantities are strings; tolerate numbers).
fn quantity(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "0".to_string(),
    }
}

/// A quantity that prints `0` when missing, as Go's zero `Quantity` does.
fn quantity_or_zero(v: Option<&Value>) -> String {
    v.map(quantity).unwrap_or_else(|| "0".to_string())
}

/// A `*Quantity` that prints `<nil>` when missing, as Go's does.
fn quantity_or_nil(v: Option<&Value>) -> String {
    v.filter(|v| !v.is_null()).map(quantity).unwrap_or_else(|| "<nil>".to_string())
}

/// Time since `t`, humanized; `<unknown>` without one.
fn since(t: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    match t {
        Some(t) => human_duration(now - t),
        None => "<unknown>".to_string(),
    }
}

fn or<'a>(s: &'a str, fallback: &'a str) -> &'a str {
    if s.is_empty() {
        fallback
    } else {
        s
    }
}

fn or_none(s: &str) -> String {
    or(s, "<none>").to_string()
}

/// An optional string field: `<unset>` when missing (not when empty).
fn or_unset(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or("<unset>").to_string()
}

// ---------------------------------------------------------------------------------------
// Reading the JSON without panicking.

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, key| v.get(key))
}

/// A string field, empty when missing or not a string.
fn st<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    at(v, path).and_then(Value::as_str).unwrap_or("")
}

fn opt_int(v: &Value, path: &[&str]) -> Option<i64> {
    let v = at(v, path)?;
    v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))
}

/// An integer field, 0 when missing.
fn int(v: &Value, path: &[&str]) -> i64 {
    opt_int(v, path).unwrap_or(0)
}

/// An integer field with the default the API server fills in.
fn int_or(v: &Value, path: &[&str], default: i64) -> i64 {
    opt_int(v, path).unwrap_or(default)
}

fn boolean(v: &Value, path: &[&str]) -> Option<bool> {
    at(v, path).and_then(Value::as_bool)
}

fn arr<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    at(v, path).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// The entries of a map (or items of a list) field.
fn len(v: &Value, path: &[&str]) -> usize {
    match at(v, path) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    at(obj, &["metadata", "annotations"]).and_then(|a| a.get(key)).and_then(Value::as_str)
}

/// A `metav1.Time` or `MicroTime`; none when missing, unparsable or Go's zero time.
fn time(v: &Value, path: &[&str]) -> Option<DateTime<Utc>> {
    let t = DateTime::parse_from_rfc3339(st(v, path)).ok()?.with_timezone(&Utc);
    (t != DateTime::<Utc>::from_naive_utc_and_offset(
        chrono::NaiveDate::from_ymd_opt(1, 1, 1)?.and_hms_opt(0, 0, 0)?,
        Utc,
    ))
    .then_some(t)
}

/// Column descriptions: the API field documentation upstream takes them from.
mod docs {
    pub(super) const D_NAME: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
    pub(super) const D_CREATED: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
    pub(super) const D_POD_IP: &str = "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.";
    pub(super) const D_POD_NODE: &str = "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename";
    pub(super) const D_POD_NOMINATED: &str = "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.";
    pub(super) const D_POD_GATES: &str = "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates";
    pub(super) const D_NODE_SELECTOR: &str = "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/";
    pub(super) const D_RC_REPLICAS: &str = "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller";
    pub(super) const D_RC_SELECTOR: &str = "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
    pub(super) const D_RC_CURRENT: &str = "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller";
    pub(super) const D_RC_READY: &str =
        "The number of ready replicas for this replication controller.";
    pub(super) const D_RS_REPLICAS: &str = "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset";
    pub(super) const D_RS_SELECTOR: &str = "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
    pub(super) const D_RS_CURRENT: &str = "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset";
    pub(super) const D_RS_READY: &str =
        "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.";
    pub(super) const D_DS_DESIRED: &str = "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";
    pub(super) const D_DS_CURRENT: &str = "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";
    pub(super) const D_DS_READY: &str = "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.";
    pub(super) const D_DS_UPDATED: &str =
        "The total number of nodes that are running updated daemon pod";
    pub(super) const D_DS_AVAILABLE: &str = "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)";
    pub(super) const D_DS_SELECTOR: &str = "A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
    pub(super) const D_JOB_SUCCEEDED: &str = "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.";
    pub(super) const D_JOB_SELECTOR: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
    pub(super) const D_CJ_SCHEDULE: &str =
        "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.";
    pub(super) const D_CJ_TIMEZONE: &str = "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones";
    pub(super) const D_CJ_SUSPEND: &str = "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.";
    pub(super) const D_CJ_ACTIVE: &str = "A list of pointers to currently running jobs.";
    pub(super) const D_CJ_LAST: &str =
        "Information when was the last time the job was successfully scheduled.";
    pub(super) const D_SVC_TYPE: &str = "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types";
    pub(super) const D_SVC_CLUSTER_IP: &str = "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
    pub(super) const D_SVC_EXTERNAL_IPS: &str = "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.";
    pub(super) const D_SVC_PORTS: &str = "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
    pub(super) const D_SVC_SELECTOR: &str = "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/";
    pub(super) const D_EP_SUBSETS: &str = "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.";
    pub(super) const D_NODE_KUBELET: &str = "Kubelet Version reported by the node.";
    pub(super) const D_NODE_ADDRESSES: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";
    pub(super) const D_NODE_OS_IMAGE: &str =
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).";
    pub(super) const D_NODE_KERNEL: &str =
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).";
    pub(super) const D_NODE_RUNTIME: &str = "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).";
    pub(super) const D_EV_LAST: &str =
        "The time at which the most recent occurrence of this event was recorded.";
    pub(super) const D_EV_TYPE: &str =
        "Type of this event (Normal, Warning), new types could be added in the future";
    pub(super) const D_EV_REASON: &str = "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.";
    pub(super) const D_EV_OBJECT: &str = "The object that this event is about.";
    pub(super) const D_EV_FIELD_PATH: &str = "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers\\[2\\]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers\\[2\\]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.";
    pub(super) const D_EV_SOURCE: &str =
        "The component reporting this event. Should be a short machine understandable string.";
    pub(super) const D_EV_MESSAGE: &str =
        "A human-readable description of the status of this operation.";
    pub(super) const D_EV_FIRST: &str =
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)";
    pub(super) const D_EV_COUNT: &str = "The number of times this event has occurred.";
    pub(super) const D_SECRET_TYPE: &str = "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types";
    pub(super) const D_SECRET_DATA: &str = "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4";
    pub(super) const D_SA_SECRETS: &str = "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret";
    pub(super) const D_PV_CAPACITY: &str = "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity";
    pub(super) const D_PV_ACCESS: &str = "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes";
    pub(super) const D_PV_RECLAIM: &str = "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming";
    pub(super) const D_PV_PHASE: &str = "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase";
    pub(super) const D_PV_CLAIM: &str = "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding";
    pub(super) const D_PV_REASON: &str = "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.";
    pub(super) const D_PV_MODE: &str = "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.";
    pub(super) const D_PVC_PHASE: &str =
        "phase represents the current phase of PersistentVolumeClaim.";
    pub(super) const D_PVC_VOLUME: &str =
        "volumeName is the binding reference to the PersistentVolume backing this claim.";
    pub(super) const D_PVC_CAPACITY: &str =
        "capacity represents the actual resources of the underlying volume.";
    pub(super) const D_PVC_ACCESS: &str = "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1";
    pub(super) const D_PVC_MODE: &str = "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.";
    pub(super) const D_DEPLOY_UPDATED: &str = "Total number of non-terminating pods targeted by this deployment that have the desired template spec.";
    pub(super) const D_DEPLOY_AVAILABLE: &str = "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.";
    pub(super) const D_DEPLOY_SELECTOR: &str = "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.";
    pub(super) const D_HPA_REF: &str = "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.";
    pub(super) const D_HPA_METRICS: &str = "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond. If not set, the default metric will be set to 80% average CPU utilization.";
    pub(super) const D_HPA_MIN: &str = "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.";
    pub(super) const D_HPA_MAX: &str = "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.";
    pub(super) const D_HPA_CURRENT: &str = "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.";
    pub(super) const D_CM_DATA: &str = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";
    pub(super) const D_NETPOL_SELECTOR: &str = "podSelector selects the pods to which this NetworkPolicy object applies. The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods. In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace.";
    pub(super) const D_RB_ROLE: &str = "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.";
    pub(super) const D_CRB_ROLE: &str = "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.";
    pub(super) const D_CSR_SIGNER: &str = "signerName indicates the requested signer, and is a qualified name.\n\nList/watch requests for CertificateSigningRequests can filter on this field using a \"spec.signerName=NAME\" fieldSelector.\n\nWell-known Kubernetes signers are:\n1. \"kubernetes.io/kube-apiserver-client\": issues client certificates that can be used to authenticate to kube-apiserver.\nRequests for this signer are never auto-approved by kube-controller-manager, can be issued by the \"csrsigning\" controller in kube-controller-manager.\n2. \"kubernetes.io/kube-apiserver-client-kubelet\": issues client certificates that kubelets use to authenticate to kube-apiserver.\nRequests for this signer can be auto-approved by the \"csrapproving\" controller in kube-controller-manager, and can be issued by the \"csrsigning\" controller in kube-controller-manager.\n3. \"kubernetes.io/kubelet-serving\" issues serving certificates that kubelets use to serve TLS endpoints, which kube-apiserver can connect to securely.\nRequests for this signer are never auto-approved by kube-controller-manager, and can be issued by the \"csrsigning\" controller in kube-controller-manager.\n\nMore details are available at https://k8s.io/docs/reference/access-authn-authz/certificate-signing-requests/#kubernetes-signers\n\nCustom signerNames can also be specified. The signer defines:\n1. Trust distribution: how trust (CA bundles) are distributed.\n2. Permitted subjects: and behavior when a disallowed subject is requested.\n3. Required, permitted, or forbidden x509 extensions in the request (including whether subjectAltNames are allowed, which types, restrictions on allowed values) and behavior when a disallowed extension is requested.\n4. Required, permitted, or forbidden key usages / extended key usages.\n5. Expiration/certificate lifetime: whether it is fixed by the signer, configurable by the admin.\n6. Whether or not requests for CA certificates are allowed.";
    pub(super) const D_CSR_REQUEST: &str = "request contains an x509 certificate signing request encoded in a \"CERTIFICATE REQUEST\" PEM block. When serialized as JSON or YAML, the data is additionally base64-encoded.";
    pub(super) const D_CSR_EXPIRATION: &str = "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n1. Old signer that is unaware of the field (such as the in-tree\nimplementations prior to v1.22)\n2. Signer whose configured maximum is shorter than the requested duration\n3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.";
    pub(super) const D_CSR_CONDITIONS: &str = "conditions applied to the request. Known conditions are \"Approved\", \"Denied\", and \"Failed\".";
    pub(super) const D_LEASE_HOLDER: &str = "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.";
    pub(super) const D_SC_PROVISIONER: &str = "provisioner indicates the type of the provisioner.";
    pub(super) const D_SC_RECLAIM: &str = "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.";
    pub(super) const D_SC_BINDING: &str = "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.";
    pub(super) const D_SC_EXPANSION: &str =
        "allowVolumeExpansion shows whether the storage class allow volume expand.";
    pub(super) const D_CR_REVISION: &str =
        "Revision indicates the revision of the state represented by Data.";
    pub(super) const D_PC_VALUE: &str = "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.";
    pub(super) const D_PC_DEFAULT: &str = "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.";
    pub(super) const D_PC_PREEMPTION: &str = "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.";
    pub(super) const D_VA_ATTACHER: &str = "attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().";
    pub(super) const D_VA_PV: &str =
        "persistentVolumeName represents the name of the persistent volume to attach.";
    pub(super) const D_VA_NODE: &str =
        "nodeName represents the node that the volume should be attached to.";
    pub(super) const D_VA_ATTACHED: &str = "attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.";
    pub(super) const D_EPS_ADDRESS_TYPE: &str = "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes, slices of addressType \"IPv4\" and \"IPv6\". No semantics are defined for the \"FQDN\" type.";
    pub(super) const D_EPS_PORTS: &str = "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. Each slice may include a maximum of 100 ports. Services always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise always have at least 1 port. EndpointSlices used for other purposes may have an empty ports list.";
    pub(super) const D_EPS_ENDPOINTS: &str = "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.";
    pub(super) const D_CSID_ATTACH: &str = "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the CSIDriverRegistry feature gate is enabled and the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable.";
    pub(super) const D_CSID_POD_INFO: &str = "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. \"csi.storage.k8s.io/pod.name\": pod.Name \"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": string(pod.UID) \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral inline volume\ndefined by a CSIVolumeSource, otherwise \"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is only required for drivers which support both the \"Persistent\" and \"Ephemeral\" VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes \\< 1.29 and now is mutable.";
    pub(super) const D_CSID_CAPACITY: &str = "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with late binding will pause until the driver deployment has published some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when storage capacity information has been published.\n\nThis field was immutable in Kubernetes \\<= 1.22 and now is mutable.";
    pub(super) const D_CSID_TOKENS: &str = "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and validate the following VolumeContext: \"csi.storage.k8s.io/serviceAccount.tokens\": {\n\"\\<audience\\>\": {\n\"token\": \\<token\\>,\n\"expirationTimestamp\": \\<expiration timestamp in RFC3339\\>,\n},\n...\n}\n\nNote: Audience in each TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically.";
    pub(super) const D_CSID_REPUBLISH: &str = "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New mount points will not be seen by a running container.";
    pub(super) const D_CSID_MODES: &str = "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable.";
    pub(super) const D_CSISC_CLASS: &str = "storageClassName represents the name of the StorageClass that the reported capacity applies to. It must meet the same requirements as the name of a StorageClass object (non-empty, DNS subdomain). If that object no longer exists, the CSIStorageCapacity object is obsolete and should be removed by its creator. This field is immutable.";
    pub(super) const D_CSISC_CAPACITY: &str = "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with topology and parameters that match the previous fields.\n\nThe semantic is currently (CSI spec 1.2) defined as: The available capacity, in bytes, of the storage that can be used to provision volumes. If not set, that information is currently unavailable.";
    pub(super) const D_FS_PL: &str =
        "`name` is the name of the priority level configuration being referenced Required.";
    pub(super) const D_FS_PRECEDENCE: &str = "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in \\[1,10000\\]. Note that if the precedence is not specified, it will be set to 1000 as default.";
    pub(super) const D_FS_DISTINGUISHER: &str = "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.";
    pub(super) const D_PL_TYPE: &str = "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required.";
    pub(super) const D_PL_SHARES: &str = "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum\\[priority level k\\] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a \"jail\" for this priority level that is used to hold some request(s)";
    pub(super) const D_PL_QUEUES: &str = "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.";
    pub(super) const D_PL_HAND: &str = "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8.";
    pub(super) const D_PL_QLIMIT: &str = "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.";
    pub(super) const D_SCIDR_CIDRS: &str = "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable.";
    pub(super) const D_IP_PARENT: &str = "ParentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object.";
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_print_in_selector_syntax_sorted_by_key() {
        let selector = json!({
            "matchLabels": {"tier": "web", "app": "shop"},
            "matchExpressions": [
                {"key": "env", "operator": "NotIn", "values": ["qa", "dev"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "Exists"}
            ]
        });
        assert_eq!(
            format_label_selector(Some(&selector)),
            "app=shop,!canary,env notin (dev,qa),tier=web,zone"
        );
        assert_eq!(format_label_selector(None), "<none>");
        assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
        let invalid = json!({"matchExpressions": [{"key": "a", "operator": "In"}]});
        assert_eq!(format_label_selector(Some(&invalid)), "<error>");
        assert_eq!(label_selector(Some(&invalid)), Err(()));
    }

    #[test]
    fn param_ref_selectors_print_as_go_does() {
        let by_selector = json!({"selector": {"matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]}});
        assert_eq!(
            param_ref(Some(&by_selector)),
            "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[x y],},},}"
        );
        assert_eq!(param_ref(Some(&json!({"name": "p"}))), "*/p");
        assert_eq!(param_ref(Some(&json!({"name": "p", "namespace": "ns"}))), "ns/p");
        assert_eq!(param_ref(None), "<unset>");
    }

    #[test]
    fn long_lists_are_cut_after_a_few_items() {
        let rules: Vec<Value> =
            ["a", "", "b", "c", "d"].iter().map(|h| json!({"host": h})).collect();
        // Upstream counts the rules, not the hosts, past the first three.
        assert_eq!(ingress_hosts(&rules), "a,b,c + 2 more...");
        assert_eq!(ingress_hosts(&[json!({})]), "*");
        let items = |n: usize| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>();
        assert_eq!(list_with_more(items(0), 3), "<unset>");
        assert_eq!(list_with_more(items(3), 3), "1,2,3");
        assert_eq!(list_with_more(items(5), 3), "1,2,3 + 2 more...");
        assert_eq!(join_host_port("fd00::1", 80), "[fd00::1]:80");
    }

    #[test]
    fn timestamps_parse_and_go_zero_time_counts_as_missing() {
        let obj = json!({"a": "2024-06-01T12:00:00Z", "b": "2024-06-01T12:00:00.123456Z",
                         "zero": "0001-01-01T00:00:00Z", "bad": "soon"});
        assert!(time(&obj, &["a"]).is_some());
        assert!(time(&obj, &["b"]).is_some());
        assert_eq!(time(&obj, &["zero"]), None);
        assert_eq!(time(&obj, &["bad"]), None);
        assert_eq!(time(&obj, &["missing"]), None);
    }
}
