//! `numalab model fit|predict`: the remote-latency model of thesis §4.3.2.

use crate::common::{bad, CliError, CommonArgs};
use clap::{Args, Subcommand};
use numalab_results::model::{self, Point};
use std::path::{Path, PathBuf};

/// Arguments of `numalab model`.
#[derive(Args, Debug)]
pub struct ModelArgs {
    #[command(subcommand)]
    cmd: ModelCmd,
}

#[derive(Subcommand, Debug)]
enum ModelCmd {
    /// Fit latency = local + remote penalty + hops × per-hop delay.
    Fit(FitArgs),
    /// Fit, then predict the latency at a hop count.
    Predict(PredictArgs),
}

#[derive(Args, Debug)]
struct FitArgs {
    /// numalab records (.json: latency/matrix records with hops) or a CSV with columns hops,latency_ns.
    file: PathBuf,
    /// Which statistic of each record: min (as the thesis reports) or median.
    #[arg(long, default_value = "min")]
    stat: String,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args, Debug)]
struct PredictArgs {
    #[command(flatten)]
    fit: FitArgs,
    /// Hop count to predict.
    #[arg(long)]
    hops: u32,
}

fn load(path: &Path, stat: &str) -> Result<Vec<Point>, CliError> {
    if stat != "min" && stat != "median" {
        return Err(bad(format!(
            "invalid --stat '{stat}': expected min or median"
        )));
    }
    let points = if path.extension().is_some_and(|e| e == "csv") {
        let text = numalab_results::outpath::read_input(path).map_err(|e| bad(e.to_string()))?;
        model::parse_csv(&text).map_err(|e| bad(format!("{}: {e}", path.display())))?
    } else {
        let recs = numalab_results::output::read_records(path)
            .map_err(|e| bad(format!("{e}, or a .csv with hops,latency_ns")))?;
        model::points(&recs, stat)
    };
    if points.is_empty() {
        return Err(bad(format!(
            "invalid file '{}': it holds no latency figures with hop counts",
            path.display()
        )));
    }
    Ok(points)
}

/// Run `numalab model`.
pub fn run(a: ModelArgs) -> Result<(), CliError> {
    let (fa, hops) = match &a.cmd {
        ModelCmd::Fit(f) => (f, None),
        ModelCmd::Predict(p) => (&p.fit, Some(p.hops)),
    };
    fa.common.validate()?;
    let points = load(&fa.file, &fa.stat)?;
    let f = model::fit(&points).map_err(bad)?;
    let predict = hops
        .map(|h| f.predict(h).map(|v| (h, v)))
        .transpose()
        .map_err(bad)?;
    let rec = model::file_record(&fa.file, &fa.stat, &f, &points, predict);
    fa.common.show(std::slice::from_ref(&rec))
}
