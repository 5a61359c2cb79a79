//! Passes added until a step's figure settles: the first passes, then disturbed
//! passes measured again after a short back-off and more passes while the figure's
//! interval is wider than the tolerance, until it is within it or the step's budget
//! is spent. Every pass is kept in the log; the [`Settle`] entry says how it ended.

use super::goal::{Figure, Interval};
use crate::disturb::{judge, Disturbance, PassLog, Passes, Policy, Rules};
use crate::record::Settle;
use crate::words::passes;
use std::time::Duration;

/// A step's passes as [`measure`] takes them: the figure's name and kind and the
/// passes it starts with.
#[derive(Debug, Clone, Copy)]
pub struct Step<'a> {
    /// The metric the figure is (a stat's name: "latency", "bandwidth").
    pub metric: &'a str,
    /// Median or best-of-N.
    pub figure: Figure,
    /// Passes taken first, whatever the budget.
    pub want: usize,
}

/// Most passes a step takes, as a multiple of its first ones (a bound on memory
/// when a pass is very short).
const MAX_PASS_FACTOR: usize = 20;
/// Back-off before disturbed passes are measured again, per round, and its cap.
const BACKOFF: Duration = Duration::from_millis(5);
const MAX_BACKOFF: Duration = Duration::from_millis(40);

/// One thread's passes and how its figure settled.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled<T> {
    /// Every pass and its log, as [`crate::disturb::measure`] gives them.
    pub passes: Passes<T>,
    /// How the figure settled.
    pub settle: Settle,
}

/// The wall clock since the call: a step's clock (tests pass a fake one).
pub fn clock() -> impl FnMut() -> Duration {
    let start = std::time::Instant::now();
    move || start.elapsed()
}

/// Runs `step.want` passes through `run(n)` (n passes of every thread, each with its
/// disturbance, one vector per thread), then more while a thread's figure (`value`
/// of its used passes) is not within the goal's tolerance and the budget lasts:
/// under `Remeasure` the disturbed passes are measured again after a back-off.
/// `sleep` waits the back-off (tests pass one that only advances their clock).
pub fn measure<T: Clone, E>(
    rules: &Rules,
    step: Step,
    value: impl Fn(&T) -> f64,
    clock: &mut dyn FnMut() -> Duration,
    sleep: &mut dyn FnMut(Duration),
    mut run: impl FnMut(usize) -> Result<Vec<Vec<(T, Disturbance)>>, E>,
) -> Result<Vec<Settled<T>>, E> {
    let want = step.want.max(1);
    let mut threads: Vec<Vec<(T, Disturbance, usize)>> = Vec::new();
    let (mut n, mut attempt, mut budget) = (want, 0, None);
    let batch = (want / 2).max(2);
    loop {
        for (t, passes) in grow(&mut threads, run(n)?) {
            t.extend(passes.into_iter().map(|(v, d)| (v, d, attempt)));
        }
        let elapsed = clock();
        let budget = *budget.get_or_insert_with(|| rules.settle.budget(elapsed));
        let judged: Vec<Passes<T>> = threads.iter().map(|t| judge(rules, t.clone())).collect();
        let missing = threads
            .iter()
            .map(|t| want.saturating_sub(clean(rules, t)))
            .max()
            .unwrap_or(0);
        let wide = judged
            .iter()
            .any(|p| !settled(rules, interval(step, &value, p), &p.log));
        let most = threads.iter().map(Vec::len).max().unwrap_or(0);
        attempt += 1;
        let again = (rules.policy == Policy::Remeasure && missing > 0) || wide;
        if !again || elapsed >= budget || most >= want * MAX_PASS_FACTOR {
            let capped = most >= want * MAX_PASS_FACTOR;
            return Ok(judged
                .into_iter()
                .map(|p| finish(rules, step, &value, p, budget, capped))
                .collect());
        }
        if missing > 0 {
            sleep((BACKOFF * attempt as u32).min(MAX_BACKOFF));
        }
        n = if rules.policy == Policy::Remeasure {
            missing.max(if wide { batch } else { 0 })
        } else {
            batch
        };
    }
}

/// The per-thread vectors, made on the first round.
fn grow<T, U>(threads: &mut Vec<Vec<T>>, got: Vec<U>) -> impl Iterator<Item = (&mut Vec<T>, U)> {
    if threads.is_empty() {
        threads.extend(got.iter().map(|_| Vec::new()));
    }
    threads.iter_mut().zip(got)
}

/// Undisturbed passes of one thread.
fn clean<T>(rules: &Rules, t: &[(T, Disturbance, usize)]) -> usize {
    t.iter()
        .filter(|(_, d, _)| rules.threshold.causes(d).is_empty())
        .count()
}

/// The figure of the passes the statistics use.
fn interval<T: Clone>(step: Step, value: &impl Fn(&T) -> f64, p: &Passes<T>) -> Option<Interval> {
    let v: Vec<f64> = p.used().iter().map(value).collect();
    step.figure.of(&v)
}

/// Whether a figure is settled: its interval within the tolerance, and most of the
/// passes it comes from undisturbed. A figure the disturbed passes make (every pass
/// disturbed, so all kept; or `--disturbed keep` with most disturbed) is a busy
/// machine's figure however narrow its interval: more passes are taken while the
/// budget lasts, and when it is spent the figure is recorded as not settled.
fn settled(rules: &Rules, i: Option<Interval>, log: &PassLog) -> bool {
    i.is_some_and(|i| i.within(rules.settle.tolerance_pct)) && !log.mostly_disturbed()
}

fn finish<T: Clone>(
    rules: &Rules,
    step: Step,
    value: &impl Fn(&T) -> f64,
    passes: Passes<T>,
    budget: Duration,
    capped: bool,
) -> Settled<T> {
    let tol = rules.settle.tolerance_pct;
    let i = interval(step, value, &passes);
    let settled = settled(rules, i, &passes.log);
    let why = (!settled).then(|| why(&passes.log, i, tol, capped));
    let settle = Settle {
        settled,
        metric: step.metric.into(),
        passes: passes.values.len() as u32,
        interval: i.map_or([f64::NAN; 2], |i| [i.lo, i.hi]),
        tolerance_pct: tol,
        budget_ms: budget.as_secs_f64() * 1e3,
        why,
        figure: Some(step.figure),
    };
    Settled { passes, settle }
}

/// Why a figure did not settle: what the disturbance sampler saw, or that nothing
/// was seen and the passes still spread.
fn why(log: &PassLog, i: Option<Interval>, tol: f64, capped: bool) -> String {
    let spread = i.map_or("no finite figure".into(), |i| {
        format!(
            "its interval ±{:.1} % against ±{tol} %",
            i.half_pct().min(1e6)
        )
    });
    let end = if capped {
        "pass limit reached"
    } else {
        "budget spent"
    };
    if i.is_some_and(|i| i.within(tol)) {
        // Narrow, but from disturbed passes: not an answer.
        let used = log.passes.iter().filter(|p| p.used);
        let (n, d) = used.fold((0, 0), |(n, d), p| (n + 1, d + usize::from(p.disturbed)));
        return format!(
            "machine busy: the figure comes from disturbed passes ({d} of the {n} it uses; {} of {} disturbed, {}) ({end})",
            log.disturbed(),
            passes(log.passes.len()),
            log.worst()
        );
    }
    match log.disturbed() {
        0 => format!(
            "machine busy: {spread} after {}, none seen disturbed ({end})",
            passes(log.passes.len())
        ),
        d => format!(
            "machine busy: {d} of {} disturbed ({}); {spread} ({end})",
            passes(log.passes.len()),
            log.worst()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disturb::Threshold;
    use crate::settle::Goal;
    use std::cell::Cell;
    use std::rc::Rc;

    fn busy() -> Disturbance {
        Disturbance {
            wall_ns: 1_000_000,
            runq_wait_ns: 400_000,
            involuntary_switches: 3,
            ..Default::default()
        }
    }

    fn quiet() -> Disturbance {
        Disturbance {
            wall_ns: 1_000_000,
            ..Default::default()
        }
    }

    /// A fake sampler: pass i yields `f(i)`; one fake ms per pass on a shared clock.
    fn run_with(
        rules: &Rules,
        figure: Figure,
        want: usize,
        f: impl Fn(usize) -> (f64, Disturbance),
    ) -> Settled<f64> {
        let now = Rc::new(Cell::new(Duration::ZERO));
        let (c, s, r) = (now.clone(), now.clone(), now.clone());
        let mut i = 0;
        let step = Step {
            metric: "latency",
            figure,
            want,
        };
        let mut out = measure(
            rules,
            step,
            |v: &f64| *v,
            &mut move || c.get(),
            &mut move |d| s.set(s.get() + d),
            |n| -> Result<_, ()> {
                let v = (0..n)
                    .map(|_| {
                        i += 1;
                        r.set(r.get() + Duration::from_millis(1));
                        f(i - 1)
                    })
                    .collect();
                Ok(vec![v])
            },
        )
        .unwrap();
        out.remove(0)
    }

    fn rules(budget_ms: f64) -> Rules {
        Rules {
            settle: Goal {
                budget_ms: Some(budget_ms),
                tolerance_pct: 5.0,
            },
            ..Rules::default()
        }
    }

    #[test]
    fn a_steady_figure_settles_at_its_first_passes() {
        let s = run_with(&rules(100.0), Figure::Median, 5, |i| {
            (100.0 + (i % 3) as f64, quiet())
        });
        assert!(s.settle.settled && s.settle.why.is_none(), "{:?}", s.settle);
        assert_eq!(s.settle.passes, 5);
        assert_eq!(s.settle.interval, [100.0, 102.0]);
        assert_eq!(
            (s.settle.metric.as_str(), s.settle.budget_ms),
            ("latency", 100.0)
        );
    }

    #[test]
    fn a_noisy_start_takes_more_passes_until_the_median_narrows() {
        let s = run_with(&rules(1000.0), Figure::Median, 5, |i| match i {
            0 | 1 => (300.0, quiet()),
            _ => (100.0 + (i % 2) as f64, quiet()),
        });
        assert!(s.settle.settled, "{:?}", s.settle);
        assert!(
            s.settle.passes > 5 && s.settle.passes < 100,
            "{:?}",
            s.settle
        );
    }

    #[test]
    fn disturbed_passes_are_measured_again_and_kept_in_the_log() {
        let s = run_with(&rules(1000.0), Figure::Median, 5, |i| {
            if i < 3 {
                (900.0, busy())
            } else {
                (100.0, quiet())
            }
        });
        assert!(s.settle.settled, "{:?}", s.settle);
        let log = &s.passes.log;
        assert_eq!((log.disturbed(), log.excluded()), (3, 3));
        assert!(log.remeasured() >= 3);
        assert_eq!(s.passes.values.len(), log.passes.len());
        assert!(s.passes.used().iter().all(|v| *v == 100.0));
    }

    #[test]
    fn a_figure_that_never_settles_says_so_with_its_interval_and_why() {
        // Every pass disturbed and far apart: the budget (50 fake ms) ends it.
        let s = run_with(&rules(50.0), Figure::Median, 5, |i| {
            (if i % 2 == 0 { 100.0 } else { 300.0 }, busy())
        });
        let st = &s.settle;
        assert!(!st.settled);
        assert_eq!(st.interval, [100.0, 300.0]);
        let why = st.why.as_deref().unwrap();
        assert!(why.starts_with("machine busy: "), "{why}");
        assert!(
            why.contains("passes disturbed (run-queue wait 40 %"),
            "{why}"
        );
        assert!(why.contains("budget spent"), "{why}");
        // Passes and back-offs both spend the fake clock.
        assert!(st.passes > 5 && st.passes <= 50, "{st:?}");
        // Quiet but spread: the why says nothing disturbing was seen.
        // Each pass 20 % faster than the last: the best three never agree.
        let s = run_with(&rules(20.0), Figure::Max, 4, |i| {
            (1.2f64.powi(i as i32), quiet())
        });
        let why = s.settle.why.unwrap();
        assert!(why.contains("none seen disturbed"), "{why}");
    }

    #[test]
    fn a_narrow_figure_from_disturbed_passes_is_not_settled_when_the_budget_is_spent() {
        // Every pass disturbed and all alike: the figure is the disturbed passes' (all
        // kept, none being undisturbed), so it is no answer however narrow.
        for policy in [Policy::Remeasure, Policy::Exclude, Policy::Keep] {
            let r = Rules {
                policy,
                ..rules(50.0)
            };
            let s = run_with(&r, Figure::Median, 5, |_| (101.0, busy()));
            let st = &s.settle;
            assert!(!st.settled, "{policy:?}: {st:?}");
            assert_eq!(st.interval, [101.0, 101.0]);
            // The budget was spent taking more passes in the hope of undisturbed ones.
            assert!(st.passes > 5, "{policy:?}: {st:?}");
            let why = st.why.as_deref().unwrap();
            assert!(
                why.starts_with("machine busy: the figure comes from disturbed passes ("),
                "{why}"
            );
            assert!(why.ends_with("(budget spent)"), "{why}");
        }
        // Kept but only a few disturbed (under half of the used): settled.
        let r = Rules {
            policy: Policy::Keep,
            ..rules(50.0)
        };
        let s = run_with(&r, Figure::Median, 5, |i| {
            (101.0, if i < 2 { busy() } else { quiet() })
        });
        assert!(s.settle.settled, "{:?}", s.settle);
        // Disturbed at first, then undisturbed: settled on the undisturbed passes.
        let s = run_with(&rules(1000.0), Figure::Median, 5, |i| {
            if i < 5 {
                (301.0, busy())
            } else {
                (101.0, quiet())
            }
        });
        assert!(s.settle.settled, "{:?}", s.settle);
        assert_eq!(s.settle.interval, [101.0, 101.0]);
    }

    #[test]
    fn best_of_n_settles_on_its_top_passes_and_the_pass_limit_bounds_a_step() {
        let s = run_with(&rules(1000.0), Figure::Max, 3, |i| match i {
            0 => (10.0, quiet()),
            _ => (20.0 - (i % 2) as f64 * 0.1, quiet()),
        });
        assert!(s.settle.settled, "{:?}", s.settle);
        let never = run_with(&rules(60_000.0), Figure::Max, 2, |i| {
            (1.2f64.powi(i as i32), quiet())
        });
        assert!(!never.settle.settled);
        assert!(never.settle.passes as usize <= 2 * MAX_PASS_FACTOR + 2);
        assert!(never.settle.why.unwrap().contains("pass limit reached"));
        let t = Threshold::default();
        assert!(!t.causes(&busy()).is_empty());
    }
}
