//! numalab-mpi: ranks for numalab. The transport — launching a job under `mpirun`
//! (or joining the user's) from the job's options, pinning each rank with the
//! placement language and proving where it runs, gathering every rank's records onto
//! rank 0, and the timed point-to-point, one-sided (RMA) and collective loops the MPI
//! experiments and suites measure with — and one folder per experiment: `p2p`
//! (`mpi latency`, `mpi bandwidth`), `matrix` and `ranks`.
//!
//! It sits between cli/suites and bench/probe/topo and never imports upward.

pub mod across;
pub mod breakdown;
pub mod buf;
pub mod coll;
pub mod coll_timed;
pub mod env;
pub mod error;
pub mod family;
pub mod finalize;
pub mod gather;
pub mod hostfile;
pub mod job;
pub mod keep;
pub mod kernels;
pub mod launch;
pub mod launch_notice;
pub mod launch_stdout;
pub mod launcher;
pub mod liveness;
pub mod loop7;
pub mod mapping;
pub mod matrix;
pub mod p2p;
pub mod place;
pub mod ranks;
pub mod raw;
pub mod remote;
pub mod shift;
pub mod sizes;
pub mod slurm;
pub mod world;

pub use env::JobEnv;
pub use error::{Error, Result};
pub use job::{JobOptions, Launch};
pub use launch::{LaunchRequest, Launched};
pub use launcher::Launcher;
pub use place::RankPlacement;
pub use world::{Threading, World, WorldOptions};
