//! The seed studies as plans of measurements: the KSR1 thread-placement suites and
//! the KSR collective-communication suite. Suites build lists of probe scripts and
//! check the data they moved; they never time anything themselves.

pub mod advise;
pub mod collectives;
pub mod collectives_mpi;
mod collectives_mpi_present;
pub mod collectives_mpi_run;
pub mod cvm;
pub mod domains;
pub mod earth;
pub mod earth_mpi;
pub mod earth_mpi_breakdown;
mod earth_mpi_present;
pub mod experiments;
pub mod memory;
pub mod placement;
pub mod registry;
pub mod survey;

pub use collectives_mpi_present::{CollectiveMpiData, CollectivesMpiPresenter};
pub use earth_mpi_present::{
    mask_curve, EarthMpiPresenter, MaskBest, MaskData, MaskPoint, SeedRow,
};
