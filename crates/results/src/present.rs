//! How record kinds are shown. Each experiment implements [`Presenter`] once, next to
//! the code that makes its records; the top library crate (suites) lists every
//! presenter in one registry, which `numalab report`, the survey's report and its
//! headline table all use. results sits below the experiments, so it only defines
//! the trait and the page; it never names an experiment's types.

use crate::record::Record;
use crate::report::{self, Section};

/// One record family's presentation: its kinds, its report section, its text.
pub trait Presenter: Sync {
    /// Every record kind this presenter shows (each kind belongs to exactly one presenter).
    fn kinds(&self) -> &'static [&'static str];
    /// The report section's anchor id and heading; None for kinds with no section
    /// (dry-run plans, the survey's bookkeeping).
    fn section(&self) -> Option<(&'static str, &'static str)> {
        None
    }
    /// The section's body HTML, None when `records` hold nothing it can show.
    fn html(&self, _records: &[Record]) -> Option<String> {
        None
    }
    /// Readable text of these records, None when there is nothing to show.
    fn text(&self, _records: &[Record]) -> Option<String> {
        None
    }
    /// Headline rows (what, value, unit) for the survey's summary table.
    fn headline(&self, _records: &[Record]) -> Vec<[String; 3]> {
        Vec::new()
    }
}

/// The records of one kind.
pub fn of<'a>(records: &'a [Record], kind: &'a str) -> impl Iterator<Item = &'a Record> + 'a {
    records.iter().filter(move |r| r.kind == kind)
}

/// A headline row with `digits` decimals; None when the value is absent.
pub fn headline_row(
    what: String,
    v: Option<f64>,
    unit: &str,
    digits: usize,
) -> Option<[String; 3]> {
    v.map(|v| [what, format!("{v:.digits$}"), unit.to_string()])
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
    report::page(title, &secs, &report::provenance(records))
}

/// The headline table of `records` (empty when none of them has a headline).
pub fn headline(registry: &[&dyn Presenter], records: &[Record]) -> String {
    let rows: Vec<Vec<String>> = registry
        .iter()
        .flat_map(|p| p.headline(records))
        .map(Vec::from)
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from("\nHeadline figures (medians)\n");
    s.push_str(&crate::output::table(
        &["measurement", "value", "unit"],
        &rows,
    ));
    s.push('\n');
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
