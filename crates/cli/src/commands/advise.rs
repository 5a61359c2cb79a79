//! `numalab advise`: flags → the advisor's `Options`; the survey and trace read here.

use crate::common::CliError;
use clap::Args;
use numalab_answers::advise::{self, Options, Plan};
use numalab_results::{output, Provenance};
use std::path::PathBuf;

/// Arguments of `numalab advise`.
#[derive(Args, Debug)]
pub struct AdviseArgs {
    /// The survey: its folder (numalab survey -o DIR) or its results.json.
    survey: PathBuf,
    /// A trace of the program (numalab record): advice per thread.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Threads of the workload to place (default without a trace: every CPU of the
    /// surveyed machine).
    #[arg(long)]
    threads: Option<usize>,
    /// Bytes the threads touch in all (64M, 4G, ...; default without a trace: half of
    /// a node's memory).
    #[arg(long, value_name = "SIZE")]
    footprint: Option<String>,
    /// Share of accesses that are reads, percent.
    #[arg(long, default_value_t = 100, value_name = "PCT")]
    reads: u32,
    /// stream (bandwidth-bound: sequential passes) or random (latency-bound: dependent loads).
    #[arg(long, default_value = "stream")]
    access: String,
    /// Every thread reads the whole footprint (default: each thread its own slice).
    #[arg(long)]
    shared: bool,
    /// The program the printed commands run, as one shell word, quoted in them (default: the trace's command, else PROGRAM).
    #[arg(long)]
    program: Option<String>,
    /// Print the advice records as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Also write the advice records to FILE (.json or .csv).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Replace the -o file even if it already holds something.
    #[arg(long)]
    force: bool,
}

/// Run `numalab advise`.
pub fn run(a: AdviseArgs) -> Result<(), CliError> {
    if let Some(p) = &a.output {
        output::check_path(p)?;
        output::check_fresh(p, a.force)?;
        let file = advise::survey_file(&a.survey)?;
        let mut inputs = vec![a.survey.as_path(), file.as_path()];
        inputs.extend(a.trace.as_deref());
        numalab_results::outpath::check_distinct(&[("-o", p)], &inputs)?;
    }
    let file = advise::survey_file(&a.survey)?;
    let records = super::report::read_records(&file)?;
    let trace = a.trace.as_deref().map(super::trace::load).transpose()?;
    let program = advise::program(a.program.clone(), trace.as_ref());
    let o = Options {
        threads: a.threads,
        footprint: a.footprint.clone(),
        reads: a.reads,
        access: a.access.clone(),
        shared: a.shared,
        program,
    };
    let plan = Plan::resolve(&records, trace.as_ref(), &o)?;
    let advice = plan.compute()?;
    let m = &plan.measured.machine;
    let prov = Provenance::collect(&m.summary(), &format!("survey {}", file.display()));
    let recs = advise::records(&advice, &prov);
    let write = |p: &std::path::Path| output::write_records(p, &recs);
    a.output.as_deref().map(write).transpose()?;
    if a.json {
        println!("{}", output::to_json(&recs));
    } else {
        print!("{}", advise::text(&advice, &recs));
    }
    Ok(())
}
