//! Each point's work sized to its noise: after the initial passes, passes are added
//! while the figure's interval is wide against its effect and the point's time budget
//! lasts; a point that ends unsettled is printed as within noise with its interval.
//!
//! The interval of a median is the order-statistic interval every step settles by
//! ([`numalab_results::settle::median_interval`]); earth's figures are percentages,
//! so their rule is in percentage points rather than the shared `--tolerance`. A figure
//! built from several medians takes each one's interval at the extremes that widen
//! it (conservative).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Half-width (percentage points) a figure settles within whatever its size.
pub const HALF_WIDTH_PTS: f64 = 10.0;
/// Or this fraction of the figure's size, where that is wider (a 5000 % loss is
/// known well enough to ±500 points).
pub const HALF_WIDTH_FRACTION: f64 = 0.1;
/// From this size (%) a figure must also keep its interval clear of 0.
pub const CLEAR_OF_ZERO_FROM: f64 = 10.0;

/// When a point has had enough passes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// Passes every point takes first (`--iterations`).
    pub initial: usize,
    /// Wall time a point may take, its initial passes included; they always run.
    pub budget: Duration,
    /// The widest half-interval accepted, in percentage points.
    pub half_width_pts: f64,
    /// Or this fraction of |figure|, where wider.
    pub half_width_fraction: f64,
    /// The values the figure can have (an overlap: 0–100 %); None: any.
    pub range: Option<(f64, f64)>,
}

impl Rule {
    /// The documented rule for a percentage figure.
    pub fn pct(initial: usize, budget: Duration) -> Rule {
        Rule {
            initial,
            budget,
            half_width_pts: HALF_WIDTH_PTS,
            half_width_fraction: HALF_WIDTH_FRACTION,
            range: None,
        }
    }

    /// Whether a figure is known well enough: its interval narrow against its size,
    /// clear of 0 when it is large, and reaching into the possible range.
    pub fn settled(&self, f: &Figure) -> bool {
        let half = (f.hi - f.lo) / 2.0;
        let allowed = self
            .half_width_pts
            .max(self.half_width_fraction * f.value.abs());
        let clear = f.value.abs() < CLEAR_OF_ZERO_FROM || f.lo > 0.0 || f.hi < 0.0;
        let possible = self.range.is_none_or(|(a, b)| f.lo <= b && f.hi >= a);
        [f.value, f.lo, f.hi].iter().all(|x| x.is_finite()) && half <= allowed && clear && possible
    }
}

/// A figure (%) from medians, with its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    /// The figure from the medians.
    pub value: f64,
    /// Its interval's low end.
    pub lo: f64,
    /// Its interval's high end.
    pub hi: f64,
}

/// How a point was sized: what its records keep (`data.noise`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sizing {
    /// Passes taken, the initial ones included.
    pub passes: usize,
    /// Passes every point takes first.
    pub initial: usize,
    /// Whether the figure's interval met the rule within the budget.
    pub converged: bool,
    /// The figure's interval (%), low and high; absent when not finite.
    pub interval_pct: Option<[f64; 2]>,
}

impl Sizing {
    /// More passes than the initial ones were taken.
    pub fn extended(&self) -> bool {
        self.passes > self.initial
    }

    /// The figure in words, as the text and the HTML show it: the figure (saying
    /// "n passes" where more than the initial ones were taken) when it settled, else
    /// "within noise" with its interval.
    pub fn text(&self, figure: String) -> String {
        match (self.converged, self.interval_pct) {
            (true, _) if self.extended() => format!("{figure} ({} passes)", self.passes),
            (true, _) => figure,
            (false, Some([lo, hi])) => format!("within noise ({lo:.0}…{hi:.0}%)"),
            (false, None) => "within noise".into(),
        }
    }
}

/// Wall time since the call: a point's clock.
pub fn clock() -> impl FnMut() -> Duration {
    let start = std::time::Instant::now();
    move || start.elapsed()
}

/// Take passes until the rule settles the figure or the budget is spent.
/// `elapsed` is the time since the point began (a fake clock in tests); `pass` adds
/// one pass's samples to `state`; `figure` reads the figure from it.
pub fn size<S>(
    rule: &Rule,
    elapsed: &mut dyn FnMut() -> Duration,
    state: &mut S,
    pass: &mut dyn FnMut(&mut S) -> numalab_topo::Result<()>,
    figure: &dyn Fn(&S) -> Option<Figure>,
) -> numalab_topo::Result<Sizing> {
    let mut passes = 0;
    loop {
        if passes >= rule.initial {
            let f = figure(state);
            let settled = f.is_some_and(|f| rule.settled(&f));
            if settled || elapsed() >= rule.budget {
                let interval_pct = f
                    .filter(|f| f.lo.is_finite() && f.hi.is_finite())
                    .map(|f| [f.lo, f.hi]);
                return Ok(Sizing {
                    passes,
                    initial: rule.initial,
                    converged: settled,
                    interval_pct,
                });
            }
        }
        pass(state)?;
        passes += 1;
    }
}

/// A median with its interval: (median, low, high).
fn med(v: &[f64]) -> Option<(f64, f64, f64)> {
    let (lo, hi) = median_interval(v)?;
    Some((numalab_results::stats::median(v)?, lo, hi))
}

/// Loop 7's baseline as a figure: its whole time in % of its communication, which
/// is the part of every masking figure the baseline brings.
pub fn baseline_figure(comm: &[f64], comp: &[f64]) -> Option<Figure> {
    let ((c, cl, ch), (p, pl, ph)) = (med(comm)?, med(comp)?);
    Some(Figure {
        value: 100.0 * (c + p) / c,
        lo: 100.0 * (cl + pl) / c,
        hi: 100.0 * (ch + ph) / c,
    })
}

/// The share of the baseline's communication a masked run hid (%), from the medians
/// of the baseline's phases and of the masked run.
pub fn mask_figure(comm: &[f64], comp: &[f64], masked: &[f64]) -> Option<Figure> {
    let ((c, cl, ch), (p, pl, ph), (t, tl, th)) = (med(comm)?, med(comp)?, med(masked)?);
    Some(Figure {
        value: 100.0 * (c + p - t) / c,
        lo: 100.0 * (cl + pl - th) / c,
        hi: 100.0 * (ch + ph - tl) / c,
    })
}

/// KSR Table 5's overlap (%): (computation + communication − both) over the smaller,
/// each less creating and joining the threads (`empty`), which cancels to one.
pub fn overlap_figure(comp: &[f64], comm: &[f64], both: &[f64], empty: &[f64]) -> Option<Figure> {
    let ((c, cl, ch), (m, ml, mh), (b, bl, bh), (e, el, eh)) =
        (med(comp)?, med(comm)?, med(both)?, med(empty)?);
    let smaller = (c - e).min(m - e);
    // Work no longer than creating the threads leaves no overlap to speak of.
    (smaller > 0.0).then(|| Figure {
        value: 100.0 * (c + m - b - e) / smaller,
        lo: 100.0 * (cl + ml - bh - eh) / smaller,
        hi: 100.0 * (ch + mh - bl - el) / smaller,
    })
}

/// The order-statistic interval of the median (one definition for every figure).
pub use numalab_results::settle::median_interval;

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_clock(step: Duration) -> impl FnMut() -> Duration {
        let mut t = Duration::ZERO;
        move || {
            t += step;
            t
        }
    }

    /// Passes that yield `next(i)`; the figure is the median with its interval.
    fn run(rule: &Rule, next: &dyn Fn(usize) -> f64, tick: Duration) -> (Sizing, Vec<f64>) {
        let mut clock = fake_clock(tick);
        let mut v = Vec::new();
        let s = size(
            rule,
            &mut clock,
            &mut v,
            &mut |v: &mut Vec<f64>| {
                v.push(next(v.len()));
                Ok(())
            },
            &|v: &Vec<f64>| {
                let (lo, hi) = median_interval(v)?;
                Some(Figure {
                    value: numalab_results::stats::median(v)?,
                    lo,
                    hi,
                })
            },
        )
        .unwrap();
        (s, v)
    }

    #[test]
    fn a_tight_set_stops_at_the_initial_passes() {
        let rule = Rule::pct(5, Duration::from_secs(1));
        let (s, v) = run(&rule, &|i| 40.0 + (i % 3) as f64, Duration::from_millis(1));
        assert_eq!((s.passes, v.len(), s.converged), (5, 5, true));
        assert!(!s.extended());
        assert_eq!(s.interval_pct, Some([40.0, 42.0]));
    }

    #[test]
    fn a_wide_set_keeps_going_until_the_budget() {
        // ±60 points around 5: never narrows to ±10; one fake ms a reading of the clock.
        let rule = Rule::pct(5, Duration::from_millis(50));
        let wide = |i: usize| if i.is_multiple_of(2) { 65.0 } else { -55.0 };
        let (s, v) = run(&rule, &wide, Duration::from_millis(1));
        assert!(!s.converged);
        // The clock is read once a pass after the initial five: 50 reads spend 50 ms.
        assert_eq!(s.passes, 5 + 49);
        assert_eq!(v.len(), s.passes);
        assert_eq!(s.interval_pct, Some([-55.0, 65.0]));
        // A zero budget keeps the initial passes only, as before sizing existed.
        let none = Rule::pct(5, Duration::ZERO);
        assert_eq!(run(&none, &wide, Duration::from_millis(1)).0.passes, 5);
    }

    #[test]
    fn a_noisy_start_settles_once_more_passes_narrow_the_median() {
        // Two wild passes first, then steady ones: extra passes settle it before the budget.
        let rule = Rule::pct(5, Duration::from_secs(10));
        let next = |i: usize| match i {
            0 => 300.0,
            1 => -200.0,
            _ => 30.0 + (i % 5) as f64,
        };
        let (s, _) = run(&rule, &next, Duration::from_millis(1));
        assert!(s.converged && s.extended(), "{s:?}");
        assert!(s.passes < 100, "{s:?}");
    }

    #[test]
    fn a_sized_figure_says_its_passes_or_that_it_is_noise() {
        let n = |passes, converged, interval_pct| Sizing {
            passes,
            initial: 5,
            converged,
            interval_pct,
        };
        assert_eq!(n(5, true, Some([30.0, 40.0])).text("35%".into()), "35%");
        assert_eq!(
            n(14, true, Some([30.0, 40.0])).text("35%".into()),
            "35% (14 passes)"
        );
        assert_eq!(
            n(60, false, Some([-8.2, 31.0])).text("12%".into()),
            "within noise (-8…31%)"
        );
        assert_eq!(n(60, false, None).text("-".into()), "within noise");
    }

    #[test]
    fn the_rule_wants_narrow_clear_and_possible() {
        let r = Rule::pct(5, Duration::ZERO);
        let f = |value, lo, hi| Figure { value, lo, hi };
        assert!(r.settled(&f(35.0, 28.0, 44.0)));
        assert!(!r.settled(&f(35.0, 10.0, 60.0)), "±25 points is too wide");
        assert!(r.settled(&f(2.0, -6.0, 9.0)), "small and known to ±8");
        assert!(!r.settled(&f(12.0, -1.0, 18.0)), "large but not clear of 0");
        assert!(
            r.settled(&f(-5000.0, -5400.0, -4700.0)),
            "±350 of 5000 is 7 %"
        );
        assert!(!r.settled(&f(f64::NAN, 0.0, 1.0)));
        let overlap = Rule {
            range: Some((0.0, 100.0)),
            ..r
        };
        assert!(overlap.settled(&f(98.0, 93.0, 104.0)));
        assert!(!overlap.settled(&f(-226.0, -230.0, -221.0)), "impossible");
    }
}
