//! How core-to-core records are shown: the heatmaps, and the median CAS RTT/2 summary cards.

use super::data::C2cMatrixData;
use numalab_results::plot;
use numalab_results::present::{of, Presenter};
use numalab_results::report::{esc, figure, html_table, num};
use numalab_results::settle;
use numalab_results::summary::Card;
use numalab_results::Record;

/// Core to core: pair records, the matrix record and the dry-run plan.
pub struct C2cPresenter;

/// The pairs that did not settle, each "unsettled (why)": the footnote of the
/// "unsettled*" cells, whose heatmap squares are left blank.
fn unsettled_html(records: &[Record]) -> String {
    let items: Vec<String> = of(records, "c2c")
        .filter(|r| !r.settled())
        .map(|r| {
            let why = r.settle.as_ref().and_then(|s| s.why.clone());
            format!(
                "<li>{}: {} ({})</li>",
                esc(&r.name),
                settle::UNSETTLED,
                esc(why.as_deref().unwrap_or("no reason recorded"))
            )
        })
        .collect();
    if items.is_empty() {
        return String::new();
    }
    let head = match items.len() {
        1 => "1 pair did not settle; its squares are blank and its cells marked".to_string(),
        n => format!("{n} pairs did not settle; their squares are blank and their cells marked"),
    };
    format!("<p>{head}:</p><ul>{}</ul>", items.join(""))
}

impl Presenter for C2cPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["c2c-matrix", "c2c", "c2c-plan"]
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        match of(records, "c2c-plan").last() {
            Some(p) => super::text::plan_text(p),
            None => super::text::matrix_text(records),
        }
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("c2c", "Core to core"))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let d: C2cMatrixData = of(records, "c2c-matrix").last()?.data_as().ok()?;
        // Rows in topology order with domain boundaries drawn: the matrix's blocks are
        // then the machine's L3s, nodes and packages.
        let (order, bounds) = super::order::topology_order(&d.cpus, &super::order::pus(records));
        let cpus: Vec<String> = order.iter().map(|&i| d.cpus[i].to_string()).collect();
        let mut out = String::new();
        if !bounds.is_empty() {
            out.push_str(
                "<p>CPUs in topology order (package, node, L3, core); lines mark L3 (thin), node and package (thick) boundaries.</p>",
            );
        }
        for (m, unsettled, title) in [
            (
                &d.cas_rtt_half_ns,
                &d.cas_unsettled,
                "CAS round trip / 2 (ns)",
            ),
            (
                &d.modified_read_ns,
                &d.read_unsettled,
                "read of a line Modified in the other CPU (ns)",
            ),
        ] {
            if m.iter().flatten().all(|v| v.is_none()) {
                continue;
            }
            // An unsettled cell is drawn blank and its table cell says so.
            let is_unsettled = |i: usize, j: usize| {
                let (a, b) = (d.cpus[i], d.cpus[j]);
                unsettled
                    .iter()
                    .any(|p| (p[0], p[1]) == (a, b) || (p[0], p[1]) == (b, a))
            };
            let shown: Vec<Vec<Option<f64>>> = (0..m.len())
                .map(|i| {
                    (0..m[i].len())
                        .map(|j| m[i][j].filter(|_| !is_unsettled(i, j)))
                        .collect()
                })
                .collect();
            let shown = plot::permute(&shown, &order);
            let chart = plot::heatmap_domains(title, &cpus, &cpus, &shown, &bounds);
            let cells: Vec<Vec<String>> = order
                .iter()
                .map(|&i| {
                    let mut row = vec![d.cpus[i].to_string()];
                    row.extend(order.iter().map(|&j| {
                        let v = num(m[i][j], 1);
                        if m[i][j].is_some() && is_unsettled(i, j) {
                            format!("{v} {}*", settle::UNSETTLED)
                        } else {
                            v
                        }
                    }));
                    row
                })
                .collect();
            let mut header = vec![""];
            header.extend(cpus.iter().map(|c| c.as_str()));
            out.push_str(&format!("<h3>{title}</h3>"));
            out.push_str(&figure(chart, html_table(&header, &cells)));
        }
        out.push_str(&unsettled_html(records));
        (!out.is_empty()).then_some(out)
    }
    fn cards(&self, records: &[Record]) -> Vec<Card> {
        crate::cards::c2c(records)
    }
}
