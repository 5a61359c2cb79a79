//! The memory-hierarchy sweep (lmbench / Saavedra): latency against buffer size,
//! with plateaus found in the curve and matched to the caches the topology reports.

use numalab_topo::CacheInfo;
use serde::{Deserialize, Serialize};

/// Default smallest and largest sweep sizes.
pub const DEFAULT_MIN: u64 = 4 << 10;
/// See [`DEFAULT_MIN`].
pub const DEFAULT_MAX: u64 = 1 << 30;

/// Sizes from `min` to `max`: every power of two and the point halfway (×1.5)
/// between, rounded to 4 KiB, so each octave has two points.
pub fn sizes(min: u64, max: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut p = 4096u64;
    while p <= max {
        for s in [p, p + p / 2] {
            if s >= min && s <= max {
                out.push(s);
            }
        }
        p *= 2;
    }
    if out.is_empty() || (*out.first().unwrap() != min && min >= 4096) {
        out.insert(0, min);
    }
    if *out.last().unwrap() != max {
        out.push(max);
    }
    out.dedup();
    out
}

/// How much slower (relative) a plateau must be than the one before to be a new level;
/// a run this much faster than the one before is not joined to it either.
pub const MIN_STEP: f64 = 0.3;

/// A run of sizes whose latencies agree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plateau {
    /// Smallest size in the run.
    pub from_bytes: u64,
    /// Largest size in the run: what the level holds at least.
    pub to_bytes: u64,
    /// First larger size measured, if any (the level holds less than this).
    pub exceeded_at: Option<u64>,
    /// Median latency of the run.
    pub median_ns: f64,
    /// Latencies in the run.
    pub values_ns: Vec<f64>,
    /// What it is: "L1", "L2", ... from the topology, or "memory" for the last.
    pub level: String,
    /// The topology's size for that cache level.
    pub topology_bytes: Option<u64>,
}

fn median(v: &[f64]) -> f64 {
    numalab_results::stats::median(v).unwrap_or(f64::NAN)
}

/// What a plateau that no cache level explains is called: `UNMATCHED` and where it lies.
pub const UNMATCHED: &str = "unmatched";

/// Find plateaus: maximal runs of at least two consecutive points within ±`tol`
/// (relative) of the run's median; points between runs are transitions; a run within
/// [`MIN_STEP`] of the one before (slower or faster) joins it. Each is then matched to
/// a cache by size ([`name_levels`]), and one reaching past that cache is cut at the
/// cache's size.
pub fn plateaus(points: &[(u64, f64)], caches: &[CacheInfo], tol: f64) -> Vec<Plateau> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let mut j = i + 1;
        while j < points.len() {
            let m = median(&points[i..=j].iter().map(|p| p.1).collect::<Vec<_>>());
            if points[i..=j].iter().all(|p| (p.1 - m).abs() <= tol * m) {
                j += 1;
            } else {
                break;
            }
        }
        if j - i >= 2 {
            runs.push((i, j));
            i = j;
        } else {
            i += 1;
        }
    }
    // A new level is markedly slower than the one before it: a run that is not at
    // least MIN_STEP slower than its predecessor is the same level split by noise
    // (memory on a shared machine wanders by ±20%), so it joins it. The same holds
    // downwards: a run FASTER than its predecessor by MIN_STEP or more is not noise
    // of one level (latency does not fall as the buffer grows), so one of the two is
    // disturbed; they stay apart (and the plausibility rules flag the inversion)
    // rather than make one plateau of values twice apart.
    let mut merged: Vec<(usize, usize)> = Vec::new();
    let med = |r: (usize, usize)| median(&points[r.0..r.1].iter().map(|p| p.1).collect::<Vec<_>>());
    for r in runs {
        if let Some(last) = merged.last_mut() {
            let (m, l) = (med(r), med(*last));
            if m < l * (1.0 + MIN_STEP) && m > l * (1.0 - MIN_STEP) {
                last.1 = r.1;
                continue;
            }
        }
        merged.push(r);
    }
    let last_size = points.last().map(|p| p.0).unwrap_or(0);
    // Name, then cut every plateau that reaches past the cache it is named after (or
    // lies within) at that cache's size, and name again: a buffer larger than a cache
    // is not served by it alone. Each cut adds a run, so this ends.
    loop {
        let mut out = build(points, &merged);
        name_levels(&mut out, caches, last_size);
        match cut_at_cache(points, &merged, &out, caches) {
            Some(runs) => merged = runs,
            None => return out,
        }
    }
}

/// The cache size a plateau's name bounds it by: its own level's, or the level it
/// lies within ("unmatched, within L3"); None for memory and beyond.
fn bound(p: &Plateau, caches: &[CacheInfo]) -> Option<u64> {
    if p.level == "memory" || p.level.contains("beyond") {
        return None;
    }
    let n: u32 = p.level.rsplit('L').next()?.parse().ok()?;
    p.topology_bytes
        .or_else(|| caches.iter().find(|c| c.level == n).map(|c| c.bytes))
}

/// The runs with the first plateau that reaches past its cache cut at the cache's
/// size (parts of one point are transitions); None when every plateau fits.
fn cut_at_cache(
    points: &[(u64, f64)],
    runs: &[(usize, usize)],
    ps: &[Plateau],
    caches: &[CacheInfo],
) -> Option<Vec<(usize, usize)>> {
    let k = ps
        .iter()
        .position(|p| bound(p, caches).is_some_and(|b| p.to_bytes > b))?;
    let b = bound(&ps[k], caches)?;
    let (a, e) = runs[k];
    let cut = (a..e).find(|&i| points[i].0 > b)?;
    let mut out = runs.to_vec();
    let parts: Vec<(usize, usize)> = [(a, cut), (cut, e)]
        .into_iter()
        .filter(|(x, y)| y - x >= 2)
        .collect();
    out.splice(k..=k, parts);
    Some(out)
}

/// Plateaus of `runs` (index ranges of `points`), not yet named.
fn build(points: &[(u64, f64)], runs: &[(usize, usize)]) -> Vec<Plateau> {
    runs.iter()
        .map(|&(a, b)| {
            let vals: Vec<f64> = points[a..b].iter().map(|p| p.1).collect();
            Plateau {
                from_bytes: points[a].0,
                to_bytes: points[b - 1].0,
                exceeded_at: points.get(b).map(|p| p.0),
                median_ns: median(&vals),
                values_ns: vals,
                level: String::new(),
                topology_bytes: None,
            }
        })
        .collect()
}

/// Match plateaus (fastest first, each a latency step above the one before) to the
/// caches by size: a plateau belongs to the innermost cache that holds its first
/// size, or, when that cache already has a faster plateau, to the next cache its
/// last size reaches. Each cache takes one plateau, its fastest: a second step
/// inside one cache (a TLB's reach, a crowded set) is "unmatched, within Ln", never
/// a level the topology lacks. Memory is the first plateau past the largest cache, or
/// the last when the sweep went past it (a crowded shared cache ends early); a step
/// after memory is "unmatched, beyond memory".
pub fn name_levels(ps: &mut [Plateau], caches: &[CacheInfo], last_size: u64) {
    let mut caches: Vec<&CacheInfo> = caches.iter().collect();
    caches.sort_by_key(|c| c.bytes);
    let llc = caches.last().map(|c| c.bytes).unwrap_or(0);
    let l1 = caches.first().map(|c| c.bytes).unwrap_or(0);
    let n = ps.len();
    let mut taken = vec![false; caches.len()];
    let mut memory = false;
    for (i, p) in ps.iter_mut().enumerate() {
        let home = caches.iter().position(|c| c.bytes >= p.from_bytes);
        let last_is_memory = i + 1 == n && n > 1 && last_size > llc && p.from_bytes > l1;
        if home.is_none() || last_is_memory {
            p.level = if memory {
                format!("{UNMATCHED}, beyond memory")
            } else {
                "memory".into()
            };
            memory = true;
            continue;
        }
        let home = home.unwrap_or(0);
        // Taken by a faster plateau: the next free cache this plateau's sizes reach.
        let free = (home..caches.len())
            .find(|&c| !taken[c] && (c == home || caches[c - 1].bytes < p.to_bytes));
        match free {
            Some(c) => {
                taken[c] = true;
                p.level = format!("L{}", caches[c].level);
                p.topology_bytes = Some(caches[c].bytes);
            }
            None => p.level = format!("{UNMATCHED}, within L{}", caches[home].level),
        }
    }
}

/// One sentence for each plateau no cache level explains.
pub fn unmatched_notes(ps: &[Plateau]) -> Vec<String> {
    ps.iter()
        .filter(|p| p.level.starts_with(UNMATCHED))
        .map(|p| {
            format!(
                "the plateau at {} – {} ({:.1} ns) is {}: it is a step slower than the plateau before it, yet no further cache level holds those sizes (a TLB's reach, or a share of a cache other tenants crowd, can add such a step)",
                numalab_topo::fmt_bytes(p.from_bytes),
                numalab_topo::fmt_bytes(p.to_bytes),
                p.median_ns,
                p.level
            )
        })
        .collect()
}

/// Plateaus whose level ends far earlier than the topology says (e.g. a VM whose
/// share of a shared L3 is partitioned or crowded), and cache levels with no plateau
/// at all: one sentence each.
pub fn capacity_warnings(ps: &[Plateau], caches: &[CacheInfo]) -> Vec<String> {
    let missing = caches.iter().filter_map(|c| {
        let name = format!("L{}", c.level);
        (!ps.iter().any(|p| p.level == name)).then(|| {
            format!(
                "no {name} plateau was observed though the topology reports {} of {name}: latency went from the level below straight to a slower one, so this run may have had no usable share of that cache",
                numalab_topo::fmt_bytes(c.bytes)
            )
        })
    });
    ps.iter()
        .filter_map(|p| {
            let (t, ex) = (p.topology_bytes?, p.exceeded_at?);
            (ex * 4 <= t).then(|| {
                format!(
                    "the {} plateau ends at {} (latency rises at {}), though the topology reports {} of {}: this run could use a much smaller share of that cache (partitioned, shared with other tenants or cores, or not inclusive of what it holds)",
                    p.level,
                    numalab_topo::fmt_bytes(p.to_bytes),
                    numalab_topo::fmt_bytes(ex),
                    numalab_topo::fmt_bytes(t),
                    p.level
                )
            })
        })
        .chain(missing)
        .chain(unmatched_notes(ps))
        .collect()
}

/// How many times slower than the slower of its two neighbours (or faster than the
/// faster) a sweep point must be to be an outlier. Latency does not fall as the buffer
/// grows (a larger buffer reaches the same levels or farther ones), so a real step of
/// the hierarchy is followed by points at least as slow and is never above BOTH
/// neighbours, nor below both; 1.5× is far beyond the plateau tolerance (±12%) and the
/// ±20% a shared machine's memory latency wanders.
pub const OUTLIER_FACTOR: f64 = 1.5;

/// One size's passes as outlier detection reads them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// 5th-percentile pass, ns.
    pub p5_ns: f64,
    /// Median pass, ns.
    pub median_ns: f64,
    /// 95th-percentile pass, ns.
    pub p95_ns: f64,
}

impl Spread {
    /// The spread of a size's passes (None when there are none).
    pub fn of(ns: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = ns.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let q = |p| numalab_results::stats::percentile(&v, p);
        Some(Spread {
            p5_ns: q(0.05),
            median_ns: q(0.5),
            p95_ns: q(0.95),
        })
    }
}

/// Whether point `i` of a curve is an outlier: an interior point (an end point has
/// one neighbour, and a rise at the end is a step into the next level) whose median
/// is more than [`OUTLIER_FACTOR`] × the slower neighbour's median AND above both
/// neighbours' 95th-percentile passes, or, alike, less than the faster neighbour's
/// median / [`OUTLIER_FACTOR`] AND below both neighbours' 5th-percentile passes (a
/// fast outlier is as wrong as a slow one). The second condition keeps a spike or dip
/// that the neighbours' own passes also reach (a noisy stretch of the curve, not one
/// size) from being called an outlier of that size.
pub fn is_outlier(curve: &[Spread], i: usize) -> bool {
    if i == 0 || i + 1 >= curve.len() {
        return false;
    }
    let (a, p, b) = (curve[i - 1], curve[i], curve[i + 1]);
    let slow = p.median_ns > OUTLIER_FACTOR * a.median_ns.max(b.median_ns)
        && p.median_ns > a.p95_ns.max(b.p95_ns);
    let fast = p.median_ns * OUTLIER_FACTOR < a.median_ns.min(b.median_ns)
        && p.median_ns < a.p5_ns.min(b.p5_ns);
    slow || fast
}

/// The indices of a curve's outliers (see [`is_outlier`]).
pub fn outliers(curve: &[Spread]) -> Vec<usize> {
    (0..curve.len()).filter(|&i| is_outlier(curve, i)).collect()
}

#[cfg(test)]
mod tests;
