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
            p5_ns: m * 0.9,
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

#[test]
fn a_dip_below_both_neighbours_is_an_outlier_like_a_spike() {
    // A lone fast point among memory-latency points is re-measured too.
    assert_eq!(outliers(&curve(&[88.0, 90.0, 40.0, 91.0, 89.0])), vec![2]);
    // A step down is not a single point: neither side of it is below both neighbours.
    assert!(outliers(&curve(&[179.0, 175.0, 186.0, 101.0, 97.0, 96.0])).is_empty());
    // Only 1.3× below: noise.
    assert!(outliers(&curve(&[90.0, 70.0, 90.0])).is_empty());
    // A neighbour's own fast passes reach as low: a noisy stretch.
    let mut noisy = curve(&[90.0, 40.0, 91.0]);
    noisy[2].p5_ns = 35.0;
    assert!(outliers(&noisy).is_empty());
}

#[test]
fn the_issues_minima_over_8_to_64_mib_are_not_one_plateau_and_none_passes_its_cache() {
    let caches = [cache(1, 32 << 10), cache(2, 1 << 20), cache(3, 32 << 20)];
    let mut pts: Vec<(u64, f64)> = vec![
        (4 << 10, 1.1),
        (8 << 10, 1.1),
        (16 << 10, 1.1),
        (64 << 10, 3.8),
        (128 << 10, 3.8),
        (256 << 10, 3.9),
        (2 << 20, 11.0),
        (3 << 20, 11.5),
        (4 << 20, 11.8),
    ];
    let mib = 1u64 << 20;
    for (m, ns) in [
        (8, 179.0),
        (12, 175.0),
        (16, 186.0),
        (24, 101.0),
        (32, 97.0),
        (48, 96.0),
        (64, 96.0),
    ] {
        pts.push((m * mib, ns));
    }
    let ps = plateaus(&pts, &caches, 0.12);
    // No plateau mixes the 175–186 ns minima with the 96–101 ns ones.
    for p in &ps {
        let (lo, hi) = p
            .values_ns
            .iter()
            .fold((f64::MAX, 0.0f64), |(l, h), v| (l.min(*v), h.max(*v)));
        assert!(hi <= lo * 1.3, "{p:?}");
    }
    assert!(
        !ps.iter()
            .any(|p| p.from_bytes == 8 * mib && p.to_bytes == 64 * mib),
        "{ps:?}"
    );
    // No plateau named after (or within) a cache reaches past that cache.
    for p in ps.iter().filter(|p| p.level != "memory") {
        let n: u32 = p.level.rsplit('L').next().unwrap().parse().unwrap();
        let bytes = caches.iter().find(|c| c.level == n).unwrap().bytes;
        assert!(p.to_bytes <= bytes, "{p:?}");
    }
}

#[test]
fn a_plateau_reaching_past_its_cache_is_cut_at_the_cache() {
    // An L2 of 256 KiB whose flat latency runs on to 1 MiB (a crowded L3 adding no
    // step): the L2 plateau ends at 256 KiB, what follows is another plateau.
    let caches = [cache(1, 32 << 10), cache(2, 256 << 10), cache(3, 8 << 20)];
    let lat = |s: u64| {
        if s <= 32 << 10 {
            1.0
        } else if s <= 1 << 20 {
            4.0
        } else {
            90.0
        }
    };
    let pts: Vec<(u64, f64)> = sizes(4 << 10, 64 << 20)
        .into_iter()
        .map(|s| (s, lat(s)))
        .collect();
    let ps = plateaus(&pts, &caches, 0.12);
    let l2 = ps.iter().find(|p| p.level == "L2").unwrap();
    assert_eq!(l2.to_bytes, 256 << 10, "{ps:?}");
    assert!(ps.iter().any(|p| p.from_bytes == 384 << 10), "{ps:?}");
}
