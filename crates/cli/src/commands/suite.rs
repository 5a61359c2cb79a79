//! `numalab suite placement`: the KSR1 thread-placement study (seed 000).

use crate::common::{prepare, with_progress, CliError, CommonArgs};
use clap::{Args, Subcommand};
use numalab_suites::placement::{self, Options, Plan};

/// Arguments of `numalab suite`.
#[derive(Args, Debug)]
pub struct SuiteArgs {
    #[command(flatten)]
    pub wait: crate::common::WaitArg,
    #[command(subcommand)]
    which: Which,
}

#[derive(Subcommand, Debug)]
enum Which {
    /// KSR1 thread placement: owners write a data set, readers added one at a time
    /// read it (Experiment 0, Suites I–IV); ns per line, overall and per domain.
    Placement(PlacementArgs),
    /// KSR collectives: remote read by distance, barriers, broadcast, shifts,
    /// concatenation and reduction over P threads, with fitted cost models.
    Collectives(super::collectives::CollectivesArgs),
    /// EARTH-MANNA and KSR threads: remote operation costs (local/remote, sequential/
    /// pipelined, through a helper thread), switch costs, Loop 7 latency masking, MLP
    /// with coroutines, and compute/communication overlap.
    Earth(super::earth::EarthArgs),
    /// Multithreaded CVM (seed 003): the software DSM's apps × protocols × threads per
    /// rank under MPI: normalised time and breakdown, speedups, DSM actions, switch classes.
    Cvm(super::cvm::CvmArgs),
}

/// Run `numalab suite …`.
pub fn run(a: SuiteArgs) -> Result<(), CliError> {
    match a.which {
        Which::Placement(p) => run_placement(p),
        Which::Collectives(c) => super::collectives::run(c),
        Which::Earth(e) => super::earth::run(e),
        Which::Cvm(c) => super::cvm::run(c),
    }
}

/// Arguments of `numalab suite placement`.
#[derive(Args, Debug)]
pub struct PlacementArgs {
    /// Level whose domains play the KSR's rings (default: the most informative level).
    #[arg(long)]
    level: Option<String>,
    /// Owner CPU of Experiment 0 and Suites II–IV (default: the last core of the first domain).
    #[arg(long)]
    owner: Option<u32>,
    /// Parts to run, comma-separated: 0 (Experiment 0), 1, 2, 3, 4.
    #[arg(long, default_value = "0,1,2,3,4")]
    parts: String,
    /// Suite III batch sizes, comma-separated (default: 1, 2, 4, … up to the largest domain).
    #[arg(long)]
    batches: Option<String>,
    /// Largest number of readers (default: every CPU that is not an owner).
    #[arg(long)]
    readers: Option<usize>,
    /// Bytes of the shared data set (default: half the private cache, so the owner holds it).
    #[arg(long)]
    size: Option<String>,
    /// What a read moves: a cache line, or a pair of lines (the KSR's 128-byte subpage).
    #[arg(long, default_value = "line")]
    unit: String,
    /// Timed passes per point (after one untimed pass; more while it has not settled).
    #[arg(long, default_value_t = 7)]
    iterations: usize,
    #[command(flatten)]
    noise: crate::common::NoiseArgs,
    /// Print the plan (domains, owners, reader order of every curve) without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

fn run_placement(a: PlacementArgs) -> Result<(), CliError> {
    let o = a.options();
    let (host, plan, ctx) = prepare(&a.common, a.dry_run, || o.check(), |m| Plan::resolve(m, &o))?;
    if a.dry_run {
        return a.common.show(&placement::plan_records(&plan, &o, &ctx));
    }
    let points = with_progress(|p| placement::run_suite(&host, &plan, &o, &ctx, p))?;
    a.common
        .show(&placement::point_records(&plan, &points, &o, &ctx))
}

impl PlacementArgs {
    fn options(&self) -> Options {
        Options {
            level: self.level.clone(),
            owner: self.owner,
            parts: self.parts.clone(),
            batches: self.batches.clone(),
            readers: self.readers,
            size: self.size.clone(),
            unit: self.unit.clone(),
            iterations: self.iterations,
            noise: self.noise.options(),
        }
    }
}
