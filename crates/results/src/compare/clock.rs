//! A latency figure whose core cycles held while the core clock moved. A `latency`
//! record carries the core clock measured on its CPU beside its passes
//! (`data.core_clock`, a chain of dependent adds) and the figure in core cycles
//! (`latency_cycles`). When the figure moved beyond its spread in ns but its cycles
//! stayed within the least effect, the load cost the same cycles at another clock (a
//! boosting or throttled core, or a VM's vCPU on another host core): the clock change
//! is named once on the verdict line, and the figure is "within (the core clock
//! moved …)", not a latency regression per point.

use super::MIN_EFFECT;
use crate::record::Record;
use serde::Serialize;

/// The clock change that explained latency figures, named once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockMove {
    /// Median core clock of A's latency records that measured one, GHz.
    pub a_ghz: f64,
    /// As `a_ghz`, of B.
    pub b_ghz: f64,
    /// Figures whose cycles held while their ns moved.
    pub figures: usize,
}

/// How an explained row's change begins.
pub const MARK: &str = "within (the core clock moved";

/// How far apart a record's clock before and after its passes may be for the clock to
/// count as steady through them: a probe read low by a disturbed pass, or a clock that
/// moved mid-step, explains nothing.
pub const STEADY: f64 = 0.05;

/// The core clock a record measured beside its passes: mean of before and after, GHz;
/// None without one, or when before and after differ by over [`STEADY`].
fn ghz(r: &Record) -> Option<f64> {
    let c = r.data.as_ref()?.get("core_clock")?;
    let (b, a) = (
        c.get("before_ghz")?.as_f64()?,
        c.get("after_ghz")?.as_f64()?,
    );
    let steady = b > 0.0 && a > 0.0 && (a / b).ln().abs() <= (1.0 + STEADY).ln();
    let g = (b + a) / 2.0;
    (steady && g.is_finite()).then_some(g)
}

/// "within (the core clock moved 3.20 → 2.56 GHz; 4.0 and 4.0 core cycles)" when the
/// `latency` of `ra` and `rb` held in core cycles (within the least effect) while the
/// clocks measured beside them moved by more than half the move in ns; None otherwise (no clock, another metric, or
/// the cycles moved too: a real change of the load).
pub fn held(ra: &Record, rb: &Record, metric: &str) -> Option<String> {
    if metric != "latency" {
        return None;
    }
    let (ga, gb) = (ghz(ra)?, ghz(rb)?);
    let (ca, cb) = (ra.median("latency_cycles")?, rb.median("latency_cycles")?);
    let same = ca > 0.0 && (cb / ca).ln().abs() <= (1.0 + MIN_EFFECT).ln();
    // The clock carries most of the move in ns (ns = cycles / GHz), not a hair of it.
    let ns = ((cb / gb) / (ca / ga)).ln().abs();
    let moved = (gb / ga).ln().abs() > ns / 2.0;
    (same && moved)
        .then(|| format!("{MARK} {ga:.2} → {gb:.2} GHz; {ca:.1} and {cb:.1} core cycles)"))
}

/// The clock change to name on the verdict line: the median clock of each run's
/// latency records, and how many rows it explained (None when it explained none).
pub fn named(a: &[Record], b: &[Record], figures: usize) -> Option<ClockMove> {
    let med = |rs: &[Record]| {
        let v: Vec<f64> = rs.iter().filter_map(ghz).collect();
        crate::stats::median(&v)
    };
    (figures > 0).then_some(())?;
    Some(ClockMove {
        a_ghz: med(a)?,
        b_ghz: med(b)?,
        figures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare, verdict};
    use crate::provenance::Provenance;
    use serde_json::json;

    /// An L1 point of `ns` measured beside a core clock of `ghz`.
    fn point(name: &str, ns: f64, ghz: f64) -> Record {
        let mut r = Record::new("latency", name, Provenance::collect("t", "none"), json!({}));
        let passes = [ns * 0.995, ns, ns * 1.005, ns, ns];
        r.add_samples("latency", "ns", &passes);
        let cycles: Vec<f64> = passes.iter().map(|x| x * ghz).collect();
        r.add_samples("latency_cycles", "core cycles", &cycles);
        r.set_data(&json!({ "core_clock": { "before_ghz": ghz, "after_ghz": ghz } }));
        r
    }

    #[test]
    fn a_latency_that_held_in_cycles_while_the_clock_moved_is_within_and_named_once() {
        let a = vec![point("4 KiB", 1.25, 3.2), point("8 KiB", 1.25, 3.2)];
        let b = vec![point("4 KiB", 1.5625, 2.56), point("8 KiB", 1.5625, 2.56)];
        let c = compare(&a, &b, false);
        assert!(
            c.rows.iter().all(|r| r.change
                == "within (the core clock moved 3.20 → 2.56 GHz; 4.0 and 4.0 core cycles)"),
            "{:?}",
            c.rows
        );
        let v = verdict(&c);
        assert!(
            v.starts_with("0 of 2 comparable figures changed beyond their spread (0.0 %)"),
            "{v}"
        );
        assert_eq!(
            v.matches("the core clock moved 3.20 → 2.56 GHz").count(),
            1,
            "{v}"
        );
        assert!(v.contains("2 latency figures held in core cycles"), "{v}");
        // The cycles are a derived duplicate: compared only with --all-metrics.
        assert!(c.rows.iter().all(|r| r.metric == "latency"));
    }

    #[test]
    fn a_load_that_took_more_cycles_at_the_same_clock_stays_beyond() {
        // 4 → 5 cycles at one clock: the load changed, not the clock.
        let a = vec![point("4 KiB", 1.25, 3.24)];
        let b = vec![point("4 KiB", 1.56, 3.24)];
        let c = compare(&a, &b, false);
        assert_eq!(c.rows[0].change, "beyond");
        assert!(c.clock.is_none());
        // A clock that moved a hair beside a 25 % slower load explains nothing either.
        let b = vec![point("4 KiB", 1.56, 3.10)];
        assert_eq!(compare(&a, &b, false).rows[0].change, "beyond");
        // A clock that was not steady through the passes (before and after over 5 %
        // apart: a probe read low, or the clock moved mid-step) explains nothing.
        let mut unsteady = point("4 KiB", 1.5625, 2.56);
        unsteady.set_data(&json!({ "core_clock": { "before_ghz": 2.0, "after_ghz": 3.12 } }));
        assert_eq!(compare(&a, &[unsteady], false).rows[0].change, "beyond");
        // Records without a clock (older ones) are judged as before.
        let mut old = point("4 KiB", 1.56, 2.60);
        old.data = None;
        assert_eq!(compare(&a, &[old], false).rows[0].change, "beyond");
    }
}
