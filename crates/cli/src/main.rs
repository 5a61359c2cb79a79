//! `numalab`: measure, model and profile memory performance on shared-memory machines.

mod bandwidth_cmd;
mod c2c_cmd;
mod collectives_cmd;
mod collectives_view;
mod common;
mod crew_args;
mod cvm_cmd;
mod dsm_cmd;
mod earth_cmd;
mod earth_view;
mod intervene_cmd;
mod invalidate_cmd;
mod latency_cmd;
mod latency_view;
mod loaded_cmd;
mod matrix_cmd;
mod model_cmd;
mod monitor_cmd;
mod mpi_cmd;
mod plan_cmd;
mod prof_args;
mod record_cmd;
mod report_cmd;
mod suite_cmd;
mod suite_view;
mod survey_cmd;
mod survey_plan;
mod survey_view;
mod topo_cmd;
mod trace_cmd;

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

#[derive(Subcommand)]
enum Command {
    /// The main job: a curated battery chosen from the topology, written to DIR as
    /// results.json, results.csv and a self-contained report.html.
    Survey(survey_cmd::SurveyArgs),
    /// Render saved records (JSON), or one trace, as a self-contained HTML report.
    Report(report_cmd::ReportArgs),
    /// Compare two record files measurement by measurement: medians and B/A.
    Compare(report_cmd::CompareArgs),
    /// Show the machine: packages, dies, NUMA nodes, caches, cores, SMT, distances and hops,
    /// memory attributes, huge pages, THP and NUMA balancing.
    Topo(topo_cmd::TopoArgs),
    /// Resolve a placement (threads, memory node, hops) without measuring; --verify binds
    /// threads and a buffer on this machine and proves where they landed.
    Plan(plan_cmd::PlanArgs),
    /// Latency of a pointer chase: back-to-back and restart, lines in a composite
    /// coherence state (warm, uown, shrd:K, cexh, cexm, dexd, dext), or a size sweep.
    Latency(latency_cmd::LatencyArgs),
    /// Bandwidth kernels (read, readv, rdsh, rdex, zero, upgrade, nt, copy) with one or
    /// many requestors, lines in any composite state, and bwmp (--mp).
    Bandwidth(bandwidth_cmd::BandwidthArgs),
    /// Core-to-core matrix: CAS ping-pong (RTT/2) and reads of lines Modified in the other CPU.
    C2c(c2c_cmd::C2cArgs),
    /// Initiator domain × memory node matrices of latency or bandwidth, and the same
    /// cells grouped by hops.
    Matrix(matrix_cmd::MatrixArgs),
    /// snbench's invalidation sweep: RDEX and UPGRD latency and bandwidth, and zero
    /// bandwidth, as sharers are added nearest-first from the home node.
    Invalidate(invalidate_cmd::InvalidateArgs),
    /// snbench's intervention placements: cexh, cexm, dexd and dext latency with two of
    /// requestor, owner and home on one node, at every distance, beside unowned (ΔU).
    Intervene(intervene_cmd::InterveneArgs),
    /// Latency of a chase while injector threads stream paced read or write traffic,
    /// at decreasing delays: the latency-versus-bandwidth curve.
    LoadedLatency(loaded_cmd::LoadedArgs),
    /// The seed studies as suites: `placement` (KSR1 thread placement, Experiment 0 and
    /// Suites I–IV), `collectives` (KSR collectives with fitted cost models) and `earth`
    /// (remote operation costs and latency hiding).
    Suite(suite_cmd::SuiteArgs),
    /// Fit or apply the remote-latency model: latency = local + remote penalty + hops × per-hop delay.
    Model(model_cmd::ModelArgs),
    /// snsar for today: per-node lines every interval (CPU busy, free memory, page
    /// allocations, memory-controller bandwidth where counters exist), optionally a trace.
    Monitor(monitor_cmd::MonitorArgs),
    /// snrun for today: run CMD, follow its threads and child processes, sample where they
    /// run, their counters and pages per node, with the system's metrics, into a trace;
    /// exits with CMD's status.
    Record(record_cmd::RecordArgs),
    /// sninfo: what a trace holds: machine, objects, sampling, sources, derivable metrics, findings.
    Info(trace_cmd::InfoArgs),
    /// sndump: the time series of a trace's metrics (or raw fields), by time.
    Dump(trace_cmd::DumpArgs),
    /// Export a trace for other viewers (--perfetto: Chrome trace-event JSON).
    Export(trace_cmd::ExportArgs),
    /// Experiments between MPI ranks (`--ranks N` starts mpirun here): where ranks run.
    Mpi(mpi_cmd::MpiArgs),
    /// The software DSM (seed 003): `run APP` on MPI ranks × user-level threads.
    Dsm(dsm_cmd::DsmArgs),
    /// Print the JSON Schema of result records.
    Schema,
}

fn run() -> Result<(), CliError> {
    let cli = Cli::parse();
    match cli.command {
        Command::Survey(a) => survey_cmd::run(a),
        Command::Report(a) => report_cmd::run_report(a),
        Command::Compare(a) => report_cmd::run_compare(a),
        Command::Topo(a) => topo_cmd::run(a),
        Command::Plan(a) => plan_cmd::run(a),
        Command::Latency(a) => latency_cmd::run(a),
        Command::Bandwidth(a) => bandwidth_cmd::run(a),
        Command::Model(a) => model_cmd::run(a),
        Command::Suite(a) => suite_cmd::run(a),
        Command::C2c(a) => c2c_cmd::run(a),
        Command::Matrix(a) => matrix_cmd::run(a),
        Command::Invalidate(a) => invalidate_cmd::run(a),
        Command::Intervene(a) => intervene_cmd::run(a),
        Command::LoadedLatency(a) => loaded_cmd::run(a),
        Command::Monitor(a) => monitor_cmd::run(a),
        Command::Record(a) => {
            let code = record_cmd::run(a)?;
            std::process::exit(code)
        }
        Command::Info(a) => trace_cmd::info(a),
        Command::Dump(a) => trace_cmd::dump(a),
        Command::Export(a) => trace_cmd::export(a),
        Command::Mpi(a) => mpi_cmd::run(a),
        Command::Dsm(a) => dsm_cmd::run(a),
        Command::Schema => {
            print!("{}", numalab_results::SCHEMA_JSON);
            Ok(())
        }
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("numalab: error: {}", e.msg);
        std::process::exit(e.code);
    }
}
