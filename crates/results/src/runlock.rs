//! Other numalab measurements running on this machine at the same time.
//!
//! Two measurements at once disturb each other's figures, so every measuring
//! run registers a file in a folder shared by all users and holds an exclusive
//! `flock` on it for as long as it lives. A run that finds another's file locked
//! knows that run is measuring now, warns, and records it in its provenance; a
//! file whose lock is free belonged to a run that died (even by SIGKILL, since
//! the kernel drops the lock with the process) and is removed.
//!
//! The ranks of one MPI job started by the user's own mpirun each register; the
//! file names the job (its launcher's namespace), so ranks of one job never count
//! each other, while two separate jobs do.

use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;

/// Environment variable naming the run a child process belongs to (the survey's
/// steps, MPI ranks): such a child neither registers nor counts its parent.
pub const PARENT_ENV: &str = "NUMALAB_PARENT_RUN";

/// Another measurement found running.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherRun {
    /// Its process id.
    pub pid: u32,
    /// Its command line.
    pub command: String,
    /// When it started (UTC, RFC 3339).
    pub started: String,
}

/// What a run's file holds: the run, and the MPI job it is a rank of, if any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct RunFile {
    #[serde(flatten)]
    run: OtherRun,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mpi_job: Option<String>,
}

/// The MPI job this process is a rank of, from its launcher's environment: PMIx's
/// namespace (Open MPI 4 and later, PMIx launchers), Open MPI's job id, or Slurm's
/// job and step. None outside an MPI job.
pub fn mpi_job() -> Option<String> {
    mpi_job_from(&|k| std::env::var(k).ok())
}

/// [`mpi_job`] from any variable lookup (pure, for tests).
pub fn mpi_job_from(get: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let nonempty = |k: &str| get(k).filter(|v| !v.trim().is_empty());
    if let Some(ns) = nonempty("PMIX_NAMESPACE") {
        return Some(format!("pmix:{ns}"));
    }
    if let Some(id) =
        nonempty("OMPI_MCA_ess_base_jobid").or_else(|| nonempty("OMPI_MCA_orte_ess_jobid"))
    {
        return Some(format!("ompi:{id}"));
    }
    if let (Some(job), Some(step)) = (nonempty("SLURM_JOB_ID"), nonempty("SLURM_STEP_ID")) {
        return Some(format!("slurm:{job}.{step}"));
    }
    None
}

/// This run's registration; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct Registration {
    _file: File,
    path: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        *held() = None;
    }
}

/// The file of this process's registration while it lives, for [`remove_at_exit`].
fn held() -> std::sync::MutexGuard<'static, Option<PathBuf>> {
    static HELD: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);
    HELD.lock().unwrap_or_else(|p| p.into_inner())
}

/// A process that leaves through `exit` (the launcher of an MPI job passing on its
/// status, an error's exit status) drops nothing: its file goes here, so it does not
/// stay in the shared folder until another run clears it.
extern "C" fn remove_at_exit() {
    if let Some(p) = held().take() {
        let _ = fs::remove_file(p);
    }
}

/// The shared folder: `NUMALAB_RUN_DIR`, else `numalab-runs` in the temporary
/// directory (one folder for every user, so runs of different users see each other).
pub fn dir() -> PathBuf {
    std::env::var_os("NUMALAB_RUN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("numalab-runs"))
}

fn flock(f: &File, how: libc::c_int) -> bool {
    // SAFETY: flock on a descriptor we own.
    unsafe { libc::flock(f.as_raw_fd(), how) == 0 }
}

pub(crate) fn parent() -> Option<u32> {
    std::env::var(PARENT_ENV).ok()?.parse().ok()
}

/// Registers this process as measuring, unless it is a child of a run that
/// already did. The file is written and locked under a temporary name and then
/// renamed, so no other run ever sees it unlocked.
pub fn register(started: &str) -> std::io::Result<Option<Registration>> {
    if parent().is_some() {
        return Ok(None);
    }
    let d = dir();
    if !d.exists() {
        // Only the folder itself, never a missing parent: a mistyped TMPDIR or
        // NUMALAB_RUN_DIR creates nothing (the run warns that it is not registered).
        fs::create_dir(&d)?;
        // The default folder is shared by every user, like /tmp itself (sticky: each
        // removes only its own); one the user named is theirs (0755).
        let mode = match std::env::var_os("NUMALAB_RUN_DIR") {
            Some(_) => 0o755,
            None => 0o1777,
        };
        let _ = fs::set_permissions(&d, fs::Permissions::from_mode(mode));
    }
    let pid = std::process::id();
    let tmp = d.join(format!("{pid}.tmp"));
    let path = d.join(format!("{pid}.run"));
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .read(true)
        .mode(0o644)
        .open(&tmp)?;
    if !flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
        return Err(std::io::Error::last_os_error());
    }
    let me = RunFile {
        run: OtherRun {
            pid,
            command: std::env::args().collect::<Vec<_>>().join(" "),
            started: started.into(),
        },
        mpi_job: mpi_job(),
    };
    file.write_all(serde_json::to_string(&me).unwrap_or_default().as_bytes())?;
    file.flush()?;
    fs::rename(&tmp, &path)?;
    // Children (survey steps, MPI ranks) belong to this run.
    std::env::set_var(PARENT_ENV, pid.to_string());
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: registers a function that takes no arguments and never unwinds (it
        // ignores every error); once per process.
        unsafe { libc::atexit(remove_at_exit) };
    });
    *held() = Some(path.clone());
    Ok(Some(Registration { _file: file, path }))
}

/// The other measurements running now (not this process, nor the run it belongs
/// to); files left by runs that died are removed on the way.
pub fn others() -> Vec<OtherRun> {
    others_in(&dir(), std::process::id(), parent(), mpi_job().as_deref())
}

/// The runs registered in `d` other than `me`, its parent run and the ranks of its
/// own MPI job `job`.
fn others_in(d: &std::path::Path, me: u32, skip: Option<u32>, job: Option<&str>) -> Vec<OtherRun> {
    let Ok(entries) = fs::read_dir(d) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let Some(pid) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".run"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me || Some(pid) == skip {
            continue;
        }
        let Ok(mut f) = File::open(&path) else {
            continue;
        };
        if flock(&f, libc::LOCK_SH | libc::LOCK_NB) {
            // Nobody holds it: its run is gone.
            let _ = fs::remove_file(&path);
            continue;
        }
        let mut text = String::new();
        let _ = f.read_to_string(&mut text);
        match serde_json::from_str::<RunFile>(&text) {
            Ok(r) if job.is_some() && r.mpi_job.as_deref() == job => {}
            Ok(r) => out.push(r.run),
            Err(_) => out.push(OtherRun {
                pid,
                command: "unknown".into(),
                started: "unknown".into(),
            }),
        }
    }
    out.sort_by_key(|o| o.pid);
    out
}

/// Blocks until every other measurement running now has ended.
pub fn wait_for_others() {
    loop {
        let others = others();
        if others.is_empty() {
            return;
        }
        for o in others {
            if let Ok(f) = File::open(dir().join(format!("{}.run", o.pid))) {
                // A blocking shared lock returns when that run's exclusive lock goes.
                flock(&f, libc::LOCK_SH);
            }
        }
    }
}

/// One line describing another run, for warnings.
pub fn describe(o: &OtherRun) -> String {
    format!(
        "another numalab measurement was running at the same time (pid {}, started {}: {}); both runs' figures may be disturbed",
        o.pid, o.started, o.command
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run file held locked, as a live run holds its own.
    fn live(d: &std::path::Path, pid: u32, job: Option<&str>) -> File {
        let f = File::create(d.join(format!("{pid}.run"))).unwrap();
        assert!(flock(&f, libc::LOCK_EX | libc::LOCK_NB));
        let r = RunFile {
            run: OtherRun {
                pid,
                command: format!("numalab run {pid}"),
                started: "now".into(),
            },
            mpi_job: job.map(String::from),
        };
        (&f).write_all(serde_json::to_string(&r).unwrap().as_bytes())
            .unwrap();
        f
    }

    #[test]
    fn ranks_of_one_mpi_job_do_not_count_each_other_but_other_jobs_do() {
        let d = std::env::temp_dir().join(format!("numalab-runlock-test-{}", std::process::id()));
        fs::create_dir_all(&d).unwrap();
        let _a0 = live(&d, 4_000_001, Some("pmix:7"));
        let _a1 = live(&d, 4_000_002, Some("pmix:7"));
        let _b = live(&d, 4_000_003, Some("pmix:9"));
        let _plain = live(&d, 4_000_004, None);
        let pids = |job: Option<&str>, me: u32| -> Vec<u32> {
            others_in(&d, me, None, job).iter().map(|o| o.pid).collect()
        };
        // Rank 0 of job 7 sees job 9 and the plain run, not its sibling rank.
        assert_eq!(pids(Some("pmix:7"), 4_000_001), [4_000_003, 4_000_004]);
        // Job 9's rank sees both ranks of job 7.
        assert_eq!(
            pids(Some("pmix:9"), 4_000_003),
            [4_000_001, 4_000_002, 4_000_004]
        );
        // A run outside any job sees every other run.
        assert_eq!(pids(None, 4_000_004), [4_000_001, 4_000_002, 4_000_003]);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_job_is_read_from_pmix_open_mpi_or_slurm() {
        let from = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            mpi_job_from(&move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
        };
        assert_eq!(
            from(&[
                ("PMIX_NAMESPACE", "350093313"),
                ("OMPI_MCA_ess_base_jobid", "1")
            ])
            .as_deref(),
            Some("pmix:350093313")
        );
        assert_eq!(
            from(&[("OMPI_MCA_ess_base_jobid", "12")]).as_deref(),
            Some("ompi:12")
        );
        assert_eq!(
            from(&[("SLURM_JOB_ID", "5"), ("SLURM_STEP_ID", "0")]).as_deref(),
            Some("slurm:5.0")
        );
        assert_eq!(from(&[("SLURM_JOB_ID", "5")]), None);
        assert_eq!(from(&[("PMIX_NAMESPACE", " ")]), None);
    }
}
