//! The tiers records as text: one row per memory node (its facts and the three tier
//! numbers), the kernel's state, findings, recommendations with their commands, and
//! what was unavailable. The HTML section reuses the rows and lines.

use super::data::{balancing_name, TierNode, TierSystem};
use numalab_results::output::table;
use numalab_results::present::{of, warning_lines};
use numalab_results::Record;
use numalab_topo::tiers::Access;
use numalab_topo::{cpulist, fmt_bytes};
use std::fmt::Write;

/// Which memory figure the node table shows: the one `numalab topo` shows.
pub const MEMORY: &str = "memory: the node's MemTotal (sysfs); on a single node /proc/meminfo MemTotal when larger, as `numalab topo` shows it";

/// The node table's header.
pub const HEADER: [&str; 10] = [
    "node",
    "CPUs",
    "memory",
    "SLIT",
    "HMAT access1 lat r/w ns",
    "bw r/w MB/s",
    "kernel tier",
    "firmware tier",
    "measured tier",
    "weight",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |x| x.to_string())
}

fn access(a: &Option<Access>) -> (String, String) {
    match a {
        None => ("no HMAT".into(), "no HMAT".into()),
        Some(a) => {
            let from = if a.initiators.is_empty() {
                String::new()
            } else {
                format!(" (from {})", cpulist::format(&a.initiators))
            };
            (
                format!("{}/{}{from}", opt(a.read_latency), opt(a.write_latency)),
                format!("{}/{}", opt(a.read_bandwidth), opt(a.write_bandwidth)),
            )
        }
    }
}

/// One row per node.
pub fn rows(nodes: &[TierNode]) -> Vec<Vec<String>> {
    nodes
        .iter()
        .map(|n| {
            let (lat, bw) = access(&n.access1);
            vec![
                n.node.to_string(),
                if n.cpus.is_empty() {
                    "none".into()
                } else {
                    cpulist::format(&n.cpus)
                },
                opt(n.mem_bytes.map(fmt_bytes)),
                n.slit
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
                lat,
                bw,
                opt(n.kernel_tier),
                opt(n.firmware_tier),
                opt(n.measured_tier),
                opt(n.weight),
            ]
        })
        .collect()
}

/// The kernel's state and the references, one line each.
pub fn state_lines(s: &TierSystem) -> Vec<String> {
    let tiers = s.tiers.as_ref().map_or("not listed".into(), |t| {
        t.iter()
            .map(|(k, n)| format!("memory_tier{k} = nodes {}", cpulist::format(n)))
            .collect::<Vec<_>>()
            .join("; ")
    });
    vec![
        format!(
            "kernel {}: {tiers}",
            s.kernel.as_deref().unwrap_or("(release unknown)")
        ),
        format!(
            "demotion: {}",
            s.demotion_enabled.map_or("unknown".into(), |d| if d {
                "enabled".into()
            } else {
                "disabled".to_string()
            })
        ),
        format!(
            "NUMA balancing: {}",
            s.numa_balancing
                .map_or("unknown".into(), |m| format!("{m} ({})", balancing_name(m)))
        ),
        format!("rule: {}", s.rule),
        format!("firmware reference: {}", s.firmware_reference),
        format!("measured reference: {}", s.measured_reference),
    ]
}

/// The tiers of `records` as text; None without a tiers record.
pub fn render(records: &[Record]) -> Option<String> {
    let mut s = String::new();
    if let Some(p) = of(records, "tiers-plan").last() {
        let q = &p.parameters;
        let or = |k: &str, none: &str| q[k].as_str().map_or(none.to_string(), String::from);
        let nodes = q["nodes"]
            .as_array()
            .map_or("every memory node".into(), |n| {
                n.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            });
        let _ = writeln!(
            s,
            "Memory tiers (plan only): reads under {}; nodes: {nodes}; measured: {}; hwloc export: {}; weighted-interleave allocation: {}",
            or("root", "/"),
            or("from", "not given"),
            or("export_hwloc", "none"),
            q["verify_interleave_bytes"]
                .as_u64()
                .map_or("none".into(), numalab_topo::fmt_bytes)
        );
        let _ = writeln!(s, "rule: {}", p.parameters["rule"].as_str().unwrap_or("?"));
        s.push_str(&warning_lines(records));
        return Some(s);
    }
    let nodes: Vec<TierNode> = of(records, "tiers")
        .filter_map(|r| r.data_as().ok())
        .collect();
    let sys_rec = of(records, "tiers-system").last()?;
    let sys: TierSystem = sys_rec.data_as().ok()?;
    let _ = writeln!(s, "Memory tiers read under {}\n", sys.root);
    s.push_str(&table(&HEADER, &rows(&nodes)));
    s.push('\n');
    let _ = writeln!(s, "{MEMORY}");
    for l in state_lines(&sys) {
        let _ = writeln!(s, "{l}");
    }
    let _ = writeln!(s, "\nfindings:");
    if sys.findings.is_empty() {
        let _ = writeln!(s, "  none");
    }
    for f in &sys.findings {
        let _ = writeln!(s, "  - {}", f.text);
    }
    let _ = writeln!(s, "\nrecommendations:");
    for r in &sys.recommendations {
        let _ = writeln!(s, "  - {}", r.text);
        for c in &r.commands {
            let _ = writeln!(s, "      {c}");
        }
    }
    if let Some(x) = &sys.hwloc_export {
        let _ = writeln!(s, "\nhwloc: {x}");
    }
    if let Some(c) = &sys.interleave {
        let _ = writeln!(s, "\nweighted interleave: {}", super::interleave::words(c));
    }
    for u in unavailable(&sys, sys_rec) {
        let _ = writeln!(s, "unavailable: {u}");
    }
    s.push_str(&warning_lines(records));
    Some(s)
}

/// The system record's unavailable entries as "feature: reason", less what a state line
/// already says: why no measured figure is shown is the "measured reference" line, said
/// once (issue 42: "none possible" was printed twice on one node).
pub fn unavailable(sys: &TierSystem, rec: &Record) -> Vec<String> {
    rec.unavailable
        .iter()
        .filter(|u| !(u.feature == "measured" && u.reason == sys.measured_reference))
        .map(|u| format!("{}: {}", u.feature, u.reason))
        .collect()
}
