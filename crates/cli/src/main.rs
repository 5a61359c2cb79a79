//! `numalab`: measure, model and profile memory performance on shared-memory machines.

mod commands;
mod common;
mod crew_args;
mod prof_args;
mod progress;

use clap::{Parser, Subcommand};
use common::CliError;

/// numalab measures where threads run, where memory lives and what that costs,
/// on multi-socket, chiplet, sub-NUMA and CXL machines.
#[derive(Parser)]
#[command(name = "numalab", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

impl Command {
    /// `Some(--wait)` for the commands that time something on this machine, and so
    /// disturb (and are disturbed by) another measurement running at the same time.
    fn wait(&self) -> Option<bool> {
        let w = match self {
            Command::Mpi(a) => return a.wait(),
            Command::Survey(a) => a.wait,
            Command::Latency(a) => a.wait,
            Command::Bandwidth(a) => a.wait,
            Command::C2c(a) => a.wait,
            Command::Matrix(a) => a.wait,
            Command::Invalidate(a) => a.wait,
            Command::Intervene(a) => a.wait,
            Command::LoadedLatency(a) => a.wait,
            Command::Suite(a) => a.wait,
            Command::Dsm(a) => a.wait,
            _ => return None,
        };
        Some(w.wait)
    }
}

/// Whether this invocation measures: a measuring command that is not a dry run nor
/// a plan against another machine's topology.
fn registers(cli: &Cli, argv: &[String]) -> bool {
    let planning_only = argv
        .iter()
        .any(|a| a == "--dry-run" || a.starts_with("--topology"));
    cli.command.wait().is_some() && !planning_only
}

#[derive(Subcommand)]
enum Command {
    /// The main job: a curated battery chosen from the topology, written to DIR as
    /// results.json, results.csv and a self-contained report.html.
    Survey(commands::survey::SurveyArgs),
    /// Render saved records (JSON), or one trace, as a self-contained HTML report.
    Report(commands::report::ReportArgs),
    /// Which placement to use, from a survey's measured matrices: ranked placements for a
    /// workload (--threads, --footprint), or per-thread moves for a trace (--trace).
    Advise(commands::advise::AdviseArgs),
    /// Memory tiers: the kernel's, its rule on the HMAT and on measurements; weights, demotion.
    Tiers(commands::tiers::TiersArgs),
    /// Every host's settings and memory and every link between hosts (one rank per host
    /// of a hostfile), with the odd host, link or setting named; --dry-run --hosts N plans.
    Cluster(commands::cluster::ClusterArgs),
    /// Compare two runs (record files or survey folders) figure by figure: a verdict line,
    /// then medians, intervals, B/A, and each change beyond, within or not comparable.
    Compare(commands::report::CompareArgs),
    /// Show the machine: packages, dies, NUMA nodes, caches, cores, SMT, distances and hops,
    /// memory attributes, huge pages, THP and NUMA balancing.
    Topo(commands::topo::TopoArgs),
    /// Resolve a placement (threads, memory node, hops) without measuring; --verify binds
    /// threads and a buffer on this machine and proves where they landed.
    Plan(commands::plan::PlanArgs),
    /// Latency of a pointer chase: back-to-back and restart, lines in a composite
    /// coherence state (warm, uown, shrd:K, cexh, cexm, dexd, dext), or a size sweep.
    Latency(commands::latency::LatencyArgs),
    /// Bandwidth kernels (read, readv, rdsh, rdex, zero, upgrade, nt, copy) with one or
    /// many requestors, lines in any composite state, and bwmp (--mp).
    Bandwidth(commands::bandwidth::BandwidthArgs),
    /// Core-to-core matrix: CAS ping-pong (RTT/2) and reads of lines Modified in the other CPU.
    C2c(commands::c2c::C2cArgs),
    /// Initiator domain × memory node matrices of latency or bandwidth, and the same
    /// cells grouped by hops.
    Matrix(commands::matrix::MatrixArgs),
    /// snbench's invalidation sweep: RDEX and UPGRD latency and bandwidth, and zero
    /// bandwidth, as sharers are added nearest-first from the home node.
    Invalidate(commands::invalidate::InvalidateArgs),
    /// snbench's intervention placements: cexh, cexm, dexd and dext latency with two of
    /// requestor, owner and home on one node, at every distance, beside unowned (ΔU).
    Intervene(commands::intervene::InterveneArgs),
    /// Latency of a chase while injector threads stream paced read or write traffic,
    /// at decreasing delays: the latency-versus-bandwidth curve.
    LoadedLatency(commands::loaded::LoadedArgs),
    /// The seed studies as suites: `placement` (KSR1 thread placement, Experiment 0 and
    /// Suites I–IV), `collectives` (KSR collectives with fitted cost models), `earth`
    /// (remote operation costs and latency hiding) and `cvm` (the multithreaded DSM).
    Suite(commands::suite::SuiteArgs),
    /// Fit or apply the remote-latency model: latency = local + remote penalty + hops × per-hop delay.
    Model(commands::model::ModelArgs),
    /// snsar for today: per-node lines every interval (CPU busy, free memory, page
    /// allocations, memory-controller bandwidth where counters exist), optionally a trace.
    Monitor(commands::monitor::MonitorArgs),
    /// snrun for today: run CMD, follow its threads and child processes, sample where they
    /// run, their counters and pages per node, with the system's metrics, into a trace;
    /// exits with CMD's status.
    Record(commands::record::RecordArgs),
    /// sninfo: what a trace holds: machine, objects, sampling, sources, derivable metrics, findings.
    Info(commands::trace::InfoArgs),
    /// sndump: the time series of a trace's metrics (or raw fields), by time.
    Dump(commands::trace::DumpArgs),
    /// Export a trace for other viewers (--perfetto: Chrome trace-event JSON).
    Export(commands::trace::ExportArgs),
    /// Experiments between MPI ranks (`--ranks N` starts mpirun here): where ranks run,
    /// latency and bandwidth over sizes (two-sided and RMA), the rank × rank matrix.
    Mpi(commands::mpi::MpiArgs),
    /// The software DSM (seed 003): `run APP` on MPI ranks × user-level threads.
    Dsm(commands::dsm::DsmArgs),
    /// Print the JSON Schema of result records.
    Schema,
}

/// clap's error as numalab's one line (exit 2); help and version print as clap does.
/// A negative number after an option reads to clap as an unknown flag: it is named
/// as the option's bad value instead.
fn parse_error(e: clap::Error) -> CliError {
    use clap::error::{ContextKind, ErrorKind};
    if !e.use_stderr() || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        e.exit()
    }
    let arg = e.get(ContextKind::InvalidArg).map(|a| a.to_string());
    let argv: Vec<String> = std::env::args().collect();
    let negative = |v: &str| {
        v.strip_prefix('-')
            .is_some_and(|d| d.starts_with(|c: char| c.is_ascii_digit()))
    };
    let before = arg.and_then(|a| {
        argv.windows(2)
            .find(|w| w[1].starts_with(&a) && negative(&w[1]))
    });
    let msg = match before {
        Some(w) if w[0].starts_with("--") => {
            format!(
                "invalid {} '{}': a negative number is not valid here",
                w[0], w[1]
            )
        }
        _ => e
            .to_string()
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ")
            .to_string(),
    };
    common::bad(msg)
}

fn run() -> Result<(), CliError> {
    let cli = Cli::try_parse().map_err(parse_error)?;
    numalab_results::envvars::check_all().map_err(common::bad)?;
    // Dry runs and plans against another machine's topology measure nothing and
    // register nothing.
    let rank = numalab_mpi::JobEnv::detect().map(|j| j.rank);
    let wait = cli.command.wait().unwrap_or(false);
    let announced = registers(&cli, &std::env::args().collect::<Vec<_>>())
        .then(|| numalab_results::announce::announce(wait, rank));
    let result = dispatch(cli);
    if let (Ok(()), Some(a)) = (&result, &announced) {
        a.warn_concurrent(rank);
    }
    result
}

fn dispatch(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Survey(a) => commands::survey::run(a),
        Command::Report(a) => commands::report::run_report(a),
        Command::Compare(a) => commands::report::run_compare(a),
        Command::Advise(a) => commands::advise::run(a),
        Command::Tiers(a) => commands::tiers::run(a),
        Command::Cluster(a) => commands::cluster::run(a),
        Command::Topo(a) => commands::topo::run(a),
        Command::Plan(a) => commands::plan::run(a),
        Command::Latency(a) => commands::latency::run(a),
        Command::Bandwidth(a) => commands::bandwidth::run(a),
        Command::Model(a) => commands::model::run(a),
        Command::Suite(a) => commands::suite::run(a),
        Command::C2c(a) => commands::c2c::run(a),
        Command::Matrix(a) => commands::matrix::run(a),
        Command::Invalidate(a) => commands::invalidate::run(a),
        Command::Intervene(a) => commands::intervene::run(a),
        Command::LoadedLatency(a) => commands::loaded::run(a),
        Command::Monitor(a) => commands::monitor::run(a),
        Command::Record(a) => {
            let code = commands::record::run(a)?;
            std::process::exit(code)
        }
        Command::Info(a) => commands::trace::info(a),
        Command::Dump(a) => commands::trace::dump(a),
        Command::Export(a) => commands::trace::export(a),
        Command::Mpi(a) => commands::mpi::run(a),
        Command::Dsm(a) => commands::dsm::run(a),
        Command::Schema => {
            print!("{}", numalab_results::SCHEMA_JSON);
            Ok(())
        }
    }
}

fn main() {
    // A closed stdout (`numalab schema | head -1`) ends numalab quietly, as it ends any
    // Unix filter: Rust ignores SIGPIPE, which turns the failed write into a panic.
    // SAFETY: restoring a signal's default disposition has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    if let Err(e) = run() {
        if speaks_for_job(e.code) {
            // One write for the whole line: eprintln! writes its pieces one by one, and
            // under mpirun another process's output landed between "numalab: error: "
            // and the message (liveness test, 2026-11-28).
            use std::io::Write;
            let line = format!("numalab: error: {}\n", e.msg);
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
        std::process::exit(e.code);
    }
}

/// Whether this process prints an error with exit status `code`. Under a user's own
/// mpirun every rank parses the same command line: a bad option (exit 2) is said
/// once, by rank 0, and the other ranks exit 2 quietly.
fn speaks_for_job(code: i32) -> bool {
    code != 2 || numalab_mpi::JobEnv::detect().is_none_or(|j| j.rank == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_real_measurements_register() {
        let case = |line: &str| {
            let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
            registers(&Cli::try_parse_from(&argv).unwrap(), &argv)
        };
        for yes in [
            "numalab latency",
            "numalab survey --quick",
            "numalab suite earth",
            "numalab c2c --wait",
            "numalab mpi latency --ranks 2",
            "numalab mpi matrix",
            "numalab dsm run sor",
        ] {
            assert!(case(yes), "{yes}");
        }
        for no in [
            "numalab latency --dry-run",
            "numalab survey --topology x.xml",
            "numalab topo",
            "numalab report a.json",
            "numalab plan 0",
            "numalab schema",
            "numalab mpi ranks --ranks 2",
            "numalab mpi latency --dry-run",
        ] {
            assert!(!case(no), "{no}");
        }
    }
}
