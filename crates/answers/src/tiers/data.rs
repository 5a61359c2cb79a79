//! The typed `data` of the tiers record kinds: one "tiers" record per memory node,
//! one "tiers-system" record with the kernel's state, findings and recommendations.

use numalab_topo::tiers::Access;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What numalab measured for one memory node: the best CPU initiator's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredPerf {
    /// The initiator node with the lowest latency to this node.
    pub latency_from: u32,
    /// Its median latency, ns.
    pub latency_ns: f64,
    /// The record the latency came from.
    pub latency_record: String,
    /// The initiator node with the highest bandwidth from this node.
    pub bandwidth_from: Option<u32>,
    /// Its median bandwidth, GB/s (every core of the initiator node reading).
    pub bandwidth_gbps: Option<f64>,
    /// The record the bandwidth came from.
    pub bandwidth_record: Option<String>,
}

/// The data of a "tiers" record: one memory node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierNode {
    /// OS node number.
    pub node: u32,
    /// Its CPUs (empty: CPU-less).
    pub cpus: Vec<u32>,
    /// MemTotal, bytes.
    pub mem_bytes: Option<u64>,
    /// Its SLIT row, in node order.
    pub slit: Vec<u32>,
    /// HMAT access class 0 (nearest initiators of any kind).
    pub access0: Option<Access>,
    /// HMAT access class 1 (nearest CPU initiators): what the kernel's rule uses.
    pub access1: Option<Access>,
    /// The tier the running kernel put it in (memory_tierK's K).
    pub kernel_tier: Option<u32>,
    /// The abstract distance the kernel's rule gives from the firmware's values.
    pub firmware_adistance: Option<i32>,
    /// The tier of that distance.
    pub firmware_tier: Option<i32>,
    /// How the firmware distance was found (the values used, or why the default).
    pub firmware_basis: String,
    /// numalab's measurement of the node, from `--from`.
    pub measured: Option<MeasuredPerf>,
    /// The abstract distance the same rule gives from the measurement.
    pub measured_adistance: Option<i32>,
    /// The tier of that distance.
    pub measured_tier: Option<i32>,
    /// The weighted-interleave weight the kernel holds for it.
    pub weight: Option<u32>,
}

/// The bandwidth one initiator package's CPUs measured to each memory node: the
/// kernel's interleave weights are global, while each package would want its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackageBandwidth {
    /// The package (None: the topology names no packages; one CPU node stands alone).
    pub package: Option<u32>,
    /// Its CPU nodes that were measured.
    pub initiators: Vec<u32>,
    /// (memory node, the best of its initiators' median GB/s), in node order.
    pub bandwidth: Vec<(u32, f64)>,
    /// The weights that bandwidth asks for (node, weight).
    pub weights: Vec<(u32, u32)>,
}

impl PackageBandwidth {
    /// "package 0 (node 0)" or "node 2" when the topology names no package.
    pub fn name(&self) -> String {
        let nodes = numalab_topo::cpulist::format(&self.initiators);
        match self.package {
            Some(p) => format!("package {p} (CPU node {nodes})"),
            None => format!("CPU node {nodes}"),
        }
    }
}

/// One finding, one line with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The rule that found it: kernel-differs, measured-tier, firmware-off, no-hmat,
    /// weights (per package), weights-packages.
    pub rule: String,
    /// The node it is about, if one.
    pub node: Option<u32>,
    /// The finding with its evidence.
    pub text: String,
}

/// One recommendation and the commands that apply it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// What to do, and why.
    pub text: String,
    /// The commands (sysfs lines, numactl, the system call).
    pub commands: Vec<String>,
}

/// The data of the "tiers-system" record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierSystem {
    /// The root read ("/": this machine).
    pub root: String,
    /// The kernel release read there.
    pub kernel: Option<String>,
    /// memory_tierK's K → its nodes, as the kernel lists them.
    pub tiers: Option<BTreeMap<u32, Vec<u32>>>,
    /// `demotion_enabled`.
    pub demotion_enabled: Option<bool>,
    /// `numa_balancing` (0 off, 1 normal, 2 memory tiering, 3 both).
    pub numa_balancing: Option<u32>,
    /// The kernel function and version the predictions follow.
    pub rule: String,
    /// The DRAM reference of the firmware prediction, in words.
    pub firmware_reference: String,
    /// The DRAM reference of the measured prediction, or why there is none.
    pub measured_reference: String,
    /// Findings, one line each.
    pub findings: Vec<Finding>,
    /// Recommendations with their commands.
    pub recommendations: Vec<Recommendation>,
    /// What `--export-hwloc` wrote, when asked.
    #[serde(default)]
    pub hwloc_export: Option<String>,
    /// The interleave weights each initiator package's measured bandwidth asks for.
    #[serde(default)]
    pub package_weights: Vec<PackageBandwidth>,
    /// What `--verify-interleave` found, when asked and the kernel has the mode.
    #[serde(default)]
    pub interleave: Option<super::interleave::InterleaveCheck>,
}

/// The words of a NUMA-balancing mode.
pub fn balancing_name(mode: u32) -> &'static str {
    match mode {
        0 => "off",
        1 => "normal",
        2 => "memory tiering",
        3 => "normal + memory tiering",
        _ => "unknown mode",
    }
}
