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

/// How much slower (relative) a plateau must be than the one before to be a new level.
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
/// (relative) of the run's median; points between runs are transitions; runs less
/// than [`MIN_STEP`] slower than the one before join it. Each is then matched to a
/// cache by size ([`name_levels`]).
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
    // (memory on a shared machine wanders by ±20%), so it joins it.
    let mut merged: Vec<(usize, usize)> = Vec::new();
    let med = |r: (usize, usize)| median(&points[r.0..r.1].iter().map(|p| p.1).collect::<Vec<_>>());
    for r in runs {
        if let Some(last) = merged.last_mut() {
            if med(r) < med(*last) * (1.0 + MIN_STEP) {
                last.1 = r.1;
                continue;
            }
        }
        merged.push(r);
    }
    let mut out: Vec<Plateau> = merged
        .iter()
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
        .collect();
    let last_size = points.last().map(|p| p.0).unwrap_or(0);
    name_levels(&mut out, caches, last_size);
    out
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

/// How many times slower than the slower of its two neighbours a sweep point must be
/// to be an outlier. Latency does not fall as the buffer grows (a larger buffer reaches
/// the same levels or farther ones), so a real step of the hierarchy is followed by
/// points at least as slow and is never above BOTH neighbours; 1.5× is far beyond the
/// plateau tolerance (±12%) and the ±20% a shared machine's memory latency wanders.
pub const OUTLIER_FACTOR: f64 = 1.5;

/// One size's passes as outlier detection reads them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
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
        Some(Spread {
            median_ns: numalab_results::stats::percentile(&v, 0.5),
            p95_ns: numalab_results::stats::percentile(&v, 0.95),
        })
    }
}

/// Whether point `i` of a curve is an outlier: an interior point (an end point has
/// one neighbour, and a rise at the end is a step into the next level) whose median
/// is more than [`OUTLIER_FACTOR`] × the larger neighbour's median AND above both
/// neighbours' 95th-percentile passes. The second condition keeps a spike that the
/// neighbours' own slow passes also reach (a noisy stretch of the curve, not one
/// size) from being called an outlier of that size.
pub fn is_outlier(curve: &[Spread], i: usize) -> bool {
    if i == 0 || i + 1 >= curve.len() {
        return false;
    }
    let (a, p, b) = (curve[i - 1], curve[i], curve[i + 1]);
    p.median_ns > OUTLIER_FACTOR * a.median_ns.max(b.median_ns)
        && p.median_ns > a.p95_ns.max(b.p95_ns)
}

/// The indices of a curve's outliers (see [`is_outlier`]).
pub fn outliers(curve: &[Spread]) -> Vec<usize> {
    (0..curve.len()).filter(|&i| is_outlier(curve, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(level: u32, bytes: u64) -> CacheInfo {
        CacheInfo {
            level,
            bytes,
            line_bytes: Some(64),
            shared_by: 1,
        }
    }

    #[test]
    fn sizes_cover_the_range_two_per_octave() {
        let s = sizes(4 << 10, 64 << 10);
        assert_eq!(
            s,
            vec![4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536]
        );
        assert_eq!(sizes(DEFAULT_MIN, DEFAULT_MAX).len(), 37);
        assert_eq!(sizes(5000, 5000), vec![5000]);
    }

    #[test]
    fn plateaus_of_a_synthetic_hierarchy() {
        let caches = [cache(1, 48 << 10), cache(2, 1 << 20), cache(3, 32 << 20)];
        let lat = |s: u64| -> f64 {
            if s <= 32 << 10 {
                1.0
            } else if s <= 48 << 10 {
                2.0 // transition
            } else if s <= 768 << 10 {
                3.5
            } else if s <= 1 << 20 {
                6.0
            } else if s <= 24 << 20 {
                12.0
            } else if s <= 32 << 20 {
                40.0
            } else {
                100.0
            }
        };
        let pts: Vec<(u64, f64)> = sizes(4 << 10, 1 << 30)
            .into_iter()
            .map(|s| (s, lat(s) * if s % 3 == 0 { 1.03 } else { 0.98 }))
            .collect();
        let p = plateaus(&pts, &caches, 0.1);
        let names: Vec<&str> = p.iter().map(|p| p.level.as_str()).collect();
        assert_eq!(names, vec!["L1", "L2", "L3", "memory"]);
        assert!(p.windows(2).all(|w| w[0].median_ns < w[1].median_ns));
        assert_eq!(p[0].to_bytes, 32 << 10);
        assert_eq!(p[0].exceeded_at, Some(48 << 10));
        assert_eq!(p[2].to_bytes, 24 << 20);
        assert!(capacity_warnings(&p, &caches).is_empty());
    }

    #[test]
    fn noisy_memory_and_a_split_level_stay_one_plateau_each() {
        let caches = [cache(1, 48 << 10), cache(2, 1 << 20)];
        let lat = [
            1.0, 1.0, 1.02, 3.3, 3.35, 3.4, 3.75, 3.8, 118.0, 117.0, 148.0, 149.0, 113.0, 114.0,
        ];
        let pts: Vec<(u64, f64)> = lat
            .iter()
            .enumerate()
            .map(|(i, &v)| ((4096u64) << i, v))
            .collect();
        let p = plateaus(&pts, &caches, 0.12);
        let names: Vec<&str> = p.iter().map(|p| p.level.as_str()).collect();
        assert_eq!(names, vec!["L1", "L2", "memory"], "{p:?}");
        assert_eq!(p[2].values_ns.len(), 6);
    }

    #[test]
    fn a_missing_level_leaves_memory_last_and_warns() {
        // L3 reported as 32 MiB but gone after 1 MiB (a crowded or partitioned L3).
        let caches = [cache(1, 48 << 10), cache(2, 1 << 20), cache(3, 32 << 20)];
        let pts: Vec<(u64, f64)> = sizes(4 << 10, 256 << 20)
            .into_iter()
            .map(|s| {
                let v = match s {
                    s if s <= 32 << 10 => 1.0,
                    s if s <= 512 << 10 => 4.0,
                    s if s <= 1 << 20 => 15.0,
                    _ => 150.0,
                };
                (s, v)
            })
            .collect();
        let p = plateaus(&pts, &caches, 0.1);
        let names: Vec<&str> = p.iter().map(|p| p.level.as_str()).collect();
        // The 15 ns step at 768 KiB – 1 MiB lies inside the 1 MiB L2: not the L3.
        assert_eq!(names, vec!["L1", "L2", "unmatched, within L2", "memory"]);
        let w = capacity_warnings(&p, &caches);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("no L3 plateau"), "{w:?}");
        assert!(w[1].contains("unmatched, within L2"), "{w:?}");
    }

    /// Plateau names of a synthetic sweep whose latency is `lat(size)`.
    fn names_of(caches: &[CacheInfo], max: u64, lat: impl Fn(u64) -> f64) -> Vec<String> {
        let pts: Vec<(u64, f64)> = sizes(4 << 10, max)
            .into_iter()
            .map(|s| (s, lat(s)))
            .collect();
        plateaus(&pts, caches, 0.12)
            .into_iter()
            .map(|p| p.level)
            .collect()
    }

    #[test]
    fn this_vms_sweep_names_a_step_inside_l2_unmatched_not_l3() {
        // This VM (issue 34): L1 48 KiB, L2 1 MiB, L3 32 MiB of which little is
        // usable; latency steps up at 768 KiB, still inside the L2, and again past it.
        let caches = [cache(1, 48 << 10), cache(2, 1 << 20), cache(3, 32 << 20)];
        let lat = |s: u64| match s {
            s if s <= 32 << 10 => 1.2,
            s if s <= 512 << 10 => 3.6,
            s if s <= 1 << 20 => 6.0,
            s if s <= 3 << 20 => 12.0,
            _ => 105.0,
        };
        let names = names_of(&caches, 64 << 20, lat);
        assert_eq!(names, ["L1", "L2", "unmatched, within L2", "L3", "memory"]);
        let pts: Vec<(u64, f64)> = sizes(4 << 10, 64 << 20)
            .into_iter()
            .map(|s| (s, lat(s)))
            .collect();
        let ps = plateaus(&pts, &caches, 0.12);
        assert_eq!((ps[2].from_bytes, ps[2].to_bytes), (768 << 10, 1 << 20));
        assert_eq!(ps[2].topology_bytes, None);
        let notes = unmatched_notes(&ps);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("768 KiB"), "{notes:?}");
        // The L3 plateau ends at 3 MiB of the 32 MiB reported: said.
        let w = capacity_warnings(&ps, &caches);
        assert!(
            w.iter().any(|w| w.contains("the L3 plateau ends at 3 MiB")),
            "{w:?}"
        );
        // One step inside the L2 with no faster one there is the L2 itself.
        let pts = [
            (4u64 << 10, 1.0),
            (8 << 10, 1.0),
            (768 << 10, 6.0),
            (1 << 20, 6.0),
        ];
        let names: Vec<String> = plateaus(&pts, &caches, 0.12)
            .into_iter()
            .map(|p| p.level)
            .collect();
        assert_eq!(names, ["L1", "L2"]);
    }

    #[test]
    fn no_plateau_is_named_a_level_the_topology_lacks() {
        // Two caches, four steps: never "L3" nor "level 4".
        let caches = [cache(1, 32 << 10), cache(2, 256 << 10)];
        let lat = |s: u64| match s {
            s if s <= 16 << 10 => 1.0,
            s if s <= 128 << 10 => 3.0,
            s if s <= 256 << 10 => 5.0,
            s if s <= 64 << 20 => 80.0,
            _ => 120.0,
        };
        let names = names_of(&caches, 256 << 20, lat);
        assert_eq!(
            names,
            [
                "L1",
                "L2",
                "unmatched, within L2",
                "memory",
                "unmatched, beyond memory"
            ]
        );
        let pts: Vec<(u64, f64)> = sizes(4 << 10, 256 << 20)
            .into_iter()
            .map(|s| (s, lat(s)))
            .collect();
        let notes = unmatched_notes(&plateaus(&pts, &caches, 0.12));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("within L2") && notes[1].contains("beyond memory"),
            "{notes:?}"
        );
    }

    #[test]
    fn a_level_that_starts_early_takes_the_next_cache() {
        // The L3 plateau begins before the L2's size (a non-inclusive or shared L2)
        // and runs far past it: it is L3, not a second L2 step.
        let caches = [cache(1, 32 << 10), cache(2, 1 << 20), cache(3, 16 << 20)];
        let names = names_of(&caches, 256 << 20, |s| match s {
            s if s <= 16 << 10 => 1.0,
            s if s <= 256 << 10 => 4.0,
            s if s <= 8 << 20 => 14.0,
            _ => 95.0,
        });
        assert_eq!(names, ["L1", "L2", "L3", "memory"]);
    }

    fn curve(medians: &[f64]) -> Vec<Spread> {
        medians
            .iter()
            .map(|&m| Spread {
                median_ns: m,
                p95_ns: m * 1.1,
            })
            .collect()
    }

    #[test]
    fn a_spike_is_an_outlier_a_step_and_an_end_are_not() {
        // A lone spike among memory-latency points.
        let spike = curve(&[88.0, 90.0, 195.0, 91.0, 89.0]);
        assert_eq!(outliers(&spike), vec![2]);
        // A step (L2 to memory) stays up: never above both neighbours.
        let step = curve(&[1.7, 1.8, 4.8, 4.9, 12.0, 90.0, 92.0]);
        assert!(outliers(&step).is_empty());
        // A high end point has one neighbour: a step into the next level, not a spike.
        let end = curve(&[4.8, 4.9, 5.0, 90.0]);
        assert!(outliers(&end).is_empty());
        let start = curve(&[90.0, 4.9, 5.0]);
        assert!(outliers(&start).is_empty());
        // Only 1.3× above its neighbours: noise, not an outlier.
        assert!(outliers(&curve(&[90.0, 117.0, 90.0])).is_empty());
        // Twice the neighbours' medians, but a neighbour's own slow passes reach as
        // high: a noisy stretch, not this size's accident.
        let mut noisy = curve(&[90.0, 190.0, 91.0]);
        noisy[0].p95_ns = 200.0;
        assert!(outliers(&noisy).is_empty());
        assert!(outliers(&curve(&[1.0])).is_empty() && outliers(&[]).is_empty());
    }

    #[test]
    fn spread_of_passes() {
        let s = Spread::of(&[3.0, 1.0, 2.0, f64::NAN]).unwrap();
        assert_eq!(s.median_ns, 2.0);
        assert!(s.p95_ns > 2.8 && s.p95_ns <= 3.0);
        assert!(Spread::of(&[]).is_none());
    }
}
