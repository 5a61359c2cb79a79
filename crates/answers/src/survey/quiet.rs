//! Which CPU the survey's single-CPU steps measure on. A step with one requestor
//! (the sweep, the latency of each line state, the 1-thread bandwidth kernels, the
//! chase of the loaded-latency family, the invalidation requestor) runs by default on
//! the first CPU of its kind, which another process may keep busy. Before such a step
//! the survey reads how busy each CPU of the default's node, L3 domain and core kind is
//! (`disturb::busy_now`, over [`WINDOW`]) and runs it on the quietest; again when the
//! figures are old or the step before was disturbed. The choice, with the shares it was
//! made from, goes into the step's records (`placement.cpu_choice`, the step record's
//! `cpu_choice`) and the first screen says it. A step the user placed is not a survey
//! step: a command such as `numalab latency --cpu 0` is never moved.

use super::experiment::{argv, Experiment};
use super::plan::Step;
use numalab_results::disturb::{busy_now, CpuBusy};
use numalab_results::Record;
use numalab_topo::{Machine, ThreadSpec};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// How long each reading of the CPUs' shares lasts.
pub const WINDOW: Duration = Duration::from_millis(100);

/// How much less taken (busy or stolen, 0–1) another CPU must be for a step to leave
/// its default: a /proc/stat tick is 10 % of the window, so closer is noise.
pub const MARGIN: f64 = 0.10;

/// How long a reading stands before a single-CPU step reads the shares again.
const FRESH: Duration = Duration::from_secs(20);

/// Where a single-CPU step measured, and the figures it was chosen from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuChoice {
    /// The CPU the step measured on.
    pub cpu: u32,
    /// The CPU the step measures on by default.
    pub default: u32,
    /// How much less taken another CPU had to be (0–1).
    pub margin: f64,
    /// The shares read of every candidate: the default and the CPUs of its node, L3
    /// domain and core kind this process may use.
    pub busy: Vec<CpuBusy>,
}

impl CpuChoice {
    /// Whether the step left its default CPU.
    pub fn moved(&self) -> bool {
        self.cpu != self.default
    }

    /// The shares read of `cpu`.
    pub fn of(&self, cpu: u32) -> Option<&CpuBusy> {
        self.busy.iter().find(|b| b.cpu == cpu)
    }

    /// The most any CPU other than the chosen one was taken (0–1): what slows the
    /// steps that run on several CPUs.
    pub fn others_taken(&self) -> f64 {
        self.busy
            .iter()
            .filter(|b| b.cpu != self.cpu)
            .map(CpuBusy::taken)
            .fold(0.0, f64::max)
    }

    /// The first screen's line: where the step measured and why; None when its default
    /// was quiet.
    pub fn words(&self) -> Option<String> {
        let d = self.of(self.default)?;
        if self.moved() {
            return Some(format!(
                "measured on CPU {}: CPU {} was {}",
                self.cpu,
                self.default,
                d.words()
            ));
        }
        if d.taken() < 0.2 {
            return None;
        }
        let others: Vec<String> = self
            .busy
            .iter()
            .filter(|b| b.cpu != self.default)
            .map(|b| format!("CPU {} {:.0} %", b.cpu, b.taken() * 100.0))
            .collect();
        let why = match others.is_empty() {
            true => "no other CPU of its node, L3 and kind".to_string(),
            false => format!(
                "none of its node, L3 and kind was quieter ({})",
                others.join(", ")
            ),
        };
        Some(format!(
            "measured on CPU {} though it was {}: {why}",
            self.default,
            d.words()
        ))
    }
}

/// The CPUs a step whose default is `default` may move to: those of its node, L3
/// domain and core kind (the default first).
pub fn candidates(m: &Machine, default: u32) -> Vec<u32> {
    m.peers(default)
}

/// The quietest candidate of `default`: least taken, its SMT siblings' load counting a
/// quarter (a sibling shares the core); the default unless another is [`MARGIN`] quieter.
pub fn choose(m: &Machine, default: u32, busy: &[CpuBusy]) -> CpuChoice {
    let cands = candidates(m, default);
    let taken = |c: u32| busy.iter().find(|b| b.cpu == c).map_or(0.0, CpuBusy::taken);
    let core = |c: u32| m.pus.iter().find(|p| p.os == c).map(|p| p.core);
    let score = |c: u32| {
        let sibs = m
            .pus
            .iter()
            .filter(|p| p.os != c && Some(p.core) == core(c))
            .map(|p| taken(p.os));
        taken(c) + 0.25 * sibs.sum::<f64>()
    };
    let best = cands
        .iter()
        .copied()
        .min_by(|a, b| score(*a).total_cmp(&score(*b)))
        .unwrap_or(default);
    let cpu = if score(default) - score(best) >= MARGIN {
        best
    } else {
        default
    };
    CpuChoice {
        cpu,
        default,
        margin: MARGIN,
        busy: cands
            .iter()
            .filter_map(|c| busy.iter().find(|b| b.cpu == *c).cloned())
            .collect(),
    }
}

/// The CPU a step's one requestor measures on by default; None when the step is not a
/// single-CPU step (several requestors, pairs, the injection table, a matrix).
pub fn default_cpu(m: &Machine, s: &Step) -> Option<u32> {
    let (spec, count) = match s.experiment.as_ref()? {
        Experiment::Latency(o) => (&o.crew.cpu, o.crew.count),
        Experiment::Bandwidth(o) if !o.injection && o.mix.is_none() => (&o.crew.cpu, o.crew.count),
        Experiment::Loaded(o) => (&o.cpu, None),
        Experiment::Invalidate(o) => (&o.cpu, None),
        _ => return None,
    };
    if count.is_some_and(|n| n != 1) {
        return None;
    }
    let parsed = ThreadSpec::parse(spec).ok()?;
    Some(numalab_bench::crew::one(m, parsed, spec).ok()?.pu.os)
}

/// Whether step `s` keeps more than one CPU at work: several requestors, pairs, the
/// injection table, a matrix, or a loaded-latency chase beside its injectors.
pub fn spans_cpus(m: &Machine, s: &Step) -> bool {
    matches!(s.experiment, Some(Experiment::Loaded(_))) || default_cpu(m, s).is_none()
}

/// `s` measuring on `cpu` instead of its default (its command line rebuilt).
pub fn on_cpu(s: &Step, cpu: u32) -> Step {
    let mut s = s.clone();
    let c = cpu.to_string();
    if let Some(e) = &mut s.experiment {
        match e {
            Experiment::Latency(o) => o.crew.cpu = c,
            Experiment::Bandwidth(o) => o.crew.cpu = c,
            Experiment::Loaded(o) => o.cpu = c,
            Experiment::Invalidate(o) => o.cpu = c,
            _ => return s,
        }
        s.args = argv(e);
    }
    s
}

/// Whether most passes of `records` were disturbed (the CPU's load may have changed).
pub fn disturbed(records: &[Record]) -> bool {
    let (mut d, mut n) = (0, 0);
    for r in records {
        let passes = r
            .data
            .as_ref()
            .and_then(|v| v["disturbance"]["passes"].as_array());
        for p in passes.into_iter().flatten() {
            d += usize::from(p["disturbed"] == true);
            n += 1;
        }
    }
    n > 0 && 2 * d >= n
}

/// Puts the choice into a step's records: `placement.cpu_choice` of each.
pub fn annotate(records: &mut [Record], c: &CpuChoice) {
    let v = serde_json::to_value(c).expect("a CPU choice serialises");
    for r in records {
        match &mut r.placement {
            Some(serde_json::Value::Object(p)) => {
                p.insert("cpu_choice".into(), v.clone());
            }
            Some(_) => {}
            None => r.placement = Some(serde_json::json!({ "cpu_choice": v })),
        }
    }
}

/// How the shares are read: a reading of these CPUs.
type Reader = Box<dyn FnMut(&[u32]) -> Vec<CpuBusy>>;

/// Places the survey's single-CPU steps as they come, reading the shares when needed.
pub struct Placer {
    machine: Machine,
    read: Reader,
    last: Option<(Instant, Vec<CpuBusy>)>,
}

impl Placer {
    /// A placer on `m` that reads this machine's CPUs.
    pub fn new(m: Machine) -> Placer {
        Placer::with_reader(m, Box::new(|cpus: &[u32]| busy_now(cpus, WINDOW)))
    }

    /// A placer that reads the shares through `read` (tests give fixed figures).
    pub fn with_reader(m: Machine, read: Reader) -> Placer {
        Placer {
            machine: m,
            read,
            last: None,
        }
    }

    fn shares(&mut self) -> Vec<CpuBusy> {
        match &self.last {
            Some((at, b)) if at.elapsed() < FRESH => b.clone(),
            _ => {
                let cpus: Vec<u32> = self.machine.pus.iter().map(|p| p.os).collect();
                let b = (self.read)(&cpus);
                self.last = Some((Instant::now(), b.clone()));
                b
            }
        }
    }

    /// The step as it runs, and where it measures (None: not a single-CPU step).
    pub fn place(&mut self, s: &Step) -> (Step, Option<CpuChoice>) {
        let Some(default) = default_cpu(&self.machine, s) else {
            return (s.clone(), None);
        };
        let busy = self.shares();
        let c = choose(&self.machine, default, &busy);
        let placed = if c.moved() {
            on_cpu(s, c.cpu)
        } else {
            s.clone()
        };
        (placed, Some(c))
    }

    /// A step ended with `records`: when most of its passes were disturbed, the shares
    /// are read again before the next single-CPU step.
    pub fn after(&mut self, records: &[Record]) {
        if disturbed(records) {
            self.last = None;
        }
    }

    /// Where the default single-CPU requestor (`compact`) measures now: the CPU the
    /// pace's calibration runs on.
    pub fn first_choice(&mut self) -> Option<CpuChoice> {
        let spec = ThreadSpec::parse("compact").ok()?;
        let default = numalab_bench::crew::one(&self.machine, spec, "compact").ok()?;
        let busy = self.shares();
        Some(choose(&self.machine, default.pu.os, &busy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::{Host, TopologySource};
    use std::cell::Cell;
    use std::rc::Rc;

    fn machine(s: &str) -> Machine {
        Host::load(&TopologySource::Synthetic(s.into()))
            .unwrap()
            .machine
    }

    /// Figures read: `busy[i]` for CPU i, CPU 0 running "pid 4242 sh" when busy.
    fn read(busy: &[f64]) -> Vec<CpuBusy> {
        busy.iter()
            .enumerate()
            .map(|(i, &b)| CpuBusy {
                cpu: i as u32,
                busy: b,
                niced: 0.0,
                steal: 0.0,
                niced_competes: false,
                running: if i == 0 && b > 0.5 {
                    vec!["pid 4242 sh".into()]
                } else {
                    vec![]
                },
            })
            .collect()
    }

    #[test]
    fn a_busy_default_cpu_gives_way_to_the_quietest_and_says_why() {
        let m = machine("pack:1 l3:1 core:2 pu:1");
        let c = choose(&m, 0, &read(&[0.98, 0.02]));
        assert_eq!((c.cpu, c.default, c.moved()), (1, 0, true));
        assert_eq!(
            c.words().unwrap(),
            "measured on CPU 1: CPU 0 was 98 % busy with another process (pid 4242 sh)"
        );
        // The chosen CPU has the lowest share recorded, and every candidate is recorded.
        let least = c.busy.iter().map(CpuBusy::taken).fold(1.0, f64::min);
        assert_eq!(c.of(c.cpu).unwrap().taken(), least);
        assert_eq!(c.busy.len(), 2);
        // Within the margin the default stays, and a quiet default says nothing.
        let c = choose(&m, 0, &read(&[0.08, 0.02]));
        assert_eq!((c.cpu, c.words()), (0, None));
        // Busy everywhere: the default stays, and the line says so.
        let c = choose(&m, 0, &read(&[0.97, 0.95]));
        assert_eq!(c.cpu, 0);
        let w = c.words().unwrap();
        assert!(
            w.starts_with("measured on CPU 0 though it was 97 % busy"),
            "{w}"
        );
        assert!(w.ends_with("was quieter (CPU 1 95 %)"), "{w}");
        // Stolen time counts as taken; niced time (a build at nice 19) does not.
        let mut b = read(&[0.0, 0.0]);
        b[0].steal = 0.6;
        b[1].niced = 0.9;
        assert_eq!(choose(&m, 0, &b).cpu, 1);
    }

    #[test]
    fn the_choice_stays_in_the_defaults_l3_and_avoids_a_busy_core() {
        // 2 packages × 2 L3 × 2 cores × 2 threads: CPUs 0–3 share the first L3.
        let m = machine("pack:2 l3:2 core:2 pu:2");
        assert_eq!(candidates(&m, 0), [0, 1, 2, 3]);
        // CPU 1 is CPU 0's sibling: idle, but on the busy core; CPU 2 is on its own.
        let c = choose(&m, 0, &read(&[0.98, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]));
        assert_eq!(c.cpu, 2);
        // Quieter CPUs of another L3 are not the same kind of CPU: never chosen, not
        // recorded.
        let c = choose(&m, 0, &read(&[0.98, 0.5, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0]));
        assert!(c.cpu <= 3 && c.cpu != 0, "{c:?}");
        assert_eq!(
            c.busy.iter().map(|b| b.cpu).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
    }

    #[test]
    fn only_single_cpu_steps_are_moved_and_their_command_names_the_cpu() {
        let m = machine("pack:1 l3:1 core:2 pu:1");
        let plan = super::super::plan(&m, true, false);
        let find = |t: &str| plan.iter().find(|s| s.title.starts_with(t)).unwrap();
        for t in [
            "memory-hierarchy sweep",
            "latency, lines uown",
            "bandwidth kernels, 1 thread",
            "bandwidth scaling, node 0, 1 thread",
            "invalidation sweep",
            "loaded latency family",
        ] {
            assert_eq!(default_cpu(&m, find(t)), Some(0), "{t}");
        }
        for t in [
            "injection table",
            "bandwidth kernels, all threads",
            "bandwidth scaling, node 0, 2 threads",
            "core-to-core",
            "topology",
        ] {
            assert_eq!(default_cpu(&m, find(t)), None, "{t}");
        }
        let moved = on_cpu(find("memory-hierarchy sweep"), 1);
        assert!(
            moved.args.windows(2).any(|w| w == ["--cpu", "1"]),
            "{:?}",
            moved.args
        );
        let moved = on_cpu(find("loaded latency family"), 1);
        assert!(
            moved.args.windows(2).any(|w| w == ["--cpu", "1"]),
            "{:?}",
            moved.args
        );
        assert_eq!(default_cpu(&m, &moved), Some(1));
    }

    #[test]
    fn the_placer_reads_again_when_a_step_was_disturbed_and_records_its_choice() {
        let m = machine("pack:1 l3:1 core:2 pu:1");
        let plan = super::super::plan(&m, true, false);
        let reads = Rc::new(Cell::new(0));
        let n = reads.clone();
        let mut p = Placer::with_reader(
            m,
            Box::new(move |cpus: &[u32]| {
                n.set(n.get() + 1);
                read(
                    &cpus
                        .iter()
                        .map(|c| if *c == 0 { 0.98 } else { 0.01 })
                        .collect::<Vec<_>>(),
                )
            }),
        );
        let sweep = plan.iter().find(|s| s.title.contains("sweep")).unwrap();
        let (s, c) = p.place(sweep);
        assert_eq!(c.as_ref().map(|c| c.cpu), Some(1));
        assert!(s.args.contains(&"--cpu".to_string()));
        let topo = plan.iter().find(|s| s.title == "topology").unwrap();
        assert!(p.place(topo).1.is_none());
        p.place(sweep);
        assert_eq!(reads.get(), 1, "fresh figures are reused");
        let prov = numalab_results::Provenance::collect("t", "none");
        let mut r = Record::new("latency", "x", prov, serde_json::json!({}));
        r.data = Some(serde_json::json!({"disturbance": {"passes": [
            {"disturbed": true}, {"disturbed": true}, {"disturbed": false}]}}));
        p.after(std::slice::from_ref(&r));
        p.place(sweep);
        assert_eq!(reads.get(), 2, "a disturbed step makes the next read again");
        let mut recs = vec![r];
        annotate(&mut recs, c.as_ref().unwrap());
        assert_eq!(recs[0].placement.as_ref().unwrap()["cpu_choice"]["cpu"], 1);
        assert_eq!(p.first_choice().unwrap().cpu, 1);
    }
}
