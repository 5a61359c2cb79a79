//! How bandwidth records are shown: bars per kernel, one chart per place the data
//! lives and thread count; summary cards.

use super::groups::{self, Group};
use numalab_results::plausible::{self, Flag};
use numalab_results::plot;
use numalab_results::present::{of, Presenter};
use numalab_results::report::{bytes, esc, figure, html_table};
use numalab_results::summary::Card;
use numalab_results::Record;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    /// Every pass, disturbed and measured-again ones included (per-requestor records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<numalab_results::disturb::PassLog>,
}

/// Bandwidth per kernel and thread count.
pub struct BandwidthPresenter;

use super::metric_of;

fn figure_of(r: &Record) -> Option<(u64, &str, f64)> {
    let (n, metric) = metric_of(r);
    let kernel = r.parameters["kernel"].as_str().unwrap_or("?");
    Some((n, kernel, r.figure(metric)?))
}

/// The rule `r`'s figure breaks, if one does.
fn implausible(r: &Record, flags: &[Flag]) -> Option<&'static str> {
    plausible::flag_of(flags, r, metric_of(r).1).map(|f| f.rule)
}

impl Presenter for BandwidthPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["bandwidth", "bandwidth-plan"]
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        Some(super::text::render(records))
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("bandwidth", "Bandwidth per kernel and thread count"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let caches = groups::caches(records);
        let flags = plausible::check(records);
        let mut by: BTreeMap<Group, Vec<(String, f64, &Record)>> = BTreeMap::new();
        for r in of(records, "bandwidth") {
            let Some((_, k, v)) = figure_of(r) else {
                continue;
            };
            let st = r.parameters["state"].as_str().unwrap_or("");
            let label = if st == "warm" || st.is_empty() {
                k.to_string()
            } else {
                format!("{k} {st}")
            };
            by.entry(groups::group_of(r, records, caches.as_deref()))
                .or_default()
                .push((label, v, r));
        }
        if by.is_empty() {
            return None;
        }
        // One chart per group, each on its own scale: an in-cache kernel's 80 GB/s
        // beside memory-bound kernels' 15 GB/s would flatten the ones worth comparing.
        let mut out = String::new();
        for (g, rows) in &by {
            let label = g.label();
            let bars: Vec<(String, f64)> = rows.iter().map(|(l, v, _)| (l.clone(), *v)).collect();
            let chart = plot::bar_chart(&format!("{label}: GB/s, best pass"), "GB/s", &bars);
            let table: Vec<Vec<String>> = rows
                .iter()
                .map(|(l, v, r)| {
                    vec![
                        l.clone(),
                        r.parameters["state"].as_str().unwrap_or("").to_string(),
                        bytes(r.parameters["size_bytes"].as_u64().unwrap_or(0)),
                        label.clone(),
                        // A figure a rule names is shown, but marked as no answer.
                        match implausible(r, &flags) {
                            Some(rule) => format!("{v:.2} ✗ ({rule})"),
                            None => format!("{v:.2}"),
                        },
                    ]
                })
                .collect();
            out.push_str(&format!(
                "<div class=\"bw-group\" data-group=\"{}\" data-cache=\"{}\"><h3>{}</h3>{}</div>",
                esc(&label),
                groups::is_cache(g),
                esc(&label),
                figure(
                    chart,
                    html_table(
                        &["kernel", "state", "buffer per thread", "data in", "GB/s"],
                        &table
                    )
                )
            ));
        }
        out.push_str(&super::scaling::html(records).unwrap_or_default());
        Some(out)
    }
    fn cards(&self, records: &[Record]) -> Vec<Card> {
        crate::cards::bandwidth(records)
    }
}
