//! The rkube scheduler: a filter/score plugin framework with a scheduling queue, binding pods
//! through `pods/binding` as kube-scheduler does.
//!
//! It reaches the API server only through its public API. Not implemented yet (issue 4).
