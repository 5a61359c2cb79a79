//! A cache level that moved as a whole. On a VM, two back-to-back surveys can find the
//! same sweep sizes in different homes: the 3–4 MiB points of a 2-vCPU guest read 12 ns
//! (in its share of L3) in one run and 90–140 ns (memory) in the next, as the share of
//! the host's L3 this vCPU gets changes from minute to minute; every pass of both runs
//! settled and undisturbed. Each such point is "beyond", yet it is one finding: the
//! cache this CPU could use changed between the runs. So is a whole level that moved
//! by one factor (every L1 point 1.25×).
//!
//! The rule: a sweep's points (the `latency` records of a `latency-sweep`) are grouped
//! by where each run put them: the plateau (cache level) holding the size in A and in
//! B, or the transition between two plateaus. A group of at least [`MIN_POINTS`]
//! comparable points that all moved the same way by more than the least effect, by
//! about one factor (the largest B/A at most [`SPREAD`] times the smallest), is named
//! once as a [`LevelShift`] and counted as one finding; its points' rows read "level
//! shift (…)" and stay listed. A point that moved alone, or a group whose points
//! did not all move, keeps its verdict.

use super::{Row, MIN_EFFECT};
use crate::record::Record;
use crate::report::bytes;
use serde::Serialize;

/// How far apart a level's points' B/A may be to count as "one factor": the largest at
/// most this many times the smallest (the L3-to-memory move of a 2-vCPU guest's 3–4 MiB
/// points read 9.2× and 14.6× in one pair).
pub const SPREAD: f64 = 2.0;

/// Fewest comparable points of a level that make a level shift: one point that moved
/// is a figure's change, not a level's.
pub const MIN_POINTS: usize = 2;

/// How the rows of a level shift begin.
pub const MARK: &str = "level shift";

/// Parameters of a `latency-sweep` record that its points do not carry as such.
const SWEEP_ONLY: &[&str] = &["sizes", "plateau_tolerance"];

/// Sweep points that moved together, named once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelShift {
    /// The `latency-sweep` record's name.
    pub sweep: String,
    /// The metric compared ("latency").
    pub metric: String,
    /// Which points: "L1 points 4 KiB–32 KiB", or "points 3 MiB–4 MiB (L3 in A,
    /// memory in B)".
    pub what: String,
    /// Median B/A of its points.
    pub ratio: f64,
    /// Comparable points in it.
    pub figures: usize,
    /// One sentence for the verdict.
    pub sentence: String,
}

/// A sweep: its record, and its plateaus as (from, to, level).
struct Sweep<'a> {
    rec: &'a Record,
    plateaus: Vec<(u64, u64, String)>,
}

fn sweeps(recs: &[Record]) -> Vec<Sweep<'_>> {
    recs.iter()
        .filter(|r| r.kind == "latency-sweep")
        .map(|rec| {
            let plateaus = rec
                .data
                .as_ref()
                .and_then(|d| d.get("plateaus"))
                .and_then(|p| p.as_array())
                .into_iter()
                .flatten()
                .filter_map(|p| {
                    let level = p.get("level")?.as_str()?.to_string();
                    Some((p["from_bytes"].as_u64()?, p["to_bytes"].as_u64()?, level))
                })
                .collect();
            Sweep { rec, plateaus }
        })
        .collect()
}

/// The size of `point` when it is one of `sweep`'s points: a `latency` record with
/// every parameter the sweep names equal, at one of its sizes.
fn size_in(sweep: &Record, point: &Record) -> Option<u64> {
    if point.kind != "latency" {
        return None;
    }
    let size = point.parameters.get("size_bytes")?.as_u64()?;
    let sp = sweep.parameters.as_object()?;
    let same = sp
        .iter()
        .filter(|(k, _)| !SWEEP_ONLY.contains(&k.as_str()))
        .all(|(k, v)| point.parameters.get(k) == Some(v));
    let listed = sp
        .get("sizes")?
        .as_array()?
        .iter()
        .any(|s| s.as_u64() == Some(size));
    (same && listed).then_some(size)
}

/// Where a sweep put `size`: the plateau holding it, or the transition it lies in.
fn home(plateaus: &[(u64, u64, String)], size: u64) -> String {
    if let Some(p) = plateaus.iter().find(|p| p.0 <= size && size <= p.1) {
        return p.2.clone();
    }
    let before = plateaus.iter().rev().find(|p| p.1 < size);
    let after = plateaus.iter().find(|p| p.0 > size);
    match (before, after) {
        (Some(b), Some(a)) => format!("between {} and {}", b.2, a.2),
        (Some(b), None) => format!("past {}", b.2),
        (None, Some(a)) => format!("before {}", a.2),
        (None, None) => "no plateau".into(),
    }
}

/// "1.3× slower" / "2.0× faster" for a ratio of times.
fn factor(ratio: f64) -> String {
    if ratio >= 1.0 {
        format!("{ratio:.1}× slower")
    } else {
        format!("{:.1}× faster", 1.0 / ratio)
    }
}

/// One group of consecutive points with the same homes in A and B: each point's size
/// and row index, in size order.
struct Group {
    homes: (String, String),
    rows: Vec<(u64, usize)>,
}

/// The groups of sweep `sa` (B's sweep `sb`) for `metric`.
fn groups(rows: &[Row], a: &[Record], sa: &Sweep, sb: &Sweep, metric: &str) -> Vec<Group> {
    let mut points: Vec<(u64, usize)> = a
        .iter()
        .filter_map(|p| {
            let size = size_in(sa.rec, p)?;
            let i = rows
                .iter()
                .position(|r| r.kind == p.kind && r.name == p.name && r.metric == metric)?;
            Some((size, i))
        })
        .collect();
    points.sort_by_key(|p| p.0);
    points.dedup_by_key(|p| p.0);
    let mut out: Vec<Group> = Vec::new();
    for (size, i) in points {
        let homes = (home(&sa.plateaus, size), home(&sb.plateaus, size));
        match out.last_mut() {
            Some(g) if g.homes == homes => g.rows.push((size, i)),
            _ => out.push(Group {
                homes,
                rows: vec![(size, i)],
            }),
        }
    }
    out
}

fn comparable(r: &Row) -> Option<f64> {
    let x = r.ratio.filter(|x| *x > 0.0 && x.is_finite())?;
    (!r.change.starts_with("not comparable")).then_some(x)
}

/// The median B/A of a group that moved as a whole, how many comparable points it is
/// of and the sizes they span; None when the group did not move as one.
fn moved_as_one(rows: &[Row], g: &Group) -> Option<(f64, usize, (u64, u64))> {
    let points: Vec<(u64, f64)> = g
        .rows
        .iter()
        .filter_map(|&(size, i)| Some((size, comparable(&rows[i])?)))
        .collect();
    if points.len() < MIN_POINTS || !g.rows.iter().any(|&(_, i)| rows[i].change == "beyond") {
        return None;
    }
    let span = (points[0].0, points[points.len() - 1].0);
    let mut r: Vec<f64> = points.iter().map(|p| p.1).collect();
    r.sort_by(f64::total_cmp);
    let least = 1.0 + MIN_EFFECT;
    let (lo, hi) = (r[0], r[r.len() - 1]);
    let one_way = lo > least || hi < 1.0 / least;
    let median = crate::stats::median(&r)?;
    (one_way && hi / lo <= SPREAD).then_some((median, r.len(), span))
}

/// The level shift of group `g`, whose comparable points span `sizes`.
fn shift_of(sweep: &str, metric: &str, g: &Group, moved: (f64, usize, (u64, u64))) -> LevelShift {
    let (ratio, figures, sizes) = moved;
    let span = format!("{}–{}", bytes(sizes.0), bytes(sizes.1));
    let (ha, hb) = &g.homes;
    let (what, why) = if ha == hb {
        (
            format!("{ha} points {span}"),
            "the whole level moved between the runs (on a VM the core clock or the share of the cache this CPU gets can change)".to_string(),
        )
    } else {
        (
            format!("points {span} ({ha} in A, {hb} in B)"),
            "the cache this CPU could use changed between the runs".to_string(),
        )
    };
    let sentence = format!(
        "{what} all {} ({figures} figures, named once): {why}",
        factor(ratio)
    );
    LevelShift {
        sweep: sweep.to_string(),
        metric: metric.to_string(),
        what,
        ratio,
        figures,
        sentence,
    }
}

/// Names each level of a sweep that moved as a whole, once: its points' "beyond" rows
/// (and the level's own plateau figure, when A and B matched the points to the same
/// level) read "level shift (…)".
pub fn apply(rows: &mut [Row], a: &[Record], b: &[Record]) -> Vec<LevelShift> {
    let sb = sweeps(b);
    let mut out = Vec::new();
    for sa in sweeps(a) {
        let Some(sb) = sb.iter().find(|s| s.rec.name == sa.rec.name) else {
            continue;
        };
        let mut metrics: Vec<String> = rows
            .iter()
            .filter(|r| r.kind == "latency")
            .map(|r| r.metric.clone())
            .collect();
        metrics.sort();
        metrics.dedup();
        for metric in metrics {
            for g in groups(rows, a, &sa, sb, &metric) {
                let Some(moved) = moved_as_one(rows, &g) else {
                    continue;
                };
                let shift = shift_of(&sa.rec.name, &metric, &g, moved);
                let mark = format!("{MARK} ({} all {})", shift.what, factor(shift.ratio));
                let plateau = (g.homes.0 == g.homes.1).then(|| format!("plateau {}", g.homes.0));
                mark_rows(rows, &g, &sa.rec.name, plateau.as_deref(), &mark);
                out.push(shift);
            }
        }
    }
    out
}

/// Marks the group's "beyond" rows, and the level's plateau figure of the sweep named
/// `sweep` when it is beyond, with `mark`.
fn mark_rows(rows: &mut [Row], g: &Group, sweep: &str, plateau: Option<&str>, mark: &str) {
    for (i, r) in rows.iter_mut().enumerate() {
        let own =
            r.kind == "latency-sweep" && r.name == sweep && Some(r.metric.as_str()) == plateau;
        if r.change == "beyond" && (own || g.rows.iter().any(|p| p.1 == i)) {
            r.change = mark.to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare, verdict, Comparison};
    use crate::provenance::Provenance;
    use serde_json::{json, Value};

    const KIB: u64 = 1024;
    /// The sizes of the sweeps below, KiB.
    const SIZES: [u64; 14] = [
        4, 8, 16, 32, 64, 128, 256, 1024, 2048, 3072, 4096, 8192, 16384, 65536,
    ];

    fn params() -> Value {
        json!({ "kernel": "read", "state": "warm", "requestor_cpu": 0, "stride_bytes": 64 })
    }

    fn point(kib: u64, ns: f64) -> Record {
        let mut p = params();
        p["size_bytes"] = json!(kib * KIB);
        let mut r = Record::new(
            "latency",
            &format!("read warm {kib} KiB cpu0 node0"),
            Provenance::collect("t", "none"),
            p,
        );
        r.add_samples("latency", "ns", &[ns * 0.995, ns, ns * 1.005, ns, ns]);
        r
    }

    /// A sweep over [`SIZES`] with `ns` at each size and plateaus (from, to KiB, level).
    fn run(ns: &[f64], plateaus: &[(u64, u64, &str)]) -> Vec<Record> {
        let mut p = params();
        p["sizes"] = json!(SIZES.iter().map(|k| k * KIB).collect::<Vec<_>>());
        let mut sweep = Record::new(
            "latency-sweep",
            "read warm sweep cpu0",
            Provenance::collect("t", "none"),
            p,
        );
        let ps: Vec<Value> = plateaus
            .iter()
            .map(|&(f, t, l)| json!({ "from_bytes": f * KIB, "to_bytes": t * KIB, "level": l }))
            .collect();
        sweep.set_data(&json!({ "plateaus": ps }));
        let mut out: Vec<Record> = SIZES.iter().zip(ns).map(|(&k, &v)| point(k, v)).collect();
        out.push(sweep);
        out
    }

    const A_NS: [f64; 14] = [
        1.25, 1.25, 1.25, 1.26, 3.8, 3.8, 3.9, 12.0, 12.0, 12.0, 14.0, 170.0, 170.0, 171.0,
    ];
    const A_LEVELS: [(u64, u64, &str); 4] = [
        (4, 32, "L1"),
        (64, 256, "L2"),
        (1024, 4096, "L3"),
        (8192, 65536, "memory"),
    ];

    fn changes(c: &Comparison) -> Vec<(u64, String)> {
        SIZES
            .iter()
            .map(|k| {
                let name = format!("read warm {k} KiB cpu0 node0");
                let r = c.rows.iter().find(|r| r.name == name).unwrap();
                (*k, r.change.clone())
            })
            .collect()
    }

    #[test]
    fn a_level_whose_points_all_moved_by_one_factor_is_one_finding() {
        let mut b_ns = A_NS;
        b_ns[..4].iter_mut().for_each(|x| *x *= 1.25);
        let c = compare(&run(&A_NS, &A_LEVELS), &run(&b_ns, &A_LEVELS), false);
        assert_eq!(c.levels.len(), 1, "{:?}", c.levels);
        let l = &c.levels[0];
        assert_eq!((l.what.as_str(), l.figures), ("L1 points 4 KiB–32 KiB", 4));
        assert!((l.ratio - 1.25).abs() < 0.01);
        let ch = changes(&c);
        assert!(
            ch[..4]
                .iter()
                .all(|(_, c)| c == "level shift (L1 points 4 KiB–32 KiB all 1.2× slower)"),
            "{ch:?}"
        );
        assert!(
            ch[4..].iter().all(|(_, c)| c.starts_with("within")),
            "{ch:?}"
        );
        let v = verdict(&c);
        assert!(v.starts_with("1 of 14 comparable figures changed beyond their spread (7.1 %); L1 points 4 KiB–32 KiB all 1.2× slower (4 figures, named once): the whole level moved"), "{v}");
        // Every point is still listed, the level's first (after any beyond).
        assert!(c.rows[0].change.starts_with(MARK));
    }

    #[test]
    fn a_level_shift_names_only_the_points_it_compared() {
        let mut b_ns = A_NS;
        b_ns[..4].iter_mut().for_each(|x| *x *= 1.25);
        let mut b = run(&b_ns, &A_LEVELS);
        // 32 KiB did not settle in B: not comparable, so not part of what is named.
        b[3].settle = Some(crate::record::Settle {
            passes: 20,
            ..crate::record::Settle::new("latency", [1.0, 2.0], Some("machine busy"))
        });
        let c = compare(&run(&A_NS, &A_LEVELS), &b, false);
        assert_eq!(c.levels.len(), 1, "{:?}", c.levels);
        assert_eq!(
            (c.levels[0].what.as_str(), c.levels[0].figures),
            ("L1 points 4 KiB–16 KiB", 3)
        );
    }

    #[test]
    fn points_one_run_held_in_l3_and_the_next_in_memory_are_one_finding() {
        let mut b_ns = A_NS;
        b_ns[9] = 120.0;
        b_ns[10] = 150.0;
        let b_levels = [
            (4, 32, "L1"),
            (64, 256, "L2"),
            (1024, 2048, "L3"),
            (3072, 65536, "memory"),
        ];
        let c = compare(&run(&A_NS, &A_LEVELS), &run(&b_ns, &b_levels), false);
        assert_eq!(c.levels.len(), 1, "{:?}", c.levels);
        assert_eq!(
            c.levels[0].what,
            "points 3 MiB–4 MiB (L3 in A, memory in B)"
        );
        assert!(c.levels[0]
            .sentence
            .ends_with("the cache this CPU could use changed between the runs"));
        let ch = changes(&c);
        assert!(
            ch[9]
                .1
                .starts_with("level shift (points 3 MiB–4 MiB (L3 in A, memory in B) all 10."),
            "{ch:?}"
        );
        assert_eq!(c.rows.iter().filter(|r| r.change == "beyond").count(), 0);
    }

    #[test]
    fn one_point_that_moved_alone_stays_beyond() {
        // One figure 30 % worse, its level's other points where they were.
        let mut b_ns = A_NS;
        b_ns[12] *= 1.3;
        let c = compare(&run(&A_NS, &A_LEVELS), &run(&b_ns, &A_LEVELS), false);
        assert!(c.levels.is_empty(), "{:?}", c.levels);
        assert_eq!(changes(&c)[12].1, "beyond");
    }

    #[test]
    fn a_level_whose_points_moved_by_different_factors_or_ways_is_no_shift() {
        let mut b_ns = A_NS;
        b_ns[11] *= 1.3;
        b_ns[12] *= 3.0;
        b_ns[13] *= 1.4;
        let c = compare(&run(&A_NS, &A_LEVELS), &run(&b_ns, &A_LEVELS), false);
        assert!(c.levels.is_empty(), "{:?}", c.levels);
        let mut b_ns = A_NS;
        b_ns[4] *= 1.5;
        b_ns[5] *= 1.5;
        b_ns[6] /= 1.5;
        let c = compare(&run(&A_NS, &A_LEVELS), &run(&b_ns, &A_LEVELS), false);
        assert!(c.levels.is_empty(), "{:?}", c.levels);
        assert!(changes(&c)[4..7].iter().all(|(_, c)| c == "beyond"));
    }

    #[test]
    fn homes_name_plateaus_and_the_transitions_between_them() {
        let ps = vec![(4, 32, "L1".to_string()), (64, 256, "L2".to_string())];
        assert_eq!(home(&ps, 16), "L1");
        assert_eq!(home(&ps, 48), "between L1 and L2");
        assert_eq!(home(&ps, 512), "past L2");
        assert_eq!(home(&ps, 2), "before L1");
        assert_eq!(home(&[], 2), "no plateau");
    }
}
