//! What a job of many configurations (an MPI suite) finished before it died: rank 0
//! appends each configuration's records as one line to the file the launcher names in
//! [`VAR`], written and fsync'd as it ends; when the job fails (a rank killed, the
//! overall limit), the launcher writes or rescues them. One line per configuration; a
//! line cut short is the configuration that was running.
//!
//! Across hosts the file is the launcher's, in its `$TMPDIR`, which a rank on another
//! host does not see (each host has a `/tmp` of its own). The launcher creates the file
//! before the job starts and sets [`ON_STDOUT_VAR`]: a rank that finds the file appends
//! to it (this host, or a folder the hosts share), and one that does not sends each
//! line on its stdout behind a mark. The launcher already reads the job's stdout (every
//! launcher forwards the ranks' stdout to it): a [`Collector`] appends the marked lines
//! to the file and keeps them from the user's output.

use crate::record::Record;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The environment variable naming the file, set by the launcher for its ranks.
pub const VAR: &str = "NUMALAB_PARTIAL";

/// Set by the launcher beside [`VAR`]: a rank that cannot open the file (it runs on
/// another host) sends each finished configuration on its stdout as a marked line.
pub const ON_STDOUT_VAR: &str = "NUMALAB_PARTIAL_ON_STDOUT";

/// The mark before a finished configuration's records on a rank's stdout.
const MARK: &str = "\x1enumalab-kept ";
/// The line a rank sends on its stdout once the job's records were emitted.
const DELIVERED: &str = "\x1enumalab-delivered";

/// Where this launcher asks its ranks to keep finished configurations.
pub fn path_for_launcher() -> PathBuf {
    std::env::temp_dir().join(format!("numalab-partial-{}.jsonl", std::process::id()))
}

/// The launcher's side before its job starts: the file at `path` created empty and
/// named to the ranks ([`VAR`]), with leave to send lines on stdout ([`ON_STDOUT_VAR`]).
pub fn prepare_for_ranks(path: &Path) {
    let _ = File::create(path);
    std::env::set_var(VAR, path);
    std::env::set_var(ON_STDOUT_VAR, "1");
}

/// Where a rank's finished configurations go.
enum To {
    File(File),
    Stdout,
}

/// A rank's end: appends the finished configurations it holds records of to the file
/// [`VAR`] names (nothing when it names none, as under a user's own mpirun).
#[derive(Default)]
pub struct Sink {
    to: Option<To>,
}

impl Sink {
    /// The file the launcher asked for, opened to append: each line is one write, so
    /// ranks that hold records of their own may share it. Where the launcher allows it
    /// and the file is not here, stdout (see the module's text).
    pub fn from_env() -> Sink {
        let on_stdout = std::env::var_os(ON_STDOUT_VAR).is_some();
        let to = std::env::var_os(VAR).and_then(|p| {
            let file = std::fs::OpenOptions::new()
                .append(true)
                .create(!on_stdout)
                .open(p);
            match file {
                Ok(f) => Some(To::File(f)),
                Err(_) => on_stdout.then_some(To::Stdout),
            }
        });
        Sink { to }
    }

    /// Keep one finished configuration's records. A failed write stops the keeping,
    /// never the job: the records still reach the output when the job ends.
    pub fn add(&mut self, records: &[Record]) {
        let Some(to) = self.to.as_mut().filter(|_| !records.is_empty()) else {
            return;
        };
        let json = serde_json::to_string(records).expect("records serialise");
        let written = match to {
            To::File(f) => f
                .write_all(format!("{json}\n").as_bytes())
                .and_then(|_| f.sync_data()),
            To::Stdout => say(&marked(&json)),
        };
        if written.is_err() {
            self.to = None;
        }
    }
}

/// A finished configuration's records (JSON) as a rank sends them on its stdout.
fn marked(json: &str) -> String {
    format!("{MARK}{json}")
}

/// One line on stdout, written whole and flushed.
fn say(line: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(format!("{line}\n").as_bytes())
        .and_then(|_| out.flush())
}

/// The job's records were emitted (written, or rescued by the writer): there is nothing
/// left for the launcher to keep, whatever status the job ends with.
pub fn delivered() {
    let Some(p) = std::env::var_os(VAR) else {
        return;
    };
    let here = std::fs::remove_file(p).is_ok();
    if !here && std::env::var_os(ON_STDOUT_VAR).is_some() {
        let _ = say(DELIVERED);
    }
}

/// The launcher's side of the ranks' stdout: marked lines go to the file, never to the
/// user.
#[derive(Debug, Default)]
pub struct Collector {
    /// The launcher's file (None: this process launched no job that keeps).
    path: Option<PathBuf>,
}

impl Collector {
    /// The file this launcher prepared ([`prepare_for_ranks`]), if it did.
    pub fn from_env() -> Collector {
        let path = std::env::var_os(ON_STDOUT_VAR)
            .and(std::env::var_os(VAR))
            .map(PathBuf::from);
        Collector { path }
    }

    /// A collector appending to `path` (for tests).
    pub fn to(path: &Path) -> Collector {
        Collector {
            path: Some(path.to_path_buf()),
        }
    }

    /// Whether `line` (a whole line, without its newline) was a rank's marked line,
    /// now handled: a finished configuration appended to the file, or the job's
    /// records delivered (the file removed, so nothing is kept twice). A line that
    /// comes after the delivery, or with no file, is dropped.
    pub fn take(&self, line: &[u8]) -> bool {
        if line == DELIVERED.as_bytes() {
            if let Some(p) = &self.path {
                let _ = std::fs::remove_file(p);
            }
            return true;
        }
        let Some(json) = line.strip_prefix(MARK.as_bytes()) else {
            return false;
        };
        let file = self
            .path
            .as_ref()
            .and_then(|p| std::fs::OpenOptions::new().append(true).open(p).ok());
        if let Some(mut f) = file {
            let _ = f.write_all(&[json, b"\n"].concat());
        }
        true
    }

    /// Whether `text` (the end of the stream, cut short) began as a marked line (its
    /// first byte is the mark's record separator, which no text of numalab's starts
    /// with): a configuration cut off, dropped.
    pub fn is_marked(text: &[u8]) -> bool {
        text.first() == MARK.as_bytes().first()
    }
}

/// The configurations a job kept, in order; a last line cut short is dropped.
pub fn read(path: &Path) -> Vec<Vec<Record>> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .map_while(|l| serde_json::from_str(l.trim_end()).ok())
        .collect()
}

/// After a job that failed: the configurations it finished, written to `output` (or,
/// without one, kept in a fallback file); one line saying how many and where, or None
/// when none finished. The partial file is removed.
pub fn salvage(path: &Path, output: Option<&Path>, total: Option<usize>) -> Option<String> {
    let kept = read(path);
    let _ = std::fs::remove_file(path);
    if kept.is_empty() {
        return None;
    }
    let n = kept.len();
    let records: Vec<Record> = kept.concat();
    let held = match output {
        Some(o) => match crate::output::write_records(o, &records) {
            Ok(()) => format!("written to '{}'", o.display()),
            Err(e) => format!("not written: {e}"),
        },
        None => {
            let json = crate::output::to_json(&records);
            let here = std::path::absolute("records.json").unwrap_or_default();
            match crate::rescue::keep(&here, "json", |to| std::fs::write(to, &json)) {
                Ok(to) => format!("kept in '{}'", to.display()),
                Err(why) => format!("lost: {why}"),
            }
        }
    };
    let of = total.map_or(String::new(), |t| format!(" of {t}"));
    Some(format!(
        "the job ended early: {n}{of} {} had finished; their {} {held}",
        crate::words::noun(total.unwrap_or(n) as u64, "configuration"),
        crate::words::count_are(records.len() as u64, "record")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::Provenance;

    #[test]
    fn kept_configurations_read_back_without_a_cut_line() {
        let p = std::env::temp_dir().join(format!("numalab-partial-test-{}", std::process::id()));
        let mut s = Sink {
            to: Some(To::File(File::create(&p).unwrap())),
        };
        s.add(&[rec("a"), rec("b")]);
        s.add(&[rec("c")]);
        drop(s);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"[{\"kind\":").unwrap();
        let back = read(&p);
        assert_eq!(back.len(), 2);
        assert_eq!(back[0][1].name, "b");
        std::fs::remove_file(&p).unwrap();
    }

    fn rec(name: &str) -> Record {
        Record::new(
            "t",
            name,
            Provenance::collect("1 node", "this machine"),
            serde_json::json!({}),
        )
    }

    #[test]
    fn marked_lines_from_another_host_are_kept_and_other_lines_pass() {
        let p = std::env::temp_dir().join(format!("numalab-collect-test-{}", std::process::id()));
        File::create(&p).unwrap();
        let c = Collector::to(&p);
        let json = serde_json::to_string(&[rec("a"), rec("b")]).unwrap();
        assert!(c.take(marked(&json).as_bytes()));
        assert!(!c.take(b"  size  median"));
        assert!(!c.take(b""));
        let back = read(&p);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0][1].name, "b");
        // A line cut off at the end of the stream is known by its mark.
        assert!(Collector::is_marked(&marked(&json).as_bytes()[..9]));
        assert!(!Collector::is_marked(b"[{\"kind\""));
        // Delivered: the file goes, and a line after it is dropped, not kept again.
        assert!(c.take(DELIVERED.as_bytes()));
        assert!(!p.exists());
        assert!(c.take(marked(&json).as_bytes()));
        assert!(!p.exists());
    }

    #[test]
    fn without_the_launchers_file_a_collector_drops_marked_lines() {
        let c = Collector::default();
        assert!(c.take(marked("[]").as_bytes()));
        assert!(!c.take(b"numalab-kept is only marked with its separator"));
    }
}
