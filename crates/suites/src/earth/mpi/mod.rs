//! `numalab suite earth --mpi`: the EARTH operation table (seed 001, Table 1) between
//! MPI ranks — remote load and store as RMA get and put, block moves, remote call and
//! spawn as active messages to a server loop on the remote rank, each sequential and
//! pipelined, beside the same RMA aimed at the issuer's own window ("local rank") —
//! the issuer's and server's share of a remote call (Table 2), one remote load stage
//! by stage (Table 4, in `breakdown`), and the memory-level parallelism of
//! G outstanding remote gets.

pub mod breakdown;
mod data;
mod measure;
mod plan;
mod present;
mod text;

pub use data::{MaskBest, MaskData, MaskPoint, SeedRow};
pub use measure::measure;
pub use plan::*;
pub use present::EarthMpiPresenter;
pub use text::mask_curve;
