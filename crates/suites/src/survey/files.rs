//! The survey's result files, derived from the journal's records: results.json,
//! results.csv and the self-contained report.html.

use crate::registry;
use numalab_results::output::write_atomic;
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
