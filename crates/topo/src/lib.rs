//! numalab-topo: the machine's topology, distances and hops, the placement
//! language, thread and memory binding, and proof of where things landed.

pub mod bind;
pub mod buffer;
pub mod cpulist;
pub mod error;
pub mod hops;
pub mod hwloc_xml;
pub mod interleave;
pub mod lists;
pub mod load;
pub mod model;
pub mod plan;
pub mod privileges;
pub mod spec;
pub mod sysfs;
pub mod tiers;

pub use error::{Error, Result};
pub use load::{Host, TopologySource};
pub use model::*;
pub use plan::{MemPlacement, Plan, ThreadPlacement, ThreadRequest};
pub use spec::{CoreKind, MemSpec, PageSize, Smt, ThreadSpec};

/// Bytes in binary units for people ("1.5 GiB", "32 MiB", "512 B").
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || (v - v.round()).abs() < 0.05 {
        format!("{:.0} {}", v, UNITS[u])
    } else {
        format!("{:.1} {}", v, UNITS[u])
    }
}
