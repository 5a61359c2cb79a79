//! The machine's own records as text: `numalab topo` (the tree, nodes, caches,
//! distances) and `numalab plan` (each thread's place, the memory, the proof).

use crate::machine::Verified;
use numalab_results::output::table;
use numalab_results::present::warning_lines;
use numalab_results::Record;
use numalab_topo::{cpulist, fmt_bytes, Level, Machine, PageSize, Plan, TreeNode};
use std::fmt::Write;

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

/// `numalab topo` as text: the tree, nodes, caches, distances and the machine's facts.
pub fn topo_text(m: &Machine, rec: &Record) -> String {
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

    s.push_str(&levels_table(m));
    s.push_str(&nodes_table(m));
    distances_and_kinds(m, &mut s);
    if m.this_system {
        let _ = writeln!(
            s,
            "\nSystem: THP {}; NUMA balancing {}; governor {}; kernel {}",
            p.thp, p.numa_balancing, p.governor, p.kernel
        );
    }
    s.push_str(&warning_lines(std::slice::from_ref(rec)));
    for u in &rec.unavailable {
        let _ = writeln!(s, "unavailable: {}: {}", u.feature, u.reason);
    }
    s
}

/// Every level's domains: how many, their CPUs, cache size and spec names.
fn levels_table(m: &Machine) -> String {
    let mut s = String::new();
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

    s
}

/// Where the node table's total and free come from, and why `monitor` shows less free.
const MEMORY_SOURCES: &str = "total: the node's memory as hwloc reports it (the tree shows the same); on a single node, /proc/meminfo MemTotal when larger (some guests account only part of it to the node).\nfree now: the node's MemFree in sysfs; on a single node, /proc/meminfo MemAvailable when larger, which counts page cache the kernel can reclaim: more than the free memory `numalab monitor` samples (the node's MemFree).\n";

/// Every NUMA node: memory, free, CPUs, type and huge pages.
fn nodes_table(m: &Machine) -> String {
    let mut s = String::new();
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
        &["node", "total", "free now", "CPUs", "type", "huge pages"],
        &rows,
    ));
    s.push('\n');
    if m.this_system {
        s.push_str(MEMORY_SOURCES);
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

fn opt(v: Option<u32>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

/// Each planned thread's place, hops to the memory and, when verified, its CPU.
fn threads_table(plan: &Plan, verified: Option<&Verified>) -> String {
    let mem_hops = plan.memory.as_ref().map(|m| &m.hops_from_threads);
    // A CPU kind tells threads apart only on a hybrid CPU (P and E cores).
    let mut kinds: Vec<Option<u32>> = plan.threads.iter().map(|t| t.pu.kind).collect();
    kinds.dedup();
    let hybrid = kinds.len() > 1;
    let rows: Vec<Vec<String>> = plan
        .threads
        .iter()
        .map(|t| {
            let p = &t.pu;
            let mut r = vec![
                t.thread.to_string(),
                p.os.to_string(),
                p.core.to_string(),
                p.smt_rank.to_string(),
                opt(p.l2),
                opt(p.l3),
                opt(p.die),
                opt(p.package),
                opt(p.node),
                opt(p.kind),
                mem_hops
                    .and_then(|h| h.get(t.thread).copied().flatten())
                    .map(|h| h.to_string())
                    .unwrap_or_else(|| "-".into()),
            ];
            if !hybrid {
                r.remove(CPU_KIND_COL);
            }
            if let Some(v) = verified {
                r.push(format!("ran on CPU {}", v.threads[t.thread].observed_cpu));
            }
            r
        })
        .collect();
    let mut header = vec![
        "thread",
        "cpu",
        "core",
        "smt",
        "l2",
        "l3",
        "die",
        "pkg",
        "node",
        "kind",
        "hops to mem",
    ];
    if !hybrid {
        header.remove(CPU_KIND_COL);
    }
    if verified.is_some() {
        header.push("verified");
    }
    table(&header, &rows) + "\n"
}

/// Where the CPU kind sits in the threads table.
const CPU_KIND_COL: usize = 9;

/// `numalab plan` as text: each thread's place, the memory and what was verified.
pub fn plan_text(plan: &Plan, verified: Option<&Verified>, rec: &Record) -> String {
    let default_level = rec.parameters["default_level"].as_str().unwrap_or("?");
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Plan '{}': {} thread{} on {} (default spreading level: {default_level})\n",
        plan.thread_spec,
        plan.threads.len(),
        if plan.threads.len() == 1 { "" } else { "s" },
        rec.provenance.topology_source
    );
    s.push_str(&threads_table(plan, verified));
    if let Some(mem) = &plan.memory {
        let _ = writeln!(
            s,
            "\nMemory '{}': {} node{} {}, {} pages{}",
            mem.spec,
            mem.policy,
            if mem.nodes.len() == 1 { "" } else { "s" },
            numalab_topo::cpulist::format(&mem.nodes),
            mem.page_size.name(),
            mem.relative_to_node
                .map(|n| format!(", relative to node {n}"))
                .unwrap_or_default()
        );
    }
    if let Some(p) = verified.map(|v| &v.memory) {
        let per: Vec<String> = p
            .pages_per_node
            .iter()
            .map(|(n, c)| format!("{c} on node {n}"))
            .collect();
        let _ = writeln!(
            s,
            "Verified with move_pages: {} of {} checked: {}",
            numalab_results::words::count(p.pages_checked, "page"),
            fmt_bytes(p.bytes),
            per.join(", ")
        );
        // hugetlb pages are not THP; smaps' AnonHugePages says nothing about them.
        let hugetlb = matches!(p.page_size, PageSize::Huge2M | PageSize::Huge1G);
        if let (Some(thp), false) = (p.thp_bytes, hugetlb) {
            let _ = writeln!(
                s,
                "Backed by transparent huge pages (smaps): {}",
                fmt_bytes(thp)
            );
        }
    }
    s.push_str(&warning_lines(std::slice::from_ref(rec)));
    s
}
