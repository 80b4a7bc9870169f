//! Who is calling: the identity every request carries from authentication on, so that
//! authorization, admission and audit have it.

use std::collections::BTreeMap;

/// An authenticated (or anonymous) user, as Kubernetes' `user.Info`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// What the authenticator adds (a service-account token's pod, node and credential id).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user authenticated as `name` with `groups`, plus `system:authenticated`.
    pub fn authenticated(name: String, mut groups: Vec<String>) -> UserInfo {
        if !groups.iter().any(|g| g == "system:authenticated") {
            groups.push("system:authenticated".to_string());
        }
        UserInfo { name, uid: String::new(), groups, extra: BTreeMap::new() }
    }

    /// A request without credentials.
    pub fn anonymous() -> UserInfo {
        UserInfo {
            name: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
            extra: BTreeMap::new(),
        }
    }

    pub fn is_anonymous(&self) -> bool {
        self.name == "system:anonymous"
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}
