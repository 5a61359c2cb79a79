//! Whether each timed pass was disturbed, and by what: a [`Sampler`] started and
//! finished around a pass on the measuring thread gives its [`Disturbance`]; a
//! [`Threshold`] flags it; [`measure`] measures flagged passes again under the
//! [`Rules`]; a record keeps every pass in `data.disturbance` ([`PassLog`]).
//! It sits in `results` so probe, bench, mpi and suites can all use it.

mod passes;
mod sampler;

pub use passes::{
    fold_warnings, judge, measure, PassLog, PassMark, Passes, Policy, Rules, Threshold, DATA_KEY,
    DEFAULT_MAX_REMEASURE, MOSTLY,
};
pub use sampler::{cpu_quota, CpuQuota, Disturbance, Sampler};
