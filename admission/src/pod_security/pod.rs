//! The pod a check looks at: a pod's (or a pod template's) annotations and spec, decoded
//! into k8s-openapi's types, with its containers of every kind visited in upstream's order
//! (init containers, containers, ephemeral containers), and the wording helpers the checks'
//! messages share.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ContainerPort, PodSecurityContext, PodSpec, SecurityContext};
use serde::Deserialize;
use serde_json::Value;

/// A pod (or template) as decoded for the checks.
#[derive(Clone, Debug, Default)]
pub struct Pod {
    pub annotations: BTreeMap<String, String>,
    pub spec: PodSpec,
}

/// One container of any kind, as the checks see it.
#[derive(Clone, Copy, Debug)]
pub struct Container<'a> {
    pub name: &'a str,
    pub image: Option<&'a str>,
    pub ports: &'a [ContainerPort],
    pub security_context: Option<&'a SecurityContext>,
}

impl Pod {
    /// The pod of an object with `metadata` and `spec` (a Pod, or a pod template).
    pub fn decode(object: &Value) -> Result<Pod, serde_json::Error> {
        let annotations = match object.pointer("/metadata/annotations") {
            Some(a) if !a.is_null() => BTreeMap::deserialize(a)?,
            _ => BTreeMap::new(),
        };
        let spec = match object.get("spec") {
            Some(s) if !s.is_null() => PodSpec::deserialize(s)?,
            _ => PodSpec::default(),
        };
        Ok(Pod { annotations, spec })
    }

    /// Init containers, containers, then ephemeral containers.
    pub fn containers(&self) -> impl Iterator<Item = Container<'_>> {
        let spec = &self.spec;
        let regular =
            spec.init_containers.iter().flatten().chain(&spec.containers).map(|c| Container {
                name: &c.name,
                image: c.image.as_deref(),
                ports: c.ports.as_deref().unwrap_or_default(),
                security_context: c.security_context.as_ref(),
            });
        let ephemeral = spec.ephemeral_containers.iter().flatten().map(|c| Container {
            name: &c.name,
            image: c.image.as_deref(),
            ports: c.ports.as_deref().unwrap_or_default(),
            security_context: c.security_context.as_ref(),
        });
        regular.chain(ephemeral)
    }

    /// The names of the containers whose security context `bad` finds fault with (a
    /// container without one is passed `None`).
    pub fn containers_where(&self, bad: impl Fn(Option<&SecurityContext>) -> bool) -> Vec<&str> {
        self.containers().filter(|c| bad(c.security_context)).map(|c| c.name).collect()
    }

    pub fn security_context(&self) -> Option<&PodSecurityContext> {
        self.spec.security_context.as_ref()
    }

    /// `spec.os.name` is `windows`: the Linux-only restricted checks let it pass from v1.25.
    pub fn is_windows(&self) -> bool {
        self.spec.os.as_ref().is_some_and(|os| os.name == "windows")
    }
}

/// `singular` for one, else `plural`.
pub fn pluralize<'a>(singular: &'a str, plural: &'a str, count: usize) -> &'a str {
    if count == 1 {
        singular
    } else {
        plural
    }
}

/// `"a", "b"` (nothing for none).
pub fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let items: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    format!("\"{}\"", items.join("\", \""))
}

/// `container "a"` or `containers "a", "b"`.
pub fn containers_named(names: &[&str]) -> String {
    format!("{} {}", pluralize("container", "containers", names.len()), join_quote(names))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containers_in_upstream_order_and_wording() {
        let pod = Pod::decode(&json!({
            "metadata": {"annotations": {"a": "b"}},
            "spec": {
                "containers": [{"name": "c1", "image": "i"}, {"name": "c2"}],
                "initContainers": [{"name": "i1", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
                "ephemeralContainers": [{"name": "e1", "securityContext": {"privileged": true}}],
            }
        }))
        .unwrap();
        let names: Vec<&str> = pod.containers().map(|c| c.name).collect();
        assert_eq!(names, ["i1", "c1", "c2", "e1"]);
        assert_eq!(pod.containers().next().unwrap().ports[0].host_port, Some(8080));
        assert_eq!(pod.annotations["a"], "b");
        assert_eq!(pod.containers_where(|sc| sc.is_some()), ["e1"]);
        assert_eq!(containers_named(&["a"]), "container \"a\"");
        assert_eq!(containers_named(&["a", "b"]), "containers \"a\", \"b\"");
        assert_eq!(join_quote::<&str>(&[]), "");
        // Templates without a spec are pods without containers.
        assert_eq!(Pod::decode(&json!({})).unwrap().containers().count(), 0);
    }
}
