//! How `suite earth --mpi` records are shown, beside the shared-memory suite's
//! section: every measured operation (any part, including ones this file does not
//! know by name) with each metric's median, the seed's Table 1, and the masking of
//! loop 7's communication.

use numalab_results::plot::{self, LineChart, Series};
use numalab_results::present::{of, Presenter};
use numalab_results::report::{html_table, num};
use numalab_results::Record;
use serde::{Deserialize, Serialize};

/// One T of the masking curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaskPoint {
    /// Iterations per coroutine.
    pub t: usize,
    /// Median time of the masked loop, ns.
    pub median_ns: Option<f64>,
    /// Share of the baseline's communication hidden, % (null when not finite).
    pub masked_pct: Option<f64>,
}

/// The best T of the masking curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaskBest {
    /// Iterations per coroutine.
    pub t: usize,
    /// Share hidden, %.
    pub masked_pct: f64,
}

/// `data` of a `suite-earth-mpi-mask` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaskData {
    /// Every T measured.
    pub points: Vec<MaskPoint>,
    /// The T that hid the most.
    pub best: Option<MaskBest>,
}

/// One row of the seed's Table 1 (`suite-earth-seed` data is a list of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedRow {
    /// The operation.
    pub op: String,
    /// Sequential, local, ns.
    pub sequential_local_ns: f64,
    /// Sequential, remote, ns.
    pub sequential_remote_ns: f64,
    /// Pipelined, local, ns.
    pub pipelined_local_ns: f64,
    /// Pipelined, remote, ns.
    pub pipelined_remote_ns: f64,
}

/// The earth suite over MPI.
pub struct EarthMpiPresenter;

impl Presenter for EarthMpiPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &[
            "suite-earth-mpi",
            "suite-earth-mpi-mask",
            "suite-earth-mpi-breakdown",
            "suite-earth-seed",
        ]
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("earth-mpi", "Remote operations between MPI ranks (EARTH)"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let out = [
            blocks(records),
            operations(records),
            seed(records),
            crate::earth::mpi::breakdown::html(records),
            mask(records),
        ]
        .into_iter()
        .flatten()
        .collect::<String>();
        (!out.is_empty()).then_some(out)
    }
}

fn param(r: &Record, k: &str) -> String {
    match &r.parameters[k] {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// Block moves: bandwidth against block size, one line per mode.
fn blocks(records: &[Record]) -> Option<String> {
    let mut modes: std::collections::BTreeMap<String, Vec<(f64, f64)>> = Default::default();
    for r in of(records, "suite-earth-mpi").filter(|r| r.parameters["op"] == "block move (get)") {
        if let (Some(b), Some(v)) = (r.parameters["bytes"].as_f64(), r.median("bandwidth")) {
            modes.entry(param(r, "mode")).or_default().push((b, v));
        }
    }
    let chart = plot::loglog_chart(&LineChart {
        title: "block moves (MPI_Get from the remote rank)".into(),
        x_label: "block size".into(),
        y_label: "GB/s (median)".into(),
        log_x: true,
        x_bytes: true,
        series: modes
            .into_iter()
            .map(|(name, points)| Series { name, points })
            .collect(),
        markers: Vec::new(),
    })?;
    Some(format!(
        "<div class=\"fig\"><div class=\"chart\">{chart}</div></div>"
    ))
}

/// Every measured operation, whatever its part: its parameters and each metric's median.
fn operations(records: &[Record]) -> Option<String> {
    let rows: Vec<Vec<String>> = of(records, "suite-earth-mpi")
        .map(|r| {
            let medians: Vec<String> = r
                .stats
                .iter()
                .map(|s| format!("{} {:.1} {}", s.metric, s.summary.median, s.unit))
                .collect();
            vec![
                param(r, "part"),
                param(r, "op"),
                param(r, "place"),
                param(r, "mode"),
                param(r, "bytes"),
                param(r, "groups"),
                param(r, "relation"),
                medians.join("; "),
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| {
        "<h3>operations (median of passes)</h3>".to_string()
            + &html_table(
                &[
                    "part",
                    "operation",
                    "place",
                    "mode",
                    "bytes",
                    "G",
                    "ranks are",
                    "medians",
                ],
                &rows,
            )
    })
}

/// The seed's Table 1, to set beside the measured operations.
fn seed(records: &[Record]) -> Option<String> {
    let r = of(records, "suite-earth-seed").next()?;
    let rows: Vec<Vec<String>> = r
        .data_as::<Vec<SeedRow>>()
        .ok()?
        .into_iter()
        .map(|s| {
            vec![
                s.op,
                format!("{:.0}", s.sequential_local_ns),
                format!("{:.0}", s.sequential_remote_ns),
                format!("{:.0}", s.pipelined_local_ns),
                format!("{:.0}", s.pipelined_remote_ns),
            ]
        })
        .collect();
    Some(
        format!("<h3>{} (ns)</h3>", numalab_results::report::esc(&r.name))
            + &html_table(
                &[
                    "operation",
                    "seq local",
                    "seq remote",
                    "pipe local",
                    "pipe remote",
                ],
                &rows,
            ),
    )
}

/// One mask record's curve in words, for the text and the HTML table alike
/// ([`crate::earth::hide::masking_text`] at each T).
pub fn mask_curve(r: &Record) -> String {
    let base = r
        .median("baseline_comm")
        .zip(r.median("baseline_comp"))
        .map(|(a, b)| a + b);
    r.data_as::<MaskData>()
        .map(|d| d.points)
        .unwrap_or_default()
        .iter()
        .map(|p| {
            let text = crate::earth::hide::masking_text(p.masked_pct, p.median_ns, base);
            format!("T={}: {text}", p.t)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Loop 7 with u on the remote rank: the communication hidden per T.
fn mask(records: &[Record]) -> Option<String> {
    let rows: Vec<Vec<String>> = of(records, "suite-earth-mpi-mask")
        .map(|r| {
            let pts = mask_curve(r);
            vec![
                format!("×{}", param(r, "multiplier")),
                num(r.median("baseline_comm"), 0),
                num(r.median("baseline_comp"), 0),
                pts,
            ]
        })
        .collect();
    (!rows.is_empty()).then(|| {
        "<h3>loop 7: communication hidden by coroutines of T iterations</h3>".to_string()
            + &html_table(
                &[
                    "comm",
                    "baseline comm ns",
                    "baseline comp ns",
                    "masked by T",
                ],
                &rows,
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::Provenance;
    use serde_json::json;

    #[test]
    fn a_curve_reads_as_share_hidden_or_as_times_slower() {
        let mut r = Record::new(
            "suite-earth-mpi-mask",
            "loop7",
            Provenance::collect("test", "synthetic"),
            json!({"multiplier": 1}),
        );
        r.add_samples("baseline_comm", "ns", &[100.0; 3]);
        r.add_samples("baseline_comp", "ns", &[300.0; 3]);
        let point = |t, ns: f64| MaskPoint {
            t,
            median_ns: Some(ns),
            masked_pct: Some(100.0 * (400.0 - ns) / 100.0),
        };
        r.set_data(&MaskData {
            points: vec![
                point(1, 8000.0),
                point(16, 450.0),
                point(64, 350.0),
                MaskPoint {
                    t: 128,
                    median_ns: None,
                    masked_pct: None,
                },
            ],
            best: None,
        });
        assert_eq!(
            mask_curve(&r),
            "T=1: 20.0× slower, T=16: -50%, T=64: 50%, T=128: -"
        );
    }
}
