//! `numalab record`: run a command and record its threads, processes and the system into a trace.

use crate::common::{bad, context, CliError};
use crate::prof_args;
use clap::Args;
use numalab_prof::record::{self, Exit, Options};
use numalab_topo::{Host, TopologySource};
use std::path::PathBuf;

/// Arguments of `numalab record`.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Sampling interval in milliseconds.
    #[arg(
        short = 'i',
        long = "interval",
        value_name = "MS",
        default_value_t = 100
    )]
    interval: u64,
    /// The trace file to write (streamed; a killed recorder leaves a readable prefix).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "TRACE",
        default_value = "numalab.trace"
    )]
    output: PathBuf,
    /// Replace the trace file if it already holds one.
    #[arg(long)]
    force: bool,
    /// Read the processes' pages per node (numa_maps) every N intervals (it walks page tables).
    #[arg(long = "pages-every", value_name = "N", default_value_t = 10)]
    pages_every: u32,
    /// Largest share of the time, in percent, that reading pages per node may take
    /// (each read walks the page tables; slow machines may need more to see pages at all).
    #[arg(long = "pages-budget", value_name = "PERCENT", default_value_t = 0.25)]
    pages_budget: f64,
    /// Pin the recorder to this CPU, away from the target.
    #[arg(long, value_name = "CPU")]
    runon: Option<u32>,
    /// Do not open hardware counters (OS sources only).
    #[arg(long = "no-counters")]
    no_counters: bool,
    /// The command to run and its arguments (after --).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    command: Vec<String>,
}

/// Run `numalab record`; returns the target's exit status to propagate.
pub fn run(a: RecordArgs) -> Result<i32, CliError> {
    let iv = prof_args::interval("--interval", a.interval)?;
    check(&a)?;
    let host = Host::load(&TopologySource::ThisSystem)?;
    let runon = prof_args::runon(&host, a.runon)?;
    prof_args::trace_path(&a.output, a.force)?;
    let prov = context(&host).prov;
    let opts = Options {
        interval: iv,
        pages_every: a.pages_every,
        pages_budget: a.pages_budget / 100.0,
        output: a.output.clone(),
        runon,
        counters: !a.no_counters,
        target: a.command.clone(),
    };
    let out = record::record(&host, &opts, prov).map_err(|e| CliError {
        code: if e.user { 2 } else { 1 },
        msg: e.msg,
    })?;
    eprintln!("{}", summary(&a, &out));
    match out.moved {
        // The trace is whole, but not where it was asked for: a script must notice.
        Some(why) => Err(CliError { code: 1, msg: why }),
        None => Ok(out.exit.status()),
    }
}

/// The flags checked before anything starts: page sampling and the command itself.
fn check(a: &RecordArgs) -> Result<(), CliError> {
    if a.pages_every == 0 {
        return Err(bad(
            "invalid --pages-every '0': a number of intervals, 1 or more",
        ));
    }
    if !(a.pages_budget > 0.0 && a.pages_budget <= 100.0) {
        return Err(bad(format!(
            "invalid --pages-budget '{}': a percentage above 0 and at most 100",
            a.pages_budget
        )));
    }
    let program = &a.command[0];
    if record::resolve(program).is_none() {
        return Err(bad(format!(
            "invalid command '{program}': not found or not executable{}",
            if program.contains('/') {
                ""
            } else {
                " on PATH"
            }
        )));
    }
    Ok(())
}

/// The closing line: how the command ended, the sampling, its cost, the trace.
fn summary(a: &RecordArgs, out: &record::Outcome) -> String {
    let how = match out.exit {
        Exit::Code(c) => format!("exited with status {c}"),
        Exit::Signal(s) => format!(
            "was killed by signal {s} ({})",
            numalab_prof::record::signal_name(s)
        ),
    };
    let cost = out.sampler_cpu_ns.map_or(String::new(), |c| {
        format!(
            "; the recorder used {:.1} ms of CPU ({:.2}% of {:.3} s)",
            c as f64 / 1e6,
            100.0 * c as f64 / out.elapsed_ns.max(1) as f64,
            out.elapsed_ns as f64 / 1e9
        )
    });
    format!(
        "numalab record: '{}' {how}; {} every {} ms in {}{cost} (numalab info {})",
        a.command.join(" "),
        numalab_results::words::count(out.rounds, "sampling round"),
        a.interval,
        out.trace.display(),
        out.trace.display()
    )
}
