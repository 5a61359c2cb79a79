//! How the earth suite's records are shown: every operation's median and the MLP curve.

use super::sizing::Sizing;
use numalab_results::plot::{self, LineChart, Series};
use numalab_results::present::{of, Presenter};
use numalab_results::report::{figure, html_table, num};
use numalab_results::Record;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The best G of one mode and its ns per access.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BestG {
    /// Independent chains.
    pub g: usize,
    /// ns per access at that G.
    pub ns_per_access: f64,
}

/// `data` of a `suite-earth` record: the MLP summary (derived from the medians of
/// the MLP points), or that a measured run's data was checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EarthData {
    /// The "mlp: summary" record.
    MlpSummary {
        /// Interleaved chains at their best G.
        best_interleaved: BestG,
        /// Coroutines at their best G.
        best_coroutines: BestG,
        /// Coroutine throughput at its best over interleaved throughput at its best.
        coroutine_over_interleaved_throughput: f64,
        /// Stackless state machines at their best G (absent in older records).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        best_stackless: Option<BestG>,
        /// Their throughput at their best over interleaved throughput at its best.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stackless_over_interleaved_throughput: Option<f64>,
        /// The smallest G within 10% of the interleaved best.
        interleaved_saturates_at_g: usize,
        /// Accesses in flight at the best G by Little's law.
        accesses_in_flight: Option<f64>,
    },
    /// A measured run whose result was checked.
    Checked {
        /// Always true when recorded.
        data_checked: bool,
        /// How its passes were sized to its noise (absent in older records).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        noise: Option<Sizing>,
    },
    /// A point whose passes were sized to its noise (a Loop 7 baseline, a threads row).
    Sized {
        /// How.
        noise: Sizing,
    },
}

impl EarthData {
    /// How a record's passes were sized, if they were.
    pub fn noise(&self) -> Option<&Sizing> {
        match self {
            EarthData::Checked { noise, .. } => noise.as_ref(),
            EarthData::Sized { noise } => Some(noise),
            EarthData::MlpSummary { .. } => None,
        }
    }
}

/// The earth suite (and its dry-run plan).
pub struct EarthPresenter;

impl Presenter for EarthPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["suite-earth", "suite-earth-plan"]
    }
    fn study(&self) -> bool {
        true
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("earth", "Remote operations and latency hiding (EARTH)"))
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        super::text(records)
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let recs: Vec<&Record> = of(records, "suite-earth").collect();
        if recs.is_empty() {
            return None;
        }
        let mut modes: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for r in &recs {
            let p = &r.parameters;
            if p["part"] != "mlp" || r.name.contains("chains in L1") {
                continue;
            }
            if let (Some(g), Some(m), Some(v)) =
                (p["g"].as_f64(), p["mode"].as_str(), r.median("access_time"))
            {
                modes.entry(m.to_string()).or_default().push((g, v));
            }
        }
        let chart = plot::line_chart(&LineChart {
            title: "memory-level parallelism".into(),
            x_label: "independent chains G".into(),
            y_label: "ns per access".into(),
            log_x: false,
            x_bytes: false,
            series: modes
                .into_iter()
                .map(|(name, points)| Series { name, points })
                .collect(),
            markers: Vec::new(),
        });
        let rows: Vec<Vec<String>> = recs
            .iter()
            .filter_map(|r| {
                let metric = r.stats.first()?;
                Some(vec![
                    r.name.clone(),
                    metric.metric.clone(),
                    num(Some(metric.summary.median), 1),
                    noise_words(r),
                ])
            })
            .collect();
        Some(figure(
            chart,
            html_table(&["measurement", "metric", "ns (median)", "passes"], &rows),
        ))
    }
}

/// A sized record's passes in words ([`Sizing::text`] without the figure, which the
/// HTML table does not show): "14 passes", "within noise (lo…hi%)" or nothing.
fn noise_words(r: &Record) -> String {
    r.data_as::<EarthData>()
        .ok()
        .and_then(|d| d.noise().map(|n| n.text(String::new())))
        .map(|w| match w.trim().strip_prefix('(') {
            Some(passes) => passes.trim_end_matches(')').to_string(),
            None => w,
        })
        .unwrap_or_default()
}
