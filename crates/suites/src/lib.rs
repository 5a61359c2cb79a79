//! The seed studies as plans of measurements — KSR1 thread placement, KSR collectives
//! and EARTH (on threads, and between MPI ranks in `collectives::mpi`, `earth::mpi`),
//! the multithreaded CVM study. Suites build what to measure and check the data it
//! moved; the timed loops they call live in probe and mpi. The answers built on them
//! (survey, advise, tiers, cluster) and the registry are in numalab-answers.

pub mod collectives;
pub mod cvm;
pub mod domains;
pub mod earth;
pub mod memory;
pub mod placement;
pub mod settled;
