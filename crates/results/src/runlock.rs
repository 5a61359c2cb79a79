//! Other numalab measurements running on this machine at the same time.
//!
//! Two measurements at once disturb each other's figures, so every measuring
//! run registers a file in a folder shared by all users and holds an exclusive
//! `flock` on it for as long as it lives. A run that finds another's file locked
//! knows that run is measuring now, warns, and records it in its provenance; a
//! file whose lock is free belonged to a run that died (even by SIGKILL, since
//! the kernel drops the lock with the process) and is removed.

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

/// This run's registration; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct Registration {
    _file: File,
    path: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
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

fn parent() -> Option<u32> {
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
        fs::create_dir_all(&d)?;
        // Shared by every user, like /tmp itself (sticky: each removes only its own).
        let _ = fs::set_permissions(&d, fs::Permissions::from_mode(0o1777));
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
    let me = OtherRun {
        pid,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        started: started.into(),
    };
    file.write_all(serde_json::to_string(&me).unwrap_or_default().as_bytes())?;
    file.flush()?;
    fs::rename(&tmp, &path)?;
    // Children (survey steps, MPI ranks) belong to this run.
    std::env::set_var(PARENT_ENV, pid.to_string());
    Ok(Some(Registration { _file: file, path }))
}

/// The other measurements running now (not this process, nor the run it belongs
/// to); files left by runs that died are removed on the way.
pub fn others() -> Vec<OtherRun> {
    let me = std::process::id();
    let skip = parent();
    let Ok(entries) = fs::read_dir(dir()) else {
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
        out.push(serde_json::from_str(&text).unwrap_or(OtherRun {
            pid,
            command: "unknown".into(),
            started: "unknown".into(),
        }));
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
