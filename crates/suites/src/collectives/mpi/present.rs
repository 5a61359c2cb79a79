//! How `suite collectives --mpi` records are shown, beside the shared-memory suite's
//! section: the seed's algorithms and MPI's own collectives side by side, and the
//! seed's cost models fitted to them.

use super::plan::{Plan, KIND_PLAN};
use numalab_results::linfit::LinearFit;
use numalab_results::plot::{self, LineChart, Series};
use numalab_results::present::{of, Presenter};
use numalab_results::report::{figure, html_table, num};
use numalab_results::Record;
use std::collections::BTreeMap;

/// The collectives suite over MPI.
pub struct CollectivesMpiPresenter;

impl Presenter for CollectivesMpiPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["collective-mpi", "collective-mpi-model", KIND_PLAN]
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        let mut out = String::new();
        for r in of(records, KIND_PLAN) {
            out.push_str(&r.data_as::<Plan>().ok()?.text());
        }
        if of(records, "collective-mpi").next().is_some() {
            out.push_str(&super::text::collectives_text(records));
        }
        (!out.is_empty()).then_some(out)
    }
    fn study(&self) -> bool {
        true
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some((
            "collectives-mpi",
            "Collective communication between MPI ranks",
        ))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let runs: Vec<&Record> = of(records, "collective-mpi")
            .filter(|r| r.median("time").is_some())
            .collect();
        if runs.is_empty() {
            return None;
        }
        let mut body = figure(chart(&runs), table(&runs));
        body.push_str(&models(records));
        Some(body)
    }
}

fn p<'a>(r: &'a Record, k: &str) -> &'a serde_json::Value {
    &r.parameters[k]
}

fn is_native(r: &Record) -> bool {
    p(r, "implementation")
        .as_str()
        .unwrap_or("")
        .starts_with("MPI_")
}

/// Time against ranks, one line per collective × implementation, smallest block
/// (barriers, which move no block, always).
fn chart(runs: &[&Record]) -> Option<String> {
    let lines_of = |r: &Record| p(r, "lines").as_u64();
    let smallest = runs
        .iter()
        .filter_map(|r| lines_of(r))
        .filter(|&l| l > 0)
        .min();
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in runs
        .iter()
        .filter(|r| lines_of(r) == Some(0) || lines_of(r) == smallest)
    {
        if let (Some(ranks), Some(t)) = (p(r, "ranks").as_f64(), r.median("time")) {
            let name = format!(
                "{} {}",
                p(r, "collective").as_str().unwrap_or("?"),
                p(r, "implementation").as_str().unwrap_or("?")
            );
            lines.entry(name).or_default().push((ranks, t / 1000.0));
        }
    }
    plot::line_chart(&LineChart {
        title: "collectives between ranks (smallest block)".into(),
        x_label: "ranks P".into(),
        y_label: "µs (median, slowest rank per pass)".into(),
        log_x: false,
        x_bytes: false,
        series: lines
            .into_iter()
            .map(|(name, points)| Series { name, points })
            .collect(),
        markers: Vec::new(),
    })
}

/// The seed's algorithm beside MPI's own, per P and block size.
fn table(runs: &[&Record]) -> String {
    let native = |r: &Record| {
        let fam = p(r, "collective").as_str().unwrap_or("?");
        runs.iter().copied().find(|n| {
            is_native(n)
                && p(n, "ranks") == p(r, "ranks")
                && p(n, "lines") == p(r, "lines")
                && fam.starts_with(p(n, "collective").as_str().unwrap_or("?"))
        })
    };
    let us = |r: &Record| r.median("time").map(|v| v / 1000.0);
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter(|r| !is_native(r))
        .map(|r| {
            let n = native(r);
            let (s, m) = (us(r), n.and_then(us));
            vec![
                p(r, "ranks").to_string(),
                p(r, "collective").as_str().unwrap_or("?").into(),
                p(r, "block_bytes").to_string(),
                num(s, 2),
                n.map_or("-".into(), |n| {
                    p(n, "implementation").as_str().unwrap_or("?").into()
                }),
                num(m, 2),
                num(s.zip(m).filter(|x| x.1 > 0.0).map(|(s, m)| s / m), 2),
            ]
        })
        .collect();
    html_table(
        &[
            "P",
            "collective",
            "block B",
            "seed alg. µs",
            "MPI's own",
            "MPI µs",
            "seed alg./MPI",
        ],
        &rows,
    )
}

/// The seed's cost models, or why one was not fitted.
fn models(records: &[Record]) -> String {
    let rows: Vec<Vec<String>> = of(records, "collective-mpi-model")
        .map(|r| match r.data_as::<LinearFit>() {
            Ok(f) => {
                let coef: Vec<String> = f
                    .coefficients
                    .iter()
                    .filter_map(|c| c.value.map(|x| format!("{}={x:.4}", c.name)))
                    .collect();
                vec![
                    r.name.clone(),
                    f.formula.clone(),
                    coef.join(" "),
                    f.quality(),
                ]
            }
            Err(_) => vec![
                r.name.clone(),
                "not fitted".into(),
                r.unavailable
                    .first()
                    .map_or("", |u| u.reason.as_str())
                    .into(),
                "-".into(),
            ],
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    "<h3>seed cost models (µs)</h3>".to_string()
        + &html_table(&["collective", "model", "coefficients", "R²"], &rows)
}
