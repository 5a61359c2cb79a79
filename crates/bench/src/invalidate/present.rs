//! How invalidation records are shown: latency and bandwidth against sharers.

use numalab_results::plot::{self, LineChart, Series};
use numalab_results::present::{of, Presenter};
use numalab_results::report::{figure, html_table, num};
use numalab_results::settle;
use numalab_results::summary::Card;
use numalab_results::Record;

/// How the figure `metric` of an invalidate record settled (None: no entry, as in
/// records written before figures settled).
fn settle_of(r: &Record, metric: &str) -> Option<numalab_results::Settle> {
    let d: super::InvalidateData = r.data_as().ok()?;
    d.samples.settle_of(metric).cloned()
}

/// The invalidation sweep (and its dry-run plan).
pub struct InvalidatePresenter;

fn chart(title: &str, y: &str, series: Vec<Series>) -> Option<String> {
    plot::line_chart(&LineChart {
        title: title.into(),
        x_label: "sharers".into(),
        y_label: y.into(),
        log_x: false,
        x_bytes: false,
        series,
        markers: Vec::new(),
    })
}

/// A record's figure `m`: the best pass of a bandwidth, the median of a latency.
fn fig(r: &Record, m: &str) -> Option<f64> {
    let s = r.stat(m)?;
    Some(if m.ends_with("bandwidth") {
        s.summary.max
    } else {
        s.summary.median
    })
}

/// One series per (metric, name) against the sharer count, of the records whose
/// figure settled: a figure that did not settle is not drawn.
fn series(recs: &[&Record], metrics: &[(&str, &str)]) -> Vec<Series> {
    let x = |r: &Record| r.parameters["sharers"].as_f64().unwrap_or(0.0);
    let settled = |r: &Record, m: &str| settle_of(r, m).is_none_or(|s| s.settled);
    metrics
        .iter()
        .map(|(m, name)| Series {
            name: (*name).into(),
            points: recs
                .iter()
                .filter(|r| settled(r, m))
                .filter_map(|r| Some((x(r), fig(r, m)?)))
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

/// A figure's table cell: the number, or (when it did not settle) the mark, why,
/// and the number.
fn cell(r: &Record, m: &str, digits: usize) -> String {
    let v = num(fig(r, m), digits);
    match settle_of(r, m) {
        Some(s) if !s.settled => format!(
            "{} ({}; {v})",
            settle::UNSETTLED,
            s.why.as_deref().unwrap_or("no reason recorded")
        ),
        _ => v,
    }
}

/// One row per sharer count: where the newest sharer is and every figure.
fn table(recs: &[&Record]) -> String {
    let rows: Vec<Vec<String>> = recs
        .iter()
        .map(|r| {
            let p = &r.parameters;
            vec![
                p["sharers"].to_string(),
                p["newest_node"].to_string(),
                p["hops"].to_string(),
                cell(r, "rdex_latency", 1),
                cell(r, "upgrade_latency", 1),
                cell(r, "uown_rdex_latency", 1),
                cell(r, "rdex_bandwidth", 2),
                cell(r, "upgrade_bandwidth", 2),
                cell(r, "zero_bandwidth", 2),
            ]
        })
        .collect();
    html_table(
        &[
            "#sh",
            "node",
            "hops",
            "RDEX ns",
            "UPGRD ns",
            "UOWN ns",
            "RDEX best GB/s",
            "UPGRD best GB/s",
            "zero best GB/s",
        ],
        &rows,
    )
}

impl Presenter for InvalidatePresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["invalidate", "invalidate-plan"]
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        super::text::render(records)
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("invalidate", "Invalidation sweep"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let recs: Vec<&Record> = of(records, "invalidate").collect();
        if recs.is_empty() {
            return None;
        }
        let lat = chart(
            "invalidation latency",
            "ns per load",
            series(
                &recs,
                &[
                    ("rdex_latency", "RDEX"),
                    ("upgrade_latency", "UPGRD"),
                    ("uown_rdex_latency", "UOWN"),
                ],
            ),
        );
        let bw = chart(
            "invalidation bandwidth",
            "GB/s",
            series(
                &recs,
                &[
                    ("rdex_bandwidth", "RDEX"),
                    ("upgrade_bandwidth", "UPGRD"),
                    ("zero_bandwidth", "zero"),
                ],
            ),
        );
        // One sharer count draws no curve (plot returns None): the table alone shows it.
        let lat = lat.map_or(String::new(), |c| figure(Some(c), String::new()));
        Some(lat + &figure(bw, table(&recs)))
    }
    fn cards(&self, records: &[Record]) -> Vec<Card> {
        crate::cards::invalidate(records)
    }
}
