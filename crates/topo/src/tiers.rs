//! Linux's memory-tiering facts, read from sysfs and procfs under a root folder (so
//! tests read fake trees): per node its CPUs, size, SLIT row and HMAT access classes;
//! the kernel's memory tiers, demotion switch, NUMA-balancing mode and
//! weighted-interleave weights. Absent files stay `None`: nothing here is guessed.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Where the node folders live, below the root.
pub const NODE_DIR: &str = "sys/devices/system/node";
/// Where the kernel lists its memory tiers (Linux 6.1 on).
pub const TIER_DIR: &str = "sys/devices/virtual/memory_tiering";
/// Where weighted-interleave weights live (Linux 6.9 on).
pub const WEIGHT_DIR: &str = "sys/kernel/mm/mempolicy/weighted_interleave";
/// The demotion switch.
pub const DEMOTION_FILE: &str = "sys/kernel/mm/numa/demotion_enabled";
/// The NUMA-balancing mode (0 off, 1 normal, 2 memory tiering, 3 both).
pub const BALANCING_FILE: &str = "proc/sys/kernel/numa_balancing";

/// One HMAT access class of a memory node, as sysfs reports it (ns and MB/s; a
/// value the firmware left at 0 or the file missing is `None`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Access {
    /// The initiator nodes the values hold for (the `initiators/nodeM` links).
    pub initiators: Vec<u32>,
    /// Read latency, ns.
    pub read_latency: Option<u32>,
    /// Write latency, ns.
    pub write_latency: Option<u32>,
    /// Read bandwidth, MB/s.
    pub read_bandwidth: Option<u32>,
    /// Write bandwidth, MB/s.
    pub write_bandwidth: Option<u32>,
}

/// One NUMA node as the kernel shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeFacts {
    /// OS node number.
    pub node: u32,
    /// Its CPUs (empty for a CPU-less node).
    pub cpus: Vec<u32>,
    /// MemTotal of the node, bytes.
    pub mem_bytes: Option<u64>,
    /// Its SLIT row (`distance`), in node order.
    pub distances: Vec<u32>,
    /// HMAT access class 0 (the nearest initiators, CPUs or not).
    pub access0: Option<Access>,
    /// HMAT access class 1 (the nearest CPU initiators): what the kernel's tiering uses.
    pub access1: Option<Access>,
}

/// The tiering facts of one machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierFacts {
    /// The root read ("/" for this machine).
    pub root: String,
    /// The kernel release (`proc/sys/kernel/osrelease`).
    pub kernel: Option<String>,
    /// Nodes with memory or CPUs, by number.
    pub nodes: Vec<NodeFacts>,
    /// The kernel's tiers: memory_tierK's K → its nodes; None without the folder.
    pub tiers: Option<BTreeMap<u32, Vec<u32>>>,
    /// `demotion_enabled`; None without the file.
    pub demotion_enabled: Option<bool>,
    /// `numa_balancing`; None without the file.
    pub numa_balancing: Option<u32>,
    /// Weighted-interleave weight per node; None without the folder.
    pub weights: Option<BTreeMap<u32, u32>>,
}

fn text(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

fn num<T: std::str::FromStr>(p: &Path) -> Option<T> {
    text(p)?.parse().ok()
}

fn list(p: &Path) -> Option<Vec<u32>> {
    let t = text(p)?;
    if t.is_empty() {
        return Some(Vec::new());
    }
    crate::cpulist::parse("list", &t).ok()
}

/// Entries of `dir` named `prefix` + a number, as (number, path), in number order.
fn numbered(dir: &Path, prefix: &str) -> Vec<(u32, PathBuf)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let n = e.file_name().to_str()?.strip_prefix(prefix)?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    v.sort();
    v
}

fn access(node_dir: &Path, class: u32) -> Option<Access> {
    let dir = node_dir.join(format!("access{class}/initiators"));
    if !dir.is_dir() {
        return None;
    }
    // sysfs reports 0 for a value the HMAT did not give: not a figure.
    let val = |f: &str| num::<u32>(&dir.join(f)).filter(|v| *v > 0);
    Some(Access {
        initiators: numbered(&dir, "node").into_iter().map(|(n, _)| n).collect(),
        read_latency: val("read_latency"),
        write_latency: val("write_latency"),
        read_bandwidth: val("read_bandwidth"),
        write_bandwidth: val("write_bandwidth"),
    })
}

fn mem_total(node_dir: &Path, node: u32) -> Option<u64> {
    let t = text(&node_dir.join("meminfo"))?;
    let key = format!("Node {node} MemTotal:");
    let kb: u64 = t
        .lines()
        .find_map(|l| l.strip_prefix(&key))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

fn node_facts(n: u32, d: &Path) -> NodeFacts {
    let distances = text(&d.join("distance"))
        .map(|t| {
            t.split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    NodeFacts {
        node: n,
        cpus: list(&d.join("cpulist")).unwrap_or_default(),
        mem_bytes: mem_total(d, n),
        distances,
        access0: access(d, 0),
        access1: access(d, 1),
    }
}

impl TierFacts {
    /// Read every fact under `root` ("/" for this machine); what is missing stays None.
    pub fn read(root: &Path) -> TierFacts {
        let nodes = numbered(&root.join(NODE_DIR), "node")
            .into_iter()
            .filter(|(_, d)| d.is_dir())
            .map(|(n, d)| node_facts(n, &d))
            .collect();
        let tier_dir = root.join(TIER_DIR);
        let tiers = tier_dir.is_dir().then(|| {
            numbered(&tier_dir, "memory_tier")
                .into_iter()
                .map(|(k, d)| (k, list(&d.join("nodelist")).unwrap_or_default()))
                .collect()
        });
        let weight_dir = root.join(WEIGHT_DIR);
        let weights = weight_dir.is_dir().then(|| {
            numbered(&weight_dir, "node")
                .into_iter()
                .filter_map(|(n, p)| Some((n, num(&p)?)))
                .collect()
        });
        let demotion_enabled = text(&root.join(DEMOTION_FILE)).and_then(|t| match t.as_str() {
            "true" | "1" | "Y" | "y" => Some(true),
            "false" | "0" | "N" | "n" => Some(false),
            _ => None,
        });
        TierFacts {
            root: root.display().to_string(),
            kernel: text(&root.join("proc/sys/kernel/osrelease")),
            nodes,
            tiers,
            demotion_enabled,
            numa_balancing: num(&root.join(BALANCING_FILE)),
            weights,
        }
    }

    /// The node `n`.
    pub fn node(&self, n: u32) -> Option<&NodeFacts> {
        self.nodes.iter().find(|x| x.node == n)
    }

    /// The kernel's tier of node `n` (memory_tierK's K), when the kernel lists tiers.
    pub fn kernel_tier(&self, n: u32) -> Option<u32> {
        self.tiers
            .as_ref()?
            .iter()
            .find(|(_, nodes)| nodes.contains(&n))
            .map(|(k, _)| *k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(root: &Path, rel: &str, body: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, body).unwrap();
    }

    #[test]
    fn a_fake_tree_reads_back_and_missing_files_stay_none() {
        let root = std::env::temp_dir().join(format!("numalab-tiers-topo-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        put(&root, "sys/devices/system/node/node0/cpulist", "0-1\n");
        put(&root, "sys/devices/system/node/node0/distance", "10 20\n");
        put(
            &root,
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemTotal:       1024 kB\nNode 0 MemFree: 5 kB\n",
        );
        put(&root, "sys/devices/system/node/node1/cpulist", "\n");
        put(&root, "sys/devices/system/node/node1/distance", "20 10\n");
        let acc = "sys/devices/system/node/node1/access1/initiators";
        put(&root, &format!("{acc}/read_latency"), "120\n");
        put(&root, &format!("{acc}/write_latency"), "0\n");
        put(&root, &format!("{acc}/read_bandwidth"), "32768\n");
        fs::create_dir_all(root.join(format!("{acc}/node0"))).unwrap();
        put(&root, &format!("{TIER_DIR}/memory_tier4/nodelist"), "0\n");
        put(&root, &format!("{TIER_DIR}/memory_tier6/nodelist"), "1\n");
        put(&root, BALANCING_FILE, "2\n");
        let f = TierFacts::read(&root);
        assert_eq!(f.nodes.len(), 2);
        let n0 = f.node(0).unwrap();
        assert_eq!((n0.cpus.clone(), n0.mem_bytes), (vec![0, 1], Some(1 << 20)));
        assert_eq!(n0.distances, vec![10, 20]);
        assert_eq!(n0.access1, None);
        let n1 = f.node(1).unwrap();
        assert!(n1.cpus.is_empty());
        let a = n1.access1.clone().unwrap();
        assert_eq!(a.initiators, vec![0]);
        assert_eq!((a.read_latency, a.write_latency), (Some(120), None));
        assert_eq!((a.read_bandwidth, a.write_bandwidth), (Some(32768), None));
        assert_eq!((f.kernel_tier(0), f.kernel_tier(1)), (Some(4), Some(6)));
        assert_eq!((f.numa_balancing, f.demotion_enabled), (Some(2), None));
        assert_eq!(f.weights, None);
        let _ = fs::remove_dir_all(&root);
    }
}
