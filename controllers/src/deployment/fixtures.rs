//! Deployments and ReplicaSets for the unit tests.

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, ReplicaSet, ReplicaSetSpec, ReplicaSetStatus,
    RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

/// A template labelled `app: web` running `image`.
pub(super) fn template(image: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..ObjectMeta::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    }
}

/// `default/web`, generation 1, as the API defaults it: rolling update 25%/25%, deadline
/// 600 s, history 10, template `nginx:1.0`.
pub(super) fn deployment(replicas: i32) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some("d-uid".into()),
            generation: Some(1),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some([("app".to_string(), "web".to_string())].into()),
                ..LabelSelector::default()
            },
            template: template("nginx:1.0"),
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".into()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::String("25%".into())),
                    max_unavailable: Some(IntOrString::String("25%".into())),
                }),
            }),
            progress_deadline_seconds: Some(600),
            revision_history_limit: Some(10),
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

/// `d` with these rolling-update parameters.
pub(super) fn rolling(
    mut d: Deployment,
    surge: IntOrString,
    unavailable: IntOrString,
) -> Deployment {
    let strategy = d.spec.as_mut().unwrap().strategy.as_mut().unwrap();
    strategy.rolling_update = Some(RollingUpdateDeployment {
        max_surge: Some(surge),
        max_unavailable: Some(unavailable),
    });
    d
}

/// A ReplicaSet (uid = name) asking for `replicas`, having as many, `available` of them
/// ready and available, created `created` seconds after the epoch, with the template
/// `nginx:1.0`.
pub(super) fn rs(name: &str, replicas: i32, available: i32, created: i64) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(name.into()),
            creation_timestamp: Some(Time(Timestamp::from_second(created).unwrap())),
            generation: Some(1),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            template: Some(template("nginx:1.0")),
            ..ReplicaSetSpec::default()
        }),
        status: Some(ReplicaSetStatus {
            replicas,
            available_replicas: Some(available),
            ready_replicas: Some(available),
            observed_generation: Some(1),
            ..ReplicaSetStatus::default()
        }),
    }
}
