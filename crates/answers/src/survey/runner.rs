//! Running the survey's steps: each step is numalab itself in a child process (so a
//! step that crashes or is killed costs that step alone), its records read from its
//! JSON, each finished step journalled as it ends; Ctrl-C stops the running step and
//! the survey keeps what it measured.

use super::journal::Log;
use super::plan::Step;
use super::quiet::{annotate, CpuChoice, Placer};
use super::records::{model_record, step_record};
use super::Experiment;
use numalab_results::interrupt;
use numalab_results::journal::{Entry, PlannedStep};
use numalab_results::{Provenance, Record};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// From now on Ctrl-C, SIGTERM and SIGHUP stop the running step and the survey (see
/// [`interrupted`]), through the one mechanism every command uses.
pub fn catch_signals() {
    interrupt::catch();
}

/// Whether a signal has stopped the survey.
pub fn interrupted() -> bool {
    interrupt::pending().is_some()
}

/// How one step went.
pub struct Outcome {
    /// The step's records (none when it failed).
    pub records: Vec<Record>,
    /// Its wall time.
    pub seconds: f64,
    /// "N records", "failed: why" or "interrupted".
    pub status: String,
    /// Minor page faults of the step's process and its children: the pages it touched
    /// first, which `survey::touch` plans for.
    pub minor_faults: u64,
}

impl Outcome {
    fn failed(seconds: f64, status: String) -> Outcome {
        Outcome {
            records: Vec::new(),
            seconds,
            status,
            minor_faults: 0,
        }
    }
}

/// What the runner tells the one watching: a step starts, a step ended (with the
/// seconds it was planned to take), a warning to show.
pub trait Watch {
    /// Step `title` starts.
    fn start(&mut self, title: &str);
    /// A step planned for `estimate_s` seconds ended after `seconds`.
    fn done(&mut self, estimate_s: f64, seconds: f64);
    /// A warning to show now.
    fn warn(&mut self, why: &str);
    /// A note to show now (where a step measures, and why).
    fn note(&mut self, _line: &str) {}
}

/// Spawn `exe` with the step's arguments; the step dies with the survey.
fn spawn(exe: &Path, s: &Step) -> std::io::Result<Child> {
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
    cmd.spawn()
}

/// Read a pipe to its end on a thread, so a large output never blocks the child.
fn drain<R: std::io::Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut s);
        }
        s
    })
}

/// Wait for the child, passing Ctrl-C on to it once.
fn wait(child: &mut Child) -> Option<std::process::ExitStatus> {
    let mut signalled = false;
    loop {
        match child.try_wait() {
            Ok(Some(st)) => return Some(st),
            Ok(None) => {}
            Err(_) => return None,
        }
        if interrupted() && !signalled {
            // SAFETY: sending a signal to our own child.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            signalled = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Minor faults of every child reaped so far (steps run one at a time, so the
/// difference across one step is that step's).
fn children_minor_faults() -> u64 {
    // SAFETY: getrusage writes the zeroed struct it is given.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) != 0 {
            return 0;
        }
        u.ru_minflt.max(0) as u64
    }
}

/// Run one step as `exe STEP-ARGS --json` and read its records.
pub fn run_step(exe: &Path, s: &Step) -> Outcome {
    let t0 = Instant::now();
    let faults0 = children_minor_faults();
    let mut child = match spawn(exe, s) {
        Ok(c) => c,
        Err(e) => return Outcome::failed(0.0, format!("could not start: {e}")),
    };
    let (ro, re) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let status = wait(&mut child);
    let stdout = ro.join().unwrap_or_default();
    let stderr = re.join().unwrap_or_default();
    let seconds = t0.elapsed().as_secs_f64();
    if !status.is_some_and(|s| s.success()) {
        // The error line, not a note printed after it (what an MPI job kept, say).
        let lines = || stderr.lines().rev();
        let why = lines()
            .find(|l| l.starts_with("numalab: error: "))
            .or_else(|| lines().find(|l| !l.trim().is_empty()))
            .unwrap_or("failed without a message")
            .trim_start_matches("numalab: error: ")
            .to_string();
        let status = if interrupted() {
            "interrupted".into()
        } else {
            format!("failed: {why}")
        };
        return Outcome::failed(seconds, status);
    }
    let minor_faults = children_minor_faults().saturating_sub(faults0);
    match serde_json::from_str::<Vec<Record>>(&stdout) {
        Ok(r) => Outcome {
            status: format!("{} record{}", r.len(), if r.len() == 1 { "" } else { "s" }),
            records: r,
            seconds,
            minor_faults,
        },
        Err(e) => Outcome::failed(seconds, format!("failed: unreadable records ({e})")),
    }
}

/// What a run of the steps leaves: the records of steps it did not finish (Ctrl-C),
/// which go into the files but not the journal, and a summary row per step.
#[derive(Default)]
pub struct Measured {
    /// Records of steps not finished.
    pub unfinished: Vec<Record>,
    /// Step, result, seconds.
    pub summary: Vec<Vec<String>>,
    /// The (CPU, default CPU) choices said so far.
    said: Vec<(u32, u32)>,
}

/// Whether the model is fitted to this step's records: the node × node latency matrix.
fn feeds_model(s: &Step) -> bool {
    matches!(&s.experiment, Some(Experiment::Matrix(o)) if o.what == "latency")
}

/// Run every step the journal does not hold yet, journalling each as it ends; each
/// single-CPU step on the CPU `placer` chooses.
pub fn measure(
    steps: &[Step],
    plan: &[PlannedStep],
    log: &mut Log,
    prov: &Provenance,
    exe: &Path,
    placer: &mut Placer,
    watch: &mut dyn Watch,
) -> Measured {
    let mut m = Measured::default();
    for (s, p) in steps.iter().zip(plan) {
        let row = |status: String, secs: String| vec![s.title.clone(), status, secs];
        if let Some(e) = log.journal.entry(&p.id) {
            let status = format!("{} (before)", e.status);
            m.summary.push(row(status, format!("{:.1}", e.seconds)));
            continue;
        }
        if interrupted() {
            let sig = interrupt::pending().unwrap_or(libc::SIGINT);
            let why = format!(
                "not run: the survey was interrupted ({})",
                interrupt::name(sig)
            );
            m.unfinished
                .push(step_record(prov, s, Some(why.clone()), 0.0));
            m.summary.push(row(why, "-".into()));
            continue;
        }
        let entry = match &s.skip {
            Some(why) => {
                m.summary.push(row(format!("skipped: {why}"), "-".into()));
                Entry {
                    step: p.id.clone(),
                    status: format!("skipped: {why}"),
                    seconds: 0.0,
                    records: vec![step_record(prov, s, Some(why.clone()), 0.0)],
                }
            }
            None => match run_one(s, p, (prov, exe), placer, watch, &mut m) {
                Some(e) => e,
                None => continue,
            },
        };
        if let Some(why) = log.finish(entry) {
            watch.warn(&why);
        }
    }
    m
}

/// Tell the one watching where single-CPU steps measure, once per (CPU, default) pair
/// that is worth a line.
fn say(c: &CpuChoice, watch: &mut dyn Watch, m: &mut Measured) {
    if let Some(line) = c.words() {
        if !m.said.contains(&(c.cpu, c.default)) {
            m.said.push((c.cpu, c.default));
            watch.note(&line);
        }
    }
}

/// Run step `s` and make its journal entry; None when Ctrl-C stopped it (its records
/// go to `m.unfinished`, and `--resume` measures it again).
fn run_one(
    s: &Step,
    p: &PlannedStep,
    (prov, exe): (&Provenance, &Path),
    placer: &mut Placer,
    watch: &mut dyn Watch,
    m: &mut Measured,
) -> Option<Entry> {
    let (placed, choice) = placer.place(s);
    if let Some(c) = &choice {
        say(c, watch, m);
    }
    watch.start(&s.title);
    let mut o = run_step(exe, &placed);
    watch.done(s.estimate_s, o.seconds);
    placer.after(&o.records);
    let failed = o.records.is_empty();
    let mut records = vec![step_record(
        prov,
        &placed,
        failed.then(|| o.status.clone()),
        o.seconds,
    )];
    records[0].parameters["minor_faults"] = o.minor_faults.into();
    if let Some(c) = &choice {
        records[0].parameters["cpu_choice"] = serde_json::to_value(c).expect("serialises");
        annotate(&mut o.records, c);
    }
    records.extend(o.records);
    if feeds_model(s) {
        records.push(model_record(prov, &records));
    }
    m.summary.push(vec![
        s.title.clone(),
        o.status.clone(),
        format!("{:.1}", o.seconds),
    ]);
    if o.status == "interrupted" {
        m.unfinished.extend(records);
        return None;
    }
    Some(Entry {
        step: p.id.clone(),
        status: o.status,
        seconds: o.seconds,
        records,
    })
}
