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
//!
//! When the boundary slid further, a neighbour moves too (48 KiB beside a 48 KiB L1:
//! 1.7 ns in A, 4.6 ns in B, while B's 32 KiB climbed to 2.0 ns), and a point may lie
//! between its neighbours only across both runs: within the span of all four
//! neighbouring figures, outside one run's own. One pair of runs cannot tell such a
//! slide (another tenant on the SMT sibling or in the L3, other physical pages) from a
//! cache that lost capacity, so the point is neither "beyond" nor "within": it reads
//! [`EDGE`], the verdict names it and does not count it, and a `--baseline` run that
//! puts it within makes it within. Over the fourteenth session's
//! eight quick survey pairs on the 2-vCPU guest, 4 of the 15 figures beyond were such
//! points (48 KiB, 768 KiB, 1.5 MiB, 8 MiB). A point on the same level in both runs
//! (a level that got slower) or where the curve falls is no slide.

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

/// The figures of `metric` at the two sizes beside the point named (kind, name) in one
/// run's sweep, the smaller size's first; None when it is no sweep point or an end of
/// one.
fn beside(
    recs: &[Record],
    pts: &Points,
    kind: &str,
    name: &str,
    metric: &str,
) -> Option<(f64, f64)> {
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
    (p.min(n) > 0.0 && p.max(n).is_finite()).then_some((p, n))
}

/// The span (least, greatest) of a point's two neighbouring figures.
fn span((p, n): (f64, f64)) -> (f64, f64) {
    (p.min(n), p.max(n))
}

/// Mark of a steep point that lies between its neighbouring sizes only across both
/// runs: the boundary slid further than one run's own neighbours span.
pub const EDGE: &str = "edge moved";

/// Whether `x` lies within a steep span widened by the least effect.
fn inside(span: Option<(f64, f64)>, x: f64) -> Option<(f64, f64)> {
    let (lo, hi) = span?;
    let w = 1.0 + MIN_EFFECT;
    (hi / lo > STEEP && x >= lo / w && x <= hi * w).then_some((lo, hi))
}

/// The span of both runs' neighbouring figures, when at least one run's own is steep.
fn across(a: (f64, f64), b: (f64, f64)) -> Option<(f64, f64)> {
    let steep = |s: (f64, f64)| s.1 / s.0 > STEEP;
    (steep(a) || steep(b)).then(|| (a.0.min(b.0), a.1.max(b.1)))
}

/// Where a point sits on its own run's curve.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Side {
    /// Its neighbours are not steep: a plateau.
    Flat,
    /// On the level of the smaller size beside it (within the least effect).
    Before,
    /// On the level of the larger size beside it.
    After,
    /// Between the two, near neither.
    Climb,
}

/// The side of a latency `x` between its neighbouring figures (smaller size first);
/// None when it lies outside their span widened by the least effect, or the curve
/// falls steeply there: a cache boundary makes a latency climb, so no slide explains
/// either.
fn side(beside: (f64, f64), x: f64) -> Option<Side> {
    let (p, n) = beside;
    let (lo, hi) = span(beside);
    let w = 1.0 + MIN_EFFECT;
    let near = |y: f64| x >= y / w && x <= y * w;
    if x < lo / w || x > hi * w || p / n > STEEP {
        None
    } else if hi / lo <= STEEP {
        Some(Side::Flat)
    } else if near(p) {
        Some(Side::Before)
    } else if near(n) {
        Some(Side::After)
    } else {
        Some(Side::Climb)
    }
}

/// "lo–hi unit", one decimal: a span of figures as the rows' words give it.
pub(super) fn span_text(lo: f64, hi: f64, unit: &str) -> String {
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
        let sa = beside(a, &pa, &r.kind, &r.name, &r.metric).map(span);
        let sb = beside(b, &pb, &r.kind, &r.name, &r.metric).map(span);
        if let (Some((lo, hi)), Some(_)) = (inside(sa, r.b), inside(sb, r.a)) {
            r.change = format!(
                "within (steep: between its neighbouring sizes in both runs, {} in A)",
                span_text(lo, hi, &r.unit)
            );
        }
    }
}

/// Turns each latency "beyond" left after the whole-level shifts (a level that moved
/// as a whole is that level's finding, its boundary points included) into [`EDGE`] where a
/// slide explains it: both figures lie within the span of both runs' neighbouring
/// figures (one run's own steep), each between its own run's neighbours, and the point
/// not on the same plateau in both runs (the level beside it, not the boundary, moved
/// then).
pub fn edges(rows: &mut [Row], a: &[Record], b: &[Record]) {
    let (pa, pb) = (points(a), points(b));
    let w = 1.0 + MIN_EFFECT;
    for r in rows
        .iter_mut()
        .filter(|r| r.change == "beyond" && r.unit == "ns")
    {
        let (Some(na), Some(nb)) = (
            beside(a, &pa, &r.kind, &r.name, &r.metric),
            beside(b, &pb, &r.kind, &r.name, &r.metric),
        ) else {
            continue;
        };
        let Some((lo, hi)) = across(span(na), span(nb)) else {
            continue;
        };
        let inn = |x: f64| x >= lo / w && x <= hi * w;
        let slid = match (side(na, r.a), side(nb, r.b)) {
            (Some(x), Some(y)) => x != y || x == Side::Climb,
            _ => false,
        };
        if slid && inn(r.a) && inn(r.b) {
            r.change = format!(
                "{EDGE} (between its neighbouring sizes only across both runs, {}: a cache boundary slid further than a step)",
                span_text(lo, hi, &r.unit)
            );
        }
    }
}

/// The words the verdict gives the points whose edge moved ("" when none did).
pub fn verdict_words(rows: &[Row]) -> String {
    let moved: Vec<&Row> = rows.iter().filter(|r| r.change.starts_with(EDGE)).collect();
    if moved.is_empty() {
        return String::new();
    }
    let names: Vec<String> = moved
        .iter()
        .map(|r| format!("{} {}", r.kind, r.name))
        .collect();
    let n = moved.len();
    format!(
        "; {n} sweep point{} on a cache boundary that slid ({}), not counted: a cache that lost capacity and a smaller share of it (another tenant, other pages) move such points alike, so repeat the runs before calling it a change",
        if n == 1 { "" } else { "s" },
        names.join(", ")
    )
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
    fn a_point_between_its_neighbours_only_across_both_runs_is_an_edge_that_moved() {
        // L1 = 48 KiB; in B the sibling's loads took part of it: 32 KiB climbed too,
        // 64 KiB is L2 in both.
        let a = sweep(&[(24, 1.7), (32, 1.7), (48, 1.71), (64, 5.3), (96, 5.4)]);
        let b = sweep(&[(24, 1.7), (32, 2.0), (48, 4.6), (64, 5.5), (96, 5.4)]);
        let c = compare(&a, &b, false);
        let ch = change(&c, 48);
        assert!(ch.starts_with(EDGE), "{ch}");
        assert!(ch.contains("1.7–5.5 ns"), "{ch}");
        let v = crate::compare::verdict(&c);
        assert!(v.starts_with("0 of "), "{v}");
        assert!(
            v.contains("2 sweep points on a cache boundary that slid (latency read warm 48 KiB cpu0 node0, latency read warm 32 KiB cpu0 node0), not counted"),
            "{v}"
        );
        assert!(change(&c, 32).starts_with(EDGE));
        // Beyond even the span of both runs' neighbours: beyond.
        let far = sweep(&[(24, 1.7), (32, 2.0), (48, 9.0), (64, 5.5), (96, 5.4)]);
        assert_eq!(change(&compare(&a, &far, false), 48), "beyond");
    }

    #[test]
    fn a_flat_point_or_one_on_the_same_level_in_both_runs_is_no_edge() {
        // Neither run's neighbours differ over 1.25×, together they do (4.0 against
        // 5.2): the 128 KiB point's move is still a change.
        let a = sweep(&[(64, 4.0), (128, 4.2), (256, 4.4)]);
        let b = sweep(&[(64, 4.9), (128, 5.0), (256, 5.2)]);
        assert_eq!(change(&compare(&a, &b, false), 128), "beyond");
        // On the upper level in both runs while that level got 1.5× slower: the
        // level beside it moved, not the boundary.
        let a = sweep(&[(32, 1.26), (64, 3.8), (128, 3.8), (256, 3.8)]);
        let b = sweep(&[(32, 1.26), (64, 5.7), (128, 5.7), (256, 5.7)]);
        assert_eq!(change(&compare(&a, &b, false), 64), "beyond");
    }

    #[test]
    fn records_of_no_sweep_are_untouched() {
        let a = vec![point(256, 6.6)];
        let b = vec![point(256, 4.2)];
        assert_eq!(change(&compare(&a, &b, false), 256), "beyond");
    }
}
