//! What the tiers comparison finds (each finding one line with its evidence) and
//! recommends (with the commands that apply it), from the node records alone.

use super::data::{Finding, PackageBandwidth, Recommendation, TierNode};
use crate::advise::{weights_from, WeightedGain};
use std::collections::BTreeSet;

/// Firmware and measurement disagree when one is more than this far from the other.
pub const OFF_SHARE: f64 = 0.25;

fn finding(rule: &str, node: Option<u32>, text: String) -> Finding {
    Finding {
        rule: rule.into(),
        node,
        text,
    }
}

/// The firmware's access-1 read latency (ns) and read bandwidth (MB/s).
fn firmware_read(n: &TierNode) -> (Option<u32>, Option<u32>) {
    n.access1
        .as_ref()
        .map_or((None, None), |a| (a.read_latency, a.read_bandwidth))
}

/// `firmware` off from `measured` by more than [`OFF_SHARE`] of the measurement.
fn off(firmware: f64, measured: f64) -> bool {
    measured > 0.0 && ((firmware - measured) / measured).abs() > OFF_SHARE
}

fn tier_findings(n: &TierNode, out: &mut Vec<Finding>) {
    if let (Some(k), Some(f)) = (n.kernel_tier, n.firmware_tier) {
        if k as i32 != f {
            out.push(finding("kernel-differs", Some(n.node), format!(
                "node {}: the kernel put it in memory_tier{k}, the kernel's rule on the firmware's values gives memory_tier{f} ({}): kernels before 6.7 compute no distance from the HMAT and before 6.11 put CPU-less nodes present at boot in the DRAM tier; on a newer kernel a driver (dax/kmem, CXL) chose it",
                n.node, n.firmware_basis
            )));
        }
    }
    if let (Some(m), Some(f), Some(p)) = (n.measured_tier, n.firmware_tier, &n.measured) {
        if m != f {
            out.push(finding("measured-tier", Some(n.node), format!(
                "node {}: measured it belongs in memory_tier{m} (adistance {}; {:.1} ns, {}), the firmware puts it in memory_tier{f} ({})",
                n.node,
                n.measured_adistance.unwrap_or_default(),
                p.latency_ns,
                p.bandwidth_gbps.map_or("no bandwidth measured".into(), |b| format!("{b:.2} GB/s")),
                n.firmware_basis
            )));
        }
    }
}

fn off_findings(n: &TierNode, out: &mut Vec<Finding>) {
    let Some(p) = &n.measured else { return };
    let (lat, bw) = firmware_read(n);
    if let Some(l) = lat.filter(|l| off(*l as f64, p.latency_ns)) {
        out.push(finding("firmware-off", Some(n.node), format!(
            "node {}: firmware read latency {l} ns is {:+.0} % off the measured {:.1} ns (from node {}, {})",
            n.node,
            (l as f64 / p.latency_ns - 1.0) * 100.0,
            p.latency_ns,
            p.latency_from,
            p.latency_record
        )));
    }
    if let (Some(b), Some(m)) = (bw, p.bandwidth_gbps) {
        if off(b as f64 / 1000.0, m) {
            out.push(finding("firmware-off", Some(n.node), format!(
                "node {}: firmware read bandwidth {b} MB/s is {:+.0} % off the measured {m:.2} GB/s (from node {}, {})",
                n.node,
                (b as f64 / 1000.0 / m - 1.0) * 100.0,
                p.bandwidth_from.unwrap_or(p.latency_from),
                p.bandwidth_record.as_deref().unwrap_or("?")
            )));
        }
    }
}

/// Measured bandwidth per node (GB/s), for the nodes that have one.
fn measured_bw(nodes: &[TierNode]) -> Vec<(u32, f64)> {
    nodes
        .iter()
        .filter_map(|n| Some((n.node, n.measured.as_ref()?.bandwidth_gbps?)))
        .filter(|(_, b)| *b > 0.0)
        .collect()
}

/// The kernel's weight against one package's measured bandwidth, node by node.
fn package_weight_findings(nodes: &[TierNode], p: &PackageBandwidth, out: &mut Vec<Finding>) {
    let weighted: Vec<(u32, f64, u32)> = p
        .bandwidth
        .iter()
        .filter_map(|(n, b)| Some((*n, *b, nodes.iter().find(|x| x.node == *n)?.weight?)))
        .collect();
    if weighted.len() < 2 {
        return;
    }
    let (bsum, wsum): (f64, f64) = weighted
        .iter()
        .fold((0.0, 0.0), |(b, w), x| (b + x.1, w + x.2 as f64));
    for (n, b, w) in &weighted {
        let (bs, ws) = (b / bsum, *w as f64 / wsum);
        if off(ws, bs) {
            out.push(finding("weights", Some(*n), format!(
                "node {n}: weighted-interleave weight {w} gives it {:.0} % of the pages; {}'s CPUs measured {b:.2} GB/s to it, {:.0} % of their sum",
                ws * 100.0,
                p.name(),
                bs * 100.0
            )));
        }
    }
}

fn weight_list(w: &[(u32, u32)]) -> String {
    w.iter()
        .map(|(n, w)| format!("node{n}={w}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Per initiator package: the kernel's global weights against what that package
/// measured, then the packages against each other (the kernel has one set for all).
fn weight_findings(nodes: &[TierNode], packages: &[PackageBandwidth], out: &mut Vec<Finding>) {
    for p in packages {
        package_weight_findings(nodes, p, out);
    }
    let Some(first) = packages.first() else {
        return;
    };
    let differ: Vec<&PackageBandwidth> = packages
        .iter()
        .filter(|p| p.weights != first.weights)
        .collect();
    if differ.is_empty() {
        return;
    }
    let wants: Vec<String> = std::iter::once(first)
        .chain(differ)
        .map(|p| format!("{} wants {}", p.name(), weight_list(&p.weights)))
        .collect();
    let kernel: Vec<(u32, u32)> = nodes
        .iter()
        .filter_map(|n| Some((n.node, n.weight?)))
        .collect();
    out.push(finding("weights-packages", None, format!(
        "the packages want different interleave weights from their measured bandwidth: {}; the kernel's weights are global ({}), so one set serves every package: run each process on the package whose weights are set, or set the weights of the package that does most of the work",
        wants.join("; "),
        if kernel.is_empty() { "none listed".into() } else { weight_list(&kernel) }
    )));
}

/// Every finding, node by node, then the interleave weights per initiator package.
pub fn findings(nodes: &[TierNode], packages: &[PackageBandwidth]) -> Vec<Finding> {
    let mut out = Vec::new();
    for n in nodes {
        tier_findings(n, &mut out);
        off_findings(n, &mut out);
        if n.access0.is_none() && n.access1.is_none() {
            out.push(finding("no-hmat", Some(n.node), format!(
                "node {}: no HMAT entries (no access0/access1 under /sys/devices/system/node/node{}): the kernel gives it the default DRAM distance 576 (memory_tier4)",
                n.node, n.node
            )));
        }
    }
    weight_findings(nodes, packages, &mut out);
    out
}

/// What advise's bandwidth model predicts for these weights, in words.
fn gain_words(g: &WeightedGain) -> String {
    format!(
        "; advise's model predicts {:.1} GB/s for node {}'s cores streaming reads under these weights, against {:.1} GB/s bound to node {} and {:.1} GB/s under plain interleave ({:+.0} %; {})",
        g.weighted_gbps,
        g.initiator,
        g.bind.1,
        g.bind.0,
        g.interleave_gbps,
        g.gain_percent(),
        g.basis.join(", ")
    )
}

/// The bandwidth the weights follow, and whose: the first package's (its CPUs' best
/// figure to each node: the kernel's weights are global, so one package's), else each
/// node's best initiator's.
fn weight_basis(nodes: &[TierNode], packages: &[PackageBandwidth]) -> (Vec<(u32, f64)>, String) {
    match packages.first() {
        Some(p) => (p.bandwidth.clone(), format!("{}'s CPUs", p.name())),
        None => (measured_bw(nodes), "the best CPU node of each".into()),
    }
}

/// The weights recommended (node, weight): in proportion to [`weight_basis`]'s bandwidth.
pub fn recommended_weights(nodes: &[TierNode], packages: &[PackageBandwidth]) -> Vec<(u32, u32)> {
    let (bw, _) = weight_basis(nodes, packages);
    if bw.len() < 2 {
        return Vec::new();
    }
    weights_from(&bw)
}

fn weight_recommendation(
    nodes: &[TierNode],
    packages: &[PackageBandwidth],
    gain: Option<&WeightedGain>,
) -> Option<Recommendation> {
    let (bw, whose) = weight_basis(nodes, packages);
    if bw.len() < 2 {
        return None;
    }
    let w = weights_from(&bw);
    let list = numalab_topo::cpulist::format(&w.iter().map(|x| x.0).collect::<Vec<_>>());
    let mask: u64 = w.iter().filter(|x| x.0 < 64).map(|x| 1u64 << x.0).sum();
    let mut commands: Vec<String> = w
        .iter()
        .map(|(n, w)| format!("echo {w} > /sys/kernel/mm/mempolicy/weighted_interleave/node{n}"))
        .collect();
    commands.push(format!("numactl --weighted-interleave={list} PROGRAM"));
    commands.push(format!(
        "unsigned long mask = {mask:#x}; set_mempolicy(MPOL_WEIGHTED_INTERLEAVE, &mask, {});",
        w.iter().map(|x| x.0).max().unwrap_or(0) + 2
    ));
    let shares: Vec<String> = bw
        .iter()
        .map(|(n, b)| format!("node {n} {b:.2} GB/s"))
        .collect();
    Some(Recommendation {
        text: format!(
            "weighted interleave across nodes {list} in proportion to the bandwidth {whose} measured ({}): weights {}{}",
            shares.join(", "),
            weight_list(&w),
            gain.map(gain_words).unwrap_or_default()
        ),
        commands,
    })
}

fn demotion_recommendation(
    nodes: &[TierNode],
    enabled: Option<bool>,
    balancing: Option<u32>,
) -> Recommendation {
    let tiers: BTreeSet<u32> = nodes.iter().filter_map(|n| n.kernel_tier).collect();
    let list = tiers
        .iter()
        .map(|t| format!("memory_tier{t}"))
        .collect::<Vec<_>>()
        .join(", ");
    let untiered: Vec<String> = nodes
        .iter()
        .filter(|n| n.kernel_tier.is_none())
        .map(|n| n.node.to_string())
        .collect();
    if !untiered.is_empty() {
        return Recommendation {
            text: format!(
                "demotion: {} {} {} in no memory tier the kernel lists, so the tiers cannot be compared; nothing is recommended ({})",
                numalab_results::words::noun(untiered.len() as u64, "node"),
                untiered.join(", "),
                if untiered.len() == 1 { "is" } else { "are" },
                enabled.map_or("demotion_enabled unknown".into(), |e| format!("demotion_enabled {e}"))
            ),
            commands: Vec::new(),
        };
    }
    if tiers.len() < 2 {
        return Recommendation {
            text: format!(
                "demotion: nothing to demote to: every memory node is in one tier ({}); leave demotion_enabled as it is ({})",
                if list.is_empty() { "no tiers listed".into() } else { list },
                enabled.map_or("unknown".into(), |e| e.to_string())
            ),
            commands: Vec::new(),
        };
    }
    let mut commands = Vec::new();
    if enabled != Some(true) {
        commands.push("echo true > /sys/kernel/mm/numa/demotion_enabled".into());
    }
    if !matches!(balancing, Some(2 | 3)) {
        commands.push("echo 2 > /proc/sys/kernel/numa_balancing".into());
    }
    Recommendation {
        text: format!(
            "demotion: the kernel has {} tiers ({list}); turn demotion on so reclaim moves cold pages down instead of swapping, and NUMA balancing's memory-tiering mode (2) so hot pages come back up{}",
            tiers.len(),
            if commands.is_empty() { " (both already on)" } else { "" }
        ),
        commands,
    }
}

/// The recommendations: interleave weights from measured bandwidth (with the gain
/// advise's model predicts for them, when given), and demotion.
pub fn recommendations(
    nodes: &[TierNode],
    packages: &[PackageBandwidth],
    (enabled, balancing): (Option<bool>, Option<u32>),
    gain: Option<&WeightedGain>,
) -> Vec<Recommendation> {
    let mut out: Vec<Recommendation> = weight_recommendation(nodes, packages, gain)
        .into_iter()
        .collect();
    if out.is_empty() && nodes.len() > 1 {
        out.push(Recommendation {
            text: "weighted interleave: no weights without measured bandwidth to at least two nodes (run `numalab survey` or pass --from)".into(),
            commands: Vec::new(),
        });
    }
    out.push(demotion_recommendation(nodes, enabled, balancing));
    out
}
