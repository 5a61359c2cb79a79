//! What a survey step runs: an experiment and its options, and the one function that
//! turns them into a numalab command line (each step runs as its own process, so a
//! crash in one step loses nothing else, and any step can be rerun alone).

use numalab_bench::{bandwidth, c2c, intervene, invalidate, latency, loaded, matrix};
use numalab_suites::{collectives, earth, placement};
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
    /// `numalab mpi matrix` on this many ranks.
    MpiMatrix(usize, numalab_mpi::matrix::Options),
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
/// options become a command line (a flag whose value is the default is left out).
pub fn argv(e: &Experiment) -> Vec<String> {
    match e {
        Experiment::Topo => Args::new(&["topo"]).0,
        Experiment::Latency(o) => latency_args(o),
        Experiment::Bandwidth(o) => bandwidth_args(o),
        Experiment::C2c(o) => c2c_args(o),
        Experiment::Invalidate(o) => invalidate_args(o),
        Experiment::Loaded(o) => loaded_args(o),
        Experiment::Matrix(o) => matrix_args(o),
        Experiment::Intervene(o) => intervene_args(o),
        Experiment::Placement(o) => placement_args(o),
        Experiment::Collectives(o) => collectives_args(o),
        Experiment::Earth(o) => earth_args(o),
        Experiment::MpiMatrix(ranks, o) => mpi_matrix_args(*ranks, o),
    }
}

fn latency_args(o: &latency::Options) -> Vec<String> {
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
    noise(&mut a, &o.noise);
    a.0
}

/// `--noise-budget` and `--tolerance`, where the user gave them.
fn noise(a: &mut Args, n: &numalab_results::settle::NoiseOptions) {
    a.opt("--noise-budget", &n.noise_budget, &None);
    a.opt("--tolerance", &n.tolerance, &None);
}

fn bandwidth_args(o: &bandwidth::Options) -> Vec<String> {
    let d = bandwidth::Options::default();
    let mut a = Args::new(&["bandwidth"]);
    a.set("--kernel", &o.kernel, &d.kernel);
    crew(&mut a, &o.crew);
    a.opt("--state", &o.state, &d.state);
    a.opt("--size", &o.size, &d.size);
    a.switch("--mp", o.mp);
    a.opt("--mix", &o.mix, &d.mix);
    a.set("--store", &o.store, &d.store);
    a.switch("--injection", o.injection);
    a.set("--iterations", &o.iterations, &d.iterations);
    a.set("--page-size", &o.page_size, &d.page_size);
    noise(&mut a, &o.noise);
    a.0
}

fn c2c_args(o: &c2c::Options) -> Vec<String> {
    let d = c2c::Options::default();
    let mut a = Args::new(&["c2c"]);
    a.opt("--cpus", &o.cpus, &d.cpus);
    a.set("--metric", &o.metric, &d.metric);
    a.set("--home", &o.home, &d.home);
    // Named always: the survey picks it by mode.
    a.flag("--round-trips", o.round_trips);
    a.set("--iterations", &o.iterations, &d.iterations);
    a.set("--read-size", &o.read_size, &d.read_size);
    noise(&mut a, &o.noise);
    a.0
}

fn invalidate_args(o: &invalidate::Options) -> Vec<String> {
    let d = invalidate::Options::default();
    let mut a = Args::new(&["invalidate"]);
    a.set("--cpu", &o.cpu, &d.cpu);
    a.set("--mem-node", &o.mem_node, &d.mem_node);
    a.set("--per-node", &o.per_node, &d.per_node);
    a.opt("--sharers", &o.sharers, &d.sharers);
    a.opt("--size", &o.size, &d.size);
    a.set("--iterations", &o.iterations, &d.iterations);
    noise(&mut a, &o.noise);
    a.0
}

fn loaded_args(o: &loaded::Options) -> Vec<String> {
    let d = loaded::Options::default();
    let mut a = Args::new(&["loaded-latency"]);
    a.set("--cpu", &o.cpu, &d.cpu);
    a.opt("--injectors", &o.injectors, &d.injectors);
    a.set("--mem-node", &o.mem_node, &d.mem_node);
    a.set("--traffic", &o.traffic, &d.traffic);
    a.opt("--writes", &o.writes, &d.writes);
    a.opt("--delays", &o.delays, &d.delays);
    a.set("--iterations", &o.iterations, &d.iterations);
    a.opt("--size", &o.size, &d.size);
    a.opt("--inject-size", &o.inject_size, &d.inject_size);
    noise(&mut a, &o.noise);
    a.0
}

fn matrix_args(o: &matrix::Options) -> Vec<String> {
    let d = matrix::Options::default();
    let mut a = Args::new(&["matrix", &o.what]);
    // The level is always named: the survey picks it from the topology.
    a.flag("--level", &o.level);
    a.opt("--size", &o.size, &d.size);
    a.set("--iterations", &o.iterations, &d.iterations);
    a.0
}

fn intervene_args(o: &intervene::Options) -> Vec<String> {
    let d = intervene::Options::default();
    let mut a = Args::new(&["intervene"]);
    a.set("--cpu", &o.cpu, &d.cpu);
    a.set("--states", &o.states, &d.states);
    a.opt("--hops", &o.hops, &d.hops);
    a.set("--placements", &o.placements, &d.placements);
    a.opt("--size", &o.size, &d.size);
    a.set("--iterations", &o.iterations, &d.iterations);
    noise(&mut a, &o.noise);
    a.0
}

fn placement_args(o: &placement::Options) -> Vec<String> {
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
    noise(&mut a, &o.noise);
    a.0
}

fn collectives_args(o: &collectives::Options) -> Vec<String> {
    let d = collectives::Options::default();
    let mut a = Args::new(&["suite", "collectives"]);
    a.opt("--level", &o.level, &d.level);
    a.opt("--threads", &o.threads, &d.threads);
    a.set("--sizes", &o.sizes, &d.sizes);
    a.set("--barrier", &o.barrier, &d.barrier);
    a.opt("--only", &o.only, &d.only);
    a.set("--iterations", &o.iterations, &d.iterations);
    noise(&mut a, &o.noise);
    a.0
}

fn earth_args(o: &earth::Options) -> Vec<String> {
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
    a.set("--noise-budget", &o.noise_budget, &d.noise_budget);
    a.0
}

fn mpi_matrix_args(ranks: usize, o: &numalab_mpi::matrix::Options) -> Vec<String> {
    // Named always: the survey sizes the job to the machine.
    let mut a = Args::new(&["mpi", "matrix"]);
    a.flag("--ranks", ranks);
    a.flag("--size", o.size);
    a.flag("--iterations", o.iterations);
    a.flag("--warmup", o.warmup);
    a.0
}

fn crew(a: &mut Args, o: &numalab_bench::crew::CrewOptions) {
    let d = numalab_bench::crew::CrewOptions::default();
    a.set("--cpu", &o.cpu, &d.cpu);
    a.opt("-n", &o.count, &d.count);
    a.set("--mem-node", &o.mem_node, &d.mem_node);
    a.opt("--helpers", &o.helpers, &d.helpers);
}
