//! The launcher's watchdog: how long a job may run, and whether its ranks on this
//! machine still run. mpirun notices a rank that died, not one that stopped (SIGSTOP,
//! a frozen cgroup): its peers wait for it for ever. So the launcher reads each local
//! rank's `/proc/PID/stat` — its state and CPU time — and mpirun's own, and ends a job
//! one of whose ranks, or mpirun itself, has stayed stopped past a bound.

use crate::env::TOKEN_VAR;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::ffi::OsString;
use std::time::{Duration, Instant};

/// Seconds a rank may stay stopped before the launcher ends the job.
pub const STALL_VAR: &str = "NUMALAB_MPI_STALL";
/// The bound without [`STALL_VAR`]: long enough for a deliberate pause to look at a
/// rank, short beside any measurement it would otherwise hang.
pub const DEFAULT_STALL: Duration = Duration::from_secs(10);
/// How often the ranks' states are read.
const EVERY: Duration = Duration::from_millis(250);

/// A number of seconds from the environment variable `var`; a value that is not a
/// positive number of seconds is refused rather than ignored (the rule is
/// `numalab_results::envvars`', where every variable's is).
pub fn seconds_from_env(var: &str) -> Result<Option<Duration>> {
    numalab_results::envvars::duration(var).map_err(Error::Usage)
}

/// The bound on a job's run time, and where it came from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    /// Run time after which the job is ended.
    pub after: Duration,
    /// The plan's estimate it was derived from; None: `NUMALAB_MPI_TIMEOUT`.
    pub estimate: Option<Duration>,
}

impl Limit {
    /// The line saying the job ran past it.
    pub fn message(&self) -> String {
        match self.estimate {
            None => format!(
                "the MPI job ran past NUMALAB_MPI_TIMEOUT ({:.0} s) and was ended",
                self.after.as_secs_f64()
            ),
            Some(e) => format!(
                "the MPI job ran past {:.0} s, ten times its plan's estimate of {:.1} s (at least 60 s), and was ended; NUMALAB_MPI_TIMEOUT sets another bound",
                self.after.as_secs_f64(),
                e.as_secs_f64()
            ),
        }
    }
}

/// The bound a plan's estimate gives when `NUMALAB_MPI_TIMEOUT` is not set: ten times
/// the estimate and at least a minute, so a slow or shared machine never reaches it
/// and a hang still ends.
pub fn default_bound(estimate: Duration) -> Duration {
    (estimate * 10).max(Duration::from_secs(60))
}

/// The overall limit: `NUMALAB_MPI_TIMEOUT` (seconds; a value that is not a positive
/// number is refused rather than ignored), else the plan's estimate's bound.
pub fn overall_limit(estimate: Option<Duration>) -> Result<Option<Limit>> {
    let var = "NUMALAB_MPI_TIMEOUT";
    Ok(match check_timeout(var, seconds_from_env(var)?)? {
        Some(after) => Some(Limit {
            after,
            estimate: None,
        }),
        None => estimate.map(|e| Limit {
            after: default_bound(e),
            estimate: Some(e),
        }),
    })
}

/// The least `NUMALAB_MPI_TIMEOUT` taken: starting a job's ranks alone takes about a
/// second here, so a smaller bound would end every job and blame the launcher.
const MIN_TIMEOUT: Duration = Duration::from_secs(1);

/// Refuse an overall bound below [`MIN_TIMEOUT`], naming the value as given.
fn check_timeout(var: &str, after: Option<Duration>) -> Result<Option<Duration>> {
    match after {
        Some(a) if a < MIN_TIMEOUT => Err(Error::Usage(format!(
            "invalid {var} '{}': at least 1 second (starting the ranks alone takes about that), e.g. 600",
            std::env::var_os(var).unwrap_or_default().to_string_lossy().trim()
        ))),
        a => Ok(a),
    }
}

/// One process's state letter (`R`, `S`, `T` …), parent pid and CPU ticks (user +
/// system), from `/proc/PID/stat`.
fn stat(pid: i32) -> Option<(char, i32, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields follow the last ')'.
    let f: Vec<&str> = s.rsplit_once(')')?.1.split_whitespace().collect();
    let state = f.first()?.chars().next()?;
    let ppid = f.get(1)?.parse().ok()?;
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some((state, ppid, ticks))
}

/// The rank a process is, when it is one of the job whose launch token is `token`.
fn rank_of(pid: i32, token: &OsString) -> Option<usize> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let mut rank = None;
    let mut ours = false;
    for var in env.split(|&b| b == 0) {
        let var = String::from_utf8_lossy(var);
        if let Some(r) = var.strip_prefix("OMPI_COMM_WORLD_RANK=") {
            rank = r.parse().ok();
        } else if let Some(t) = var.strip_prefix(&format!("{}=", TOKEN_VAR)) {
            ours = token.to_str() == Some(t);
        }
    }
    rank.filter(|_| ours)
}

/// The job's ranks among `descendants`: (pid, rank).
fn ranks_among(descendants: &[i32], token: &OsString) -> Vec<(i32, usize)> {
    descendants
        .iter()
        .filter_map(|&pid| Some((pid, rank_of(pid, token)?)))
        .collect()
}

/// What the watch knows of one rank.
#[derive(Debug, Clone)]
struct Seen {
    rank: usize,
    ticks: u64,
    /// When its CPU time last grew (or it was first seen).
    progressed: Instant,
    /// When it was first seen stopped, while it stays so.
    stopped_since: Option<Instant>,
}

impl Seen {
    fn new(rank: usize, ticks: u64, now: Instant) -> Seen {
        Seen {
            rank,
            ticks,
            progressed: now,
            stopped_since: None,
        }
    }

    /// Take in a fresh `stat` read at `now`.
    fn update(&mut self, (state, _, ticks): (char, i32, u64), now: Instant) {
        if ticks != self.ticks {
            self.ticks = ticks;
            self.progressed = now;
        }
        // 'T': stopped by a signal. A debugger's stop ('t') is someone looking.
        self.stopped_since = (state == 'T').then(|| self.stopped_since.unwrap_or(now));
    }
}

/// A rank, or the launcher itself, that stopped answering.
#[derive(Debug, Clone, PartialEq)]
pub struct Silent {
    /// Its rank; None: the launcher (mpirun), whose stop hangs the ranks as surely.
    pub rank: Option<usize>,
    /// Its process.
    pub pid: i32,
    /// How long since it last ran.
    pub quiet: Duration,
    /// Its state, in words.
    pub state: &'static str,
}

impl Silent {
    /// The one line that says so.
    pub fn message(&self, bound: Duration) -> String {
        let who = match self.rank {
            Some(r) => format!("rank {r}"),
            None => "the launcher (mpirun)".to_string(),
        };
        format!(
            "{who} (pid {}) stopped answering {:.1} s ago (state: {}); the job was ended after it stayed so for {:.0} s ({STALL_VAR} sets how long)",
            self.pid,
            self.quiet.as_secs_f64(),
            self.state,
            bound.as_secs_f64()
        )
    }
}

/// Watches the ranks of one launched job on this machine.
#[derive(Debug)]
pub struct Watch {
    root: i32,
    token: OsString,
    /// How long a rank may stay stopped.
    pub bound: Duration,
    seen: HashMap<i32, Seen>,
    /// What the watch knows of the launcher itself.
    launcher: Option<Seen>,
    next: Instant,
    /// Everything seen below the launcher, killed if left when the job ends.
    family: crate::family::Family,
}

impl Watch {
    /// Watch the ranks that `root` (mpirun) starts with launch token `token`.
    pub fn new(root: u32, token: OsString, bound: Duration) -> Watch {
        Watch {
            root: root as i32,
            token,
            bound,
            seen: HashMap::new(),
            launcher: None,
            next: Instant::now(),
            family: Default::default(),
        }
    }

    /// Read the ranks' states (at most every [`EVERY`]): a rank stopped for longer
    /// than the bound, if any.
    pub fn poll(&mut self) -> Option<Silent> {
        let now = Instant::now();
        if now < self.next {
            return None;
        }
        self.next = now + EVERY;
        let below = crate::family::descendants(self.root);
        self.family.note(&below);
        for (pid, rank) in ranks_among(&below, &self.token) {
            if let Some(st) = stat(pid) {
                let s = self.seen.entry(pid).or_insert(Seen::new(rank, st.2, now));
                s.update(st, now);
            }
        }
        // A stopped mpirun never reaps nor releases its ranks, which then wait in
        // their finalisation without being stopped themselves: it is watched too.
        if let Some(st) = stat(self.root) {
            let l = self
                .launcher
                .get_or_insert_with(|| Seen::new(usize::MAX, st.2, now));
            l.update(st, now);
        }
        let over = |s: &&Seen| s.stopped_since.is_some_and(|t| now - t >= self.bound);
        let silent = |pid: i32, s: &Seen, rank: Option<usize>| Silent {
            rank,
            pid,
            quiet: now - s.progressed,
            state: "stopped",
        };
        if let Some(l) = self.launcher.as_ref().filter(over) {
            return Some(silent(self.root, l, None));
        }
        self.seen
            .iter()
            .filter(|(_, s)| over(s))
            .min_by_key(|(_, s)| s.rank)
            .map(|(&pid, s)| silent(pid, s, Some(s.rank)))
    }

    /// Note what runs below the launcher now (before it is killed: its orphans are
    /// then below it no more).
    pub fn note_family(&mut self) {
        self.family.note(&crate::family::descendants(self.root));
    }

    /// Once the launcher has ended: kill whatever it started that still runs (a
    /// remote shell's daemon in a process group of its own); how many.
    pub fn kill_strays(&self) -> usize {
        self.family.kill_left()
    }

    /// Kill every rank seen that is still this job's (a pid is checked against the
    /// launch token first, so a reused pid is never hit), with whatever it started.
    pub fn kill_ranks(&self) {
        for &pid in self.seen.keys() {
            if rank_of(pid, &self.token).is_none() {
                continue;
            }
            // SAFETY: getpgid and kill take plain integers; a process already gone
            // only makes them fail with ESRCH.
            unsafe {
                let target = if libc::getpgid(pid) == pid { -pid } else { pid };
                libc::kill(target, libc::SIGKILL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_stopped_child_is_named_once_it_stays_stopped_past_the_bound() {
        let token = OsString::from(format!("liveness-test-{}", std::process::id()));
        let me = std::process::id();
        let mut child = Command::new("sleep")
            .arg("30")
            .env("OMPI_COMM_WORLD_RANK", "3")
            .env(TOKEN_VAR, &token)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut w = Watch::new(me, token, Duration::from_millis(300));
        let t = Instant::now();
        while w.seen.is_empty() && t.elapsed() < Duration::from_secs(20) {
            assert_eq!(w.poll(), None, "a sleeping rank is not silent");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(w.seen[&pid].rank, 3);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        let silent = loop {
            if let Some(s) = w.poll() {
                break s;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "never named");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(
            (silent.rank, silent.pid, silent.state),
            (Some(3), pid, "stopped")
        );
        assert!(silent
            .message(w.bound)
            .starts_with(&format!("rank 3 (pid {pid}) stopped answering")));
        w.kill_ranks();
        assert!(!child.wait().unwrap().success());
    }

    #[test]
    fn a_timeout_below_a_second_is_refused_not_rounded_to_0() {
        let var = "NUMALAB_TEST_NO_SUCH_TIMEOUT";
        let ms = Some(Duration::from_millis(1));
        let e = check_timeout(var, ms).unwrap_err().to_string();
        assert!(e.contains("at least 1 second"), "{e}");
        let s = Some(Duration::from_secs(1));
        assert_eq!(check_timeout(var, s).unwrap(), s);
        assert_eq!(check_timeout(var, None).unwrap(), None);
    }

    #[test]
    fn the_default_bound_is_ten_estimates_and_at_least_a_minute() {
        assert_eq!(
            default_bound(Duration::from_secs(1)),
            Duration::from_secs(60)
        );
        assert_eq!(
            default_bound(Duration::from_secs(30)),
            Duration::from_secs(300)
        );
        let limit = Limit {
            after: Duration::from_secs(300),
            estimate: Some(Duration::from_secs(30)),
        };
        let why = limit.message();
        assert!(
            why.contains("past 300 s, ten times its plan's estimate of 30.0 s"),
            "{why}"
        );
    }
}
