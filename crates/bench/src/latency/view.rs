//! Tables for `numalab latency` and the sweep's summary records.

use super::{LatencyData, LatencyPlan, Remeasured, SizeResult, SweepData, SweepPoint};
use crate::sweep::{capacity_warnings, plateaus, Plateau};
use numalab_probe::Timer;
use numalab_results::output::table;
use numalab_results::{Provenance, Record};
use numalab_topo::{fmt_bytes, Host};
use serde_json::json;
use std::fmt::Write;

/// Relative tolerance of a plateau: points within ±12% of the run's median.
const PLATEAU_TOL: f64 = 0.12;

fn f(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn stat<'a>(r: &'a Record, metric: &str) -> Option<&'a numalab_results::Stat> {
    r.stat(metric)
}

/// One summary record per requestor: the curve, its plateaus and the caches they match.
/// `first` holds the first runs of sizes measured twice (outliers), by index; `results`
/// hold the runs kept.
pub fn sweep_records(
    prov: &Provenance,
    host: &Host,
    plan: &LatencyPlan,
    results: &[SizeResult],
    first: &[(usize, SizeResult)],
) -> Vec<Record> {
    let caches = &host.machine.caches;
    plan.requestors
        .iter()
        .enumerate()
        .map(|(i, t)| {
            // Minimum per size: interruptions on a shared machine only ever add time,
            // so the minimum shows the hierarchy most clearly (snbench reports minima too).
            let points: Vec<(u64, f64, f64)> = results
                .iter()
                .map(|r| {
                    let mut v = r.requestors[i].ns.clone();
                    v.sort_by(|a, b| a.total_cmp(b));
                    (r.shape.size, v[0], v[v.len() / 2])
                })
                .collect();
            let mins: Vec<(u64, f64)> = points.iter().map(|p| (p.0, p.1)).collect();
            let ps = plateaus(&mins, caches, PLATEAU_TOL);
            let mut rec = Record::new(
                "latency-sweep",
                &format!(
                    "{} {} sweep cpu{}",
                    plan.request.name(),
                    plan.state.name(),
                    t.pu.os
                ),
                prov.clone(),
                json!({
                    "state": plan.state.name(), "kernel": plan.request.name(),
                    "stride_bytes": plan.layout.stride, "window_pages": plan.layout.window_pages,
                    "page_size": plan.mem.page_size.name(), "seed": plan.layout.seed,
                    "requestor_cpu": t.pu.os, "plateau_tolerance": PLATEAU_TOL,
                    "sizes": points.iter().map(|p| p.0).collect::<Vec<_>>(),
                }),
            );
            for p in &ps {
                rec.add_samples(&format!("plateau {}", p.level), "ns", &p.values_ns);
            }
            rec.warnings = capacity_warnings(&ps, caches);
            if ps.is_empty() {
                rec.unavailable.push(numalab_results::Unavailable {
                    feature: "plateaus".into(),
                    reason: "no two neighbouring sizes agreed within the tolerance".into(),
                });
            }
            rec.set_data(&SweepData {
                points: points
                    .iter()
                    .enumerate()
                    .map(|(j, &(size_bytes, min_ns, median_ns))| SweepPoint {
                        size_bytes,
                        min_ns,
                        median_ns,
                        remeasured: first.iter().find(|(k, _)| *k == j).and_then(|(_, f)| {
                            let v = &f.requestors.get(i)?.ns;
                            Some(Remeasured {
                                first_min_ns: v.iter().copied().fold(f64::INFINITY, f64::min),
                                first_median_ns: crate::sweep::Spread::of(v)?.median_ns,
                                persisted: super::outliers::persisted(results, i, j),
                            })
                        }),
                    })
                    .collect(),
                plateaus: ps,
                topology_caches: caches.clone(),
            });
            rec
        })
        .collect()
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

/// The readable result.
pub fn render(plan: &LatencyPlan, timer: &Timer, records: &[Record]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Latency: kernel {}, state {}, stride {} B, window {} pages, {} pages, {} passes; timer {:?} at {:.3} GHz (resolution {:.1} ns)\n",
        plan.request.name(),
        plan.state.name(),
        plan.layout.stride,
        plan.layout.window_pages,
        plan.mem.page_size.name(),
        plan.iterations,
        timer.kind,
        timer.hz / 1e9,
        timer.resolution_ns
    );
    let restart = plan.restart.is_some();
    let mut header = vec![
        "size",
        "cpu",
        "node",
        "median ns",
        "min",
        "p95",
        "stdev",
        "TSC cycles",
    ];
    if restart {
        header.push("restart ns");
    }
    let own = plan.state.helpers() > 0;
    if own {
        header.push("own-cache ns");
    }
    let rows: Vec<Vec<String>> = records
        .iter()
        .filter(|r| r.kind == "latency")
        .map(|r| {
            let p = &r.parameters;
            let l = stat(r, "latency");
            let mut row = vec![
                fmt_bytes(p["size_bytes"].as_u64().unwrap_or(0)),
                p["requestor_cpu"].to_string(),
                numalab_topo::cpulist::format(&plan.mem.nodes),
                l.map(|x| f(x.summary.median))
                    .unwrap_or_else(|| "unavailable".into()),
                l.map(|x| f(x.summary.min)).unwrap_or_default(),
                l.map(|x| f(x.summary.p95)).unwrap_or_default(),
                l.map(|x| f(x.summary.stdev)).unwrap_or_default(),
                stat(r, "latency_tsc")
                    .map(|x| f(x.summary.median))
                    .unwrap_or_else(|| "-".into()),
            ];
            if restart {
                row.push(
                    stat(r, "restart")
                        .map(|x| f(x.summary.min))
                        .unwrap_or_else(|| "-".into()),
                );
            }
            if own {
                row.push(
                    stat(r, "own_cache_reference")
                        .map(|x| f(x.summary.median))
                        .unwrap_or_else(|| "-".into()),
                );
            }
            row
        })
        .collect();
    s.push_str(&table(&header, &rows));
    s.push('\n');
    for r in records.iter().filter(|r| r.kind == "latency-sweep") {
        let d = r.data_as::<SweepData>().ok();
        for p in d
            .iter()
            .flat_map(|d| &d.points)
            .filter(|p| p.remeasured.is_some())
        {
            let _ = writeln!(s, "{}: {}", fmt_bytes(p.size_bytes), p.note());
        }
        let ps: Vec<Plateau> = d.map(|d| d.plateaus).unwrap_or_default();
        let _ = writeln!(s, "\nPlateaus ({}):", r.name);
        if ps.is_empty() {
            let _ = writeln!(
                s,
                "  none found: no two neighbouring sizes agreed within ±{:.0}%",
                PLATEAU_TOL * 100.0
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
    if let Some(r) = records.iter().find(|r| r.kind == "latency") {
        if let Some(o) = r.data_as::<LatencyData>().ok().and_then(|d| d.restart) {
            let _ = writeln!(
                s,
                "\nRestart search (cpu {}): stable window k = {}..={} ({}), {} steps measured",
                r.parameters["requestor_cpu"],
                o.stable_from,
                o.stable_to,
                if o.converged {
                    "converged"
                } else {
                    "k ran out"
                },
                o.curve.len()
            );
        }
        let mut seen = std::collections::BTreeSet::new();
        for w in records.iter().flat_map(|r| &r.warnings) {
            if seen.insert(w) {
                let _ = writeln!(s, "warning: {w}");
            }
        }
    }
    s
}

/// The plan, for --dry-run.
pub fn render_plan(plan: &LatencyPlan, sizes: &[u64], recs: &[Record]) -> String {
    let mut s = String::new();
    let cpus = |v: &[numalab_topo::ThreadPlacement]| {
        numalab_topo::cpulist::format(&v.iter().map(|t| t.pu.os).collect::<Vec<_>>())
    };
    let _ = writeln!(
        s,
        "Plan: kernel {} on state {} ({})",
        plan.request.name(),
        plan.state.name(),
        plan.state.how()
    );
    let _ = writeln!(s, "  requestors: CPU {}", cpus(&plan.requestors));
    if !plan.helpers.is_empty() {
        let _ = writeln!(s, "  helpers:    CPU {}", cpus(&plan.helpers));
    }
    let _ = writeln!(
        s,
        "  memory:     node {} ({}), hops from requestors {:?}",
        numalab_topo::cpulist::format(&plan.mem.nodes),
        plan.mem.page_size.name(),
        plan.mem.hops_from_threads
    );
    let _ = writeln!(
        s,
        "  layout:     {:?}, stride {} B, window {} pages, seed {}; {} passes each\n",
        plan.layout.order,
        plan.layout.stride,
        plan.layout.window_pages,
        plan.layout.seed,
        plan.iterations
    );
    let rows: Vec<Vec<String>> = sizes
        .iter()
        .zip(recs)
        .map(|(sz, r)| {
            vec![
                fmt_bytes(*sz),
                r.parameters["elements"].to_string(),
                r.parameters["visited_per_pass"].to_string(),
                r.parameters["loads_per_pass"].to_string(),
            ]
        })
        .collect();
    s.push_str(&table(
        &["size", "elements", "visited/pass", "loads/pass"],
        &rows,
    ));
    s.push('\n');
    let mut seen = std::collections::BTreeSet::new();
    for w in recs.iter().flat_map(|r| &r.warnings) {
        if seen.insert(w) {
            let _ = writeln!(s, "warning: {w}");
        }
    }
    s
}
