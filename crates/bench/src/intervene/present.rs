//! How intervention records are shown: latency per state, placement and distance, ΔU.

use numalab_results::plot;
use numalab_results::present::{of, Presenter};
use numalab_results::report::{figure, html_table, num};
use numalab_results::settle;
use numalab_results::Record;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `data` of a measured `intervene` record: its latency over the unowned read's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterveneData {
    /// Median latency minus the median unowned latency at the same distance (None
    /// when either is missing).
    pub delta_u_ns: Option<f64>,
    /// How `delta_u_ns` is formed.
    pub delta_u_rule: String,
    /// Every pass and what disturbed it (what `compare` and the summary read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<numalab_results::disturb::PassLog>,
}

/// Intervention placements with their unowned references (and the dry-run plan).
pub struct IntervenePresenter;

impl Presenter for IntervenePresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["intervene", "intervene-uown", "intervene-plan"]
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        super::text::render(records)
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("intervene", "Intervention placements"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let uown: BTreeMap<u64, &Record> = of(records, "intervene-uown")
            .filter_map(|r| Some((r.parameters["hops"].as_u64()?, r)))
            .collect();
        // An unsettled median reads "unsettled (why; figure)" and is not drawn.
        let cell = |r: Option<&Record>| {
            r.map_or("-".into(), |r| settle::line(r, num(r.median("latency"), 1)))
        };
        let rows: Vec<Vec<String>> = of(records, "intervene")
            .filter_map(|r| {
                let p = &r.parameters;
                let h = p["hops"].as_u64()?;
                let v = r.median("latency");
                let ur = uown.get(&h).copied();
                let u = ur.and_then(|u| u.median("latency"));
                let both = r.settled() && ur.is_none_or(|u| u.settled());
                let du = v.zip(u).filter(|_| both).map(|(v, u)| v - u);
                Some(vec![
                    p["state"].as_str()?.into(),
                    h.to_string(),
                    p["placement"].as_str()?.into(),
                    cell(ur),
                    cell(Some(r)),
                    num(du, 1),
                ])
            })
            .collect();
        if rows.is_empty() {
            return None;
        }
        let bars: Vec<(String, f64)> = rows
            .iter()
            .filter_map(|r| Some((format!("{} {}h {}", r[0], r[1], r[2]), r[4].parse().ok()?)))
            .collect();
        let chart = plot::bar_chart("intervention latency (median, ns)", "ns per load", &bars);
        Some(figure(
            chart,
            html_table(
                &["state", "hops", "placement", "UOWN ns", "ns", "ΔU ns"],
                &rows,
            ),
        ))
    }
}
