//! Loaded-latency points whose injected bandwidth the injector's spin loop set. A
//! loaded point's delay is spin-loop iterations after each injected line (MLC's
//! pacing), so where the injector waits mostly on its own loop, not on memory, its
//! bandwidth is how fast that CPU spins: on a 2-vCPU guest whose vCPUs are SMT
//! siblings of one host core, two back-to-back quiet surveys read delay 5000 at 0.036
//! then 0.079 GB/s and delay 1000 at 0.19 then 0.40 GB/s, while every latency of the
//! curve held. That is the x of the curve moving with the CPU's speed, not memory.
//!
//! The rule: a point's `injected_bandwidth` is "not comparable (paced by …)" when, in
//! either run, it reads under [`PACED_SHARE`] of the same curve's unthrottled point
//! (delay 0: the same memory, CPUs, mix and injectors). Either, not both: a point's
//! share of its own run's saturation does not move when memory does (both move
//! together), so a point paced by the memory in one run and by the spin loop in the
//! other moved with the CPU's speed. Two quiet back-to-back surveys read 50 % writes,
//! delay 10 at 13.3 GB/s (55 % of its saturation) then 5.9 GB/s (28 %), and 0 % writes,
//! delay 10 at 4.0 then 8.5 GB/s. Its latency is still compared, and so is the
//! unthrottled point's bandwidth (the curve's saturation).

use super::Row;
use crate::record::Record;
use serde_json::Value;

/// Below this share of the unthrottled point's bandwidth a point is paced by its spin
/// loop: its injector spends over half of each line's time in the delay, so its rate
/// follows the CPU's speed more than the memory's.
pub const PACED_SHARE: f64 = 0.5;

/// The metric the rule applies to.
const METRIC: &str = "injected_bandwidth";

/// The curve a loaded point is on (its parameters but the delay), and its delay.
fn curve_of(r: &Record) -> Option<(Value, u64)> {
    let delay = r.parameters.get("delay")?.as_u64()?;
    let mut rest = r.parameters.as_object()?.clone();
    rest.remove("delay");
    Some((Value::Object(rest), delay))
}

/// The share of the curve's unthrottled bandwidth the point named `name` read in
/// `recs`, with its delay; None when either is missing or it is unthrottled itself.
fn share(recs: &[Record], name: &str) -> Option<(f64, u64)> {
    let loaded = |r: &&Record| r.kind == "loaded-latency";
    let point = recs.iter().filter(loaded).find(|r| r.name == name)?;
    let (curve, delay) = curve_of(point)?;
    if delay == 0 {
        return None;
    }
    let top = recs
        .iter()
        .filter(loaded)
        .find(|r| curve_of(r).is_some_and(|(c, d)| d == 0 && c == curve))?;
    let full = top.median(METRIC).filter(|v| *v > 0.0)?;
    Some((point.median(METRIC)? / full, delay))
}

/// Mark the paced points' injected bandwidth as not comparable.
pub fn apply(rows: &mut [Row], a: &[Record], b: &[Record]) {
    for r in rows
        .iter_mut()
        .filter(|r| r.kind == "loaded-latency" && r.metric == METRIC)
        .filter(|r| !r.change.starts_with("not comparable"))
    {
        let (Some((sa, delay)), Some((sb, _))) = (share(a, &r.name), share(b, &r.name)) else {
            continue;
        };
        if sa < PACED_SHARE || sb < PACED_SHARE {
            r.change = format!(
                "not comparable (paced by the injector's spin loop: delay {delay} read {:.0} % and {:.0} % of the unthrottled bandwidth in A and B, so its rate is the CPU's speed)",
                sa * 100.0,
                sb * 100.0
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::compare::compare;
    use crate::provenance::Provenance;
    use crate::record::Record;
    use serde_json::json;

    fn point(delay: u64, gbps: f64, ns: f64) -> Record {
        let mut r = Record::new(
            "loaded-latency",
            &format!("0% writes, delay {delay}"),
            Provenance::collect("t", "none"),
            json!({"delay": delay, "mix": "1:0", "write_pct": 0, "injectors": 1, "mem_node": "0", "requestor_cpu": 0}),
        );
        let s = |v: f64| [v * 0.99, v, v * 1.01, v, v];
        r.add_samples("injected_bandwidth", "GB/s", &s(gbps));
        r.add_samples("latency", "ns", &s(ns));
        r
    }

    fn change(rows: &[super::Row], name: &str, metric: &str) -> String {
        let r = rows.iter().find(|r| r.name == name && r.metric == metric);
        r.unwrap().change.clone()
    }

    #[test]
    fn a_spin_paced_points_bandwidth_is_not_comparable_and_its_latency_still_is() {
        let a = [
            point(0, 9.0, 150.0),
            point(5000, 0.036, 153.0),
            point(10, 7.5, 152.0),
        ];
        let b = [
            point(0, 9.3, 151.0),
            point(5000, 0.079, 153.5),
            point(10, 4.8, 152.0),
        ];
        let c = compare(&a, &b, false);
        let paced = change(&c.rows, "0% writes, delay 5000", "injected_bandwidth");
        assert!(
            paced.starts_with(
                "not comparable (paced by the injector's spin loop: delay 5000 read 0 % and 1 %"
            ),
            "{paced}"
        );
        assert_eq!(
            change(&c.rows, "0% writes, delay 5000", "latency"),
            "within"
        );
        // Near the unthrottled rate in both (83 % and 52 %): memory paced it, so it is
        // judged.
        assert_eq!(
            change(&c.rows, "0% writes, delay 10", "injected_bandwidth"),
            "beyond"
        );
        // Paced by memory in A (83 %), by the spin loop in B (44 %): the CPU's speed.
        let c = compare(
            &a,
            &[b[0].clone(), b[1].clone(), point(10, 4.1, 152.0)],
            false,
        );
        let half = change(&c.rows, "0% writes, delay 10", "injected_bandwidth");
        assert!(
            half.starts_with(
                "not comparable (paced by the injector's spin loop: delay 10 read 83 % and 44 %"
            ),
            "{half}"
        );
        // The unthrottled point is the curve's saturation: always judged.
        assert_eq!(
            change(&c.rows, "0% writes, delay 0", "injected_bandwidth"),
            "within"
        );
    }
}
