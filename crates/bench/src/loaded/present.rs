//! How loaded-latency records are shown: chase latency against injected traffic.

use numalab_results::plot::{self, LineChart, Series};
use numalab_results::present::{of, Presenter};
use numalab_results::report::{figure, html_table, num};
use numalab_results::summary::Card;
use numalab_results::Record;

/// Loaded latency (and its dry-run plan).
pub struct LoadedPresenter;

impl Presenter for LoadedPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["loaded-latency", "loaded-latency-plan"]
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        match of(records, "loaded-latency-plan").last() {
            Some(p) => super::text::plan_text(p),
            None => super::text::curve_text(records),
        }
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("loaded", "Loaded latency"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let recs: Vec<&Record> = of(records, "loaded-latency").collect();
        let first = recs.first()?;
        let pts: Vec<(f64, f64)> = recs
            .iter()
            .filter_map(|r| {
                Some((
                    r.median("injected_bandwidth").unwrap_or(0.0),
                    r.median("latency")?,
                ))
            })
            .collect();
        let chart = plot::line_chart(&LineChart {
            title: "loaded latency".into(),
            x_label: "injected traffic, GB/s".into(),
            y_label: "chase ns per load".into(),
            log_x: false,
            x_bytes: false,
            series: vec![Series {
                name: first.parameters["traffic"].as_str().unwrap_or("").into(),
                points: pts,
            }],
            markers: Vec::new(),
        });
        let rows: Vec<Vec<String>> = recs
            .iter()
            .map(|r| {
                vec![
                    r.name.clone(),
                    num(r.median("injected_bandwidth"), 2),
                    num(r.median("latency"), 1),
                ]
            })
            .collect();
        Some(figure(
            chart,
            html_table(&["point", "injected GB/s", "latency ns"], &rows),
        ))
    }
    fn cards(&self, records: &[Record]) -> Vec<Card> {
        crate::cards::loaded(records)
    }
}
