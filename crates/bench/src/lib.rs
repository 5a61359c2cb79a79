//! snbench's experiments built from the probe layer — latency (back-to-back, restart
//! search, states, size sweeps), bandwidth kernels and bwmp, c2c, invalidate,
//! intervene, the node × node matrices and loaded latency — each as a module of one
//! shape (`Options` → `Plan::resolve` → `run` → records, a presenter rendering their
//! text and HTML from the records), plus the machine's own records (`topo`, `plan`),
//! the summary cards and the context every record is stamped with.

pub mod answer;
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
pub mod pairs;
pub mod restart;
pub mod sizing;
pub mod sweep;
