//! numalab-prof: snperf for today. A system monitor, a recorder that follows a
//! command's threads and processes, streamed self-describing traces, and the
//! metrics derived from them, each labelled with the source it came from.

pub mod counters;
pub mod dump;
pub mod export;
pub mod follow;
pub mod info;
pub mod metrics;
pub mod monitor;
pub mod pmu;
pub mod procfs;
pub mod record;
pub mod report;
pub mod system;
pub mod tables;
pub mod trace;
