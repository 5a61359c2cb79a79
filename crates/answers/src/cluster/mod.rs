//! `numalab cluster`: every host's settings and memory and every link between hosts in
//! one run, one rank per host, and the odd host, link or setting named. The latency
//! matrix is measured in rounds of disjoint pairs (N − 1 rounds, not N²/2 steps), the
//! bandwidth matrix in mpiGraph's shift steps (everyone sending at once); the plan
//! scales to 10,000 hosts on paper (`--dry-run --hosts N`).

mod data;
pub mod journal;
mod measure;
mod memory;
pub mod parts;
mod plan;
mod present;
mod rule;
mod run;
mod settings;
mod text;

pub use data::*;
pub use measure::measure;
pub use plan::*;
pub use present::ClusterPresenter;
pub use rule::{beyond, findings, odd_parts, odd_values, FACTOR, K, MIN_HOSTS};
pub use run::journalled;
pub use settings::ROOT_VAR;
