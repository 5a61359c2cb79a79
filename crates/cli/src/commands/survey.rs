//! `numalab survey`: the curated battery for this machine, one results.json and one
//! report.html. Each step runs as its own numalab process (the command line is in
//! the plan), so a step that fails is reported and the rest goes on, and Ctrl-C
//! stops the current step and keeps everything measured before it.

use crate::common::{bad, size_opt, CliError};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
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
    /// Directory for results.json, results.csv and report.html (created if missing).
    #[arg(short = 'o', long = "output", default_value = "numalab-survey")]
    dir: PathBuf,
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
    let child = Command::new(exe)
        .args(&s.args)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
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

fn write_all(dir: &std::path::Path, records: &[Record]) -> Result<(), CliError> {
    write_records(&dir.join("results.json"), records)?;
    write_records(&dir.join("results.csv"), records)?;
    let title = format!(
        "numalab survey of {}",
        records
            .first()
            .map(|r| r.provenance.hostname.as_str())
            .unwrap_or("?")
    );
    write_atomic(
        &dir.join("report.html"),
        registry::render(records, &title).as_bytes(),
    )?;
    Ok(())
}

/// Run `numalab survey`.
pub fn run(a: SurveyArgs) -> Result<(), CliError> {
    if a.topology.is_some() && !a.dry_run {
        return Err(bad(
            "invalid option '--topology' without '--dry-run': a survey measures this machine; plan against a file with --dry-run",
        ));
    }
    let max_size = match a.max_size.as_deref().map(|s| size_opt("--max-size", s)) {
        Some(Ok(b)) if b < 64 << 10 => {
            return Err(bad(format!(
                "invalid --max-size '{}': at least 64K (smaller buffers measure only the L1)",
                a.max_size.as_deref().unwrap_or_default()
            )))
        }
        m => m.transpose()?,
    };
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
            if a.quick { "quick" } else { "full" },
            steps.iter().filter(|s| s.skip.is_none()).count(),
            planned
        );
        print!(
            "{}",
            table(&["section", "step", "command", "est. s"], &rows)
        );
        println!();
        return Ok(());
    }
    std::fs::create_dir_all(&a.dir).map_err(|e| {
        bad(format!(
            "invalid output directory '{}': {e}",
            a.dir.display()
        ))
    })?;
    let exe = std::env::current_exe().map_err(|e| {
        CliError::from(numalab_topo::Error::System(format!(
            "cannot find numalab itself: {e}"
        )))
    })?;
    catch_sigint();
    let prov = Provenance::collect(&host.machine.summary(), &host.machine.source);
    eprintln!(
        "numalab survey: {} steps, planned about {:.0} s; writing {}{}",
        steps.iter().filter(|s| s.skip.is_none()).count(),
        planned,
        a.dir.display(),
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
    let mut records: Vec<Record> = Vec::new();
    let mut summary: Vec<Vec<String>> = Vec::new();
    for s in &steps {
        if INTERRUPTED.load(Ordering::SeqCst) {
            let why = "not run: the survey was interrupted (Ctrl-C)".to_string();
            records.push(survey_record(&prov, s, Some(why.clone()), 0.0));
            summary.push(vec![s.title.clone(), why, "-".into()]);
            continue;
        }
        if let Some(why) = &s.skip {
            records.push(survey_record(&prov, s, Some(why.clone()), 0.0));
            summary.push(vec![s.title.clone(), format!("skipped: {why}"), "-".into()]);
            continue;
        }
        bar.set_message(s.title.clone());
        let o = run_step(&exe, s);
        bar.inc((s.estimate_s * 10.0).ceil() as u64);
        let failed = o.records.is_empty();
        records.push(survey_record(
            &prov,
            s,
            failed.then(|| o.status.clone()),
            o.seconds,
        ));
        records.extend(o.records);
        summary.push(vec![s.title.clone(), o.status, format!("{:.1}", o.seconds)]);
        if s.section == "matrix" && s.title.starts_with("latency") {
            records.push(model_record(&prov, &records));
        }
    }
    bar.finish_and_clear();
    let interrupted = INTERRUPTED.load(Ordering::SeqCst);
    write_all(&a.dir, &records)?;
    println!(
        "numalab survey: {} in {:.1} s; {} records",
        if interrupted { "interrupted" } else { "done" },
        started.elapsed().as_secs_f64(),
        records.len()
    );
    print!("{}", table(&["step", "result", "seconds"], &summary));
    println!();
    print!("{}", registry::headline(&records));
    println!(
        "\nwrote {}/results.json, results.csv and report.html",
        a.dir.display()
    );
    if interrupted {
        return Err(CliError {
            code: 130,
            msg: "interrupted: the files hold what was measured before Ctrl-C".into(),
        });
    }
    Ok(())
}
