//! How matrix records are shown: heatmaps of initiator domain × memory node.

use numalab_results::plot;
use numalab_results::present::{of, Presenter};
use numalab_results::report::{figure, grid_table};
use numalab_results::Record;
use std::collections::BTreeSet;

/// Record kind of a latency cell.
pub const KIND_LATENCY: &str = "matrix-latency";
/// Record kind of a bandwidth cell.
pub const KIND_BANDWIDTH: &str = "matrix-bandwidth";
/// Record kind of a latency cell in a plan (`--dry-run`).
pub const KIND_LATENCY_PLAN: &str = "matrix-latency-plan";
/// Record kind of a bandwidth cell in a plan (`--dry-run`).
pub const KIND_BANDWIDTH_PLAN: &str = "matrix-bandwidth-plan";

/// Latency and bandwidth matrices, and their plans.
pub struct MatrixPresenter;

impl Presenter for MatrixPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &[
            KIND_LATENCY,
            KIND_BANDWIDTH,
            KIND_LATENCY_PLAN,
            KIND_BANDWIDTH_PLAN,
        ]
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        // One matrix per kind present, latency first.
        let out: String = [
            KIND_LATENCY,
            KIND_LATENCY_PLAN,
            KIND_BANDWIDTH,
            KIND_BANDWIDTH_PLAN,
        ]
        .iter()
        .map(|k| of(records, k).cloned().collect::<Vec<_>>())
        .filter(|v| !v.is_empty())
        .map(|v| super::text::render(&v))
        .collect();
        (!out.is_empty()).then_some(out)
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("matrix", "Initiator × memory node matrices"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let mut out = String::new();
        for (kind, metric, title) in [
            (KIND_LATENCY, "latency", "latency (ns)"),
            (KIND_BANDWIDTH, "bandwidth", "bandwidth (GB/s)"),
        ] {
            let cells: Vec<(u64, u64, f64)> = of(records, kind)
                .filter_map(|r| {
                    Some((
                        r.parameters["domain"].as_u64()?,
                        r.parameters["mem_node"].as_u64()?,
                        r.median(metric)?,
                    ))
                })
                .collect();
            if cells.is_empty() {
                continue;
            }
            let doms: Vec<u64> = cells
                .iter()
                .map(|c| c.0)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let nodes: Vec<u64> = cells
                .iter()
                .map(|c| c.1)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let m: Vec<Vec<Option<f64>>> = doms
                .iter()
                .map(|d| {
                    nodes
                        .iter()
                        .map(|n| cells.iter().find(|c| c.0 == *d && c.1 == *n).map(|c| c.2))
                        .collect()
                })
                .collect();
            let rl: Vec<String> = doms.iter().map(|d| format!("dom {d}")).collect();
            let cl: Vec<String> = nodes.iter().map(|n| format!("node {n}")).collect();
            out.push_str(&format!("<h3>{title}</h3>"));
            out.push_str(&figure(
                plot::heatmap(title, &rl, &cl, &m),
                grid_table(&rl, &cl, &m),
            ));
        }
        (!out.is_empty()).then_some(out)
    }
    fn cards(&self, records: &[Record]) -> Vec<numalab_results::summary::Card> {
        crate::cards::matrix(records)
    }
}
