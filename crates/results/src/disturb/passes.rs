//! Which passes were disturbed, what is done with them, and what a record says: the
//! threshold that flags a pass, the policy (keep, exclude, or measure again up to K
//! times), the per-pass log a record keeps in `data.disturbance`, and its one-line
//! summary ("3 of 10 passes disturbed (steal 12 %)").

use super::sampler::Disturbance;
use crate::record::Record;
use crate::settle::Goal;
use crate::words::passes;
use serde::{Deserialize, Serialize};

/// Key of a record's `data` that holds its [`PassLog`] (every kind uses this one).
pub const DATA_KEY: &str = "disturbance";

/// How the warning of a record built mostly from disturbed passes begins.
pub const MOSTLY: &str = "most passes behind these figures were disturbed:";

/// For a table of many records: the records without their [`MOSTLY`] warnings, and
/// one warning line counting them ("warning: 3 of 40 measurements' figures …").
pub fn fold_warnings(records: &[Record], what: &str) -> (Vec<Record>, String) {
    let mut n = 0;
    let kept = records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let before = r.warnings.len();
            r.warnings.retain(|w| !w.starts_with(MOSTLY));
            n += usize::from(r.warnings.len() < before);
            r
        })
        .collect();
    let line = if n > 0 {
        format!(
            "warning: {n} of {} {what}' figures come mostly from disturbed passes (each record's warnings say which)\n",
            records.len()
        )
    } else {
        String::new()
    };
    (kept, line)
}

/// Default number of times a disturbed pass is measured again.
pub const DEFAULT_MAX_REMEASURE: usize = 3;

/// What is done with a disturbed pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// Flag it and keep it in the statistics.
    Keep,
    /// Flag it, measure again (up to K times) and leave it out of the statistics.
    #[default]
    Remeasure,
    /// Flag it and leave it out of the statistics, without measuring again.
    Exclude,
}

impl Policy {
    /// Every policy, as the flag spells it.
    pub const NAMES: &'static str = "keep, remeasure, exclude";

    /// The flag's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Keep => "keep",
            Policy::Remeasure => "remeasure",
            Policy::Exclude => "exclude",
        }
    }

    /// Parse the flag's value; the error names it and what is valid.
    pub fn parse(s: &str) -> Result<Policy, String> {
        match s {
            "keep" => Ok(Policy::Keep),
            "remeasure" => Ok(Policy::Remeasure),
            "exclude" => Ok(Policy::Exclude),
            _ => Err(format!(
                "invalid --disturbed '{s}': one of {}",
                Policy::NAMES
            )),
        }
    }
}

/// When a pass counts as disturbed. Defaults: any involuntary context switch that cost
/// the pass at least 1 % of its time in run-queue wait, run-queue wait over 5 % of the pass, steal over 1 %, any cgroup throttling, any other numalab
/// run. An SMT sibling's load is recorded but flags nothing by default (a measurement's
/// own helper may run there).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    /// Most involuntary context switches an undisturbed pass may have.
    pub involuntary_switches: u64,
    /// Largest run-queue wait share (of the pass's wall time).
    pub runq_share: f64,
    /// Largest steal share of the pass's CPU.
    pub steal_share: f64,
    /// Most cgroup throttling periods.
    pub throttled: u64,
    /// Most other numalab runs measuring at once.
    pub other_runs: usize,
    /// Largest SMT-sibling busy share (None: not judged).
    #[serde(default)]
    pub sibling_busy: Option<f64>,
}

/// The run-queue wait share from which involuntary switches count as a disturbance.
const SWITCH_WAIT_SHARE: f64 = 0.01;

impl Default for Threshold {
    fn default() -> Threshold {
        Threshold {
            involuntary_switches: 0,
            runq_share: 0.05,
            steal_share: 0.01,
            throttled: 0,
            other_runs: 0,
            sibling_busy: None,
        }
    }
}

impl Threshold {
    /// What exceeded the threshold in `d`, worst-named first ("steal 12 %").
    pub fn causes(&self, d: &Disturbance) -> Vec<String> {
        let pc = |x: f64| format!("{:.0} %", x * 100.0);
        let mut c = Vec::new();
        if d.throttled > self.throttled || (self.throttled == 0 && d.throttled_us > 0) {
            c.push(format!("cgroup throttled {} µs", d.throttled_us));
        }
        if d.steal_share() > self.steal_share {
            c.push(format!("steal {}", pc(d.steal_share())));
        }
        if d.runq_share() > self.runq_share {
            c.push(format!("run-queue wait {}", pc(d.runq_share())));
        }
        // A preemption that left the thread runnable but waiting for no measurable time
        // (a timer tick on an idle CPU) disturbs nothing: on a long pass every tick
        // would otherwise flag it.
        if d.involuntary_switches > self.involuntary_switches && d.runq_share() >= SWITCH_WAIT_SHARE
        {
            c.push(format!(
                "{} involuntary context {}",
                d.involuntary_switches,
                if d.involuntary_switches == 1 {
                    "switch"
                } else {
                    "switches"
                }
            ));
        }
        if d.other_runs > self.other_runs {
            c.push(format!("{} other numalab runs", d.other_runs));
        }
        if let (Some(t), Some(b)) = (self.sibling_busy, d.sibling_busy) {
            if b > t {
                c.push(format!("SMT sibling busy {}", pc(b)));
            }
        }
        c
    }
}

/// How an experiment treats disturbed passes (part of its serde `Options`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rules {
    /// Keep, exclude, or measure again.
    pub policy: Policy,
    /// How many times a disturbed pass is measured again (remeasure only).
    pub max_remeasure: usize,
    /// When a pass is disturbed.
    pub threshold: Threshold,
    /// What the step's figure settles to (tolerance, budget).
    #[serde(default)]
    pub settle: Goal,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            policy: Policy::default(),
            max_remeasure: DEFAULT_MAX_REMEASURE,
            threshold: Threshold::default(),
            settle: Goal::default(),
        }
    }
}

/// One pass as a record keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassMark {
    /// 0: the planned passes; k: the k-th re-measure.
    pub attempt: usize,
    /// Beyond the threshold.
    pub disturbed: bool,
    /// Its figure is in the record's statistics.
    pub used: bool,
    /// What the kernel counted.
    #[serde(flatten)]
    pub counts: Disturbance,
}

/// `data.disturbance` of a record: every pass of one thread (or rank), in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassLog {
    /// The rules the passes were judged and handled by.
    pub rules: Rules,
    /// Every pass, re-measures after the planned ones.
    pub passes: Vec<PassMark>,
}

impl PassLog {
    /// Passes flagged as disturbed.
    pub fn disturbed(&self) -> usize {
        self.passes.iter().filter(|p| p.disturbed).count()
    }

    /// Disturbed passes left out of the statistics.
    pub fn excluded(&self) -> usize {
        self.passes
            .iter()
            .filter(|p| p.disturbed && !p.used)
            .count()
    }

    /// Passes measured again (beyond the planned ones).
    pub fn remeasured(&self) -> usize {
        self.passes.iter().filter(|p| p.attempt > 0).count()
    }

    /// Whether most of the passes behind the statistics were disturbed.
    pub fn mostly_disturbed(&self) -> bool {
        let used: Vec<&PassMark> = self.passes.iter().filter(|p| p.used).collect();
        2 * used.iter().filter(|p| p.disturbed).count() > used.len()
    }

    /// The worst of each cause over the disturbed passes ("steal 12 %").
    pub fn worst(&self) -> String {
        let worst =
            self.passes
                .iter()
                .filter(|p| p.disturbed)
                .fold(Disturbance::default(), |mut w, p| {
                    let c = &p.counts;
                    w.involuntary_switches = w.involuntary_switches.max(c.involuntary_switches);
                    w.throttled = w.throttled.max(c.throttled);
                    w.throttled_us = w.throttled_us.max(c.throttled_us);
                    w.other_runs = w.other_runs.max(c.other_runs);
                    // Shares are compared at the same wall time.
                    let scale = |ns: u64| (ns as f64 / c.wall_ns.max(1) as f64 * 1e9) as u64;
                    w.steal_ns = w.steal_ns.max(scale(c.steal_ns).min(1_000_000_000));
                    w.runq_wait_ns = w.runq_wait_ns.max(scale(c.runq_wait_ns).min(1_000_000_000));
                    w.sibling_busy = match (w.sibling_busy, c.sibling_busy) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        (a, b) => a.or(b),
                    };
                    w.wall_ns = 1_000_000_000;
                    w
                });
        self.rules.threshold.causes(&worst).join(", ")
    }

    /// "3 of 10 passes disturbed (steal 12 %); 3 measured again; 3 excluded", or
    /// "0 of 10 passes disturbed".
    pub fn summary(&self) -> String {
        let (d, n) = (self.disturbed(), self.passes.len());
        let mut s = format!("{d} of {} disturbed", passes(n));
        if d == 0 {
            return s;
        }
        s.push_str(&format!(" ({})", self.worst()));
        if self.remeasured() > 0 {
            s.push_str(&format!("; {} measured again", self.remeasured()));
        }
        match self.excluded() {
            0 if self.rules.policy != Policy::Keep => {
                s.push_str("; none undisturbed, so all kept in the figures")
            }
            0 => s.push_str("; all kept in the figures"),
            x => s.push_str(&format!("; {x} excluded from the figures")),
        }
        if self.mostly_disturbed() {
            s.push_str("; the figures come mostly from disturbed passes");
        }
        s
    }

    /// The warning a record carries when most of its figures' passes were disturbed.
    pub fn warning(&self) -> Option<String> {
        self.mostly_disturbed().then(|| {
            format!(
                "{MOSTLY} {} — measure on a quieter machine, or see --disturbed",
                self.summary()
            )
        })
    }

    /// The log in a record's `data` (None: the record has none, e.g. older records).
    pub fn of(r: &Record) -> Option<PassLog> {
        serde_json::from_value(r.data.as_ref()?.get(DATA_KEY)?.clone()).ok()
    }

    /// A table cell for a record: "3 of 13" disturbed passes ("-": no log).
    pub fn cell(r: &Record) -> String {
        PassLog::of(r).map_or("-".into(), |l| {
            format!("{} of {}", l.disturbed(), l.passes.len())
        })
    }

    /// The line under a table: "Disturbed: 3 of 10 passes disturbed (…)" (None: no record has a log).
    pub fn line_of(records: &[Record]) -> Option<String> {
        Some(format!(
            "Disturbed (the machine took the CPU from a measuring thread; --disturbed): {}\n",
            PassLog::summary_of(records)?
        ))
    }

    /// The summed counts of several records' logs, as one line ("3 of 10 passes …").
    pub fn summary_of(records: &[Record]) -> Option<String> {
        let logs: Vec<PassLog> = records.iter().filter_map(PassLog::of).collect();
        let first = logs.first()?;
        let all = PassLog {
            rules: first.rules,
            passes: logs.iter().flat_map(|l| l.passes.clone()).collect(),
        };
        Some(all.summary())
    }
}

/// One thread's passes: every value in order with its log entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Passes<T> {
    /// Every pass's figure, in the order of `log.passes`.
    pub values: Vec<T>,
    /// What happened to each pass.
    pub log: PassLog,
}

impl<T: Clone> Passes<T> {
    /// The figures the statistics are built from.
    pub fn used(&self) -> Vec<T> {
        self.values
            .iter()
            .zip(&self.log.passes)
            .filter(|(_, p)| p.used)
            .map(|(v, _)| v.clone())
            .collect()
    }
}

/// Runs `want` passes through `run(n)` (n passes of every thread, each pass's figure
/// with its disturbance, one vector per thread), then, under `Remeasure`, runs again
/// as many passes as the most-disturbed thread lacks, up to `max_remeasure` times.
/// Statistics use the undisturbed passes (all passes under `Keep`, or when none was
/// undisturbed, which the summary then says).
pub fn measure<T, E>(
    rules: &Rules,
    want: usize,
    mut run: impl FnMut(usize) -> Result<Vec<Vec<(T, Disturbance)>>, E>,
) -> Result<Vec<Passes<T>>, E> {
    let mut threads: Vec<Vec<(T, Disturbance, usize)>> = Vec::new();
    let mut attempt = 0;
    let mut n = want;
    loop {
        let got = run(n)?;
        if threads.is_empty() {
            threads = got.iter().map(|_| Vec::new()).collect();
        }
        for (t, passes) in threads.iter_mut().zip(got) {
            t.extend(passes.into_iter().map(|(v, d)| (v, d, attempt)));
        }
        let clean = |t: &Vec<(T, Disturbance, usize)>| {
            t.iter()
                .filter(|(_, d, _)| rules.threshold.causes(d).is_empty())
                .count()
        };
        n = threads
            .iter()
            .map(|t| want.saturating_sub(clean(t)))
            .max()
            .unwrap_or(0);
        attempt += 1;
        if rules.policy != Policy::Remeasure || n == 0 || attempt > rules.max_remeasure {
            break;
        }
    }
    Ok(threads.into_iter().map(|t| judge(rules, t)).collect())
}

/// One thread's passes judged: each flagged against the threshold and marked used
/// or not as the policy says (all used when none was undisturbed).
pub fn judge<T>(rules: &Rules, passes: Vec<(T, Disturbance, usize)>) -> Passes<T> {
    let flags: Vec<bool> = passes
        .iter()
        .map(|(_, d, _)| !rules.threshold.causes(d).is_empty())
        .collect();
    let any_clean = flags.iter().any(|d| !d);
    let mut values = Vec::with_capacity(passes.len());
    let mut marks = Vec::with_capacity(passes.len());
    for ((v, d, attempt), disturbed) in passes.into_iter().zip(flags) {
        values.push(v);
        marks.push(PassMark {
            attempt,
            disturbed,
            used: !disturbed || rules.policy == Policy::Keep || !any_clean,
            counts: d,
        });
    }
    Passes {
        values,
        log: PassLog {
            rules: *rules,
            passes: marks,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy() -> Disturbance {
        Disturbance {
            wall_ns: 1_000_000,
            involuntary_switches: 2,
            steal_ns: 120_000,
            ..Default::default()
        }
    }

    fn quiet() -> Disturbance {
        Disturbance {
            wall_ns: 1_000_000,
            ..Default::default()
        }
    }

    /// Passes disturbed while `left` > 0, then quiet.
    fn runner(mut left: usize) -> impl FnMut(usize) -> Result<Vec<Vec<(f64, Disturbance)>>, ()> {
        move |n| {
            let v = (0..n)
                .map(|_| {
                    if left > 0 {
                        left -= 1;
                        (100.0, busy())
                    } else {
                        (10.0, quiet())
                    }
                })
                .collect();
            Ok(vec![v])
        }
    }

    #[test]
    fn disturbed_passes_are_measured_again_and_left_out() {
        let p = measure(&Rules::default(), 10, runner(3)).unwrap();
        let p = &p[0];
        assert_eq!(p.values.len(), 13);
        assert_eq!(p.used(), vec![10.0; 10]);
        assert_eq!(
            (p.log.disturbed(), p.log.remeasured(), p.log.excluded()),
            (3, 3, 3)
        );
        let s = p.log.summary();
        assert!(s.starts_with("3 of 13 passes disturbed (steal 12 %"), "{s}");
        assert!(p.log.warning().is_none());
    }

    #[test]
    fn a_switch_counts_only_when_it_cost_run_queue_wait() {
        let t = Threshold::default();
        let tick = Disturbance {
            wall_ns: 100_000_000,
            involuntary_switches: 3,
            runq_wait_ns: 20_000,
            ..Default::default()
        };
        assert!(t.causes(&tick).is_empty(), "{:?}", t.causes(&tick));
        let waited = Disturbance {
            runq_wait_ns: 2_000_000,
            ..tick
        };
        assert_eq!(t.causes(&waited), ["3 involuntary context switches"]);
    }

    #[test]
    fn remeasure_stops_after_k_and_keep_uses_everything() {
        let p = measure(&Rules::default(), 2, runner(100)).unwrap();
        // 2 planned, then 3 re-measures of 2: every pass disturbed, so all are used.
        assert_eq!(p[0].values.len(), 8);
        assert!(p[0].log.mostly_disturbed() && p[0].log.warning().is_some());
        let keep = Rules {
            policy: Policy::Keep,
            ..Rules::default()
        };
        let p = measure(&keep, 4, runner(1)).unwrap();
        assert_eq!((p[0].values.len(), p[0].used().len()), (4, 4));
        let excl = Rules {
            policy: Policy::Exclude,
            ..Rules::default()
        };
        let p = measure(&excl, 4, runner(1)).unwrap();
        assert_eq!((p[0].values.len(), p[0].used().len()), (4, 3));
    }

    #[test]
    fn the_log_reads_back_from_a_record_and_old_records_have_none() {
        let p = measure(&Rules::default(), 3, runner(1)).unwrap();
        let mut r = Record::new(
            "k",
            "n",
            crate::Provenance::collect("t", "none"),
            serde_json::json!({}),
        );
        assert!(PassLog::of(&r).is_none());
        r.set_data(&serde_json::json!({ DATA_KEY: p[0].log }));
        assert_eq!(PassLog::of(&r), Some(p[0].log.clone()));
        assert!(Policy::parse("sometimes")
            .unwrap_err()
            .contains("keep, remeasure, exclude"));
    }
}
