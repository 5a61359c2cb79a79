//! `numalab model fit|predict`: the remote-latency model of thesis §4.3.2.

use crate::common::{bad, CliError, CommonArgs};
use clap::{Args, Subcommand};
use numalab_results::model::{self, Fit, Point};
use numalab_results::output::table;
use std::fmt::Write;
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

/// Points from records: every latency figure whose record says how many hops it crossed.
fn from_records(v: &serde_json::Value, stat: &str) -> Vec<Point> {
    let recs = v.as_array().cloned().unwrap_or_default();
    recs.iter()
        .filter_map(|r| {
            let hops = r["parameters"]["hops"].as_u64().or_else(|| {
                let i = r["parameters"]["requestor"].as_u64()? as usize;
                r["placement"]["resolved"]["memory"]["hops_from_threads"][i].as_u64()
            })?;
            let s = r["stats"]
                .as_array()?
                .iter()
                .find(|s| s["metric"] == "latency")?;
            Some(Point {
                hops: hops as u32,
                latency_ns: s[stat].as_f64()?,
            })
        })
        .collect()
}

fn load(path: &Path, stat: &str) -> Result<Vec<Point>, CliError> {
    if stat != "min" && stat != "median" {
        return Err(bad(format!(
            "invalid --stat '{stat}': expected min or median"
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad(format!("cannot read '{}': {e}", path.display())))?;
    let points = if path.extension().is_some_and(|e| e == "csv") {
        model::parse_csv(&text).map_err(|e| bad(format!("{}: {e}", path.display())))?
    } else {
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            bad(format!(
                "invalid file '{}': not JSON records ({e}); give numalab records or a .csv with hops,latency_ns",
                path.display()
            ))
        })?;
        from_records(&v, stat)
    };
    if points.is_empty() {
        return Err(bad(format!(
            "invalid file '{}': it holds no latency figures with hop counts",
            path.display()
        )));
    }
    Ok(points)
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.2}"))
        .unwrap_or_else(|| "not separable".into())
}

fn render(f: &Fit, points: &[Point], predict: Option<(u32, f64)>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Model: latency = local + remote penalty + hops × per-hop delay ({} observations, hops {:?})\n", f.n, f.hops_seen);
    s.push_str(&table(
        &["coefficient", "ns"],
        &[
            vec!["local".into(), format!("{:.2}", f.local_ns)],
            vec!["remote penalty".into(), opt(f.remote_penalty_ns)],
            vec!["per hop".into(), opt(f.per_hop_ns)],
            vec![
                "R²".into(),
                f.r2.map(|r| format!("{r:.4}"))
                    .unwrap_or_else(|| "-".into()),
            ],
        ],
    ));
    let _ = writeln!(s, "\n{}\n", f.note);
    let rows: Vec<Vec<String>> = points
        .iter()
        .zip(&f.residuals_ns)
        .map(|(p, r)| {
            vec![
                p.hops.to_string(),
                format!("{:.2}", p.latency_ns),
                format!("{:.2}", p.latency_ns - r),
                format!("{r:+.2}"),
            ]
        })
        .collect();
    s.push_str(&table(
        &["hops", "observed ns", "fitted ns", "residual"],
        &rows,
    ));
    s.push('\n');
    if let Some((h, v)) = predict {
        let _ = writeln!(s, "\nPredicted latency at {h} hop(s): {v:.2} ns");
    }
    s
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
    let predict = hops.map(|h| (h, f.predict(h)));
    let rec = model::file_record(&fa.file, &fa.stat, &f, &points, predict);
    fa.common
        .emit(std::slice::from_ref(&rec), || render(&f, &points, predict))
}
