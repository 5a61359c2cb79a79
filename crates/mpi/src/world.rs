//! One rank's view of the job: MPI initialised at the thread level asked for, this
//! rank pinned and its placement proved, every rank's placement known to all, and
//! the records gathered onto rank 0.

use crate::env::{hostname, JobEnv};
use crate::error::{Error, Result};
use crate::gather;
use crate::place::{pin_rank, RankPlacement};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use numalab_results::record::Unavailable;
use numalab_results::Record;
use numalab_topo::{Host, ThreadSpec};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use mpi::Threading;

/// What a command asks of the job.
#[derive(Debug, Clone)]
pub struct WorldOptions {
    /// The thread level the command would like (MPI may provide less).
    pub threading: Threading,
    /// Where the ranks of each host go (placement language); default compact.
    pub rank_cpus: ThreadSpec,
    /// `--ranks-per-host` and `--map-by` as given (None: neither), for the records.
    pub mapping: Option<String>,
}

impl Default for WorldOptions {
    fn default() -> Self {
        WorldOptions {
            threading: Threading::Single,
            rank_cpus: ThreadSpec::Compact,
            mapping: None,
        }
    }
}

/// The thread level's MPI name.
pub fn threading_name(t: Threading) -> &'static str {
    match t {
        Threading::Single => "MPI_THREAD_SINGLE",
        Threading::Funneled => "MPI_THREAD_FUNNELED",
        Threading::Serialized => "MPI_THREAD_SERIALIZED",
        Threading::Multiple => "MPI_THREAD_MULTIPLE",
    }
}

/// The job's facts every record carries in its placement section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobFacts {
    /// Ranks in the job.
    pub ranks: usize,
    /// Distinct hosts, in rank order of first appearance.
    pub hosts: Vec<String>,
    /// The rank placement spec.
    pub rank_cpus: String,
    /// Thread level asked for and provided.
    pub threading_requested: String,
    /// Thread level MPI provided.
    pub threading_provided: String,
    /// The MPI library's version string.
    pub library: String,
    /// Every rank's placement.
    pub placements: Vec<RankPlacement>,
}

/// One rank of a running job. Dropping it finalises MPI.
pub struct World {
    // Field order matters: the communicator goes before the universe finalises MPI.
    comm: SimpleCommunicator,
    universe: mpi::environment::Universe,
    /// This rank.
    pub rank: usize,
    /// Ranks in the job.
    pub size: usize,
    /// Thread level asked for.
    pub requested: Threading,
    /// Thread level MPI provided.
    pub provided: Threading,
    /// Every rank's placement, in rank order (known on every rank).
    pub placements: Vec<RankPlacement>,
    /// The placement spec used.
    pub rank_cpus: ThreadSpec,
    /// `--ranks-per-host` and `--map-by` as given.
    pub mapping: Option<String>,
}

impl World {
    /// Initialise MPI, pin this rank and exchange placements (collective).
    pub fn start(host: &Host, opts: &WorldOptions) -> Result<World> {
        let job = JobEnv::detect();
        let (universe, provided) = mpi::initialize_with_threading(opts.threading)
            .ok_or_else(|| Error::System("MPI was already initialised in this process".into()))?;
        let provided = cap_for_tests(provided);
        let comm = universe.world();
        let rank = comm.rank() as usize;
        let size = comm.size() as usize;
        let name = hostname();
        kill_for_tests(rank);
        // Ranks per host: the launcher's figures, else count the hosts' names.
        let names = gather::all_gather(&comm, &name)?;
        same_build(&comm, rank, &names, &name)?;
        let (local_rank, local_size) =
            match job.as_ref().and_then(|j| j.local_rank.zip(j.local_size)) {
                Some(l) => l,
                None => (
                    names[..rank].iter().filter(|n| **n == name).count(),
                    names.iter().filter(|n| **n == name).count(),
                ),
            };
        // Placed inside the CPUs this rank was started on: an emulated or shared host's
        // cpuset, or a batch system's share of the machine.
        let share = crate::place::started_on(&host.machine);
        let within = share
            .as_ref()
            .map(|c| crate::place::narrowed(&host.machine, c));
        let within = within.as_ref().unwrap_or(&host.machine);
        let mine = pin_rank(
            host,
            within,
            &opts.rank_cpus,
            rank,
            local_rank,
            local_size,
            &name,
        );
        let placements = everyones_placement(&comm, rank, mine)?;
        Ok(World {
            comm,
            universe,
            rank,
            size,
            requested: opts.threading,
            provided,
            placements,
            rank_cpus: opts.rank_cpus.clone(),
            mapping: opts.mapping.clone(),
        })
    }

    /// The world communicator.
    pub fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// True on rank 0, the one that emits.
    pub fn is_root(&self) -> bool {
        self.rank == 0
    }

    /// This rank's placement.
    pub fn me(&self) -> &RankPlacement {
        &self.placements[self.rank]
    }

    /// A usage error when `feature` needs MPI_THREAD_MULTIPLE and MPI did not provide it.
    pub fn require_multiple(&self, feature: &str) -> Result<()> {
        if self.provided < Threading::Multiple {
            return Err(Error::Usage(format!(
                "{feature} needs MPI_THREAD_MULTIPLE, but this MPI provides only {}",
                threading_name(self.provided)
            )));
        }
        Ok(())
    }

    /// Per-feature note for records when MPI provided less than asked.
    pub fn threading_unavailable(&self) -> Option<Unavailable> {
        (self.provided < self.requested).then(|| Unavailable {
            feature: threading_name(self.requested).into(),
            reason: format!("this MPI provides only {}", threading_name(self.provided)),
        })
    }

    /// The job's facts for records.
    pub fn facts(&self) -> JobFacts {
        let mut hosts: Vec<String> = Vec::new();
        for p in &self.placements {
            if !hosts.contains(&p.host) {
                hosts.push(p.host.clone());
            }
        }
        JobFacts {
            ranks: self.size,
            hosts,
            rank_cpus: self.rank_cpus.to_string(),
            threading_requested: threading_name(self.requested).into(),
            threading_provided: threading_name(self.provided).into(),
            library: library_name(&mpi::environment::library_version().unwrap_or_default()),
            placements: self.placements.clone(),
        }
    }

    /// The placement section for a record measured between `ranks`.
    pub fn placement_value(&self, ranks: &[usize]) -> Value {
        let facts = self.facts();
        json!({
            "ranks": facts.ranks,
            "hosts": facts.hosts,
            "rank_cpus": facts.rank_cpus,
            // `--ranks-per-host` and `--map-by` as given (null: mpirun's default spread).
            "mapping": self.mapping,
            "threading_requested": facts.threading_requested,
            "threading_provided": facts.threading_provided,
            "mpi_library": facts.library,
            "measured_ranks": ranks,
            "per_rank": facts.placements,
            // What numalab's launcher set for a job across hosts, with why (none: one
            // host, or the user's own mpirun).
            "launch_settings": crate::across::recorded(),
            // The program that started the ranks, and why it was chosen.
            "launcher": crate::launcher::recorded(),
        })
    }

    /// Warn when measured ranks share a CPU (their timings include waiting for it).
    pub fn warn_shared(&self, ranks: &[usize], r: &mut Record) {
        for &k in ranks {
            let p = &self.placements[k];
            if p.shares_cpu {
                r.warnings.push(format!(
                    "rank {k} shares CPU {} with another rank: timings include waiting for the CPU",
                    p.cpu
                ));
            }
        }
    }

    /// Gather every rank's records onto rank 0 (collective): Some(all, in rank order)
    /// on rank 0, None elsewhere. Records keep their own placement sections.
    pub fn gather_records(&self, mine: &[Record]) -> Result<Option<Vec<Record>>> {
        Ok(gather::gather_to_root(&self.comm, &mine.to_vec())?
            .map(|per_rank| per_rank.into_iter().flatten().collect()))
    }

    /// Wait for every rank.
    pub fn barrier(&self) {
        self.comm.barrier();
    }

    /// Wait for every rank without spinning: a nonblocking barrier tested every
    /// millisecond, so a rank that waits here leaves its CPU to others (Open MPI's
    /// blocking barrier polls at full speed).
    pub fn barrier_gently(&self) {
        let mut req = self.comm.immediate_barrier();
        loop {
            match req.test() {
                Ok(_) => return,
                Err(r) => req = r,
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// End the whole job with `code` after this rank printed its error: the
    /// launcher turns the abort into the exit status, no rank is left waiting.
    pub fn abort(&self, code: i32) -> ! {
        self.comm.abort(code)
    }

    /// The universe (for buffers attached by experiments).
    pub fn universe(&self) -> &mpi::environment::Universe {
        &self.universe
    }
}

impl Drop for World {
    /// The last step before the universe finalises MPI: with an MPICH whose finalize
    /// can hang across hosts, the ranks meet first (see [`crate::finalize`]). Not while
    /// unwinding a panic: the other ranks may never come.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            late_for_tests(&self.comm, self.rank);
            crate::finalize::before_finalize(self.size, self.rank);
        }
    }
}

/// One numalab and one MPI library on every host, before anything is measured (an
/// empty Usage error on every rank when not, rank 0 having said why).
fn same_build(comm: &SimpleCommunicator, rank: usize, names: &[String], name: &str) -> Result<()> {
    let builds = gather::all_gather(comm, &build_of(name))?;
    let Some(why) = mismatch(names, &builds) else {
        return Ok(());
    };
    // Rank 0 says why before any rank ends: the first rank to exit makes mpirun end the
    // job, and a rank 0 still formatting its line was taken down with it (a full test
    // run, 2026-11-29: the job ended with no error and not status 2).
    if rank == 0 {
        say(&format!("numalab: error: {why}"));
    }
    comm.barrier();
    Err(Error::Usage(String::new()))
}

/// Every rank's placement, in rank order: everyone learns whether everyone pinned, so
/// no rank waits on a failed one, and a rank that failed says so before any rank ends
/// the job (as in [`same_build`]).
fn everyones_placement(
    comm: &SimpleCommunicator,
    rank: usize,
    mine: Result<RankPlacement>,
) -> Result<Vec<RankPlacement>> {
    let outcome: std::result::Result<RankPlacement, String> = mine.map_err(|e| e.to_string());
    let all = gather::all_gather(comm, &outcome)?;
    let mut placements = Vec::with_capacity(all.len());
    let mut failed = false;
    for (r, o) in all.into_iter().enumerate() {
        match o {
            Ok(p) => placements.push(p),
            Err(e) => {
                if r == rank {
                    say(&format!("numalab: error: {e}"));
                }
                failed = true;
            }
        }
    }
    if failed {
        comm.barrier();
        return Err(Error::System(String::new()));
    }
    Ok(placements)
}

/// Fault injection for the finalize test: `NUMALAB_MPI_LATE_RANK=R` makes rank R keep
/// probing MPI (which progresses it) for 1 s after its work, while the others are done:
/// a rank still inside MPI as another finalizes, as a slow rank would be.
fn late_for_tests(comm: &SimpleCommunicator, rank: usize) {
    // Checked when numalab starts (numalab_results::envvars).
    let late = numalab_results::envvars::whole("NUMALAB_MPI_LATE_RANK");
    if late.ok().flatten() != Some(rank as u64) {
        return;
    }
    let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
    while std::time::Instant::now() < until {
        // A tag no one sends: nothing is received, only progressed.
        let _ = comm.any_process().immediate_probe_with_tag(32000);
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

/// The MPI library's version string as MPI_Get_library_version gives it, less the
/// NUL and blanks that end it (Open MPI counts its terminator in the length).
pub fn library_name(raw: &str) -> String {
    raw.trim_matches(|c: char| c == '\0' || c.is_whitespace())
        .to_string()
}

/// What must be the same on every rank: numalab's version and the MPI library's name.
/// `NUMALAB_MPI_FAKE_VERSION=HOST=VERSION` (tests only) makes numalab on HOST say
/// VERSION.
fn build_of(host: &str) -> (String, String) {
    let fake = std::env::var("NUMALAB_MPI_FAKE_VERSION").ok();
    let version = fake
        .as_deref()
        .and_then(|f| f.split_once('='))
        .filter(|(h, _)| *h == host)
        .map(|(_, v)| v.to_string())
        .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string());
    let library = library_name(&mpi::environment::library_version().unwrap_or_default());
    (version, library)
}

/// The first rank whose build differs from rank 0's, said with both (None: all alike).
fn mismatch(names: &[String], builds: &[(String, String)]) -> Option<String> {
    let (v0, l0) = builds.first()?;
    let (r, (v, l)) = builds
        .iter()
        .enumerate()
        .find(|(_, b)| b.0 != *v0 || b.1 != *l0)?;
    let (what, a, b) = match v != v0 {
        true => (
            "numalab versions",
            format!("numalab {v0}"),
            format!("numalab {v}"),
        ),
        false => ("MPI libraries", l0.clone(), l.clone()),
    };
    Some(format!(
        "different {what} across the job's hosts: {a} on {} (rank 0), {b} on {} (rank {r}); run one numalab build with one MPI library on every host",
        names[0], names[r]
    ))
}

/// Fault injection for the launcher's tests: `NUMALAB_MPI_KILL_RANK=R` makes rank R
/// kill itself with SIGKILL once MPI is up, as a crashed rank would die.
fn kill_for_tests(rank: usize) {
    // Checked when numalab starts (numalab_results::envvars).
    if numalab_results::envvars::whole("NUMALAB_MPI_KILL_RANK")
        .ok()
        .flatten()
        == Some(rank as u64)
    {
        // SAFETY: raising a signal at ourselves has no memory-safety preconditions.
        unsafe {
            libc::raise(libc::SIGKILL);
        }
    }
}

/// Fault injection for the bad-input tests: `NUMALAB_MPI_THREAD_CAP=single|funneled|
/// serialized` treats the thread level MPI provided as at most that, as a library
/// built without thread support would provide.
fn cap_for_tests(provided: Threading) -> Threading {
    // Checked when numalab starts (numalab_results::envvars).
    let cap = numalab_results::envvars::choice("NUMALAB_MPI_THREAD_CAP");
    let cap = match cap.ok().flatten().as_deref() {
        Some("single") => Threading::Single,
        Some("funneled") => Threading::Funneled,
        Some("serialized") => Threading::Serialized,
        _ => return provided,
    };
    provided.min(cap)
}

/// Write `line` to stderr in one write: `eprintln!` writes its pieces one by one, and
/// mpirun, forwarding a rank's stderr, may cut a line between them.
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// Print `e` as this rank's one line (rank 0 plain, others prefixed; an empty message
/// means another rank failed and printed) and end the job with its exit status.
pub fn fail(world: Option<&World>, e: &Error) -> ! {
    let msg = e.to_string();
    match world {
        Some(w) => {
            if !msg.is_empty() {
                if w.rank == 0 {
                    say(&format!("numalab: error: {msg}"));
                } else {
                    say(&format!("numalab: error: rank {}: {msg}", w.rank));
                }
            }
            w.abort(e.exit_code())
        }
        None => {
            if !msg.is_empty() {
                say(&format!("numalab: error: {msg}"));
            }
            std::process::exit(e.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_build_that_differs_from_rank_0s_is_named_with_both() {
        let names: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let b = |v: &str, l: &str| (v.to_string(), l.to_string());
        let same = [b("1", "ompi"), b("1", "ompi"), b("1", "ompi")];
        assert_eq!(super::mismatch(&names, &same), None);
        let v = super::mismatch(&names, &[b("1", "ompi"), b("1", "ompi"), b("2", "ompi")]).unwrap();
        assert!(
            v.contains("numalab 1 on a (rank 0), numalab 2 on c (rank 2)"),
            "{v}"
        );
        let l =
            super::mismatch(&names, &[b("1", "ompi"), b("1", "mpich"), b("1", "ompi")]).unwrap();
        assert!(
            l.contains("MPI libraries") && l.contains("mpich on b (rank 1)"),
            "{l}"
        );
    }

    #[test]
    fn the_library_name_loses_its_terminating_nul() {
        let raw = "Open MPI v4.1.4, package: Debian OpenMPI\n\0";
        assert_eq!(
            super::library_name(raw),
            "Open MPI v4.1.4, package: Debian OpenMPI"
        );
    }
}
