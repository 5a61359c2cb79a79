//! The machine model: what numalab knows about a topology, independent of hwloc.
//!
//! Built once from hwloc (this machine, an XML file or a synthetic description),
//! then used by planning, output and tests as plain data.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A level of the locality hierarchy that placements can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// A hardware thread (OS CPU).
    Pu,
    /// A core (its SMT siblings share it).
    Core,
    /// An L2 cache domain.
    L2,
    /// An L3 cache domain (CCX, cluster).
    L3,
    /// A die.
    Die,
    /// A NUMA node (memory domain; CPU-less nodes have no CPUs).
    Node,
    /// A package (socket).
    Package,
    /// An hwloc group (e.g. sub-NUMA cluster, board).
    Group,
}

impl Level {
    /// Every level, finest first.
    pub const ALL: [Level; 8] = [
        Level::Pu,
        Level::Core,
        Level::L2,
        Level::L3,
        Level::Die,
        Level::Node,
        Level::Package,
        Level::Group,
    ];

    /// The name used in specs and output.
    pub fn name(self) -> &'static str {
        match self {
            Level::Pu => "pu",
            Level::Core => "core",
            Level::L2 => "l2",
            Level::L3 => "l3",
            Level::Die => "die",
            Level::Node => "node",
            Level::Package => "pkg",
            Level::Group => "group",
        }
    }

    /// Parse a level name (with the usual aliases).
    pub fn parse(s: &str) -> Option<Level> {
        Some(match s.to_ascii_lowercase().as_str() {
            "pu" | "cpu" | "thread" => Level::Pu,
            "core" => Level::Core,
            "l2" | "l2cache" => Level::L2,
            "l3" | "l3cache" | "llc" => Level::L3,
            "die" => Level::Die,
            "node" | "numa" | "numanode" => Level::Node,
            "pkg" | "package" | "socket" => Level::Package,
            "group" => Level::Group,
            _ => return None,
        })
    }

    /// The accepted level names, for error messages.
    pub fn valid_names() -> &'static str {
        "pu, core, l2, l3, die, node, pkg (package, socket), group"
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One usable hardware thread (online and allowed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pu {
    /// OS CPU number (what Linux, taskset and numactl call the CPU).
    pub os: u32,
    /// hwloc logical index.
    pub logical: u32,
    /// Logical index of the core.
    pub core: u32,
    /// Rank among the core's SMT siblings (0 = first hardware thread).
    pub smt_rank: u32,
    /// Logical index of the L2 domain, if the topology has L2 caches.
    pub l2: Option<u32>,
    /// Logical index of the L3 domain, if any.
    pub l3: Option<u32>,
    /// Logical index of the die, if any.
    pub die: Option<u32>,
    /// Logical index of the package, if any.
    pub package: Option<u32>,
    /// Logical index of the (outermost) group, if any.
    pub group: Option<u32>,
    /// OS index of the local NUMA node (the one attached nearest to this CPU).
    pub node: Option<u32>,
    /// CPU kind rank: 0 = least power-hungry kind; None when hwloc knows no kinds.
    pub kind: Option<u32>,
}

impl Pu {
    /// The index of the domain containing this PU at `level` (OS index for node/pu).
    pub fn domain(&self, level: Level) -> Option<u32> {
        match level {
            Level::Pu => Some(self.os),
            Level::Core => Some(self.core),
            Level::L2 => self.l2,
            Level::L3 => self.l3,
            Level::Die => self.die,
            Level::Node => self.node,
            Level::Package => self.package,
            Level::Group => self.group,
        }
    }
}

/// A domain at some level: the CPUs it contains and the memory attached to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Domain {
    /// Index used in specs: logical index, or OS index for nodes.
    pub index: u32,
    /// hwloc OS index, where the object has one.
    pub os_index: Option<u32>,
    /// Usable CPUs (OS numbers) in topology order.
    pub cpus: Vec<u32>,
    /// Cache size in bytes for cache levels.
    pub cache_bytes: Option<u64>,
}

/// The domains of one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelDomains {
    /// Which level.
    pub level: Level,
    /// Its domains in spec-index order.
    pub domains: Vec<Domain>,
}

/// A huge-page pool (or the base page) of a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PagePool {
    /// Page size in bytes.
    pub size: u64,
    /// Pages reserved (hugetlb) or present, as hwloc or sysfs reports.
    pub count: u64,
    /// Free pages, where known (this machine only).
    pub free: Option<u64>,
}

/// A NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// OS index (what numactl calls the node).
    pub os: u32,
    /// Local memory in bytes (0 when unknown or empty).
    pub total_bytes: u64,
    /// Free memory in bytes, where known (this machine only).
    pub free_bytes: Option<u64>,
    /// CPUs this node is local to (hwloc locality; may be non-empty for CPU-less nodes).
    pub local_cpus: Vec<u32>,
    /// True when no CPU has this node as its own local node (CXL, HBM, PMEM, far memory).
    pub cpu_less: bool,
    /// hwloc subtype, e.g. DRAM, HBM, NVM, CXL-DRAM, GPUMemory.
    pub subtype: Option<String>,
    /// Page sizes and counts.
    pub pages: Vec<PagePool>,
}

/// Node-to-node distances and the hop counts derived from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeDistances {
    /// Where the matrix came from: an hwloc matrix name/type, or "topology tree".
    pub source: String,
    /// Node OS indices, in matrix order.
    pub nodes: Vec<u32>,
    /// Relative distances (SLIT style, local = 10), row = from, column = to; empty for the tree fallback.
    pub values: Vec<Vec<u64>>,
    /// Hop counts: rank of each distance among the distinct values (0 = local).
    pub hops: Vec<Vec<u32>>,
}

impl NodeDistances {
    /// Position of a node in the matrix.
    pub fn pos(&self, node: u32) -> Option<usize> {
        self.nodes.iter().position(|&n| n == node)
    }

    /// Hops from node `a` to node `b`, if both are in the matrix.
    pub fn hops_between(&self, a: u32, b: u32) -> Option<u32> {
        Some(self.hops[self.pos(a)?][self.pos(b)?])
    }

    /// Raw distance from `a` to `b`, if the matrix has values.
    pub fn distance(&self, a: u32, b: u32) -> Option<u64> {
        self.values.get(self.pos(a)?)?.get(self.pos(b)?).copied()
    }
}

/// One value of an hwloc memory attribute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemAttrValue {
    /// Initiator CPUs (list form), or None for attributes without initiator.
    pub initiator: Option<String>,
    /// Target node OS index.
    pub node: u32,
    /// The value in the attribute's unit.
    pub value: u64,
}

/// An hwloc memory attribute (latency, bandwidth, capacity) with all its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemAttr {
    /// hwloc's name.
    pub name: String,
    /// Unit of the values.
    pub unit: String,
    /// Every (initiator, target) value.
    pub values: Vec<MemAttrValue>,
}

/// A kind of CPU core (hybrid machines).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuKind {
    /// 0 = least power-hungry; higher = more performant.
    pub rank: u32,
    /// hwloc's efficiency value, if known.
    pub efficiency: Option<u32>,
    /// The CPUs of this kind.
    pub cpus: Vec<u32>,
    /// hwloc's textual infos (CoreType, FrequencyMaxMHz, ...).
    pub infos: Vec<(String, String)>,
}

/// A node of the compact object tree shown by `numalab topo`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeNode {
    /// e.g. "Package L#0", "L3 L#2 (32 MiB)", "PU L#3 (P#3)".
    pub label: String,
    /// Memory (NUMA) children, shown first.
    pub memory: Vec<String>,
    /// Normal children.
    pub children: Vec<TreeNode>,
}

/// Everything numalab knows about one topology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// "this machine", "xml:PATH" or "synthetic:DESC".
    pub source: String,
    /// True when this is the machine numalab runs on (binding and measuring possible).
    pub this_system: bool,
    /// CPU model string from hwloc, if known.
    pub cpu_model: Option<String>,
    /// Host name recorded in the topology, if any.
    pub hostname: Option<String>,
    /// Usable PUs in hwloc logical order.
    pub pus: Vec<Pu>,
    /// CPUs that exist but are offline.
    pub offline_cpus: Vec<u32>,
    /// CPUs online but not allowed to this process (cgroups, cpusets).
    pub disallowed_cpus: Vec<u32>,
    /// Domains per level (only levels the topology has).
    pub levels: Vec<LevelDomains>,
    /// NUMA nodes in OS-index order.
    pub nodes: Vec<Node>,
    /// Node distances and hops (always present; tree-derived when no matrix).
    pub distances: NodeDistances,
    /// hwloc memory attributes, when present.
    pub memattrs: Vec<MemAttr>,
    /// CPU kinds, when hwloc knows them.
    pub cpu_kinds: Vec<CpuKind>,
    /// Data and unified caches, one entry per level, innermost first.
    #[serde(default)]
    pub caches: Vec<CacheInfo>,
    /// Compact object tree.
    pub tree: TreeNode,
}

/// One level of data (or unified) cache as the first such hwloc object describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheInfo {
    /// Cache level: 1, 2, 3, 4.
    pub level: u32,
    /// Size of one instance in bytes.
    pub bytes: u64,
    /// Line size in bytes, when hwloc knows it.
    pub line_bytes: Option<u32>,
    /// PUs sharing one instance.
    pub shared_by: u32,
}

impl Machine {
    /// The domains at a level, if the topology has that level.
    pub fn domains(&self, level: Level) -> Option<&[Domain]> {
        self.levels
            .iter()
            .find(|l| l.level == level)
            .map(|l| l.domains.as_slice())
    }

    /// The data cache at `level` (1..=4), if the topology describes one.
    pub fn cache(&self, level: u32) -> Option<&CacheInfo> {
        self.caches.iter().find(|c| c.level == level)
    }

    /// The largest (last-level) data cache.
    pub fn last_level_cache(&self) -> Option<&CacheInfo> {
        self.caches.iter().max_by_key(|c| c.level)
    }

    /// `cpu` first, then the other usable CPUs of its NUMA node, L3 domain and core
    /// kind: where work placed on `cpu` may move without changing what it measures.
    pub fn peers(&self, cpu: u32) -> Vec<u32> {
        let Some(d) = self.pu(cpu) else {
            return vec![cpu];
        };
        let mut v = vec![cpu];
        v.extend(
            self.pus
                .iter()
                .filter(|p| p.os != cpu && p.node == d.node && p.l3 == d.l3 && p.kind == d.kind)
                .map(|p| p.os),
        );
        v
    }

    /// Look up a usable PU by OS number.
    pub fn pu(&self, os: u32) -> Option<&Pu> {
        self.pus.iter().find(|p| p.os == os)
    }

    /// Look up a node by OS index.
    pub fn node(&self, os: u32) -> Option<&Node> {
        self.nodes.iter().find(|n| n.os == os)
    }

    /// Usable CPUs as a compact list.
    pub fn cpu_list(&self) -> String {
        crate::cpulist::format(&self.pus.iter().map(|p| p.os).collect::<Vec<_>>())
    }

    /// True when memory can be placed on the node. Topology files often omit
    /// node sizes, so there a size of 0 means unknown rather than empty.
    pub fn has_memory(&self, node: &Node) -> bool {
        node.total_bytes > 0 || !self.this_system
    }

    /// OS indices of the nodes that have memory.
    pub fn memory_nodes(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter(|n| self.has_memory(n))
            .map(|n| n.os)
            .collect()
    }

    /// Nodes that have memory, as a compact list.
    pub fn memory_node_list(&self) -> String {
        crate::cpulist::format(&self.memory_nodes())
    }

    /// The most informative level for spreading threads: the first of
    /// node, L3, package, die, core with more than one domain.
    pub fn default_level(&self) -> Level {
        for level in [Level::Node, Level::L3, Level::Package, Level::Die] {
            if self.domains(level).is_some_and(|d| d.len() > 1) {
                return level;
            }
        }
        Level::Core
    }

    /// One-line summary used in provenance: "2 pkg, 8 nodes, 16 l3, 64 cores, 64 PUs".
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        for level in [
            Level::Package,
            Level::Die,
            Level::Node,
            Level::L3,
            Level::Core,
        ] {
            if let Some(d) = self.domains(level) {
                let (one, many) = match level {
                    Level::Package => ("package", "packages"),
                    Level::Die => ("die", "dies"),
                    Level::Node => ("node", "nodes"),
                    Level::L3 => ("L3", "L3"),
                    _ => ("core", "cores"),
                };
                let name = if d.len() == 1 { one } else { many };
                parts.push(format!("{} {}", d.len(), name));
            }
        }
        parts.push(format!(
            "{} PU{}",
            self.pus.len(),
            if self.pus.len() == 1 { "" } else { "s" }
        ));
        let cpu_less = self.nodes.iter().filter(|n| n.cpu_less).count();
        if cpu_less > 0 {
            parts.push(format!(
                "{cpu_less} CPU-less node{}",
                if cpu_less == 1 { "" } else { "s" }
            ));
        }
        if !self.offline_cpus.is_empty() {
            parts.push(format!(
                "offline CPUs {}",
                crate::cpulist::format(&self.offline_cpus)
            ));
        }
        parts.join(", ")
    }
}
