//! Sweep points on a steep part of their curve. A latency sweep's point within one
//! step of a cache boundary (256 KiB beside a 256 KiB L2, say) sits where the curve
//! climbs from one level to the next, and that climb moves sideways between runs: the
//! cache's effective size depends on what shares it (on a VM, the sibling vCPU and
//! other tenants) and on which physical pages the buffer got (the pages' colours
//! decide how many fit in the cache's sets). A sideways shift of up to one step moves
//! such a point by as much as its neighbouring sizes differ — 6.6 ns in one run and
//! 4.2 ns in the next, with neither run wrong about the machine.
//!
//! The rule: a point is steep when its two neighbouring sizes (one sweep step either
//! side) differ by more than [`STEEP`]. Sliding the curve by up to one step puts a
//! steep point anywhere between its neighbours, so a change of it is "beyond" only if
//! B's figure lies outside the span of A's neighbours or A's outside B's, each
//! widened by the least effect: further than sliding the curve a whole step could
//! take it. On a flat part of the curve nothing changes; a level that really got
//! slower moves its flat points too, and they are still judged as before. The span is
//! the neighbours', not the point's own step, so a point that alone jumped in B (its
//! neighbours staying put) is not excused by its own jump.

use super::{Row, MIN_EFFECT};
use crate::record::Record;
use std::collections::BTreeMap;

/// Parameters that change with the size alone (the rest name the sweep).
const SIZE_KEYS: &[&str] = &[
    "size_bytes",
    "elements",
    "visited_per_pass",
    "loads_per_pass",
];

/// How far apart a point's two neighbouring sizes must be for the point to count as
/// steep: twice the least effect (1.1² ≈ 1.21, rounded up), so that noise of the two
/// neighbours alone (each within the least effect) never makes a flat point steep.
pub const STEEP: f64 = 1.25;

/// Fewest sizes that make a sweep.
const MIN_POINTS: usize = 3;

/// A run's sweep points: (kind, name) → (the sweep, its size).
type Points = BTreeMap<(String, String), (String, u64)>;

/// Which sweep and size each sized record of `recs` is.
fn points(recs: &[Record]) -> Points {
    recs.iter()
        .filter_map(|r| {
            let size = r.parameters.get("size_bytes")?.as_u64()?;
            let mut rest = r.parameters.as_object()?.clone();
            for k in SIZE_KEYS {
                rest.remove(*k);
            }
            let sweep = format!("{} {}", r.kind, serde_json::Value::Object(rest));
            Some(((r.kind.clone(), r.name.clone()), (sweep, size)))
        })
        .collect()
}

/// The span (least, greatest) of `metric` at the two sizes beside the point named
/// (kind, name) in one run's sweep; None when it is no sweep point or an end of one.
fn span(recs: &[Record], pts: &Points, kind: &str, name: &str, metric: &str) -> Option<(f64, f64)> {
    let (sweep, size) = pts.get(&(kind.to_string(), name.to_string()))?;
    let mut curve: Vec<(u64, f64)> = recs
        .iter()
        .filter_map(|r| {
            let (s, z) = pts.get(&(r.kind.clone(), r.name.clone()))?;
            (s == sweep).then_some(())?;
            Some((*z, r.median(metric)?))
        })
        .collect();
    if curve.len() < MIN_POINTS {
        return None;
    }
    curve.sort_by_key(|p| p.0);
    curve.dedup_by_key(|p| p.0);
    let i = curve.iter().position(|p| p.0 == *size)?;
    let (p, n) = (curve.get(i.checked_sub(1)?)?.1, curve.get(i + 1)?.1);
    let (lo, hi) = (p.min(n), p.max(n));
    (lo > 0.0 && hi.is_finite()).then_some((lo, hi))
}

/// Whether `x` lies within a steep span widened by the least effect.
fn inside(span: Option<(f64, f64)>, x: f64) -> Option<(f64, f64)> {
    let (lo, hi) = span?;
    let w = 1.0 + MIN_EFFECT;
    (hi / lo > STEEP && x >= lo / w && x <= hi * w).then_some((lo, hi))
}

fn span_text(lo: f64, hi: f64, unit: &str) -> String {
    format!(
        "{}–{} {unit}",
        crate::report::num(Some(lo), 1),
        crate::report::num(Some(hi), 1)
    )
}

/// Turns each "beyond" of a steep sweep point that stayed within its neighbours'
/// span, in both runs, into "within (steep: …)".
pub fn apply(rows: &mut [Row], a: &[Record], b: &[Record]) {
    let (pa, pb) = (points(a), points(b));
    for r in rows.iter_mut().filter(|r| r.change == "beyond") {
        let sa = span(a, &pa, &r.kind, &r.name, &r.metric);
        let sb = span(b, &pb, &r.kind, &r.name, &r.metric);
        if let (Some((lo, hi)), Some(_)) = (inside(sa, r.b), inside(sb, r.a)) {
            r.change = format!(
                "within (steep: between its neighbouring sizes in both runs, {} in A)",
                span_text(lo, hi, &r.unit)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::compare;
    use crate::provenance::Provenance;
    use serde_json::json;

    fn point(kib: u64, ns: f64) -> Record {
        let mut r = Record::new(
            "latency",
            &format!("read warm {kib} KiB cpu0 node0"),
            Provenance::collect("t", "none"),
            json!({ "size_bytes": kib * 1024, "elements": kib * 16, "state": "warm", "kernel": "read" }),
        );
        r.add_samples("latency", "ns", &[ns * 0.99, ns, ns * 1.01, ns, ns]);
        r
    }

    fn sweep(curve: &[(u64, f64)]) -> Vec<Record> {
        curve.iter().map(|&(k, ns)| point(k, ns)).collect()
    }

    fn change(c: &crate::compare::Comparison, kib: u64) -> &str {
        let name = format!("read warm {kib} KiB cpu0 node0");
        &c.rows.iter().find(|r| r.name == name).unwrap().change
    }

    #[test]
    fn a_boundary_point_that_slid_between_its_neighbours_is_within_a_flat_one_is_beyond() {
        // L2 = 256 KiB: 128 K is L2, 512 K is L3; 256 K slides between them.
        let a = sweep(&[
            (64, 4.0),
            (128, 4.2),
            (256, 6.6),
            (512, 10.0),
            (1024, 10.2),
            (2048, 10.1),
        ]);
        let b = sweep(&[
            (64, 4.0),
            (128, 4.2),
            (256, 4.2),
            (512, 10.0),
            (1024, 15.0),
            (2048, 10.1),
        ]);
        let c = compare(&a, &b, false);
        assert_eq!(
            change(&c, 256),
            "within (steep: between its neighbouring sizes in both runs, 4.2–10.0 ns in A)"
        );
        // 1 MiB sits on the flat L3 part (10.0 beside 10.1): its move is beyond.
        assert_eq!(change(&c, 1024), "beyond");
    }

    #[test]
    fn a_boundary_point_that_jumped_past_its_neighbours_stays_beyond() {
        let a = sweep(&[(128, 4.2), (256, 6.6), (512, 10.0)]);
        // 3× the 256 K point, its neighbours where they were: no slide explains it.
        let b = sweep(&[(128, 4.2), (256, 20.0), (512, 10.0)]);
        assert_eq!(change(&compare(&a, &b, false), 256), "beyond");
        // Read the other way round too (A's 6.6 ns lies within B's span, B's 20 not in A's).
        assert_eq!(change(&compare(&b, &a, false), 256), "beyond");
    }

    #[test]
    fn records_of_no_sweep_are_untouched() {
        let a = vec![point(256, 6.6)];
        let b = vec![point(256, 4.2)];
        assert_eq!(change(&compare(&a, &b, false), 256), "beyond");
    }
}
