//! The survey's battery, chosen from the topology: each step is an experiment's
//! `Options` value; its command line (`argv`, so any step can be rerun alone) is built
//! from the options in one function.

use crate::{collectives, earth, placement};
use numalab_bench::{bandwidth, c2c, intervene, invalidate, latency, loaded, matrix};
use numalab_topo::{Level, Machine};
use serde::Serialize;
use std::fmt::Display;

/// What a step runs: one experiment and its options.
#[derive(Debug, Clone)]
pub enum Experiment {
    /// `numalab topo`.
    Topo,
    /// `numalab latency`.
    Latency(latency::Options),
    /// `numalab bandwidth`.
    Bandwidth(bandwidth::Options),
    /// `numalab c2c`.
    C2c(c2c::Options),
    /// `numalab invalidate`.
    Invalidate(invalidate::Options),
    /// `numalab loaded-latency`.
    Loaded(loaded::Options),
    /// `numalab matrix`.
    Matrix(matrix::Options),
    /// `numalab intervene`.
    Intervene(intervene::Options),
    /// `numalab suite placement`.
    Placement(placement::Options),
    /// `numalab suite collectives`.
    Collectives(collectives::Options),
    /// `numalab suite earth`.
    Earth(earth::Options),
}

/// Arguments built flag by flag; a flag whose value is the default is left out.
struct Args(Vec<String>);

impl Args {
    fn new(words: &[&str]) -> Self {
        Args(words.iter().map(|s| s.to_string()).collect())
    }
    fn flag(&mut self, name: &str, v: impl Display) {
        self.0.push(name.into());
        self.0.push(v.to_string());
    }
    fn set<T: PartialEq + Display>(&mut self, name: &str, v: &T, default: &T) {
        if v != default {
            self.flag(name, v);
        }
    }
    fn opt<T: PartialEq + Display>(&mut self, name: &str, v: &Option<T>, default: &Option<T>) {
        if let (Some(x), true) = (v, v != default) {
            self.flag(name, x);
        }
    }
    fn switch(&mut self, name: &str, on: bool) {
        if on {
            self.0.push(name.into());
        }
    }
}

/// The numalab arguments (without --json) that run `e`: the one place a step's
/// options become a command line.
pub fn argv(e: &Experiment) -> Vec<String> {
    match e {
        Experiment::Topo => Args::new(&["topo"]).0,
        Experiment::Latency(o) => {
            let d = latency::Options::default();
            let mut a = Args::new(&["latency"]);
            crew(&mut a, &o.crew);
            a.set("--state", &o.state, &d.state);
            a.opt("--kernel", &o.kernel, &d.kernel);
            a.opt("--size", &o.size, &d.size);
            match o.sweep.as_deref() {
                Some("4K-1G") => a.0.push("--sweep".into()),
                Some(r) => a.0.push(format!("--sweep={r}")),
                None => {}
            }
            a.switch("--restart", o.restart);
            a.set("--restart-window", &o.restart_window, &d.restart_window);
            a.set("--restart-bound", &o.restart_bound, &d.restart_bound);
            a.set("--restart-stable", &o.restart_stable, &d.restart_stable);
            a.set(
                "--restart-max-work",
                &o.restart_max_work,
                &d.restart_max_work,
            );
            a.set("--iterations", &o.iterations, &d.iterations);
            a.opt("--stride", &o.stride, &d.stride);
            a.set("--window", &o.window, &d.window);
            a.set("--order", &o.order, &d.order);
            a.set("--page-size", &o.page_size, &d.page_size);
            a.set("--seed", &o.seed, &d.seed);
            a.set("--max-loads", &o.max_loads, &d.max_loads);
            a.0
        }
        Experiment::Bandwidth(o) => {
            let d = bandwidth::Options::default();
            let mut a = Args::new(&["bandwidth"]);
            a.set("--kernel", &o.kernel, &d.kernel);
            crew(&mut a, &o.crew);
            a.opt("--state", &o.state, &d.state);
            a.opt("--size", &o.size, &d.size);
            a.switch("--mp", o.mp);
            a.set("--iterations", &o.iterations, &d.iterations);
            a.set("--page-size", &o.page_size, &d.page_size);
            a.0
        }
        Experiment::C2c(o) => {
            let d = c2c::Options::default();
            let mut a = Args::new(&["c2c"]);
            a.opt("--cpus", &o.cpus, &d.cpus);
            a.set("--metric", &o.metric, &d.metric);
            a.set("--home", &o.home, &d.home);
            // Named always: the survey picks it by mode.
            a.flag("--round-trips", o.round_trips);
            a.set("--iterations", &o.iterations, &d.iterations);
            a.set("--read-size", &o.read_size, &d.read_size);
            a.0
        }
        Experiment::Invalidate(o) => {
            let d = invalidate::Options::default();
            let mut a = Args::new(&["invalidate"]);
            a.set("--cpu", &o.cpu, &d.cpu);
            a.set("--mem-node", &o.mem_node, &d.mem_node);
            a.set("--per-node", &o.per_node, &d.per_node);
            a.opt("--sharers", &o.sharers, &d.sharers);
            a.opt("--size", &o.size, &d.size);
            a.set("--iterations", &o.iterations, &d.iterations);
            a.0
        }
        Experiment::Loaded(o) => {
            let d = loaded::Options::default();
            let mut a = Args::new(&["loaded-latency"]);
            a.set("--cpu", &o.cpu, &d.cpu);
            a.opt("--injectors", &o.injectors, &d.injectors);
            a.set("--mem-node", &o.mem_node, &d.mem_node);
            a.set("--traffic", &o.traffic, &d.traffic);
            a.opt("--delays", &o.delays, &d.delays);
            a.set("--iterations", &o.iterations, &d.iterations);
            a.opt("--size", &o.size, &d.size);
            a.opt("--inject-size", &o.inject_size, &d.inject_size);
            a.0
        }
        Experiment::Matrix(o) => {
            let d = matrix::Options::default();
            let mut a = Args::new(&["matrix", &o.what]);
            // The level is always named: the survey picks it from the topology.
            a.flag("--level", &o.level);
            a.opt("--size", &o.size, &d.size);
            a.set("--iterations", &o.iterations, &d.iterations);
            a.0
        }
        Experiment::Intervene(o) => {
            let d = intervene::Options::default();
            let mut a = Args::new(&["intervene"]);
            a.set("--cpu", &o.cpu, &d.cpu);
            a.set("--states", &o.states, &d.states);
            a.opt("--hops", &o.hops, &d.hops);
            a.set("--placements", &o.placements, &d.placements);
            a.opt("--size", &o.size, &d.size);
            a.set("--iterations", &o.iterations, &d.iterations);
            a.0
        }
        Experiment::Placement(o) => {
            let d = placement::Options::default();
            let mut a = Args::new(&["suite", "placement"]);
            a.opt("--level", &o.level, &d.level);
            a.opt("--owner", &o.owner, &d.owner);
            a.set("--parts", &o.parts, &d.parts);
            a.opt("--batches", &o.batches, &d.batches);
            a.opt("--readers", &o.readers, &d.readers);
            a.opt("--size", &o.size, &d.size);
            a.set("--unit", &o.unit, &d.unit);
            a.set("--iterations", &o.iterations, &d.iterations);
            a.0
        }
        Experiment::Collectives(o) => {
            let d = collectives::Options::default();
            let mut a = Args::new(&["suite", "collectives"]);
            a.opt("--level", &o.level, &d.level);
            a.opt("--threads", &o.threads, &d.threads);
            a.set("--sizes", &o.sizes, &d.sizes);
            a.set("--barrier", &o.barrier, &d.barrier);
            a.opt("--only", &o.only, &d.only);
            a.set("--iterations", &o.iterations, &d.iterations);
            a.0
        }
        Experiment::Earth(o) => {
            let d = earth::Options::default();
            let mut a = Args::new(&["suite", "earth"]);
            a.set("--parts", &o.parts, &d.parts);
            a.opt("--cpu", &o.cpu, &d.cpu);
            a.opt("--helper", &o.helper, &d.helper);
            a.set("--groups", &o.groups, &d.groups);
            a.opt("--chunks", &o.chunks, &d.chunks);
            a.set("--multipliers", &o.multipliers, &d.multipliers);
            a.set("--loop-n", &o.loop_n, &d.loop_n);
            a.opt("--mlp-size", &o.mlp_size, &d.mlp_size);
            a.opt("--accesses", &o.accesses, &d.accesses);
            a.set("--ratio", &o.ratio, &d.ratio);
            a.set("--iterations", &o.iterations, &d.iterations);
            a.0
        }
    }
}

fn crew(a: &mut Args, o: &numalab_bench::crew::CrewOptions) {
    let d = numalab_bench::crew::CrewOptions::default();
    a.set("--cpu", &o.cpu, &d.cpu);
    a.opt("-n", &o.count, &d.count);
    a.set("--mem-node", &o.mem_node, &d.mem_node);
    a.opt("--helpers", &o.helpers, &d.helpers);
}

/// One step of the survey.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Report section the records feed.
    pub section: &'static str,
    /// What it measures, in words.
    pub title: String,
    /// numalab arguments (without --json), built from the experiment by `argv`.
    pub args: Vec<String>,
    /// Rough duration on a small machine, seconds (for the plan and the ETA).
    pub estimate_s: f64,
    /// Why it is skipped here, if it is.
    pub skip: Option<String>,
    /// The experiment (None when skipped).
    #[serde(skip)]
    pub experiment: Option<Experiment>,
}

fn step(section: &'static str, title: &str, e: Experiment, estimate_s: f64) -> Step {
    Step {
        section,
        title: title.into(),
        args: argv(&e),
        estimate_s,
        skip: None,
        experiment: Some(e),
    }
}

fn skipped(section: &'static str, title: &str, why: String) -> Step {
    Step {
        section,
        title: title.into(),
        args: Vec::new(),
        estimate_s: 0.0,
        skip: Some(why),
        experiment: None,
    }
}

/// Up to `cap` CPUs that stand for the machine's kinds of pairs: the first CPU of
/// every L3 domain (or node, or package), the first CPU's SMT sibling and another
/// core beside it, so the c2c matrix grows with domains, not with cores squared.
pub fn c2c_cpus(m: &Machine, cap: usize) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    let push = |c: u32, out: &mut Vec<u32>| {
        if !out.contains(&c) && out.len() < cap {
            out.push(c);
        }
    };
    let Some(first) = m.pus.first() else {
        return out;
    };
    push(first.os, &mut out);
    if let Some(sib) = m
        .pus
        .iter()
        .find(|p| p.core == first.core && p.os != first.os)
    {
        push(sib.os, &mut out);
    }
    if let Some(next) = m
        .pus
        .iter()
        .find(|p| p.core != first.core && p.l3 == first.l3 && p.node == first.node)
    {
        push(next.os, &mut out);
    }
    for level in [Level::L3, Level::Node, Level::Package] {
        for d in m.domains(level).into_iter().flatten() {
            if let Some(c) = d.cpus.first() {
                push(*c, &mut out);
            }
        }
    }
    out
}

/// The battery for this machine; `quick` keeps it within a minute or two on a small machine.
pub fn plan(m: &Machine, quick: bool) -> Vec<Step> {
    let cores = {
        let mut c: Vec<u32> = m.pus.iter().map(|p| p.core).collect();
        c.sort_unstable();
        c.dedup();
        c.len()
    };
    let pus = m.pus.len();
    let nodes = m.nodes.iter().filter(|n| !n.local_cpus.is_empty()).count();
    let l3s = m.domains(Level::L3).map_or(0, |d| d.len());
    let iters = if quick { 3 } else { 7 };
    let mut v = vec![step("machine", "topology", Experiment::Topo, 0.5)];
    v.push(step(
        "hierarchy",
        "memory-hierarchy sweep",
        Experiment::Latency(latency::Options {
            sweep: Some(if quick { "4K-64M" } else { "4K-1G" }.into()),
            iterations: iters,
            ..Default::default()
        }),
        if quick { 4.0 } else { 15.0 },
    ));
    let one_core = || format!("one core ({pus} CPU(s)): helper threads need a second core");
    let states: &[&str] = if cores >= 3 {
        &["uown", "shrd:2", "cexh", "cexm", "dexd", "dext"]
    } else {
        &["uown", "cexh", "cexm", "dexd", "dext"]
    };
    for s in states {
        let title = format!("latency, lines {s}");
        if cores < 2 && *s != "uown" {
            v.push(skipped("states", &title, one_core()));
        } else {
            v.push(step(
                "states",
                &title,
                Experiment::Latency(latency::Options {
                    state: s.to_string(),
                    iterations: iters,
                    ..Default::default()
                }),
                0.5,
            ));
        }
    }
    v.push(step(
        "bandwidth",
        "bandwidth kernels, 1 thread",
        Experiment::Bandwidth(bandwidth::Options {
            kernel: "all".into(),
            iterations: iters,
            ..Default::default()
        }),
        if quick { 2.0 } else { 4.0 },
    ));
    if pus > 1 {
        v.push(step(
            "bandwidth",
            "bandwidth kernels, all threads",
            Experiment::Bandwidth(bandwidth::Options {
                kernel: "readv,rdsh,zero,nt,copy".into(),
                crew: numalab_bench::crew::CrewOptions {
                    count: Some(pus),
                    ..Default::default()
                },
                mp: true,
                iterations: iters,
                ..Default::default()
            }),
            if quick { 2.0 } else { 4.0 },
        ));
    }
    let cpus = c2c_cpus(m, if quick { 8 } else { 16 });
    if cpus.len() >= 2 {
        let list = numalab_topo::cpulist::format(&cpus);
        v.push(step(
            "c2c",
            &format!("core-to-core pairs of CPUs {list}"),
            Experiment::C2c(c2c::Options {
                cpus: Some(list.clone()),
                round_trips: if quick { 5000 } else { 20000 },
                iterations: iters,
                ..Default::default()
            }),
            0.05 * (cpus.len() * cpus.len()) as f64 + 0.5,
        ));
    } else {
        v.push(skipped("c2c", "core to core", "one CPU: no pairs".into()));
    }
    if cores >= 2 {
        v.push(step(
            "invalidate",
            "invalidation sweep",
            Experiment::Invalidate(invalidate::Options {
                iterations: iters,
                ..Default::default()
            }),
            0.5 * nodes.max(1) as f64 + 0.5,
        ));
        let loaded = if quick {
            loaded::Options {
                delays: Some("1000,100,0".into()),
                iterations: iters,
                size: Some("64M".into()),
                ..Default::default()
            }
        } else {
            loaded::Options {
                iterations: iters,
                ..Default::default()
            }
        };
        v.push(step(
            "loaded",
            "loaded latency",
            Experiment::Loaded(loaded),
            if quick { 2.0 } else { 6.0 },
        ));
    } else {
        v.push(skipped("invalidate", "invalidation sweep", one_core()));
        v.push(skipped(
            "loaded",
            "loaded latency",
            "one core: injectors need a second core".into(),
        ));
    }
    let level = if nodes > 1 {
        Some("node")
    } else if l3s > 1 {
        Some("l3")
    } else {
        None
    };
    match level {
        Some(l) => {
            let cells = (nodes.max(l3s) * m.memory_nodes().len()) as f64;
            for what in ["latency", "bandwidth"] {
                v.push(step(
                    "matrix",
                    &format!("{what} matrix per {l}"),
                    Experiment::Matrix(matrix::Options {
                        what: what.into(),
                        level: l.into(),
                        iterations: iters,
                        ..Default::default()
                    }),
                    cells * 0.6,
                ));
            }
        }
        None => {
            let why =
                "one NUMA node and one L3 domain: there is no initiator × memory matrix to draw"
                    .to_string();
            v.push(skipped("matrix", "latency and bandwidth matrices", why));
        }
    }
    if nodes > 1 && cores >= 2 {
        v.push(step(
            "intervene",
            "intervention placements",
            Experiment::Intervene(intervene::Options {
                iterations: iters,
                ..Default::default()
            }),
            2.0 * nodes as f64,
        ));
    } else {
        v.push(skipped(
            "intervene",
            "intervention placements",
            "one NUMA node: the placements need owner, requestor and home on two nodes".into(),
        ));
    }
    if nodes <= 1 {
        v.push(skipped("model", "latency model fit", "one NUMA node: every latency is local, so no remote penalty or per-hop delay can be fitted".into()));
    }
    suites(m, quick, cores, pus, &mut v);
    v
}

/// The seed suites as steps: placement, collectives and earth.
fn suites(m: &Machine, quick: bool, cores: usize, pus: usize, v: &mut Vec<Step>) {
    let _ = m;
    if pus >= 2 {
        v.push(step(
            "placement",
            "thread placement suite (KSR1)",
            Experiment::Placement(placement::Options {
                size: quick.then(|| "64K".into()),
                iterations: if quick { 3 } else { 7 },
                ..Default::default()
            }),
            if quick { 3.0 } else { 20.0 },
        ));
        v.push(step(
            "collectives",
            "collective communication suite (KSR)",
            Experiment::Collectives(collectives::Options {
                sizes: if quick { "1K,4K" } else { "1K,4K,16K,64K" }.into(),
                iterations: if quick { 3 } else { 9 },
                ..Default::default()
            }),
            if quick { 4.0 } else { 20.0 },
        ));
    } else {
        let why = || "one CPU: readers and threads need a second CPU".to_string();
        v.push(skipped("placement", "thread placement suite (KSR1)", why()));
        v.push(skipped(
            "collectives",
            "collective communication suite (KSR)",
            why(),
        ));
    }
    if cores >= 2 {
        let o = if quick {
            earth::Options {
                groups: "1,8".into(),
                chunks: Some("64,1024".into()),
                multipliers: "1,4".into(),
                loop_n: 1024,
                mlp_size: Some("8M".into()),
                accesses: Some(4096),
                iterations: 2,
                ..Default::default()
            }
        } else {
            earth::Options::default()
        };
        v.push(step(
            "earth",
            "remote operations and latency hiding suite (EARTH)",
            Experiment::Earth(o),
            if quick { 5.0 } else { 60.0 },
        ));
    } else {
        v.push(skipped(
            "earth",
            "remote operations and latency hiding suite (EARTH)",
            "one core: the helper thread needs a second core".into(),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::{Host, TopologySource};

    fn machine(file: &str) -> Machine {
        let p = numalab_fixtures::topology(file);
        Host::load(&TopologySource::Xml(p)).unwrap().machine
    }

    #[test]
    fn battery_follows_the_topology() {
        let big = machine("64amd64-4s2n4ca2co.xml");
        let p = plan(&big, false);
        for s in ["matrix", "intervene", "c2c", "invalidate"] {
            assert!(p.iter().any(|x| x.section == s && x.skip.is_none()), "{s}");
        }
        // Representative CPUs: bounded, not every core.
        let c = c2c_cpus(&big, 16);
        assert!(c.len() <= 16 && c.len() >= 8);
        let one = machine("16em64t-4s2c2t.xml");
        let p = plan(&one, true);
        // One node: matrices come from the L3 domains if there are several, else skip.
        assert!(p
            .iter()
            .any(|x| x.section == "intervene" && x.skip.is_some()));
        assert!(p.iter().any(|x| x.section == "model" && x.skip.is_some()));
        // The seed suites are steps with their own sections.
        for s in ["placement", "collectives", "earth"] {
            assert!(p.iter().any(|x| x.section == s && x.skip.is_none()), "{s}");
        }
    }

    #[test]
    fn argv_names_only_what_differs_from_the_defaults() {
        let e = Experiment::Latency(latency::Options {
            sweep: Some("4K-1G".into()),
            iterations: 7,
            ..Default::default()
        });
        assert_eq!(argv(&e), ["latency", "--sweep", "--iterations", "7"]);
        let e = Experiment::Bandwidth(bandwidth::Options {
            kernel: "readv,nt".into(),
            crew: numalab_bench::crew::CrewOptions {
                count: Some(4),
                ..Default::default()
            },
            mp: true,
            iterations: 3,
            ..Default::default()
        });
        assert_eq!(
            argv(&e),
            [
                "bandwidth",
                "--kernel",
                "readv,nt",
                "-n",
                "4",
                "--mp",
                "--iterations",
                "3"
            ]
        );
        let e = Experiment::Matrix(matrix::Options::default());
        assert_eq!(argv(&e), ["matrix", "latency", "--level", "node"]);
        assert_eq!(
            argv(&Experiment::Earth(earth::Options {
                loop_n: 1024,
                ..Default::default()
            })),
            ["suite", "earth", "--loop-n", "1024"]
        );
    }
}
