//! Post-mortem tools for traces (sninfo, sndump): `info`, `dump` and `export`.

use crate::common::{bad, CliError};
use clap::Args;
use numalab_prof::dump::Query;
use numalab_prof::trace::{self, Trace};
use numalab_results::outpath::check_distinct;
use numalab_results::output::{check_creatable, check_fresh, write_atomic};
use std::path::{Path, PathBuf};

/// Arguments of `numalab info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    /// The trace (numalab record or numalab monitor -o).
    trace: PathBuf,
}

/// Arguments of `numalab dump`.
#[derive(Args, Debug)]
pub struct DumpArgs {
    /// The trace.
    trace: PathBuf,
    /// Only these metrics (repeat the option); all derivable ones by default.
    #[arg(long = "metric", value_name = "NAME")]
    metric: Vec<String>,
    /// Only these objects (t1234, p1234, n0, sys; repeat the option).
    #[arg(long = "object", value_name = "ID")]
    object: Vec<String>,
    /// Print the raw sampled fields instead of derived metrics.
    #[arg(long)]
    raw: bool,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    json: bool,
}

/// Arguments of `numalab export`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// The trace.
    trace: PathBuf,
    /// Chrome trace-event JSON for the Perfetto UI (the one format offered).
    #[arg(long)]
    perfetto: bool,
    /// Output file (default: TRACE.perfetto.json).
    #[arg(short = 'o', long = "output", value_name = "FILE.json")]
    output: Option<PathBuf>,
    /// Replace the output file even if it already holds something.
    #[arg(long)]
    force: bool,
}

/// Read a trace; a file that is not one is the user's error.
pub fn load(p: &Path) -> Result<Trace, CliError> {
    trace::read(p).map_err(|e| bad(e.to_string()))
}

/// Run `numalab info`.
pub fn info(a: InfoArgs) -> Result<(), CliError> {
    let t = load(&a.trace)?;
    print!(
        "{}",
        numalab_prof::info::text(&a.trace.display().to_string(), &t)
    );
    Ok(())
}

/// Run `numalab dump`.
pub fn dump(a: DumpArgs) -> Result<(), CliError> {
    let t = load(&a.trace)?;
    let q = Query {
        metrics: a.metric,
        objects: a.object,
        raw: a.raw,
        json: a.json,
    };
    q.check(&t).map_err(bad)?;
    print!("{}", numalab_prof::dump::text(&t, &q));
    Ok(())
}

/// Run `numalab export`.
pub fn export(a: ExportArgs) -> Result<(), CliError> {
    if !a.perfetto {
        return Err(bad(
            "missing format: give --perfetto (Chrome trace-event JSON for the Perfetto UI)",
        ));
    }
    let out = a.output.clone().unwrap_or_else(|| {
        let mut s = a.trace.clone().into_os_string();
        s.push(".perfetto.json");
        s.into()
    });
    let stdout =
        numalab_results::outpath::target(&out)? == numalab_results::outpath::Target::Stdout;
    if !stdout && out.extension().is_none_or(|e| e != "json") {
        return Err(bad(format!(
            "invalid output '{}': expected a .json file",
            out.display()
        )));
    }
    check_distinct(&[("-o", &out)], &[&a.trace])?;
    check_creatable(&out)?;
    check_fresh(&out, a.force)?;
    let t = load(&a.trace)?;
    let doc = numalab_prof::export::perfetto(&t);
    write_atomic(&out, doc.to_string().as_bytes())?;
    eprintln!(
        "numalab export: wrote {} (open it at the Perfetto UI or chrome://tracing)",
        out.display()
    );
    Ok(())
}
