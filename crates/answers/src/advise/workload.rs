//! A workload described by flags, and the placements ranked by what the survey's
//! matrices predict for it.

use super::measured::Measured;
use super::weights::{measured_weights, weight_shares};
use super::Options;
use numalab_topo::spec::parse_size;
use numalab_topo::{cpulist, fmt_bytes, Error, Level, Result, Smt, ThreadRequest, ThreadSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The workload, parsed and checked.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Workload {
    /// Threads.
    pub threads: usize,
    /// Bytes the threads touch in all.
    pub footprint: u64,
    /// Share of accesses that are reads, percent.
    pub reads: u32,
    /// True when bandwidth-bound (streaming), false when latency-bound (dependent loads).
    pub streaming: bool,
    /// True when every thread reads the whole footprint; false when each has its own slice.
    pub shared: bool,
}

/// Where memory goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "lowercase")]
pub enum Memory {
    /// First touch: each thread's slice on its node (a shared buffer on the first thread's).
    Local,
    /// Every page on one node.
    Bind {
        /// The node.
        node: u32,
    },
    /// Pages round-robin over nodes.
    Interleave {
        /// The nodes.
        nodes: Vec<u32>,
    },
    /// Pages spread over nodes in proportion to weights (MPOL_WEIGHTED_INTERLEAVE),
    /// the weights measured: the threads' bandwidth to each node.
    Weighted {
        /// The nodes.
        nodes: Vec<u32>,
        /// Their weights, in node order.
        weights: Vec<u32>,
    },
    /// Local first; what does not fit goes to a CPU-less node.
    Tiered {
        /// The CPU-less node.
        tier: u32,
    },
}

/// One placement with its prediction.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Candidate {
    /// The numalab thread spec ("compact", "scatter:node").
    pub threads: String,
    /// CPUs the threads get, in thread order.
    pub cpus: Vec<u32>,
    /// Memory policy.
    pub memory: Memory,
    /// Share of the footprint on each node, per thread node: {thread node: {memory node: share}}.
    pub shares: BTreeMap<u32, BTreeMap<u32, f64>>,
    /// Predicted mean load latency (ns), from the latency matrix.
    pub latency_ns: Option<f64>,
    /// Predicted bandwidth of all threads (GB/s), from the bandwidth matrix.
    pub bandwidth_gbps: Option<f64>,
    /// Matrix cells (record names) the prediction used.
    pub basis: Vec<String>,
    /// Why this placement cannot be predicted or applied, when it cannot.
    pub unavailable: Option<String>,
    /// Commands that apply it: numactl, taskset, numalab.
    pub commands: BTreeMap<String, String>,
    /// Rank, 1 = best (0 when not ranked).
    pub rank: usize,
}

impl Options {
    /// The workload the flags describe, or the one-line error naming the bad value.
    pub fn workload(&self) -> Result<Workload> {
        let threads = self.threads.ok_or_else(|| {
            Error::input(
                "advise needs a workload: --threads N --footprint SIZE (or a trace: --trace FILE)",
            )
        })?;
        if threads == 0 {
            return Err(Error::bad("--threads", "0", "at least 1 thread"));
        }
        let f = self.footprint.as_deref().ok_or_else(|| {
            Error::input("advise needs --footprint SIZE with --threads (e.g. 4G: the bytes the threads touch in all)")
        })?;
        let footprint = parse_size(f.trim())
            .ok()
            .filter(|b| *b > 0)
            .ok_or_else(|| {
                Error::bad(
                    "--footprint",
                    f,
                    "a size larger than 0 such as 64M, 4G (1K = 1024)",
                )
            })?;
        if self.reads > 100 {
            return Err(Error::bad(
                "--reads",
                self.reads.to_string(),
                "a percentage 0 to 100",
            ));
        }
        let streaming = match self.access.as_str() {
            "stream" => true,
            "random" => false,
            a => {
                return Err(Error::bad(
                    "--access",
                    a,
                    "stream (bandwidth-bound: sequential passes) or random (latency-bound: dependent loads)",
                ))
            }
        };
        Ok(Workload {
            threads,
            footprint,
            reads: self.reads,
            streaming,
            shared: self.shared,
        })
    }
}

/// Thread layouts worth comparing: compact, and scatter over every level with several domains.
fn layouts(m: &Measured, n: usize) -> Result<Vec<(String, Vec<u32>)>> {
    let mut specs = vec![("compact".to_string(), ThreadSpec::Compact)];
    for l in [Level::Node, Level::Package, Level::L3] {
        if m.machine.domains(l).is_some_and(|d| d.len() > 1) {
            specs.push((
                format!("scatter:{}", l.name()),
                ThreadSpec::Scatter(Some(l)),
            ));
        }
    }
    let mut out: Vec<(String, Vec<u32>)> = Vec::new();
    for (name, spec) in specs {
        let req = ThreadRequest {
            spec,
            count: Some(n),
            smt: Smt::Last,
            kind: Default::default(),
        };
        let cpus: Vec<u32> = numalab_topo::plan::resolve_threads(&m.machine, &req)?
            .iter()
            .map(|t| t.pu.os)
            .collect();
        // Two specs giving the same CPUs are one placement.
        let set = |v: &[u32]| {
            let mut s = v.to_vec();
            s.sort_unstable();
            s
        };
        if !out.iter().any(|(_, c)| set(c) == set(&cpus)) {
            out.push((name, cpus));
        }
    }
    Ok(out)
}

/// Threads per node for these CPUs.
fn per_node(m: &Measured, cpus: &[u32]) -> BTreeMap<u32, usize> {
    let mut t = BTreeMap::new();
    for c in cpus {
        if let Some(n) = m.machine.pu(*c).and_then(|p| p.node) {
            *t.entry(n).or_insert(0) += 1;
        }
    }
    t
}

/// The share of the footprint each thread node's threads find on each memory node,
/// or why the policy cannot hold the footprint.
fn shares(
    m: &Measured,
    w: &Workload,
    t: &BTreeMap<u32, usize>,
    first: u32,
    mem: &Memory,
) -> std::result::Result<BTreeMap<u32, BTreeMap<u32, f64>>, String> {
    let n = w.threads as f64;
    let fits = |node: u32, bytes: f64| -> std::result::Result<(), String> {
        let cap = m.capacity(node);
        if cap > 0 && bytes > cap as f64 {
            Err(format!(
                "{} will not fit in node {node}'s {}",
                fmt_bytes(bytes as u64),
                fmt_bytes(cap)
            ))
        } else {
            Ok(())
        }
    };
    let f = w.footprint as f64;
    let mut out = BTreeMap::new();
    for (&d, &k) in t {
        // Bytes this node's threads place by first touch.
        let own = if w.shared { 0.0 } else { f * k as f64 / n };
        let one = |x: u32| BTreeMap::from([(x, 1.0)]);
        let s = match mem {
            Memory::Local if w.shared => one(first),
            Memory::Local => {
                fits(d, own)?;
                one(d)
            }
            Memory::Bind { node } => one(*node),
            Memory::Interleave { nodes } => nodes
                .iter()
                .map(|x| (*x, 1.0 / nodes.len() as f64))
                .collect(),
            Memory::Weighted { nodes, weights } => weight_shares(nodes, weights),
            Memory::Tiered { tier } => {
                let (home, bytes) = if w.shared { (first, f) } else { (d, own) };
                let cap = m.capacity(home) as f64;
                let a = if cap > 0.0 {
                    (cap / bytes).min(1.0)
                } else {
                    1.0
                };
                BTreeMap::from([(home, a), (*tier, 1.0 - a)])
            }
        };
        out.insert(d, s);
    }
    match mem {
        Memory::Local if w.shared => fits(first, f)?,
        Memory::Bind { node } => fits(*node, f)?,
        Memory::Interleave { nodes } => {
            for x in nodes {
                fits(*x, f / nodes.len() as f64)?;
            }
        }
        Memory::Weighted { nodes, weights } => {
            for (x, share) in weight_shares(nodes, weights) {
                fits(x, f * share)?;
            }
        }
        Memory::Tiered { tier } => {
            let local: f64 = t
                .keys()
                .map(|d| m.capacity(if w.shared { first } else { *d }) as f64)
                .sum();
            fits(*tier, (f - local).max(0.0))?;
        }
        Memory::Local => {}
    }
    Ok(out)
}

/// Mean latency over the threads, and the cells used; Err names a missing cell. With
/// `loads` (a streaming workload's predicted traffic per memory node, GB/s), each node's
/// cells are priced at the latency its loaded-latency family gives at that load.
fn latency(
    m: &Measured,
    w: &Workload,
    t: &BTreeMap<u32, usize>,
    s: &BTreeMap<u32, BTreeMap<u32, f64>>,
    loads: Option<&BTreeMap<u32, f64>>,
    basis: &mut Vec<String>,
) -> std::result::Result<f64, String> {
    let mut queue: BTreeMap<u32, f64> = BTreeMap::new();
    for (x, load) in loads.into_iter().flatten() {
        if let Some(q) = m.queueing(*x, w.reads, *load) {
            basis.push(format!(
                "loaded-latency family, memory node {x}: +{q:.1} ns at {load:.1} GB/s"
            ));
            queue.insert(*x, q);
        }
    }
    let mut total = 0.0;
    for (d, row) in s {
        let k = t[d] as f64 / w.threads as f64;
        for (x, share) in row.iter().filter(|(_, v)| **v > 0.0) {
            let c = m
                .lat(*d, *x)
                .ok_or_else(|| format!("no measured latency from node {d} to node {x}"))?;
            basis.push(c.record.clone());
            total += k * share * (c.median + queue.get(x).copied().unwrap_or(0.0));
        }
    }
    Ok(total)
}

/// Bandwidth of all threads: each node's threads stream from every node at once, so the
/// slowest flow bounds them (threads scale linearly up to the node's cores, where the
/// matrix was measured); a memory node serves at most the most any node drew from it.
/// Also each memory node's predicted traffic, GB/s.
pub(super) fn bandwidth(
    m: &Measured,
    w: &Workload,
    t: &BTreeMap<u32, usize>,
    s: &BTreeMap<u32, BTreeMap<u32, f64>>,
    basis: &mut Vec<String>,
) -> std::result::Result<(f64, BTreeMap<u32, f64>), String> {
    let mut flows: BTreeMap<u32, f64> = BTreeMap::new();
    let mut traffic: BTreeMap<u32, f64> = BTreeMap::new();
    let mut total = 0.0;
    for (d, row) in s {
        let mut worst: f64 = 0.0;
        for (x, share) in row.iter().filter(|(_, v)| **v > 0.0) {
            let c = m
                .bw(*d, *x)
                .ok_or_else(|| format!("no measured bandwidth from node {d} to node {x}"))?;
            basis.push(c.record.clone());
            worst = worst.max(share / c.median);
        }
        let scale = (t[d] as f64 / m.cores(*d).max(1) as f64).min(1.0);
        let b = scale / worst;
        flows.insert(*d, b);
        for (x, share) in row {
            *traffic.entry(*x).or_insert(0.0) += b * share;
        }
        total += b;
    }
    let mut cut: f64 = 1.0;
    for (x, load) in &traffic {
        let cap =
            m.bw.iter()
                .filter(|((_, to), _)| to == x)
                .map(|(_, c)| c.median)
                .fold(0.0, f64::max);
        if cap > 0.0 && *load > cap {
            cut = cut.min(cap / load);
        }
    }
    // Stores cost a write-allocate read and a writeback per line: two bytes moved per byte written.
    let r = w.reads as f64 / 100.0;
    let loads = traffic.into_iter().map(|(x, l)| (x, l * cut)).collect();
    Ok((total * cut / (r + 2.0 * (1.0 - r)), loads))
}

fn commands(
    threads: &str,
    cpus: &[u32],
    mem: &Memory,
    nodes: &[u32],
    program: &str,
) -> BTreeMap<String, String> {
    let list = cpulist::format(cpus);
    let join = |v: &[u32]| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let (numactl, numalab) = match mem {
        Memory::Local => ("--localalloc".to_string(), Some("local".to_string())),
        Memory::Bind { node } => (format!("--membind={node}"), Some(node.to_string())),
        Memory::Interleave { nodes } => (
            format!("--interleave={}", join(nodes)),
            Some(format!("interleave:{}", join(nodes))),
        ),
        // The weights are the kernel's (global): the sysfs lines set them first.
        Memory::Weighted { nodes, .. } => (format!("--weighted-interleave={}", join(nodes)), None),
        // Bind to the threads' nodes and the tier: the kernel fills the nearest node first.
        Memory::Tiered { tier } => {
            let mut v = nodes.to_vec();
            v.push(*tier);
            (format!("--membind={}", join(&v)), None)
        }
    };
    let mut c = BTreeMap::new();
    if let Memory::Weighted { nodes, weights } = mem {
        let lines: Vec<String> = nodes
            .iter()
            .zip(weights)
            .map(|(n, w)| {
                format!("echo {w} > /sys/kernel/mm/mempolicy/weighted_interleave/node{n}")
            })
            .collect();
        c.insert("sysfs".into(), lines.join("; "));
    }
    c.insert(
        "numactl".into(),
        format!("numactl --physcpubind={list} {numactl} {program}"),
    );
    if *mem == Memory::Local {
        c.insert("taskset".into(), format!("taskset -c {list} {program}"));
    }
    if let Some(ms) = numalab {
        c.insert(
            "numalab".into(),
            format!("--cpu {threads} -n {} --mem-node {ms}", cpus.len()),
        );
    }
    c
}

/// Every placement for the workload, predicted and ranked (best first).
pub fn rank(m: &Measured, w: &Workload, program: &str) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    for (spec, cpus) in layouts(m, w.threads)? {
        let t = per_node(m, &cpus);
        let used: Vec<u32> = t.keys().copied().collect();
        let first = cpus
            .first()
            .and_then(|c| m.machine.pu(*c))
            .and_then(|p| p.node)
            .unwrap_or(0);
        let mut seen: Vec<BTreeMap<u32, BTreeMap<u32, f64>>> = Vec::new();
        for mem in memories(m, &used) {
            let mut c = Candidate {
                threads: spec.clone(),
                cpus: cpus.clone(),
                commands: commands(&spec, &cpus, &mem, &used, program),
                memory: mem.clone(),
                shares: BTreeMap::new(),
                latency_ns: None,
                bandwidth_gbps: None,
                basis: Vec::new(),
                unavailable: None,
                rank: 0,
            };
            match shares(m, w, &t, first, &mem) {
                Ok(s) => {
                    // A policy that puts every page where another already did is that policy.
                    let tiered_spill = matches!(mem, Memory::Tiered { .. })
                        && s.values().any(|r| r.values().any(|v| *v < 1.0 && *v > 0.0));
                    if seen.contains(&s) || (matches!(mem, Memory::Tiered { .. }) && !tiered_spill)
                    {
                        continue;
                    }
                    seen.push(s.clone());
                    predict(m, w, &t, s, &mut c);
                }
                Err(e) => c.unavailable = Some(e),
            }
            out.push(c);
        }
    }
    order(&mut out, w.streaming);
    Ok(out)
}

/// The memory policies to try for threads on `used` nodes: local, each node bound,
/// interleaved over the threads' nodes and over all, and each CPU-less tier.
fn memories(m: &Measured, used: &[u32]) -> Vec<Memory> {
    let mut mems = vec![Memory::Local];
    mems.extend(m.mem_nodes.iter().map(|&node| Memory::Bind { node }));
    if used.len() > 1 {
        mems.push(Memory::Interleave {
            nodes: used.to_vec(),
        });
    }
    if m.mem_nodes.len() > used.len() && m.mem_nodes.len() > 1 {
        mems.push(Memory::Interleave {
            nodes: m.mem_nodes.clone(),
        });
    }
    mems.extend(m.cpu_less().into_iter().map(|tier| Memory::Tiered { tier }));
    // Equal weights are plain interleave over all nodes: `rank` drops the repeat.
    mems.extend(measured_weights(m, used).map(|w| Memory::Weighted {
        nodes: w.iter().map(|x| x.0).collect(),
        weights: w.iter().map(|x| x.1).collect(),
    }));
    mems
}

/// The candidate's predicted latency and bandwidth from the page shares `s`, the
/// measurements they rest on, and why not when the workload's figure is missing.
fn predict(
    m: &Measured,
    w: &Workload,
    t: &BTreeMap<u32, usize>,
    s: BTreeMap<u32, BTreeMap<u32, f64>>,
    c: &mut Candidate,
) {
    let mut basis = Vec::new();
    let bw = bandwidth(m, w, t, &s, &mut basis);
    // A streaming workload's loads are priced at its predicted traffic, not at idle.
    let loads = bw.as_ref().ok().filter(|_| w.streaming).map(|b| &b.1);
    let lat = latency(m, w, t, &s, loads, &mut basis);
    let bw = bw.map(|b| b.0);
    c.latency_ns = lat.as_ref().ok().copied();
    c.bandwidth_gbps = bw.as_ref().ok().copied();
    let needed = if w.streaming { &bw } else { &lat };
    if let Err(e) = needed {
        c.unavailable = Some(e.clone());
    }
    basis.sort();
    basis.dedup();
    c.basis = basis;
    c.shares = s;
}

/// Best first (lowest latency, or highest bandwidth for a streaming workload), the
/// unavailable last; ranks count the available ones.
fn order(out: &mut [Candidate], streaming: bool) {
    let key = |c: &Candidate| -> f64 {
        match (streaming, c.unavailable.is_some()) {
            (_, true) => f64::INFINITY,
            (true, _) => -c.bandwidth_gbps.unwrap_or(0.0),
            (false, _) => c.latency_ns.unwrap_or(f64::INFINITY),
        }
    };
    out.sort_by(|a, b| key(a).total_cmp(&key(b)));
    let mut r = 0;
    for c in out.iter_mut() {
        if c.unavailable.is_none() {
            r += 1;
            c.rank = r;
        }
    }
}
