//! `policy/v1`.

mod poddisruptionbudgets;

pub use poddisruptionbudgets::PodDisruptionBudgets;
