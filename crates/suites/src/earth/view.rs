//! Text and records of the earth suite.

use super::hide::{self as earth_hide, MaskCurve, MlpCurve, ThreadsRow};
use super::ops::{Cell, Missing};
use super::{Cpus, Part};
use numalab_probe::overlap::Work;
use numalab_results::output::table;
use numalab_results::stats::median;
use numalab_results::{Provenance, Record};
use numalab_topo::Machine;
use serde_json::json;
use std::fmt::Write;

/// What a run measured, part by part.
#[derive(Default)]
pub struct EarthResults {
    /// Operation cost table and what could not be measured.
    pub ops: Option<(Vec<Cell>, Vec<Missing>)>,
    /// Issuer versus helper, and the remote load's steps.
    pub split: Option<Vec<Cell>>,
    /// Switch costs.
    pub switch: Option<Vec<Cell>>,
    /// Masking curves.
    pub mask: Option<Vec<MaskCurve>>,
    /// MLP points and the page kind.
    pub mlp: Option<MlpCurve>,
    /// Threads table.
    pub threads: Option<Vec<ThreadsRow>>,
}

/// The first line.
pub fn head(m: &Machine, c: &Cpus, parts: &[Part], it: usize) -> String {
    format!(
        "earth suite (seed 001, with seed 002 §6 and seed 003 §4.1) on {}: worker CPU {} (node {}), helper CPU {} (node {}){}; parts {}; {} passes\n",
        m.summary(),
        c.worker.pu.os,
        c.worker.pu.node.map(|n| n.to_string()).unwrap_or("-".into()),
        c.helper.pu.os,
        c.helper.pu.node.map(|n| n.to_string()).unwrap_or("-".into()),
        c.remote_node.map(|n| format!(", remote node {n}")).unwrap_or_else(|| ", no remote node".into()),
        parts.iter().map(|p| p.name()).collect::<Vec<_>>().join(", "),
        it
    )
}

fn ns(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v >= 10_000.0 {
        format!("{:.1} µs", v / 1000.0)
    } else {
        format!("{v:.1}")
    }
}

fn cells_table(title: &str, cells: &[Cell]) -> String {
    let rows: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            vec![
                c.op.clone(),
                c.place.clone(),
                c.mode.clone(),
                ns(median(&c.ns).unwrap_or(f64::NAN)),
            ]
        })
        .collect();
    format!(
        "\n{title}\n{}\n",
        table(&["operation", "where", "mode", "ns (median)"], &rows)
    )
}

/// Masking records: baseline and every T, with the percentage masked.
pub(super) fn mask_records(
    curves: &[MaskCurve],
    n: usize,
    base: &serde_json::Value,
    prov: &Provenance,
) -> Vec<Record> {
    let mut out = Vec::new();
    for c in curves {
        let best = c.best();
        let helper = c.via.starts_with("helper");
        let tag = if helper { "mask" } else { "mask (memory)" };
        let mut p = base.clone();
        p["part"] = json!("mask");
        p["u_via"] = json!(c.via);
        p["multiplier"] = json!(c.multiplier);
        p["loop_n"] = json!(n);
        p["best_chunk"] = json!(best.map(|b| b.0));
        p["best_masked_pct"] = json!(best.map(|b| b.1));
        let mut r = Record::new(
            "suite-earth",
            &format!("{tag}: ×{} baseline", c.multiplier),
            prov.clone(),
            p.clone(),
        );
        r.add_samples("communication_time", "ns", &c.comm_ns);
        r.add_samples("computation_time", "ns", &c.comp_ns);
        // Where u's pages were proved to be (the memory variant).
        let placement = c
            .proof
            .as_ref()
            .map(|pr| json!({ "verified": { "memory": pr } }));
        r.placement = placement.clone();
        out.push(r);
        for ((t, v), (_, pct)) in c.points.iter().zip(c.masked_pct()) {
            let mut q = p.clone();
            q["chunk"] = json!(t);
            q["masked_pct"] = json!(pct);
            q["method"] = json!(if helper {
                "Loop 7 split into coroutines of T iterations; each posts a fetch of its part of u to the helper and yields until it arrives; masked = (baseline − run) / baseline communication"
            } else {
                "Loop 7 split into coroutines of T iterations; u homed on another node and flushed before each pass; each coroutine prefetches its lines of u and yields, then copies and computes; masked = (baseline − run) / baseline communication"
            });
            let mut r = Record::new(
                "suite-earth",
                &format!("{tag}: ×{} T={t}", c.multiplier),
                prov.clone(),
                q,
            );
            r.add_samples("time", "ns", v);
            r.set_data(&super::EarthData::Checked { data_checked: true });
            r.placement = placement.clone();
            out.push(r);
        }
    }
    out
}

/// MLP records: ns per access for each G and mode, with the fraction hidden.
pub(super) fn mlp_records(
    curve: &MlpCurve,
    bytes: u64,
    base: &serde_json::Value,
    prov: &Provenance,
) -> Vec<Record> {
    let (pts, pages) = (&curve.points, &curve.pages);
    // Parameters every MLP record shares.
    let params = |bytes: u64, pages: &str| {
        let mut q = base.clone();
        q["part"] = json!("mlp");
        q["bytes"] = json!(bytes);
        q["pages"] = json!(pages);
        q
    };
    let one = pts
        .iter()
        .find(|p| p.g == 1)
        .map(|p| median(&p.interleaved).unwrap_or(f64::NAN));
    let mut out = Vec::new();
    for p in pts {
        for (mode, v) in [
            ("interleaved", &p.interleaved),
            ("coroutines", &p.coroutines),
        ] {
            let mut q = params(bytes, pages);
            q["g"] = json!(p.g);
            q["mode"] = json!(mode);
            q["hidden_fraction"] = json!(one.map(|o| 1.0 - median(v).unwrap_or(f64::NAN) / o));
            let mut r = Record::new(
                "suite-earth",
                &format!("mlp: G={} {mode}", p.g),
                prov.clone(),
                q,
            );
            r.add_samples("access_time", "ns", v);
            out.push(r);
        }
    }
    if let Some(m) = earth_hide::mlp_summary(pts) {
        let q = params(bytes, pages);
        let mut r = Record::new("suite-earth", "mlp: summary", prov.clone(), q);
        // Derived from the medians above, not new samples: data, not stats.
        let best = |(g, ns_per_access): (usize, f64)| super::BestG { g, ns_per_access };
        r.set_data(&super::EarthData::MlpSummary {
            best_interleaved: best(m.best_interleaved),
            best_coroutines: best(m.best_coroutines),
            coroutine_over_interleaved_throughput: m.ratio,
            interleaved_saturates_at_g: m.saturates_at,
            accesses_in_flight: m.in_flight,
        });
        out.push(r);
    }
    let (g, floor) = &curve.floor;
    let mut q = params(earth_hide::floor_bytes(*g), "4 KiB pages");
    q["g"] = json!(g);
    q["mode"] = json!("coroutines");
    let mut r = Record::new(
        "suite-earth",
        &format!("mlp: G={g} coroutines, chains in L1"),
        prov.clone(),
        q,
    );
    r.add_samples("access_time", "ns", floor);
    out.push(r);
    out
}

/// Threads-table records.
pub(super) fn threads_records(
    rows: &[ThreadsRow],
    ratio: usize,
    iters: u64,
    base: &serde_json::Value,
    prov: &Provenance,
) -> Vec<Record> {
    let mut out = Vec::new();
    for row in rows {
        for (w, v) in &row.times {
            let mut q = base.clone();
            q["part"] = json!("threads");
            q["threads"] = json!(row.k);
            q["work"] = json!(w.name());
            q["ratio"] = json!(format!("1:{ratio}"));
            q["compute_iterations"] = json!(iters);
            q["method"] = json!("k threads created on the worker's CPU share the work; time from creation to the last join");
            let mut r = Record::new(
                "suite-earth",
                &format!("threads: {} × {}", row.k, w.name()),
                prov.clone(),
                q,
            );
            r.add_samples("time", "ns", v);
            r.add_samples("create_join_time", "ns", &row.empty);
            out.push(r);
        }
    }
    out
}

/// Everything as text.
pub fn text(r: &EarthResults) -> String {
    let mut s = String::new();
    if let Some((cells, missing)) = &r.ops {
        s.push_str(&cells_table(
            "operation costs (seed Table 1): ns per operation",
            cells,
        ));
        for (w, why) in missing {
            let _ = writeln!(s, "not measured: {w}: {why}");
        }
    }
    if let Some(cells) = &r.split {
        s.push_str(&cells_table("split-phase requests (seed Tables 2 and 4): issuer against helper, and one remote load step by step", cells));
    }
    if let Some(cells) = &r.switch {
        s.push_str(&cells_table(
            "switch and creation costs (KSR Table 4)",
            cells,
        ));
    }
    if let Some(curves) = &r.mask {
        let _ = writeln!(s, "\nlatency masking with Livermore Loop 7 (seed Fig. 3): % of the baseline's communication hidden, by chunk size T (or how many times the baseline's whole time the masked loop took)");
        let ts: Vec<usize> = curves
            .first()
            .map(|c| c.points.iter().map(|p| p.0).collect())
            .unwrap_or_default();
        let mut header = vec![
            "u via".to_string(),
            "×comm".into(),
            "comm ns".into(),
            "compute ns".into(),
        ];
        header.extend(ts.iter().map(|t| format!("T={t}")));
        header.push("best T".into());
        let rows: Vec<Vec<String>> = curves
            .iter()
            .map(|c| {
                let mut row = vec![
                    c.via.clone(),
                    c.multiplier.to_string(),
                    ns(median(&c.comm_ns).unwrap_or(f64::NAN)),
                    ns(median(&c.comp_ns).unwrap_or(f64::NAN)),
                ];
                row.extend(c.masked_text());
                row.push(
                    c.best()
                        .map(|b| format!("{} ({:.0}%)", b.0, b.1))
                        .unwrap_or("-".into()),
                );
                row
            })
            .collect();
        let h: Vec<&str> = header.iter().map(|x| x.as_str()).collect();
        s.push_str(&table(&h, &rows));
        s.push('\n');
    }
    s.push_str(&hiding_text(r));
    s
}

/// The MLP and threads parts as text.
fn hiding_text(r: &EarthResults) -> String {
    let mut s = String::new();
    if let Some(curve) = &r.mlp {
        s.push_str(&mlp_text(curve));
    }
    if let Some(rows) = &r.threads {
        s.push_str(&threads_text(rows));
    }
    s
}

/// The MLP curve: per G, interleaved chains beside coroutines, then its summary.
fn mlp_text(curve: &MlpCurve) -> String {
    let mut s = String::new();
    let (pts, pages) = (&curve.points, &curve.pages);
    let one = pts
        .iter()
        .find(|p| p.g == 1)
        .map(|p| median(&p.interleaved).unwrap_or(f64::NAN));
    let _ = writeln!(s, "\nmemory-level parallelism: G random chains on one core ({pages}); ns per access, median; hidden = 1 − ns/ns(G=1)");
    let rows: Vec<Vec<String>> = pts
        .iter()
        .map(|p| {
            let (i, c) = (
                median(&p.interleaved).unwrap_or(f64::NAN),
                median(&p.coroutines).unwrap_or(f64::NAN),
            );
            let hid = |v: f64| {
                one.map(|o| format!("{:.0}%", 100.0 * (1.0 - v / o)))
                    .unwrap_or("-".into())
            };
            vec![
                p.g.to_string(),
                ns(i),
                hid(i),
                ns(c),
                hid(c),
                format!("{:.2}", i / c),
            ]
        })
        .collect();
    s.push_str(&table(
        &[
            "G",
            "interleaved",
            "hidden",
            "coroutines",
            "hidden",
            "coroutine/interleaved throughput",
        ],
        &rows,
    ));
    s.push('\n');
    s.push_str(&mlp_summary_text(curve));
    s
}

/// Where the MLP curve is fastest and where it flattens.
fn mlp_summary_text(curve: &MlpCurve) -> String {
    let mut s = String::new();
    let pts = &curve.points;
    if let Some(m) = earth_hide::mlp_summary(pts) {
        let flight = m
            .in_flight
            .map(|f| format!(", about {f:.0} accesses in flight"))
            .unwrap_or_default();
        let top = pts.iter().map(|p| p.g).max().unwrap_or(0);
        let knee = if m.saturates_at < top {
            format!(
                "within 10% of that from G={} (the core's miss handling is full)",
                m.saturates_at
            )
        } else {
            format!("no plateau up to G={top}: the miss-handling limit lies beyond")
        };
        let _ = writeln!(
            s,
            "fastest interleaved at G={}: {} per access{flight}; {knee}",
            m.best_interleaved.0,
            fmt_ns(m.best_interleaved.1),
        );
        let _ = writeln!(
            s,
            "fastest coroutines at G={}: {} per access, {:.2} × the best interleaved throughput; switching alone costs {} per access (G={}, chains in L1)",
            m.best_coroutines.0,
            fmt_ns(m.best_coroutines.1),
            m.ratio,
            fmt_ns(median(&curve.floor.1).unwrap_or(f64::NAN)),
            curve.floor.0
        );
    }
    s
}

/// KSR Table 5: threads on one CPU sharing work.
fn threads_text(rows: &[ThreadsRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\nthreads on one CPU sharing work (KSR Table 5): µs, median, creating and joining the threads (no work) subtracted; overlap = (computation + communication − both) / the smaller");
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let e = median(&row.empty).unwrap_or(f64::NAN);
            let get = |w: Work| {
                row.times
                    .iter()
                    .find(|t| t.0 == w)
                    .map(|t| median(&t.1).unwrap_or(f64::NAN) - e)
                    .unwrap_or(f64::NAN)
            };
            let (c, m, b) = (get(Work::Compute), get(Work::Communicate), get(Work::Both));
            vec![
                row.k.to_string(),
                format!("{:.1}", e / 1000.0),
                format!("{:.1}", c / 1000.0),
                format!("{:.1}", m / 1000.0),
                format!("{:.1}", b / 1000.0),
                format!("{:.0}%", 100.0 * (c + m - b) / c.min(m)),
            ]
        })
        .collect();
    s.push_str(&table(
        &[
            "threads",
            "create+join",
            "computation",
            "communication",
            "both",
            "overlap",
        ],
        &body,
    ));
    s.push('\n');
    s
}

fn fmt_ns(v: f64) -> String {
    format!("{v:.1} ns")
}
