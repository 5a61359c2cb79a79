//! How the machine's own records are shown: the topology (`topo`, its data is the
//! [`numalab_topo::Machine`] itself) and resolved placements (`plan`, no section).

use crate::machine::Verified;
use crate::machine_text::{plan_text, topo_text};
use numalab_results::present::{of, Presenter};
use numalab_results::report::{bytes, html_table};
use numalab_results::summary::{Card, Group};
use numalab_results::Record;
use numalab_topo::{Machine, Plan};

/// The machine summary from the topo record (or any record's provenance).
pub struct MachinePresenter;

impl Presenter for MachinePresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["topo"]
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("machine", "Machine"))
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        let s: String = of(records, "topo")
            .filter_map(|r| Some(topo_text(&r.data_as::<Machine>().ok()?, r)))
            .collect();
        (!s.is_empty()).then_some(s)
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let prov = records.first().map(|r| &r.provenance)?;
        let mut rows = vec![
            vec!["CPU".into(), prov.cpu_model.clone().unwrap_or("-".into())],
            vec!["topology".into(), prov.topology.clone()],
            vec!["host".into(), prov.hostname.clone()],
        ];
        let topo = of(records, "topo").find_map(|t| t.data_as::<Machine>().ok());
        let Some(m) = topo else {
            return Some(html_table(&["", ""], &rows));
        };
        let caches: Vec<String> = m
            .caches
            .iter()
            .map(|c| {
                format!(
                    "L{} {} (shared by {})",
                    c.level,
                    bytes(c.bytes),
                    numalab_results::words::count(c.shared_by as u64, "CPU")
                )
            })
            .collect();
        rows.push(vec!["data caches".into(), caches.join(", ")]);
        let nodes: Vec<Vec<String>> = m
            .nodes
            .iter()
            .map(|n| {
                vec![
                    n.os.to_string(),
                    bytes(n.total_bytes),
                    n.local_cpus.len().to_string(),
                    if n.cpu_less { "CPU-less" } else { "" }.into(),
                ]
            })
            .collect();
        Some(
            html_table(&["", ""], &rows) + &html_table(&["node", "memory", "CPUs", "kind"], &nodes),
        )
    }
    fn cards(&self, records: &[Record]) -> Vec<Card> {
        machine_card(records).into_iter().collect()
    }
}

/// The machine as the summary's first card: CPU, topology and data caches, and the
/// sentence that opens the summary's paragraph.
fn machine_card(records: &[Record]) -> Option<Card> {
    let m = of(records, "topo").find_map(|t| t.data_as::<Machine>().ok())?;
    let cpu = m.cpu_model.clone().unwrap_or_else(|| "CPU".into());
    let caches: Vec<String> = m
        .caches
        .iter()
        .map(|c| {
            let per = if c.shared_by <= 1 {
                "per CPU".to_string()
            } else {
                format!("per {} CPUs", c.shared_by)
            };
            format!("L{} {} {per}", c.level, numalab_topo::fmt_bytes(c.bytes))
        })
        .collect();
    let shape = m.summary();
    Some(Card {
        group: Group::Machine,
        title: match &m.hostname {
            Some(h) => format!("{cpu} ({h})"),
            None => cpu.clone(),
        },
        detail: Some(format!("{shape}; {}", caches.join(", "))),
        figures: Vec::new(),
        remark: Some(format!(
            "{cpu}: {shape}; data caches {}.",
            caches.join(", ")
        )),
    })
}

/// Resolved placements (`numalab plan`): shown by their command, no report section.
pub struct PlanPresenter;

impl Presenter for PlanPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["plan"]
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        let mut s = String::new();
        for r in of(records, "plan") {
            let p = r.placement.as_ref()?;
            let plan: Plan = serde_json::from_value(p["resolved"].clone()).ok()?;
            let verified: Option<Verified> = serde_json::from_value(p["verified"].clone()).ok()?;
            s.push_str(&plan_text(&plan, verified.as_ref(), r));
        }
        (!s.is_empty()).then_some(s)
    }
}
