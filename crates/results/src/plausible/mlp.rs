//! Memory-level parallelism rule: G independent pointer chains cannot take less time per
//! access than one chain over the same memory divided by the accesses that can be in
//! flight at once (EARTH's MLP part, `suite-earth` records with `part: "mlp"`).

use super::{Flag, Ref, MLP_BELOW_TOL, MLP_MOST_IN_FLIGHT};
use crate::record::Record;
use serde_json::Value;

/// The MLP curve a record belongs to: its parameters without the point's own (G, mode,
/// hidden fraction), so one run's chains over one buffer group together.
fn curve(r: &Record) -> Option<String> {
    let p = r.parameters.as_object()?;
    let mut p = p.clone();
    for k in ["g", "mode", "hidden_fraction"] {
        p.remove(k);
    }
    Some(Value::Object(p).to_string())
}

/// A chain point of an MLP curve: (curve, G, mode, median ns per access).
type Point<'a> = (String, u64, &'a str, f64);

/// The record's chain point. The switching-floor point (chains in L1, another buffer)
/// is no point of the curve.
fn point(r: &Record) -> Option<Point<'_>> {
    let p = &r.parameters;
    if r.kind != "suite-earth" || p["part"] != "mlp" || !p["chains_in_l1"].is_null() {
        return None;
    }
    let g = p["g"].as_u64()?;
    let mode = p["mode"].as_str()?;
    let t = r
        .median("access_time")
        .filter(|t| t.is_finite() && *t > 0.0)?;
    Some((curve(r)?, g, mode, t))
}

/// Flags each point of G ≥ 2 chains (any mode) whose ns per access is more than
/// [`MLP_BELOW_TOL`] below one interleaved chain's over the same buffer divided by
/// min(G, [`MLP_MOST_IN_FLIGHT`]). Each chain's next address is the load it waits on,
/// so at most G accesses are in flight, each taking at least the unloaded latency that
/// one chain measures: a figure below that bound (a "100 % hidden" at G = 24, 6.8 ns
/// per access against a one-chain latency of 1,400 ns on a busy VM) means one of the
/// two was disturbed, so both are named. A curve without a G = 1 point has no
/// reference and is left alone.
pub(super) fn below_one_chain(records: &[Record], flags: &mut Vec<Flag>) {
    let points: Vec<(&Record, Point)> = records
        .iter()
        .filter_map(|r| Some((r, point(r)?)))
        .collect();
    for (r, (c, g, mode, t)) in points.iter().filter(|(_, p)| p.1 >= 2) {
        let one = points
            .iter()
            .find(|(_, p)| p.0 == *c && p.1 == 1 && p.2 == "interleaved");
        let Some((r1, (_, _, _, t1))) = one else {
            continue;
        };
        let in_flight = (*g).min(MLP_MOST_IN_FLIGHT) as f64;
        let bound = t1 / in_flight;
        if *t < bound * (1.0 - MLP_BELOW_TOL) {
            flags.push(Flag {
                rule: "mlp-below-one-chain",
                records: vec![Ref::of(r, "access_time"), Ref::of(r1, "access_time")],
                why: format!(
                    "G={g} {mode} at {t:.1} ns per access, below one chain's {t1:.1} ns ÷ {in_flight:.0} accesses in flight = {bound:.1} ns: {:.0} would have to be in flight",
                    t1 / t
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::Provenance;
    use serde_json::json;

    fn mlp(g: u64, mode: &str, ns: f64) -> Record {
        let p = json!({"part": "mlp", "bytes": 8 << 20, "pages": "4 KiB pages", "g": g, "mode": mode, "hidden_fraction": 0.5});
        let name = format!("mlp: G={g} {mode}");
        let mut r = Record::new("suite-earth", &name, Provenance::collect("t", "t"), p);
        r.add_samples("access_time", "ns", &[ns * 0.99, ns, ns * 1.01]);
        r
    }

    fn run(recs: &[Record]) -> Vec<Flag> {
        let mut flags = Vec::new();
        below_one_chain(recs, &mut flags);
        flags
    }

    #[test]
    fn more_accesses_in_flight_than_chains_is_flagged_naming_both_figures() {
        // The busy VM's "6.8 ns per access, 100 % hidden" at G = 24 and 48.
        let recs = [
            mlp(1, "interleaved", 1400.0),
            mlp(24, "interleaved", 6.8),
            mlp(48, "interleaved", 6.8),
            mlp(24, "coroutines", 9.0),
        ];
        let f = run(&recs);
        assert_eq!(f.len(), 3, "{f:#?}");
        assert!(f.iter().all(|f| f.rule == "mlp-below-one-chain"));
        assert_eq!(f[0].records[0].name, "mlp: G=24 interleaved");
        assert_eq!(f[0].records[1].name, "mlp: G=1 interleaved");
        assert!(
            f[0].why.contains("206 would have to be in flight"),
            "{}",
            f[0].why
        );
    }

    #[test]
    fn a_curve_that_hides_latency_within_its_chains_is_not_flagged() {
        // 120 ns unloaded; 10 chains overlap to 14 ns (8.6 in flight), 24 saturate at
        // the core's miss handling; a slow coroutine point is never implausible.
        let recs = [
            mlp(1, "interleaved", 120.0),
            mlp(10, "interleaved", 14.0),
            mlp(24, "interleaved", 6.0),
            mlp(64, "interleaved", 5.9),
            mlp(64, "coroutines", 40.0),
        ];
        assert!(run(&recs).is_empty(), "{:#?}", run(&recs));
        // Within the tolerance of the bound (5.0 ns at G = 24): noise, not a flag.
        assert!(run(&[mlp(1, "interleaved", 120.0), mlp(24, "interleaved", 4.0)]).is_empty());
    }

    #[test]
    fn without_one_chain_or_on_another_buffer_there_is_no_reference() {
        assert!(run(&[mlp(24, "interleaved", 0.5)]).is_empty());
        let mut other = mlp(1, "interleaved", 1400.0);
        other.parameters["bytes"] = json!(1 << 30);
        assert!(run(&[other, mlp(24, "interleaved", 6.8)]).is_empty());
        // The switching floor (chains in L1) is no point of the curve.
        let mut floor = mlp(64, "coroutines", 1.0);
        floor.parameters["chains_in_l1"] = json!(true);
        assert!(run(&[mlp(1, "interleaved", 120.0), floor]).is_empty());
    }
}
