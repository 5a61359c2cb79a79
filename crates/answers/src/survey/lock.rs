//! One writer per survey folder: the run writing it holds an exclusive `flock` on
//! `DIR/.numalab-survey.lock` (its pid inside) for as long as it runs, so a second
//! survey or `--resume` on the same folder is refused, naming the first, instead of
//! interleaving journal lines. The kernel drops the lock when the holder dies, even by
//! SIGKILL, so a killed survey's folder can be resumed at once. The holder removes the
//! file as it lets go (a finished survey's folder holds only its results); a newcomer
//! that locked the file just removed sees its path now names another file, or none,
//! and tries again on the one there. A cluster's folder is locked alike, in a file of
//! its own name.

use numalab_topo::Error;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The lock file's name in a survey folder.
pub const FILE_NAME: &str = ".numalab-survey.lock";

/// A held folder lock; dropping it removes the file and releases the lock (the
/// process ending releases it too, leaving the file).
#[derive(Debug)]
pub struct FolderLock {
    _file: File,
    path: PathBuf,
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        // Still held here: nobody else can be between taking it and writing.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether `file` is still the one at `path` (the holder before may have removed it).
fn still_there(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// A file of the survey folder that cannot be created or written: a run-time failure
/// (exit 1) when the disk is full or failing, else the folder is the user's mistake
/// (exit 2); either way the file is named.
pub fn cannot_write(dir: &Path, file: &str, e: std::io::Error) -> Error {
    let path = dir.join(file);
    if numalab_results::outpath::failed_at_run_time(&e) {
        Error::System(format!("cannot write '{}': {e}", path.display()))
    } else {
        Error::input(format!(
            "invalid output directory '{}': cannot create {file}: {e}",
            dir.display()
        ))
    }
}

/// Take the lock file `name` of the folder of a `what` run (survey, cluster), or say
/// which process holds it (a usage error, exit 2).
pub fn take_as(dir: &Path, name: &str, what: &str) -> Result<FolderLock, Error> {
    // The holder removes the file as it lets go; a lock on a removed file is tried again.
    for _ in 0..100 {
        if let Some(l) = try_take(dir, name, what)? {
            return Ok(l);
        }
    }
    Err(Error::input(format!(
        "output folder '{}': its {name} keeps changing; is another {what} starting there?",
        dir.display()
    )))
}

/// One try: the lock, None when the file locked was removed meanwhile, or who holds it.
fn try_take(dir: &Path, name: &str, what: &str) -> Result<Option<FolderLock>, Error> {
    let path = dir.join(name);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| cannot_write(dir, name, e))?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let mut pid = String::new();
        let _ = file.read_to_string(&mut pid);
        let who = match pid.trim() {
            "" => format!("another numalab {what}"),
            p => format!("another numalab {what} (pid {p})"),
        };
        return Err(Error::input(format!(
            "output folder '{}' is being written by {who}: wait for it to end, or give another folder with -o",
            dir.display()
        )));
    }
    if !still_there(&file, &path) {
        return Ok(None);
    }
    // Ours now: say who holds it, for the next one refused.
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = writeln!(file, "{}", std::process::id());
    Ok(Some(FolderLock { _file: file, path }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(dir: &Path) -> Result<FolderLock, Error> {
        take_as(dir, FILE_NAME, "survey")
    }

    #[test]
    fn a_second_writer_is_refused_naming_the_first_and_the_lock_goes_with_it() {
        let dir = std::env::temp_dir().join(format!("numalab-folder-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let first = take(&dir).unwrap();
        let e = take(&dir).unwrap_err().to_string();
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        assert!(e.contains("being written"), "{e}");
        drop(first);
        // Let go, the lock leaves no file behind.
        assert!(!dir.join(FILE_NAME).exists());
        let again = take(&dir).unwrap();
        assert!(dir.join(FILE_NAME).exists());
        drop(again);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
