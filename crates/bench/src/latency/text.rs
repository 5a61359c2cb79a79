//! The text of `numalab latency`, from its records alone: the measured table (with the
//! restart search), the plan of `--dry-run`, and the sweep's plateaus.

use super::{LatencyData, SweepData};
use crate::sweep::Plateau;
use numalab_results::disturb::PassLog;
use numalab_results::output::table;
use numalab_results::present::{of, warning_lines};
use numalab_results::settle;
use numalab_results::Record;
use numalab_topo::{cpulist, fmt_bytes};
use serde_json::Value;
use std::fmt::Write;

/// Relative tolerance of a plateau: points within ±12% of the run's median.
pub(super) const PLATEAU_TOL: f64 = 0.12;

fn f(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A parameter as printed: strings bare, anything else as JSON.
fn p(r: &Record, key: &str) -> String {
    match &r.parameters[key] {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        v => v.to_string(),
    }
}

/// The OS indices of a list of resolved thread placements, as a CPU list.
fn cpus(v: &Value) -> String {
    let ids: Vec<u32> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["os"].as_u64().map(|x| x as u32))
        .collect();
    cpulist::format(&ids)
}

/// The memory node(s) a record's placement resolved to.
fn mem_nodes(r: &Record) -> String {
    r.placement
        .as_ref()
        .map(|pl| cpulist::format_json(&pl["resolved"]["memory"]["nodes"]))
        .unwrap_or_else(|| "-".into())
}

/// The text of `latency` and `latency-plan` records.
pub fn text(records: &[Record]) -> Option<String> {
    let measured: Vec<&Record> = of(records, "latency").collect();
    let planned: Vec<&Record> = of(records, "latency-plan").collect();
    let mut s = if let Some(first) = measured.first() {
        measured_text(first, &measured)
    } else {
        plan_text(planned.first()?, &planned)
    };
    let all: Vec<Record> = measured.into_iter().chain(planned).cloned().collect();
    let (all, folded) = numalab_results::disturb::fold_warnings(&all, "measurements");
    s.push_str(&folded);
    s.push_str(&warning_lines(&all));
    Some(s)
}

fn measured_text(first: &Record, records: &[&Record]) -> String {
    let mut s = String::new();
    let timer = &first.parameters["timer"];
    let _ = writeln!(
        s,
        "Latency: kernel {}, state {}, stride {} B, window {}, {} pages, {}; timer {} at {:.3} GHz (resolution {:.1} ns)\n",
        p(first, "kernel"),
        p(first, "state"),
        p(first, "stride_bytes"),
        numalab_results::words::count(first.parameters["window_pages"].as_u64().unwrap_or(0), "page"),
        p(first, "page_size"),
        numalab_results::words::passes(first.parameters["iterations"].as_u64().unwrap_or(0) as usize),
        timer["kind"].as_str().unwrap_or("unknown"),
        timer["hz"].as_f64().unwrap_or(f64::NAN) / 1e9,
        timer["resolution_ns"].as_f64().unwrap_or(f64::NAN)
    );
    let restart = !first.parameters["restart"].is_null();
    let own = first.parameters["helper_cpus"]
        .as_array()
        .is_some_and(|h| !h.is_empty());
    let mut header = vec![
        "size",
        "cpu",
        "node",
        "median ns",
        "min",
        "p95",
        "stdev",
        "TSC cycles",
        "core cycles @ GHz",
        "disturbed",
    ];
    if restart {
        header.push("restart ns");
    }
    if own {
        header.push("own-cache ns");
    }
    let rows: Vec<Vec<String>> = records.iter().map(|r| row(r, restart, own)).collect();
    s.push_str(&table(&header, &rows));
    s.push('\n');
    let owned: Vec<Record> = records.iter().map(|r| (*r).clone()).collect();
    s.push_str(&PassLog::line_of(&owned).unwrap_or_default());
    s.push('\n');
    if let Some(o) = first.data_as::<LatencyData>().ok().and_then(|d| d.restart) {
        let _ = writeln!(
            s,
            "Restart search (cpu {}): stable window k = {} to {} ({}), {} measured",
            p(first, "requestor_cpu"),
            o.stable_from,
            o.stable_to,
            if o.converged {
                "converged"
            } else {
                "k ran out"
            },
            numalab_results::words::count(o.curve.len() as u64, "step")
        );
    }
    s
}

/// The figure in core cycles at the core clock measured beside it: "4.0 @ 3.24".
fn core_cycles(r: &Record) -> Option<String> {
    let c = r.data_as::<super::LatencyData>().ok()?.core_clock?;
    Some(format!(
        "{} @ {:.2}",
        f(r.median("latency_cycles")?),
        c.ghz()
    ))
}

/// One requestor at one size: its statistics, restart and own-cache figures.
fn row(r: &Record, restart: bool, own: bool) -> Vec<String> {
    let dash = || "-".to_string();
    let l = r.stat("latency");
    let mut row = vec![
        fmt_bytes(r.parameters["size_bytes"].as_u64().unwrap_or(0)),
        p(r, "requestor_cpu"),
        mem_nodes(r),
        l.map(|x| settle::cell(r, f(x.summary.median)))
            .unwrap_or_else(|| "unavailable".into()),
        l.map(|x| f(x.summary.min)).unwrap_or_default(),
        l.map(|x| f(x.summary.p95)).unwrap_or_default(),
        l.map(|x| f(x.summary.stdev)).unwrap_or_default(),
        r.median("latency_tsc").map(f).unwrap_or_else(dash),
        core_cycles(r).unwrap_or_else(dash),
        PassLog::cell(r),
    ];
    if restart {
        row.push(
            r.stat("restart")
                .map(|x| f(x.summary.min))
                .unwrap_or_else(dash),
        );
    }
    if own {
        row.push(r.median("own_cache_reference").map(f).unwrap_or_else(dash));
    }
    row
}

/// The plan of `--dry-run`: placements, layout and, per size, what a pass visits.
fn plan_text(first: &Record, records: &[&Record]) -> String {
    let mut s = String::new();
    let resolved = first
        .placement
        .as_ref()
        .map(|pl| pl["resolved"].clone())
        .unwrap_or(Value::Null);
    let _ = writeln!(
        s,
        "Plan: kernel {} on state {} ({})",
        p(first, "kernel"),
        p(first, "state"),
        p(first, "state_how")
    );
    let _ = writeln!(s, "  requestors: CPU {}", cpus(&resolved["requestors"]));
    if resolved["helpers"]
        .as_array()
        .is_some_and(|h| !h.is_empty())
    {
        let _ = writeln!(s, "  helpers:    CPU {}", cpus(&resolved["helpers"]));
    }
    let hops: Vec<String> = resolved["memory"]["hops_from_threads"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| h.as_u64().map_or("unknown".into(), |h| h.to_string()))
        .collect();
    let _ = writeln!(
        s,
        "  memory:     node {} ({}), hops from requestors {}",
        cpulist::format_json(&resolved["memory"]["nodes"]),
        p(first, "page_size"),
        hops.join(", ")
    );
    let _ = writeln!(
        s,
        "  layout:     {}, stride {} B, window {}, seed {}; {} each\n",
        p(first, "order"),
        p(first, "stride_bytes"),
        numalab_results::words::count(
            first.parameters["window_pages"].as_u64().unwrap_or(0),
            "page"
        ),
        p(first, "seed"),
        numalab_results::words::passes(
            first.parameters["iterations"].as_u64().unwrap_or(0) as usize
        )
    );
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            vec![
                fmt_bytes(r.parameters["size_bytes"].as_u64().unwrap_or(0)),
                p(r, "elements"),
                p(r, "visited_per_pass"),
                p(r, "loads_per_pass"),
            ]
        })
        .collect();
    s.push_str(&table(
        &["size", "elements", "visited/pass", "loads/pass"],
        &rows,
    ));
    s.push('\n');
    s
}

fn plateau_rows(ps: &[Plateau]) -> Vec<Vec<String>> {
    ps.iter()
        .map(|p| {
            vec![
                p.level.clone(),
                f(p.median_ns),
                format!("{} – {}", fmt_bytes(p.from_bytes), fmt_bytes(p.to_bytes)),
                p.exceeded_at.map(fmt_bytes).unwrap_or_else(|| "-".into()),
                p.topology_bytes
                    .map(fmt_bytes)
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect()
}

/// The text of `latency-sweep` records: re-measured sizes and the plateaus found.
pub fn sweep_text(records: &[Record]) -> Option<String> {
    let mut s = String::new();
    for r in of(records, "latency-sweep") {
        let d = r.data_as::<SweepData>().ok();
        for p in d
            .iter()
            .flat_map(|d| &d.points)
            .filter(|p| p.remeasured.is_some())
        {
            let _ = writeln!(s, "{}: {}", fmt_bytes(p.size_bytes), p.note());
        }
        let ps: Vec<Plateau> = d.map(|d| d.plateaus).unwrap_or_default();
        let _ = writeln!(s, "Plateaus ({}):", r.name);
        if ps.is_empty() {
            let tol = r.parameters["plateau_tolerance"]
                .as_f64()
                .unwrap_or(PLATEAU_TOL);
            let _ = writeln!(
                s,
                "  none found: no two neighbouring sizes agreed within ±{:.0}%",
                tol * 100.0
            );
        } else {
            s.push_str(&table(
                &[
                    "level",
                    "median of minima ns",
                    "sizes",
                    "exceeded at",
                    "topology says",
                ],
                &plateau_rows(&ps),
            ));
            s.push('\n');
        }
    }
    if s.is_empty() {
        return None;
    }
    s.push_str(&warning_lines(records));
    Some(s)
}
