//! The machine as a survey measured it: the topology, the node × node latency and
//! bandwidth matrices with the record each cell came from, and the hierarchy plateaus.

use numalab_bench::loaded::Family;
use numalab_results::Record;
use numalab_topo::{Error, Machine, Result};
use std::collections::BTreeMap;

/// One measured matrix cell: its statistics and the record it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Median.
    pub median: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 95th percentile.
    pub p95: f64,
    /// The record's name ("node 0 → node 1").
    pub record: String,
}

/// What a survey's records say about the machine.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The topology the survey ran on.
    pub machine: Machine,
    /// Nodes with CPUs.
    pub cpu_nodes: Vec<u32>,
    /// Nodes with memory (CPU-less ones included).
    pub mem_nodes: Vec<u32>,
    /// Latency (ns) by (initiator node, memory node).
    pub lat: BTreeMap<(u32, u32), Cell>,
    /// Bandwidth (GB/s, every core of the initiator node reading) by (initiator node, memory node).
    pub bw: BTreeMap<(u32, u32), Cell>,
    /// Hierarchy plateaus (ns) by cache level, with the sweep record's name.
    pub plateaus: BTreeMap<u32, (f64, String)>,
    /// What the survey lacks, with its own reason where it gave one.
    pub missing: Vec<String>,
    /// Loaded-latency families (bandwidth–latency curves) by memory node.
    pub curves: BTreeMap<u32, Family>,
}

fn stat_of(r: &Record, metric: &str) -> Option<Cell> {
    let s = r.stat(metric)?;
    Some(Cell {
        median: s.summary.median,
        p5: s.summary.p5,
        p95: s.summary.p95,
        record: format!("{}: {}", r.kind, r.name),
    })
}

/// The loaded-latency families by memory node (the first of a node's).
fn families(records: &[Record]) -> BTreeMap<u32, Family> {
    let mut out = BTreeMap::new();
    for f in numalab_bench::loaded::curves(records) {
        if let Ok(n) = f.node.parse::<u32>() {
            out.entry(n).or_insert(f);
        }
    }
    out
}

impl Measured {
    /// Read a survey's records; an error when they hold no topology record.
    pub fn from_records(records: &[Record]) -> Result<Measured> {
        let topo = records
            .iter()
            .find(|r| r.kind == "topo")
            .and_then(|r| r.data.clone())
            .ok_or_else(|| {
                Error::input(
                    "invalid survey: it holds no topology record (kind topo); give a survey's results.json or folder (numalab survey -o DIR)",
                )
            })?;
        let machine: Machine = serde_json::from_value(topo).map_err(|e| {
            Error::input(format!(
                "invalid survey: its topology record is not one numalab writes ({e})"
            ))
        })?;
        let cpu_nodes: Vec<u32> = machine
            .nodes
            .iter()
            .filter(|n| !n.cpu_less && machine.pus.iter().any(|p| p.node == Some(n.os)))
            .map(|n| n.os)
            .collect();
        let mem_nodes = machine.memory_nodes();
        let mut m = Measured {
            machine,
            cpu_nodes,
            mem_nodes,
            lat: BTreeMap::new(),
            bw: BTreeMap::new(),
            plateaus: BTreeMap::new(),
            missing: Vec::new(),
            curves: families(records),
        };
        for r in records {
            let (map, metric) = match r.kind.as_str() {
                "matrix-latency" => (&mut m.lat, "latency"),
                "matrix-bandwidth" => (&mut m.bw, "bandwidth"),
                "latency-sweep" => {
                    for s in &r.stats {
                        let level = s
                            .metric
                            .strip_prefix("plateau L")
                            .and_then(|l| l.parse().ok());
                        if let Some(l) = level {
                            m.plateaus
                                .entry(l)
                                .or_insert((s.summary.median, format!("{}: {}", r.kind, r.name)));
                        }
                    }
                    continue;
                }
                _ => continue,
            };
            let p = &r.parameters;
            let from = p["initiator_cpus"][0]
                .as_u64()
                .and_then(|c| m.machine.pu(c as u32))
                .and_then(|pu| pu.node);
            let to = p["mem_node"].as_u64().map(|n| n as u32);
            if let (Some(f), Some(t), Some(c)) = (from, to, stat_of(r, metric)) {
                // Several domains of one node (an L3-level matrix): the first stands for the node.
                map.entry((f, t)).or_insert(c);
            }
        }
        for r in records.iter().filter(|r| r.kind == "survey") {
            for u in &r.unavailable {
                if ["matrix", "model"].contains(&r.parameters["section"].as_str().unwrap_or("")) {
                    m.missing.push(format!("{}: {}", u.feature, u.reason));
                }
            }
        }
        if m.lat.is_empty() && m.missing.is_empty() {
            m.missing
                .push("the survey holds no latency matrix (matrix-latency records)".into());
        }
        if m.bw.is_empty() && m.cpu_nodes.len() + m.mem_nodes.len() > 2 {
            m.missing
                .push("the survey holds no bandwidth matrix (matrix-bandwidth records)".into());
        }
        Ok(m)
    }

    /// Latency from node `d`'s CPUs to memory on node `m`.
    pub fn lat(&self, d: u32, m: u32) -> Option<&Cell> {
        self.lat.get(&(d, m))
    }

    /// Bandwidth of node `d`'s cores reading node `m`.
    pub fn bw(&self, d: u32, m: u32) -> Option<&Cell> {
        self.bw.get(&(d, m))
    }

    /// Cores (not hardware threads) of node `d`.
    pub fn cores(&self, d: u32) -> usize {
        let mut c: Vec<u32> = self
            .machine
            .pus
            .iter()
            .filter(|p| p.node == Some(d))
            .map(|p| p.core)
            .collect();
        c.sort_unstable();
        c.dedup();
        c.len()
    }

    /// Memory of node `n` in bytes (0 when unknown).
    pub fn capacity(&self, n: u32) -> u64 {
        self.machine.node(n).map_or(0, |x| x.total_bytes)
    }

    /// Latency added by load on memory node `n` (ns, never negative) at `gbps` of traffic
    /// whose reads are `reads` percent, from the family curve nearest that mix; past the
    /// curve's last point, its most loaded point's. None without a family for `n`.
    pub fn queueing(&self, n: u32, reads: u32, gbps: f64) -> Option<f64> {
        let f = self.curves.get(&n)?;
        let want = 100 - reads.min(100);
        let c = f.curves.iter().min_by_key(|c| c.write_pct.abs_diff(want))?;
        let at_max = || {
            let p = c.points.iter().max_by(|a, b| a.gbps.total_cmp(&b.gbps))?;
            Some(p.latency_ns())
        };
        let lat = c.latency_at(f.idle, gbps).or_else(at_max)?;
        Some((lat - f.idle.0).max(0.0))
    }

    /// CPU-less memory nodes (CXL-like tiers).
    pub fn cpu_less(&self) -> Vec<u32> {
        self.mem_nodes
            .iter()
            .copied()
            .filter(|n| !self.cpu_nodes.contains(n))
            .collect()
    }
}
