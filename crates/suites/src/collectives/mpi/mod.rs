//! `numalab suite collectives --mpi`: the KSR collectives (seed 002) between MPI
//! ranks. The seed's algorithms run as the shared-memory suite's own scripts
//! ([`collectives::scripts`]): each rank's buffers live in its part of one RMA window,
//! a copy from another rank's buffer is an MPI_Get, a `Sync` is flush + barrier. Beside
//! each, MPI's own collective. Every moved word is checked against
//! [`collectives::expect`]; the seed's cost models are fitted with
//! [`crate::collectives::run::fit_models`].

mod data;
mod plan;
mod present;
mod run;
mod settle;
mod text;

pub use data::CollectiveMpiData;
pub use plan::*;
pub use present::CollectivesMpiPresenter;
pub use run::measure;
pub use text::osu_text;
