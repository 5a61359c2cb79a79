//! How record kinds are shown. Each experiment implements [`Presenter`] once, next to
//! the code that makes its records; the top library crate (suites) lists every
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
/// "warning: …" line each: the closing lines of a command's text.
pub fn warning_lines(records: &[Record]) -> String {
    let mut seen = std::collections::BTreeSet::new();
    let mut s = String::new();
    for w in records.iter().flat_map(|r| &r.warnings) {
        if seen.insert(w) {
            s.push_str("warning: ");
            s.push_str(w);
            s.push('\n');
        }
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
