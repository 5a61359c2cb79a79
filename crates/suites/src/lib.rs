//! The seed studies as plans of measurements: the KSR1 thread-placement suites and
//! the KSR collective-communication suite. Suites build lists of probe scripts and
//! check the data they moved; they never time anything themselves.

pub mod advise;
pub mod collectives;
pub mod cvm;
pub mod domains;
pub mod earth;
pub mod experiments;
pub mod memory;
pub mod placement;
pub mod registry;
pub mod survey;
