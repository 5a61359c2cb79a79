//! The seed studies as plans of measurements: the KSR1 thread-placement suites and
//! the KSR collective-communication suite. Suites build lists of probe scripts and
//! check the data they moved; they never time anything themselves.

pub mod collectives;
pub mod collectives_mpi;
pub mod collectives_mpi_run;
pub mod cvm;
pub mod domains;
pub mod earth;
pub mod earth_mpi;
pub mod earth_mpi_breakdown;
pub mod memory;
pub mod placement;
pub mod survey;
