//! The one rule for every path numalab writes or reads (records, Mess CSV, hwloc XML,
//! traces, reports, journals, survey files).
//!
//! Outputs: an existing file that is not a regular one (a device, FIFO, socket or
//! directory, or a symbolic link to one) is never renamed over, truncated or removed: it
//! is refused, except `-` and a path that is this process's standard output (such as
//! `/dev/stdout`), which are written in place. A symbolic link to a regular file is
//! written through: the file it points to is replaced, the link stays. Two outputs of
//! one command naming one file, or an output naming an input, are refused.
//!
//! Inputs: only regular files (or symbolic links to one) are read, never opened before
//! their type is known (a FIFO would block the open, a device could stream forever),
//! and never more than [`INPUT_LIMIT`] bytes.

use std::fs::Metadata;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Output problems; `BadPath` is the user's input.
#[derive(Debug, Error)]
pub enum OutputError {
    /// An output path numalab cannot write to (bad extension, missing directory).
    #[error("invalid output file '{path}': {why}")]
    BadPath {
        /// The path given.
        path: String,
        /// What is wrong and what would be valid.
        why: String,
    },
    /// Writing failed.
    #[error("writing '{path}' failed: {why}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        why: String,
    },
    /// Writing failed, and the records were kept in a fallback file instead.
    #[error("writing '{path}' failed: {why}; the {} kept in '{rescued}'", crate::words::count_are(*n as u64, "record"))]
    Rescued {
        /// The path that could not be written.
        path: String,
        /// The OS error.
        why: String,
        /// How many records the fallback file holds.
        n: usize,
        /// The fallback file.
        rescued: String,
    },
    /// The output already holds results and `--force` was not given.
    #[error("'{path}' already holds results: add --force to replace them, or give another name")]
    Exists {
        /// The path given.
        path: String,
    },
}

/// Whether a failed write is the machine's state at run time (a full disk or quota, an
/// I/O error: exit 1) rather than a place the user should not have named (exit 2).
pub fn failed_at_run_time(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC | libc::EDQUOT | libc::EIO | libc::EFBIG)
    )
}

/// The most bytes numalab reads from one input file (1 GiB).
pub const INPUT_LIMIT: u64 = 1 << 30;

/// Where the bytes of an output go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// This process's standard output, written in place.
    Stdout,
    /// A regular file (or none yet) at this path, a symbolic link resolved.
    File(PathBuf),
}

/// What a non-regular file is, in words ("a FIFO").
pub fn kind(m: &Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a regular file"
    }
}

/// This process's standard output's device and inode, when it has one.
fn stdout_id() -> Option<(u64, u64)> {
    // SAFETY: fstat writes only into the zeroed struct we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(1, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
}

/// True when `m` is the file this process's standard output is.
fn is_stdout(m: &Metadata) -> bool {
    stdout_id() == Some((m.dev(), m.ino()))
}

/// Where writing `path` goes, or why it must not be written: see the module's rule.
pub fn target(path: &Path) -> Result<Target, OutputError> {
    let bad = |why: String| OutputError::BadPath {
        path: path.display().to_string(),
        why,
    };
    if path.as_os_str() == "-" {
        return Ok(Target::Stdout);
    }
    let link = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Target::File(path.to_path_buf()))
        }
        Err(e) => return Err(bad(format!("cannot inspect it: {e}"))),
    };
    let via = if link.file_type().is_symlink() {
        "a symbolic link to "
    } else {
        ""
    };
    let m = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            return Err(bad(format!(
                "it is a symbolic link that leads nowhere ({e})"
            )))
        }
    };
    if is_stdout(&m) {
        return Ok(Target::Stdout);
    }
    if !m.is_file() {
        return Err(bad(format!(
            "it is {via}{}: numalab writes only regular files (or '-' for standard output), and never replaces anything else",
            kind(&m)
        )));
    }
    match via {
        "" => Ok(Target::File(path.to_path_buf())),
        _ => std::fs::canonicalize(path)
            .map(Target::File)
            .map_err(|e| bad(format!("cannot follow its symbolic link: {e}"))),
    }
}

/// What identifies a file: its device and inode when it exists, else its absolute path.
#[derive(Debug, PartialEq, Eq)]
enum Key {
    Inode(u64, u64),
    Path(PathBuf),
}

fn key(p: &Path) -> Key {
    if p.as_os_str() == "-" {
        return stdout_id().map_or(Key::Path("-".into()), |(d, i)| Key::Inode(d, i));
    }
    if let Ok(m) = std::fs::metadata(p) {
        return Key::Inode(m.dev(), m.ino());
    }
    let name = p.file_name().map(PathBuf::from).unwrap_or_default();
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
    Key::Path(dir.join(name))
}

/// Refuse, before any work, two outputs naming one file or an output naming an input.
/// `outputs` pairs each path with the option that named it ("-o", "--mess-csv").
pub fn check_distinct(outputs: &[(&str, &Path)], inputs: &[&Path]) -> Result<(), OutputError> {
    for (i, (opt, p)) in outputs.iter().enumerate() {
        let k = key(p);
        let bad = |why: String| OutputError::BadPath {
            path: p.display().to_string(),
            why,
        };
        if let Some((o2, p2)) = outputs[..i].iter().find(|(_, q)| key(q) == k) {
            return Err(bad(format!(
                "{opt} names the same file as {o2} '{}': each output needs its own file",
                p2.display()
            )));
        }
        if let Some(inp) = inputs.iter().find(|q| key(q) == k) {
            return Err(bad(format!(
                "{opt} names the input '{}': an output never replaces what the command reads; give another name",
                inp.display()
            )));
        }
    }
    Ok(())
}

/// Why an input cannot be read; shown as one line naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The path given.
    pub path: String,
    /// What is wrong, without the path ("it is a directory, not a regular file").
    pub why: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid input '{}': {}", self.path, self.why)
    }
}

impl From<InputError> for String {
    fn from(e: InputError) -> String {
        e.to_string()
    }
}

/// Refuse, before opening it, an input that is not a regular file (or a link to one),
/// or that is larger than [`INPUT_LIMIT`].
pub fn check_input(path: &Path) -> Result<Metadata, InputError> {
    let err = |why: String| InputError {
        path: path.display().to_string(),
        why,
    };
    let m = std::fs::metadata(path).map_err(|e| err(format!("cannot read it: {e}")))?;
    if !m.is_file() {
        return Err(err(format!("it is {}, not a regular file", kind(&m))));
    }
    if m.len() > INPUT_LIMIT {
        return Err(err(too_big()));
    }
    Ok(m)
}

fn too_big() -> String {
    format!(
        "larger than the {} GiB numalab reads from one file",
        INPUT_LIMIT >> 30
    )
}

/// Read an input as bytes after [`check_input`], never more than [`INPUT_LIMIT`].
pub fn read_input_bytes(path: &Path) -> Result<Vec<u8>, InputError> {
    check_input(path)?;
    let err = |why: String| InputError {
        path: path.display().to_string(),
        why,
    };
    let f = std::fs::File::open(path).map_err(|e| err(format!("cannot read it: {e}")))?;
    let mut buf = Vec::new();
    f.take(INPUT_LIMIT + 1)
        .read_to_end(&mut buf)
        .map_err(|e| err(format!("cannot read it: {e}")))?;
    if buf.len() as u64 > INPUT_LIMIT {
        return Err(err(too_big()));
    }
    Ok(buf)
}

/// Read an input as UTF-8 text after [`check_input`], never more than [`INPUT_LIMIT`].
pub fn read_input(path: &Path) -> Result<String, InputError> {
    String::from_utf8(read_input_bytes(path)?).map_err(|_| InputError {
        path: path.display().to_string(),
        why: "not UTF-8 text".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("numalab-outpath-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn directories_fifos_and_links_to_them_are_refused() {
        let d = dir("kinds");
        let fifo = d.join("f.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = target(&fifo).unwrap_err().to_string();
        assert!(e.contains("a FIFO") && e.contains("f.json"), "{e}");
        let e = target(&d).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        let link = d.join("l.json");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let e = target(&link).unwrap_err().to_string();
        assert!(e.contains("a symbolic link to a FIFO"), "{e}");
        let e = check_input(&fifo).unwrap_err().to_string();
        assert!(
            e.contains("a FIFO") && e.contains("not a regular file"),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_link_to_a_file_is_written_through() {
        let d = dir("link");
        let real = d.join("real.json");
        std::fs::write(&real, "[]").unwrap();
        let link = d.join("l.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let want = std::fs::canonicalize(&real).unwrap();
        assert_eq!(target(&link).unwrap(), Target::File(want));
        let e = crate::output::check_fresh(&link, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("l.json") && e.contains("--force"), "{e}");
        let dangling = d.join("gone.json");
        std::os::unix::fs::symlink(d.join("nothing"), &dangling).unwrap();
        assert!(target(&dangling)
            .unwrap_err()
            .to_string()
            .contains("leads nowhere"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn one_file_named_twice_is_refused() {
        let d = dir("same");
        let a = d.join("a.json");
        let dot = d.join(".").join("a.json");
        let e = check_distinct(&[("--mess-csv", &a), ("-o", &dot)], &[]).unwrap_err();
        assert!(e.to_string().contains("same file as --mess-csv"), "{e}");
        std::fs::write(&a, "[]").unwrap();
        let e = check_distinct(&[("-o", &dot)], &[&a]).unwrap_err();
        assert!(e.to_string().contains("names the input"), "{e}");
        assert!(check_distinct(&[("-o", &d.join("b.json"))], &[&a]).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
