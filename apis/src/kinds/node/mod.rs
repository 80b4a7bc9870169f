//! `node.k8s.io/v1`.

mod runtimeclasses;

pub use runtimeclasses::RuntimeClasses;
