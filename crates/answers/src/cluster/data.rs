//! The typed `data` of the cluster's records: each host's settings and memory, the
//! host × host matrices, and the findings.

use numalab_results::disturb::CpuQuota;
use serde::{Deserialize, Serialize};

/// Record kind of one host's settings and memory check.
pub const KIND_HOST: &str = "cluster-host";
/// Record kind of the host × host matrices.
pub const KIND_LINKS: &str = "cluster-links";
/// Record kind of the allreduce and barrier across all hosts.
pub const KIND_COLLECTIVES: &str = "cluster-collectives";
/// Record kind of the findings: odd hosts, odd links, differing settings.
pub const KIND_FINDINGS: &str = "cluster-findings";

/// One setting of a host, as read there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setting {
    /// Its name ("THP", "kernel", …).
    pub name: String,
    /// Its value on this host.
    pub value: String,
}

/// One NUMA node's short memory check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeMemory {
    /// The node (OS index).
    pub node: u32,
    /// CPUs of this rank's share on the node that were used (one per core).
    pub cores: usize,
    /// Median idle latency of a dependent chase on the node's own memory, ns.
    pub latency_ns: Option<f64>,
    /// Median read bandwidth of one core, GB/s.
    pub read_1core_gbps: Option<f64>,
    /// Median read bandwidth of all the cores together, GB/s.
    pub read_all_gbps: Option<f64>,
    /// Why a figure is missing, if one is.
    pub unavailable: Vec<String>,
    /// Bytes the chase walked (`--mem-size`, else past every cache).
    #[serde(default)]
    pub chase_bytes: Option<u64>,
    /// Why a figure is not all memory (a `--mem-size` within reach of the caches).
    #[serde(default)]
    pub caveat: Option<String>,
}

/// `data` of a `cluster-host` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostData {
    /// The host's name.
    pub host: String,
    /// Its rank.
    pub rank: usize,
    /// Its settings, in a fixed order.
    pub settings: Vec<Setting>,
    /// Where the sysfs and procfs settings were read ("/" unless a test's tree).
    pub settings_root: String,
    /// The memory check per NUMA node with CPUs in this rank's share.
    pub memory: Vec<NodeMemory>,
    /// The host's CPU quota and how much it throttled the memory check's passes.
    #[serde(default)]
    pub throttling: Throttling,
}

/// Throttled time at or beyond this share of the memory passes' wall time makes a
/// host's memory figures "measured under a CPU quota" (the steal threshold's 1 %).
pub const THROTTLED_SHARE: f64 = 0.01;

/// A host's CPU quota and what the memory check's passes saw of it: the throttling of
/// the rank's cgroup and its ancestors (`cpu.stat`), read before and after each pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Throttling {
    /// The tightest CPU quota of the rank's cgroup or an ancestor (None: none set, or
    /// no cgroup cpu controller readable).
    #[serde(default)]
    pub quota: Option<CpuQuota>,
    /// Passes sampled (the first thread of each figure's passes).
    pub passes: usize,
    /// Of them, the passes during which the cgroup was throttled.
    pub throttled_passes: usize,
    /// Time the cgroup was throttled during the passes, µs (summed over its CPUs).
    pub throttled_us: u64,
    /// Wall time of the passes, µs.
    pub wall_us: u64,
}

impl Throttling {
    /// Whether the figures were measured under a CPU quota that throttled them: a
    /// throttled pass, and throttled time of at least [`THROTTLED_SHARE`] of the passes'.
    pub fn throttled(&self) -> bool {
        self.throttled_passes > 0
            && self.throttled_us as f64 >= THROTTLED_SHARE * self.wall_us as f64
    }

    /// "its cgroup was throttled 812 ms of the 905 ms its memory passes took (28 of 30
    /// passes); CPU quota 1 ms of CPU per 20 ms (5 % of a CPU)".
    pub fn words(&self) -> String {
        let ms = |us: u64| format!("{:.0} ms", us as f64 / 1000.0);
        let quota = match &self.quota {
            Some(q) => format!("; CPU quota {}", q.words()),
            None => String::new(),
        };
        format!(
            "its cgroup was throttled {} of the {} its memory passes took ({} of {} passes){quota}",
            ms(self.throttled_us),
            ms(self.wall_us),
            self.throttled_passes,
            self.passes
        )
    }
}

/// `data` of a `cluster-links` record: cells `[from][to]`, None on the diagonal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinksData {
    /// The hosts, in rank order.
    pub hosts: Vec<String>,
    /// Median one-way latency of 8-byte ping-pongs, ns (symmetric).
    pub latency_ns: Vec<Vec<Option<f64>>>,
    /// Median bandwidth as the sender saw it, GB/s.
    pub send_gbps: Vec<Vec<Option<f64>>>,
    /// Median bandwidth as the receiver saw it, GB/s.
    pub recv_gbps: Vec<Vec<Option<f64>>>,
    /// Bytes per bandwidth message.
    pub size: u64,
    /// Messages in flight per sample.
    pub window: usize,
    /// How the matrices were measured, in words.
    pub method: String,
}

/// A figure of one host beyond the others'.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OddHost {
    /// The figure ("node 0 read, all cores").
    pub figure: String,
    /// Its unit.
    pub unit: String,
    /// The host.
    pub host: String,
    /// Its value.
    pub value: f64,
    /// The other hosts' smallest and largest.
    pub others: (f64, f64),
}

/// A host whose memory figures were measured under a CPU quota that throttled them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThrottledHost {
    /// The host.
    pub host: String,
    /// Its quota and the throttling its memory passes saw.
    pub throttling: Throttling,
}

/// A link (a host's row or column of a matrix, or one cell) beyond the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OddLink {
    /// The matrix ("send bandwidth", "receive bandwidth", "latency").
    pub matrix: String,
    /// "from" (the host's row: what it sends), "to" (its column), or "pair" (one cell).
    pub part: String,
    /// The host (the cell's sender for a pair).
    pub host: String,
    /// The peer of a pair.
    pub peer: Option<String>,
    /// The median of the row or column, or the cell.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// The range of the cells it was held against.
    pub others: (f64, f64),
}

/// A setting whose value differs between hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingDiff {
    /// The setting.
    pub setting: String,
    /// Each value and the hosts that hold it, most hosts first.
    pub values: Vec<(String, Vec<String>)>,
}

/// `data` of a `cluster-findings` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct FindingsData {
    /// The rule, in words.
    pub rule: String,
    /// Hosts with a figure beyond the others'.
    pub odd_hosts: Vec<OddHost>,
    /// Hosts whose memory figures a CPU quota throttled, whatever the figures.
    #[serde(default)]
    pub throttled_hosts: Vec<ThrottledHost>,
    /// Links beyond the others.
    pub odd_links: Vec<OddLink>,
    /// Settings that differ between hosts.
    pub settings: Vec<SettingDiff>,
    /// What could not be judged, and why.
    pub notes: Vec<String>,
}
