//! Rollback through the `deprecated.deployment.rollback.to` annotation (what the old
//! extensions/v1beta1 `rollback` subresource set), still honoured as upstream does: the
//! Deployment gets the template and annotations of the ReplicaSet with that revision (0: the
//! previous one), and the annotation is removed. `kubectl rollout undo` does the same from
//! the client side and needs nothing from here.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use kube::api::PostParams;

use super::annotations::{last_revision, revision, set_deployment_annotations_to, ROLLBACK_TO};
use super::hash::{equal_ignore_hash, POD_TEMPLATE_HASH};
use super::sync::all_of;
use super::{Error, Rollout};

const REVISION_NOT_FOUND: &str = "DeploymentRollbackRevisionNotFound";
const TEMPLATE_UNCHANGED: &str = "DeploymentRollbackTemplateUnchanged";
const ROLLED_BACK: &str = "DeploymentRollback";

/// The revision a rollback was asked for; `None` without a readable request.
pub(super) fn rollback_to(d: &Deployment) -> Option<i64> {
    d.metadata.annotations.as_ref()?.get(ROLLBACK_TO)?.parse().ok()
}

/// Gives the Deployment the ReplicaSet's template (without its hash label) and annotations;
/// false when the template is the Deployment's already.
pub(super) fn roll_back_to(d: &mut Deployment, rs: &ReplicaSet) -> bool {
    let Some(mut template) = rs.spec.as_ref().and_then(|s| s.template.clone()) else {
        return false;
    };
    let Some(spec) = d.spec.as_mut() else { return false };
    if equal_ignore_hash(&spec.template, &template) {
        return false;
    }
    if let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) {
        labels.remove(POD_TEMPLATE_HASH);
    }
    spec.template = template;
    set_deployment_annotations_to(d, rs);
    true
}

impl Rollout<'_> {
    pub(super) async fn rollback(&mut self) -> Result<(), Error> {
        let (new, old) = self.get_all_replica_sets_and_sync_revision(true).await?;
        let all = all_of(&old, new.as_ref());
        let mut to = rollback_to(&self.d).unwrap_or(0);
        if to == 0 {
            to = last_revision(&all);
            if to == 0 {
                self.event("Warning", REVISION_NOT_FOUND, "Unable to find last revision.").await;
                return self.update_and_clear_rollback_to().await;
            }
        }
        let Some(target) = all.iter().find(|rs| revision(rs) == Ok(to)) else {
            self.event(
                "Warning",
                REVISION_NOT_FOUND,
                "Unable to find the revision to rollback to.",
            )
            .await;
            return self.update_and_clear_rollback_to().await;
        };
        // The new ReplicaSet, with its next revision, follows on the next sync.
        let rolled_back = roll_back_to(&mut self.d, target);
        if !rolled_back {
            let message = format!(
                "The rollback revision contains the same template as current deployment {:?}",
                self.name()
            );
            self.event("Warning", TEMPLATE_UNCHANGED, &message).await;
        }
        self.update_and_clear_rollback_to().await?;
        if rolled_back {
            let message = format!("Rolled back deployment {:?} to revision {to}", self.name());
            self.event("Normal", ROLLED_BACK, &message).await;
        }
        Ok(())
    }

    /// Writes the Deployment without the rollback request.
    async fn update_and_clear_rollback_to(&mut self) -> Result<(), Error> {
        if let Some(annotations) = self.d.metadata.annotations.as_mut() {
            annotations.remove(ROLLBACK_TO);
        }
        let name = self.name().to_string();
        self.d = self.deployments.replace(&name, &PostParams::default(), &self.d).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::annotations::REVISION;
    use super::super::fixtures::{deployment, rs, template};
    use super::*;

    #[test]
    fn the_request_and_the_template_it_restores() {
        let mut d = deployment(1);
        assert_eq!(rollback_to(&d), None);
        d.metadata.annotations = Some([(ROLLBACK_TO.to_string(), "3".to_string())].into());
        assert_eq!(rollback_to(&d), Some(3));
        d.metadata.annotations = Some([(ROLLBACK_TO.to_string(), "x".to_string())].into());
        assert_eq!(rollback_to(&d), None);

        let mut old = rs("web-old", 0, 0, 1);
        let mut t = template("nginx:0.9");
        t.metadata
            .as_mut()
            .unwrap()
            .labels
            .as_mut()
            .unwrap()
            .insert(POD_TEMPLATE_HASH.into(), "abc".into());
        old.spec.as_mut().unwrap().template = Some(t);
        old.metadata.annotations = Some(
            [
                (REVISION.to_string(), "1".to_string()),
                ("kubernetes.io/change-cause".to_string(), "v0.9".to_string()),
            ]
            .into(),
        );
        assert!(roll_back_to(&mut d, &old));
        assert_eq!(d.spec.as_ref().unwrap().template, template("nginx:0.9"));
        let annotations = d.metadata.annotations.clone().unwrap();
        assert_eq!(annotations.get("kubernetes.io/change-cause").map(String::as_str), Some("v0.9"));
        assert!(!annotations.contains_key(REVISION));
        // Once there, nothing more to do.
        assert!(!roll_back_to(&mut d, &old));
    }
}
