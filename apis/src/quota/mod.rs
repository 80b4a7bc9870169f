//! Resource quota accounting, shared by the ResourceQuota admission plugin (which charges a
//! write against the quotas of its namespace) and the resource quota controller (which
//! recounts what a namespace uses): what an object uses ([`evaluator`]), which quotas it
//! falls under ([`scopes`]), and the arithmetic on resource lists ([`list`]), as upstream's
//! `pkg/quota/v1` does it for both.

pub mod evaluator;
pub mod list;
pub mod scopes;

pub use evaluator::Evaluator;
pub use list::ResourceList;
pub use scopes::ScopeSelector;
