//! `numalab survey`: the curated battery for this machine, one results.json and one
//! report.html. Each step runs as its own numalab process (the command line is in
//! the plan), so a step that fails is reported and the rest goes on, and Ctrl-C
//! stops the current step and keeps everything measured before it. Every finished
//! step goes into DIR/journal.jsonl at once (see `numalab_results::journal`), so a
//! kill or a crash keeps it, and `--resume DIR` measures only what is missing.

use crate::common::{bad, Bar, CliError};
use clap::Args;
use numalab_answers::registry;
use numalab_answers::survey::journal::{self as sj, Log};
use numalab_answers::survey::pace::Pace;
use numalab_answers::survey::quiet::Placer;
use numalab_answers::survey::runner::{self, Measured, Watch};
use numalab_answers::survey::{self, Options, Plan};
use numalab_results::output::table;
use numalab_results::Provenance;
use numalab_topo::{Host, TopologySource};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `numalab survey`.
#[derive(Args, Debug)]
pub struct SurveyArgs {
    #[command(flatten)]
    pub wait: crate::common::WaitArg,
    /// Directory for journal.jsonl, results.json, results.csv and report.html (created
    /// if missing; one that holds an earlier survey is refused without --force).
    #[arg(short = 'o', long = "output", default_value = "numalab-survey")]
    dir: PathBuf,
    /// Continue the interrupted survey in DIR from its journal: only the steps not yet
    /// finished are measured. Give the options it was started with.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["dir", "force", "dry_run"])]
    resume: Option<PathBuf>,
    /// Replace the results the output folder already holds.
    #[arg(long)]
    force: bool,
    /// A shorter battery (fewer sizes and passes); --dry-run prints its estimate, and a
    /// run prints it again at the pace it measures at start.
    #[arg(long)]
    quick: bool,
    /// Largest buffer of any step (e.g. 4M): caps the beyond-cache buffers for a slow or
    /// small machine such as an emulated guest; smaller buffers may stay in the caches.
    #[arg(long, value_name = "SIZE")]
    max_size: Option<String>,
    #[command(flatten)]
    noise: crate::common::NoiseArgs,
    /// Also run the seed studies: KSR1 thread placement, KSR collectives, EARTH remote
    /// operations and latency hiding, the MPI rank-to-rank matrix (each its own
    /// collapsible section of the report, after the memory answer).
    #[arg(long)]
    studies: bool,
    /// Print the plan (steps, command lines, estimated duration) without measuring.
    #[arg(long)]
    dry_run: bool,
    /// Plan against an hwloc XML file (with --dry-run).
    #[arg(long, value_name = "FILE.xml")]
    topology: Option<PathBuf>,
    /// Print the plan as JSON (with --dry-run).
    #[arg(long)]
    json: bool,
}

impl SurveyArgs {
    fn options(&self) -> Options {
        Options {
            quick: self.quick,
            max_size: self.max_size.clone(),
            noise: self.noise.options(),
            studies: self.studies,
        }
    }
}

/// The progress bar watches the steps, its time left from the pace measured so far.
struct Paced {
    bar: Bar,
    pace: Pace,
    /// Planned seconds (reference pace) of the steps not yet run.
    left_est: f64,
    started: Instant,
}

impl Watch for Paced {
    fn start(&mut self, title: &str) {
        self.bar.message(title);
    }
    fn done(&mut self, estimate_s: f64, seconds: f64) {
        self.pace.step(estimate_s, seconds);
        self.left_est = (self.left_est - estimate_s).max(0.0);
        let done = self.started.elapsed().as_secs_f64();
        self.bar.replan(done, self.pace.seconds(self.left_est));
    }
    fn warn(&mut self, why: &str) {
        self.bar.suspend(|| eprintln!("numalab: warning: {why}"));
    }
    fn note(&mut self, line: &str) {
        self.bar.suspend(|| eprintln!("numalab: note: {line}"));
    }
}

/// Run `numalab survey`.
pub fn run(a: SurveyArgs) -> Result<(), CliError> {
    if a.topology.is_some() && !a.dry_run {
        return Err(bad(
            "invalid option '--topology' without '--dry-run': a survey measures this machine; plan against a file with --dry-run",
        ));
    }
    let o = a.options();
    o.check()?;
    let source = a
        .topology
        .clone()
        .map(TopologySource::Xml)
        .unwrap_or(TopologySource::ThisSystem);
    let host = Host::load(&source)?;
    let plan = Plan::resolve(&host.machine, &o)?;
    if a.dry_run {
        match a.json {
            true => println!(
                "{}",
                serde_json::to_string_pretty(&plan.steps).expect("steps serialise")
            ),
            false => print!("{}", plan.text()),
        }
        return Ok(());
    }
    measure(&a, &host, &plan)
}

/// Measure the plan into the folder (a new one, or the one --resume names) and report.
fn measure(a: &SurveyArgs, host: &Host, plan: &Plan) -> Result<(), CliError> {
    let dir = a.resume.clone().unwrap_or_else(|| a.dir.clone());
    let prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
    let planned = sj::planned(&plan.steps);
    let mut log = match &a.resume {
        Some(d) => sj::resume(d, &prov, &planned)?,
        None => sj::start(&dir, a.force, &prov, planned.clone())?,
    };
    let exe = std::env::current_exe().map_err(|e| {
        CliError::from(numalab_topo::Error::System(format!(
            "cannot find numalab itself: {e}"
        )))
    })?;
    runner::catch_signals();
    let started = Instant::now();
    let mut placer = Placer::new(host.machine.clone());
    let first = placer.first_choice();
    let pace = Pace::calibrate(&exe, first.as_ref().map(|c| c.cpu))
        .with_others_taken(first.as_ref().map_or(0.0, |c| c.others_taken()));
    let steps = pace.weighed(&host.machine, &plan.steps);
    let left_est = left_estimate(&steps, &planned, &log);
    announce(a, plan, &dir, &log, &pace, left_est);
    let mut watch = Paced {
        bar: Bar::new(pace.seconds(left_est)),
        pace,
        left_est,
        started,
    };
    let m = runner::measure(
        &steps,
        &planned,
        &mut log,
        &prov,
        &exe,
        &mut placer,
        &mut watch,
    );
    watch.bar.finish();
    finish(&dir, &log, m, started)
}

/// Planned seconds of the steps the journal does not hold yet.
fn left_estimate(
    steps: &[survey::Step],
    planned: &[numalab_results::journal::PlannedStep],
    log: &Log,
) -> f64 {
    steps
        .iter()
        .zip(planned)
        .filter(|(_, p)| log.journal.entry(&p.id).is_none())
        .map(|(s, _)| s.estimate_s)
        .sum()
}

/// The start line: steps, planned time, the folder and what a resume found.
fn announce(a: &SurveyArgs, plan: &Plan, dir: &std::path::Path, log: &Log, pace: &Pace, left: f64) {
    let resumed = a.resume.is_some();
    let done = log.finished_runnable();
    eprintln!(
        "numalab survey: {} steps, planned about {:.0} s ({}); {}{}{}{}",
        plan.runnable(),
        pace.total(left),
        pace.how(),
        if resumed { "continuing " } else { "writing " },
        dir.display(),
        if resumed {
            format!(" ({done} of {} steps finished before)", plan.runnable())
        } else {
            String::new()
        },
        plan.cap_note()
    );
    for n in &log.notes {
        eprintln!("numalab: note: {n}");
    }
}

/// Write the files, print the summary and the steps' table, and say how it ended.
fn finish(dir: &std::path::Path, log: &Log, m: Measured, started: Instant) -> Result<(), CliError> {
    let interrupted = runner::interrupted();
    let mut records = log.journal.records();
    records.extend(m.unfinished);
    survey::write_all(dir, &records, &sj::missing(&log.journal))?;
    println!(
        "numalab survey: {} in {:.1} s; {}",
        if interrupted { "interrupted" } else { "done" },
        started.elapsed().as_secs_f64(),
        numalab_results::words::count(records.len() as u64, "record")
    );
    // The summary first: the figures a reader wants before the bookkeeping.
    print!("{}", registry::summary(&records));
    println!();
    print!("{}", table(&["step", "result", "seconds"], &m.summary));
    println!(
        "\nwrote {}/results.json, results.csv and report.html",
        dir.display()
    );
    if let Some(why) = &log.broken {
        eprintln!("numalab: warning: the journal is incomplete ({why}); the results files hold every record");
    }
    if let Some(sig) = numalab_results::interrupt::pending() {
        return Err(CliError {
            code: 128 + sig,
            msg: format!(
                "interrupted: the files hold what was measured before {}; `numalab survey --resume {}` with the same options measures the rest",
                numalab_results::interrupt::name(sig),
                dir.display()
            ),
        });
    }
    Ok(())
}
