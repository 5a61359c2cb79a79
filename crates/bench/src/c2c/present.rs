//! How core-to-core records are shown: the heatmaps, and the median CAS RTT/2 summary cards.

use super::data::C2cMatrixData;
use numalab_results::plot;
use numalab_results::present::{of, Presenter};
use numalab_results::report::{figure, grid_table};
use numalab_results::summary::Card;
use numalab_results::Record;

/// Core to core: pair records, the matrix record and the dry-run plan.
pub struct C2cPresenter;

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
        for (m, title) in [
            (&d.cas_rtt_half_ns, "CAS round trip / 2 (ns)"),
            (
                &d.modified_read_ns,
                "read of a line Modified in the other CPU (ns)",
            ),
        ] {
            if m.iter().flatten().all(|v| v.is_none()) {
                continue;
            }
            let m = plot::permute(m, &order);
            let chart = plot::heatmap_domains(title, &cpus, &cpus, &m, &bounds);
            out.push_str(&format!("<h3>{title}</h3>"));
            out.push_str(&figure(chart, grid_table(&cpus, &cpus, &m)));
        }
        (!out.is_empty()).then_some(out)
    }
    fn cards(&self, records: &[Record]) -> Vec<Card> {
        crate::cards::c2c(records)
    }
}
