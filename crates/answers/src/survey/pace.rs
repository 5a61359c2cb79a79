//! The survey's duration from the pace measured in this run: a short calibration at
//! start (one pointer chase and one bandwidth pass, each as its own numalab process,
//! as every step runs) scales the steps' reference estimates, and each finished
//! step's actual time against its estimate updates the pace for the rest. The
//! calibration runs on the CPU the single-CPU steps will use (`survey::quiet`): with a
//! busy loop on CPU 0 it once ran there while the steps then moved to CPU 1, and its
//! disturbed share no longer said how the steps would settle.
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
//! First touches are charged apart: the calibration also times the first touch of a
//! 64 MiB sample's pages (`survey::touch`), and each step's estimate gains (or loses)
//! its bytes' pages at what that cost is beyond the pace's (issue 41: the unowned
//! chase's 4 GiB took 3.4 s one hour and 13.9 s another on the Emerald Rapids guest,
//! its page faults 1.5 against 11.7 µs, while the calibration read the same pace).
//!
//! The step estimates are seconds at the reference pace; [`REFERENCE_CALIBRATION_S`]
//! is what the calibration takes at that pace, derived on this project's 2-vCPU VM
//! while other builds ran (load 5–12).
//!
//! Tried and not kept: running the calibration with the steps' default budget (so its
//! settling would be in its own time) instead of the 1 ms budget and the share. Under
//! load 14, with every calibration pass disturbed, it gave a factor of 4.0–4.9 where
//! the steps ran 6.9× their reference; this rule gave 6.0–6.9 (one pair of quick
//! surveys and four calibrations, 2026-11-27). A quiet run's overestimate (a few
//! disturbed passes count fully here, though the steps then settle at once) remains. First: `survey --quick` planned 11 s (reference)
//! and took 45 s with the calibration commands at 0.46 s beside it: 0.11 s. With 0.11 s
//! two calibrated runs then planned 34 s and took 21.2 s (quiet core) and planned 56 s
//! and took 34.6 s (a busy loop on CPU 0): the calibration ran 1.6× slower than the
//! steps in both, so the reference is 0.11 × 1.6 ≈ 0.18 s. That was tuned while other
//! builds ran (load 10–14); on the same VM quiet and with one busy core — the cases a
//! user meets and issue 41 targets — 0.18 s overestimated every run by 34–45 % (quiet
//! planned 20–23 s, took 12.7–14.6 s; busy core planned 51–57 s, took 32–33 s; the
//! calibration read 1.7× the reference with none of its passes disturbed), so the
//! reference is the quiet calibration's own time, 0.30 s (2026-11-27). Under heavy load
//! the steps' measured pace pulls the remaining estimate up after each step.

use super::Step;
use numalab_topo::Machine;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Seconds the calibration takes at the pace the step estimates are given in.
pub const REFERENCE_CALIBRATION_S: f64 = 0.30;

/// How much longer a step that runs on several CPUs takes per unit of the busiest other
/// CPU's taken share (0–1), beyond the calibration's pace. The calibration runs on the
/// quietest CPU, so it cannot see what a busy neighbour does to a step that also needs
/// that neighbour: with a loop pinned on CPU 0 of the Emerald Rapids guest, such steps
/// (injection table, all-thread kernels, 2-thread scaling, loaded latency) took 1.53×
/// their quiet time in two quick surveys against two quiet ones, the whole run's
/// calibration 1.09×, so 1.53 / 1.09 ≈ 1 + 0.40. Planned without it, busy quick
/// surveys took +22 to +52 % over their plan (2026-11-28).
pub const SPANNING_BUSY: f64 = 0.40;

/// The same for a single-CPU step: it runs on the quietest CPU, but settles over more
/// passes beside a busy neighbour (the same runs: 1.23× quiet, 1.13× past the
/// calibration's).
pub const SINGLE_BUSY: f64 = 0.13;

/// Seconds the first touch of a 4 KiB page takes at the reference pace, in
/// [`super::touch::first_touch_s`]'s sample and, alike, in a step: on the 2-vCPU
/// Emerald Rapids guest, quiet (2026-11-28, its calibration at 0.9–1.0× the
/// reference), the sample read 2.1–2.4 µs inside the survey and the steps spent
/// 2.1–2.7 µs of kernel time per minor fault (the fault and zeroing, binding, and the
/// pages' location proof), where the step estimates were last fitted.
pub const REFERENCE_TOUCH_S: f64 = 2.2e-6;

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
    /// Seconds the calibration took (part of the run's whole time).
    pub spent_s: f64,
    /// The busiest CPU's taken share (0–1) besides the calibration's, read at start.
    pub others_taken: f64,
    /// Seconds a first touch of a page took at start (None: not measured).
    pub touch_s: Option<f64>,
    /// That cost against the reference's, past the calibration's pace (1.0: as the
    /// pace says; 5.0: first touches five times dearer than everything else).
    pub touch_ratio: f64,
    /// The hypervisor takes freed guest memory back (free page reporting), so a step's
    /// first touches may cost more than the sample's: on the Emerald Rapids guest one
    /// 4 GiB chase took 3.7 s and the next 14.8 s to set up.
    pub reclaimed: bool,
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
        let ok = f.is_finite() && f > 0.0;
        Pace {
            calibrated: if ok { f } else { 1.0 },
            measured,
            disturbed: 0.0,
            spent_s: if ok && measured { seconds } else { 0.0 },
            others_taken: 0.0,
            touch_s: None,
            touch_ratio: 1.0,
            reclaimed: false,
            done_est: 0.0,
            done_s: 0.0,
        }
    }

    /// The pace with `share` (0–1) of the calibration's passes disturbed.
    pub fn with_disturbed(self, share: f64) -> Pace {
        Pace {
            disturbed: share_of(share),
            ..self
        }
    }

    /// The pace with the busiest other CPU `taken` (0–1) by other work.
    pub fn with_others_taken(self, taken: f64) -> Pace {
        Pace {
            others_taken: share_of(taken),
            ..self
        }
    }

    /// The pace with a first touch of a page taking `per_page` seconds at start; a
    /// bad or missing reading leaves it as the reference.
    pub fn with_touch(self, per_page: Option<f64>) -> Pace {
        let Some(t) = per_page.filter(|t| t.is_finite() && *t > 0.0) else {
            return self;
        };
        Pace {
            touch_s: Some(t),
            touch_ratio: (t / REFERENCE_TOUCH_S / self.calibrated).clamp(0.25, 20.0),
            ..self
        }
    }

    /// A step's planned seconds at the reference pace, `estimate_s`, with what the
    /// other CPUs' load will add to it (`spans`: the step runs on several CPUs) and
    /// what its `touch_bytes` of new pages cost beyond or below the reference's
    /// (never below a fifth of the estimate: the rest is not first touches).
    pub fn weigh(&self, estimate_s: f64, spans: bool, touch_bytes: u64) -> f64 {
        let per = if spans { SPANNING_BUSY } else { SINGLE_BUSY };
        let busy = estimate_s * (1.0 + per * self.others_taken);
        let pages = touch_bytes as f64 / 4096.0;
        let touch = pages * REFERENCE_TOUCH_S * (self.touch_ratio - 1.0);
        (busy + touch).max(busy / 5.0)
    }

    /// The steps, each one's plan with what the other CPUs' load adds to it (so the
    /// bar and the measured pace compare a step's time with the same figure).
    pub fn weighed(&self, m: &Machine, steps: &[Step]) -> Vec<Step> {
        steps
            .iter()
            .map(|s| {
                let mut s = s.clone();
                let spans = super::quiet::spans_cpus(m, &s);
                s.estimate_s = self.weigh(s.estimate_s, spans, s.touch_bytes);
                s
            })
            .collect()
    }

    /// Times the calibration commands through `exe` on `cpu` (None: the commands'
    /// default), the CPU the single-CPU steps will use; the reference pace when one fails.
    pub fn calibrate(exe: &Path, cpu: Option<u32>) -> Pace {
        let t = Instant::now();
        let (mut disturbed, mut passes) = (0, 0);
        let on: Vec<String> = cpu.map_or(Vec::new(), |c| vec!["--cpu".into(), c.to_string()]);
        for args in CALIBRATION {
            let out = Command::new(exe)
                .args(args)
                .args(&on)
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
        let share = shrunk_share(disturbed, passes);
        // The commands alone set the pace; the first-touch sample is charged apart.
        let pace = Pace::from_calibration(t.elapsed().as_secs_f64(), true).with_disturbed(share);
        let touch = super::touch::first_touch_s(cpu);
        Pace {
            spent_s: t.elapsed().as_secs_f64(),
            reclaimed: numalab_results::provenance::free_page_reporting(),
            ..pace.with_touch(touch)
        }
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

    /// The whole run's seconds as planned at start: the calibration already spent and
    /// `estimate_s` of planned steps at the pace now.
    pub fn total(&self, estimate_s: f64) -> f64 {
        self.spent_s + self.seconds(estimate_s)
    }

    /// How the estimate was made, for the plan and the start line.
    pub fn how(&self) -> String {
        if self.measured {
            let others = if self.others_taken >= 0.2 {
                format!(
                    ", another CPU {:.0} % taken by other work (steps on several CPUs planned {:.2}× longer)",
                    self.others_taken * 100.0,
                    1.0 + SPANNING_BUSY * self.others_taken
                )
            } else {
                String::new()
            };
            // Worth a word only when it moves the plan: a third off either way.
            let touch = match self.touch_s {
                Some(t) if !(0.75..=1.33).contains(&self.touch_ratio) => format!(
                    ", a first touch of a page {:.1} µs ({:.1}× what the pace predicts: steps planned for their new pages)",
                    t * 1e6,
                    self.touch_ratio
                ),
                _ => String::new(),
            };
            let reclaimed = if self.reclaimed {
                ", the hypervisor taking freed memory back (free page reporting: a step's first touches may cost more than the sample's)"
            } else {
                ""
            };
            format!(
                "at this run's measured pace, {:.1}× the reference, {:.0} % of its passes disturbed{others}{touch}{reclaimed}, updated after each step",
                self.calibrated,
                self.disturbed * 100.0
            )
        } else {
            "uncalibrated: at the reference pace (a quiet 2-core VM); a run calibrates at start and updates after each step".into()
        }
    }
}

/// Prior passes of the disturbed share: [`PRIOR_DISTURBED`] of [`PRIOR_PASSES`].
const PRIOR_PASSES: usize = 6;
/// Of those, disturbed.
const PRIOR_DISTURBED: usize = 1;

/// The calibration's disturbed share, drawn toward the share usually seen: its six
/// passes can only read 0, 17, 33 … %, and one pass more or less swung the plan by
/// 17 %. Six quick surveys on the 2-vCPU guest (2026-11-28, three quiet, three with
/// CPU 0 busy) read 33, 0, 17, 17, 33 and 0 %, mean 17 %, and ran −22 to +33 % from
/// their plans, the outliers the 0 and 33 % readings; a Beta prior worth six passes at
/// that mean (1 of 6) keeps a whole calibration disturbed near 58 % and a quiet one at
/// 8 %, and narrows those six runs to −17 … +23 %. Six fresh runs with it: quiet −16,
/// +2, +4 %; busy +3, +4 and +38 % (there the loaded-latency family settled for 17.3 s
/// against 8.5–9.9 s in the other two: a step's own settling, not the calibration).
fn shrunk_share(disturbed: usize, passes: usize) -> f64 {
    (disturbed + PRIOR_DISTURBED) as f64 / (passes + PRIOR_PASSES) as f64
}

/// A share read from outside, within 0–1 (0 when not a number).
fn share_of(x: f64) -> f64 {
    if x.is_finite() {
        x.clamp(0.0, 1.0)
    } else {
        0.0
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
        let missing = Pace::calibrate(Path::new("/nonexistent/numalab"), Some(1));
        assert!(!missing.measured);
    }

    #[test]
    fn a_busy_neighbour_lengthens_steps_on_several_cpus_more_than_single_ones() {
        let quiet = Pace::from_calibration(REFERENCE_CALIBRATION_S, true);
        assert_eq!(quiet.weigh(10.0, true, 0), 10.0);
        assert!(!quiet.how().contains("taken by other work"));
        let busy = quiet.with_others_taken(1.0);
        assert!((busy.weigh(10.0, true, 0) - 14.0).abs() < 1e-9);
        assert!((busy.weigh(10.0, false, 0) - 11.3).abs() < 1e-9);
        assert!(
            busy.how().contains("another CPU 100 % taken by other work"),
            "{}",
            busy.how()
        );
        // Out-of-range readings are clamped, NaN ignored.
        assert_eq!(quiet.with_others_taken(f64::NAN).others_taken, 0.0);
        assert_eq!(quiet.with_others_taken(3.0).others_taken, 1.0);
    }

    #[test]
    fn dear_first_touches_lengthen_steps_by_their_pages_past_the_pace() {
        let gib = 1u64 << 30;
        let pages = (gib / 4096) as f64;
        let quiet = Pace::from_calibration(REFERENCE_CALIBRATION_S, true);
        // First touches five times the reference at the reference pace: each page
        // costs four times its reference cost more.
        let dear = quiet.with_touch(Some(5.0 * REFERENCE_TOUCH_S));
        assert!((dear.touch_ratio - 5.0).abs() < 1e-9);
        let want = 10.0 + pages * REFERENCE_TOUCH_S * 4.0;
        assert!((dear.weigh(10.0, false, gib) - want).abs() < 1e-9);
        assert!(
            dear.how().contains("a first touch of a page 11.0 µs (5.0×"),
            "{}",
            dear.how()
        );
        // A machine slower at everything, first touches included: the pace covers it.
        let slow = Pace::from_calibration(2.0 * REFERENCE_CALIBRATION_S, true)
            .with_touch(Some(2.0 * REFERENCE_TOUCH_S));
        assert!((slow.touch_ratio - 1.0).abs() < 1e-9);
        assert_eq!(slow.weigh(10.0, false, gib), 10.0);
        assert!(!slow.how().contains("first touch"), "{}", slow.how());
        // A hypervisor that takes freed memory back is said, whatever the sample read.
        let reclaimed = Pace {
            reclaimed: true,
            ..slow
        };
        assert!(
            reclaimed.how().contains(
                ", the hypervisor taking freed memory back (free page reporting: a step's first touches may cost more than the sample's), updated"
            ),
            "{}",
            reclaimed.how()
        );
        assert!(!slow.how().contains("free page reporting"));
        // Cheap first touches shorten a step, never below a fifth of it.
        let cheap = quiet.with_touch(Some(REFERENCE_TOUCH_S / 10.0));
        assert_eq!(cheap.touch_ratio, 0.25);
        assert!(cheap.weigh(10.0, false, gib) < 10.0);
        assert_eq!(cheap.weigh(1.0, false, 64 * gib), 0.2);
        // No reading, or a bad one, leaves the reference.
        for bad in [None, Some(f64::NAN), Some(0.0), Some(-1.0)] {
            assert_eq!(quiet.with_touch(bad).touch_ratio, 1.0);
        }
    }

    #[test]
    fn weighed_steps_on_several_cpus_grow_more_than_single_cpu_ones() {
        let m = numalab_topo::Host::load(&numalab_topo::TopologySource::Synthetic(
            "pack:1 l3:1 core:2 pu:1".into(),
        ))
        .expect("synthetic topology")
        .machine;
        let steps = super::super::plan(&m, true, false);
        let p = Pace::from_calibration(REFERENCE_CALIBRATION_S, true).with_others_taken(1.0);
        let w = p.weighed(&m, &steps);
        let ratio = |t: &str| {
            let i = steps.iter().position(|s| s.title.starts_with(t)).unwrap();
            w[i].estimate_s / steps[i].estimate_s
        };
        assert!((ratio("injection table") - 1.4).abs() < 1e-9);
        assert!((ratio("loaded latency family") - 1.4).abs() < 1e-9);
        assert!((ratio("memory-hierarchy sweep") - 1.13).abs() < 1e-9);
        assert!((ratio("bandwidth kernels, 1 thread") - 1.13).abs() < 1e-9);
        // A quiet neighbour changes nothing.
        let quiet = Pace::from_calibration(REFERENCE_CALIBRATION_S, true);
        let same: Vec<f64> = quiet
            .weighed(&m, &steps)
            .iter()
            .map(|s| s.estimate_s)
            .collect();
        let plan: Vec<f64> = steps.iter().map(|s| s.estimate_s).collect();
        assert_eq!(same, plan);
    }

    #[test]
    fn a_disturbed_calibration_expects_the_steps_to_settle_longer() {
        let json =
            br#"[{"data":{"disturbance":{"passes":[{"disturbed":true},{"disturbed":false}]}}},
            {"data":{"disturbance":{"passes":[{"disturbed":true},{"disturbed":true}]}}},
            {"data":null}]"#;
        assert_eq!(disturbed_passes(json), (3, 4));
        assert_eq!(disturbed_passes(b"not json"), (0, 0));
        // Six passes read in steps of 17 %; the prior narrows the swing of one pass.
        assert!((shrunk_share(0, 6) - 1.0 / 12.0).abs() < 1e-12);
        assert!((shrunk_share(2, 6) - 0.25).abs() < 1e-12);
        assert!((shrunk_share(6, 6) - 7.0 / 12.0).abs() < 1e-12);
        // Many passes speak for themselves.
        assert!((shrunk_share(500, 1000) - 0.5).abs() < 0.01);
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

    /// Runs a synthetic survey: a calibration at `calib`× the reference, steps of
    /// `plan` reference seconds that truly run at `truth`× it. Returns the whole run's
    /// planned seconds at start, the true seconds, and the error of the remaining
    /// estimate after each step (planned left against true left, relative to the run).
    fn run(calib: f64, truth: f64, plan: &[f64]) -> (f64, f64, Vec<f64>) {
        let mut p = Pace::from_calibration(calib * REFERENCE_CALIBRATION_S, true);
        let total: f64 = plan.iter().sum();
        let planned = p.total(total);
        let true_total = p.spent_s + truth * total;
        let mut left = total;
        let mut errors = Vec::new();
        for &e in plan {
            p.step(e, truth * e);
            left -= e;
            errors.push((p.seconds(left) - truth * left).abs() / true_total);
        }
        (planned, true_total, errors)
    }

    #[test]
    fn a_run_at_the_calibrated_pace_is_planned_exactly_calibration_included() {
        let plan = [0.2, 2.0, 0.7, 0.2, 0.2, 1.4, 0.3, 3.5];
        let (planned, truth, errors) = run(3.0, 3.0, &plan);
        assert!((planned - truth).abs() < 1e-9, "{planned} vs {truth}");
        assert!(errors.iter().all(|e| *e < 1e-9), "{errors:?}");
        // The calibration's own seconds are part of the run's planned whole.
        let p = Pace::from_calibration(3.0 * REFERENCE_CALIBRATION_S, true);
        assert!((p.total(0.0) - 3.0 * REFERENCE_CALIBRATION_S).abs() < 1e-9);
        assert_eq!(Pace::uncalibrated().total(10.0), 10.0);
    }

    #[test]
    fn steps_slower_than_the_calibration_pull_the_remaining_estimate_to_their_pace() {
        let plan = [1.0; 20];
        // The steps run 1.5× slower than the calibration said (a busy core they share).
        let (planned, truth, errors) = run(2.0, 3.0, &plan);
        assert!(planned < truth);
        // The error of what is left shrinks as steps finish, to nothing at the end.
        assert!(
            errors.windows(2).all(|w| w[1] <= w[0] + 1e-12),
            "{errors:?}"
        );
        assert!(
            errors[9] < errors[0] / 2.0 && errors[19] < 1e-9,
            "{errors:?}"
        );
        // And faster ones (a quiet machine after a disturbed calibration) alike.
        let (planned, truth, errors) = run(3.0, 1.5, &plan);
        assert!(planned > truth);
        assert!(
            errors.windows(2).all(|w| w[1] <= w[0] + 1e-12),
            "{errors:?}"
        );
        assert!(
            errors[9] < errors[0] / 2.0 && errors[19] < 1e-9,
            "{errors:?}"
        );
    }
}
