//! How far apart two CPUs were while a figure that needs both was measured: a short
//! CAS ping-pong round trip between them (the least of a few samples), recorded in the
//! record's `placement.distance` beside every step whose figure depends on two CPUs
//! (a line held by a helper CPU, c2c, invalidate, intervene, a bandwidth kernel or mix
//! streamed by several CPUs at once).
//!
//! On a VM the two vCPUs are placed on host cores anew between runs: once they are two
//! threads of one host core, once two cores of one L3, once two L3s apart. A line held
//! by the other vCPU then costs 10 ns in one run and 40 ns in the next, though nothing
//! about the machine the user rents changed. So `compare` calls such a figure "not
//! comparable" when the two CPUs were not the same distance apart in both runs, and
//! names the two distances, instead of "beyond".

use crate::record::Record;
use serde::{Deserialize, Serialize};

/// The key under a record's `placement` that holds its distances.
pub const PLACEMENT_KEY: &str = "distance";

/// One pair of CPUs and how far apart they were.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuDistance {
    /// The two CPUs (OS numbers): the requestor first, then the helper or owner.
    pub cpus: [u32; 2],
    /// The least round trip of the samples, ns (one CAS there and back).
    pub rtt_ns: f64,
    /// Samples the least is of.
    pub samples: usize,
    /// Round trips per sample.
    pub round_trips: u64,
}

/// How far two distances may differ and still count as the same placement.
///
/// A host's core-to-core round trips come in classes well apart: two threads of one
/// core, two cores of one L3, two L3s or dies, two sockets, each class at least about
/// 1.5× the one below (e.g. 20, 60, 150, 350 ns). The least of a few samples of the
/// same pair repeats within a few percent on a quiet host and within about 15 % on a
/// busy one (a sample shorter than the true round trip cannot happen, a longer one is
/// dropped by the minimum). So a ratio over 1.3 means the vCPUs sat in another class,
/// and one under it does not; the absolute floor keeps a few ns of timer resolution on
/// short round trips from reading as a move.
pub const RATIO: f64 = 1.3;

/// The least difference in ns that counts as a move, whatever the ratio.
pub const FLOOR_NS: f64 = 10.0;

/// Metrics of records with distances that do not depend on the pair being placed
/// alike: the own-cache and unowned references involve the requestor alone. (c2c's CAS
/// round trip is not here: it is itself a distance, and on a VM it moved 26 → 94 ns
/// between two back-to-back quick surveys with the vCPUs on other host cores; when
/// the probe saw the pair move, its change is named with both distances, not called
/// beyond.)
pub const UNAFFECTED: &[&str] = &["own_cache_reference", "uown_rdex_latency"];

/// The key under a record's `placement` that holds the same pairs probed after the
/// step's passes (a pair that moved between the two probes left the figure unsettled).
pub const AFTER_KEY: &str = "distance_after";

/// Put the distances on the record's placement (made an object when it had none).
pub fn attach(r: &mut Record, d: &[CpuDistance]) {
    attach_at(r, PLACEMENT_KEY, d);
}

/// Put the distances probed after the step's passes on the record's placement.
pub fn attach_after(r: &mut Record, d: &[CpuDistance]) {
    attach_at(r, AFTER_KEY, d);
}

fn attach_at(r: &mut Record, key: &str, d: &[CpuDistance]) {
    if d.is_empty() {
        return;
    }
    let p = r
        .placement
        .get_or_insert_with(|| serde_json::Value::Object(Default::default()));
    if let Some(o) = p.as_object_mut() {
        o.insert(
            key.into(),
            serde_json::to_value(d).expect("distances serialise"),
        );
    }
}

/// The record's distances (empty when it has none: one CPU, or made before they were
/// recorded).
pub fn of(r: &Record) -> Vec<CpuDistance> {
    read_at(r, PLACEMENT_KEY)
}

/// The record's distances probed after its passes (empty when it has none).
pub fn after(r: &Record) -> Vec<CpuDistance> {
    read_at(r, AFTER_KEY)
}

fn read_at(r: &Record, key: &str) -> Vec<CpuDistance> {
    r.placement
        .as_ref()
        .and_then(|p| p.get(key))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// Of pairs of distances, the two that differ ([`differ`]) by the largest factor.
fn most_moved<'a>(
    pairs: impl Iterator<Item = (&'a CpuDistance, &'a CpuDistance)>,
) -> Option<(&'a CpuDistance, &'a CpuDistance)> {
    pairs
        .filter(|(x, y)| differ(x.rtt_ns, y.rtt_ns))
        .max_by(|(x, y), (u, v)| {
            let r = |p: f64, q: f64| (p.max(q) / p.min(q)).ln();
            r(x.rtt_ns, y.rtt_ns).total_cmp(&r(u.rtt_ns, v.rtt_ns))
        })
}

/// Whether two distances of one pair differ beyond [`RATIO`] and [`FLOOR_NS`].
pub fn differ(a: f64, b: f64) -> bool {
    let (lo, hi) = (a.min(b), a.max(b));
    if !(lo.is_finite() && hi.is_finite()) || lo <= 0.0 {
        return false;
    }
    hi - lo > FLOOR_NS && hi / lo > RATIO
}

/// Whether a round trip a step measured (`figure_rtt`) reads slower than the pair's
/// probe (`probe_rtt`, the least of its samples) by more than [`RATIO`] and
/// [`FLOOR_NS`]: the two time the same CAS round trip, so the step ran while the pair
/// was slower than the probe found it.
pub fn above_probe(figure_rtt: f64, probe_rtt: f64) -> bool {
    figure_rtt > probe_rtt && differ(figure_rtt, probe_rtt)
}

/// Why the figure measured between two probes of the same pairs cannot stand for one
/// placement, or None: the pair (matched by CPUs) whose distance before the step's
/// passes and after them differ most, beyond [`RATIO`] and [`FLOOR_NS`]. A hypervisor
/// that moves a vCPU mid-step gives passes from two placements that settle narrow on
/// neither, and the next run compares against whichever the passes mostly saw.
pub fn moved_during(before: &[CpuDistance], after: &[CpuDistance]) -> Option<String> {
    let pairs = before
        .iter()
        .filter_map(|x| after.iter().find(|y| y.cpus == x.cpus).map(|y| (x, y)));
    most_moved(pairs).map(|(x, y)| {
            format!(
                "CPUs {} and {} moved during the step: {:.0} ns apart before its passes, {:.0} ns after (the hypervisor placed the vCPUs elsewhere meanwhile)",
                x.cpus[0], x.cpus[1], x.rtt_ns, y.rtt_ns
            )
        })
}

/// Why `metric` of records `a` and `b` cannot be compared for their CPUs' distances,
/// or None: "the two CPUs (0, 1) were 42 ns apart in A, 118 ns in B" for the pair
/// (matched by position) that moved most. Records without distances on either side
/// are left to the other rules.
pub fn moved(a: &Record, b: &Record, metric: &str) -> Option<String> {
    if UNAFFECTED.contains(&metric) {
        return None;
    }
    // Probes before the passes, then those after them (runs that have them).
    let (da, db) = (of(a), of(b));
    let (aa, ab) = (after(a), after(b));
    most_moved(da.iter().zip(&db).chain(aa.iter().zip(&ab))).map(|(x, y)| {
        let cpus = if x.cpus == y.cpus {
            format!("the two CPUs ({}, {})", x.cpus[0], x.cpus[1])
        } else {
            format!(
                "the two CPUs (A: {}, {}; B: {}, {})",
                x.cpus[0], x.cpus[1], y.cpus[0], y.cpus[1]
            )
        };
        format!(
            "{cpus} were {:.0} ns apart in A, {:.0} ns in B",
            x.rtt_ns, y.rtt_ns
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::Provenance;
    use serde_json::json;

    fn rec(rtt: &[f64]) -> Record {
        let mut r = Record::new("latency", "x", Provenance::collect("t", "none"), json!({}));
        let d: Vec<CpuDistance> = rtt
            .iter()
            .enumerate()
            .map(|(i, &x)| CpuDistance {
                cpus: [0, 1 + i as u32],
                rtt_ns: x,
                samples: 7,
                round_trips: 100,
            })
            .collect();
        attach(&mut r, &d);
        r
    }

    #[test]
    fn distances_ride_on_the_placement_and_read_back() {
        let mut r = rec(&[]);
        assert!(r.placement.is_none() && of(&r).is_empty());
        r.placement = Some(json!({ "resolved": { "requestor_cpu": 0 } }));
        attach(
            &mut r,
            &[CpuDistance {
                cpus: [0, 1],
                rtt_ns: 50.0,
                samples: 7,
                round_trips: 100,
            }],
        );
        let p = r.placement.as_ref().unwrap();
        assert_eq!(p["resolved"]["requestor_cpu"], 0, "{p}");
        assert_eq!(p[PLACEMENT_KEY][0]["cpus"], json!([0, 1]));
        assert_eq!(of(&r)[0].rtt_ns, 50.0);
    }

    #[test]
    fn a_pair_in_another_class_is_named_with_both_distances() {
        let (a, b) = (rec(&[40.0]), rec(&[120.0]));
        assert_eq!(
            moved(&a, &b, "latency").as_deref(),
            Some("the two CPUs (0, 1) were 40 ns apart in A, 120 ns in B")
        );
        // The same either way round.
        assert!(moved(&b, &a, "latency")
            .unwrap()
            .contains("120 ns apart in A"));
    }

    #[test]
    fn the_same_class_a_few_ns_or_no_distance_leave_the_figure_comparable() {
        // 20 % more: the same class.
        assert_eq!(moved(&rec(&[100.0]), &rec(&[120.0]), "latency"), None);
        // 2× of a few ns: timer resolution, not a move.
        assert_eq!(moved(&rec(&[6.0]), &rec(&[12.0]), "latency"), None);
        // One side without distances (an older run): other rules decide.
        assert_eq!(moved(&rec(&[40.0]), &rec(&[]), "latency"), None);
        // A figure of the requestor alone does not depend on the pair.
        assert_eq!(
            moved(&rec(&[40.0]), &rec(&[120.0]), "own_cache_reference"),
            None
        );
        // c2c's round trip does: it is the pair's distance itself.
        assert!(moved(&rec(&[40.0]), &rec(&[120.0]), "cas_rtt_half").is_some());
        assert!(!differ(f64::NAN, 50.0) && !differ(0.0, 50.0));
    }

    #[test]
    fn a_pair_probed_in_another_class_after_the_passes_moved_during_them() {
        let d = |b: u32, rtt: f64| CpuDistance {
            cpus: [0, b],
            rtt_ns: rtt,
            samples: 9,
            round_trips: 100,
        };
        let why = moved_during(&[d(1, 48.0), d(2, 50.0)], &[d(1, 50.0), d(2, 140.0)]).unwrap();
        assert!(
            why.contains("CPUs 0 and 2") && why.contains("50 ns apart before"),
            "{why}"
        );
        assert!(why.contains("140 ns after"), "{why}");
        // The same class, a few ns, or a pair probed only once: not a move.
        assert_eq!(moved_during(&[d(1, 48.0)], &[d(1, 58.0)]), None);
        assert_eq!(moved_during(&[d(1, 6.0)], &[d(1, 14.0)]), None);
        assert_eq!(moved_during(&[d(1, 48.0)], &[d(2, 140.0)]), None);
        assert_eq!(moved_during(&[], &[]), None);
    }

    #[test]
    fn pairs_alike_before_the_passes_but_apart_after_them_are_a_move() {
        let (mut a, mut b) = (rec(&[40.0]), rec(&[42.0]));
        assert_eq!(moved(&a, &b, "latency"), None);
        let d = |rtt: f64| CpuDistance {
            cpus: [0, 1],
            rtt_ns: rtt,
            samples: 9,
            round_trips: 100,
        };
        attach_after(&mut a, &[d(41.0)]);
        attach_after(&mut b, &[d(130.0)]);
        assert_eq!(after(&b)[0].rtt_ns, 130.0);
        assert_eq!(
            moved(&a, &b, "latency").as_deref(),
            Some("the two CPUs (0, 1) were 41 ns apart in A, 130 ns in B")
        );
    }

    #[test]
    fn of_several_pairs_the_one_that_moved_most_is_named() {
        let (a, b) = (rec(&[40.0, 100.0]), rec(&[60.0, 400.0]));
        let why = moved(&a, &b, "rdex_latency").unwrap();
        assert!(
            why.contains("(0, 2) were 100 ns apart in A, 400 ns in B"),
            "{why}"
        );
    }
}
