//! Records of the earth suite's masking, MLP and threads parts.

use super::hide::{self as earth_hide, MaskCurve, MlpCurve, ThreadsRow};
use numalab_results::stats::median;
use numalab_results::{Provenance, Record};
use serde_json::json;

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
        if let Some(noise) = c.base_sizing.clone() {
            r.set_data(&super::EarthData::Sized { noise });
        }
        out.push(r);
        for (i, ((t, v), (_, pct))) in c.points.iter().zip(c.masked_pct()).enumerate() {
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
            r.set_data(&super::EarthData::Checked {
                data_checked: true,
                noise: c.sizing.get(i).cloned(),
            });
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
            ("stackless", &p.stackless),
        ] {
            if v.is_empty() {
                continue;
            }
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
            best_stackless: m.best_stackless.map(best),
            stackless_over_interleaved_throughput: m.stackless_ratio,
            interleaved_saturates_at_g: m.saturates_at,
            accesses_in_flight: m.in_flight,
        });
        out.push(r);
    }
    let (g, floor) = &curve.floor;
    let mut q = params(earth_hide::floor_bytes(*g), "4 KiB pages");
    q["g"] = json!(g);
    q["mode"] = json!("coroutines");
    q["chains_in_l1"] = json!(true);
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
            r.set_data(&super::EarthData::Sized {
                noise: row.sizing.clone(),
            });
            out.push(r);
        }
    }
    out
}
