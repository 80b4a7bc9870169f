//! CSIDrivers (`storage.k8s.io/v1`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::strategy::Strategy;
use crate::tables::{age, at, boolean, col, name, or_none, st, text, TablePrinter, AGE, NAME};
use crate::validation::FieldError;
use crate::{defaults, validation};

/// The strategy of this resource.
#[derive(Debug)]
pub struct CsiDrivers;

impl Strategy for CsiDrivers {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        defaults::storage::csi_driver(obj);
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
        validation::storage::csi_driver(obj, old)
    }

    fn printer(&self) -> &'static TablePrinter {
        &PRINTER
    }
}

/// The table `kubectl get` prints: upstream's columns (wide ones included) and each object's
/// row of cells.
const PRINTER: TablePrinter = TablePrinter {
    columns: &[
        NAME,
        col("AttachRequired", "boolean", D_CSID_ATTACH),
        col("PodInfoOnMount", "boolean", D_CSID_POD_INFO),
        col("StorageCapacity", "boolean", D_CSID_CAPACITY),
        text("TokenRequests", D_CSID_TOKENS),
        col("RequiresRepublish", "boolean", D_CSID_REPUBLISH),
        text("Modes", D_CSID_MODES),
        AGE,
    ],
    row,
};

fn row(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let token_requests = match at(obj, &["spec", "tokenRequests"]) {
        Some(Value::Array(t)) => {
            t.iter().map(|t| st(t, &["audience"])).collect::<Vec<_>>().join(",")
        }
        _ => "<unset>".to_string(),
    };
    // Defaulted to Persistent when stored.
    let modes = match at(obj, &["spec", "volumeLifecycleModes"]) {
        Some(Value::Array(m)) => m.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(","),
        _ => "Persistent".to_string(),
    };
    vec![
        name(obj),
        boolean(obj, &["spec", "attachRequired"]).unwrap_or(true).into(),
        boolean(obj, &["spec", "podInfoOnMount"]).unwrap_or(false).into(),
        boolean(obj, &["spec", "storageCapacity"]).unwrap_or(false).into(),
        token_requests.into(),
        boolean(obj, &["spec", "requiresRepublish"]).unwrap_or(false).into(),
        or_none(&modes).into(),
        age(obj, now),
    ]
}

// Column descriptions: the API field documentation upstream takes them from.
const D_CSID_ATTACH: &str = "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates the volumeattachment status when the attach operation is complete. If the CSIDriverRegistry feature gate is enabled and the value is specified to false, the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is immutable.";
const D_CSID_POD_INFO: &str = "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() calls. The CSI driver is responsible for parsing and validating the information passed in as VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This list might grow, but the prefix will be used. \"csi.storage.k8s.io/pod.name\": pod.Name \"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": string(pod.UID) \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral inline volume\ndefined by a CSIVolumeSource, otherwise \"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is only required for drivers which support both the \"Persistent\" and \"Ephemeral\" VolumeLifecycleMode. Other drivers can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, drivers can only support one mode when deployed on such a cluster and the deployment determines which mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in Kubernetes \\< 1.29 and now is mutable.";
const D_CSID_CAPACITY: &str = "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that case, provisioning new volumes with late binding will pause until the driver deployment has published some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field unset or false and it can be flipped later when storage capacity information has been published.\n\nThis field was immutable in Kubernetes \\<= 1.22 and now is mutable.";
const D_CSID_TOKENS: &str = "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume calls. The CSI driver should parse and validate the following VolumeContext: \"csi.storage.k8s.io/serviceAccount.tokens\": {\n\"\\<audience\\>\": {\n\"token\": \\<token\\>,\n\"expirationTimestamp\": \\<expiration timestamp in RFC3339\\>,\n},\n...\n}\n\nNote: Audience in each TokenRequest should be different and at most one token is empty string. To receive a new token after expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically.";
const D_CSID_REPUBLISH: &str = "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the contents of the volume. New mount points will not be seen by a running container.";
const D_CSID_MODES: &str = "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the list is empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the lifecycle of that pod. A driver has to be aware of this because it is only going to get a NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable.";
