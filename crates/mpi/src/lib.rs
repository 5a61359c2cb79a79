//! numalab-mpi: ranks for numalab. Launching a job under `mpirun` (or joining the
//! user's), pinning each rank with the placement language and proving where it runs,
//! gathering every rank's records onto rank 0, and the point-to-point and one-sided
//! (RMA) primitives the MPI experiments and suites measure with.
//!
//! It sits between cli/suites and bench/probe/topo and never imports upward.

pub mod breakdown;
pub mod buf;
pub mod coll;
pub mod coll_timed;
pub mod env;
pub mod error;
pub mod gather;
pub mod job;
pub mod kernels;
pub mod launch;
pub mod launch_notice;
pub mod loop7;
pub mod matrix;
pub mod p2p;
pub mod place;
pub mod ranks;
pub mod raw;
pub mod remote;
pub mod sizes;
pub mod world;

pub use env::JobEnv;
pub use error::{Error, Result};
pub use job::{JobOptions, Launch};
pub use launch::{LaunchRequest, Launched};
pub use place::RankPlacement;
pub use world::{Threading, World, WorldOptions};
