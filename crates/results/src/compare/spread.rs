//! The pair's own spread. A figure's interval comes from passes run back to back, so it
//! says nothing about how far the whole machine moves between two runs: on a VM the
//! hypervisor places the vCPUs anew, the clock and the neighbours change, and half the
//! figures of two identical back-to-back surveys land outside each other's intervals
//! (compare/survey-trust measured 48 %). So the comparison also measures how far this
//! pair's figures scatter around each other, and calls a figure beyond only when it
//! moved further than that scatter. A kind of figure that moved as a whole (all
//! bandwidths 20 % lower) is said as such: one pair of runs cannot tell a whole-machine
//! shift from a change, so it is named, not hidden, and not counted figure by figure.
//! Figures of a core's own caches and figures of what is shared scatter apart
//! (`super::scope`), each against its own scatter where it has enough figures.

use super::scope::Scope;
use super::Row;
use serde::Serialize;
use std::collections::BTreeMap;

/// Fewest comparable figures from which the pair's scatter is estimated.
pub const MIN_FIGURES: usize = 10;

/// Fewest comparable figures from which one scope's own scatter is estimated, given
/// the pair's: a quick survey holds 5–8 comparable figures of held lines, and their
/// scatter (0.47–3.3× on the EPYC guest) is what the pooled one hides. A median of
/// absolute deviations of 5 is rough, so it is never taken below the least effect.
pub const MIN_SCOPE: usize = 5;

/// Fewest figures of one kind from which that kind's shift is estimated.
const MIN_KIND: usize = 4;

/// The family of every bandwidth streamed from memory.
pub const MEMORY: &str = "memory bandwidth";

/// How many scaled MADs from its kind's shift a figure must be to be beyond.
pub const K: f64 = 3.0;

/// A kind whose figures moved together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shift {
    /// Record kind, and the metric where the kind holds several.
    pub kind: String,
    /// Median B/A of its comparable figures.
    pub ratio: f64,
    /// How many figures the median is of.
    pub figures: usize,
}

/// The scatter of one scope's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScopeSpread {
    /// Which figures.
    pub scope: Scope,
    /// Comparable figures of this scope.
    pub figures: usize,
    /// The least B/A factor (either way) counted as beyond, e.g. 1.42.
    pub factor: f64,
    /// Whether the factor is this scope's own (false: too few figures, so the pair's).
    pub own: bool,
}

/// What this pair's scatter is and which kinds moved as a whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairSpread {
    /// Comparable figures the scatter was measured on.
    pub figures: usize,
    /// The least B/A factor (either way) counted as beyond the whole pair's scatter.
    pub factor: f64,
    /// Each scope's scatter, core first.
    pub scopes: Vec<ScopeSpread>,
    /// Kinds whose median B/A is over the least effect from 1.
    pub shifts: Vec<Shift>,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The family a figure's shift is measured in: its record kind and metric, since one
/// kind holds metrics that move apart when the machine changes (a loaded-latency
/// record's latency rises as its injected bandwidth falls); the kind alone where the
/// metric is the kind's own figure (a latency record's latency reads "latency"). Every
/// bandwidth streamed from memory is one family whatever its kind: one CPU's kernels,
/// several CPUs' aggregates and mixes all moved 1.4–1.7× together between two quiet
/// runs, while the bandwidth family's cache-sized figures held its median at 1. On the
/// EPYC guest that took one set of three quiet pairs from 14 of 175 figures beyond to
/// 6; the ten quiet pairs before it went from 23 of 589 to 26, a figure or two either
/// way, where no such shift happened.
fn family(r: &Row) -> String {
    if r.streams_memory {
        MEMORY.into()
    } else if r.metric == r.kind {
        r.kind.clone()
    } else {
        format!("{} {}", r.kind, r.metric)
    }
}

fn comparable(r: &Row) -> Option<f64> {
    let x = r.ratio.filter(|x| *x > 0.0 && x.is_finite())?;
    (!r.change.starts_with("not comparable")).then(|| x.ln())
}

/// Measures the pair's scatter and turns each "beyond" that lies within it into
/// "within (pair's spread)"; None (rows untouched) with too few figures to measure it.
pub fn apply(rows: &mut [Row], min_effect: f64) -> Option<PairSpread> {
    let mut by_kind: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in rows.iter() {
        if let Some(l) = comparable(r) {
            by_kind.entry(family(r)).or_default().push(l);
        }
    }
    let figures: usize = by_kind.values().map(Vec::len).sum();
    if figures < MIN_FIGURES {
        return None;
    }
    // Each kind's own shift (0 where too few figures to tell one).
    let centre: BTreeMap<String, f64> = by_kind
        .iter()
        .map(|(k, v)| {
            let c = if v.len() >= MIN_KIND {
                median(&mut v.clone())
            } else {
                0.0
            };
            (k.clone(), c)
        })
        .collect();
    let least = (1.0 + min_effect).ln();
    let dev = |r: &Row| Some(comparable(r)? - centre[&family(r)]);
    let pooled = bound(rows.iter().filter_map(dev).collect(), least);
    let scopes: Vec<ScopeSpread> = Scope::ALL
        .into_iter()
        .filter_map(|scope| {
            let d: Vec<f64> = rows
                .iter()
                .filter(|r| r.scope == scope)
                .filter_map(dev)
                .collect();
            let own = d.len() >= MIN_SCOPE;
            let figures = d.len();
            let b = if own { bound(d, least) } else { pooled };
            (figures > 0).then(|| ScopeSpread {
                scope,
                figures,
                factor: b.exp(),
                own,
            })
        })
        .collect();
    for r in rows.iter_mut().filter(|r| r.change == "beyond") {
        let Some(d) = dev(r) else { continue };
        let b = scopes
            .iter()
            .find(|s| s.scope == r.scope)
            .map_or(pooled, |s| s.factor.ln());
        if d.abs() <= b {
            r.change = "within (pair's spread)".into();
        }
    }
    let shifts = by_kind
        .iter()
        .filter(|(k, _)| centre[*k].abs() > least)
        .map(|(k, v)| Shift {
            kind: k.clone(),
            ratio: centre[k].exp(),
            figures: v.len(),
        })
        .collect();
    Some(PairSpread {
        figures,
        factor: pooled.exp(),
        scopes,
        shifts,
    })
}

/// The bound on |ln(B/A) − its kind's shift| past which a figure is beyond: [`K`]
/// scaled MADs of the deviations `dev` around their median, at least `least`.
fn bound(mut dev: Vec<f64>, least: f64) -> f64 {
    if dev.is_empty() {
        return least;
    }
    let mid = median(&mut dev);
    let mut abs: Vec<f64> = dev.iter().map(|d| (d - mid).abs()).collect();
    // 1.4826 × MAD estimates a normal scatter's σ and ignores the few real changes.
    let sigma = 1.4826 * median(&mut abs);
    (K * sigma).max(least)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str, ratio: f64, change: &str) -> Row {
        Row {
            kind: kind.into(),
            name: format!("{kind} {ratio}"),
            metric: kind.into(),
            unit: "u".into(),
            a: 1.0,
            b: ratio,
            ratio: Some(ratio),
            a_interval: (1.0, 1.0),
            b_interval: (ratio, ratio),
            disturbed: ("-".into(), "-".into()),
            change: change.into(),
            effect: ratio.ln().abs(),
            scope: Scope::Shared,
            streams_memory: false,
        }
    }

    /// Ratios scattered ±`w` around `c`, every one "beyond" its interval.
    fn scattered(kind: &str, c: f64, w: f64, n: usize) -> Vec<Row> {
        (0..n)
            .map(|i| {
                let x = c * (1.0 + w * ((i as f64 / (n - 1) as f64) * 2.0 - 1.0));
                row(kind, x, "beyond")
            })
            .collect()
    }

    /// Each row left beyond: its B figure and scope.
    fn beyond_of(rows: &[Row]) -> Vec<(f64, Scope)> {
        rows.iter()
            .filter(|r| r.change == "beyond")
            .map(|r| (r.b, r.scope))
            .collect()
    }

    #[test]
    fn a_scatter_of_identical_runs_is_within_and_a_lone_real_change_stays_beyond() {
        let mut rows = scattered("latency", 1.0, 0.25, 20);
        rows.push(row("latency", 3.0, "beyond"));
        let s = apply(&mut rows, 0.10).unwrap();
        let beyond: Vec<&Row> = rows.iter().filter(|r| r.change == "beyond").collect();
        assert_eq!(beyond.len(), 1, "{rows:?}");
        assert_eq!(beyond[0].b, 3.0);
        assert!(s.factor > 1.1 && s.factor < 3.0, "{s:?}");
        assert!(s.shifts.is_empty());
    }

    #[test]
    fn a_kind_that_moved_as_a_whole_is_named_as_a_shift() {
        let mut rows = scattered("bandwidth", 0.8, 0.02, 8);
        rows.extend(scattered("latency", 1.0, 0.02, 8));
        let s = apply(&mut rows, 0.10).unwrap();
        assert_eq!(s.shifts.len(), 1, "{s:?}");
        assert_eq!(
            (s.shifts[0].kind.as_str(), s.shifts[0].figures),
            ("bandwidth", 8)
        );
        assert!((s.shifts[0].ratio - 0.8).abs() < 0.01);
        // Tight scatter: the least effect (10 %) is the bound.
        assert!((s.factor - 1.1).abs() < 1e-9);
        assert!(rows.iter().all(|r| r.change != "beyond"));
    }

    #[test]
    fn memory_bandwidths_of_every_kind_that_moved_together_are_one_shift() {
        // The EPYC guest's quiet pair: one CPU's kernels, two CPUs' aggregates and mixes
        // beyond the caches all 1.5–1.7× faster in B, the caches' bandwidths held.
        let mut rows = scattered("latency", 1.0, 0.03, 12);
        rows.extend(scattered("bandwidth", 1.0, 0.03, 8));
        let memory = |kind: &str, metric: &str, x: f64| {
            let mut r = row(kind, x, "beyond");
            r.metric = metric.into();
            r.streams_memory = true;
            r
        };
        rows.push(memory("bandwidth", "bandwidth", 1.74));
        rows.push(memory("bandwidth", "bandwidth", 1.59));
        rows.push(memory("bandwidth", "aggregate_bandwidth", 1.72));
        rows.push(memory("bandwidth-mix", "bandwidth", 1.62));
        rows.push(memory("bandwidth-mix", "bandwidth", 1.55));
        rows.push(memory("bandwidth-mix", "bandwidth", 1.50));
        let s = apply(&mut rows, 0.10).unwrap();
        assert!(rows.iter().all(|r| r.change != "beyond"), "{rows:?}");
        assert_eq!(s.shifts.len(), 1, "{s:?}");
        assert_eq!(
            (s.shifts[0].kind.as_str(), s.shifts[0].figures),
            (MEMORY, 6)
        );
        assert!((s.shifts[0].ratio - 1.6).abs() < 0.05, "{s:?}");
    }

    #[test]
    fn a_kind_whose_metrics_moved_apart_has_each_metrics_shift() {
        // A loaded-latency curve 30 % faster while its injected bandwidths held (the
        // captured EMR pair): one shift per metric, so no point of either is beyond.
        let mut rows = scattered("latency", 1.0, 0.05, 12);
        let mut lat = scattered("loaded-latency", 0.7, 0.08, 6);
        let mut inj = scattered("loaded-latency", 1.0, 0.05, 6);
        lat.iter_mut().for_each(|r| r.metric = "latency".into());
        inj.iter_mut()
            .for_each(|r| r.metric = "injected_bandwidth".into());
        rows.extend(lat);
        rows.extend(inj);
        let s = apply(&mut rows, 0.10).unwrap();
        assert!(rows.iter().all(|r| r.change != "beyond"), "{rows:?}");
        assert_eq!(s.shifts.len(), 1, "{s:?}");
        assert_eq!(s.shifts[0].kind, "loaded-latency latency");
    }

    #[test]
    fn core_and_shared_figures_are_each_judged_against_their_own_scatter() {
        // Core figures within ±2 %, shared ones ±30 %: a core figure 25 % off is a
        // change, a shared one 35 % off is within what shared figures did. One pooled
        // scatter (×1.3 or so) called neither.
        let mut rows = scattered("latency", 1.0, 0.02, 12);
        rows.iter_mut().for_each(|r| r.scope = Scope::Core);
        rows.extend(scattered("latency", 1.0, 0.30, 12));
        let mut core = row("latency", 1.25, "beyond");
        core.scope = Scope::Core;
        rows.push(core);
        rows.push(row("latency", 1.35, "beyond"));
        let s = apply(&mut rows, 0.10).unwrap();
        let beyond = beyond_of(&rows);
        assert_eq!(beyond, vec![(1.25, Scope::Core)], "{s:?}");
        assert_eq!(s.scopes.len(), 2);
        assert!(s.scopes.iter().all(|x| x.own));
        let f = |sc| s.scopes.iter().find(|x| x.scope == sc).unwrap().factor;
        assert!(f(Scope::Core) < 1.2 && f(Scope::Shared) > 1.35, "{s:?}");
    }

    #[test]
    fn five_held_lines_figures_are_judged_against_their_own_wide_scatter() {
        // The EPYC guest's quiet pair: held lines 0.63–1.76× while the rest kept ±5 %.
        // Pooled, the held figures off by over 1.3× were beyond; against their own
        // scatter they are within, and a shared figure 1.4× off stays beyond.
        let mut rows = scattered("latency", 1.0, 0.05, 20);
        for (i, x) in [0.63, 0.87, 1.0, 1.32, 1.76].into_iter().enumerate() {
            let mut r = row("invalidate", x, "beyond");
            r.metric = format!("m{i}");
            r.scope = Scope::Held;
            rows.push(r);
        }
        rows.push(row("latency", 1.4, "beyond"));
        let s = apply(&mut rows, 0.10).unwrap();
        let beyond = beyond_of(&rows);
        assert_eq!(beyond, vec![(1.4, Scope::Shared)], "{s:?}");
        let held = s.scopes.iter().find(|x| x.scope == Scope::Held).unwrap();
        assert!(held.own && held.figures == MIN_SCOPE, "{s:?}");
        // Four held figures are too few: they take the pair's scatter.
        rows.retain(|r| r.b != 1.0 || r.scope != Scope::Held);
        rows.iter_mut().for_each(|r| r.change = "beyond".into());
        let s = apply(&mut rows, 0.10).unwrap();
        let held = s.scopes.iter().find(|x| x.scope == Scope::Held).unwrap();
        assert!(!held.own && held.factor == s.factor, "{s:?}");
        assert!(rows.iter().any(|r| r.b == 1.76 && r.change == "beyond"));
    }

    #[test]
    fn bandwidths_streamed_from_memory_are_judged_against_their_own_scatter() {
        // The EPYC guest: one CPU's and two CPUs' memory bandwidths 0.77–1.25× between
        // quiet runs (their family's median at 1), latencies and caches within ±4 %.
        // Judged with the shared latencies, the memory figures past ±12 % were beyond;
        // against their own scatter they are within, and a latency 1.3× off stays
        // beyond.
        let mut rows = scattered("latency", 1.0, 0.04, 16);
        for x in [0.77, 0.85, 0.92, 0.97, 1.0, 1.03, 1.08, 1.15, 1.25] {
            let mut r = row("bandwidth", x, "beyond");
            r.streams_memory = true;
            r.scope = Scope::Memory;
            rows.push(r);
        }
        rows.push(row("latency", 1.3, "beyond"));
        let pooled_only = {
            let mut all = rows.clone();
            all.iter_mut().for_each(|r| r.scope = Scope::Shared);
            apply(&mut all, 0.10).unwrap();
            beyond_of(&all).len()
        };
        let s = apply(&mut rows, 0.10).unwrap();
        assert_eq!(beyond_of(&rows), vec![(1.3, Scope::Shared)], "{s:?}");
        assert!(pooled_only > 1, "{pooled_only}");
        let mem = s.scopes.iter().find(|x| x.scope == Scope::Memory).unwrap();
        assert!(mem.own && mem.figures == 9 && mem.factor > 1.25, "{s:?}");
    }

    #[test]
    fn a_scope_with_too_few_figures_takes_the_pairs_scatter() {
        let mut rows = scattered("latency", 1.0, 0.25, 12);
        let mut core = row("latency", 1.02, "within");
        core.scope = Scope::Core;
        rows.push(core);
        let s = apply(&mut rows, 0.10).unwrap();
        let c = s.scopes.iter().find(|x| x.scope == Scope::Core).unwrap();
        assert!(!c.own);
        assert_eq!((c.figures, c.factor), (1, s.factor));
    }

    #[test]
    fn too_few_figures_leave_every_verdict_as_the_intervals_gave_it() {
        let mut rows = scattered("latency", 1.0, 0.25, 5);
        assert!(apply(&mut rows, 0.10).is_none());
        assert!(rows.iter().all(|r| r.change == "beyond"));
    }

    #[test]
    fn not_comparable_rows_neither_count_nor_change() {
        let mut rows = scattered("latency", 1.0, 0.25, 12);
        rows.push(row("latency", 9.0, "not comparable (A unsettled)"));
        let s = apply(&mut rows, 0.10).unwrap();
        assert_eq!(s.figures, 12);
        assert_eq!(rows[12].change, "not comparable (A unsettled)");
    }
}
