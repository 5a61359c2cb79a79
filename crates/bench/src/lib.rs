//! snbench experiments built from the probe layer: latency, restart search, sweeps.

pub mod bandwidth;
pub mod c2c;
pub mod cards;
pub mod crew;
pub mod experiment;
pub mod helpers;
pub mod intervene;
pub mod invalidate;
pub mod latency;
pub mod loaded;
pub mod machine;
pub mod machine_present;
pub mod machine_text;
pub mod matrix;
pub mod restart;
pub mod sizing;
pub mod sweep;
