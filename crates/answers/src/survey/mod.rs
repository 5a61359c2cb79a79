//! The survey: the battery of experiments chosen from the topology (a typed plan,
//! each step an experiment's `Options`), and the survey's own records.

mod cap;
mod cpus;
pub mod estimate;
mod experiment;
pub mod files;
pub mod journal;
mod lock;
mod options;
pub mod pace;
pub mod plan;
mod present;
pub mod quiet;
mod records;
pub mod runner;
pub mod touch;
pub use present::SurveyPresenter;

pub use files::write_all;
pub use options::{Options, Plan};

pub use cap::cap_sizes;
pub use experiment::{argv, Experiment};
pub use plan::{c2c_cpus, plan, Step};
pub use records::{model_record, step_record};
