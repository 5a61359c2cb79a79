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
            numalab_results::settle::cell(r, num(Some(v), 3)),
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

/// The operations of `recs` in the order first met, and every size, ascending.
fn ops_and_sizes(recs: &[Record]) -> (Vec<String>, Vec<u64>) {
    let mut ops: Vec<String> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    for r in recs {
        if let (Some(op), Some(sz)) = (r.parameters["op"].as_str(), r.parameters["size"].as_u64()) {
            if !ops.iter().any(|o| o == op) {
                ops.push(op.to_string());
            }
            if !sizes.contains(&sz) {
                sizes.push(sz);
            }
        }
    }
    sizes.sort_unstable();
    (ops, sizes)
}

/// The record of `op` at `size`.
fn find<'a>(recs: &'a [Record], op: &str, size: u64) -> Option<&'a Record> {
    recs.iter()
        .find(|r| r.parameters["op"] == op && r.parameters["size"] == size)
}

/// Who times whom, as the tables' titles say it.
fn pair(r: &Record) -> String {
    format!(
        "rank {} to rank {} ({})",
        r.parameters["from_rank"],
        r.parameters["to_rank"],
        r.parameters["relation"].as_str().unwrap_or("?")
    )
}

/// One table per operation, sizes down: the median (marked `*` within a few timer
/// steps), p5 and p95.
fn sweep_text(recs: &[Record], metric: &str, unit: &str) -> String {
    let (ops, sizes) = ops_and_sizes(recs);
    let prec = if unit == "ns" { 1 } else { 3 };
    let step = recs.iter().find_map(|r| r.provenance.timer_step_ns);
    let mut marked = false;
    let mut s = String::new();
    for op in &ops {
        let rows: Vec<Vec<String>> = sizes
            .iter()
            .filter_map(|&sz| {
                let r = find(recs, op, sz)?;
                let mut row = vec![numalab_topo::fmt_bytes(sz)];
                match r.stat(metric).map(|s| &s.summary) {
                    Some(x) => {
                        let star = unit == "ns" && x.at_timer_step(step);
                        marked |= star;
                        let median = format!("{:.prec$}{}", x.median, if star { " *" } else { "" });
                        row.push(numalab_results::settle::cell(r, median));
                        row.push(format!("{:.prec$}", x.p5));
                        row.push(format!("{:.prec$}", x.p95));
                    }
                    None => row.extend(["-".into(), "-".into(), "-".into()]),
                }
                Some(row)
            })
            .collect();
        let Some(first) = recs.iter().find(|r| r.parameters["op"] == op.as_str()) else {
            continue;
        };
        let _ = writeln!(
            s,
            "{op}: {metric} ({unit}) from {}, per iteration",
            pair(first)
        );
        let head = [
            "size".to_string(),
            "median".into(),
            "p5".into(),
            "p95".into(),
        ];
        let h: Vec<&str> = head.iter().map(String::as_str).collect();
        s.push_str(&table(&h, &rows));
        s.push_str("\n\n");
    }
    if let (true, Some(st)) = (marked, step) {
        let _ = writeln!(s, "{}", numalab_results::stats::timer_step_note(st));
    }
    s.push_str(&step_line(recs, unit));
    for r in recs.iter().filter(|r| r.stat(metric).is_none()) {
        for u in &r.unavailable {
            let _ = writeln!(s, "not measured: {}: {}", u.feature, u.reason);
        }
    }
    let owned: Vec<Record> = recs.to_vec();
    s.push_str(&disturb::PassLog::line_of(&owned).unwrap_or_default());
    let (rest, folded) = disturb::fold_warnings(&owned, "steps");
    s.push_str(&folded);
    s.push_str(&warning_lines(&rest));
    s
}

/// OSU's layout (`--osu`): per operation a block as osu_latency prints it ("# Size",
/// "Latency (us)", the median) or osu_bw ("Bandwidth (MB/s)", 10^6 bytes a second).
pub fn osu_text(records: &[Record]) -> String {
    let mut s = String::new();
    for (kind, metric, _) in MEASURED {
        let recs: Vec<Record> = of(records, kind).cloned().collect();
        let (ops, sizes) = ops_and_sizes(&recs);
        for op in &ops {
            let Some(first) = recs.iter().find(|r| r.parameters["op"] == op.as_str()) else {
                continue;
            };
            let (head, scale) = match metric {
                "latency" => ("Latency (us)", 1e-3),
                _ => ("Bandwidth (MB/s)", 1e3),
            };
            let _ = writeln!(s, "# numalab mpi {metric}: {op}, {}", pair(first));
            let _ = writeln!(s, "# Size{head:>24}");
            let mut unsettled = Vec::new();
            for &sz in &sizes {
                let Some(r) = find(&recs, op, sz) else {
                    continue;
                };
                if let Some(v) = r.median(metric) {
                    let _ = writeln!(s, "{sz:<10}{:>20.2}", v * scale);
                    if !r.settled() {
                        unsettled.push(sz.to_string());
                    }
                }
            }
            if !unsettled.is_empty() {
                // A comment, so OSU's two columns stay as tools read them.
                let _ = writeln!(
                    s,
                    "# unsettled (not within --tolerance in its --noise-budget; the record's warning says why): sizes {}",
                    unsettled.join(", ")
                );
            }
            s.push('\n');
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::stats::Summary;
    use numalab_results::{Provenance, Stat};

    fn rec(kind: &str, metric: &str, op: &str, size: u64, samples: &[f64]) -> Record {
        let params = serde_json::json!({
            "op": op, "size": size, "from_rank": 0, "to_rank": 1,
            "relation": "same L3", "batch": 1,
        });
        let mut r = Record::new(
            kind,
            "mpi",
            Provenance::collect("test", "synthetic"),
            params,
        );
        r.stats.push(Stat {
            metric: metric.into(),
            unit: if metric == "latency" { "ns" } else { "GB/s" }.into(),
            summary: Summary::of(samples).unwrap(),
        });
        r.provenance.timer_step_ns = Some(20.0);
        r
    }

    fn latencies() -> Vec<Record> {
        let mut v = Vec::new();
        for op in ["pingpong", "get", "put"] {
            for size in [1u64, 8, 4096] {
                v.push(rec(
                    KIND_LATENCY,
                    "latency",
                    op,
                    size,
                    &[60.0, 60.0, 80.0, 80.0],
                ));
            }
        }
        v
    }

    #[test]
    fn latency_text_is_one_table_per_operation_with_the_timer_step_marked() {
        let t = P2pPresenter.text(&latencies()).unwrap();
        for op in ["pingpong", "get", "put"] {
            assert_eq!(t.matches(&format!("{op}: latency (ns)")).count(), 1, "{t}");
        }
        // No wide table: every line is a few columns.
        assert!(
            t.lines()
                .filter(|l| l.starts_with(' '))
                .all(|l| l.chars().count() < 100),
            "{t}"
        );
        // 60-80 ns with 20 ns steps: every median is marked, the note said once.
        assert_eq!(t.matches("70.0 *").count(), 9, "{t}");
        assert_eq!(t.matches("*: within").count(), 1, "{t}");
    }

    #[test]
    fn osu_layout_has_osu_columns_per_operation() {
        let t = osu_text(&latencies());
        assert_eq!(
            t.matches("# Size            Latency (us)").count(),
            3,
            "{t}"
        );
        assert!(
            t.contains("# numalab mpi latency: get, rank 0 to rank 1"),
            "{t}"
        );
        // 70 ns is 0.07 us; sizes as OSU prints them, in bytes.
        assert!(
            t.lines()
                .any(|l| l.starts_with("4096") && l.ends_with("0.07")),
            "{t}"
        );
        let bw = vec![rec(
            KIND_BANDWIDTH,
            "bandwidth",
            "stream",
            1024,
            &[1.5, 1.5, 1.5],
        )];
        let t = osu_text(&bw);
        assert!(t.contains("# Size        Bandwidth (MB/s)"), "{t}");
        assert!(
            t.lines()
                .any(|l| l.starts_with("1024") && l.ends_with("1500.00")),
            "{t}"
        );
    }
}
