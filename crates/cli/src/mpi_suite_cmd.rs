//! `numalab suite collectives --mpi` (and `suite earth --mpi`): the seed suites
//! between MPI ranks. The suites' own commands parse their flags and hand over here.

use crate::common::{bad, check_measurable, CliError, CommonArgs};
use crate::mpi_cmd::{start, JobArgs};
use clap::Args;
use numalab_mpi::world::fail;
use numalab_results::output::table;
use numalab_results::Record;
use numalab_suites::collectives_mpi::{self, Options, Plan};
use std::fmt::Write;

/// Flags that move a suite onto MPI ranks.
#[derive(Args, Debug, Clone)]
pub struct MpiSuiteArgs {
    /// Run between MPI ranks instead of threads (with --ranks N, numalab starts mpirun).
    #[arg(long)]
    pub mpi: bool,
    #[command(flatten)]
    pub job: JobArgs,
}

/// What `suite collectives` parsed, for its MPI form.
pub struct CollectivesInput<'a> {
    /// Rank counts (--threads).
    pub ranks: Option<Vec<usize>>,
    /// Block sizes.
    pub sizes: Vec<u64>,
    /// --only prefixes.
    pub only: Vec<String>,
    /// Timed passes.
    pub iterations: usize,
    /// OSU layout.
    pub osu: bool,
    /// Plan only.
    pub dry_run: bool,
    /// Output options.
    pub common: &'a CommonArgs,
}

/// Run `suite collectives --mpi`.
pub fn collectives(m: &MpiSuiteArgs, c: CollectivesInput) -> Result<(), CliError> {
    check_measurable(c.common, c.dry_run)?;
    let host = c.common.host()?;
    let (req, wopts) = m.job.request(&host, 2)?;
    let line = host
        .machine
        .caches
        .first()
        .and_then(|x| x.line_bytes)
        .unwrap_or(64) as usize;
    let opts = Options {
        ranks: c.ranks,
        sizes: c.sizes,
        iterations: c.iterations,
        only: c.only,
        line,
    };
    let plan = Plan::resolve(req.ranks, &opts)?;
    if plan.items.is_empty() {
        return Err(bad(
            "invalid --only: no collective of the MPI suite matches",
        ));
    }
    if c.dry_run {
        print!("{}", plan.text());
        return Ok(());
    }
    let world = start(&host, &req, &wopts)?;
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let recs = collectives_mpi::measure(&world, &host, &plan, |i, n| {
        if tty {
            eprint!("\rcollectives --mpi: {}/{n}   ", i + 1);
        }
    })
    .unwrap_or_else(|e| fail(Some(&world), &e));
    if tty && world.is_root() {
        eprintln!();
    }
    if let Some(recs) = recs {
        let osu = c.osu;
        c.common.emit(&recs, || {
            if osu {
                osu_text(&recs)
            } else {
                collectives_text(&recs)
            }
        })?;
    }
    Ok(())
}

fn median_us(r: &Record) -> Option<f64> {
    r.stats
        .iter()
        .find(|s| s.metric == "time")
        .map(|s| s.summary.median / 1000.0)
}

/// Seed algorithm beside MPI's own, per P and block size.
fn collectives_text(recs: &[Record]) -> String {
    let runs: Vec<&Record> = recs.iter().filter(|r| r.kind == "collective-mpi").collect();
    let native = |p: &serde_json::Value, fam: &str, lines: &serde_json::Value| {
        runs.iter()
            .find(|r| {
                r.parameters["ranks"] == *p
                    && r.parameters["lines"] == *lines
                    && r.parameters["implementation"]
                        .as_str()
                        .is_some_and(|i| i.starts_with("MPI_"))
                    && fam.starts_with(r.parameters["collective"].as_str().unwrap_or("?"))
            })
            .copied()
    };
    let mut rows = Vec::new();
    for r in runs.iter().filter(|r| {
        !r.parameters["implementation"]
            .as_str()
            .unwrap_or("")
            .starts_with("MPI_")
    }) {
        let fam = r.parameters["collective"].as_str().unwrap_or("?");
        let n = native(&r.parameters["ranks"], fam, &r.parameters["lines"]);
        let (s, m) = (median_us(r), n.and_then(median_us));
        rows.push(vec![
            r.parameters["ranks"].to_string(),
            fam.to_string(),
            r.parameters["block_bytes"].to_string(),
            s.map_or("-".into(), |v| format!("{v:.2}")),
            n.map_or("-".into(), |n| {
                n.parameters["implementation"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string()
            }),
            m.map_or("-".into(), |v| format!("{v:.2}")),
            match (s, m) {
                (Some(s), Some(m)) if m > 0.0 => format!("{:.2}", s / m),
                _ => "-".into(),
            },
        ]);
    }
    let mut s = String::from("collectives between MPI ranks: median completion time (µs, slowest rank per pass); every moved word checked\n");
    s.push_str(&table(
        &[
            "P",
            "collective",
            "block B",
            "seed µs",
            "MPI's own",
            "MPI µs",
            "seed/MPI",
        ],
        &rows,
    ));
    s.push_str("\n\nseed cost models (µs)\n");
    for r in recs.iter().filter(|r| r.kind == "collective-mpi-model") {
        match &r.data {
            Some(d) => {
                let coef: Vec<String> = d["coefficients"]
                    .as_array()
                    .map(|v| {
                        v.iter()
                            .map(|c| match c["value"].as_f64() {
                                Some(x) => format!("{}={x:.4}", c["name"].as_str().unwrap_or("?")),
                                None => format!("{}=n/a", c["name"].as_str().unwrap_or("?")),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let _ = writeln!(
                    s,
                    "  {:<20} {:<38} {}  (R² {:.3})",
                    r.name,
                    d["formula"].as_str().unwrap_or("?"),
                    coef.join(" "),
                    d["r2"].as_f64().unwrap_or(f64::NAN)
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "  {:<22} not fitted: {}",
                    r.name,
                    r.unavailable.first().map_or("", |u| u.reason.as_str())
                );
            }
        }
    }
    let mut seen: Vec<&String> = Vec::new();
    for w in recs.iter().flat_map(|r| &r.warnings) {
        if !seen.contains(&w) {
            seen.push(w);
            let _ = writeln!(s, "warning: {w}");
        }
    }
    s
}

/// OSU's layout: one block per collective and implementation, size and the average,
/// smallest and largest of the ranks' mean latencies.
fn osu_text(recs: &[Record]) -> String {
    let mut s = String::new();
    let mut heads: Vec<(String, String)> = Vec::new();
    for r in recs.iter().filter(|r| r.kind == "collective-mpi") {
        let h = (
            r.parameters["collective"]
                .as_str()
                .unwrap_or("?")
                .to_string(),
            r.parameters["implementation"]
                .as_str()
                .unwrap_or("?")
                .to_string(),
        );
        if !heads.contains(&h) {
            heads.push(h);
        }
    }
    for (c, i) in heads {
        let _ = writeln!(
            s,
            "# numalab {c} ({i})\n# {:<10}{:>6}{:>18}{:>18}{:>18}{:>12}",
            "Size", "P", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations"
        );
        for r in recs
            .iter()
            .filter(|r| r.parameters["collective"] == *c && r.parameters["implementation"] == *i)
        {
            let means: Vec<f64> = r
                .data
                .as_ref()
                .and_then(|d| d["rank_mean_ns"].as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|v| v.as_f64())
                .collect();
            if means.is_empty() {
                continue;
            }
            let avg = means.iter().sum::<f64>() / means.len() as f64 / 1000.0;
            let min = means.iter().copied().fold(f64::INFINITY, f64::min) / 1000.0;
            let max = means.iter().copied().fold(f64::NEG_INFINITY, f64::max) / 1000.0;
            let _ = writeln!(
                s,
                "  {:<10}{:>6}{:>18.2}{:>18.2}{:>18.2}{:>12}",
                r.parameters["block_bytes"],
                r.parameters["ranks"],
                avg,
                min,
                max,
                r.parameters["iterations"]
            );
        }
        s.push('\n');
    }
    s
}
