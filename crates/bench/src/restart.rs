//! The restart-latency search of snbench (thesis §4.2.3): restart(k) =
//! back-to-back(k) − L1-resident(k) for k = 0, 1, … dependent work operations after
//! each load; stop when a moving window of `window` steps has stayed within
//! ±`bound_ns` of its mean for `stable` consecutive steps, or when k runs out.

use serde::{Deserialize, Serialize};

/// Search parameters (defaults: window 13, ±5 ns, 19 stable steps, as snbench).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RestartParams {
    /// Moving-window length in steps.
    pub window: usize,
    /// Every value in the window must lie within ±bound_ns of the window's mean.
    pub bound_ns: f64,
    /// Consecutive steps the window must stay within the bound.
    pub stable: usize,
    /// Largest k tried.
    pub max_work: usize,
}

impl Default for RestartParams {
    fn default() -> Self {
        RestartParams {
            window: 13,
            bound_ns: 5.0,
            stable: 19,
            max_work: numalab_probe::kernel::MAX_WORK,
        }
    }
}

impl RestartParams {
    /// Check the parameters; the message names the bad value.
    pub fn validate(&self) -> Result<(), String> {
        if self.window < 2 {
            return Err(format!(
                "invalid restart window '{}': must be at least 2 steps",
                self.window
            ));
        }
        if self.stable < 1 {
            return Err("invalid restart stable count '0': must be at least 1 step".into());
        }
        if !(self.bound_ns.is_finite() && self.bound_ns > 0.0) {
            return Err(format!(
                "invalid restart bound '{}': must be a positive number of ns",
                self.bound_ns
            ));
        }
        if self.max_work > numalab_probe::kernel::MAX_WORK {
            return Err(format!(
                "invalid restart max work '{}': kernels exist for 0 to {}",
                self.max_work,
                numalab_probe::kernel::MAX_WORK
            ));
        }
        Ok(())
    }
}

/// One step of the curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Dependent work operations after each load.
    pub work: usize,
    /// Back-to-back time per load (ns).
    pub b2b_ns: f64,
    /// L1-resident time per load with the same work (ns).
    pub l1_ns: f64,
    /// b2b − l1.
    pub restart_ns: f64,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestartOutcome {
    /// Every step measured.
    pub curve: Vec<Step>,
    /// Whether the stability criterion was met (else k ran out).
    pub converged: bool,
    /// First and last k of the stable window (the last `window` steps when not converged).
    pub stable_from: usize,
    /// Last k of the stable window.
    pub stable_to: usize,
    /// restart values in the stable window.
    pub window_values: Vec<f64>,
}

impl RestartOutcome {
    /// The reported restart latency: the minimum in the stable window.
    pub fn restart_ns(&self) -> f64 {
        self.window_values
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
    }
}

/// Run the search; `measure(k)` returns (back-to-back ns, L1 ns) for k work operations.
pub fn search<E>(
    p: &RestartParams,
    mut measure: impl FnMut(usize) -> Result<(f64, f64), E>,
) -> Result<RestartOutcome, E> {
    let mut curve: Vec<Step> = Vec::new();
    let mut run = 0usize;
    for k in 0..=p.max_work {
        let (b, l) = measure(k)?;
        curve.push(Step {
            work: k,
            b2b_ns: b,
            l1_ns: l,
            restart_ns: b - l,
        });
        if curve.len() < p.window {
            continue;
        }
        let w: Vec<f64> = curve[curve.len() - p.window..]
            .iter()
            .map(|s| s.restart_ns)
            .collect();
        let mean = w.iter().sum::<f64>() / w.len() as f64;
        if w.iter().all(|x| (x - mean).abs() <= p.bound_ns) {
            run += 1;
        } else {
            run = 0;
        }
        if run >= p.stable {
            let from = curve.len() - (p.window + p.stable - 1);
            return Ok(outcome(curve, true, from));
        }
    }
    let from = curve.len().saturating_sub(p.window);
    Ok(outcome(curve, false, from))
}

fn outcome(curve: Vec<Step>, converged: bool, from: usize) -> RestartOutcome {
    let window_values = curve[from..].iter().map(|s| s.restart_ns).collect();
    RestartOutcome {
        stable_from: curve[from].work,
        stable_to: curve.last().map(|s| s.work).unwrap_or(0),
        curve,
        converged,
        window_values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thesis-like curve: steep descent for 10 steps, then a saw around 100 ns.
    fn synthetic(k: usize) -> Result<(f64, f64), ()> {
        let l1 = 1.0 + 0.25 * k as f64;
        let r = if k < 10 {
            200.0 - 10.0 * k as f64
        } else {
            100.0 + [0.0, 2.0, -1.5, 3.0][k % 4]
        };
        Ok((r + l1, l1))
    }

    #[test]
    fn stops_where_the_window_first_stays_stable() {
        let o = search(&RestartParams::default(), synthetic).unwrap();
        assert!(o.converged);
        // First all-flat window ends at k = 10 + 12 = 22; 19 stable steps end at k = 40.
        assert_eq!(o.curve.len(), 41);
        assert_eq!((o.stable_from, o.stable_to), (10, 40));
        assert_eq!(o.window_values.len(), 31);
        assert!((o.restart_ns() - 98.5).abs() < 1e-9);
    }

    #[test]
    fn runs_out_of_work_on_an_unstable_curve() {
        let p = RestartParams {
            max_work: 30,
            ..Default::default()
        };
        let o = search(&p, |k| Ok::<_, ()>((100.0 + 20.0 * (k % 2) as f64, 0.0))).unwrap();
        assert!(!o.converged);
        assert_eq!(o.curve.len(), 31);
        assert_eq!(o.window_values.len(), 13);
        assert_eq!(o.restart_ns(), 100.0);
    }

    #[test]
    fn errors_stop_the_search() {
        let mut calls = 0;
        let r = search(&RestartParams::default(), |k| {
            calls += 1;
            if k == 3 {
                Err("boom")
            } else {
                Ok((1.0, 0.0))
            }
        });
        assert_eq!(r.unwrap_err(), "boom");
        assert_eq!(calls, 4);
    }

    #[test]
    fn bad_parameters_name_the_value() {
        let p = RestartParams {
            window: 1,
            ..Default::default()
        };
        assert!(p.validate().unwrap_err().contains("'1'"));
        let p = RestartParams {
            max_work: 500,
            ..Default::default()
        };
        assert!(p.validate().unwrap_err().contains("'500'"));
    }
}
