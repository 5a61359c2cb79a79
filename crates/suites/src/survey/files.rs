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
    write_records(&dir.join("results.json"), records)?;
    write_records(&dir.join("results.csv"), records)?;
    let title = format!(
        "numalab survey of {}",
        records
            .first()
            .map(|r| r.provenance.hostname.as_str())
            .unwrap_or("?")
    );
    let html = if missing.is_empty() {
        registry::render(records, &title)
    } else {
        registry::render_partial(records, &title, missing)
    };
    write_atomic(&dir.join("report.html"), html.as_bytes())
}

/// The records of one input (a record file, a survey folder or its journal) and the
/// plan's steps it lacks. A folder's journal is read when results.json is missing or
/// older than it (a survey killed, or killed again while resumed).
pub fn read_input(path: &Path) -> Result<(Vec<Record>, Vec<String>), String> {
    let from_journal = |j: &Path| -> Result<(Vec<Record>, Vec<String>), String> {
        let journal = numalab_results::journal::read(j)?;
        Ok((journal.records(), super::journal::missing(&journal)))
    };
    if path.is_dir() {
        let j = path.join(numalab_results::journal::FILE_NAME);
        let r = path.join("results.json");
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        return match (modified(&j), modified(&r)) {
            (Some(tj), Some(tr)) if tr >= tj => Ok((read_records(&r)?, Vec::new())),
            (Some(_), _) => from_journal(&j),
            (None, Some(_)) => Ok((read_records(&r)?, Vec::new())),
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
    Ok((read_records(path)?, Vec::new()))
}
