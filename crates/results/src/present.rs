//! How record kinds are shown. Each experiment implements [`Presenter`] once, next to
//! the code that makes its records; the top library crate (answers) lists every
//! presenter in one registry, which `numalab report`, the survey's report and its
//! summary cards all use. results sits below the experiments, so it only defines
//! the trait and the page; it never names an experiment's types.

use crate::plausible;
use crate::record::Record;
use crate::report::{self, Section};
use crate::summary::{self, Block, Card};

/// One record family's presentation: its kinds, its report section, its text.
pub trait Presenter: Sync {
    /// Every record kind this presenter shows (each kind belongs to exactly one presenter).
    fn kinds(&self) -> &'static [&'static str];
    /// The report section's anchor id and heading; None for kinds with no section
    /// (dry-run plans, the survey's bookkeeping).
    fn section(&self) -> Option<(&'static str, &'static str)> {
        None
    }
    /// Whether the section is a seed study's (drawn after the memory answer, collapsed).
    fn study(&self) -> bool {
        false
    }
    /// The section's body HTML, None when `records` hold nothing it can show.
    fn html(&self, _records: &[Record]) -> Option<String> {
        None
    }
    /// Readable text of these records, None when there is nothing to show.
    fn text(&self, _records: &[Record]) -> Option<String> {
        None
    }
    /// Summary cards: the headline figures, with spreads and section links, that open
    /// the report and the survey's terminal output.
    fn cards(&self, _records: &[Record]) -> Vec<Card> {
        Vec::new()
    }
    /// A block of the first screen (a per-node table, the advice), built from answers
    /// only (see [`summary::is_answer`]); None when these records answer nothing here.
    fn answer(&self, _answers: &[Record]) -> Option<Block> {
        None
    }
}

/// The records of one kind.
pub fn of<'a>(records: &'a [Record], kind: &'a str) -> impl Iterator<Item = &'a Record> + 'a {
    records.iter().filter(move |r| r.kind == kind)
}

/// The report's sections, one per presenter that has one, in registry order.
pub fn sections(registry: &[&dyn Presenter], records: &[Record]) -> Vec<Section> {
    registry
        .iter()
        .filter_map(|p| {
            let (id, title) = p.section()?;
            let what = p.kinds().first().copied().unwrap_or(id);
            Some(Section {
                id,
                title,
                absent: report::absent_reason(records, id, what),
                body: p.html(records),
                study: p.study(),
            })
        })
        .collect()
}

/// The presenter of a record kind.
pub fn find<'a>(registry: &[&'a dyn Presenter], kind: &str) -> Option<&'a dyn Presenter> {
    registry.iter().copied().find(|p| p.kinds().contains(&kind))
}

/// The whole HTML report of `records`.
pub fn render(registry: &[&dyn Presenter], records: &[Record], title: &str) -> String {
    report::page(
        title,
        &summary_html(registry, records),
        &sections(registry, records),
        &report::provenance(records),
    )
}

/// The report of an unfinished run: a "Not measured" section first, listing `missing`
/// (each "step X (why)"), then what the records hold.
pub fn render_partial(
    registry: &[&dyn Presenter],
    records: &[Record],
    title: &str,
    missing: &[String],
) -> String {
    let mut secs = vec![report::not_measured(missing)];
    secs.extend(sections(registry, records));
    report::page(
        title,
        &summary_html(registry, records),
        &secs,
        &report::provenance(records),
    )
}

/// Every presenter's summary cards, merged (a level's latency and bandwidth share a
/// card), each figure vetted against the plausibility rules and its record's settling:
/// a figure that is no answer stays on its card, marked as what it is.
pub fn cards(registry: &[&dyn Presenter], records: &[Record]) -> Vec<Card> {
    let mut cards = summary::merge(registry.iter().flat_map(|p| p.cards(records)).collect());
    summary::vet(&mut cards, records, &plausible::check(records));
    cards
}

/// Every presenter's first-screen block from the answers among `records` (settled
/// and not flagged by a plausibility rule), in registry order, then the line naming
/// what was held back and why.
pub fn blocks(registry: &[&dyn Presenter], records: &[Record]) -> Vec<Block> {
    let answers = summary::answers(records);
    let mut blocks: Vec<Block> = registry.iter().filter_map(|p| p.answer(&answers)).collect();
    if !blocks.is_empty() {
        blocks.extend(summary::held_back(records));
    }
    blocks
}

/// The report's opening: paragraph, answer blocks and cards, then the rule each
/// implausible figure broke.
fn summary_html(registry: &[&dyn Presenter], records: &[Record]) -> String {
    summary::html(&cards(registry, records), &blocks(registry, records))
        + &plausible::html(&plausible::check(records))
}

/// The summary as terminal text (empty when no presenter has a card or block), then
/// the rule each implausible figure broke.
pub fn summary_text(registry: &[&dyn Presenter], records: &[Record]) -> String {
    summary::text(&cards(registry, records), &blocks(registry, records))
        + &plausible::text(&plausible::check(records))
}

/// Every distinct warning of `records`, in order of first appearance, one
/// "warning: …" line each: the closing lines of a command's text. The warnings that
/// most passes were disturbed are one line per record kind naming each measurement
/// (and its disturbed passes), not one near-identical line per record.
pub fn warning_lines(records: &[Record]) -> String {
    let mut seen = std::collections::BTreeSet::new();
    let mut s = String::new();
    let mut mostly: Vec<(&str, Vec<String>)> = Vec::new();
    for r in records {
        for w in &r.warnings {
            if w.starts_with(crate::disturb::MOSTLY) {
                let named = match crate::disturb::PassLog::cell(r) {
                    c if c == "-" => r.name.clone(),
                    c => format!("{} ({c} passes)", r.name),
                };
                match mostly.iter_mut().find(|(k, _)| *k == r.kind) {
                    Some((_, names)) if names.contains(&named) => {}
                    Some((_, names)) => names.push(named),
                    None => mostly.push((&r.kind, vec![named])),
                }
            } else if seen.insert(w) {
                s.push_str("warning: ");
                s.push_str(w);
                s.push('\n');
            }
        }
    }
    for (kind, names) in mostly {
        s.push_str(&format!(
            "warning: {kind}: most passes were disturbed for {}: measure on a quieter machine, or see --disturbed\n",
            names.join(", ")
        ));
    }
    s
}

/// The text of every presenter that has some for `records`, in registry order.
pub fn text(registry: &[&dyn Presenter], records: &[Record]) -> String {
    registry
        .iter()
        .filter_map(|p| {
            let mine: Vec<Record> = records
                .iter()
                .filter(|r| p.kinds().contains(&r.kind.as_str()))
                .cloned()
                .collect();
            if mine.is_empty() {
                None
            } else {
                p.text(&mine)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Provenance;

    #[test]
    fn disturbed_warnings_are_one_line_per_kind_naming_each_measurement() {
        let rec = |kind: &str, name: &str, w: &str| {
            let mut r = Record::new(
                kind,
                name,
                Provenance::collect("t", "t"),
                serde_json::json!({}),
            );
            r.warnings.push(w.into());
            r
        };
        let m = |x: &str| {
            format!(
                "{} {x} — measure on a quieter machine",
                crate::disturb::MOSTLY
            )
        };
        let recs = vec![
            rec("latency", "uown", &m("8 of 10 passes disturbed")),
            rec("latency", "cexh", &m("5 of 7 passes disturbed")),
            rec("bandwidth", "readv", &m("3 of 3 passes disturbed")),
            rec("latency", "dext", "THP is off"),
            rec("latency", "dexd", "THP is off"),
        ];
        let s = warning_lines(&recs);
        assert_eq!(s.lines().count(), 3, "{s}");
        assert!(
            s.contains("warning: latency: most passes were disturbed"),
            "{s}"
        );
        assert!(s.contains("for uown, cexh: measure"), "{s}");
        assert!(
            s.contains("bandwidth: most passes were disturbed for readv"),
            "{s}"
        );
        assert_eq!(s.matches("THP is off").count(), 1);
    }
}
