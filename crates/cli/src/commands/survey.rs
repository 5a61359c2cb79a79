//! `numalab survey`: the curated battery for this machine, one results.json and one
//! report.html. Each step runs as its own numalab process (the command line is in
//! the plan), so a step that fails is reported and the rest goes on, and Ctrl-C
//! stops the current step and keeps everything measured before it. Every finished
//! step goes into DIR/journal.jsonl at once (see `numalab_results::journal`), so a
//! kill or a crash keeps it, and `--resume DIR` measures only what is missing.

use super::survey_journal as sj;
use crate::common::{bad, size_opt, CliError};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use numalab_results::journal::{Entry, PlannedStep};
use numalab_results::output::{table, write_atomic};
use numalab_results::{write_records, Provenance, Record};
use numalab_suites::registry;
use numalab_suites::survey::{self, model_record, step_record as survey_record, Step};
use numalab_topo::{Host, TopologySource};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Arguments of `numalab survey`.
#[derive(Args, Debug)]
pub struct SurveyArgs {
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
    /// A shorter battery (fewer sizes and passes): about a minute on a small machine.
    #[arg(long)]
    quick: bool,
    /// Largest buffer of any step (e.g. 4M): caps the beyond-cache buffers for a slow or
    /// small machine such as an emulated guest; smaller buffers may stay in the caches.
    #[arg(long, value_name = "SIZE")]
    max_size: Option<String>,
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

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

fn catch_sigint() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
}

/// How one step went.
struct Outcome {
    records: Vec<Record>,
    seconds: f64,
    status: String,
}

fn run_step(exe: &PathBuf, s: &Step) -> Outcome {
    let t0 = Instant::now();
    let mut cmd = Command::new(exe);
    cmd.args(&s.args)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe. A step dies with the survey (a SIGKILL of the
    // survey leaves no orphan measuring beside the resumed run).
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let child = cmd.spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return Outcome {
                records: Vec::new(),
                seconds: 0.0,
                status: format!("could not start: {e}"),
            }
        }
    };
    // Readers on threads so a large output never blocks the child.
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let ro = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(o) = out.as_mut() {
            let _ = std::io::Read::read_to_string(o, &mut s);
        }
        s
    });
    let re = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = err.as_mut() {
            let _ = std::io::Read::read_to_string(e, &mut s);
        }
        s
    });
    let mut signalled = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(_) => break None,
        }
        if INTERRUPTED.load(Ordering::SeqCst) && !signalled {
            // SAFETY: sending a signal to our own child.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            signalled = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = ro.join().unwrap_or_default();
    let stderr = re.join().unwrap_or_default();
    let seconds = t0.elapsed().as_secs_f64();
    let ok = status.is_some_and(|s| s.success());
    if !ok {
        let why = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("failed without a message")
            .trim_start_matches("numalab: error: ")
            .to_string();
        return Outcome {
            records: Vec::new(),
            seconds,
            status: if INTERRUPTED.load(Ordering::SeqCst) {
                "interrupted".into()
            } else {
                format!("failed: {why}")
            },
        };
    }
    match serde_json::from_str::<Vec<Record>>(&stdout) {
        Ok(r) => Outcome {
            status: format!("{} records", r.len()),
            records: r,
            seconds,
        },
        Err(e) => Outcome {
            records: Vec::new(),
            seconds,
            status: format!("failed: unreadable records ({e})"),
        },
    }
}

/// The final files, derived from the journal's records; `missing` lists the steps not
/// measured. If results.json cannot be written, the records are kept in a fallback
/// file that the error names.
fn write_all(
    dir: &std::path::Path,
    records: &[Record],
    missing: &[String],
) -> Result<(), CliError> {
    write_records(&dir.join("results.json"), records)?;
    write_records(&dir.join("results.csv"), records)?;
    let title = format!(
        "numalab survey of {}",
        records
            .first()
            .map(|r| r.provenance.hostname.as_str())
            .unwrap_or("?")
    );
    let html = if missing.is_empty() {
        registry::render(records, &title)
    } else {
        registry::render_partial(records, &title, missing)
    };
    write_atomic(&dir.join("report.html"), html.as_bytes())?;
    Ok(())
}

/// `--max-size`: a size of at least 64 KiB.
fn max_size(s: &str) -> Result<u64, CliError> {
    match size_opt("--max-size", s)? {
        b if b < 64 << 10 => Err(bad(format!(
            "invalid --max-size '{}': at least 64K (smaller buffers measure only the L1)",
            s.trim()
        ))),
        b => Ok(b),
    }
}

/// The plan as a table (`--dry-run`).
fn print_plan(steps: &[Step], quick: bool, planned: f64) {
    let rows: Vec<Vec<String>> = steps
        .iter()
        .map(|s| {
            vec![
                s.section.into(),
                s.title.clone(),
                match &s.skip {
                    Some(w) => format!("skipped: {w}"),
                    None => format!("numalab {}", s.args.join(" ")),
                },
                format!("{:.1}", s.estimate_s),
            ]
        })
        .collect();
    println!(
        "survey plan ({}): {} steps, about {:.0} s\n",
        if quick { "quick" } else { "full" },
        steps.iter().filter(|s| s.skip.is_none()).count(),
        planned
    );
    print!(
        "{}",
        table(&["section", "step", "command", "est. s"], &rows)
    );
    println!();
}

/// Run every step the journal does not hold yet, journalling each as it ends; returns
/// the records of steps not finished (Ctrl-C) and the summary rows.
fn measure(
    steps: &[Step],
    plan: &[PlannedStep],
    log: &mut sj::Log,
    prov: &Provenance,
    exe: &PathBuf,
    bar: &ProgressBar,
) -> (Vec<Record>, Vec<Vec<String>>) {
    // Records of steps the run did not finish (Ctrl-C): in the files, not in the journal.
    let mut unfinished: Vec<Record> = Vec::new();
    let mut summary: Vec<Vec<String>> = Vec::new();
    for (s, p) in steps.iter().zip(plan) {
        if let Some(e) = log.journal.entry(&p.id) {
            summary.push(vec![
                s.title.clone(),
                format!("{} (before)", e.status),
                format!("{:.1}", e.seconds),
            ]);
            continue;
        }
        if INTERRUPTED.load(Ordering::SeqCst) {
            let why = "not run: the survey was interrupted (Ctrl-C)".to_string();
            unfinished.push(survey_record(prov, s, Some(why.clone()), 0.0));
            summary.push(vec![s.title.clone(), why, "-".into()]);
            continue;
        }
        let entry = if let Some(why) = &s.skip {
            summary.push(vec![s.title.clone(), format!("skipped: {why}"), "-".into()]);
            Entry {
                step: p.id.clone(),
                status: format!("skipped: {why}"),
                seconds: 0.0,
                records: vec![survey_record(prov, s, Some(why.clone()), 0.0)],
            }
        } else {
            bar.set_message(s.title.clone());
            let o = run_step(exe, s);
            bar.inc((s.estimate_s * 10.0).ceil() as u64);
            let failed = o.records.is_empty();
            let mut records = vec![survey_record(
                prov,
                s,
                failed.then(|| o.status.clone()),
                o.seconds,
            )];
            records.extend(o.records);
            if s.section == "matrix" && s.title.starts_with("latency") {
                records.push(model_record(prov, &records));
            }
            summary.push(vec![
                s.title.clone(),
                o.status.clone(),
                format!("{:.1}", o.seconds),
            ]);
            if o.status == "interrupted" {
                // Not finished: --resume measures it again.
                unfinished.extend(records);
                continue;
            }
            Entry {
                step: p.id.clone(),
                status: o.status,
                seconds: o.seconds,
                records,
            }
        };
        if let Some(why) = log.finish(entry) {
            bar.suspend(|| eprintln!("numalab: warning: {why}"));
        }
    }
    (unfinished, summary)
}

/// Run `numalab survey`.
pub fn run(a: SurveyArgs) -> Result<(), CliError> {
    if a.topology.is_some() && !a.dry_run {
        return Err(bad(
            "invalid option '--topology' without '--dry-run': a survey measures this machine; plan against a file with --dry-run",
        ));
    }
    let max_size = a.max_size.as_deref().map(max_size).transpose()?;
    let source = a
        .topology
        .clone()
        .map(TopologySource::Xml)
        .unwrap_or(TopologySource::ThisSystem);
    let host = Host::load(&source)?;
    let mut steps = survey::plan(&host.machine, a.quick);
    if let Some(max) = max_size {
        steps = survey::cap_sizes(&host.machine, steps, max);
    }
    let planned: f64 = steps.iter().map(|s| s.estimate_s).sum();
    if a.dry_run {
        if a.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&steps).expect("steps serialise")
            );
            return Ok(());
        }
        print_plan(&steps, a.quick, planned);
        return Ok(());
    }
    let dir = a.resume.clone().unwrap_or_else(|| a.dir.clone());
    let prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
    let plan = sj::planned(&steps);
    let mut log = match &a.resume {
        Some(d) => sj::resume(d, &prov, &plan)?,
        None => sj::start(&dir, a.force, &prov, plan.clone())?,
    };
    let exe = std::env::current_exe().map_err(|e| {
        CliError::from(numalab_topo::Error::System(format!(
            "cannot find numalab itself: {e}"
        )))
    })?;
    catch_sigint();
    let done = log.journal.entries.len();
    eprintln!(
        "numalab survey: {} steps, planned about {:.0} s; {}{}{}{}",
        steps.iter().filter(|s| s.skip.is_none()).count(),
        planned,
        if a.resume.is_some() {
            "continuing "
        } else {
            "writing "
        },
        dir.display(),
        if a.resume.is_some() {
            format!(" ({done} of {} steps finished before)", steps.len())
        } else {
            String::new()
        },
        max_size
            .map(|b| format!(
                "; buffers capped at {} (--max-size)",
                numalab_topo::fmt_bytes(b)
            ))
            .unwrap_or_default()
    );
    let bar = ProgressBar::new((planned * 10.0).ceil() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {msg} (ETA {eta})")
            .expect("valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let started = Instant::now();
    let (unfinished, summary) = measure(&steps, &plan, &mut log, &prov, &exe, &bar);
    bar.finish_and_clear();
    let interrupted = INTERRUPTED.load(Ordering::SeqCst);
    let mut records = log.journal.records();
    records.extend(unfinished);
    let missing = sj::missing(&log.journal);
    // A results file that cannot be written leaves its records in a fallback file
    // that the error names (write_records).
    write_all(&dir, &records, &missing)?;
    println!(
        "numalab survey: {} in {:.1} s; {} records",
        if interrupted { "interrupted" } else { "done" },
        started.elapsed().as_secs_f64(),
        records.len()
    );
    // The summary first: the figures a reader wants before the bookkeeping.
    print!("{}", registry::summary(&records));
    println!();
    print!("{}", table(&["step", "result", "seconds"], &summary));
    println!(
        "\nwrote {}/results.json, results.csv and report.html",
        dir.display()
    );
    if let Some(why) = &log.broken {
        eprintln!("numalab: warning: the journal is incomplete ({why}); the results files hold every record");
    }
    if interrupted {
        return Err(CliError {
            code: 130,
            msg: format!(
                "interrupted: the files hold what was measured before Ctrl-C; `numalab survey --resume {}` with the same options measures the rest",
                dir.display()
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn max_size_never_panics_and_names_what_it_refuses(s in "\\PC{0,16}") {
            if let Err(e) = max_size(&s) {
                prop_assert_eq!(e.code, 2);
                prop_assert!(e.msg.contains(s.trim()), "{}", e.msg);
                prop_assert_eq!(e.msg.lines().count(), 1);
            }
        }

        #[test]
        fn printed_sizes_parse_back(n in 1u64..1024, shift in prop::sample::select(vec![0u32, 10, 20, 30, 40])) {
            let b = n << shift;
            let printed = numalab_topo::fmt_bytes(b);
            match max_size(&printed) {
                Ok(back) => prop_assert_eq!(back, b),
                Err(e) => prop_assert!(b < 64 << 10, "{}: {}", printed, e.msg),
            }
        }
    }
}
