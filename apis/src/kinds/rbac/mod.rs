//! `rbac.authorization.k8s.io/v1`.

mod clusterrolebindings;
mod clusterroles;
mod rolebindings;
mod roles;

pub use clusterrolebindings::ClusterRoleBindings;
pub use clusterroles::ClusterRoles;
pub use rolebindings::RoleBindings;
pub use roles::Roles;
