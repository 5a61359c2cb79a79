//! Writing records: JSON (array of records), CSV (one row per statistic), and text tables.
//!
//! Files are written to a temporary name and renamed, so a failed or
//! interrupted run never leaves a partial file behind.

use crate::outpath::Target;
use crate::record::Record;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use crate::outpath::OutputError;

/// File formats chosen by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// A JSON array of records.
    Json,
    /// CSV, one row per statistic (or per record when it has none).
    Csv,
}

impl OutputFormat {
    /// Pick the format from the extension and check the directory exists; standard
    /// output (`-`, `/dev/stdout`) takes CSV when the name ends in .csv, else JSON.
    pub fn for_path(path: &Path) -> Result<OutputFormat, OutputError> {
        let bad = |why: String| OutputError::BadPath {
            path: path.display().to_string(),
            why,
        };
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase());
        if crate::outpath::target(path)? == Target::Stdout {
            return Ok(match ext.as_deref() {
                Some("csv") => OutputFormat::Csv,
                _ => OutputFormat::Json,
            });
        }
        let fmt = match ext {
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
        Ok(fmt)
    }
}

/// Check, before any work, that a file can be created at `path`: the temporary file that
/// [`write_atomic`] renames into place is created and removed at once. A path whose
/// directory exists but takes no new files (under /proc, read-only, no permission) fails
/// here as the user's input instead of after the measurement; so does a path that is no
/// regular file ([`crate::outpath::target`]). Standard output needs no check.
pub fn check_creatable(path: &Path) -> Result<(), OutputError> {
    match crate::outpath::target(path)? {
        Target::Stdout => Ok(()),
        Target::File(real) => creatable(&real).map_err(|(why, run_time)| match run_time {
            // A full disk is the machine's state, not the user's input: exit 1, still
            // before any work.
            true => OutputError::Io {
                path: path.display().to_string(),
                why,
            },
            false => OutputError::BadPath {
                path: path.display().to_string(),
                why,
            },
        }),
    }
}

/// Create and remove the temporary name beside the regular file `real`; why not, and
/// whether that is a run-time failure ([`crate::outpath::failed_at_run_time`]).
fn creatable(real: &Path) -> Result<(), (String, bool)> {
    let tmp = tmp_path(real);
    match std::fs::File::create_new(&tmp) {
        Ok(_) => {
            let _ = std::fs::remove_file(&tmp);
            Ok(())
        }
        Err(e) => {
            let dir = match real.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.display().to_string(),
                _ => ".".into(),
            };
            let run_time = crate::outpath::failed_at_run_time(&e);
            Err((format!("cannot create a file in '{dir}': {e}"), run_time))
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
/// results are never replaced without a word. A path that is no regular file is refused
/// ([`crate::outpath::target`]); standard output is written in place.
pub fn check_fresh(path: &Path, force: bool) -> Result<(), OutputError> {
    let Target::File(real) = crate::outpath::target(path)? else {
        return Ok(());
    };
    match std::fs::metadata(real) {
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

/// The last place records can go: standard output, only when it is a pipe, socket,
/// regular file or terminal (fstat says which) and takes every byte; /dev/null or
/// another device would swallow them.
fn to_stdout(text: &str) -> std::io::Result<()> {
    stdout_keeps()?;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Whether standard output is somewhere bytes are kept, or why not.
fn stdout_keeps() -> std::io::Result<()> {
    // SAFETY: fstat writes only into the zeroed struct we own; isatty only inspects fd 1.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(1, &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fmt = st.st_mode & libc::S_IFMT;
    let kept = matches!(fmt, libc::S_IFIFO | libc::S_IFREG | libc::S_IFSOCK)
        || (fmt == libc::S_IFCHR && unsafe { libc::isatty(1) } == 1);
    if kept {
        Ok(())
    } else {
        Err(std::io::Error::other(
            "a device that keeps nothing, not a file, pipe or terminal",
        ))
    }
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

/// Write bytes to a temporary file beside `path`, then rename it into place; standard
/// output (`-`, `/dev/stdout`) is written in place. A path that is no regular file is
/// refused here too ([`crate::outpath::target`]), so nothing else is ever renamed over.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let io = |e: std::io::Error| OutputError::Io {
        path: path.display().to_string(),
        why: e.to_string(),
    };
    let real = match crate::outpath::target(path)? {
        Target::Stdout => {
            let mut out = std::io::stdout().lock();
            return out.write_all(bytes).and_then(|_| out.flush()).map_err(io);
        }
        Target::File(real) => real,
    };
    let tmp = tmp_path(&real);
    let result = (|| {
        let mut f = std::fs::File::create_new(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &real)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(e));
    }
    Ok(())
}

/// A plain text table with a header row.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let (rows, notes) = footnoted(header, rows);
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::NOTHING);
    t.set_header(header.iter().map(|h| h.to_string()));
    for r in rows {
        t.add_row(r);
    }
    let mut s = t.to_string();
    for (i, n) in notes.iter().enumerate() {
        s.push_str(&format!("\nnote {}: {n}", i + 1));
    }
    s
}

/// The longest a table cell may be; a longer one is a note said under the table.
pub const MAX_CELL: usize = 100;

/// A headed table's rows with every cell longer than [`MAX_CELL`] characters replaced
/// by "see note K", and the notes, each said once (a key/value table, with no header,
/// keeps its values).
pub fn footnoted(header: &[&str], rows: &[Vec<String>]) -> (Vec<Vec<String>>, Vec<String>) {
    let mut notes: Vec<String> = Vec::new();
    if header.iter().all(|h| h.is_empty()) {
        return (rows.to_vec(), notes);
    }
    let rows = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| {
                    if c.chars().count() <= MAX_CELL {
                        return c.clone();
                    }
                    let k = match notes.iter().position(|n| n == c) {
                        Some(k) => k,
                        None => {
                            notes.push(c.clone());
                            notes.len() - 1
                        }
                    };
                    format!("see note {}", k + 1)
                })
                .collect()
        })
        .collect();
    (rows, notes)
}

/// Read numalab records from a JSON file (an array of records, or one record); the
/// error is one line naming the file and what it should hold.
pub fn read_records(path: &Path) -> Result<Vec<Record>, String> {
    let text = crate::outpath::read_input(path)?;
    if let Some(why) = not_records(&text) {
        return Err(format!("invalid file '{}': {why}", path.display()));
    }
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

/// What a file that cannot hold records is, when it can be told: empty, or a trace
/// whose header line was cut short (a trace with a whole header is read as a trace).
fn not_records(text: &str) -> Option<String> {
    let t = text.trim_start();
    if t.is_empty() {
        return Some(
            "it is empty: no records (give numalab records, -o FILE.json, or a trace)".into(),
        );
    }
    let head: String = t.chars().filter(|c| !c.is_whitespace()).take(40).collect();
    head.starts_with(r#"{"type":"header""#).then(|| {
        "a numalab trace cut short: its header line is incomplete, so there is nothing to report (record or monitor was killed as it began)".into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_cells_become_notes_each_said_once() {
        let long = "x".repeat(MAX_CELL + 1);
        let rows = vec![
            vec!["a".into(), long.clone()],
            vec!["b".into(), long.clone()],
            vec!["c".into(), "short".into()],
        ];
        let t = table(&["name", "how"], &rows);
        assert_eq!(t.matches("see note 1").count(), 2, "{t}");
        assert_eq!(t.matches(&long).count(), 1, "{t}");
        assert!(t.contains(&format!("note 1: {long}")), "{t}");
        assert!(t
            .lines()
            .all(|l| l.chars().count() <= MAX_CELL + 10 || l.starts_with("note ")));
        // A key/value table keeps its values.
        assert!(table(&["", ""], &rows).matches(&long).count() == 2);
    }
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
