//! The conformance map: for every upstream conformance test, the rkube tests that check the
//! same behaviour, and whether they passed in the last suite run.
//!
//! Three inputs, one output:
//! - [`upstream`]: the upstream test list (`conformance/map/upstream.tsv`: area, section,
//!   test name, release, tags, e2e file), read from upstream's `conformance.yaml`.
//! - [`coverage`]: the tables that say which rkube tests cover which upstream test
//!   (`conformance/map/coverage/<area>.toml`), or why none can (an image a registry would
//!   serve, a mode this machine refuses).
//! - [`junit`]: the results of a real suite run, from nextest's JUnit report.
//!
//! [`report`] joins them into `docs/conformance.md`. A covering test that the run did not
//! report (renamed, deleted, never run) makes its upstream test uncovered, never passing.

pub mod coverage;
pub mod junit;
pub mod report;
pub mod upstream;
