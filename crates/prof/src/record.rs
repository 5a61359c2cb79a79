//! `record` (snrun): run a command, follow its processes and threads, and stream
//! their samples with the system's into a trace; the target's exit status is
//! returned so the caller can propagate it.

use crate::counters::CoreSet;
use crate::follow::Follower;
use crate::procfs::Roots;
use crate::system::System;
use crate::trace::{self, End, Entry, Header, NodeInfo, SourceStatus, Writer};
use numalab_results::Provenance;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What to record.
#[derive(Debug, Clone)]
pub struct Options {
    /// Sampling interval.
    pub interval: Duration,
    /// Read process page placement every this many intervals (or less often, so
    /// that reading it stays under `pages_budget` of the time).
    pub pages_every: u32,
    /// Largest share of the time the numa_maps reads may take (0.0025 = 0.25%).
    pub pages_budget: f64,
    /// Trace path.
    pub output: PathBuf,
    /// CPU to pin the sampler to (after the target started).
    pub runon: Option<u32>,
    /// Open hardware counters (core and uncore) when they work.
    pub counters: bool,
    /// The command and its arguments.
    pub target: Vec<String>,
}

/// How the target ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

impl Exit {
    /// The status a shell would report: the code, or 128 + signal.
    pub fn status(self) -> i32 {
        match self {
            Exit::Code(c) => c,
            Exit::Signal(s) => 128 + s,
        }
    }
}

/// What a recording produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// How the target ended.
    pub exit: Exit,
    /// Sampling rounds taken.
    pub rounds: u64,
    /// Trace path (a fallback file's when the one asked for could not be written).
    pub trace: PathBuf,
    /// When the trace moved to a fallback file: one line saying why and where.
    pub moved: Option<String>,
    /// Wall time from the target's start to its end.
    pub elapsed_ns: u64,
    /// CPU time the recorder used while the target ran.
    pub sampler_cpu_ns: Option<u64>,
}

/// Errors before or while recording: `user` ones are the caller's input.
#[derive(Debug)]
pub struct RecordError {
    /// True for bad input (missing target, unwritable trace path).
    pub user: bool,
    /// One line.
    pub msg: String,
}

/// Find a program on PATH the way a shell does (a name with '/' is taken as a path).
pub fn resolve(program: &str) -> Option<PathBuf> {
    let is_exec = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_exec(&p).then_some(p);
    }
    std::env::var_os("PATH")
        .map(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join(program))
                .find(|p| is_exec(p))
        })
        .unwrap_or(None)
}

/// Build a header for a trace.
#[allow(clippy::too_many_arguments)]
pub fn header(
    mode: &str,
    target: &[String],
    interval: Duration,
    pages_every: u32,
    runon: Option<u32>,
    nodes: Vec<NodeInfo>,
    provenance: Provenance,
    sources: Vec<SourceStatus>,
    counters: Vec<trace::CounterDesc>,
    fields: Vec<trace::FieldDesc>,
) -> Header {
    Header {
        format: trace::FORMAT.into(),
        version: trace::VERSION,
        mode: mode.into(),
        target: target.to_vec(),
        interval_ms: interval.as_millis() as u64,
        pages_every,
        runon,
        nodes,
        provenance,
        sources,
        counters,
        fields,
    }
}

fn proc_sources(roots: &Roots, core: &CoreSet, core_ok: bool) -> Vec<SourceStatus> {
    let me = std::process::id() as i32;
    let st = |source: &str, available: bool, yes: &str, no: &str| SourceStatus {
        source: source.into(),
        available,
        detail: if available { yes.into() } else { no.into() },
    };
    let why_core = core
        .descs
        .iter()
        .find_map(|d| d.error.clone())
        .unwrap_or_else(|| "hardware counters not requested (--no-counters)".into());
    vec![
        st("perf-core", core_ok, "per-thread core counters (perf_event_open)", &why_core),
        st("proc", roots.schedstat(me, me).is_some(), "per-thread CPU, state, run time, faults, context switches (/proc)", "/proc/PID/task/TID/schedstat unreadable"),
        st("proc-sched", roots.migrations(me, me).is_some(), "per-thread CPU migrations (/proc/…/sched)", "/proc/…/sched has no se.nr_migrations (kernel without CONFIG_SCHED_DEBUG)"),
        st("numa_maps", roots.numa_maps(me).is_some(), "process resident pages per node (/proc/PID/numa_maps)", "/proc/PID/numa_maps unreadable (kernel without CONFIG_NUMA?)"),
        st("proc-children", roots.children(me, me).is_some(), "child processes (task/TID/children)", "task/TID/children missing (kernel without CONFIG_PROC_CHILDREN): child processes are not followed"),
    ]
}

/// The command to run: its resolved path (a one-line user error when missing).
fn target_path(opts: &Options) -> Result<PathBuf, RecordError> {
    let user = |msg: String| RecordError { user: true, msg };
    let program = opts
        .target
        .first()
        .ok_or_else(|| user("no command given: numalab record [OPTIONS] -- CMD [ARGS…]".into()))?;
    resolve(program).ok_or_else(|| {
        user(format!(
            "invalid command '{program}': not found or not executable{}",
            if program.contains('/') {
                ""
            } else {
                " on PATH"
            }
        ))
    })
}

/// Run and record the target.
pub fn record(
    host: &numalab_topo::Host,
    opts: &Options,
    provenance: Provenance,
) -> Result<Outcome, RecordError> {
    let user = |msg: String| RecordError { user: true, msg };
    let path = target_path(opts)?;
    let program = &opts.target[0];
    let roots = Roots::default();
    let nodes = crate::system::nodes_of(&host.machine);
    let system = System::new(roots.clone(), nodes.clone(), opts.counters);
    let (sources, counters, follower_core) = probe_sources(&roots, &system, opts.counters);

    // Spawn first so the follower's fields know the counters, then write the header.
    let mut child = std::process::Command::new(&path)
        .args(&opts.target[1..])
        .spawn()
        .map_err(|e| user(format!("invalid command '{program}': cannot run it: {e}")))?;
    let start = Instant::now();
    let pid = child.id() as i32;
    let follower = Follower::new(roots, pid, follower_core);
    let mut fields = system.fields();
    fields.extend(follower.fields());
    let h = header(
        "record",
        &opts.target,
        opts.interval,
        opts.pages_every,
        opts.runon,
        nodes,
        provenance,
        sources,
        counters,
        fields,
    );
    let w = open_trace(opts, &h, &mut child)?;
    if let Some(cpu) = opts.runon {
        // Pinned after the spawn, so the target keeps the recorder's original affinity.
        numalab_topo::bind::pin_current_thread(host, cpu).map_err(|e| user(e.to_string()))?;
    }
    // SIGTERM and SIGHUP are passed on to the target (below); the terminal's Ctrl-C
    // reaches the target itself. The recorder stays to write the end either way.
    numalab_results::interrupt::catch();
    // SAFETY: ignoring a signal has no preconditions.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
    let rx = waiter(child);
    let entries = system.objects().into_iter().map(Entry::Object).collect();
    let mut s = Sampler {
        opts,
        start,
        follower,
        system,
        w,
        entries,
    };
    // The set-up before the spawn (topology, probes) does not overlap the target;
    // what the target shares the machine with is the sampling from here on.
    let cpu0 = own_cpu_ns();
    let (status, rounds) = s.until_exit(pid, rx)?;
    let status = status.map_err(|e| RecordError {
        user: false,
        msg: format!("waiting for '{program}': {e}"),
    })?;
    let t_ns = s.end(status, cpu0)?;
    Ok(Outcome {
        exit: exit_of(status),
        // The closing sample after the exit is a round too, as `info` counts them.
        rounds: rounds + 1,
        trace: s.w.path().unwrap_or(&opts.output).to_path_buf(),
        moved: s.w.moved().map(str::to_string),
        elapsed_ns: t_ns,
        sampler_cpu_ns: own_cpu_ns().zip(cpu0).map(|(b, a)| b - a),
    })
}

/// The trace file, its header written; the target is ended when it cannot be written.
fn open_trace(
    opts: &Options,
    h: &Header,
    child: &mut std::process::Child,
) -> Result<Writer, RecordError> {
    Writer::create(&opts.output, h).map_err(|e| {
        let _ = child.kill();
        let _ = child.wait();
        RecordError {
            user: true,
            msg: format!(
                "invalid output '{}': cannot write the trace: {e}",
                opts.output.display()
            ),
        }
    })
}

/// How an exit status reads as the target's end.
fn exit_of(status: std::process::ExitStatus) -> Exit {
    match (status.code(), status.signal()) {
        (Some(c), _) => Exit::Code(c),
        (None, Some(sig)) => Exit::Signal(sig),
        _ => Exit::Code(1),
    }
}

/// Which sources work, the counters the trace names, and the core counters the
/// follower opens per thread (None when they do not work or were not asked for).
fn probe_sources(
    roots: &Roots,
    system: &System,
    counters_asked: bool,
) -> (Vec<SourceStatus>, Vec<trace::CounterDesc>, Option<CoreSet>) {
    let id = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| crate::pmu::parse_cpuinfo(&s));
    let mut core = CoreSet::resolve(&roots.sys, id.as_ref());
    let core_ok = counters_asked && core.probe();
    let mut sources = system.sources();
    sources.extend(proc_sources(roots, &core, core_ok));
    let mut counters = core.descs.clone();
    counters.extend(system.uncore_descs());
    (sources, counters, core_ok.then_some(core))
}

/// The target's exit status, waited for on a thread of its own.
fn waiter(
    mut child: std::process::Child,
) -> mpsc::Receiver<std::io::Result<std::process::ExitStatus>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    rx
}

/// What the sampling loop reads and writes with.
struct Sampler<'a> {
    opts: &'a Options,
    start: Instant,
    follower: Follower,
    system: System,
    w: Writer,
    entries: Vec<Entry>,
}

impl Sampler<'_> {
    /// A write error of the trace.
    fn io(&self, e: std::io::Error) -> RecordError {
        RecordError {
            user: false,
            msg: format!("writing the trace '{}': {e}", self.opts.output.display()),
        }
    }

    /// The entries gathered so far, written and flushed.
    fn drain(&mut self) -> Result<(), RecordError> {
        for e in std::mem::take(&mut self.entries) {
            self.w.put(&e).map_err(|e| self.io(e))?;
        }
        self.w.flush().map_err(|e| self.io(e))
    }

    /// One round of samples at `t_ns`; returns the round after which page placement
    /// is read next.
    fn round(&mut self, t_ns: u64, rounds: u64, next_pages: u64) -> Result<u64, RecordError> {
        self.follower.discover(t_ns, &mut self.entries);
        let pages = rounds >= next_pages;
        let cost = self.follower.sample(t_ns, pages, &mut self.entries);
        let mut next = next_pages;
        if pages {
            // Every --pages-every intervals, but never more than --pages-budget of the
            // time (CPU time of the reads): numa_maps of a large process takes milliseconds.
            let share = self.opts.pages_budget.clamp(1e-6, 1.0);
            let interval = self.opts.interval.as_nanos().max(1) as f64;
            let budget = (cost.as_nanos() as f64 / (interval * share)) as u64;
            next = rounds + (self.opts.pages_every.max(1) as u64).max(budget + 1);
        }
        let samples = self.system.sample(t_ns);
        self.entries.extend(samples.into_iter().map(Entry::Sample));
        self.drain()?;
        Ok(next)
    }

    /// Samples every interval until the target exits, passing a caught SIGTERM or
    /// SIGHUP on to it once; returns its status and the rounds taken.
    fn until_exit(
        &mut self,
        pid: i32,
        rx: mpsc::Receiver<std::io::Result<std::process::ExitStatus>>,
    ) -> Result<(std::io::Result<std::process::ExitStatus>, u64), RecordError> {
        let (mut rounds, mut next_pages, mut passed_on) = (0u64, 0u64, false);
        loop {
            let t_ns = self.start.elapsed().as_nanos() as u64;
            next_pages = self.round(t_ns, rounds, next_pages)?;
            rounds += 1;
            if let Some(sig) = numalab_results::interrupt::pending().filter(|_| !passed_on) {
                // SAFETY: signalling the child we spawned, which we have not reaped yet.
                unsafe { libc::kill(pid, sig) };
                passed_on = true;
            }
            let next = self.opts.interval * (rounds as u32);
            let wait = next.saturating_sub(self.start.elapsed());
            match rx.recv_timeout(wait) {
                Ok(st) => return Ok((st, rounds)),
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let e = std::io::Error::other("waiter thread ended");
                    return Ok((Err(e), rounds));
                }
            }
        }
    }

    /// The closing sample after the exit and the end entry; returns the time of the end.
    fn end(
        &mut self,
        status: std::process::ExitStatus,
        cpu0: Option<u64>,
    ) -> Result<u64, RecordError> {
        let t_ns = self.start.elapsed().as_nanos() as u64;
        self.follower.discover(t_ns, &mut self.entries);
        let samples = self.system.sample(t_ns);
        self.entries.extend(samples.into_iter().map(Entry::Sample));
        self.entries.push(Entry::End(End {
            t_ns,
            reason: "target exited".into(),
            exit_code: status.code(),
            signal: status.signal(),
            sampler_cpu_ns: own_cpu_ns().zip(cpu0).map(|(b, a)| b - a),
        }));
        self.drain()?;
        Ok(t_ns)
    }
}

/// This process's CPU time so far (getrusage: user + system, all threads).
pub fn own_cpu_ns() -> Option<u64> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: initialised by the successful call.
    let ru = unsafe { ru.assume_init() };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    Some(ns(ru.ru_utime) + ns(ru.ru_stime))
}

/// The name of a signal that ends a recorded command, or "signal".
pub fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}
