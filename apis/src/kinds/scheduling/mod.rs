//! `scheduling.k8s.io/v1`.

mod priorityclasses;

pub use priorityclasses::PriorityClasses;
