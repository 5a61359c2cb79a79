//! The answers built on every experiment — the survey, advice from a survey, memory
//! tiers and the cluster check — and the top library's two lists: the registry of
//! presenters and `experiments::ALL`. They run the seed studies (numalab-suites) and
//! snbench's and the MPI experiments, and never measure anything themselves.

/// `numalab advise`: from a survey's matrices, which placement to use and its commands.
pub mod advise;
/// `numalab cluster`: every host's memory and every link between hosts, and the odd one.
pub mod cluster;
/// Every experiment numalab runs, listed once (`ALL`).
pub mod experiments;
/// The one registry of presentations: every record kind and how it is shown.
pub mod registry;
/// The survey: its battery, runner, journal and files.
pub mod survey;
/// `numalab tiers`: each node's memory tier (Linux, HMAT, measured) and what to set.
pub mod tiers;
