//! How the point-to-point records are shown: size against the median on log axes
//! per operation and rank pair (HTML), sizes down and operations across (text), and
//! the plan of a dry run.

use super::plan::{Plan, KIND_BANDWIDTH, KIND_BANDWIDTH_PLAN, KIND_LATENCY, KIND_LATENCY_PLAN};
use numalab_results::disturb;
use numalab_results::output::table;
use numalab_results::plot::{self, LineChart, Series};
use numalab_results::present::{of, warning_lines, Presenter};
use numalab_results::report::{figure, html_table, num};
use numalab_results::Record;
use std::collections::BTreeMap;
use std::fmt::Write;

/// `mpi latency` and `mpi bandwidth` records and their plans.
pub struct P2pPresenter;

/// The kinds of measured records, with their metric and unit.
const MEASURED: [(&str, &str, &str); 2] = [
    (KIND_LATENCY, "latency", "ns"),
    (KIND_BANDWIDTH, "bandwidth", "GB/s"),
];

impl Presenter for P2pPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &[
            KIND_LATENCY,
            KIND_BANDWIDTH,
            KIND_LATENCY_PLAN,
            KIND_BANDWIDTH_PLAN,
        ]
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("mpi", "MPI point to point"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let out: String = MEASURED
            .iter()
            .filter_map(|(kind, metric, unit)| sweep(records, kind, metric, unit))
            .collect();
        (!out.is_empty()).then_some(out)
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        let mut out = String::new();
        for r in records.iter().filter(|r| r.kind.ends_with("-plan")) {
            out.push_str(&r.data_as::<Plan>().ok()?.text());
        }
        for (kind, metric, unit) in MEASURED {
            let recs: Vec<Record> = of(records, kind).cloned().collect();
            if !recs.is_empty() {
                out.push_str(&sweep_text(&recs, metric, unit));
            }
        }
        (!out.is_empty()).then_some(out)
    }
}

/// One chart per kind: a line per operation and rank pair, size against the median.
fn sweep(records: &[Record], kind: &str, metric: &str, unit: &str) -> Option<String> {
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut rows = Vec::new();
    for r in of(records, kind) {
        let p = &r.parameters;
        let (Some(size), Some(v)) = (p["size"].as_f64(), r.median(metric)) else {
            continue;
        };
        let line = format!(
            "{} rank {}→{} ({})",
            p["op"].as_str().unwrap_or("?"),
            p["from_rank"],
            p["to_rank"],
            p["relation"].as_str().unwrap_or("?")
        );
        lines.entry(line.clone()).or_default().push((size, v));
        let p95 = r.stat(metric).map(|s| s.summary.p95);
        rows.push(vec![
            line,
            numalab_results::report::bytes(size as u64),
            num(Some(v), 3),
            num(p95, 3),
        ]);
    }
    if rows.is_empty() {
        return None;
    }
    let series: Vec<Series> = lines
        .into_iter()
        .map(|(name, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { name, points }
        })
        .collect();
    let chart = plot::loglog_chart(&LineChart {
        title: format!("MPI {metric} against message size (median)"),
        x_label: "message size".into(),
        y_label: unit.into(),
        log_x: true,
        x_bytes: true,
        series,
        markers: Vec::new(),
    });
    let head = [
        "operation and ranks".to_string(),
        "size".into(),
        format!("median {unit}"),
        format!("p95 {unit}"),
    ];
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    Some(format!("<h3>{metric}</h3>") + &figure(chart, html_table(&head, &rows)))
}

/// Where each latency sample times one iteration: the timer's step, which every
/// figure is a multiple of (half of it for ping-pong's RTT/2), and how to time more.
fn step_line(recs: &[Record], unit: &str) -> String {
    let single = recs.iter().any(|r| r.parameters["batch"] == 1);
    match recs.iter().find_map(|r| r.provenance.timer_step_ns) {
        Some(step) if unit == "ns" && single => format!(
            "each sample times one iteration and the timer reads in {step:.1} ns steps here, so these figures move in steps of {step:.1} ns (ping-pong, RTT/2: {:.1} ns); --batch N --data same times N iterations per sample\n",
            step / 2.0
        ),
        _ => String::new(),
    }
}

/// Sizes down, operations across: median and p95 of each.
fn sweep_text(recs: &[Record], metric: &str, unit: &str) -> String {
    let mut ops: Vec<&str> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    for r in recs {
        if let (Some(op), Some(sz)) = (r.parameters["op"].as_str(), r.parameters["size"].as_u64()) {
            if !ops.contains(&op) {
                ops.push(op);
            }
            if !sizes.contains(&sz) {
                sizes.push(sz);
            }
        }
    }
    sizes.sort_unstable();
    let mut header = vec!["size".to_string()];
    for op in &ops {
        header.push(format!("{op} median"));
        header.push(format!("{op} p95"));
    }
    let prec = if unit == "ns" { 1 } else { 3 };
    let rows: Vec<Vec<String>> = sizes
        .iter()
        .map(|&sz| {
            let mut row = vec![numalab_topo::fmt_bytes(sz)];
            for op in &ops {
                let s = recs
                    .iter()
                    .find(|r| r.parameters["op"] == *op && r.parameters["size"] == sz)
                    .and_then(|r| r.stat(metric))
                    .map(|s| &s.summary);
                match s {
                    Some(s) => {
                        row.push(format!("{:.prec$}", s.median));
                        row.push(format!("{:.prec$}", s.p95));
                    }
                    None => row.extend(["-".into(), "-".into()]),
                }
            }
            row
        })
        .collect();
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut s = String::new();
    if let Some(r) = recs.first() {
        let _ = writeln!(
            s,
            "{metric} ({unit}) from rank {} to rank {} ({}), per iteration",
            r.parameters["from_rank"],
            r.parameters["to_rank"],
            r.parameters["relation"].as_str().unwrap_or("?")
        );
    }
    s.push_str(&table(&h, &rows));
    s.push('\n');
    s.push_str(&step_line(recs, unit));
    for r in recs.iter().filter(|r| r.stat(metric).is_none()) {
        for u in &r.unavailable {
            let _ = writeln!(s, "not measured: {}: {}", u.feature, u.reason);
        }
    }
    let owned: Vec<Record> = recs.iter().map(|r| (*r).clone()).collect();
    s.push_str(&disturb::PassLog::line_of(&owned).unwrap_or_default());
    let (rest, folded) = disturb::fold_warnings(&owned, "steps");
    s.push_str(&folded);
    s.push_str(&warning_lines(&rest));
    s
}
