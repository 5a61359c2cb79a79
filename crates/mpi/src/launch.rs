//! Launching: `--ranks N` outside an MPI job re-executes the same numalab command
//! line under `mpirun -np N` on this machine (or the user's hostfile), forwards its
//! exit status, and turns Open MPI's boxed reports into one line each. A watchdog
//! ends a job that outlives a dead rank, one whose rank stopped (see
//! [`crate::liveness`]) and one that runs far past its plan's estimate, so a launch
//! never hangs.

use crate::across::SETTINGS_VAR;
use crate::env::JobEnv;
use crate::env::TOKEN_VAR;
use crate::error::{Error, Result};
use crate::launch_notice::{is_transport, unglue, BoxFilter, Notice};
use crate::launcher::{Job, Launcher, AGENT_VAR, USED_VAR};
use crate::liveness::{overall_limit, seconds_from_env, Limit, Watch, DEFAULT_STALL, STALL_VAR};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Ranks per usable CPU this machine may be asked for without a hostfile; beyond it
/// ranks mostly wait for a CPU and the job measures the scheduler.
pub const MAX_RANKS_PER_CPU: usize = 16;

/// How long mpirun may take to end the job after it reported a dead rank.
const GRACE_AFTER_DEATH: Duration = Duration::from_secs(15);

/// What a command asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchRequest {
    /// Ranks to start.
    pub ranks: usize,
    /// The user's hostfile (ranks across machines); None = this machine only.
    pub hostfile: Option<PathBuf>,
    /// Usable CPUs on this machine (to decide --oversubscribe and the limit).
    pub cpus: usize,
    /// Fewest ranks the command needs.
    pub min_ranks: usize,
    /// The plan's estimate of the job's run time, which bounds it when
    /// `NUMALAB_MPI_TIMEOUT` is not set (see [`crate::liveness::default_bound`]).
    pub estimate: Option<Duration>,
    /// `--ranks-per-host` and `--map-by`.
    pub mapping: crate::mapping::Mapping,
    /// The program that starts the ranks, and why it was chosen.
    pub launcher: Launcher,
    /// Why: `--launcher`, or what detected it.
    pub launcher_why: String,
}

/// Files a launcher needs, removed when the launch ends.
struct Written(Vec<PathBuf>);

impl Written {
    fn all(files: &[(PathBuf, String)]) -> Result<Written> {
        let mut w = Written(Vec::new());
        for (p, text) in files {
            std::fs::write(p, text)
                .map_err(|e| Error::System(format!("cannot write {}: {e}", p.display())))?;
            w.0.push(p.clone());
        }
        Ok(w)
    }
}

impl Drop for Written {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Where the process stands after [`ensure`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launched {
    /// This process launched the job, which has ended with this exit status.
    Parent(i32),
    /// This process is one rank of a job (ours or the user's).
    Rank(JobEnv),
}

impl LaunchRequest {
    /// Check the request before anything starts: ranks within limits, hostfile present.
    pub fn validate(&self) -> Result<()> {
        let least = self.min_ranks.max(1);
        if self.ranks < least {
            return Err(Error::Usage(format!(
                "invalid --ranks '{}': this command needs at least {least} rank{}",
                self.ranks,
                if least == 1 { "" } else { "s" }
            )));
        }
        if let Some(h) = &self.hostfile {
            // A folder, FIFO or device is said as such by hostfile::read.
            if std::fs::metadata(h).is_err() {
                return Err(Error::Usage(format!(
                    "invalid --hostfile '{}': no such file (one host per line, e.g. 'node1 slots=4')",
                    h.display()
                )));
            }
            crate::hostfile::read(h)?;
        } else if self.launcher != Launcher::Srun {
            let max = self.cpus.max(1) * MAX_RANKS_PER_CPU;
            if self.ranks > max {
                return Err(Error::Usage(format!(
                    "invalid --ranks '{}': this machine can start at most {max} ranks ({MAX_RANKS_PER_CPU} per CPU, {}); give a --hostfile for more",
                    self.ranks, numalab_results::words::count(self.cpus as u64, "CPU")
                )));
            }
        }
        Ok(())
    }

    /// Ranks per CPU of this machine, at least 1 (1 with a hostfile or under srun,
    /// whose ranks run on other machines): ranks that share CPUs wait for them (see
    /// [`crate::sizes::transfer_estimate`]).
    pub fn crowding(&self) -> f64 {
        match self.hostfile.is_some() || self.launcher == Launcher::Srun {
            true => 1.0,
            false => (self.ranks as f64 / self.cpus.max(1) as f64).max(1.0),
        }
    }

    /// The launcher's job (pure but for the remote shell, read from the environment).
    pub fn job(&self, root: bool, scratch: PathBuf) -> Result<Job> {
        let hostfile = match &self.hostfile {
            Some(h) => Some((h.clone(), crate::hostfile::read(h)?)),
            None => None,
        };
        Ok(Job {
            ranks: self.ranks,
            hostfile,
            oversubscribe: self.ranks > self.cpus,
            root,
            mapping: self.mapping,
            agent: std::env::var_os(AGENT_VAR).map(PathBuf::from),
            scratch,
            library: crate::launcher::built_with(),
        })
    }

    /// The launcher's arguments before the program, as a dry run says them.
    pub fn launcher_args(&self) -> Vec<OsString> {
        let scratch = std::env::temp_dir().join("numalab-launch");
        match self.job(false, scratch) {
            Ok(job) => self.launcher.line(&job).args,
            Err(_) => Vec::new(),
        }
    }
}

pub use crate::launcher::{OP_EXCLUDED, OP_VAR};

/// The launcher numalab would start ranks with here (`--launcher` not given), found:
/// the program, or a clear error naming the package.
pub fn find_mpirun() -> Result<PathBuf> {
    Launcher::choose(None, None)?.0.program()
}

/// Inside a job: check its size against the request. Outside: validate, launch this
/// same command line under mpirun and wait for it.
pub fn ensure(req: &LaunchRequest) -> Result<Launched> {
    if let Some(job) = JobEnv::detect() {
        if let Some(why) = crate::slurm::without_pmi(&job, &crate::launcher::built_with()) {
            return Err(Error::Usage(why));
        }
        if job.size != 0 && job.size != req.ranks {
            return Err(Error::Usage(format!(
                "invalid --ranks '{}': this MPI job has {} (drop --ranks, or give mpirun -np {})",
                req.ranks,
                numalab_results::words::count(job.size as u64, "rank"),
                req.ranks
            )));
        }
        started(&job);
        return Ok(Launched::Rank(job));
    }
    req.validate()?;
    let limit = overall_limit(req.estimate)?;
    let stall = seconds_from_env(STALL_VAR)?.unwrap_or(DEFAULT_STALL);
    let mpirun = req.launcher.program()?;
    if let Some(h) = &req.hostfile {
        crate::hostfile::check_hosts(h)?;
    }
    let exe = std::env::current_exe()
        .map_err(|e| Error::System(format!("cannot find numalab's own executable: {e}")))?;
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let token = std::env::temp_dir().join(format!("numalab-launch-{}", std::process::id()));
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let line = req.launcher.line(&req.job(root, token.clone())?);
    let _files = Written::all(&line.files)?;
    let mut cmd = Command::new(&mpirun);
    cmd.args(&line.args)
        .envs(line.env.iter().map(|(k, v)| (k, v)))
        .env(SETTINGS_VAR, line.said.join("; "))
        .env(
            USED_VAR,
            format!("{} ({})", req.launcher.name(), req.launcher_why),
        )
        .arg(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so that ending the job ends everything the launcher
        // started, a child that outlives it included ([`wait`] passes signals on).
        .process_group(0);
    let _ = std::fs::remove_file(&token);
    cmd.env(TOKEN_VAR, &token);
    let ran = run(cmd, &mpirun, req, limit, stall);
    // On this machine rank 0 leaves the token: without it, the launcher never started
    // numalab (a wrapper that exits at once, a broken install), whatever it returned.
    let started = token.exists() || req.hostfile.is_some() || req.launcher == Launcher::Srun;
    // Removed whatever the wait gave, an error too: nothing of ours stays in the temp dir.
    let _ = std::fs::remove_file(&token);
    let code = ran?;
    if !started && PASSED_ON.load(Ordering::SeqCst) == 0 {
        eprintln!(
            "numalab: error: {} ended (status {code}) without starting numalab's ranks: is it a working mpirun? (NUMALAB_MPIRUN chooses another)",
            mpirun.display()
        );
        return Ok(Launched::Parent(if code == 0 { 1 } else { code.min(125) }));
    }
    Ok(Launched::Parent(code))
}

/// Rank 0 of a job numalab launched says it started (see [`ensure`]).
fn started(job: &JobEnv) {
    if job.rank == 0 {
        if let Some(t) = std::env::var_os(TOKEN_VAR) {
            let _ = std::fs::File::create(t);
        }
    }
}

/// A termination signal the launcher received while waiting (0: none).
static TERMINATED_BY: AtomicI32 = AtomicI32::new(0);
/// The last such signal passed on to the job (0: none), for the report.
static PASSED_ON: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_terminate(sig: libc::c_int) {
    TERMINATED_BY.store(sig, Ordering::SeqCst);
}

/// How long the launcher waits, once mpirun has ended, for its stderr to close: a
/// process mpirun left behind may hold it open for ever.
const STDERR_DRAIN: Duration = Duration::from_secs(2);

fn run(
    mut cmd: Command,
    mpirun: &Path,
    req: &LaunchRequest,
    limit: Option<Limit>,
    stall: Duration,
) -> Result<i32> {
    let token = cmd
        .get_envs()
        .find(|(k, _)| *k == TOKEN_VAR)
        .and_then(|(_, v)| v.map(OsString::from))
        .unwrap_or_default();
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::System(format!("cannot start {}: {e}", mpirun.display())))?;
    let mut watch = Watch::new(child.id(), token, stall);
    pass_signals_on();
    let stderr = child.stderr.take().expect("stderr was piped");
    let stdout = child.stdout.take().expect("stdout was piped");
    let (tx, rx) = mpsc::channel::<Notice>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let (tx2, done2) = (tx.clone(), done_tx.clone());
    std::thread::spawn(move || {
        filter_stderr(stderr, tx);
        let _ = done_tx.send(());
    });
    // A remote daemon's report can reach stdout (see [`crate::launch_stdout`]).
    std::thread::spawn(move || {
        crate::launch_stdout::filter(stdout, tx2);
        let _ = done2.send(());
    });
    let (status, mut notices, killed_for) = wait(&mut child, &rx, limit, &mut watch)?;
    // Killed by us, or by a signal from outside: ranks it left run on as orphans (each
    // in its own process group), so they go too.
    if killed_for.is_some() || exit_code(status) > 128 {
        watch.kill_ranks();
    }
    // Whatever the launcher's end, nothing it started outlives the job: what is left
    // in its group once it exited (a child a wrapper script backgrounded) is a stray,
    // and so is what a remote shell started in a group of its own (a daemon on a host
    // cut off, which would hold the job's output open for ever).
    kill_group(&child, libc::SIGKILL);
    watch.kill_strays();
    // Never wait on the pipes past the bound: a reader still blocked is left behind.
    let drained = Instant::now() + STDERR_DRAIN;
    for _ in 0..2 {
        let _ = done_rx.recv_timeout(drained.saturating_duration_since(Instant::now()));
    }
    // Once the launcher ended the job, what mpirun says of it is an echo.
    notices.extend(
        rx.try_iter()
            .filter(|n| killed_for.is_none() || matches!(n, Notice::Transport(_))),
    );
    Ok(report(exit_code(status), &notices, killed_for, req))
}

/// Send `sig` to mpirun's process group: mpirun, its daemons and ranks, and anything
/// they started.
fn kill_group(child: &std::process::Child, sig: libc::c_int) {
    // SAFETY: signalling the process group our child leads (its pid is the group id);
    // a group already gone only makes kill return ESRCH.
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), sig);
    }
}

/// mpirun runs in its own process group, so Ctrl-C, SIGTERM and SIGHUP (a timeout, a
/// closed terminal) reach only us: [`wait`] passes them on to the group and waits for
/// mpirun to end the ranks and report, instead of dying first and leaving them behind.
fn pass_signals_on() {
    // SAFETY: setting a signal disposition to a handler that only stores to an atomic
    // is async-signal-safe and sound.
    unsafe {
        let h = on_terminate as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::signal(libc::SIGINT, h);
        libc::signal(libc::SIGTERM, h);
        libc::signal(libc::SIGHUP, h);
    }
}

/// Pass mpirun's stderr through, less its boxed reports, which become notices.
fn filter_stderr(stderr: std::process::ChildStderr, tx: mpsc::Sender<Notice>) {
    let mut filter = BoxFilter::default();
    let mut err = std::io::stderr();
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        for part in unglue(&line) {
            filter_line(&mut filter, part, &tx, &mut err);
        }
    }
    if let Some(n) = filter.finish() {
        let _ = tx.send(n);
    }
}

/// One line of mpirun's stderr through the box filter: passed on, held as a transport
/// notice, or part of a box.
fn filter_line(
    filter: &mut BoxFilter,
    line: &str,
    tx: &mpsc::Sender<Notice>,
    err: &mut std::io::Stderr,
) {
    match filter.feed(line) {
        // mpirun's own failure to forward a help text while a job aborts says
        // nothing about the job; the abort's reason is already on stderr.
        Some(Ok(pass)) if pass.contains("ORTE_ERROR_LOG") && pass.contains("show_help.c") => {}
        // A transport's complaint that a peer went away: held until the job's
        // fate is known (see [`report`]).
        Some(Ok(pass)) if is_transport(&pass) => {
            let _ = tx.send(Notice::Transport(pass));
        }
        // The remote shell failing to reach a host: said once, naming it, in the report.
        // srun's report of a failed task: as mpirun's box of it.
        Some(Ok(pass)) if crate::launch_notice::srun_task(&pass).is_some() => {
            let _ = tx.send(crate::launch_notice::srun_task(&pass).expect("checked"));
        }
        Some(Ok(pass)) if crate::launch_notice::remote_shell(&pass).is_some() => {
            let _ = tx.send(crate::launch_notice::remote_shell(&pass).expect("checked"));
        }
        Some(Ok(pass)) => {
            let _ = writeln!(err, "{pass}");
        }
        Some(Err(notice)) => {
            let _ = tx.send(notice);
        }
        None => {}
    }
}

/// Wait for mpirun, passing a termination signal on and killing the job when a rank
/// died and it lingers, when a rank stopped, or when the job runs past its limit: its
/// status, the notices so far, and why it was killed.
fn wait(
    child: &mut std::process::Child,
    rx: &mpsc::Receiver<Notice>,
    limit: Option<Limit>,
    watch: &mut Watch,
) -> Result<(std::process::ExitStatus, Vec<Notice>, Option<String>)> {
    let start = Instant::now();
    let mut notices: Vec<Notice> = Vec::new();
    let mut death_at: Option<Instant> = None;
    let mut killed_for: Option<String> = None;
    loop {
        while let Ok(n) = rx.try_recv() {
            // Once the launcher ended the job, what mpirun says of it is an echo.
            if killed_for.is_some() && !matches!(n, Notice::Transport(_)) {
                continue;
            }
            if n.is_death() && death_at.is_none() {
                death_at = Some(Instant::now());
            }
            notices.push(n);
        }
        if let Some(st) = child
            .try_wait()
            .map_err(|e| Error::System(format!("waiting for mpirun failed: {e}")))?
        {
            return Ok((st, notices, killed_for));
        }
        let sig = TERMINATED_BY.swap(0, Ordering::SeqCst);
        if sig != 0 {
            kill_group(child, sig);
            death_at.get_or_insert_with(Instant::now);
            PASSED_ON.store(sig, Ordering::SeqCst);
        }
        let overdue = death_at.is_some_and(|t| t.elapsed() > GRACE_AFTER_DEATH);
        let timed_out = limit.is_some_and(|l| start.elapsed() > l.after);
        if killed_for.is_none() {
            let silent = watch.poll().map(|s| s.message(watch.bound));
            if overdue || timed_out || silent.is_some() {
                killed_for = Some(silent.unwrap_or_else(|| kill_reason(timed_out, limit)));
                watch.note_family();
                watch.kill_ranks();
                kill_group(child, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Why the launcher killed mpirun.
fn kill_reason(timed_out: bool, limit: Option<Limit>) -> String {
    match limit.filter(|_| timed_out) {
        Some(l) => l.message(),
        None => format!(
            "mpirun did not end the job {} s after a rank died; it was killed",
            GRACE_AFTER_DEATH.as_secs()
        ),
    }
}

/// Say what the notices and the kill mean, and the exit status the launcher gives;
/// then the transports' lines held back: summarised after the line naming the rank
/// the job lost, as they only echo it, else passed on as they were.
fn report(code: i32, notices: &[Notice], killed_for: Option<String>, req: &LaunchRequest) -> i32 {
    let (held, notices): (Vec<&Notice>, Vec<&Notice>) = notices
        .iter()
        .partition(|n| matches!(n, Notice::Transport(_)));
    let notices: Vec<Notice> = notices.into_iter().cloned().collect();
    let lost = killed_for.is_some() || notices.iter().any(Notice::is_death);
    let status = verdict(code, &notices, killed_for, req);
    let mut err = std::io::stderr();
    let lines: Vec<&str> = held
        .iter()
        .filter_map(|n| match n {
            Notice::Transport(l) => Some(l.as_str()),
            _ => None,
        })
        .collect();
    match lines.first() {
        Some(first) if lost => {
            let _ = writeln!(
                err,
                "numalab: note: Open MPI printed {} transport line{} as the job lost that rank, e.g. '{}'",
                lines.len(),
                if lines.len() == 1 { "" } else { "s" },
                first.trim()
            );
        }
        _ => lines.iter().for_each(|l| {
            let _ = writeln!(err, "{l}");
        }),
    }
    status
}

/// The lines for the notices and the kill, and the exit status.
fn verdict(code: i32, notices: &[Notice], killed_for: Option<String>, req: &LaunchRequest) -> i32 {
    let mut err = std::io::stderr();
    // A host named as the one that failed says more than "not every host started".
    let named = notices
        .iter()
        .any(|n| matches!(n, Notice::Unreachable { .. } | Notice::RemoteShell { .. }));
    for n in notices {
        if named && *n == Notice::DaemonsFailed {
            continue;
        }
        if let Some(line) = n.message(req.ranks, req.hostfile.as_deref()) {
            let _ = writeln!(err, "numalab: error: {line}");
        }
    }
    // A job ended by a dead rank or by the launcher is a run-time failure: exit 1,
    // as the README's exit statuses say, whatever signal ended mpirun.
    let passed = PASSED_ON.load(Ordering::SeqCst);
    if passed != 0 {
        // The user's Ctrl-C (or a SIGTERM/SIGHUP): said, and 128 + the signal.
        let name = match passed {
            libc::SIGINT => "SIGINT (Ctrl-C)",
            libc::SIGTERM => "SIGTERM",
            _ => "SIGHUP",
        };
        let _ = writeln!(
            err,
            "numalab: error: interrupted by {name}: the MPI job was ended before it finished"
        );
        return 128 + passed;
    }
    if let Some(why) = killed_for {
        let _ = writeln!(err, "numalab: error: {why}");
        return 1;
    }
    if code > 128 && notices.iter().any(Notice::is_death) {
        return 1;
    }
    if code > 128 && notices.is_empty() {
        // mpirun itself died of a signal nobody here sent (kill -9 from outside).
        let _ = writeln!(
            err,
            "numalab: error: {} was ended by signal {} from outside numalab; the job's ranks were ended with it",
            req.launcher.name(),
            code - 128
        );
        return 1;
    }
    // Open MPI could not place the ranks: the user's input, as the project reports it.
    if notices.iter().any(|n| matches!(n, Notice::NotEnoughSlots)) {
        return 2;
    }
    code
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(ranks: usize, cpus: usize) -> LaunchRequest {
        LaunchRequest {
            ranks,
            hostfile: None,
            cpus,
            min_ranks: 2,
            estimate: None,
            mapping: Default::default(),
            launcher: Launcher::OpenMpi,
            launcher_why: "test".into(),
        }
    }

    #[test]
    fn the_requests_job_says_oversubscription_and_the_launcher_builds_from_it() {
        let job = req(4, 2).job(true, "/s".into()).unwrap();
        assert!(job.oversubscribe && job.root && job.hostfile.is_none());
        assert!(!req(2, 2).job(false, "/s".into()).unwrap().oversubscribe);
        let args: Vec<String> = req(2, 2)
            .launcher_args()
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect();
        assert_eq!(args, ["-np", "2", "--bind-to", "none"]);
    }

    #[test]
    fn bad_rank_counts_and_missing_hostfiles_are_usage_errors() {
        for (n, what) in [(0, "'0'"), (1, "at least 2 ranks"), (33, "at most 32")] {
            let e = req(n, 2).validate().unwrap_err();
            assert!(e.is_user_error() && e.to_string().contains(what), "{e}");
        }
        assert!(req(32, 2).validate().is_ok());
        // Under srun the ranks run on the allocation's nodes, not this machine's CPUs.
        let mut srun = req(64, 2);
        srun.launcher = Launcher::Srun;
        assert!(srun.validate().is_ok());
        assert_eq!(srun.crowding(), 1.0);
        assert_eq!((req(32, 2).crowding(), req(1, 2).crowding()), (16.0, 1.0));
        let mut one = req(0, 2);
        one.min_ranks = 1;
        let e = one.validate().unwrap_err().to_string();
        assert!(e.ends_with("needs at least 1 rank"), "{e}");
        let mut h = req(64, 2);
        h.hostfile = Some("/nonexistent/hosts".into());
        let e = h.validate().unwrap_err();
        assert!(
            e.to_string().contains("--hostfile '/nonexistent/hosts'"),
            "{e}"
        );
    }
}
