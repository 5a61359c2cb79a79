//! What a measuring run says about the run lock ([`crate::runlock`]): it registers so
//! others can see it (waiting first for those already measuring when asked), and after
//! it ends names every other measurement that ran beside it.

use crate::runlock::{self, OtherRun, Registration};

/// A measuring run's registration and the other runs it found measuring when it began.
pub struct Announced {
    registration: Option<Registration>,
    others: Vec<OtherRun>,
}

/// Register this measuring run so others can see it, after waiting for the runs
/// already measuring when `wait`. The warning about other runs comes after the run
/// ([`Announced::warn_concurrent`]), so a bad-input error stays one line. `job_rank`
/// is this process's rank when it is one of an MPI job's.
pub fn announce(wait: bool, job_rank: Option<usize>) -> Announced {
    let mut others = runlock::others();
    // Ranks numalab launched itself: the launcher has waited already.
    let launched = runlock::parent().is_some();
    if wait && !launched && !others.is_empty() {
        // Under the user's own mpirun every rank waits, and rank 0 alone says so, each
        // line in one write, so ranks never print into one line.
        if job_rank.unwrap_or(0) == 0 {
            let lines: String = others
                .iter()
                .map(|o| {
                    format!(
                        "numalab: waiting for pid {} ({}) to finish measuring\n",
                        o.pid, o.command
                    )
                })
                .collect();
            eprint!("{lines}");
        }
        runlock::wait_for_others();
        others.clear();
    }
    let started = crate::provenance::now_utc();
    let registration = runlock::register(&started).unwrap_or_else(|e| {
        eprintln!(
            "numalab: warning: cannot register this run in {} ({e}); other runs will not see it",
            runlock::dir().display()
        );
        None
    });
    Announced {
        registration,
        others,
    }
}

impl Announced {
    /// After the run: name every other measurement seen while it ran (their records
    /// carry the same in `provenance.concurrent_runs`). `job_rank` is this process's
    /// rank when it is one of an MPI job's.
    pub fn warn_concurrent(&self, job_rank: Option<usize>) {
        // One warning per job: its launcher's (ranks it started have a parent run), or
        // rank 0's under the user's own mpirun.
        if let Some(rank) = job_rank {
            let launched_here =
                std::env::var_os(runlock::PARENT_ENV).is_some() && self.registration.is_none();
            if launched_here || rank != 0 {
                return;
            }
        }
        let mut seen = self.others.clone();
        for o in runlock::others() {
            if !seen.iter().any(|s| s.pid == o.pid) {
                seen.push(o);
            }
        }
        let lines: String = seen.iter().map(|o| format!(
            "numalab: warning: another numalab measurement is running on this machine (pid {}: {}); the figures of both may be disturbed, and --wait waits for it\n",
            o.pid, o.command
        )).collect();
        eprint!("{lines}");
    }
}
