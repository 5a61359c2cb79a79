//! `numalab tiers`: which memory tier Linux put each node in, which tier the kernel's
//! own rule gives from the firmware's HMAT and from numalab's measurement, what
//! disagrees (findings), and the weighted-interleave weights and demotion settings to
//! use (recommendations, with their commands).

mod data;
mod experiment;
mod export;
mod findings;
mod interleave;
mod measure;
mod present;
pub mod rule;
mod text;

pub use crate::advise::weights_from;
pub use data::{Finding, MeasuredPerf, PackageBandwidth, Recommendation, TierNode, TierSystem};
pub use experiment::{run, Options, Plan};
pub use findings::{findings, recommendations, recommended_weights};
pub use interleave::InterleaveCheck;
pub use present::TiersPresenter;

#[cfg(test)]
mod tests;
