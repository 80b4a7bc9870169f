//! `root-ca-certificate-publisher-controller`, as kube-controller-manager's: the ConfigMap
//! `kube-root-ca.crt` in every namespace, holding the cluster CA (`ca.crt`) that pods verify
//! the API server with, with upstream's description; put back when deleted or edited.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

use crate::namespace_objects::Ensured;

/// The ConfigMap's name.
pub const NAME: &str = "kube-root-ca.crt";
/// Its key holding the CA bundle.
pub const KEY: &str = "ca.crt";
/// The annotation upstream describes the ConfigMap with.
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
/// Upstream's description.
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the \
kube-apiserver when using internal endpoints such as the internal service IP or \
kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes \
clusters.";

/// The `kube-root-ca.crt` ConfigMap with this CA bundle (PEM).
pub struct RootCa {
    pub ca_pem: String,
}

impl RootCa {
    fn data(&self) -> BTreeMap<String, String> {
        BTreeMap::from([(KEY.to_string(), self.ca_pem.clone())])
    }
}

impl Ensured for RootCa {
    type Kind = ConfigMap;
    const CONTROLLER: &'static str = "root-ca-certificate-publisher-controller";

    fn name(&self) -> &str {
        NAME
    }

    fn desired(&self, _namespace: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(NAME.into()),
                annotations: Some(BTreeMap::from([(
                    DESCRIPTION_ANNOTATION.to_string(),
                    DESCRIPTION.to_string(),
                )])),
                ..Default::default()
            },
            data: Some(self.data()),
            ..Default::default()
        }
    }

    /// As upstream: the data must be exactly the bundle and the description present (any
    /// non-empty one); else both are put back, the rest kept.
    fn repaired(&self, current: &ConfigMap) -> Option<ConfigMap> {
        let data = self.data();
        let described = current
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
            .is_some_and(|d| !d.is_empty());
        if current.data.as_ref() == Some(&data) && described {
            return None;
        }
        let mut fixed = current.clone();
        fixed.data = Some(data);
        fixed
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(DESCRIPTION_ANNOTATION.into(), DESCRIPTION.into());
        Some(fixed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_are_undone_and_the_rest_kept() {
        let ca = RootCa { ca_pem: "PEM".into() };
        let made = ca.desired("ns");
        assert_eq!(ca.repaired(&made), None);
        let mut edited = made.clone();
        edited.data.as_mut().unwrap().insert("extra".into(), "x".into());
        edited.metadata.labels = Some(BTreeMap::from([("keep".into(), "me".into())]));
        let fixed = ca.repaired(&edited).unwrap();
        assert_eq!(fixed.data, made.data);
        assert_eq!(fixed.metadata.labels, edited.metadata.labels);
        let mut undescribed = made.clone();
        undescribed.metadata.annotations = None;
        let fixed = ca.repaired(&undescribed).unwrap();
        assert_eq!(fixed.metadata.annotations, made.metadata.annotations);
    }
}
