//! `events.k8s.io/v1`.

// The group's one resource has the group's name.
#[allow(clippy::module_inception)]
mod events;

pub use events::Events;
