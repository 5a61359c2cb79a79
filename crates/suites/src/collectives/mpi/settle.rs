//! The settle rule for figures between MPI ranks: each item's passes judged as every
//! figure is (the median's order-statistic interval against `--tolerance`), on the
//! passes measured. No pass is added between ranks yet (every rank would have to agree
//! on each extra round), so the entry says so, per figure, rather than calling a wide
//! figure settled or leaving it without an entry.

use numalab_results::settle::{Figure, Goal};
use numalab_results::Settle;

/// How an MPI figure settles, as its record's parameters say.
pub const HOW: &str =
    "judged on its --iterations passes against --tolerance; no passes are added between MPI ranks (--noise-budget not applied)";

/// The settle entry of an item's completion times (ns per pass).
pub fn judged(goal: &Goal, time: &[f64]) -> Settle {
    let tol = goal.tolerance_pct;
    let i = Figure::Median.of(time);
    let settled = i.is_some_and(|i| i.within(tol));
    let why = (!settled).then(|| {
        let spread = i.map_or("no finite figure".into(), |i| {
            format!("its interval ±{:.1} %", i.half_pct().min(1e6))
        });
        format!(
            "{spread} from {} passes; settling adds no passes between MPI ranks (--noise-budget not applied): give more --iterations, or measure on a quieter machine",
            time.len()
        )
    });
    Settle {
        settled,
        metric: "time".into(),
        passes: time.len() as u32,
        interval: i.map_or([f64::NAN; 2], |i| [i.lo, i.hi]),
        tolerance_pct: tol,
        budget_ms: 0.0,
        why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mpi_figure_is_judged_on_its_passes_and_says_none_were_added() {
        let goal = Goal::default();
        // Steady passes: settled, interval the range (5 passes).
        let s = judged(&goal, &[100.0, 101.0, 102.0, 101.0, 100.5]);
        assert!(s.settled && s.why.is_none(), "{s:?}");
        assert_eq!((s.metric.as_str(), s.passes), ("time", 5));
        assert_eq!(s.interval, [100.0, 102.0]);
        // The 101 ns over 101–301 case: a wide figure is not settled, and says why.
        let s = judged(&goal, &[101.0, 101.0, 101.0, 301.0, 301.0]);
        assert!(!s.settled);
        assert_eq!(s.interval, [101.0, 301.0]);
        let why = s.why.unwrap();
        assert!(
            why.starts_with("its interval ±99.0 % from 5 passes; "),
            "{why}"
        );
        assert!(why.contains("no passes between MPI ranks"), "{why}");
        // A wider tolerance accepts it; too few passes never settle.
        let wide = Goal::parse(None, Some(50.0)).unwrap();
        let v = [100.0, 100.0, 100.0, 150.0, 150.0];
        assert!(judged(&wide, &v).settled && !judged(&goal, &v).settled);
        assert!(!judged(&goal, &[1.0, 1.0]).settled);
        assert!(!judged(&goal, &[]).settled);
    }
}
