//! How bandwidth records are shown: bars per kernel × requestors, survey headlines.

use numalab_results::plot;
use numalab_results::present::{of, Presenter};
use numalab_results::report::{figure, html_table, med};
use numalab_results::summary::Card;
use numalab_results::Record;
use serde::{Deserialize, Serialize};

/// `data` of a `bandwidth` record: every pass of one requestor, or the aggregate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthData {
    /// GB/s of every timed pass (the aggregate's per pass for an aggregate record).
    pub samples_gbps: Vec<f64>,
    /// ns of every pass (per-requestor records only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_ns: Option<Vec<f64>>,
    /// Bytes moved in every pass (per-requestor records only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_bytes: Option<Vec<u64>>,
    /// How the aggregate was formed (aggregate records only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate_rule: Option<String>,
}

/// Bandwidth per kernel and thread count.
pub struct BandwidthPresenter;

fn figure_of(r: &Record) -> Option<(u64, &str, f64)> {
    let p = &r.parameters;
    let n = p["requestors"].as_u64().unwrap_or(1);
    let metric = if n > 1 {
        "aggregate_bandwidth"
    } else {
        "bandwidth"
    };
    Some((n, p["kernel"].as_str().unwrap_or("?"), med(r, metric)?))
}

impl Presenter for BandwidthPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["bandwidth", "bandwidth-plan"]
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("bandwidth", "Bandwidth per kernel and thread count"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let rows: Vec<(String, f64, String)> = of(records, "bandwidth")
            .filter_map(|r| {
                let (n, k, v) = figure_of(r)?;
                let st = r.parameters["state"].as_str().unwrap_or("").to_string();
                Some((format!("{k} ×{n}"), v, st))
            })
            .collect();
        if rows.is_empty() {
            return None;
        }
        let bars: Vec<(String, f64)> = rows.iter().map(|(l, v, _)| (l.clone(), *v)).collect();
        let chart = plot::bar_chart("bandwidth (median, GB/s)", "GB/s", &bars);
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|(l, v, s)| vec![l.clone(), s.clone(), format!("{v:.2}")])
            .collect();
        Some(figure(
            chart,
            html_table(&["kernel × requestors", "state", "GB/s"], &table),
        ))
    }
    fn cards(&self, records: &[Record]) -> Vec<Card> {
        crate::cards::bandwidth(records)
    }
}
