//! `Priority`: a new pod gets `spec.priority` and `spec.preemptionPolicy` from its
//! PriorityClass, or from the cluster's global default class (whose name it then carries), or
//! 0; a class that does not exist is refused, and so is a pod that sets a priority or policy
//! of its own that differs from its class's. An update keeps the priority the pod was given.
//! As a validating plugin it lets only one PriorityClass be the global default.
//!
//! The built-in classes every cluster has are [`SYSTEM_CLASSES`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rkube_apis::selectors::LabelSelector;
use serde_json::{json, Value};

use crate::attributes::{Attributes, Operation};
use crate::error::AdmissionError;
use crate::state::{ClusterState, Freshness, GroupResource, Object};
use crate::{MutatingPlugin, ValidatingPlugin};

pub const NAME: &str = "Priority";

/// The classes kube-apiserver creates: name and value.
pub const SYSTEM_CLASSES: &[(&str, i64)] =
    &[("system-node-critical", 2_000_001_000), ("system-cluster-critical", 2_000_000_000)];

const PRIORITY_CLASSES: GroupResource<'static> =
    GroupResource::new("scheduling.k8s.io", "priorityclasses");

/// The plugin, with what it has read of each PriorityClass: a pod create reads the
/// classes from the cache (all of them, to find the global default) and decodes only those
/// that changed since it last did.
#[derive(Default)]
pub struct Priority {
    classes: Mutex<HashMap<String, Arc<Class>>>,
}

/// What admission needs of a PriorityClass.
#[derive(Debug)]
struct Class {
    resource_version: String,
    name: String,
    value: i64,
    global_default: bool,
    preemption_policy: Option<String>,
}

impl Class {
    fn read(object: &dyn Object) -> Class {
        let class = object.value();
        Class {
            resource_version: object.resource_version(),
            name: object.name().to_string(),
            value: class["value"].as_i64().unwrap_or(0),
            global_default: class["globalDefault"] == json!(true),
            preemption_policy: class["preemptionPolicy"].as_str().map(String::from),
        }
    }
}

impl Priority {
    /// `object` as a [`Class`], decoded only when it changed since the last read.
    fn class(&self, object: &dyn Object) -> Arc<Class> {
        let mut classes = self.classes.lock().unwrap_or_else(|e| e.into_inner());
        let resource_version = object.resource_version();
        if resource_version.is_empty() {
            // Nothing tells a change apart (a reader without versions): read it every time.
            return Arc::new(Class::read(object));
        }
        match classes.get(object.name()) {
            Some(class) if class.resource_version == resource_version => class.clone(),
            _ => {
                let class = Arc::new(Class::read(object));
                classes.insert(class.name.clone(), class.clone());
                class
            }
        }
    }

    /// The global default class: of several (a race can make more than one), the lowest.
    async fn default_class(
        &self,
        state: &dyn ClusterState,
    ) -> Result<Option<Arc<Class>>, AdmissionError> {
        let objects = state
            .list(PRIORITY_CLASSES, None, &LabelSelector::everything(), Freshness::Cached)
            .await?;
        let classes: Vec<Arc<Class>> = objects.iter().map(|o| self.class(o.as_ref())).collect();
        // What is no longer listed is forgotten, so the memo holds at most the classes there are.
        let mut memo = self.classes.lock().unwrap_or_else(|e| e.into_inner());
        if memo.len() > classes.len() {
            memo.retain(|name, _| classes.iter().any(|c| &c.name == name));
        }
        drop(memo);
        Ok(classes.into_iter().filter(|c| c.global_default).min_by_key(|c| c.value))
    }

    async fn admit_new_pod(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        let Some(pod) = a.object() else { return Ok(()) };
        let name = pod["spec"]["priorityClassName"].as_str().filter(|n| !n.is_empty());
        let class = match name {
            Some(name) => {
                let found = state.get(PRIORITY_CLASSES, None, name, Freshness::Cached).await?;
                let Some(object) = found else {
                    let reason = format!("no PriorityClass with name {name} was found");
                    return Err(AdmissionError::forbidden(a, reason));
                };
                Some(self.class(object.as_ref()))
            }
            None => self.default_class(state).await?,
        };
        let priority = class.as_ref().map_or(0, |c| c.value);
        // Without a class (no default), pods preempt lower priorities, as upstream; a class's
        // policy is defaulted to that too.
        let policy = class
            .as_ref()
            .and_then(|c| c.preemption_policy.as_deref())
            .unwrap_or("PreemptLowerPriority")
            .to_string();
        if let Some(given) = pod["spec"]["priority"].as_i64().filter(|&p| p != priority) {
            let reason = format!("the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name");
            return Err(AdmissionError::forbidden(a, reason));
        }
        if let Some(given) = pod["spec"]["preemptionPolicy"].as_str() {
            if given != policy {
                let reason = format!("the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name");
                return Err(AdmissionError::forbidden(a, reason));
            }
        }
        let Some(spec) =
            a.object.as_deref_mut().and_then(|p| p.get_mut("spec")).and_then(Value::as_object_mut)
        else {
            return Ok(());
        };
        if let Some(class) = &class {
            spec.insert("priorityClassName".into(), json!(class.name));
        }
        spec.insert("priority".into(), json!(priority));
        spec.insert("preemptionPolicy".into(), json!(policy));
        Ok(())
    }
}

/// An update that leaves out the priority (or the policy) the pod was given keeps it:
/// validation refuses changing them, not omitting them.
fn keep_priority(a: &mut Attributes<'_>) {
    let Some(old) = a.old_object.map(|o| &o["spec"]) else { return };
    let Some(spec) =
        a.object.as_deref_mut().and_then(|p| p.get_mut("spec")).and_then(Value::as_object_mut)
    else {
        return;
    };
    for field in ["priority", "preemptionPolicy"] {
        if spec.get(field).is_none_or(Value::is_null) && !old[field].is_null() {
            spec.insert(field.into(), old[field].clone());
        }
    }
}

#[async_trait::async_trait]
impl MutatingPlugin for Priority {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn admit(
        &self,
        a: &mut Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if !a.subresource.is_empty() || !a.is("", "pods") {
            return Ok(());
        }
        match a.operation {
            Operation::Create => self.admit_new_pod(a, state).await,
            Operation::Update => {
                keep_priority(a);
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[async_trait::async_trait]
impl ValidatingPlugin for Priority {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn validate(
        &self,
        a: &Attributes<'_>,
        state: &dyn ClusterState,
    ) -> Result<(), AdmissionError> {
        if !a.subresource.is_empty()
            || !a.is(PRIORITY_CLASSES.group, PRIORITY_CLASSES.resource)
            || !matches!(a.operation, Operation::Create | Operation::Update)
        {
            return Ok(());
        }
        let Some(class) = a.object().filter(|c| c["globalDefault"] == json!(true)) else {
            return Ok(());
        };
        let Some(default) = self.default_class(state).await? else { return Ok(()) };
        let default_name = default.name.as_str();
        if a.operation == Operation::Create || class["metadata"]["name"] != default_name {
            let reason = format!(
                "PriorityClass {default_name} is already marked as default. Only one default can exist"
            );
            return Err(AdmissionError::forbidden(a, reason));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::*;
    use crate::state::Snapshot;

    fn class(name: &str, value: i64, default: bool) -> Value {
        json!({"metadata": {"name": name}, "value": value, "globalDefault": default,
               "preemptionPolicy": "PreemptLowerPriority"})
    }

    fn attributes<'a>(
        operation: Operation,
        resource: &'a str,
        object: &'a mut Value,
        old: Option<&'a Value>,
    ) -> Attributes<'a> {
        let group = if resource == "pods" { "" } else { "scheduling.k8s.io" };
        Attributes {
            operation,
            user: UserInfo::default(),
            resource: GroupVersionResource { group, version: "v1", resource },
            subresource: "",
            kind: GroupVersionKind { group, version: "v1", kind: "" },
            namespace: if resource == "pods" { "ns" } else { "" },
            name: "",
            object: Some(object),
            old_object: old,
            dry_run: false,
            options: OperationOptions::None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        }
    }

    async fn admit(state: &Snapshot, pod: &mut Value) -> Result<(), AdmissionError> {
        Priority::default()
            .admit(&mut attributes(Operation::Create, "pods", pod, None), state)
            .await
    }

    fn classes(list: &[Value]) -> Snapshot {
        list.iter().fold(Snapshot::default(), |s, c| {
            s.with("scheduling.k8s.io", "priorityclasses", c.clone())
        })
    }

    #[tokio::test]
    async fn pods_get_their_class_priority_or_the_default_or_zero() {
        let state = classes(&[class("high", 1000, false), class("normal", 10, true)]);
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "high"}});
        admit(&state, &mut pod).await.unwrap();
        assert_eq!(
            (pod["spec"]["priority"].as_i64(), pod["spec"]["preemptionPolicy"].as_str()),
            (Some(1000), Some("PreemptLowerPriority"))
        );
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {}});
        admit(&state, &mut pod).await.unwrap();
        assert_eq!(
            (pod["spec"]["priority"].as_i64(), pod["spec"]["priorityClassName"].as_str()),
            (Some(10), Some("normal"))
        );
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {}});
        admit(&Snapshot::default(), &mut pod).await.unwrap();
        assert_eq!(pod["spec"], json!({"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}));
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"priorityClassName": "nope"}});
        assert_eq!(
            admit(&state, &mut pod).await.unwrap_err().to_string(),
            "pods \"p\" is forbidden: no PriorityClass with name nope was found"
        );
        // A pod may repeat what its class gives, not contradict it.
        let mut pod = json!({"metadata": {"name": "p"},
            "spec": {"priorityClassName": "high", "priority": 1000, "preemptionPolicy": "PreemptLowerPriority"}});
        admit(&state, &mut pod).await.unwrap();
        let mut pod = json!({"metadata": {"generateName": "p-"},
            "spec": {"priorityClassName": "high", "priority": 5}});
        assert_eq!(
            admit(&state, &mut pod).await.unwrap_err().to_string(),
            "pods \"p-\" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"
        );
        let mut pod = json!({"metadata": {"name": "p"},
            "spec": {"priorityClassName": "high", "preemptionPolicy": "Never"}});
        assert!(admit(&state, &mut pod).await.unwrap_err().to_string().contains(
            "the string value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority"
        ));
    }

    #[tokio::test]
    async fn updates_keep_the_priority_and_subresources_are_left_alone() {
        let old = json!({"spec": {"priority": 7, "preemptionPolicy": "Never"}});
        let mut new = json!({"spec": {"containers": []}});
        let state = Snapshot::default();
        let mut a = attributes(Operation::Update, "pods", &mut new, Some(&old));
        Priority::default().admit(&mut a, &state).await.unwrap();
        assert_eq!(
            new["spec"],
            json!({"containers": [], "priority": 7, "preemptionPolicy": "Never"})
        );
        let mut status = json!({"spec": {}});
        let mut a = attributes(Operation::Create, "pods", &mut status, None);
        a.subresource = "binding";
        Priority::default().admit(&mut a, &state).await.unwrap();
        assert_eq!(status, json!({"spec": {}}));
    }

    #[tokio::test]
    async fn only_one_class_is_the_global_default() {
        let state = classes(&[class("normal", 10, true)]);
        let validate = |op, mut c: Value| {
            let state = &state;
            async move {
                Priority::default()
                    .validate(&attributes(op, "priorityclasses", &mut c, None), state)
                    .await
            }
        };
        let second = validate(Operation::Create, class("other", 5, true)).await.unwrap_err();
        assert_eq!(
            second.to_string(),
            "priorityclasses.scheduling.k8s.io \"other\" is forbidden: PriorityClass normal is already marked as default. Only one default can exist"
        );
        validate(Operation::Update, class("other", 5, true)).await.unwrap_err();
        validate(Operation::Update, class("normal", 11, true)).await.unwrap();
        validate(Operation::Create, class("other", 5, false)).await.unwrap();
        validate(Operation::Create, class("other", 5, true)).await.expect_err("a second default");
    }

    /// The plugin keeps what it read of each class until the class changes.
    #[tokio::test]
    async fn a_changed_class_is_read_again() {
        let versioned = |value: i64, default: bool, rv: &str| {
            let mut c = class("normal", value, default);
            c["metadata"]["resourceVersion"] = json!(rv);
            c
        };
        let plugin = Priority::default();
        let priority_of = |state: Snapshot| {
            let plugin = &plugin;
            async move {
                let mut pod = json!({"metadata": {"name": "p"}, "spec": {}});
                let mut a = attributes(Operation::Create, "pods", &mut pod, None);
                plugin.admit(&mut a, &state).await.unwrap();
                pod["spec"]["priority"].as_i64()
            }
        };
        assert_eq!(priority_of(classes(&[versioned(10, true, "5")])).await, Some(10));
        assert_eq!(priority_of(classes(&[versioned(20, true, "6")])).await, Some(20));
        assert_eq!(priority_of(classes(&[versioned(20, false, "7")])).await, Some(0));
        // A class that is gone is forgotten.
        assert_eq!(priority_of(Snapshot::default()).await, Some(0));
        assert!(plugin.classes.lock().unwrap().is_empty());
    }
}
