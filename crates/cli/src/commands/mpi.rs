//! `numalab mpi …`: experiments between MPI ranks. With `--ranks N` outside an MPI
//! job numalab starts `mpirun` on this machine itself; under the user's mpirun it
//! uses that job. Rank 0 alone emits.

use crate::common::{check_measurable, context, size_opt, CliError, CommonArgs};
use clap::{Args, Subcommand};
use numalab_mpi::kernels::Data;
use numalab_mpi::launch::{ensure, LaunchRequest, Launched};
use numalab_mpi::p2p::{self, Op};
use numalab_mpi::sizes::{parse_pair, parse_sizes};
use numalab_mpi::world::{fail, World, WorldOptions};
use numalab_mpi::{matrix, ranks, JobOptions, Launch};
use numalab_results::{Provenance, Record};
use numalab_topo::Host;
use std::path::PathBuf;

impl From<numalab_mpi::Error> for CliError {
    fn from(e: numalab_mpi::Error) -> Self {
        CliError {
            code: e.exit_code(),
            msg: e.to_string(),
        }
    }
}

/// Options of every command that runs ranks.
#[derive(Args, Debug, Clone)]
pub struct JobArgs {
    /// Ranks to start with mpirun on this machine (or the hostfile's) when numalab is
    /// not already inside an MPI job; inside one, its size.
    #[arg(long, value_name = "N")]
    pub ranks: Option<usize>,
    /// Hosts for mpirun (one per line, `host slots=N`): ranks across machines.
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// Where each host's ranks run, in the placement language (rank r gets the r-th
    /// CPU): compact (default: one rank per core, SMT siblings last), scatter[:LEVEL],
    /// or a CPU list.
    #[arg(long, value_name = "SPEC", default_value = "compact")]
    pub rank_cpus: String,
    /// Ranks on each host of the hostfile (or on this machine); --ranks defaults to
    /// N × hosts.
    #[arg(long, value_name = "N")]
    pub ranks_per_host: Option<usize>,
    /// host: consecutive ranks on different hosts; node: each host filled in turn, its
    /// ranks spread over its NUMA nodes; core: each host filled in turn, one rank per core.
    #[arg(long, value_name = "host|node|core", value_parser = map_by)]
    pub map_by: Option<numalab_mpi::mapping::MapBy>,
    /// What starts the ranks: mpirun (Open MPI), hydra (MPICH's mpiexec) or srun (inside
    /// a Slurm allocation); default: srun in an allocation, else the built library's own.
    #[arg(long, value_name = "mpirun|hydra|srun", value_parser = launcher)]
    pub launcher: Option<numalab_mpi::Launcher>,
}

fn launcher(s: &str) -> Result<numalab_mpi::Launcher, String> {
    numalab_mpi::Launcher::parse(s).map_err(|_| numalab_mpi::launcher::VALID.to_string())
}

fn map_by(s: &str) -> Result<numalab_mpi::mapping::MapBy, String> {
    numalab_mpi::mapping::MapBy::parse(s).map_err(|_| numalab_mpi::mapping::MAP_VALID.to_string())
}

impl JobArgs {
    /// The job's options.
    pub fn options(&self) -> JobOptions {
        JobOptions {
            ranks: self.ranks,
            hostfile: self.hostfile.clone(),
            rank_cpus: self.rank_cpus.clone(),
            ranks_per_host: self.ranks_per_host,
            map_by: self.map_by,
            launcher: self.launcher,
        }
    }
}

/// Flags that move a suite onto MPI ranks.
#[derive(Args, Debug, Clone)]
pub struct MpiSuiteArgs {
    /// Run between MPI ranks instead of threads (with --ranks N, numalab starts mpirun).
    #[arg(long)]
    pub mpi: bool,
    #[command(flatten)]
    pub job: JobArgs,
}

/// Arguments of `numalab mpi`.
#[derive(Args, Debug)]
pub struct MpiArgs {
    #[command(subcommand)]
    cmd: MpiCmd,
}

#[derive(Subcommand, Debug)]
enum MpiCmd {
    /// Where every rank runs: host, CPU, core, L3, node and package, pinning verified.
    Ranks(RanksArgs),
    /// One-way latency between two ranks over a size sweep: ping-pong, and one-sided
    /// get, put and accumulate (passive target: lock, operation, flush).
    Latency(LatencyArgs),
    /// Streaming bandwidth between two ranks over a size sweep (OSU's window method;
    /// --bidirectional: both ranks send at once, as OSU's osu_bibw).
    Bandwidth(BandwidthArgs),
    /// Ping-pong latency between every pair of ranks, grouped by relation.
    Matrix(MatrixArgs),
}

/// Options `numalab mpi latency` and `bandwidth` share.
#[derive(Args, Debug)]
pub struct SweepArgs {
    #[command(flatten)]
    pub wait: crate::common::WaitArg,
    /// Message sizes: a list (8,4K,1M) or ranges of powers of two (1:4M).
    #[arg(long, default_value = "1:4M")]
    sizes: String,
    /// The timing rank and its peer.
    #[arg(long, default_value = "0,1", value_name = "A,B")]
    pair: String,
    /// Timed iterations per size (default OSU's: 10000 up to 8 KiB, 1000 above; bandwidth 100 / 20).
    #[arg(long)]
    iterations: Option<usize>,
    /// Untimed iterations first (default OSU's: 100 / 10; bandwidth 10 / 2).
    #[arg(long)]
    warmup: Option<usize>,
    /// fresh: new bytes before every iteration (outside the timer); same: the same
    /// bytes every time, as OSU and IMB send (the receiver may keep them cached).
    #[arg(long, default_value = "fresh")]
    data: String,
    /// A pass disturbed on either rank (see `numalab latency --help`): remeasure
    /// (within --noise-budget), exclude or keep.
    #[arg(
        long,
        default_value = "remeasure",
        value_name = "keep|remeasure|exclude"
    )]
    disturbed: String,
    #[command(flatten)]
    noise: crate::common::NoiseArgs,
    #[command(flatten)]
    job: JobArgs,
    /// Print the plan without starting ranks.
    #[arg(long)]
    dry_run: bool,
    /// Print OSU micro-benchmark style blocks (osu_latency's "# Size  Latency (us)",
    /// osu_bw's "# Size  Bandwidth (MB/s)"), one per operation.
    #[arg(long)]
    osu: bool,
    #[command(flatten)]
    common: CommonArgs,
}

/// Arguments of `numalab mpi latency`.
#[derive(Args, Debug)]
pub struct LatencyArgs {
    /// Operations: pingpong, get, put, acc (default all four).
    #[arg(long)]
    ops: Option<String>,
    /// Iterations per timed sample: 1 times each; larger amortises the clock reads
    /// as OSU's one timer around the loop does (needs --data same).
    #[arg(long, default_value_t = 1)]
    batch: usize,
    #[command(flatten)]
    sweep: SweepArgs,
}

/// Arguments of `numalab mpi bandwidth`.
#[derive(Args, Debug)]
pub struct BandwidthArgs {
    /// Both ranks stream to each other at once (OSU's osu_bibw); the figure is both
    /// directions' bytes over the time.
    #[arg(long)]
    bidirectional: bool,
    /// Sends in flight per sample.
    #[arg(long, default_value_t = 64)]
    window: usize,
    #[command(flatten)]
    sweep: SweepArgs,
}

/// Arguments of `numalab mpi matrix`.
#[derive(Args, Debug)]
pub struct MatrixArgs {
    #[command(flatten)]
    pub wait: crate::common::WaitArg,
    /// Message size.
    #[arg(long, default_value = "8")]
    size: String,
    /// Timed round trips per pair.
    #[arg(long, default_value_t = 10_000)]
    iterations: usize,
    /// Untimed round trips first.
    #[arg(long, default_value_t = 100)]
    warmup: usize,
    #[command(flatten)]
    job: JobArgs,
    /// Print the plan without starting ranks.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

/// Arguments of `numalab mpi ranks`.
#[derive(Args, Debug)]
pub struct RanksArgs {
    #[command(flatten)]
    job: JobArgs,
    /// Print the launch plan without starting ranks.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

/// A progress sink for an MPI experiment: "WHAT i/n" on a terminal.
pub fn progress(what: &'static str) -> impl FnMut(usize, usize) {
    crate::progress::steps(what)
}

impl SweepArgs {
    /// The job's options for these operations, `window` sends per bandwidth sample and
    /// `batch` latency iterations per timed sample.
    fn options(&self, ops: Vec<Op>, window: usize, batch: usize) -> Result<p2p::Options, CliError> {
        Ok(p2p::Options {
            job: self.job.options(),
            ops,
            sizes: parse_sizes(&self.sizes)?,
            pair: parse_pair(&self.pair)?,
            iterations: self.iterations,
            warmup: self.warmup,
            window,
            data: Data::parse(&self.data)?,
            batch,
            disturbed: numalab_results::disturb::Policy::parse(&self.disturbed)
                .map_err(numalab_mpi::Error::Usage)?,
            noise: self.noise.options(),
        })
    }
}

fn run_latency(a: LatencyArgs) -> Result<(), CliError> {
    a.sweep.common.validate()?;
    let list = a.ops.as_deref().unwrap_or("pingpong,get,put,acc");
    let ops = list.split(',').map(Op::parse_latency);
    let ops = ops.collect::<Result<Vec<_>, _>>()?;
    numalab_topo::lists::once("--ops", list, &ops, |o| format!("{o:?}").to_lowercase())?;
    run_sweep(&a.sweep, a.sweep.options(ops, 64, a.batch)?)
}

fn run_bandwidth(a: BandwidthArgs) -> Result<(), CliError> {
    a.sweep.common.validate()?;
    let op = if a.bidirectional {
        Op::BiStream
    } else {
        Op::Stream
    };
    run_sweep(&a.sweep, a.sweep.options(vec![op], a.window, 1)?)
}

fn run_sweep(a: &SweepArgs, o: p2p::Options) -> Result<(), CliError> {
    o.check()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let mut launch = o.job.resolve(&host.machine, 2)?;
    let plan = p2p::Plan::resolve(&launch, &o)?;
    let estimate = plan.estimate(launch.req.crowding());
    launch.req.estimate = Some(estimate);
    // Said once, by the process that starts the ranks, before they start.
    if !a.dry_run && !numalab_mpi::env::in_mpi_job() {
        // A host that does not resolve, or a bad NUMALAB_MPI_TIMEOUT, is a one-line
        // error before any plan is said.
        if let Some(h) = &o.job.hostfile {
            numalab_mpi::hostfile::check_hosts(h)?;
        }
        numalab_mpi::liveness::overall_limit(Some(estimate))?;
        eprint!("{}", plan.summary(estimate.as_secs_f64()));
    }
    run_job(
        (&a.common, a.dry_run),
        &host,
        &launch,
        |prov| plan.records(prov),
        |world| p2p::measure(world, &host, &plan, progress("mpi")),
        a.osu.then_some(p2p::osu_text as fn(&[Record]) -> String),
    )
}

/// Another layout than the presenters' text, chosen by a flag (`--osu`).
pub type Layout = Option<fn(&[Record]) -> String>;

/// The tail every `mpi` command and MPI suite shares once its plan is resolved: emit
/// the plan's records (for --dry-run), or start the job's ranks, measure on every one
/// (a failure ends the job with the rank named) and emit rank 0's records, as the
/// presenters show them or in `layout`.
pub fn run_job(
    (common, dry_run): (&CommonArgs, bool),
    host: &Host,
    launch: &Launch,
    plan: impl FnOnce(&Provenance) -> Vec<Record>,
    measure: impl FnOnce(&World) -> numalab_mpi::Result<Option<Vec<Record>>>,
    layout: Layout,
) -> Result<(), CliError> {
    if dry_run {
        return common.show(&plan(&context(host).prov));
    }
    let world = start_keeping(host, launch, common, None)?;
    let recs = measure(&world).unwrap_or_else(|e| fail(Some(&world), &e));
    let shown = match (recs, layout) {
        (Some(recs), Some(text)) => common.emit(&recs, || text(&recs)),
        (Some(recs), None) => common.show(&recs),
        (None, _) => return Ok(()),
    };
    numalab_results::partial::delivered();
    shown
}

fn run_matrix(a: MatrixArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let o = matrix::Options {
        job: a.job.options(),
        size: size_opt("--size", &a.size)?,
        iterations: a.iterations,
        warmup: a.warmup,
    };
    o.check()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let mut launch = o.job.resolve(&host.machine, 2)?;
    let plan = matrix::Plan::resolve(&launch, &o)?;
    launch.req.estimate = Some(plan.estimate(launch.req.crowding()));
    run_job(
        (&a.common, a.dry_run),
        &host,
        &launch,
        |prov| plan.records(prov),
        |world| matrix::measure(world, &host, &plan, progress("mpi matrix")),
        None,
    )
}

/// Launch (or join) the job and start this rank; exits in the launching process.
pub fn start(host: &Host, req: &LaunchRequest, opts: &WorldOptions) -> Result<World, CliError> {
    if let Launched::Parent(code) = ensure(req)? {
        std::process::exit(code);
    }
    Ok(World::start(host, opts).unwrap_or_else(|e| fail(None, &e)))
}

/// [`start`] for a job of `total` configurations: when it fails, the finished ones go
/// to `-o` or a named fallback file (`numalab_mpi::keep`).
pub fn start_keeping(
    host: &Host,
    launch: &Launch,
    common: &CommonArgs,
    total: Option<usize>,
) -> Result<World, CliError> {
    let out = common.output.as_deref();
    if let Launched::Parent(code) = numalab_mpi::keep::ensure_keeping(&launch.req, out, total)? {
        std::process::exit(code);
    }
    Ok(World::start(host, &launch.world).unwrap_or_else(|e| fail(None, &e)))
}

impl MpiArgs {
    /// `Some(--wait)` when the command times something (`mpi ranks` only shows where
    /// ranks run).
    pub fn wait(&self) -> Option<bool> {
        match &self.cmd {
            MpiCmd::Ranks(_) => None,
            MpiCmd::Latency(a) => Some(a.sweep.wait.wait),
            MpiCmd::Bandwidth(a) => Some(a.sweep.wait.wait),
            MpiCmd::Matrix(a) => Some(a.wait.wait),
        }
    }
}

/// Run `numalab mpi`.
pub fn run(a: MpiArgs) -> Result<(), CliError> {
    match a.cmd {
        MpiCmd::Ranks(r) => run_ranks(r),
        MpiCmd::Latency(r) => run_latency(r),
        MpiCmd::Bandwidth(r) => run_bandwidth(r),
        MpiCmd::Matrix(r) => run_matrix(r),
    }
}

fn run_ranks(a: RanksArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let o = ranks::Options {
        job: a.job.options(),
    };
    o.check()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let mut launch = o.job.resolve(&host.machine, 1)?;
    let plan = ranks::Plan::resolve(&host.machine, &launch, &o)?;
    // Nothing is timed: the job's start is all it takes.
    launch.req.estimate = Some(numalab_mpi::sizes::JOB_START.mul_f64(launch.req.crowding()));
    run_job(
        (&a.common, a.dry_run),
        &host,
        &launch,
        |prov| plan.records(prov),
        |world| ranks::measure(world, &host),
        None,
    )
}
