//! How latency records are shown: the sweep's curve and plateaus, and the latency of
//! prepared coherence states (report sections and summary cards).

use crate::sweep::Plateau;
use numalab_results::plot::{self, Flag, LineChart, Marks, Segment, Series};
use numalab_results::present::{of, Presenter};
use numalab_results::report::{bytes, figure, html_table, num};
use numalab_results::summary::Card;
use numalab_results::Record;
use numalab_topo::CacheInfo;
use serde::{Deserialize, Serialize};

/// One size of a sweep: the fastest and the median pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// Buffer size.
    pub size_bytes: u64,
    /// Fastest pass, ns per load.
    pub min_ns: f64,
    /// Median pass, ns per load.
    pub median_ns: f64,
    /// Set when this size was far above both neighbours and was measured again (the
    /// figures above are then the second run's); absent: measured once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remeasured: Option<Remeasured>,
}

/// A sweep size measured twice because its first run was an outlier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Remeasured {
    /// The first run's fastest pass, ns per load.
    pub first_min_ns: f64,
    /// The first run's median pass, ns per load.
    pub first_median_ns: f64,
    /// Whether the second run is still an outlier (then it is labelled so).
    pub persisted: bool,
}

/// What the chart and table say of a point measured twice.
pub const PERSISTED: &str = "outlier (persisted after re-measure)";

impl SweepPoint {
    /// The note on this point: empty when it was measured once.
    pub fn note(&self) -> String {
        match &self.remeasured {
            None => String::new(),
            Some(r) if r.persisted => PERSISTED.into(),
            Some(r) => format!(
                "re-measured: the first run's median {:.1} ns was an outlier",
                r.first_median_ns
            ),
        }
    }
}

/// `data` of a `latency-sweep` record: the curve, its plateaus and the caches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepData {
    /// The curve, smallest size first.
    pub points: Vec<SweepPoint>,
    /// Runs of sizes with the same latency, matched to cache levels.
    pub plateaus: Vec<Plateau>,
    /// The data caches the topology reports.
    pub topology_caches: Vec<CacheInfo>,
}

/// The core clock measured on the requestor's CPU just before and just after a size's
/// timed passes (median of [`CLOCK_PASSES`] passes of dependent adds each; see
/// `numalab_probe::core_clock`): the provenance of the `latency_cycles` figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CoreClock {
    /// GHz before the timed passes.
    pub before_ghz: f64,
    /// GHz after them.
    pub after_ghz: f64,
}

impl CoreClock {
    /// The clock a figure's cycles are counted at: the mean of before and after.
    pub fn ghz(&self) -> f64 {
        (self.before_ghz + self.after_ghz) / 2.0
    }
}

/// Passes of the add chain before and after each size's timed passes.
pub const CLOCK_PASSES: usize = 9;

/// `data` of a `latency` record: every pass, and the restart search when run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyData {
    /// ns per load of every timed pass (disturbed and re-measured ones included, in
    /// the order of `disturbance.passes`).
    pub samples_ns: Vec<f64>,
    /// The restart search's outcome (only with `--restart`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<crate::restart::RestartOutcome>,
    /// What disturbed each pass, and which ones the statistics use (absent in older
    /// records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<numalab_results::disturb::PassLog>,
    /// The core clock measured beside the passes (absent in older records, and where
    /// the architecture has no add chain: then `unavailable` says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_clock: Option<CoreClock>,
}

/// The memory-hierarchy sweep.
pub struct SweepPresenter;

impl Presenter for SweepPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["latency-sweep"]
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("hierarchy", "Latency versus size"))
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        super::sweep_text(records)
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let mut out = String::new();
        for r in of(records, "latency-sweep") {
            let d: SweepData = r.data_as().ok()?;
            out.push_str(&sweep_figure(r, &d));
        }
        (!out.is_empty()).then_some(out)
    }
    fn cards(&self, records: &[Record]) -> Vec<Card> {
        crate::cards::sweep(records)
    }
}

/// A latency with three significant digits at most ("4.85", "12.1", "195").
fn short_ns(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

fn sweep_figure(r: &Record, d: &SweepData) -> String {
    let curve = |f: fn(&SweepPoint) -> f64| -> Vec<(f64, f64)> {
        d.points
            .iter()
            .map(|p| (p.size_bytes as f64, f(p)))
            .collect()
    };
    let (markers, marks) = sweep_marks(d);
    let kernel = format!(
        "{} {}",
        r.parameters["kernel"].as_str().unwrap_or(""),
        r.parameters["state"].as_str().unwrap_or("")
    );
    let chart = plot::loglog_marked(
        &LineChart {
            title: r.name.clone(),
            x_label: "buffer size".into(),
            y_label: "ns per load".into(),
            log_x: true,
            x_bytes: true,
            series: vec![
                Series {
                    name: format!("{kernel}: median pass"),
                    points: curve(|p| p.median_ns),
                },
                Series {
                    name: "fastest pass (plateaus are found in these)".into(),
                    points: curve(|p| p.min_ns),
                },
            ],
            markers,
        },
        &marks,
    );
    let tables = sweep_tables(d);
    figure(chart, tables)
}

/// The chart's cache markers (the topology's) and marks (the measured plateaus, and
/// the sizes whose outlier persisted when remeasured).
fn sweep_marks(d: &SweepData) -> (Vec<(f64, String)>, Marks) {
    // The topology's caches AND the plateaus measured are both drawn: where they
    // disagree (a VM's L3 share far below what the topology says) the reader sees it.
    let markers = d
        .topology_caches
        .iter()
        .map(|c| {
            (
                c.bytes as f64,
                format!("L{} {}", c.level, plot::short_bytes(c.bytes as f64)),
            )
        })
        .collect();
    let marks = Marks {
        segments: d
            .plateaus
            .iter()
            .map(|p| Segment {
                from: p.from_bytes as f64,
                to: p.to_bytes as f64,
                y: p.median_ns,
                label: format!("{} {} ns", p.level, short_ns(p.median_ns)),
            })
            .collect(),
        flags: d
            .points
            .iter()
            .filter(|p| p.remeasured.as_ref().is_some_and(|m| m.persisted))
            .map(|p| Flag {
                x: p.size_bytes as f64,
                y: p.median_ns,
                label: PERSISTED.into(),
            })
            .collect(),
    };
    (markers, marks)
}

/// The plateaus beside what the topology says, and every point, as HTML tables.
fn sweep_tables(d: &SweepData) -> String {
    let plateaus: Vec<Vec<String>> = d
        .plateaus
        .iter()
        .map(|p| {
            vec![
                p.level.clone(),
                format!("{} – {}", bytes(p.from_bytes), bytes(p.to_bytes)),
                num(Some(p.median_ns), 2),
                p.topology_bytes.map(bytes).unwrap_or("-".into()),
            ]
        })
        .collect();
    let pts: Vec<Vec<String>> = d
        .points
        .iter()
        .map(|p| {
            vec![
                bytes(p.size_bytes),
                format!("{:.2}", p.median_ns),
                format!("{:.2}", p.min_ns),
                p.note(),
            ]
        })
        .collect();
    html_table(
        &["plateau", "sizes", "median ns", "topology says"],
        &plateaus,
    ) + &html_table(&["size", "median ns", "fastest ns", "note"], &pts)
}

/// Latency per prepared coherence state (and the dry-run plan records).
pub struct StatesPresenter;

fn is_state(r: &Record) -> bool {
    r.parameters["state"].as_str().is_some_and(|s| s != "warm")
}

impl Presenter for StatesPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["latency", "latency-plan"]
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("states", "Latency per coherence state"))
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        super::text(records)
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let rows: Vec<(String, f64, &Record)> = of(records, "latency")
            .filter(|r| is_state(r))
            .filter_map(|r| {
                let label = format!(
                    "{} {}",
                    r.parameters["state"].as_str()?,
                    r.parameters["kernel"].as_str()?
                );
                Some((label, r.median("latency")?, r))
            })
            .collect();
        let restarts: String = of(records, "latency").filter_map(restart_figure).collect();
        if rows.is_empty() {
            return (!restarts.is_empty()).then_some(restarts);
        }
        let bars: Vec<(String, f64)> = rows.iter().map(|(l, v, _)| (l.clone(), *v)).collect();
        let chart = plot::bar_chart("latency per line state (median, ns)", "ns per load", &bars);
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|(l, v, r)| {
                vec![
                    l.clone(),
                    format!("{v:.1}"),
                    num(r.median("own_cache_reference"), 1),
                    bytes(r.parameters["size_bytes"].as_u64().unwrap_or(0)),
                    helpers(&r.parameters["helper_cpus"]),
                ]
            })
            .collect();
        let states = figure(
            chart,
            html_table(
                &[
                    "state request",
                    "median ns",
                    "own-cache ns",
                    "size",
                    "helpers",
                ],
                &table,
            ),
        );
        Some(states + &restarts)
    }
    fn cards(&self, records: &[Record]) -> Vec<Card> {
        crate::cards::states(records)
    }
}

/// The helper CPUs as "CPU 1", "CPUs 1-3", or "none" (never a JSON list).
fn helpers(v: &serde_json::Value) -> String {
    let cpus: Vec<u32> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_u64().map(|c| c as u32))
        .collect();
    match cpus.len() {
        0 => "none".into(),
        1 => format!("CPU {}", cpus[0]),
        _ => format!("CPUs {}", numalab_topo::cpulist::format(&cpus)),
    }
}

/// The restart search of one record (the thesis' Figures 4.4–4.6): back-to-back,
/// L1-resident and their difference over the dependent work k, the stable window marked.
fn restart_figure(r: &Record) -> Option<String> {
    let o = r.data_as::<LatencyData>().ok()?.restart?;
    let line = |name: &str, f: fn(&crate::restart::Step) -> f64| Series {
        name: name.into(),
        points: o.curve.iter().map(|s| (s.work as f64, f(s))).collect(),
    };
    let chart = plot::line_chart(&LineChart {
        title: format!("{}: restart search", r.name),
        x_label: "dependent work operations k".into(),
        y_label: "ns per load".into(),
        log_x: false,
        x_bytes: false,
        series: vec![
            line("back-to-back", |s| s.b2b_ns),
            line("L1-resident, same work", |s| s.l1_ns),
            line("restart = difference", |s| s.restart_ns),
        ],
        markers: vec![
            (o.stable_from as f64, format!("k = {}", o.stable_from)),
            (o.stable_to as f64, format!("k = {}", o.stable_to)),
        ],
    });
    let found = if o.converged { "stable" } else { "k ran out" };
    let row = vec![
        format!("{} to {}", o.stable_from, o.stable_to),
        found.to_string(),
        format!("{:.1}", o.restart_ns()),
        o.curve.len().to_string(),
    ];
    let head = ["window k", "search", "restart ns (window minimum)", "steps"];
    Some(figure(chart, html_table(&head, &[row])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::restart::{RestartOutcome, Step};
    use numalab_results::Provenance;

    #[test]
    fn the_restart_search_is_drawn_with_its_stable_window() {
        let curve: Vec<Step> = (0..12)
            .map(|k| Step {
                work: k,
                b2b_ns: 100.0 + k as f64,
                l1_ns: 2.0 + k as f64,
                restart_ns: 98.0,
            })
            .collect();
        let restart = RestartOutcome {
            curve,
            converged: true,
            stable_from: 3,
            stable_to: 11,
            window_values: vec![98.0; 9],
        };
        let mut r = Record::new(
            "latency",
            "read warm",
            Provenance::collect("test", "synthetic"),
            serde_json::json!({"state": "warm", "kernel": "read"}),
        );
        r.set_data(&LatencyData {
            samples_ns: vec![100.0],
            restart: Some(restart),
            disturbance: None,
            core_clock: None,
        });
        let html = StatesPresenter.html(&[r]).expect("a restart figure");
        assert!(
            html.contains("<svg") && html.contains("restart search"),
            "{html}"
        );
        assert!(html.contains("3 to 11") && html.contains("98.0"), "{html}");
        assert!(!html.contains("..="));
    }
}
