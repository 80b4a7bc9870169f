//! ComponentStatuses (`v1`): read-only, answered by probing the components.

use crate::strategy::Strategy;
use crate::tables::Printer;

/// The strategy of this resource.
#[derive(Debug)]
pub struct ComponentStatuses;

impl Strategy for ComponentStatuses {
    fn printer(&self) -> Printer {
        Printer::ComponentStatus
    }
}
