//! What a job of many configurations (an MPI suite) finished before it died: rank 0
//! appends each configuration's records as one line to the file the launcher names in
//! [`VAR`], written and fsync'd as it ends; when the job fails (a rank killed, the
//! overall limit), the launcher writes or rescues them. One line per configuration; a
//! line cut short is the configuration that was running.

use crate::record::Record;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The environment variable naming the file, set by the launcher for its ranks.
pub const VAR: &str = "NUMALAB_PARTIAL";

/// Where this launcher asks its ranks to keep finished configurations.
pub fn path_for_launcher() -> PathBuf {
    std::env::temp_dir().join(format!("numalab-partial-{}.jsonl", std::process::id()))
}

/// A rank's end: appends the finished configurations it holds records of to the file
/// [`VAR`] names (nothing when it names none, as under a user's own mpirun).
#[derive(Default)]
pub struct Sink {
    file: Option<File>,
}

impl Sink {
    /// The file the launcher asked for, opened to append: each line is one write, so
    /// ranks that hold records of their own may share it.
    pub fn from_env() -> Sink {
        let file = std::env::var_os(VAR).and_then(|p| {
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(p)
                .ok()
        });
        Sink { file }
    }

    /// Keep one finished configuration's records. A failed write stops the keeping,
    /// never the job: the records still reach the output when the job ends.
    pub fn add(&mut self, records: &[Record]) {
        let Some(f) = self.file.as_mut().filter(|_| !records.is_empty()) else {
            return;
        };
        let mut line = serde_json::to_string(records).expect("records serialise");
        line.push('\n');
        if f.write_all(line.as_bytes())
            .and_then(|_| f.sync_data())
            .is_err()
        {
            self.file = None;
        }
    }
}

/// The job's records were emitted (written, or rescued by the writer): there is nothing
/// left for the launcher to keep, whatever status the job ends with.
pub fn delivered() {
    if let Some(p) = std::env::var_os(VAR) {
        let _ = std::fs::remove_file(p);
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
        let rec = |n: &str| {
            Record::new(
                "t",
                n,
                Provenance::collect("1 node", "this machine"),
                serde_json::json!({}),
            )
        };
        let mut s = Sink {
            file: Some(File::create(&p).unwrap()),
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
}
