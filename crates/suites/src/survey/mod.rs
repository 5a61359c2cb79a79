//! The survey: the battery of experiments chosen from the topology (a typed plan,
//! each step an experiment's `Options`), and the survey's own records.

pub mod plan;
mod records;

pub use plan::{argv, c2c_cpus, plan, Experiment, Step};
pub use records::{model_record, step_record};
