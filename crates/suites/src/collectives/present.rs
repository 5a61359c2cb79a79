//! How the collectives suite's records are shown: time against threads per
//! collective, every measurement's median, and the fitted cost models.

use numalab_results::linfit::LinearFit;
use numalab_results::plot::{self, LineChart, Series};
use numalab_results::present::{of, Presenter};
use numalab_results::report::{figure, html_table, num};
use numalab_results::settle;
use numalab_results::Record;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `data` of a measured collective in `suite-collectives` (remote-read records have none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveData {
    /// Mean time of each thread over the passes, ns.
    pub thread_mean_ns: Vec<f64>,
    /// Whether the moved data was checked (always true when recorded).
    pub data_checked: bool,
}

/// The collectives suite; `suite-collectives-model` data is a [`LinearFit`], the
/// plan's data is the plan itself.
pub struct CollectivesPresenter;

fn time_chart(recs: &[&Record]) -> Option<String> {
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let smallest = recs
        .iter()
        .filter_map(|r| r.parameters["block_lines"].as_u64())
        .filter(|&l| l > 0)
        .min();
    for r in recs {
        let p = &r.parameters;
        let lines_here = p["block_lines"].as_u64();
        if lines_here.is_some_and(|l| l > 0) && lines_here != smallest {
            continue;
        }
        if let (Some(c), Some(t), Some(v)) = (
            p["collective"].as_str(),
            p["threads"].as_f64(),
            r.median("time"),
        ) {
            lines
                .entry(c.to_string())
                .or_default()
                .push((t, v / 1000.0));
        }
    }
    plot::line_chart(&LineChart {
        title: "collectives (smallest block)".into(),
        x_label: "threads P".into(),
        y_label: "µs".into(),
        log_x: false,
        x_bytes: false,
        series: lines
            .into_iter()
            .map(|(name, points)| Series { name, points })
            .collect(),
        markers: Vec::new(),
    })
}

impl Presenter for CollectivesPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &[
            "suite-collectives",
            "suite-collectives-model",
            "suite-collectives-plan",
        ]
    }
    fn study(&self) -> bool {
        true
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("collectives", "Collective communication suite (KSR)"))
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        super::text(records)
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let recs: Vec<&Record> = of(records, "suite-collectives")
            .filter(|r| r.median("time").is_some() || r.median("read_time").is_some())
            .collect();
        if recs.is_empty() {
            return None;
        }
        let rows: Vec<Vec<String>> = recs
            .iter()
            .map(|r| {
                let v = r.median("time").or_else(|| r.median("read_time"));
                vec![
                    r.name.clone(),
                    settle::cell(r, num(v.map(|x| x / 1000.0), 3)),
                ]
            })
            .collect();
        let mut body = figure(
            time_chart(&recs),
            html_table(&["measurement", "µs (median)"], &rows),
        );
        let models: Vec<Vec<String>> = of(records, "suite-collectives-model")
            .filter_map(|r| {
                let f: LinearFit = r.data_as().ok()?;
                Some(vec![
                    r.parameters["collective"].as_str().unwrap_or("").into(),
                    f.formula.clone(),
                    f.quality(),
                ])
            })
            .collect();
        if !models.is_empty() {
            body.push_str(&html_table(
                &["collective", "fitted model (µs)", "R²"],
                &models,
            ));
        }
        Some(body)
    }
}
