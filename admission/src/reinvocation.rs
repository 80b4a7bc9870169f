//! One request's reinvocation context (upstream's `admission.ReinvocationContext`): a mutating
//! webhook that changes the object asks the chain to run its mutating plugins once more, so
//! that webhooks with `reinvocationPolicy: IfNeeded` see what later ones did. The chain makes
//! one context per request ([`crate::Chain::admit`]) and hands it to every mutating plugin
//! through [`crate::MutatingPlugin::admit_in`]; the in-tree plugins ignore it (they run again
//! in the second round, as upstream's do, and are idempotent).

use crate::webhook::ReinvokeState;

/// What one request's mutating rounds know of each other.
#[derive(Debug, Default)]
pub struct Reinvocation {
    is_reinvoke: bool,
    should_reinvoke: bool,
    /// The webhook plugin's own state across the rounds.
    pub(crate) webhooks: ReinvokeState,
}

impl Reinvocation {
    /// True in the second round.
    pub fn is_reinvoke(&self) -> bool {
        self.is_reinvoke
    }

    /// Asks for a second round (a webhook changed the object).
    pub fn set_should_reinvoke(&mut self) {
        self.should_reinvoke = true;
    }

    /// Whether a plugin asked for a second round.
    pub fn should_reinvoke(&self) -> bool {
        self.should_reinvoke
    }

    /// The second round starts: it is the last, whatever it changes.
    pub(crate) fn start_reinvocation(&mut self) {
        self.is_reinvoke = true;
        self.should_reinvoke = false;
    }
}
