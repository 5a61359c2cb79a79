//! numalab's measurement of each memory node, read from a survey's matrices, and the
//! kernel's rule applied to it: the reference is the first CPU node's own memory, a
//! node's figures are its best CPU initiator's (as hmat_update_target_attrs() takes
//! the best initiators), and reads stand for writes too (numalab measures reads).

use super::data::{MeasuredPerf, PackageBandwidth};
use super::rule::{self, Perf};
use crate::advise::{weights_from, Measured};
use numalab_results::journal::Fingerprint;
use numalab_results::Record;
use numalab_topo::{Error, Machine, Result as TopoResult};
use std::path::Path;

/// The measured DRAM reference (node, its figures), or why there is none.
pub type Reference = Result<(u32, Perf), String>;

/// The measured figures of memory node `n`: lowest latency and highest bandwidth
/// over the CPU nodes; None without a latency cell.
pub fn perf_of(m: &Measured, n: u32) -> Option<MeasuredPerf> {
    let (from, lat) = m
        .cpu_nodes
        .iter()
        .filter_map(|d| Some((*d, m.lat(*d, n)?)))
        .min_by(|a, b| a.1.median.total_cmp(&b.1.median))?;
    let bw = m
        .cpu_nodes
        .iter()
        .filter_map(|d| Some((*d, m.bw(*d, n)?)))
        .max_by(|a, b| a.1.median.total_cmp(&b.1.median));
    Some(MeasuredPerf {
        latency_from: from,
        latency_ns: lat.median,
        latency_record: lat.record.clone(),
        bandwidth_from: bw.map(|b| b.0),
        bandwidth_gbps: bw.map(|b| b.1.median),
        bandwidth_record: bw.map(|b| b.1.record.clone()),
    })
}

/// Each initiator package's bandwidth to the memory nodes `shown`: the best of its
/// measured CPU nodes to each; packages with fewer than two such nodes are left out.
pub fn package_bandwidth(m: &Measured, shown: &[u32]) -> Vec<PackageBandwidth> {
    let package = |d: u32| m.machine.pus.iter().find(|p| p.node == Some(d))?.package;
    let mut groups: Vec<(Option<u32>, Vec<u32>)> = Vec::new();
    for &d in &m.cpu_nodes {
        let p = package(d);
        match groups.iter_mut().find(|g| p.is_some() && g.0 == p) {
            Some(g) => g.1.push(d),
            None => groups.push((p, vec![d])),
        }
    }
    groups
        .into_iter()
        .filter_map(|(package, initiators)| {
            let bandwidth: Vec<(u32, f64)> = shown
                .iter()
                .filter_map(|x| {
                    let best = initiators
                        .iter()
                        .filter_map(|d| Some(m.bw(*d, *x)?.median))
                        .fold(0.0, f64::max);
                    (best > 0.0).then_some((*x, best))
                })
                .collect();
            (bandwidth.len() >= 2).then(|| PackageBandwidth {
                package,
                initiators,
                weights: weights_from(&bandwidth),
                bandwidth,
            })
        })
        .collect()
}

/// The measurement as the kernel's coordinate: whole ns and MB/s, reads for writes.
pub fn as_perf(p: &MeasuredPerf) -> Option<Perf> {
    let bw = p.bandwidth_gbps?;
    Some(Perf::symmetric(
        p.latency_ns.round() as u32,
        (bw * 1000.0).round() as u32,
    ))
}

/// The measured DRAM reference: the first CPU node's latency and bandwidth to its
/// own memory, or why there is none.
pub fn reference(m: &Measured) -> Reference {
    let d = *m
        .cpu_nodes
        .iter()
        .find(|d| m.mem_nodes.contains(d))
        .ok_or("no node with CPUs and memory was measured")?;
    let lat = m
        .lat(d, d)
        .ok_or(format!("no latency from node {d} to its own memory"))?;
    let bw = m.bw(d, d).ok_or(format!(
        "no bandwidth matrix (matrix-bandwidth records): node {d}'s own bandwidth is the reference"
    ))?;
    let p = Perf::symmetric(
        lat.median.round() as u32,
        (bw.median * 1000.0).round() as u32,
    );
    Ok((d, p))
}

/// The measured distance of a node from its figures and the reference.
pub fn distance(p: &MeasuredPerf, r: &Reference) -> Option<i32> {
    rule::adistance(&as_perf(p)?, &r.as_ref().ok()?.1)
}

/// The reference in words.
pub fn reference_words(r: &Reference) -> String {
    match r {
        Ok((n, p)) => format!(
            "node {n} to its own memory: {} ns, {} MB/s (reads stand for writes)",
            p.read_latency, p.read_bandwidth
        ),
        Err(why) => format!("none: {why}"),
    }
}

/// Refuse records measured on another machine than the one under `root`: the
/// fingerprint `survey --resume` compares (host, architecture, CPU, kernel, topology),
/// read from the survey's topology record (else its first record) and from `root`'s
/// procfs. A recorded tree (`root` other than /) holds no topology, so the topology is
/// compared only on this machine.
pub fn same_machine(path: &str, records: &[Record], root: &str, m: &Machine) -> TopoResult<()> {
    let Some(r) = records
        .iter()
        .find(|r| r.kind == "topo")
        .or(records.first())
    else {
        return Ok(());
    };
    let was = Fingerprint::of(&r.provenance);
    let here = root == "/";
    let topology = if here {
        m.summary()
    } else {
        was.topology.clone()
    };
    let now = Fingerprint::at(Path::new(root), &topology);
    match was.first_difference(&now) {
        None => Ok(()),
        Some((field, a, b)) => Err(Error::input(format!(
            "invalid --from '{path}': a survey of another machine: {field} '{a}' in it, '{b}' {}; tiers compares a survey only with the machine it measured",
            if here { "here".to_string() } else { format!("under --root {root}") }
        ))),
    }
}
