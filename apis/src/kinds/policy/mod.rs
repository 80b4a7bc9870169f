//! `policy/v1`.

mod poddisruptionbudgets;

pub use poddisruptionbudgets::{
    disruption_allowed_condition_up_to_date, set_condition, update_disruption_allowed_condition,
    PodDisruptionBudgets, DISRUPTION_ALLOWED,
};
