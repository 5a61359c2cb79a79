//! `numalab report` (HTML from saved records) and `numalab compare` (two runs side by side).

use crate::common::{bad, CliError};
use clap::Args;
use numalab_answers::registry;
use numalab_results::outpath::{self, check_distinct};
use numalab_results::output::{check_creatable, check_fresh, table, write_atomic};
use numalab_results::{compare, Record};
use std::path::{Path, PathBuf};

/// Arguments of `numalab report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Record files (JSON, as written by -o FILE.json or survey's results.json), a
    /// survey's folder or journal.jsonl (an interrupted survey: what it finished, and
    /// the steps it did not), or one trace (numalab record, numalab monitor -o).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", default_value = "report.html")]
    output: PathBuf,
    /// Replace the -o file even if it already holds something.
    #[arg(long)]
    force: bool,
    /// A published Mess memory_curves.csv to draw beside the loaded-latency curves.
    #[arg(long, value_name = "FILE.csv")]
    reference: Vec<PathBuf>,
}

/// Arguments of `numalab compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// The baseline: a records file (JSON), or a survey's folder or journal.jsonl.
    a: PathBuf,
    /// The run compared with it: a records file (JSON), or a survey's folder or journal.jsonl.
    b: PathBuf,
    /// Also write the comparison as HTML to this file.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Replace the -o file even if it already holds something.
    #[arg(long)]
    force: bool,
    /// Another baseline run (repeatable), e.g. a second survey before the change: a
    /// figure is beyond only when it is beyond against A and against each of these, so
    /// what moves between baseline runs on its own is not called a change.
    #[arg(long, value_name = "RUN")]
    baseline: Vec<PathBuf>,
    /// Print the rows as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Keep derived duplicates (cycles beside ns, traffic beside bandwidth, issued
    /// beside injected bandwidth), which are left out by default.
    #[arg(long)]
    all_metrics: bool,
}

/// Read numalab records from a JSON file (an array of records, or one record).
pub fn read_records(path: &Path) -> Result<Vec<Record>, CliError> {
    numalab_results::output::read_records(path).map_err(bad)
}

/// An HTML output that can be created and holds nothing yet (unless `force`), and is
/// none of the command's `inputs`; standard output (`-`) is written in place.
fn html_path(p: &Path, force: bool, inputs: &[&Path]) -> Result<(), CliError> {
    check_distinct(&[("-o", p)], inputs)?;
    let stdout = outpath::target(p)? == outpath::Target::Stdout;
    if stdout || p.extension().is_some_and(|e| e == "html" || e == "htm") {
        check_creatable(p)?;
        Ok(check_fresh(p, force)?)
    } else {
        Err(bad(format!(
            "invalid output '{}': expected a .html file",
            p.display()
        )))
    }
}

/// Run `numalab report`.
pub fn run_report(a: ReportArgs) -> Result<(), CliError> {
    let inputs: Vec<&Path> = a
        .files
        .iter()
        .chain(&a.reference)
        .map(|p| p.as_path())
        .collect();
    html_path(&a.output, a.force, &inputs)?;
    if a.files.iter().any(|f| numalab_prof::trace::is_trace(f)) {
        if let Some(r) = a.reference.first() {
            return Err(bad(format!(
                "invalid --reference '{}' with a trace: Mess curves are drawn beside loaded-latency records; drop --reference",
                r.display()
            )));
        }
        return trace_report(&a);
    }
    let input = numalab_answers::survey::files::read_inputs(&a.files).map_err(bad)?;
    for n in &input.notes {
        eprintln!("numalab: note: {n}");
    }
    let (mut records, missing) = (input.records, input.missing);
    records.extend(numalab_bench::loaded::reference_files(&a.reference).map_err(bad)?);
    let host = records.first().map(|r| r.provenance.hostname.as_str());
    let title = format!("numalab report: {}", host.unwrap_or("no records"));
    let html = if missing.is_empty() {
        registry::render(&records, &title)
    } else {
        registry::render_partial(&records, &title, &missing)
    };
    write_atomic(&a.output, html.as_bytes())?;
    print!("{}", registry::summary(&records));
    for m in &missing {
        println!("not measured: {m}");
    }
    eprintln!(
        "numalab: wrote {} ({})",
        a.output.display(),
        numalab_results::words::count(records.len() as u64, "record")
    );
    Ok(())
}

/// The records of one side of `compare`: a records file, or a survey's folder or
/// journal (read as `report` reads them; notes go to stderr).
fn compare_side(path: &Path) -> Result<Vec<Record>, CliError> {
    // The reader's words are report's; the same refusal, said of compare.
    let input =
        numalab_answers::survey::files::read_inputs(std::slice::from_ref(&path.to_path_buf()))
            .map_err(|e| bad(e.replacen("nothing to report", "nothing to compare", 1)))?;
    for n in &input.notes {
        eprintln!("numalab: note: {n}");
    }
    Ok(input.records)
}

/// Run `numalab compare`.
pub fn run_compare(a: CompareArgs) -> Result<(), CliError> {
    let force = a.force;
    let mut inputs: Vec<&Path> = vec![&a.a, &a.b];
    inputs.extend(a.baseline.iter().map(PathBuf::as_path));
    a.output
        .as_deref()
        .map(|o| html_path(o, force, &inputs))
        .transpose()?;
    let ra = compare_side(&a.a)?;
    let rb = compare_side(&a.b)?;
    let more = a
        .baseline
        .iter()
        .map(|p| compare_side(p))
        .collect::<Result<Vec<_>, _>>()?;
    // As `report` refuses them: a file of no records leaves nothing to compare.
    let sides = [(&a.a, &ra), (&a.b, &rb)]
        .into_iter()
        .chain(a.baseline.iter().zip(&more));
    for (p, r) in sides {
        if r.is_empty() {
            return Err(bad(format!(
                "nothing to compare: '{}' holds no records",
                p.display()
            )));
        }
    }
    let mut c = compare::compare(&ra, &rb, a.all_metrics);
    if !more.is_empty() {
        let others: Vec<_> = more
            .iter()
            .map(|r| compare::compare(r, &rb, a.all_metrics))
            .collect();
        compare::baselines::hold(&mut c, &others);
    }
    if let Some(o) = &a.output {
        let html = compare::html(
            &c,
            &a.a.display().to_string(),
            &a.b.display().to_string(),
            &registry::cards(&ra),
            &registry::cards(&rb),
        );
        write_atomic(o, html.as_bytes())?;
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&c).expect("comparison serialises")
        );
    } else {
        println!("{}", compare::verdict(&c));
        println!("A: {}", a.a.display());
        for (i, p) in a.baseline.iter().enumerate() {
            println!("baseline {}: {}", i + 2, p.display());
        }
        println!("B: {}\n", a.b.display());
        print!("{}", table(&compare::HEADER, &compare::text_rows(&c.rows)));
        // The rule, one clause a line: as one line it outgrew a terminal (595 characters).
        println!();
        for (i, clause) in compare::RULE.split("; ").enumerate() {
            println!("{}{clause}", if i == 0 { "" } else { "  " });
        }
    }
    Ok(())
}

/// The report of one trace: per-node series, thread timeline, locality, sources.
fn trace_report(a: &ReportArgs) -> Result<(), CliError> {
    if a.files.len() != 1 {
        return Err(bad(format!(
            "invalid files: a trace report takes one trace, got {} files",
            a.files.len()
        )));
    }
    let t = super::trace::load(&a.files[0])?;
    let what = if t.header.target.is_empty() {
        "monitor".to_string()
    } else {
        t.header.target.join(" ")
    };
    let title = format!("numalab trace: {what} on {}", t.header.provenance.hostname);
    write_atomic(
        &a.output,
        numalab_prof::report::render(&t, &title).as_bytes(),
    )?;
    println!("wrote {}", a.output.display());
    Ok(())
}
