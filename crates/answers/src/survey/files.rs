//! The survey's result files, derived from the journal's records: results.json,
//! results.csv and the self-contained report.html.

use crate::registry;
use numalab_results::output::{read_records, write_atomic};
use numalab_results::{write_records, OutputError, Record};
use std::path::Path;

/// Write the three files into `dir`; `missing` lists the steps not measured (the report
/// names them first). A results file that cannot be written leaves its records in a
/// fallback file that the error names.
pub fn write_all(dir: &Path, records: &[Record], missing: &[String]) -> Result<(), OutputError> {
    let title = format!(
        "numalab survey of {}",
        records
            .first()
            .map(|r| r.provenance.hostname.as_str())
            .unwrap_or("?")
    );
    write_titled(dir, records, missing, &title)
}

/// [`write_all`] with the report's title (the cluster's folder is written alike).
pub fn write_titled(
    dir: &Path,
    records: &[Record],
    missing: &[String],
    title: &str,
) -> Result<(), OutputError> {
    write_records(&dir.join("results.json"), records)?;
    write_records(&dir.join("results.csv"), records)?;
    let html = if missing.is_empty() {
        registry::render(records, title)
    } else {
        registry::render_partial(records, title, missing)
    };
    write_atomic(&dir.join("report.html"), html.as_bytes())
}

/// What one input holds.
#[derive(Debug, Default)]
pub struct Input {
    /// Its records.
    pub records: Vec<Record>,
    /// The plan's steps it lacks, in words.
    pub missing: Vec<String>,
    /// What the reader should know about how it was read (one line each).
    pub notes: Vec<String>,
}

/// A survey's journal, followed into the fallback journal it continued in when it could
/// no longer be written there; damaged lines are skipped and named.
fn from_journal(path: &Path) -> Result<Input, String> {
    let mut j = numalab_results::journal::read(path)?;
    let mut notes = Vec::new();
    if let Some((to, c)) = numalab_results::journal::continuation(path) {
        if c.entries.len() >= j.entries.len() {
            notes.push(format!(
                "the journal '{}' could not be written to its end; it continues in '{}', read from there",
                path.display(),
                to.display()
            ));
            j = c;
        }
    }
    notes.extend(
        j.damage_note()
            .map(|n| format!("'{}': {n}", path.display())),
    );
    Ok(Input {
        records: j.records(),
        missing: super::journal::missing(&j),
        notes,
    })
}

/// Records from a record file, all of them finished.
fn from_records(path: &Path) -> Result<Input, String> {
    Ok(Input {
        records: read_records(path)?,
        ..Input::default()
    })
}

/// The records of one input (a record file, a survey folder or its journal) and the
/// plan's steps it lacks ([`read_one`] without its notes).
pub fn read_input(path: &Path) -> Result<(Vec<Record>, Vec<String>), String> {
    read_one(path).map(|i| (i.records, i.missing))
}

/// What one input holds (a record file, a survey folder or its journal). A folder's
/// journal is read when results.json is missing or older than it (a survey killed, or
/// killed again while resumed).
pub fn read_one(path: &Path) -> Result<Input, String> {
    if path.is_dir() {
        let j = path.join(numalab_results::journal::FILE_NAME);
        let r = path.join("results.json");
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        return match (modified(&j), modified(&r)) {
            (Some(tj), Some(tr)) if tr >= tj => from_records(&r),
            (Some(_), _) => from_journal(&j),
            (None, Some(_)) => from_records(&r),
            (None, None) => Err(format!(
                "invalid folder '{}': it holds no results.json or {} (give a survey's folder or record files)",
                path.display(),
                numalab_results::journal::FILE_NAME
            )),
        };
    }
    if path.extension().is_some_and(|e| e == "jsonl") {
        return from_journal(path);
    }
    from_records(path)
}

/// Every input's records, missing steps and notes, in order; files that hold no record
/// at all are refused (there is nothing to report).
pub fn read_inputs(paths: &[std::path::PathBuf]) -> Result<Input, String> {
    let mut all = Input::default();
    for p in paths {
        let one = read_one(p)?;
        all.records.extend(one.records);
        all.missing.extend(one.missing);
        all.notes.extend(one.notes);
    }
    if !all.records.is_empty() {
        return Ok(all);
    }
    let names: Vec<String> = paths.iter().map(|p| format!("'{}'", p.display())).collect();
    let lacking = match all.missing.len() {
        0 => String::new(),
        1 => " (1 planned step not measured)".to_string(),
        n => format!(" ({n} planned steps not measured)"),
    };
    let hold = if names.len() == 1 { "holds" } else { "hold" };
    Err(format!(
        "nothing to report: {} {hold} no records{lacking}",
        names.join(", ")
    ))
}
