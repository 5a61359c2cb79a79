//! `numalab topo`: the machine as a compact tree plus tables.

use crate::common::{context, CliError, CommonArgs};
use clap::Args;
use numalab_results::output::table;
use numalab_results::Record;
use numalab_topo::{cpulist, fmt_bytes, Level, Machine, TreeNode};
use std::fmt::Write;

/// Arguments of `numalab topo`.
#[derive(Args, Debug)]
pub struct TopoArgs {
    #[command(flatten)]
    common: CommonArgs,
}

/// Run `numalab topo`.
pub fn run(a: TopoArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let host = a.common.host()?;
    let m = &host.machine;
    let rec = numalab_bench::machine::topo_record(&host, &context(&host));
    let text = || render(m, &rec);
    a.common.emit(std::slice::from_ref(&rec), text)
}

fn tree_lines(t: &TreeNode, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    let _ = writeln!(out, "{pad}{}", t.label);
    for mem in &t.memory {
        let _ = writeln!(out, "{pad}  {mem}");
    }
    for c in &t.children {
        tree_lines(c, depth + 1, out);
    }
}

/// Render the readable report.
pub fn render(m: &Machine, rec: &Record) -> String {
    let mut s = String::new();
    let p = &rec.provenance;
    let _ = writeln!(
        s,
        "Topology of {}: {}\n{}",
        m.source,
        m.cpu_model.as_deref().unwrap_or("unknown CPU"),
        m.summary()
    );
    s.push_str("\nTree\n");
    tree_lines(&m.tree, 1, &mut s);

    let none = |v: &[u32]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            cpulist::format(v)
        }
    };
    let _ = writeln!(
        s,
        "\nCPUs: usable {}; offline {}; not allowed {}",
        m.cpu_list(),
        none(&m.offline_cpus),
        none(&m.disallowed_cpus)
    );

    let mut rows = Vec::new();
    for l in m.levels.iter().rev() {
        if l.level == Level::Pu {
            continue;
        }
        let sizes: Vec<usize> = l.domains.iter().map(|d| d.cpus.len()).collect();
        let (lo, hi) = (
            sizes.iter().min().unwrap_or(&0),
            sizes.iter().max().unwrap_or(&0),
        );
        rows.push(vec![
            l.level.to_string(),
            l.domains.len().to_string(),
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            },
            l.domains
                .first()
                .and_then(|d| d.cache_bytes)
                .map(fmt_bytes)
                .unwrap_or_default(),
            format!(
                "{}:{}",
                l.level,
                cpulist::format(&l.domains.iter().map(|d| d.index).collect::<Vec<_>>())
            ),
        ]);
    }
    s.push_str("\nLevels\n");
    s.push_str(&table(
        &["level", "domains", "CPUs each", "cache", "spec names"],
        &rows,
    ));
    s.push('\n');

    let mut rows = Vec::new();
    for n in &m.nodes {
        let pages: Vec<String> = n
            .pages
            .iter()
            .filter(|pg| pg.size > 4096)
            .map(|pg| match pg.free {
                Some(f) => format!("{}: {}/{} free", fmt_bytes(pg.size), f, pg.count),
                None => format!("{}: {}", fmt_bytes(pg.size), pg.count),
            })
            .collect();
        let cpus: Vec<u32> = m
            .pus
            .iter()
            .filter(|p| p.node == Some(n.os))
            .map(|p| p.os)
            .collect();
        rows.push(vec![
            n.os.to_string(),
            fmt_bytes(n.total_bytes),
            n.free_bytes.map(fmt_bytes).unwrap_or_else(|| "-".into()),
            if n.cpu_less {
                "none (CPU-less)".into()
            } else {
                cpulist::format(&cpus)
            },
            n.subtype.clone().unwrap_or_default(),
            if pages.is_empty() {
                "none reserved".into()
            } else {
                pages.join(", ")
            },
        ]);
    }
    s.push_str("\nNUMA nodes\n");
    s.push_str(&table(
        &["node", "memory", "free", "CPUs", "type", "huge pages"],
        &rows,
    ));
    s.push('\n');

    distances_and_kinds(m, &mut s);
    if m.this_system {
        let _ = writeln!(
            s,
            "\nSystem: THP {}; NUMA balancing {}; governor {}; kernel {}",
            p.thp, p.numa_balancing, p.governor, p.kernel
        );
    }
    for w in &rec.warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    for u in &rec.unavailable {
        let _ = writeln!(s, "unavailable: {}: {}", u.feature, u.reason);
    }
    s
}

/// Distances and hops, memory attributes and CPU kinds.
fn distances_and_kinds(m: &Machine, s: &mut String) {
    let d = &m.distances;
    let _ = writeln!(s, "\nDistances and hops (from {})", d.source);
    let mut header = vec!["from\\to".to_string()];
    header.extend(d.nodes.iter().map(|n| n.to_string()));
    let rows: Vec<Vec<String>> = d
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut r = vec![n.to_string()];
            r.extend((0..d.nodes.len()).map(|j| match d.values.get(i) {
                Some(v) => format!("{} ({}h)", v[j], d.hops[i][j]),
                None => format!("{}h", d.hops[i][j]),
            }));
            r
        })
        .collect();
    let hdr: Vec<&str> = header.iter().map(|h| h.as_str()).collect();
    s.push_str(&table(&hdr, &rows));
    s.push('\n');

    if !m.memattrs.is_empty() {
        s.push_str("\nMemory attributes (hwloc)\n");
        let rows: Vec<Vec<String>> = m
            .memattrs
            .iter()
            .flat_map(|a| {
                a.values.iter().map(move |v| {
                    vec![
                        a.name.clone(),
                        v.initiator.clone().unwrap_or_else(|| "-".into()),
                        v.node.to_string(),
                        format!("{} {}", v.value, a.unit),
                    ]
                })
            })
            .collect();
        s.push_str(&table(
            &["attribute", "initiator CPUs", "node", "value"],
            &rows,
        ));
        s.push('\n');
    }
    if m.cpu_kinds.len() > 1 {
        s.push_str("\nCPU kinds (placement uses the highest rank first)\n");
        let rows: Vec<Vec<String>> = m
            .cpu_kinds
            .iter()
            .map(|k| {
                vec![
                    k.rank.to_string(),
                    cpulist::format(&k.cpus),
                    k.infos
                        .iter()
                        .map(|(a, b)| format!("{a}={b}"))
                        .collect::<Vec<_>>()
                        .join(" "),
                ]
            })
            .collect();
        s.push_str(&table(&["rank", "CPUs", "infos"], &rows));
        s.push('\n');
    }
}
