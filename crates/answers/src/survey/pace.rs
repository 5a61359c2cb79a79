//! The survey's duration from the pace measured in this run: a short calibration at
//! start (one pointer chase and one bandwidth pass, each as its own numalab process,
//! as every step runs) scales the steps' reference estimates, and each finished
//! step's actual time against its estimate updates the pace for the rest.
//!
//! The calibration runs with a 1 ms `--noise-budget`, so it times first passes only;
//! the steps settle with their default budget, and under disturbance a figure adds
//! passes up to about its first passes' time again. So the calibration's share of
//! disturbed passes scales the prior: a step is expected to take (1 + that share) of
//! its paced estimate. Measured under load 11 (`survey --quick`, 7.6× the reference):
//! steps of many figures that settled (sweep 1.9×, bandwidth kernels 3.1×, loaded
//! latency 3.1× their paced estimate) against single-figure ones (c2c 0.3×), the whole
//! run 2.0× its plan.
//!
//! The step estimates are seconds at the reference pace; [`REFERENCE_CALIBRATION_S`]
//! is what the calibration takes at that pace, derived on this project's 2-vCPU VM
//! while other builds ran (load 5–12). First: `survey --quick` planned 11 s (reference)
//! and took 45 s with the calibration commands at 0.46 s beside it: 0.11 s. With 0.11 s
//! two calibrated runs then planned 34 s and took 21.2 s (quiet core) and planned 56 s
//! and took 34.6 s (a busy loop on CPU 0): the calibration ran 1.6× slower than the
//! steps in both, so the reference is 0.11 × 1.6 ≈ 0.18 s.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Seconds the calibration takes at the pace the step estimates are given in.
pub const REFERENCE_CALIBRATION_S: f64 = 0.18;

/// Planned seconds of steps whose weight the calibration carries against the
/// steps' own measured pace: after this many planned seconds have run, the steps'
/// pace counts as much as the calibration's.
const PRIOR_S: f64 = 5.0;

/// The calibration commands: a chase and a bandwidth pass (cheap, fixed work).
pub const CALIBRATION: [&[&str]; 2] = [
    &[
        "latency",
        "--size",
        "8M",
        "--iterations",
        "3",
        "--disturbed",
        "keep",
        "--noise-budget",
        "1ms",
    ],
    &[
        "bandwidth",
        "--size",
        "16M",
        "--iterations",
        "3",
        "--noise-budget",
        "1ms",
    ],
];

/// How fast this run goes against the reference pace (2.0: twice as slow).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pace {
    /// The calibration's factor (1.0 when uncalibrated).
    pub calibrated: f64,
    /// Whether a calibration ran.
    pub measured: bool,
    /// Share (0–1) of the calibration's passes that were disturbed: the steps' expected
    /// settling overhead.
    pub disturbed: f64,
    /// Planned seconds of the steps finished so far.
    done_est: f64,
    /// Their actual seconds.
    done_s: f64,
}

impl Pace {
    /// The reference pace, as `--dry-run` prints it (no calibration).
    pub fn uncalibrated() -> Pace {
        Pace::from_calibration(REFERENCE_CALIBRATION_S, false)
    }

    /// The pace from a calibration that took `seconds`.
    pub fn from_calibration(seconds: f64, measured: bool) -> Pace {
        let f = seconds / REFERENCE_CALIBRATION_S;
        Pace {
            calibrated: if f.is_finite() && f > 0.0 { f } else { 1.0 },
            measured,
            disturbed: 0.0,
            done_est: 0.0,
            done_s: 0.0,
        }
    }

    /// The pace with `share` (0–1) of the calibration's passes disturbed.
    pub fn with_disturbed(self, share: f64) -> Pace {
        Pace {
            disturbed: if share.is_finite() {
                share.clamp(0.0, 1.0)
            } else {
                0.0
            },
            ..self
        }
    }

    /// Times the calibration commands through `exe`; the reference pace when one fails.
    pub fn calibrate(exe: &Path) -> Pace {
        let t = Instant::now();
        let (mut disturbed, mut passes) = (0, 0);
        for args in CALIBRATION {
            let out = Command::new(exe)
                .args(args)
                .arg("--json")
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output();
            match out {
                Ok(o) if o.status.success() => {
                    let (d, n) = disturbed_passes(&o.stdout);
                    (disturbed, passes) = (disturbed + d, passes + n);
                }
                _ => return Pace::uncalibrated(),
            }
        }
        let share = disturbed as f64 / passes.max(1) as f64;
        Pace::from_calibration(t.elapsed().as_secs_f64(), true).with_disturbed(share)
    }

    /// A step planned for `estimate_s` took `seconds`.
    pub fn step(&mut self, estimate_s: f64, seconds: f64) {
        if estimate_s > 0.0 && seconds.is_finite() {
            self.done_est += estimate_s;
            self.done_s += seconds;
        }
    }

    /// The factor now: the calibration's (with the settling its disturbance brings),
    /// weighed against the finished steps' own.
    pub fn factor(&self) -> f64 {
        let prior = self.calibrated * (1.0 + self.disturbed);
        (prior * PRIOR_S + self.done_s) / (PRIOR_S + self.done_est)
    }

    /// Seconds `estimate_s` of planned work will take at the pace now.
    pub fn seconds(&self, estimate_s: f64) -> f64 {
        estimate_s * self.factor()
    }

    /// How the estimate was made, for the plan and the start line.
    pub fn how(&self) -> String {
        if self.measured {
            format!(
                "at this run's measured pace, {:.1}× the reference, {:.0} % of its passes disturbed, updated after each step",
                self.calibrated,
                self.disturbed * 100.0
            )
        } else {
            "uncalibrated: at the reference pace (a quiet 2-core VM); a run calibrates at start and updates after each step".into()
        }
    }
}

/// Disturbed passes and all passes in a command's `--json` records.
fn disturbed_passes(json: &[u8]) -> (usize, usize) {
    let Ok(serde_json::Value::Array(recs)) = serde_json::from_slice(json) else {
        return (0, 0);
    };
    let marks = recs
        .iter()
        .filter_map(|r| r["data"]["disturbance"]["passes"].as_array())
        .flatten();
    marks.fold((0, 0), |(d, n), p| {
        (d + usize::from(p["disturbed"] == true), n + 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_starts_at_the_calibration_and_follows_the_steps() {
        let p = Pace::uncalibrated();
        assert_eq!((p.factor(), p.measured), (1.0, false));
        assert!(p.how().starts_with("uncalibrated"));
        let mut p = Pace::from_calibration(2.0 * REFERENCE_CALIBRATION_S, true);
        assert!((p.seconds(10.0) - 20.0).abs() < 1e-9);
        // Steps that run 4× their estimate pull the factor towards 4.
        for _ in 0..20 {
            p.step(1.0, 4.0);
        }
        assert!(p.factor() > 3.5 && p.factor() < 4.0, "{}", p.factor());
        // A bad calibration falls back to the reference.
        assert_eq!(Pace::from_calibration(f64::NAN, true).calibrated, 1.0);
        let missing = Pace::calibrate(Path::new("/nonexistent/numalab"));
        assert!(!missing.measured);
    }

    #[test]
    fn a_disturbed_calibration_expects_the_steps_to_settle_longer() {
        let json =
            br#"[{"data":{"disturbance":{"passes":[{"disturbed":true},{"disturbed":false}]}}},
            {"data":{"disturbance":{"passes":[{"disturbed":true},{"disturbed":true}]}}},
            {"data":null}]"#;
        assert_eq!(disturbed_passes(json), (3, 4));
        assert_eq!(disturbed_passes(b"not json"), (0, 0));
        let quiet = Pace::from_calibration(2.0 * REFERENCE_CALIBRATION_S, true);
        let busy = quiet.with_disturbed(0.75);
        // A step's estimate scales with the disturbance seen: 1 + 75 %.
        assert!((busy.seconds(10.0) - 1.75 * quiet.seconds(10.0)).abs() < 1e-9);
        assert!(
            busy.how().contains("75 % of its passes disturbed"),
            "{}",
            busy.how()
        );
        assert_eq!(quiet.with_disturbed(f64::NAN).disturbed, 0.0);
        assert_eq!(quiet.with_disturbed(3.0).disturbed, 1.0);
        // The steps' own pace still takes over as they finish.
        let mut p = busy;
        for _ in 0..50 {
            p.step(1.0, 2.0);
        }
        assert!((p.factor() - 2.0).abs() < 0.2, "{}", p.factor());
    }
}
