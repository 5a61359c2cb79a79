//! One file per command: clap arguments → the experiment's `Options` → run → emit.

pub mod advise;
pub mod bandwidth;
pub mod c2c;
pub mod cluster;
pub mod collectives;
pub mod cvm;
pub mod dsm;
pub mod earth;
pub mod intervene;
pub mod invalidate;
pub mod latency;
pub mod loaded;
pub mod matrix;
pub mod model;
pub mod monitor;
pub mod mpi;
pub mod plan;
pub mod record;
pub mod report;
pub mod suite;
pub mod survey;
pub mod tiers;
pub mod topo;
pub mod trace;
