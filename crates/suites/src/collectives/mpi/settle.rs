//! The settle rule for figures between MPI ranks: an item's passes judged as every
//! figure is (the median's order-statistic interval against `--tolerance`), and more
//! passes added while it is wider, inside `--noise-budget`. Rank 0 holds every rank's
//! times, so it decides each round ([`more`]) and broadcasts how many passes come next
//! (0: the item is done): every rank runs the same passes and none waits for one that
//! never comes.

use numalab_results::settle::{Figure, Goal};
use numalab_results::Settle;
use std::time::Duration;

/// How an MPI figure settles, as its record's parameters say.
pub const HOW: &str =
    "its --iterations passes, then more (every rank runs them; rank 0 decides, from every rank's times) while the median's interval is wider than --tolerance, inside --noise-budget";

/// Most passes an item takes, as a multiple of its first ones.
const MAX_PASS_FACTOR: usize = 20;

/// Passes to add to an item whose completion times so far are `time` (ns per pass),
/// `elapsed` into its `budget`, `first` passes planned: none when its figure settled,
/// the budget is spent or the pass limit is reached; else half the first ones (≥ 2).
pub fn more(goal: &Goal, time: &[f64], elapsed: Duration, budget: Duration, first: usize) -> usize {
    let settled = Figure::Median
        .of(time)
        .is_some_and(|i| i.within(goal.tolerance_pct));
    if settled || elapsed >= budget || time.len() >= first.max(1) * MAX_PASS_FACTOR {
        0
    } else {
        (first / 2).max(2)
    }
}

/// The settle entry of an item's completion times (ns per pass), its passes taken in
/// `budget`.
pub fn judged(goal: &Goal, time: &[f64], budget: Duration, first: usize) -> Settle {
    let tol = goal.tolerance_pct;
    let i = Figure::Median.of(time);
    let settled = i.is_some_and(|i| i.within(tol));
    let why = (!settled).then(|| {
        let spread = i.map_or("no finite figure".into(), |i| {
            format!("its interval ±{:.1} % against ±{tol} %", i.half_pct().min(1e6))
        });
        let end = if time.len() >= first.max(1) * MAX_PASS_FACTOR {
            "pass limit reached"
        } else {
            "budget spent"
        };
        format!(
            "machine busy: {spread} after {} ({end}); give a larger --noise-budget or measure on a quieter machine",
            numalab_results::words::passes(time.len())
        )
    });
    Settle {
        settled,
        metric: "time".into(),
        passes: time.len() as u32,
        interval: i.map_or([f64::NAN; 2], |i| [i.lo, i.hi]),
        tolerance_pct: tol,
        budget_ms: budget.as_secs_f64() * 1e3,
        why,
        figure: Some(Figure::Median),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn passes_are_added_while_the_interval_is_wide_and_the_budget_lasts() {
        let goal = Goal::default();
        let steady = [100.0, 101.0, 102.0, 101.0, 100.5];
        assert_eq!(more(&goal, &steady, MS, 100 * MS, 5), 0, "settled");
        let wide = [101.0, 101.0, 101.0, 301.0, 301.0];
        assert_eq!(more(&goal, &wide, MS, 100 * MS, 5), 2);
        assert_eq!(more(&goal, &wide, MS, 100 * MS, 8), 4);
        assert_eq!(more(&goal, &wide, 100 * MS, 100 * MS, 5), 0, "budget spent");
        let many = vec![100.0; 1];
        assert_eq!(
            more(&goal, &many, MS, 100 * MS, 1),
            2,
            "one pass never settles"
        );
        let capped: Vec<f64> = (0..100).map(|k| 100.0 + 300.0 * f64::from(k % 2)).collect();
        assert_eq!(more(&goal, &capped, MS, 100 * MS, 5), 0, "pass limit");
    }

    #[test]
    fn an_mpi_figure_says_how_it_settled_with_its_budget_and_why() {
        let goal = Goal::default();
        let s = judged(&goal, &[100.0, 101.0, 102.0, 101.0, 100.5], 50 * MS, 5);
        assert!(s.settled && s.why.is_none(), "{s:?}");
        assert_eq!(
            (s.metric.as_str(), s.passes, s.budget_ms),
            ("time", 5, 50.0)
        );
        assert_eq!(s.interval, [100.0, 102.0]);
        let s = judged(&goal, &[101.0, 101.0, 101.0, 301.0, 301.0], 50 * MS, 5);
        assert!(!s.settled);
        assert_eq!(s.interval, [101.0, 301.0]);
        let why = s.why.unwrap();
        assert!(
            why.starts_with(
                "machine busy: its interval ±99.0 % against ±10 % after 5 passes (budget spent)"
            ),
            "{why}"
        );
        // A wider tolerance accepts it; too few passes never settle.
        let wide = Goal::parse(None, Some(50.0)).unwrap();
        let v = [100.0, 100.0, 100.0, 150.0, 150.0];
        assert!(judged(&wide, &v, MS, 5).settled && !judged(&goal, &v, MS, 5).settled);
        assert!(!judged(&goal, &[1.0, 1.0], MS, 2).settled);
        assert!(!judged(&goal, &[], MS, 2).settled);
    }
}
