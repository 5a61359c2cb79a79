//! What a step settles to: the tolerance and time budget the user gives
//! (`--noise-budget`, `--tolerance`), parsed once for every command, and the
//! intervals a figure is judged by.
//!
//! The interval of a median is the distribution-free order-statistic interval
//! [x(j), x(n+1−j)] of the sorted passes with the largest j whose coverage,
//! 1 − 2·P(Bin(n, ½) < j), is at least 95 % (below 6 passes no such j exists and the
//! interval is the range: 94 % at 5 passes). It narrows as 1/√n, unlike the p5–p95
//! spread. A best-of-N figure (bandwidth, as STREAM and likwid report it) is judged
//! by its top order statistics: the best and the third best must agree.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Default half-width a figure settles within, in percent of the figure.
pub const DEFAULT_TOLERANCE_PCT: f64 = 10.0;
/// The widest tolerance accepted: beyond it a figure says nothing.
pub const MAX_TOLERANCE_PCT: f64 = 50.0;
/// The longest budget a step may be given: beyond it a step is a study of its own.
pub const MAX_BUDGET: Duration = Duration::from_secs(60);
/// Passes a figure needs before it can be called settled.
pub const MIN_PASSES: usize = 3;
/// Top order statistics a best-of-N figure is judged by.
pub const TOP: usize = 3;

/// The two options as an experiment's serde `Options` keep them (`#[serde(default)]`),
/// spelt as the user gave them; [`NoiseOptions::goal`] checks them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NoiseOptions {
    /// `--noise-budget`: wall time a step may take to settle (None: its default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_budget: Option<String>,
    /// `--tolerance`: half-width a figure settles within, % (None: 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<String>,
}

impl NoiseOptions {
    /// The goal, or the one-line error naming the bad value.
    pub fn goal(&self) -> Result<Goal, String> {
        let tolerance = match self.tolerance.as_deref() {
            None => None,
            Some(t) => Some(t.trim().trim_end_matches('%').parse::<f64>().map_err(|_| {
                format!("invalid --tolerance '{t}': a percentage above 0 and up to {MAX_TOLERANCE_PCT}, such as 2 or 5")
            })?),
        };
        Goal::parse(self.noise_budget.as_deref(), tolerance)
    }
}

/// The user's settling goal, kept with the rules in every record's pass log.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    /// Wall time a step may take, its first passes included (None: the step's own
    /// default, twice its first passes' time within 50 ms…2 s more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_ms: Option<f64>,
    /// Largest accepted half-width of the figure's interval, in percent of it.
    pub tolerance_pct: f64,
}

impl Default for Goal {
    fn default() -> Goal {
        Goal {
            budget_ms: None,
            tolerance_pct: DEFAULT_TOLERANCE_PCT,
        }
    }
}

impl Goal {
    /// The first passes only, nothing added: for a caller that sizes its passes by
    /// a rule of its own (earth's percentage points) or whose records do not yet
    /// carry a settle entry.
    pub const FIRST_PASSES_ONLY: Goal = Goal {
        budget_ms: Some(0.0),
        tolerance_pct: DEFAULT_TOLERANCE_PCT,
    };

    /// The goal from the two options as the user spelt them (None: default); the
    /// error is one line naming the bad value and what is valid.
    pub fn parse(budget: Option<&str>, tolerance: Option<f64>) -> Result<Goal, String> {
        let budget_ms = match budget {
            None => None,
            Some(s) => Some(
                parse_duration(s)
                    .filter(|d| !d.is_zero() && *d <= MAX_BUDGET)
                    .ok_or_else(|| {
                        format!(
                            "invalid --noise-budget '{s}': a duration above 0 and up to 60s with its unit, such as 20ms, 0.5s or 2s"
                        )
                    })?
                    .as_secs_f64()
                    * 1e3,
            ),
        };
        let tolerance_pct = tolerance.unwrap_or(DEFAULT_TOLERANCE_PCT);
        if !(tolerance_pct > 0.0 && tolerance_pct <= MAX_TOLERANCE_PCT) {
            return Err(format!(
                "invalid --tolerance '{tolerance_pct}': a percentage above 0 and up to {MAX_TOLERANCE_PCT}, such as 2 or 5"
            ));
        }
        Ok(Goal {
            budget_ms,
            tolerance_pct,
        })
    }

    /// The budget of a step whose first passes took `first` (the user's, or the
    /// default: twice `first`, at least 50 ms and at most 2 s more than `first`).
    pub fn budget(&self, first: Duration) -> Duration {
        match self.budget_ms {
            Some(ms) => Duration::from_secs_f64(ms / 1e3),
            None => (2 * first).clamp(
                first + Duration::from_millis(50),
                first + Duration::from_secs(2),
            ),
        }
    }
}

/// "20ms", "0.5s", "250us", "1m" (a minute) as a duration; None when not one.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| c.is_ascii_alphabetic() || c == 'µ')?;
    let (num, unit) = s.split_at(split);
    let x: f64 = num.trim().parse().ok()?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        _ => return None,
    };
    let secs = x * scale;
    (0.0..1e9)
        .contains(&secs)
        .then(|| Duration::from_secs_f64(secs))
}

/// Which statistic is the step's figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Figure {
    /// The median of the passes (latency-like figures).
    Median,
    /// The largest pass (best-of-N bandwidth).
    Max,
    /// The smallest pass (best-of-N time).
    Min,
}

/// A figure with its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// The figure.
    pub value: f64,
    /// Low end.
    pub lo: f64,
    /// High end.
    pub hi: f64,
    /// Passes it comes from.
    pub n: usize,
}

impl Interval {
    /// Half-width in percent of the figure (infinite when the figure is 0 or not finite).
    pub fn half_pct(&self) -> f64 {
        let h = (self.hi - self.lo) / 2.0 / self.value.abs() * 100.0;
        if h.is_finite() {
            h
        } else {
            f64::INFINITY
        }
    }

    /// Within `tol` percent, from enough passes.
    pub fn within(&self, tol: f64) -> bool {
        self.n >= MIN_PASSES && self.half_pct() <= tol
    }
}

impl Figure {
    /// The figure of `v` with its interval (None: no finite value).
    pub fn of(self, v: &[f64]) -> Option<Interval> {
        let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        if s.is_empty() {
            return None;
        }
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let top = TOP.min(n);
        let (value, lo, hi) = match self {
            Figure::Median => {
                let (lo, hi) = median_interval(&s)?;
                (crate::stats::median(&s)?, lo, hi)
            }
            Figure::Max => (s[n - 1], s[n - top], s[n - 1]),
            Figure::Min => (s[0], s[0], s[top - 1]),
        };
        Some(Interval { value, lo, hi, n })
    }
}

/// The order-statistic interval of the median of `v` (see the module's doc);
/// None when empty.
pub fn median_interval(v: &[f64]) -> Option<(f64, f64)> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let j = rank(s.len());
    Some((s[j - 1], s[s.len() - j]))
}

/// The largest 1-based rank j with 2·P(Bin(n, ½) ≤ j − 1) ≤ 5 %, at least 1.
pub fn rank(n: usize) -> usize {
    if n > 1000 {
        // The normal approximation, where 0.5^n underflows.
        let j = (n as f64 / 2.0 - 1.96 * (n as f64).sqrt() / 2.0).floor() as usize;
        return j.max(1);
    }
    let (mut pmf, mut cdf, mut j) = (0.5f64.powi(n as i32), 0.0, 0);
    // cdf = P(B ≤ j − 1) before each step.
    while j < n / 2 {
        cdf += pmf;
        if 2.0 * cdf > 0.05 {
            break;
        }
        pmf *= (n - j) as f64 / (j + 1) as f64;
        j += 1;
    }
    j.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_interval_is_the_range_when_few_and_narrows_with_more() {
        assert_eq!(rank(5), 1);
        assert_eq!(rank(6), 1);
        // n = 20: P(B ≤ 5) = 2.07 % (×2 ≤ 5 %), P(B ≤ 6) = 5.77 %: j = 6.
        assert_eq!(rank(20), 6);
        assert_eq!(rank(100), 40);
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(median_interval(&v), Some((6.0, 15.0)));
        assert_eq!(median_interval(&[3.0, 1.0, 2.0]), Some((1.0, 3.0)));
        assert_eq!(median_interval(&[]), None);
        assert!(rank(1001).abs_diff(rank(1000)) <= 1);
    }

    #[test]
    fn best_of_n_is_judged_by_its_top_three() {
        let v = [10.0, 19.0, 20.0, 5.0, 19.5];
        let i = Figure::Max.of(&v).unwrap();
        assert_eq!((i.value, i.lo, i.hi, i.n), (20.0, 19.0, 20.0, 5));
        assert!(i.within(5.0));
        let i = Figure::Min.of(&v).unwrap();
        assert_eq!((i.value, i.lo, i.hi), (5.0, 5.0, 19.0));
        assert!(!i.within(5.0));
        // Two passes cannot settle, however close.
        assert!(!Figure::Median.of(&[1.0, 1.0]).unwrap().within(5.0));
    }

    #[test]
    fn bad_budgets_and_tolerances_are_refused_in_one_line() {
        for bad in ["0", "0ms", "-5ms", "NaNms", "5", "2h", "61s", "fast"] {
            let e = Goal::parse(Some(bad), None).unwrap_err();
            assert!(e.contains(&format!("--noise-budget '{bad}'")), "{e}");
        }
        for bad in [0.0, -1.0, f64::NAN, 51.0, f64::INFINITY] {
            let e = Goal::parse(None, Some(bad)).unwrap_err();
            assert!(e.starts_with("invalid --tolerance"), "{e}");
        }
        let g = Goal::parse(Some("250ms"), Some(2.0)).unwrap();
        assert_eq!((g.budget_ms, g.tolerance_pct), (Some(250.0), 2.0));
        assert_eq!(g.budget(Duration::from_secs(9)), Duration::from_millis(250));
        let d = Goal::default();
        assert_eq!(d.budget(Duration::ZERO), Duration::from_millis(50));
        assert_eq!(
            d.budget(Duration::from_secs(10)),
            Duration::from_secs(12),
            "at most 2 s beyond the first passes"
        );
    }
}
