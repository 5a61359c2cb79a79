//! How `suite earth --mpi` records are shown, beside the shared-memory suite's
//! section: every measured operation (any part, including ones this file does not
//! know by name) with each metric's median, the seed's Table 1, and the masking of
//! loop 7's communication.

use super::data::SeedRow;
use super::plan::{Plan, KIND_PLAN};
use super::text::{earth_text, mask_curve};
use numalab_results::plot::{self, LineChart, Series};
use numalab_results::present::{of, Presenter};
use numalab_results::report::{html_table, num};
use numalab_results::Record;

/// The earth suite over MPI.
pub struct EarthMpiPresenter;

impl Presenter for EarthMpiPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &[
            "suite-earth-mpi",
            "suite-earth-mpi-mask",
            "suite-earth-mpi-breakdown",
            "suite-earth-seed",
            KIND_PLAN,
        ]
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        let mut out = String::new();
        for r in of(records, KIND_PLAN) {
            out.push_str(&r.data_as::<Plan>().ok()?.text());
        }
        if records.iter().any(|r| r.kind != KIND_PLAN) {
            out.push_str(&earth_text(records));
        }
        (!out.is_empty()).then_some(out)
    }
    fn study(&self) -> bool {
        true
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("earth-mpi", "Remote operations between MPI ranks (EARTH)"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let out = [
            blocks(records),
            operations(records),
            seed(records),
            super::breakdown::html(records),
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
    use crate::earth::mpi::{MaskData, MaskPoint};
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
