//! How the placement suite's records are shown: read time per unit against readers.

use numalab_results::plot::{self, LineChart, Series};
use numalab_results::present::{of, Presenter};
use numalab_results::report::{figure, html_table, num};
use numalab_results::settle;
use numalab_results::Record;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One reader's median in a `suite-placement` point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReaderMedian {
    /// The reader's CPU.
    pub cpu: u32,
    /// Its domain at the suite's level.
    pub domain: String,
    /// Its median ns per unit.
    pub median_ns: f64,
}

/// `data` of a measured `suite-placement` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointData {
    /// Every reader's median.
    pub per_reader: Vec<ReaderMedian>,
    /// Whether the data the readers read was checked (always true when recorded).
    pub data_checked: bool,
}

/// The thread placement suite (and its dry-run plan, whose data is the plan itself).
pub struct PlacementPresenter;

impl Presenter for PlacementPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["suite-placement", "suite-placement-plan"]
    }
    fn study(&self) -> bool {
        true
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("placement", "Thread placement suite (KSR1)"))
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        super::text(records)
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let recs: Vec<&Record> = of(records, "suite-placement")
            .filter(|r| r.median("read_time").is_some())
            .collect();
        if recs.is_empty() {
            return None;
        }
        let mut curves: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for r in &recs {
            let p = &r.parameters;
            let name = format!(
                "{} {}",
                p["part"].as_str().unwrap_or(""),
                p["curve"].as_str().unwrap_or("")
            );
            if let (Some(k), Some(v)) = (p["readers"].as_f64(), r.median("read_time")) {
                curves.entry(name).or_default().push((k, v));
            }
        }
        let chart = plot::line_chart(&LineChart {
            title: "thread placement: read time per unit".into(),
            x_label: "readers".into(),
            y_label: "ns per unit per reader".into(),
            log_x: false,
            x_bytes: false,
            series: curves
                .into_iter()
                .map(|(name, points)| Series { name, points })
                .collect(),
            markers: Vec::new(),
        });
        let rows: Vec<Vec<String>> = recs
            .iter()
            .map(|r| {
                let p = &r.parameters;
                vec![
                    p["part"].as_str().unwrap_or("").into(),
                    p["curve"].as_str().unwrap_or("").into(),
                    p["readers"].to_string(),
                    settle::cell(r, num(r.median("read_time"), 2)),
                ]
            })
            .collect();
        Some(figure(
            chart,
            html_table(&["part", "curve", "readers", "ns per unit"], &rows),
        ))
    }
}
