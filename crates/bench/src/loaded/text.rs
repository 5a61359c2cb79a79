//! Loaded-latency records as terminal text: the plan, or per mix the latency-versus-
//! bandwidth curve from the unloaded point to the smallest delay, each curve's knee
//! and saturation.

use super::curve::{curves, Family};
use super::data::LoadedPlanData;
use numalab_results::output::table;
use numalab_results::present::{of, warning_lines};
use numalab_results::settle::UNSETTLED;
use numalab_results::words;
use numalab_results::Record;
use numalab_topo::fmt_bytes;
use std::fmt::Write;

fn bytes(r: &Record, key: &str) -> String {
    fmt_bytes(r.parameters[key].as_u64().unwrap_or(0))
}

/// The dry run's plan: the chase, the injectors, the memory and the delays.
pub(super) fn plan_text(r: &Record) -> Option<String> {
    let d = r.data_as::<LoadedPlanData>().ok()?;
    let (p, placed) = (&r.parameters, r.placement.as_ref()?);
    let injectors = placed["resolved"]["injectors"]
        .as_array()
        .map_or(0, |v| v.len());
    let nodes: Vec<u32> =
        serde_json::from_value(placed["resolved"]["memory"]["nodes"].clone()).ok()?;
    let traffic = match &d.write_pcts {
        Some(w) => format!("mixed ({} % writes)", list(w)),
        None => p["traffic"].as_str().unwrap_or("?").to_string(),
    };
    let mut s = format!(
        "loaded latency: chase on CPU {} over {}, {injectors} {traffic} {} on CPUs {} with {} each, memory {}; an unloaded point, then delays {}{}\n",
        p["requestor_cpu"],
        bytes(r, "chase_bytes"),
        words::noun(injectors as u64, "injector"),
        p["injector_cpus"].as_str().unwrap_or(""),
        bytes(r, "inject_bytes"),
        numalab_topo::cpulist::format(&nodes),
        list(&d.delays),
        if d.write_pcts.is_some() { " for each mix" } else { "" }
    );
    s.push_str(&warning_lines(std::slice::from_ref(r)));
    Some(s)
}

fn list<T: ToString>(v: &[T]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn f(v: Option<f64>, p: usize) -> String {
    v.filter(|x| x.is_finite())
        .map(|x| format!("{x:.p$}"))
        .unwrap_or("-".into())
}

/// A figure as a cell: "FIGURE unsettled*" when its point did not settle (the star
/// points to the record's warning, printed under the tables).
fn cell(settled: bool, figure: String) -> String {
    if settled {
        figure
    } else {
        format!("{figure} {UNSETTLED}*")
    }
}

/// The line naming a family's unsettled points (None when every point settled): they
/// are drawn apart, and neither knee nor saturation is read from them.
pub(super) fn unsettled_note(fam: &Family) -> Option<String> {
    let mut names: Vec<String> = fam
        .curves
        .iter()
        .flat_map(|c| c.points.iter().filter(|p| !p.settled).map(move |p| (c, p)))
        .map(|(c, p)| format!("{}% writes at delay {}", c.write_pct, p.delay))
        .collect();
    if !fam.idle_settled {
        names.insert(0, "the unloaded point".into());
    }
    (!names.is_empty()).then(|| {
        format!(
            "{UNSETTLED} (machine busy): {}; knee and saturation are read from settled points only",
            names.join(", ")
        )
    })
}

/// Every point of a family: mix, delay, bandwidths, read share, latency spread.
fn points_table(fam: &Family) -> String {
    let rows: Vec<Vec<String>> = fam
        .curves
        .iter()
        .flat_map(|c| c.points.iter().map(move |p| (c, p)))
        .map(|(c, p)| {
            vec![
                format!("{}% ({})", c.write_pct, c.mix.label()),
                p.delay.to_string(),
                f(Some(p.gbps), 2),
                f(Some(p.issued_gbps), 2),
                f(Some(p.read_share), 3),
                cell(p.settled, f(Some(p.latency[0]), 1)),
                f(Some(p.latency[3]), 1),
                f(Some(p.latency[4]), 1),
            ]
        })
        .collect();
    table(
        &[
            "writes",
            "delay",
            "traffic GB/s",
            "issued GB/s",
            "read share",
            "latency ns",
            "min",
            "p95",
        ],
        &rows,
    )
}

/// Per curve: the saturation bandwidth, the knee, and the latency at 50 % and 90 % of saturation.
fn curves_table(fam: &Family) -> String {
    let rows = fam.saturation_rows(f);
    table(
        &[
            "writes",
            "max GB/s",
            "knee GB/s (2× idle)",
            "ns at 50% of max",
            "ns at 90% of max",
        ],
        &rows,
    )
}

/// The curves: per point, bandwidth and the chase's latency; per curve, knee and saturation.
pub(super) fn curve_text(records: &[Record]) -> Option<String> {
    let recs: Vec<&Record> = of(records, "loaded-latency").collect();
    let first = recs.first()?;
    let injectors = recs
        .iter()
        .filter_map(|r| r.parameters["injectors"].as_u64())
        .max();
    let mut s = String::new();
    for fam in curves(records) {
        let _ = writeln!(
            s,
            "Loaded latency: chase on CPU {} over {}, memory node {}; {}; median of at least {}, added until it settles; unloaded {}\n",
            first.parameters["requestor_cpu"],
            bytes(first, "chase_bytes"),
            if fam.node.is_empty() { "?" } else { &fam.node },
            words::count(injectors.unwrap_or(0), "injector"),
            words::count_as(
                first.parameters["iterations"].as_u64().unwrap_or(0),
                "pass",
                "passes"
            ),
            cell(fam.idle_settled, format!("{} ns", f(Some(fam.idle.0), 1))),
        );
        s.push_str(&points_table(&fam));
        s.push('\n');
        s.push_str(&curves_table(&fam));
        if let Some(n) = unsettled_note(&fam) {
            if !s.ends_with('\n') {
                s.push('\n');
            }
            let _ = writeln!(s, "{n}");
        }
        s.push('\n');
    }
    let _ = writeln!(s, "traffic GB/s estimates memory traffic, injectors and chase: 64 bytes per line read, 128 per line written (read-for-ownership plus writeback); issued GB/s counts 64 bytes per line the injectors touched; read share is of the lines they touched");
    s.push_str(&warning_lines(records));
    Some(s)
}
