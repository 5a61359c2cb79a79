//! `numalab matrix latency|bandwidth`: every initiator domain × memory node.

use crate::common::{bad, check_measurable, provenance, CliError, CommonArgs};
use clap::Args;
use numalab_bench::bandwidth::{self, BwPlan};
use numalab_bench::latency::{self, LatencyPlan};
use numalab_bench::matrix::{self, Cell};
use numalab_probe::bw::BwKernel;
use numalab_probe::{LineState, Request, Timer};
use numalab_results::output::table;
use numalab_results::Record;
use numalab_topo::plan::resolve_memory;
use numalab_topo::spec::parse_size;
use numalab_topo::{fmt_bytes, Level, MemSpec, PageSize};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Arguments of `numalab matrix`.
#[derive(Args, Debug)]
pub struct MatrixArgs {
    /// latency (one chase per cell, first CPU of the domain) or bandwidth (readv, one
    /// requestor per core of the domain, bwmp).
    what: String,
    /// Initiator domains: node, l3, die, pkg, group (default: node).
    #[arg(long, default_value = "node")]
    level: String,
    /// Buffer size (latency: per chase, default 256M; bandwidth: per requestor, default 64M).
    #[arg(long)]
    size: Option<String>,
    /// Timed passes per cell.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    /// Print the cells without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

fn cell_record(
    kind: &str,
    c: &Cell,
    prov: &numalab_results::Provenance,
    extra: serde_json::Value,
) -> Record {
    let mut p = json!({
        "level": c.level, "domain": c.domain, "mem_node": c.node, "hops": c.hops,
        "initiator_cpus": c.initiators.iter().map(|t| t.pu.os).collect::<Vec<_>>(),
    });
    if let (Some(o), Some(e)) = (p.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    Record::new(
        kind,
        &format!("{} {} → node {}", c.level, c.domain, c.node),
        prov.clone(),
        p,
    )
}

/// Run `numalab matrix`.
pub fn run(a: MatrixArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let bw = match a.what.as_str() {
        "latency" => false,
        "bandwidth" => true,
        w => {
            return Err(bad(format!(
                "invalid matrix '{w}': expected latency or bandwidth"
            )))
        }
    };
    let level = Level::parse(&a.level).ok_or_else(|| {
        bad(format!(
            "invalid level '{}': expected node, l3, l2, die, pkg, group or core",
            a.level
        ))
    })?;
    let size = a
        .size
        .as_deref()
        .map(parse_size)
        .transpose()?
        .unwrap_or(if bw { 64 << 20 } else { 256 << 20 });
    if a.iterations == 0 {
        return Err(bad("invalid --iterations '0': at least 1 timed pass"));
    }
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let m = &host.machine;
    let cells = matrix::cells(m, level, bw)?;
    let (prov, warnings) = provenance(&host);
    let kind = if bw {
        "matrix-bandwidth"
    } else {
        "matrix-latency"
    };
    let mut records = Vec::new();
    let timer = (!a.dry_run).then(Timer::best);
    for c in &cells {
        let mem = resolve_memory(m, &MemSpec::Node(c.node), PageSize::Base, &c.initiators)?;
        let mut rec = cell_record(
            kind,
            c,
            &prov,
            json!({ "size_bytes": size, "iterations": a.iterations }),
        );
        if let Some(timer) = &timer {
            if bw {
                let plan = BwPlan {
                    requestors: c.initiators.clone(),
                    helpers: Vec::new(),
                    mem,
                    state: LineState::Warm,
                    kernel: BwKernel::Readv,
                    size,
                    iterations: a.iterations,
                    mp: true,
                    evict_bytes: 0,
                    warnings: Vec::new(),
                };
                let r = bandwidth::measure(&host, timer, &plan)?;
                rec.add_samples("bandwidth", "GB/s", &r.aggregate);
                rec.placement =
                    Some(json!({ "verified": { "threads": r.pins, "memory": r.memory } }));
            } else {
                let plan = LatencyPlan::basic(
                    c.initiators.clone(),
                    Vec::new(),
                    mem,
                    LineState::Warm,
                    Request::Read,
                    a.iterations,
                    0,
                );
                let r = latency::measure(&host, timer, &plan, size)?;
                rec.add_samples("latency", "ns", &r.requestors[0].ns);
                rec.placement = Some(
                    json!({ "verified": { "threads": r.pins, "memory": r.requestors[0].memory } }),
                );
            }
        }
        rec.warnings = warnings.clone();
        records.push(rec);
    }
    let metric = if bw { "bandwidth" } else { "latency" };
    let value = |r: &Record| {
        r.stats
            .iter()
            .find(|s| s.metric == metric)
            .map(|s| s.summary.median)
    };
    let text = || {
        let mut s = String::new();
        let nodes = m.memory_nodes();
        let _ = writeln!(
            s,
            "{} matrix: {} domains × memory nodes, {} per {}, median of {} passes ({})\n",
            a.what,
            level.name(),
            fmt_bytes(size),
            if bw { "requestor" } else { "chase" },
            a.iterations,
            if bw {
                "GB/s, one requestor per core, bwmp"
            } else {
                "ns, random chase, stride 128"
            }
        );
        let mut header = vec![format!("{} \\ node", level.name())];
        header.extend(nodes.iter().map(|n| n.to_string()));
        let mut rows: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for (c, r) in cells.iter().zip(&records) {
            let row = rows
                .entry(c.domain)
                .or_insert_with(|| vec![c.domain.to_string()]);
            row.push(value(r).map(|v| format!("{v:.1}")).unwrap_or_else(|| {
                format!(
                    "hops {}",
                    c.hops.map(|h| h.to_string()).unwrap_or("?".into())
                )
            }));
        }
        let h: Vec<&str> = header.iter().map(|x| x.as_str()).collect();
        s.push_str(&table(&h, &rows.into_values().collect::<Vec<_>>()));
        s.push('\n');
        // Table 4.13's view: every cell grouped by hops.
        let mut by_hops: BTreeMap<Option<u32>, Vec<f64>> = BTreeMap::new();
        for (c, r) in cells.iter().zip(&records) {
            if let Some(v) = value(r) {
                by_hops.entry(c.hops).or_default().push(v);
            }
        }
        if !by_hops.is_empty() {
            let rows: Vec<Vec<String>> = by_hops
                .iter()
                .map(|(h, v)| {
                    let mean = v.iter().sum::<f64>() / v.len() as f64;
                    vec![
                        h.map(|h| h.to_string()).unwrap_or("?".into()),
                        v.len().to_string(),
                        format!("{mean:.1}"),
                    ]
                })
                .collect();
            s.push('\n');
            s.push_str(&table(&["hops", "cells", &format!("mean {metric}")], &rows));
            s.push('\n');
        }
        for w in &warnings {
            let _ = writeln!(s, "warning: {w}");
        }
        s
    };
    a.common.emit(&records, text)
}
