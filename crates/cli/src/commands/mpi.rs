//! `numalab mpi …`: experiments between MPI ranks. With `--ranks N` outside an MPI
//! job numalab starts `mpirun` on this machine itself; under the user's mpirun it
//! uses that job. Rank 0 alone emits.

use crate::common::{bad, check_measurable, size_opt, CliError, CommonArgs};
use clap::{Args, Subcommand};
use numalab_mpi::launch::{ensure, LaunchRequest, Launched};
use numalab_mpi::p2p::{self, Op};
use numalab_mpi::world::{fail, World, WorldOptions};
use numalab_mpi::{matrix, ranks, text, Threading};
use numalab_results::output::table;
use numalab_results::Record;
use numalab_topo::{Host, ThreadSpec};
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
}

impl JobArgs {
    /// The launch request, checked against `host` before anything starts.
    pub fn request(
        &self,
        host: &Host,
        min_ranks: usize,
    ) -> Result<(LaunchRequest, WorldOptions), CliError> {
        let spec = ThreadSpec::parse(&self.rank_cpus)?;
        let job = numalab_mpi::JobEnv::detect();
        let ranks = match (self.ranks, &job) {
            (Some(n), _) => n,
            (None, Some(j)) if j.size > 0 => j.size,
            (None, _) => min_ranks.max(2),
        };
        if ranks < min_ranks.max(1) {
            return Err(bad(format!(
                "invalid --ranks '{ranks}': this command needs at least {} ranks",
                min_ranks.max(1)
            )));
        }
        let req = LaunchRequest {
            ranks,
            hostfile: self.hostfile.clone(),
            cpus: host.machine.pus.len(),
            min_ranks,
        };
        req.validate()?;
        // The ranks of this host must find CPUs (others check theirs when they start).
        if host.machine.this_system {
            numalab_mpi::place::host_cpus(&host.machine, &spec, ranks.min(req.cpus.max(1)))?;
        }
        Ok((
            req,
            WorldOptions {
                threading: Threading::Single,
                rank_cpus: spec,
            },
        ))
    }
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
    Latency(SweepArgs),
    /// Streaming bandwidth between two ranks over a size sweep (OSU's window method).
    Bandwidth(SweepArgs),
    /// Ping-pong latency between every pair of ranks, grouped by relation.
    Matrix(MatrixArgs),
}

/// Arguments of `numalab mpi latency` and `bandwidth`.
#[derive(Args, Debug)]
pub struct SweepArgs {
    /// Message sizes: a list (8,4K,1M) or ranges of powers of two (1:4M).
    #[arg(long, default_value = "1:4M")]
    sizes: String,
    /// Latency operations: pingpong, get, put, acc (bandwidth streams sends).
    #[arg(long, default_value = "pingpong,get,put,acc")]
    ops: String,
    /// The timing rank and its peer.
    #[arg(long, default_value = "0,1", value_name = "A,B")]
    pair: String,
    /// Timed iterations per size (default OSU's: 10000 up to 8 KiB, 1000 above; bandwidth 100 / 20).
    #[arg(long)]
    iterations: Option<usize>,
    /// Untimed iterations first (default OSU's: 100 / 10; bandwidth 10 / 2).
    #[arg(long)]
    warmup: Option<usize>,
    /// Sends in flight per bandwidth sample.
    #[arg(long, default_value_t = 64)]
    window: usize,
    /// fresh: new bytes before every iteration (outside the timer); same: the same
    /// bytes every time, as OSU and IMB send (the receiver may keep them cached).
    #[arg(long, default_value = "fresh")]
    data: String,
    /// Latency iterations per timed sample: 1 times each; larger amortises the
    /// clock reads as OSU's one timer around the loop does (needs --data same).
    #[arg(long, default_value_t = 1)]
    batch: usize,
    #[command(flatten)]
    job: JobArgs,
    /// Print the plan without starting ranks.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

/// Arguments of `numalab mpi matrix`.
#[derive(Args, Debug)]
pub struct MatrixArgs {
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

fn parse_pair(s: &str) -> Result<(usize, usize), CliError> {
    let bad_pair = || {
        bad(format!(
            "invalid --pair '{s}': two rank numbers such as 0,1"
        ))
    };
    let (a, b) = s.split_once(',').ok_or_else(bad_pair)?;
    Ok((
        a.trim().parse().map_err(|_| bad_pair())?,
        b.trim().parse().map_err(|_| bad_pair())?,
    ))
}

pub fn progress(what: &'static str) -> impl FnMut(usize, usize) {
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    move |i, n| {
        if tty {
            eprint!("\r{what}: {}/{n}   ", i + 1);
            if i + 1 == n {
                eprintln!();
            }
        }
    }
}

fn run_sweep(a: SweepArgs, bandwidth: bool) -> Result<(), CliError> {
    a.common.validate()?;
    check_measurable(&a.common, a.dry_run)?;
    let ops = if bandwidth {
        vec![Op::Stream]
    } else {
        a.ops
            .split(',')
            .map(Op::parse_latency)
            .collect::<Result<Vec<_>, _>>()?
    };
    let opts = p2p::Options {
        ops,
        sizes: p2p::parse_sizes(&a.sizes)?,
        pair: parse_pair(&a.pair)?,
        iterations: a.iterations,
        warmup: a.warmup,
        window: a.window,
        data: numalab_mpi::kernels::Data::parse(&a.data)?,
        batch: a.batch,
    };
    let host = a.common.host()?;
    let (req, wopts) = a.job.request(&host, 2)?;
    let plan = p2p::Plan::resolve(req.ranks, &opts)?;
    let (metric, unit) = if bandwidth {
        ("bandwidth", "GB/s")
    } else {
        ("latency", "ns")
    };
    run_job(
        &a.common,
        &host,
        (&req, &wopts),
        a.dry_run.then(|| plan.text()),
        |world| p2p::measure(world, &host, &plan, progress("mpi")),
        |recs| text::sweep(recs, metric, unit),
    )
}

/// The tail every `mpi` command and MPI suite shares once its plan is resolved: print
/// the plan (`dry`, for --dry-run), or start the job's ranks, measure on every one (a
/// failure ends the job with the rank named) and emit rank 0's records.
pub fn run_job(
    common: &CommonArgs,
    host: &Host,
    (req, opts): (&LaunchRequest, &WorldOptions),
    dry: Option<String>,
    measure: impl FnOnce(&World) -> numalab_mpi::Result<Option<Vec<Record>>>,
    render: impl Fn(&[Record]) -> String,
) -> Result<(), CliError> {
    if let Some(plan) = dry {
        print!("{plan}");
        return Ok(());
    }
    let world = start(host, req, opts)?;
    let recs = measure(&world).unwrap_or_else(|e| fail(Some(&world), &e));
    if let Some(recs) = recs {
        common.emit(&recs, || render(&recs))?;
    }
    Ok(())
}

fn run_matrix(a: MatrixArgs) -> Result<(), CliError> {
    a.common.validate()?;
    check_measurable(&a.common, a.dry_run)?;
    let size = size_opt("--size", &a.size)?;
    let opts = matrix::Options {
        size,
        iterations: a.iterations,
        warmup: a.warmup,
    };
    let host = a.common.host()?;
    let (req, wopts) = a.job.request(&host, 2)?;
    let plan = matrix::Plan::resolve(req.ranks, &opts)?;
    run_job(
        &a.common,
        &host,
        (&req, &wopts),
        a.dry_run.then(|| plan.text()),
        |world| matrix::measure(world, &host, &plan, progress("mpi matrix")),
        text::matrix,
    )
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

/// Launch (or join) the job and start this rank; exits in the launching process.
pub fn start(host: &Host, req: &LaunchRequest, opts: &WorldOptions) -> Result<World, CliError> {
    if let Launched::Parent(code) = ensure(req)? {
        std::process::exit(code);
    }
    Ok(World::start(host, opts).unwrap_or_else(|e| fail(None, &e)))
}

impl MpiArgs {
    /// Whether the command times something (`mpi ranks` only shows where ranks run).
    pub fn measures(&self) -> bool {
        !matches!(self.cmd, MpiCmd::Ranks(_))
    }
}

/// Run `numalab mpi`.
pub fn run(a: MpiArgs) -> Result<(), CliError> {
    match a.cmd {
        MpiCmd::Ranks(r) => run_ranks(r),
        MpiCmd::Latency(r) => run_sweep(r, false),
        MpiCmd::Bandwidth(r) => run_sweep(r, true),
        MpiCmd::Matrix(r) => run_matrix(r),
    }
}

fn run_ranks(a: RanksArgs) -> Result<(), CliError> {
    a.common.validate()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let (req, opts) = a.job.request(&host, 1)?;
    if a.dry_run {
        let cpus = numalab_mpi::place::host_cpus(&host.machine, &opts.rank_cpus, req.ranks)?;
        let rows: Vec<Vec<String>> = cpus
            .iter()
            .enumerate()
            .map(|(r, c)| vec![r.to_string(), c.to_string()])
            .collect();
        println!(
            "mpi plan: {} ranks, rank-cpus {} ({}), mpirun {}\n{}",
            req.ranks,
            opts.rank_cpus,
            if req.hostfile.is_some() {
                "per host"
            } else {
                "this machine"
            },
            req.mpirun_args(false)
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            table(&["rank", "cpu"], &rows)
        );
        return Ok(());
    }
    let world = start(&host, &req, &opts)?;
    let recs = ranks::measure(&world, &host).unwrap_or_else(|e| fail(Some(&world), &e));
    if let Some(recs) = recs {
        a.common.emit(&recs, || ranks_text(&recs))?;
    }
    Ok(())
}

fn ranks_text(recs: &[Record]) -> String {
    let rows = numalab_mpi::present::rank_rows(recs);
    let mut s = table(&numalab_mpi::present::RANK_HEADER, &rows);
    s.push('\n');
    if let Some(r) = recs.first() {
        let p = r.placement.as_ref();
        s.push_str(&format!(
            "MPI: {}; thread level {}\n",
            p.and_then(|p| p["mpi_library"].as_str())
                .and_then(|l| l.split(',').next())
                .unwrap_or("?"),
            p.and_then(|p| p["threading_provided"].as_str())
                .unwrap_or("?"),
        ));
    }
    let mut seen: Vec<&String> = Vec::new();
    for w in recs.iter().flat_map(|r| &r.warnings) {
        if !seen.contains(&w) {
            seen.push(w);
            s.push_str(&format!("warning: {w}\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn pairs_never_panic_and_name_what_they_refuse(s in prop_oneof!["[0-9 ,-]{0,12}", "\\PC{0,16}"]) {
            if let Err(e) = parse_pair(&s) {
                prop_assert_eq!(e.code, 2);
                prop_assert!(e.msg.contains(&format!("'{s}'")), "{}", e.msg);
                if !s.contains(|c: char| c.is_control()) {
                    prop_assert_eq!(e.msg.lines().count(), 1);
                }
            }
        }

        #[test]
        fn printed_pairs_parse_back(a in 0usize..100_000, b in 0usize..100_000) {
            prop_assert_eq!(parse_pair(&format!("{a},{b}")).unwrap(), (a, b));
            prop_assert_eq!(parse_pair(&format!(" {a} , {b} ")).unwrap(), (a, b));
        }
    }
}
