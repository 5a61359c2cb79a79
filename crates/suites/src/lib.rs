//! The seed studies as plans of measurements — KSR1 thread placement, KSR collectives
//! and EARTH (on threads, and between MPI ranks in `collectives::mpi`, `earth::mpi`),
//! the multithreaded CVM study — the survey (its battery, runner, journal and files),
//! advice from a survey, and the top library's two lists: the registry of presenters
//! and `experiments::ALL`. Suites build what to measure and check the data it moved;
//! the timed loops they call live in probe and mpi.

pub mod advise;
pub mod cluster;
pub mod collectives;
pub mod cvm;
pub mod domains;
pub mod earth;
pub mod experiments;
pub mod memory;
pub mod placement;
pub mod registry;
pub mod settled;
pub mod survey;
pub mod tiers;
