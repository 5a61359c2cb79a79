//! The sweep's summary records: its curve, plateaus and the caches they match.

use super::text::PLATEAU_TOL;
use super::{LatencyPlan, Remeasured, SizeResult, SweepData, SweepPoint};
use crate::sweep::{capacity_warnings, plateaus};
use numalab_results::{Provenance, Record};
use numalab_topo::Host;
use serde_json::json;

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
