//! Whether each timed pass was disturbed, and by what: a [`Sampler`] started and
//! finished around a pass on the measuring thread gives its [`Disturbance`]; a
//! [`Threshold`] flags it; [`measure`] measures flagged passes again under the
//! [`Rules`]; a record keeps every pass in `data.disturbance` ([`PassLog`]).
//! Before a measurement, [`busy_now`] says how busy each CPU is (the survey measures
//! its single-CPU steps on the quietest).
//! It sits in `results` so probe, bench, mpi and suites can all use it.

mod busy;
mod passes;
mod sampler;

pub use busy::{busy_now, shares, CpuBusy};
pub use passes::{
    fold_warnings, judge, measure, PassLog, PassMark, Passes, Policy, Rules, Threshold, DATA_KEY,
    DEFAULT_MAX_REMEASURE, MOSTLY,
};
pub use sampler::{cpu_quota, CpuQuota, Disturbance, Sampler};
