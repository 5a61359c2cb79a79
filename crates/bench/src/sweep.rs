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

/// Find plateaus: maximal runs of at least two consecutive points within ±`tol`
/// (relative) of the run's median; points between runs are transitions. Runs are
/// labelled L1, L2, … in order with the topology's caches; the last run is "memory"
/// when the sweep went beyond the largest cache.
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
    let llc = caches.iter().map(|c| c.bytes).max().unwrap_or(0);
    let last_size = points.last().map(|p| p.0).unwrap_or(0);
    let n = merged.len();
    merged
        .iter()
        .enumerate()
        .map(|(i, &(a, b))| {
            let vals: Vec<f64> = points[a..b].iter().map(|p| p.1).collect();
            // The last run is memory when the sweep went past the LLC and it starts
            // beyond the innermost cache (a noisy last point may end it early).
            let l1 = caches.first().map(|c| c.bytes).unwrap_or(0);
            let memory = i + 1 == n && n > 1 && last_size > llc && points[a].0 > l1;
            let (name, bytes) = match caches.get(i) {
                _ if memory => ("memory".to_string(), None),
                Some(c) => (format!("L{}", c.level), Some(c.bytes)),
                None => (format!("level {}", i + 1), None),
            };
            Plateau {
                from_bytes: points[a].0,
                to_bytes: points[b - 1].0,
                exceeded_at: points.get(b).map(|p| p.0),
                median_ns: median(&vals),
                values_ns: vals,
                level: name,
                topology_bytes: bytes,
            }
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
        .collect()
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
        assert_eq!(names, vec!["L1", "L2", "L3", "memory"]);
        let w = capacity_warnings(&p, &caches);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("L3"));
        // Without the L3 plateau, the missing level is said.
        let no_l3: Vec<Plateau> = p.into_iter().filter(|p| p.level != "L3").collect();
        let w = capacity_warnings(&no_l3, &caches);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("no L3 plateau"));
    }
}
