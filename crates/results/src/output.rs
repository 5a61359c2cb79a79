//! Writing records: JSON (array of records), CSV (one row per statistic), and text tables.
//!
//! Files are written to a temporary name and renamed, so a failed or
//! interrupted run never leaves a partial file behind.

use crate::record::Record;
use std::io::Write;
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
    #[error("writing '{path}' failed: {why}; the {n} records are kept in '{rescued}'")]
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

/// File formats chosen by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// A JSON array of records.
    Json,
    /// CSV, one row per statistic (or per record when it has none).
    Csv,
}

impl OutputFormat {
    /// Pick the format from the extension and check the directory exists.
    pub fn for_path(path: &Path) -> Result<OutputFormat, OutputError> {
        let bad = |why: String| OutputError::BadPath {
            path: path.display().to_string(),
            why,
        };
        let fmt = match path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase())
        {
            Some(e) if e == "json" => OutputFormat::Json,
            Some(e) if e == "csv" => OutputFormat::Csv,
            _ => return Err(bad("the name must end in .json or .csv".into())),
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(bad(format!("directory '{}' does not exist", dir.display())));
        }
        if path.is_dir() {
            return Err(bad("it is a directory".into()));
        }
        Ok(fmt)
    }
}

/// Check, before any work, that a file can be created at `path`: the temporary file that
/// [`write_atomic`] renames into place is created and removed at once. A path whose
/// directory exists but takes no new files (under /proc, read-only, no permission) fails
/// here as the user's input instead of after the measurement.
pub fn check_creatable(path: &Path) -> Result<(), OutputError> {
    let tmp = tmp_path(path);
    match std::fs::File::create(&tmp) {
        Ok(_) => {
            let _ = std::fs::remove_file(&tmp);
            Ok(())
        }
        Err(e) => {
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.display().to_string(),
                _ => ".".into(),
            };
            Err(OutputError::BadPath {
                path: path.display().to_string(),
                why: format!("cannot create a file in '{dir}': {e}"),
            })
        }
    }
}

/// [`OutputFormat::for_path`] and [`check_creatable`]: what a command checks up front.
pub fn check_path(path: &Path) -> Result<OutputFormat, OutputError> {
    let fmt = OutputFormat::for_path(path)?;
    check_creatable(path)?;
    Ok(fmt)
}

/// Refuse, before any work, an output file that already holds something (unless `force`):
/// results are never replaced without a word.
pub fn check_fresh(path: &Path, force: bool) -> Result<(), OutputError> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() > 0 && !force => Err(OutputError::Exists {
            path: path.display().to_string(),
        }),
        _ => Ok(()),
    }
}

/// Keep records in a fallback file after `path` failed with `why`: the first place of
/// [`crate::rescue::places`] that takes them, else standard output when it is a file or
/// a pipe; the error names where they are, or says that keeping them failed too.
pub fn rescue(path: &Path, why: String, records: &[Record]) -> OutputError {
    let text = to_json(records);
    let kept = crate::rescue::keep(path, "json", |to| {
        let mut f = std::fs::File::create_new(to)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()
    });
    let rescued = match kept {
        Ok(to) => to.display().to_string(),
        Err(tried) => match to_stdout(&text) {
            Ok(()) => "standard output (after what was printed before)".to_string(),
            Err(e) => {
                return OutputError::Io {
                    path: path.display().to_string(),
                    why: format!("{why}; {tried}; and standard output: {e}"),
                }
            }
        },
    };
    OutputError::Rescued {
        path: path.display().to_string(),
        why,
        n: records.len(),
        rescued,
    }
}

/// The last place records can go: standard output, when it is no terminal.
fn to_stdout(text: &str) -> std::io::Result<()> {
    // SAFETY: isatty only inspects the descriptor.
    if unsafe { libc::isatty(1) } == 1 {
        return Err(std::io::Error::other("a terminal, not a file or pipe"));
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// The temporary name a file is written under before it is renamed to `path`.
fn tmp_path(path: &Path) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    PathBuf::from(tmp)
}

/// Records as a pretty JSON array.
pub fn to_json(records: &[Record]) -> String {
    serde_json::to_string_pretty(records).expect("records always serialise")
}

/// CSV columns, in order.
pub const CSV_HEADER: [&str; 16] = [
    "kind",
    "name",
    "metric",
    "unit",
    "n",
    "min",
    "p5",
    "median",
    "mean",
    "p95",
    "max",
    "stdev",
    "parameters",
    "placement",
    "host",
    "timestamp",
];

/// Records as CSV: one row per statistic; records without statistics get one row.
pub fn to_csv(records: &[Record]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_HEADER).expect("in-memory write");
    for r in records {
        let common = |metric: &str, unit: &str, nums: [String; 8]| {
            let mut row = vec![r.kind.clone(), r.name.clone(), metric.into(), unit.into()];
            row.extend(nums);
            row.push(r.parameters.to_string());
            row.push(
                r.placement
                    .as_ref()
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
            );
            row.push(r.provenance.hostname.clone());
            row.push(r.provenance.timestamp.clone());
            row
        };
        if r.stats.is_empty() {
            w.write_record(common("", "", Default::default()))
                .expect("in-memory write");
        }
        for s in &r.stats {
            let m = &s.summary;
            let nums = [
                m.n.to_string(),
                m.min.to_string(),
                m.p5.to_string(),
                m.median.to_string(),
                m.mean.to_string(),
                m.p95.to_string(),
                m.max.to_string(),
                m.stdev.to_string(),
            ];
            w.write_record(common(&s.metric, &s.unit, nums))
                .expect("in-memory write");
        }
    }
    String::from_utf8(w.into_inner().expect("in-memory flush")).expect("CSV of UTF-8 strings")
}

/// Write records to `path` in the format its extension names, atomically. If it cannot
/// be written (disk full, folder removed, permission), the records are kept in a
/// fallback file and the error names it ([`rescue`]).
pub fn write_records(path: &Path, records: &[Record]) -> Result<(), OutputError> {
    let written = OutputFormat::for_path(path).and_then(|f| {
        let text = match f {
            OutputFormat::Json => to_json(records),
            OutputFormat::Csv => to_csv(records),
        };
        write_atomic(path, text.as_bytes())
    });
    match written {
        Err(OutputError::Io { why, .. }) => Err(rescue(path, why, records)),
        Err(OutputError::BadPath { why, .. }) => Err(rescue(path, why, records)),
        other => other,
    }
}

/// Write bytes to a temporary file beside `path`, then rename it into place.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let io = |e: std::io::Error| OutputError::Io {
        path: path.display().to_string(),
        why: e.to_string(),
    };
    let tmp = tmp_path(path);
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    Ok(())
}

/// A plain text table with a header row.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::NOTHING);
    t.set_header(header.iter().map(|h| h.to_string()));
    for r in rows {
        t.add_row(r.clone());
    }
    t.to_string()
}

/// Read numalab records from a JSON file (an array of records, or one record); the
/// error is one line naming the file and what it should hold.
pub fn read_records(path: &Path) -> Result<Vec<Record>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "invalid file '{}': not JSON ({e}); give numalab records (-o FILE.json)",
            path.display()
        )
    })?;
    let v = if v.is_array() {
        v
    } else {
        serde_json::Value::Array(vec![v])
    };
    let records: Vec<Record> = serde_json::from_value(v).map_err(|e| {
        format!(
            "invalid file '{}': not numalab records ({e})",
            path.display()
        )
    })?;
    // A schema this numalab does not know may mean fields it would misread: refused,
    // naming the one it reads.
    match records
        .iter()
        .find(|r| r.schema != crate::record::SCHEMA_ID)
    {
        Some(r) => Err(format!(
            "invalid file '{}': its records are schema '{}', this numalab reads '{}'",
            path.display(),
            r.schema,
            crate::record::SCHEMA_ID
        )),
        None => Ok(records),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::Provenance;

    fn rec() -> Record {
        let mut r = Record::new(
            "test",
            "synthetic",
            Provenance::collect("1 node", "this machine"),
            serde_json::json!({"size": 64}),
        );
        r.add_samples("latency", "ns", &[1.0, 2.0, 3.0]);
        r.add_samples("bandwidth", "GB/s", &[10.0]);
        r
    }

    #[test]
    fn csv_has_a_row_per_stat() {
        let csv = to_csv(&[rec()]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("kind,name,metric,unit,n,min"));
        assert!(lines[1].starts_with("test,synthetic,latency,ns,3,1,"));
    }

    #[test]
    fn paths_are_checked_before_writing() {
        assert!(OutputFormat::for_path(Path::new("x.txt")).is_err());
        assert!(OutputFormat::for_path(Path::new("/no/such/dir/x.json")).is_err());
        assert_eq!(
            OutputFormat::for_path(Path::new("x.CSV")).unwrap(),
            OutputFormat::Csv
        );
    }

    #[test]
    fn uncreatable_paths_are_the_users_input() {
        // /proc exists as a directory but takes no new files.
        let e = check_path(Path::new("/proc/numalab-out.json")).unwrap_err();
        assert!(matches!(e, OutputError::BadPath { .. }), "{e}");
        assert!(
            e.to_string().contains("cannot create a file in '/proc'"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("numalab-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.json");
        assert_eq!(check_path(&p).unwrap(), OutputFormat::Json);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "the trial file is gone"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_write_keeps_the_records_in_a_named_file() {
        let dir = std::env::temp_dir().join(format!("numalab-gone-{}", std::process::id()));
        let p = dir.join("r.json");
        let e = write_records(&p, &[rec(), rec()]).unwrap_err();
        let OutputError::Rescued { rescued, n, .. } = &e else {
            panic!("not rescued: {e}");
        };
        assert_eq!(*n, 2);
        let msg = e.to_string();
        assert!(msg.contains(&p.display().to_string()) && msg.contains(rescued.as_str()));
        assert_eq!(msg.lines().count(), 1);
        let back: Vec<Record> =
            serde_json::from_str(&std::fs::read_to_string(rescued).unwrap()).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].stats, rec().stats);
        // A second failure in the same second gets its own file.
        let e2 = write_records(&p, &[rec()]).unwrap_err();
        let OutputError::Rescued { rescued: r2, .. } = &e2 else {
            panic!("not rescued: {e2}");
        };
        assert_ne!(r2, rescued);
        std::fs::remove_file(rescued).unwrap();
        std::fs::remove_file(r2).unwrap();
    }

    #[test]
    fn existing_output_is_refused_unless_forced() {
        let dir = std::env::temp_dir().join(format!("numalab-fresh-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.json");
        assert!(check_fresh(&p, false).is_ok());
        std::fs::write(&p, "").unwrap();
        assert!(
            check_fresh(&p, false).is_ok(),
            "an empty file holds nothing"
        );
        std::fs::write(&p, "[]").unwrap();
        let e = check_fresh(&p, false).unwrap_err().to_string();
        assert!(e.contains("r.json") && e.contains("--force"), "{e}");
        assert!(check_fresh(&p, true).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn atomic_write_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!("numalab-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.json");
        write_records(&p, &[rec()]).unwrap();
        let back: Vec<Record> =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
