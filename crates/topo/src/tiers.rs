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
    /// Each file whose content is not what the kernel writes there, named with its
    /// content: its fact is left out (None or empty), never reinterpreted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub malformed: Vec<String>,
}

/// Collects the files whose content does not parse, relative to the root.
struct Bad<'a> {
    root: &'a Path,
    lines: Vec<String>,
}

impl Bad<'_> {
    /// Names `p` with its content and what it should hold.
    fn say(&mut self, p: &Path, content: &str, expected: &str) {
        let rel = p.strip_prefix(self.root).unwrap_or(p).display();
        let mut c: String = content.chars().take(60).collect();
        if c.len() < content.len() {
            c.push('…');
        }
        self.lines
            .push(format!("{rel} holds '{c}', not {expected}: left out"));
    }

    /// The number in `p`, or None (named here when the file is there but holds none).
    fn num<T: std::str::FromStr>(&mut self, p: &Path, expected: &str) -> Option<T> {
        let t = text(p)?;
        let v = t.parse().ok();
        if v.is_none() {
            self.say(p, &t, expected);
        }
        v
    }

    /// The list in `p` (an empty file: an empty list), or None.
    fn list(&mut self, p: &Path) -> Option<Vec<u32>> {
        let t = text(p)?;
        if t.is_empty() {
            return Some(Vec::new());
        }
        let v = crate::cpulist::parse("list", &t).ok();
        if v.is_none() {
            self.say(p, &t, "a list such as 0-3,8");
        }
        v
    }
}

fn text(p: &Path) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
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

fn access(node_dir: &Path, class: u32, bad: &mut Bad) -> Option<Access> {
    let dir = node_dir.join(format!("access{class}/initiators"));
    if !dir.is_dir() {
        return None;
    }
    // sysfs reports 0 for a value the HMAT did not give: not a figure.
    let mut val = |f: &str| {
        bad.num::<u32>(&dir.join(f), "a number from 0 to 4294967295")
            .filter(|v| *v > 0)
    };
    Some(Access {
        read_latency: val("read_latency"),
        write_latency: val("write_latency"),
        read_bandwidth: val("read_bandwidth"),
        write_bandwidth: val("write_bandwidth"),
        initiators: numbered(&dir, "node").into_iter().map(|(n, _)| n).collect(),
    })
}

fn mem_total(node_dir: &Path, node: u32, bad: &mut Bad) -> Option<u64> {
    let p = node_dir.join("meminfo");
    let t = text(&p)?;
    let key = format!("Node {node} MemTotal:");
    let kb = t
        .lines()
        .find_map(|l| l.strip_prefix(&key))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok());
    if kb.is_none() {
        bad.say(&p, &t, &format!("a '{key} N kB' line"));
    }
    kb?.checked_mul(1024)
}

/// On a single node, the system's MemTotal (/proc/meminfo) when larger than the
/// node's: some guests account only part of their memory to the node. The same rule
/// `numalab topo` shows its node size by, so the two agree.
fn single_node_memory(root: &Path, nodes: &mut [NodeFacts]) {
    let [only] = nodes else {
        return;
    };
    let total = text(&root.join("proc/meminfo")).and_then(|t| {
        let l = t.lines().find(|l| l.starts_with("MemTotal:"))?;
        l.split_whitespace()
            .nth(1)?
            .parse::<u64>()
            .ok()?
            .checked_mul(1024)
    });
    if let Some(t) = total.filter(|t| only.mem_bytes.is_none_or(|m| *t > m)) {
        only.mem_bytes = Some(t);
    }
}

/// The node's facts; None when its cpulist does not parse (named in `bad`): such a
/// node is left out rather than shown CPU-less.
fn node_facts(n: u32, d: &Path, bad: &mut Bad) -> Option<NodeFacts> {
    let p = d.join("distance");
    let distances = text(&p)
        .and_then(|t| {
            let v: Option<Vec<u32>> = t.split_whitespace().map(|x| x.parse().ok()).collect();
            if v.is_none() {
                bad.say(&p, &t, "distances such as '10 20'");
            }
            v
        })
        .unwrap_or_default();
    let p = d.join("cpulist");
    let cpus = match text(&p) {
        Some(_) => bad.list(&p)?,
        None => Vec::new(),
    };
    Some(NodeFacts {
        node: n,
        cpus,
        mem_bytes: mem_total(d, n, bad),
        distances,
        access0: access(d, 0, bad),
        access1: access(d, 1, bad),
    })
}

impl TierFacts {
    /// Read every fact under `root` ("/" for this machine); what is missing stays None.
    pub fn read(root: &Path) -> TierFacts {
        let mut bad = Bad {
            root,
            lines: Vec::new(),
        };
        let mut nodes: Vec<NodeFacts> = numbered(&root.join(NODE_DIR), "node")
            .into_iter()
            .filter(|(_, d)| d.is_dir())
            .filter_map(|(n, d)| node_facts(n, &d, &mut bad))
            .collect();
        single_node_memory(root, &mut nodes);
        let tier_dir = root.join(TIER_DIR);
        let tiers = tier_dir.is_dir().then(|| {
            numbered(&tier_dir, "memory_tier")
                .into_iter()
                .filter_map(|(k, d)| Some((k, bad.list(&d.join("nodelist"))?)))
                .collect()
        });
        let weight_dir = root.join(WEIGHT_DIR);
        let weights = weight_dir.is_dir().then(|| {
            numbered(&weight_dir, "node")
                .into_iter()
                .filter_map(|(n, p)| Some((n, bad.num(&p, "a weight from 1 to 255")?)))
                .collect()
        });
        let p = root.join(DEMOTION_FILE);
        let demotion_enabled = text(&p).and_then(|t| match t.as_str() {
            "true" | "1" | "Y" | "y" => Some(true),
            "false" | "0" | "N" | "n" => Some(false),
            _ => {
                bad.say(&p, &t, "true or false");
                None
            }
        });
        let numa_balancing = bad.num(&root.join(BALANCING_FILE), "a mode from 0 to 3");
        let mut f = TierFacts {
            root: root.display().to_string(),
            kernel: text(&root.join("proc/sys/kernel/osrelease")),
            nodes,
            tiers,
            demotion_enabled,
            numa_balancing,
            weights,
            malformed: bad.lines,
        };
        f.check_tiers();
        f
    }

    /// Name a node listed in two tiers, or a tier naming a node the root does not
    /// have: the kernel never writes either.
    fn check_tiers(&mut self) {
        let Some(tiers) = &self.tiers else { return };
        let have: Vec<u32> = self.nodes.iter().map(|n| n.node).collect();
        let mut seen: BTreeMap<u32, u32> = BTreeMap::new();
        for (k, nodes) in tiers {
            for n in nodes {
                if let Some(first) = seen.insert(*n, *k) {
                    self.malformed.push(format!(
                        "{TIER_DIR}: node {n} is listed in memory_tier{first} and memory_tier{k}; a node is in one tier"
                    ));
                } else if !have.contains(n) {
                    self.malformed.push(format!(
                        "{TIER_DIR}/memory_tier{k}/nodelist names node {n}, which {NODE_DIR} does not have"
                    ));
                }
            }
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
    fn a_single_node_shows_the_size_topo_shows() {
        let root = std::env::temp_dir().join(format!("numalab-tiers-one-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        put(&root, "sys/devices/system/node/node0/cpulist", "0-1\n");
        put(
            &root,
            "sys/devices/system/node/node0/meminfo",
            "Node 0 MemTotal:       1024 kB\n",
        );
        put(
            &root,
            "proc/meminfo",
            "MemTotal:       4096 kB\nMemFree: 5 kB\n",
        );
        let f = TierFacts::read(&root);
        assert_eq!(f.node(0).unwrap().mem_bytes, Some(4096 * 1024));
        // A second node: each keeps its own.
        put(&root, "sys/devices/system/node/node1/cpulist", "\n");
        put(
            &root,
            "sys/devices/system/node/node1/meminfo",
            "Node 1 MemTotal:       2048 kB\n",
        );
        let f = TierFacts::read(&root);
        assert_eq!(f.node(0).unwrap().mem_bytes, Some(1024 * 1024));
        let _ = fs::remove_dir_all(&root);
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
        assert!(f.malformed.is_empty(), "{:?}", f.malformed);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn each_malformed_file_is_named_with_its_content() {
        let root = std::env::temp_dir().join(format!("numalab-tiers-bad-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let n0 = "sys/devices/system/node/node0";
        put(&root, &format!("{n0}/cpulist"), "0-1\n");
        put(&root, &format!("{n0}/meminfo"), "garbage\n");
        let acc = format!("{n0}/access1/initiators");
        put(&root, &format!("{acc}/read_latency"), "abc\n");
        put(&root, &format!("{acc}/write_latency"), "-5\n");
        put(
            &root,
            &format!("{acc}/read_bandwidth"),
            "18446744073709551615\n",
        );
        put(&root, "sys/devices/system/node/node1/cpulist", "0-zz\n");
        put(&root, DEMOTION_FILE, "maybe\n");
        put(&root, &format!("{TIER_DIR}/memory_tier4/nodelist"), "0,7\n");
        put(&root, &format!("{TIER_DIR}/memory_tier5/nodelist"), "0\n");
        put(&root, &format!("{TIER_DIR}/memory_tier6/nodelist"), "zz\n");
        let f = TierFacts::read(&root);
        let all = f.malformed.join("\n");
        for want in [
            "node0/meminfo holds 'garbage'",
            "read_latency holds 'abc'",
            "write_latency holds '-5'",
            "read_bandwidth holds '18446744073709551615'",
            "node1/cpulist holds '0-zz'",
            "demotion_enabled holds 'maybe'",
            "memory_tier6/nodelist holds 'zz'",
            "node 0 is listed in memory_tier4 and memory_tier5",
            "names node 7",
        ] {
            assert!(all.contains(want), "'{want}' not in:\n{all}");
        }
        // Nothing reinterpreted: the CPU list that did not parse is no CPU-less node.
        assert!(f.node(1).is_none());
        assert_eq!(
            (f.node(0).unwrap().mem_bytes, f.demotion_enabled),
            (None, None)
        );
        let _ = fs::remove_dir_all(&root);
    }
}
