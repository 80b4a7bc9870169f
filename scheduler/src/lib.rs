//! The rkube scheduler: a filter/score plugin framework, binding pods through `pods/binding`
//! as kube-scheduler does. It reaches the API server only through its public API.
//!
//! Start at [`framework`] (what plugins see and implement) and [`plugins`] (the default
//! set); [`resources`] parses quantities and computes what a pod requests.

pub mod framework;
pub mod plugins;
pub mod queue;
pub mod resources;
pub mod scheduler;

pub use scheduler::run;
