//! How the tiers records are shown: the text, and the report's section.

use super::data::{TierNode, TierSystem};
use super::text;
use numalab_results::present::{of, Presenter};
use numalab_results::report::{esc, html_table};
use numalab_results::Record;

/// Memory tiers: the kernel's, the firmware's and the measured.
pub struct TiersPresenter;

fn list(title: &str, items: &[String]) -> String {
    let li: String = items.iter().map(|i| format!("<li>{i}</li>")).collect();
    format!("<h3>{}</h3><ul>{li}</ul>", esc(title))
}

impl Presenter for TiersPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["tiers", "tiers-system", "tiers-plan"]
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some(("tiers", "Memory tiers"))
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        text::render(records)
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let sys_rec = of(records, "tiers-system").last()?;
        let sys: TierSystem = sys_rec.data_as().ok()?;
        let nodes: Vec<TierNode> = of(records, "tiers")
            .filter_map(|r| r.data_as().ok())
            .collect();
        let mut h = html_table(&text::HEADER, &text::rows(&nodes));
        h.push_str(&format!("<p>{}</p>", esc(text::MEMORY)));
        let state: Vec<String> = text::state_lines(&sys).iter().map(|l| esc(l)).collect();
        h.push_str(&list("State", &state));
        let f: Vec<String> = sys.findings.iter().map(|f| esc(&f.text)).collect();
        h.push_str(&list("Findings", &f));
        let r: Vec<String> = sys
            .recommendations
            .iter()
            .map(|r| {
                let cmds: String = r
                    .commands
                    .iter()
                    .map(|c| format!("<code>{}</code><br>", esc(c)))
                    .collect();
                format!("{}<br>{cmds}", esc(&r.text))
            })
            .collect();
        h.push_str(&list("Recommendations", &r));
        let u: Vec<String> = text::unavailable(&sys, sys_rec)
            .iter()
            .map(|u| esc(u))
            .collect();
        if !u.is_empty() {
            h.push_str(&list("Unavailable", &u));
        }
        Some(h)
    }
}
