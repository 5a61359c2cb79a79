//! `numalab tiers` as an experiment: options, the plan (which root, which nodes,
//! which measurement), and the records: one per memory node and one for the system.

use super::data::PackageBandwidth;
use super::data::{TierNode, TierSystem};
use super::export;
use super::findings::{findings, recommendations, recommended_weights};
use super::interleave::{self, InterleaveCheck};
use super::measure;
use super::rule::{self, NoReference, Perf};
use crate::advise::{weighted_gain, Measured, WeightedGain};
use numalab_bench::experiment::Context;
use numalab_results::{Record, Unavailable};
use numalab_topo::tiers::{Access, NodeFacts, TierFacts};
use numalab_topo::{cpulist, Error, Host, Machine, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::Path;

/// The firmware's DRAM reference (node, its access-1 values), or why the kernel has none.
type FwReference = std::result::Result<(u32, Perf), NoReference>;

/// What the user asks of `tiers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Nodes to show (a list such as 0-2; None: every memory node).
    pub nodes: Option<String>,
    /// A survey folder or results file holding the measured matrices.
    pub from: Option<String>,
    /// Where sysfs and procfs are read ("/": this machine; a folder: a recorded tree).
    pub root: String,
    /// Write this machine's hwloc XML with the measured latency and bandwidth here.
    pub export_hwloc: Option<String>,
    /// Allocate this size (e.g. 64M) under weighted interleave and count its pages.
    #[serde(default)]
    pub verify_interleave: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            nodes: None,
            from: None,
            root: "/".into(),
            export_hwloc: None,
            verify_interleave: None,
        }
    }
}

impl Options {
    /// Check what needs no machine: the node list and the root.
    pub fn check(&self) -> Result<()> {
        if let Some(n) = &self.nodes {
            cpulist::parse("--nodes", n)?;
        }
        if let Some(x) = &self.export_hwloc {
            if !x.ends_with(".xml") || self.from.is_none() {
                return Err(Error::input(format!(
                    "invalid --export-hwloc '{x}': a FILE.xml, with --from (the measured matrices it exports)"
                )));
            }
        }
        if let Some(v) = &self.verify_interleave {
            self.interleave_bytes(v)?;
        }
        check_root(&self.root)
    }
}

/// A root other than / is a folder holding the node folders (`sys/devices/system/node`):
/// without them every fact would be reported missing, as if the kernel lacked it.
fn check_root(root: &str) -> Result<()> {
    if root.is_empty() {
        return Err(Error::input(
            "invalid --root '': a folder (/ for this machine)",
        ));
    }
    let p = Path::new(root);
    if !p.is_dir() {
        let what = if p.exists() {
            "not a folder"
        } else {
            "no such folder"
        };
        return Err(Error::input(format!(
            "invalid --root '{root}': {what}; give / or a folder holding a recorded sys/ and proc/ tree"
        )));
    }
    // This machine's own root is read as it is: a kernel without NUMA says so in the report.
    if root != "/" && !p.join(numalab_topo::tiers::NODE_DIR).is_dir() {
        return Err(Error::input(format!(
            "invalid --root '{root}': it has no {}; give / or a folder holding a recorded sys/ and proc/ tree",
            numalab_topo::tiers::NODE_DIR
        )));
    }
    Ok(())
}

impl Options {
    /// The size of `--verify-interleave`: above 0, and on this machine only.
    fn interleave_bytes(&self, v: &str) -> Result<u64> {
        let bytes = numalab_topo::spec::parse_size(v).map_err(|_| {
            Error::input(format!(
                "invalid --verify-interleave '{v}': a size above 0 with an optional suffix K, M or G (e.g. 64M)"
            ))
        })?;
        if self.root != "/" {
            return Err(Error::input(format!(
                "invalid --verify-interleave with --root '{}': the allocation runs on this machine, so the root must be /",
                self.root
            )));
        }
        if let Some((_, avail)) = numalab_topo::sysfs::system_memory() {
            if bytes > avail / 2 {
                return Err(Error::input(format!(
                    "invalid --verify-interleave '{v}': {} is more than half of the {} of memory available on this machine",
                    numalab_topo::fmt_bytes(bytes),
                    numalab_topo::fmt_bytes(avail)
                )));
            }
        }
        Ok(bytes)
    }
}

/// The resolved question.
pub struct Plan {
    /// The options.
    pub options: Options,
    /// Nodes asked for (None: every memory node the root shows).
    pub nodes: Option<Vec<u32>>,
    /// The measured matrices, when `--from` was given.
    pub measured: Option<Measured>,
    /// Bytes to allocate under weighted interleave, when asked.
    pub interleave: Option<u64>,
}

fn read_measured(path: &str, root: &str, export: bool, m: &Machine) -> Result<Measured> {
    let (mut records, _) = crate::survey::files::read_input(Path::new(path))
        .map_err(|e| Error::input(format!("invalid --from '{path}': {e}")))?;
    measure::same_machine(path, &records, root, m)?;
    // The export writes this machine's topology with the measured figures: they must
    // be this machine's too, whatever tree --root reads.
    if export && root != "/" {
        measure::same_machine(path, &records, "/", m)?;
    }
    // A matrix file of its own carries no topology: its CPUs are this machine's.
    if !records.iter().any(|r| r.kind == "topo") {
        let prov = numalab_results::Provenance::collect(&m.summary(), &m.source);
        let mut topo = Record::new("topo", "topo", prov, json!({}));
        topo.set_data(m);
        records.push(topo);
    }
    let measured = Measured::from_records(&records)
        .map_err(|e| Error::input(format!("invalid --from '{path}': {e}")))?;
    if measured.lat.is_empty() {
        return Err(Error::input(format!(
            "invalid --from '{path}': it holds no latency matrix (matrix-latency records); give a survey folder (numalab survey -o DIR) or numalab matrix latency -o FILE.json"
        )));
    }
    Ok(measured)
}

impl Plan {
    /// Resolve: the node list against this machine (when reading it) and the measurement.
    pub fn resolve(m: &Machine, o: &Options) -> Result<Plan> {
        o.check()?;
        let nodes = o
            .nodes
            .as_deref()
            .map(|n| cpulist::parse("--nodes", n))
            .transpose()?;
        if let (Some(ns), "/") = (&nodes, o.root.as_str()) {
            let have: Vec<u32> = m.nodes.iter().map(|n| n.os).collect();
            check_nodes(ns, &have)?;
        }
        // The file is checked before the survey is read: a bad path is said first.
        if let Some(x) = &o.export_hwloc {
            numalab_results::output::check_creatable(Path::new(x))
                .map_err(|e| Error::input(format!("invalid --export-hwloc: {e}")))?;
        }
        let measured = o
            .from
            .as_deref()
            .map(|p| read_measured(p, &o.root, o.export_hwloc.is_some(), m))
            .transpose()?;
        let interleave = o
            .verify_interleave
            .as_deref()
            .map(|v| o.interleave_bytes(v))
            .transpose()?;
        Ok(Plan {
            options: o.clone(),
            nodes,
            measured,
            interleave,
        })
    }

    /// The plan as a record (what `--dry-run` emits).
    pub fn record(&self, ctx: &Context) -> Record {
        let mut r = Record::new("tiers-plan", "tiers", ctx.prov.clone(), self.params());
        r.warnings = ctx.warnings.clone();
        r
    }

    fn params(&self) -> serde_json::Value {
        json!({
            "root": self.options.root,
            "nodes": self.nodes,
            "from": self.options.from,
            "export_hwloc": self.options.export_hwloc,
            "verify_interleave_bytes": self.interleave,
            "rule": rule::SOURCE,
            "reads": ["/sys/devices/system/node/nodeN/{cpulist,meminfo,distance,access0,access1}", "/sys/devices/virtual/memory_tiering", "/sys/kernel/mm/numa/demotion_enabled", "/proc/sys/kernel/numa_balancing", "/sys/kernel/mm/mempolicy/weighted_interleave"],
        })
    }
}

fn check_nodes(asked: &[u32], have: &[u32]) -> Result<()> {
    match asked.iter().find(|n| !have.contains(n)) {
        Some(n) => Err(Error::bad(
            "--nodes",
            n.to_string(),
            format!(
                "{} {} (the nodes this machine has)",
                numalab_results::words::noun(have.len() as u64, "node"),
                cpulist::format(have)
            ),
        )),
        None => Ok(()),
    }
}

/// An access class as the kernel's coordinate (absent values are the kernel's 0).
fn perf_of(a: &Access) -> Perf {
    Perf {
        read_latency: a.read_latency.unwrap_or(0),
        write_latency: a.write_latency.unwrap_or(0),
        read_bandwidth: a.read_bandwidth.unwrap_or(0),
        write_bandwidth: a.write_bandwidth.unwrap_or(0),
    }
}

fn has_memory(n: &NodeFacts) -> bool {
    n.mem_bytes.is_some_and(|b| b > 0)
}

/// The firmware's DRAM reference: nodes with CPUs and memory that have an HMAT target.
fn firmware_reference(facts: &TierFacts) -> FwReference {
    let dram: Vec<(u32, Option<Perf>)> = facts
        .nodes
        .iter()
        .filter(|n| !n.cpus.is_empty() && has_memory(n))
        .map(|n| {
            let target = n.access0.is_some() || n.access1.is_some();
            let p = n.access1.as_ref().map(perf_of).unwrap_or_default();
            (n.node, target.then_some(p))
        })
        .collect();
    rule::dram_reference(&dram)
}

fn reference_words(r: &FwReference) -> String {
    match r {
        Ok((n, p)) => format!(
            "node {n}'s access1 values: {}+{} ns, {}+{} MB/s",
            p.read_latency, p.write_latency, p.read_bandwidth, p.write_bandwidth
        ),
        Err(NoReference::Missing) => "none: no node with CPUs and memory has HMAT values, so every node gets the default DRAM distance 576".into(),
        Err(NoReference::Zero(n)) => format!("none: node {n}'s access1 latency or bandwidth is 0 (the kernel's -EINVAL), so every node gets the default distance 576"),
        Err(NoReference::Mismatch(a, b)) => format!("none: DRAM node {b} differs from node {a} by more than 10 % (the kernel disables the performance-based distance), so every node gets the default distance 576"),
    }
}

/// The firmware distance of a node, and in words what it rests on.
fn firmware_distance(n: &NodeFacts, r: &FwReference) -> (i32, String) {
    let default = (
        rule::ADISTANCE_DRAM,
        "default DRAM distance 576".to_string(),
    );
    let (Ok((_, dram)), Some(a)) = (r, &n.access1) else {
        return if n.access1.is_none() {
            (
                default.0,
                "no HMAT access1 values: default DRAM distance 576".into(),
            )
        } else {
            (
                default.0,
                "no DRAM reference: default DRAM distance 576".into(),
            )
        };
    };
    let p = perf_of(a);
    match rule::adistance(&p, dram) {
        Some(d) => (
            d,
            format!(
                "adistance {d} from {}+{} ns, {}+{} MB/s",
                p.read_latency, p.write_latency, p.read_bandwidth, p.write_bandwidth
            ),
        ),
        None => (
            default.0,
            "access1 latency or bandwidth is 0: default DRAM distance 576".into(),
        ),
    }
}

fn node_record(
    n: &NodeFacts,
    facts: &TierFacts,
    fw_ref: &FwReference,
    measured: Option<(&Measured, &measure::Reference)>,
) -> TierNode {
    let (fa, basis) = firmware_distance(n, fw_ref);
    let mp = measured.and_then(|(m, _)| measure::perf_of(m, n.node));
    let ma = match (&mp, measured) {
        (Some(p), Some((_, r))) => measure::distance(p, r),
        _ => None,
    };
    TierNode {
        node: n.node,
        cpus: n.cpus.clone(),
        mem_bytes: n.mem_bytes,
        slit: n.distances.clone(),
        access0: n.access0.clone(),
        access1: n.access1.clone(),
        kernel_tier: facts.kernel_tier(n.node),
        firmware_adistance: Some(fa),
        firmware_tier: Some(rule::tier(fa)),
        firmware_basis: basis,
        measured: mp,
        measured_adistance: ma,
        measured_tier: ma.map(rule::tier),
        weight: facts.weights.as_ref().and_then(|w| w.get(&n.node).copied()),
    }
}

fn kernel_major_minor(k: &Option<String>) -> String {
    k.as_deref()
        .map_or("unknown".into(), |k| format!("this kernel: {k}"))
}

/// Each feature this machine lacks, with what is missing and the kernel it needs.
fn unavailable(facts: &TierFacts, nodes: &[TierNode], from: bool) -> Vec<Unavailable> {
    let k = kernel_major_minor(&facts.kernel);
    let u = |f: &str, r: String| Unavailable {
        feature: f.into(),
        reason: r,
    };
    let mut out = Vec::new();
    if facts.tiers.is_none() {
        out.push(u("memory tiers", format!("/sys/devices/virtual/memory_tiering is missing: memory tiers exist from Linux 6.1 ({k})")));
    }
    if facts.weights.is_none() {
        out.push(u("weighted interleave", format!("/sys/kernel/mm/mempolicy/weighted_interleave is missing: MPOL_WEIGHTED_INTERLEAVE exists from Linux 6.9 ({k})")));
    }
    if facts.demotion_enabled.is_none() {
        out.push(u("demotion", format!("/sys/kernel/mm/numa/demotion_enabled is missing: it exists from Linux 5.15 with CONFIG_MIGRATION ({k})")));
    }
    if facts.numa_balancing.is_none() {
        out.push(u("NUMA balancing", format!("/proc/sys/kernel/numa_balancing is missing: the kernel is built without CONFIG_NUMA_BALANCING ({k})")));
    }
    if nodes
        .iter()
        .all(|n| n.access0.is_none() && n.access1.is_none())
    {
        out.push(u("HMAT", "no node has access0 or access1 under /sys/devices/system/node: the firmware gave no HMAT, or the kernel lacks CONFIG_HMEM_REPORTING; firmware tiers are the default DRAM distance".into()));
    }
    if !from {
        out.push(u("measured", not_measured(facts)));
    }
    out
}

/// Why no measured figure is shown: none given, when a survey of this machine could
/// hold a node × node matrix; with one memory node, none is possible.
fn not_measured(facts: &TierFacts) -> String {
    match facts.nodes.iter().filter(|n| has_memory(n)).count() {
        0 | 1 => "none possible: one node with memory, so a survey measures no node × node matrix to compare with".into(),
        _ => "not given (run `numalab survey` or pass --from)".into(),
    }
}

/// `--verify-interleave`: the allocation over the memory nodes shown that have a
/// weight, or why it could not be made (the kernel lacks the mode).
fn verify_interleave(
    plan: &Plan,
    facts: &TierFacts,
    nodes: &[TierNode],
) -> (Option<InterleaveCheck>, Option<Unavailable>) {
    let Some(bytes) = plan.interleave else {
        return (None, None);
    };
    let k = kernel_major_minor(&facts.kernel);
    let u = |reason: String| Unavailable {
        feature: "weighted-interleave allocation".into(),
        reason,
    };
    let Some(weights) = &facts.weights else {
        return (None, Some(u(format!("/sys/kernel/mm/mempolicy/weighted_interleave is missing: MPOL_WEIGHTED_INTERLEAVE exists from Linux 6.9 ({k})"))));
    };
    let mask: Vec<u32> = nodes
        .iter()
        .map(|n| n.node)
        .filter(|n| weights.contains_key(n))
        .collect();
    match interleave::check(bytes, &mask, weights) {
        Ok(c) => (Some(c), None),
        Err(e) => (None, Some(u(format!("{e} ({k})")))),
    }
}

/// From the measurement: each initiator package's bandwidth to the nodes shown, and
/// what advise's model predicts for the recommended weights from the first package's
/// first CPU node (the weights follow that package).
fn weights_measured(
    m: Option<&Measured>,
    nodes: &[TierNode],
) -> (Vec<PackageBandwidth>, Option<WeightedGain>) {
    let Some(m) = m else {
        return (Vec::new(), None);
    };
    let shown: Vec<u32> = nodes.iter().map(|n| n.node).collect();
    let packages = measure::package_bandwidth(m, &shown);
    let weights = recommended_weights(nodes, &packages);
    let initiator = packages
        .first()
        .and_then(|p| p.initiators.first())
        .or(m.cpu_nodes.first());
    let gain = initiator
        .filter(|_| !weights.is_empty())
        .and_then(|d| weighted_gain(m, *d, &weights));
    (packages, gain)
}

/// One finding per file whose content the kernel would not have written.
fn malformed_findings(facts: &TierFacts) -> Vec<super::data::Finding> {
    facts
        .malformed
        .iter()
        .map(|m| super::data::Finding {
            rule: "malformed".into(),
            node: None,
            text: format!("{m} (under {})", facts.root),
        })
        .collect()
}

/// Read the facts under the plan's root and build the records: one "tiers" record per
/// memory node, then the "tiers-system" record with findings and recommendations.
pub fn run(host: &Host, plan: &Plan, ctx: &Context) -> Result<Vec<Record>> {
    let facts = TierFacts::read(Path::new(&plan.options.root));
    let have: Vec<u32> = facts.nodes.iter().map(|n| n.node).collect();
    if let Some(ns) = &plan.nodes {
        check_nodes(ns, &have)?;
    }
    let fw_ref = firmware_reference(&facts);
    let m_ref = plan.measured.as_ref().map(measure::reference);
    let measured = plan.measured.as_ref().zip(m_ref.as_ref());
    let nodes: Vec<TierNode> = facts
        .nodes
        .iter()
        .filter(|n| has_memory(n))
        .filter(|n| plan.nodes.as_ref().is_none_or(|ns| ns.contains(&n.node)))
        .map(|n| node_record(n, &facts, &fw_ref, measured))
        .collect();
    let (interleave, why) = verify_interleave(plan, &facts, &nodes);
    let (packages, gain) = weights_measured(plan.measured.as_ref(), &nodes);
    let system = TierSystem {
        root: facts.root.clone(),
        kernel: facts.kernel.clone(),
        tiers: facts.tiers.clone(),
        demotion_enabled: facts.demotion_enabled,
        numa_balancing: facts.numa_balancing,
        rule: rule::SOURCE.into(),
        firmware_reference: reference_words(&fw_ref),
        measured_reference: m_ref
            .as_ref()
            .map_or_else(|| not_measured(&facts), measure::reference_words),
        findings: malformed_findings(&facts)
            .into_iter()
            .chain(findings(&nodes, &packages))
            .collect(),
        recommendations: recommendations(
            &nodes,
            &packages,
            (facts.demotion_enabled, facts.numa_balancing),
            gain.as_ref(),
        ),
        package_weights: packages,
        hwloc_export: match (&plan.options.export_hwloc, &plan.measured) {
            (Some(x), Some(m)) => Some(export::write(host, m, x)?),
            _ => None,
        },
        interleave,
    };
    let params = plan.params();
    let mut out: Vec<Record> = nodes
        .iter()
        .map(|n| {
            let mut r = Record::new(
                "tiers",
                &format!("node {}", n.node),
                ctx.prov.clone(),
                params.clone(),
            );
            r.set_data(n);
            r.warnings = ctx.warnings.clone();
            r
        })
        .collect();
    let mut r = Record::new("tiers-system", "system", ctx.prov.clone(), params);
    r.set_data(&system);
    r.warnings = ctx.warnings.clone();
    r.unavailable = unavailable(&facts, &nodes, plan.measured.is_some());
    r.unavailable.extend(why);
    out.push(r);
    Ok(out)
}
