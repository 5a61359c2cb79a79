//! Summary statistics of samples: min, p5, median, mean, p95, max, stdev, n.

use serde::{Deserialize, Serialize};

/// Statistics of one metric's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Smallest sample.
    pub min: f64,
    /// 5th percentile.
    pub p5: f64,
    /// Median.
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Largest sample.
    pub max: f64,
    /// Sample standard deviation (n−1); 0 for a single sample.
    pub stdev: f64,
}

/// A figure this few timer steps long is at the timer's resolution.
pub const FEW_STEPS: f64 = 5.0;

impl Summary {
    /// Whether these samples are single timer readings at the timer's resolution: the
    /// median no more than [`FEW_STEPS`] steps of `step_ns`, and the fastest sample a
    /// whole step (or half of one: a round trip's half) — a figure averaged over many
    /// operations is not. The median need not be whole: the mean of two middle samples
    /// 60 and 80 ns with 20 ns steps is 70 ns, and still a few steps long.
    pub fn at_timer_step(&self, step_ns: Option<f64>) -> bool {
        let Some(step) = step_ns.filter(|s| *s > 0.0) else {
            return false;
        };
        let whole = |v: f64, unit: f64| {
            let k = (v / unit).round();
            k >= 1.0 && (v - k * unit).abs() <= 0.05 * unit
        };
        self.median <= FEW_STEPS * step && (whole(self.min, step) || whole(self.min, step / 2.0))
    }
}

/// The footnote of figures marked `*` by [`Summary::at_timer_step`].
pub fn timer_step_note(step_ns: f64) -> String {
    format!(
        "*: within {FEW_STEPS} steps of the timer, which reads in {step_ns:.1} ns steps here: the figure says only that it takes about that long"
    )
}

/// Median of unsorted samples (mean of the middle two for an even count); None when empty.
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    Some(percentile(&v, 0.5))
}

/// Percentile by linear interpolation between closest ranks (R type 7), `q` in 0..=1.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

impl Summary {
    /// Summarise samples; None when there are none or any is not finite
    /// (an absent figure is better than a made-up one).
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|s| !s.is_finite()) {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = if n > 1 {
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Some(Summary {
            n,
            min: v[0],
            p5: percentile(&v, 0.05),
            median: percentile(&v, 0.5),
            mean,
            p95: percentile(&v, 0.95),
            max: v[n - 1],
            stdev: var.sqrt(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_timer_steps_a_few_long_are_at_the_resolution() {
        let step = Some(10.0);
        let at = |v: &[f64]| Summary::of(v).unwrap().at_timer_step(step);
        assert!(at(&[20.0, 20.0, 20.0, 30.0]));
        // Every figure within five steps is marked, whole median or not (issue 42:
        // get and put at 60-80 ns with 20 ns steps read unmarked).
        let at20 = |v: &[f64]| Summary::of(v).unwrap().at_timer_step(Some(20.0));
        assert!(at20(&[60.0, 60.0, 80.0, 80.0]));
        assert!(at20(&[80.0, 80.0, 100.0]));
        assert!(at20(&[70.0, 70.0, 80.0]), "a round trip's half step");
        assert!(!at20(&[120.0, 120.0]));
        // Averaged over many operations: not whole steps.
        assert!(!at(&[27.2, 26.1, 27.4]));
        // Whole steps, but many of them: the step is a small part of the figure.
        assert!(!at(&[240.0, 250.0, 260.0]));
        assert!(!Summary::of(&[20.0]).unwrap().at_timer_step(None));
        assert!(timer_step_note(10.0).contains("10.0 ns steps"));
    }

    #[test]
    fn known_values() {
        let s = Summary::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(
            (s.n, s.min, s.max, s.median, s.mean),
            (5, 1.0, 5.0, 3.0, 3.0)
        );
        assert!((s.stdev - 2.5f64.sqrt()).abs() < 1e-12);
        assert!((s.p5 - 1.2).abs() < 1e-12);
        assert!((s.p95 - 4.8).abs() < 1e-12);
    }

    #[test]
    fn one_sample_and_empty() {
        let s = Summary::of(&[7.0]).unwrap();
        assert_eq!(
            (s.min, s.p5, s.median, s.p95, s.max, s.stdev),
            (7.0, 7.0, 7.0, 7.0, 7.0, 0.0)
        );
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn order_holds_for_any_samples() {
        let mut x = 12345u64;
        for len in 1..50 {
            let v: Vec<f64> = (0..len)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (x >> 40) as f64
                })
                .collect();
            let s = Summary::of(&v).unwrap();
            assert!(s.min <= s.p5 && s.p5 <= s.median && s.median <= s.p95 && s.p95 <= s.max);
            assert!(s.min <= s.mean && s.mean <= s.max);
        }
    }
}
