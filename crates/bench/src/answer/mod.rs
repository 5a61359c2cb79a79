//! The first screen's memory answer, per memory node: idle latency, read bandwidth of
//! one core and of all cores, MLC's injection mixes, the loaded-latency curve, and
//! the core-to-core handover's range. Built from answers only (the registry hands
//! this presenter the records `summary::is_answer` keeps); a figure a node lacks is
//! "-", never a guess.

mod render;

use crate::bandwidth::groups::{self, Place};
use numalab_results::present::{of, Presenter};
use numalab_results::summary::Block;
use numalab_results::Record;
use numalab_topo::Machine;

/// The mixes of the first screen, MLC's order: (mix parameter, column heading).
pub const MIXES: [(&str, &str); 5] = [
    ("1:0", "all reads"),
    ("3:1", "3:1"),
    ("2:1", "2:1"),
    ("1:1", "1:1"),
    ("0:1", "writes"),
];

/// One memory node's headline figures.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeAnswer {
    /// The node's OS number.
    pub node: u32,
    /// "CPU-less" for a node without CPUs (a far tier), else "".
    pub tier: String,
    /// Idle latency, ns, and where it comes from.
    pub idle_ns: Option<(f64, &'static str)>,
    /// Read bandwidth of one core, GB/s.
    pub read_1: Option<f64>,
    /// Read bandwidth of all requestors together, GB/s, and how many.
    pub read_all: Option<(f64, u64)>,
    /// Issued GB/s of each of `MIXES` (None: not measured).
    pub mixes: [Option<f64>; 5],
    /// The reads-only loaded-latency curve: (injected GB/s, latency ns), by bandwidth.
    pub curve: Vec<(f64, f64)>,
}

/// The core-to-core handover over every measured pair: (min, median, max, pairs).
pub fn c2c_range(records: &[Record]) -> Option<(f64, f64, f64, usize)> {
    let mut v: Vec<f64> = of(records, "c2c")
        .filter_map(|r| r.median("cas_rtt_half"))
        .collect();
    v.sort_by(f64::total_cmp);
    let med = numalab_results::stats::median(&v)?;
    Some((v[0], med, v[v.len() - 1], v.len()))
}

/// A parameter holding a node number as a number or a string ("0").
fn node_param(v: &serde_json::Value) -> Option<u32> {
    v.as_u64()
        .or_else(|| v.as_str()?.trim().parse().ok())
        .map(|n| n as u32)
}

/// Every memory node the answers say something about, each with its figures.
pub fn nodes(records: &[Record]) -> Vec<NodeAnswer> {
    let machine = of(records, "topo").find_map(|r| r.data_as::<Machine>().ok());
    let mut ids: Vec<u32> = Vec::new();
    let mut seen = |n: u32| {
        if !ids.contains(&n) {
            ids.push(n);
        }
    };
    for r in records {
        let p = &r.parameters;
        match r.kind.as_str() {
            "matrix-latency" | "matrix-bandwidth" | "loaded-latency" => {
                node_param(&p["mem_node"]).map(&mut seen);
            }
            "bandwidth-mix" => {
                if let Some([n]) = p["nodes"].as_array().map(Vec::as_slice) {
                    node_param(n).map(&mut seen);
                }
            }
            "bandwidth" => {
                if let Some(n) = memory_node(r, records) {
                    seen(n);
                }
            }
            _ => {}
        }
    }
    ids.sort_unstable();
    ids.into_iter()
        .map(|node| {
            let cpu_less = machine
                .as_ref()
                .and_then(|m| m.node(node))
                .is_some_and(|n| n.cpu_less);
            NodeAnswer {
                node,
                tier: if cpu_less {
                    "CPU-less".into()
                } else {
                    String::new()
                },
                idle_ns: idle(records, node),
                read_1: read(records, node, false).map(|x| x.0),
                read_all: read(records, node, true).or_else(|| matrix_bw(records, node)),
                mixes: MIXES.map(|(m, _)| mix(records, node, m)),
                curve: curve(records, node),
            }
        })
        .collect()
}

/// The memory node a warm bandwidth record's buffer lives on (one node only).
fn memory_node(r: &Record, all: &[Record]) -> Option<u32> {
    if r.parameters["state"].as_str().unwrap_or("warm") != "warm" {
        return None;
    }
    match groups::group_of(r, all, groups::caches(all).as_deref()).place {
        Place::Memory(n) if n.len() == 1 => Some(n[0]),
        // A machine with one node records no node: its memory is node 0.
        Place::Memory(n) if n.is_empty() => Some(0),
        _ => None,
    }
}

/// Idle latency: the nearest initiator's matrix cell, else the loaded family's
/// unloaded point (a chase from the node's first CPU), else the chase of unowned lines
/// on the node (a busy survey's loaded family may not settle, its unowned chase may).
fn idle(records: &[Record], node: u32) -> Option<(f64, &'static str)> {
    let cell = of(records, "matrix-latency")
        .filter(|r| node_param(&r.parameters["mem_node"]) == Some(node))
        .filter_map(|r| r.median("latency"))
        .min_by(f64::total_cmp);
    if let Some(v) = cell {
        return Some((v, "the latency matrix's nearest initiator"));
    }
    of(records, "loaded-latency")
        .filter(|r| node_param(&r.parameters["mem_node"]) == Some(node))
        .find(|r| r.parameters["injectors"].as_u64() == Some(0))
        .and_then(|r| r.median("latency"))
        .map(|v| (v, "the loaded-latency family's unloaded point"))
        .or_else(|| {
            of(records, "latency")
                .filter(|r| r.parameters["state"].as_str() == Some("uown"))
                .filter(|r| memory_nodes(r) == [node])
                .filter_map(|r| r.median("latency"))
                .min_by(f64::total_cmp)
                .map(|v| (v, "a chase of unowned lines, flushed from every cache"))
        })
}

/// The nodes a record's buffer was bound to (its placement's resolved memory).
fn memory_nodes(r: &Record) -> Vec<u32> {
    r.placement
        .as_ref()
        .and_then(|p| p["resolved"]["memory"]["nodes"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(node_param)
        .collect()
}

/// Read bandwidth from memory on `node`: the vector read kernel (else the scalar one),
/// one requestor or the aggregate of all.
fn read(records: &[Record], node: u32, all: bool) -> Option<(f64, u64)> {
    let bw: Vec<&Record> = of(records, "bandwidth")
        .filter(|r| memory_node(r, records) == Some(node))
        .collect();
    let kernel = ["readv", "read"]
        .into_iter()
        .find(|k| bw.iter().any(|r| r.parameters["kernel"] == *k))?;
    bw.into_iter()
        .filter(|r| r.parameters["kernel"] == kernel)
        .filter_map(|r| {
            let n = r.parameters["requestors"].as_u64().unwrap_or(1);
            let aggregate = r.parameters.get("requestor_cpus").is_some();
            match (all, n > 1) {
                (true, true) if aggregate => Some((r.figure("aggregate_bandwidth")?, n)),
                (false, false) => Some((r.figure("bandwidth")?, 1)),
                _ => None,
            }
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// All cores of the best initiator domain reading `node`, from the bandwidth matrix.
fn matrix_bw(records: &[Record], node: u32) -> Option<(f64, u64)> {
    of(records, "matrix-bandwidth")
        .filter(|r| node_param(&r.parameters["mem_node"]) == Some(node))
        .filter_map(|r| {
            Some((
                r.median("bandwidth")?,
                r.parameters["requestors"].as_u64().unwrap_or(0),
            ))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

/// The injection table's issued GB/s of `mix` (regular stores) against `node` alone.
fn mix(records: &[Record], node: u32, mix: &str) -> Option<f64> {
    of(records, "bandwidth-mix")
        .filter(|r| r.parameters["mix"] == mix && r.parameters["store"] == "regular")
        .filter(|r| {
            r.parameters["nodes"]
                .as_array()
                .is_some_and(|n| n.len() == 1 && node_param(&n[0]) == Some(node))
        })
        .filter_map(|r| r.figure("bandwidth"))
        .max_by(f64::total_cmp)
}

/// The reads-only loaded-latency points against `node`, the unloaded one included.
fn curve(records: &[Record], node: u32) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = of(records, "loaded-latency")
        .filter(|r| node_param(&r.parameters["mem_node"]) == Some(node))
        .filter(|r| r.parameters["write_pct"].as_u64().unwrap_or(0) == 0)
        .filter_map(|r| {
            let bw = if r.parameters["injectors"].as_u64() == Some(0) {
                0.0
            } else {
                r.median("injected_bandwidth")?
            };
            Some((bw, r.median("latency")?))
        })
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

/// The presenter of the first screen's memory answer (no records of its own).
pub struct AnswerPresenter;

impl Presenter for AnswerPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &[]
    }
    fn answer(&self, answers: &[Record]) -> Option<Block> {
        let nodes = nodes(answers);
        let c2c = c2c_range(answers);
        if nodes.is_empty() && c2c.is_none() {
            return None;
        }
        Some(render::block(&nodes, c2c, answers))
    }
}

#[cfg(test)]
mod tests;
