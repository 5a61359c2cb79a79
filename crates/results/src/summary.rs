//! The report's summary: cards of headline figures (each with its spread and a link to
//! the section it comes from) and a paragraph describing the machine's shape, built
//! from the cards alone so the words can never say more than was measured. The same
//! cards are the terminal's first table.

use crate::stats::Summary;
use crate::Record;
use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// Which row of the summary a card sits in; rows are shown in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Group {
    /// What was measured: CPU, topology and caches (no figures).
    Machine,
    /// One card per level of the memory hierarchy (L1 … memory).
    Hierarchy,
    /// One card per memory node class: local, each hop class, CPU-less tiers.
    Memory,
    /// Core to core: the fastest and slowest pair.
    Cores,
    /// The fitted latency model.
    Model,
    /// Coherence states, invalidation and latency under load.
    Coherence,
}

impl Group {
    /// The row's heading.
    pub fn title(self) -> &'static str {
        match self {
            Group::Machine => "Machine",
            Group::Hierarchy => "Memory hierarchy",
            Group::Memory => "Memory nodes",
            Group::Cores => "Core to core",
            Group::Model => "Latency model",
            Group::Coherence => "Coherence and load",
        }
    }
}

/// How far a figure's samples spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Low end.
    pub lo: f64,
    /// High end.
    pub hi: f64,
    /// What the range is, e.g. "p5–p95 of 30 passes".
    pub what: String,
}

impl Spread {
    /// The p5–p95 range of a metric's samples.
    pub fn p5_p95(s: &Summary, of: &str) -> Spread {
        Spread {
            lo: s.p5,
            hi: s.p95,
            what: format!("p5–p95 of {} {of}", s.n),
        }
    }
    /// The smallest to largest of `values` (None when fewer than two).
    pub fn range(values: &[f64], of: &str) -> Option<Spread> {
        if values.len() < 2 {
            return None;
        }
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Spread {
            lo,
            hi,
            what: format!("range over {} {of}", values.len()),
        })
    }
}

/// One figure on a card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// What it is on the card: "latency", "read, 1 core".
    pub label: String,
    /// The median (or the fitted value).
    pub value: f64,
    /// Unit: "ns", "GB/s".
    pub unit: String,
    /// Decimals to print.
    pub digits: usize,
    /// Its spread, when it has samples.
    pub spread: Option<Spread>,
    /// The report section it comes from (anchor id).
    pub section: String,
    /// The record and metric it was read from, when one record holds it, so the
    /// plausibility flags and the record's settling can be checked against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
    /// Shown instead of the value when the figure is no answer: "implausible (rule …)"
    /// or "unsettled (…)"; None for a plain figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
}

/// The record (by [`crate::plausible::key`]) and metric a figure was read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// The record's identity.
    pub key: String,
    /// The metric.
    pub metric: String,
}

impl Figure {
    /// A figure with no spread yet.
    pub fn new(label: &str, value: f64, unit: &str, digits: usize, section: &str) -> Figure {
        Figure {
            label: label.into(),
            value,
            unit: unit.into(),
            digits,
            spread: None,
            section: section.into(),
            source: None,
            verdict: None,
        }
    }
    /// This figure read from `metric` of `r`.
    pub fn from(mut self, r: &Record, metric: &str) -> Figure {
        self.source = Some(Source {
            key: crate::plausible::key(r),
            metric: metric.into(),
        });
        self
    }
    /// This figure with `spread`.
    pub fn with(mut self, spread: Option<Spread>) -> Figure {
        self.spread = spread;
        self
    }
    /// "1.73 ns", or the verdict when the figure is no answer.
    pub fn value_text(&self) -> String {
        match &self.verdict {
            Some(v) => v.clone(),
            None => format!("{:.*} {}", self.digits, self.value, self.unit),
        }
    }
    /// "1.67–2.05" (same decimals as the value), or "" without a spread.
    pub fn spread_text(&self) -> String {
        self.spread
            .as_ref()
            .map(|s| format!("{:.*}–{:.*}", self.digits, s.lo, self.digits, s.hi))
            .unwrap_or_default()
    }
}

/// One card: a level, node class, pair or model, with its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Card {
    /// The row it sits in.
    pub group: Group,
    /// Its name: "L2", "memory", "1 hop", "CPU-less node 2", "fastest pair".
    pub title: String,
    /// A short line under the title: "24 KiB – 256 KiB", "CPU 0 ↔ 1".
    pub detail: Option<String>,
    /// Its figures, in order.
    pub figures: Vec<Figure>,
    /// A sentence the card's figures need: a machine card's goes in the paragraph,
    /// any other card's beside its figures (e.g. a measured level that disagrees with
    /// the topology), each distinct sentence once.
    pub remark: Option<String>,
}

impl Card {
    /// A card with one figure.
    pub fn one(group: Group, title: &str, fig: Figure) -> Card {
        Card {
            group,
            title: title.into(),
            detail: None,
            figures: vec![fig],
            remark: None,
        }
    }
    /// The figure labelled `label`.
    pub fn figure(&self, label: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.label == label)
    }
}

/// The median and p5–p95 spread of a record's metric, as a figure.
pub fn stat_figure(
    r: &Record,
    metric: &str,
    label: &str,
    unit: &str,
    digits: usize,
    section: &str,
    samples: &str,
) -> Option<Figure> {
    let s = &r.stat(metric)?.summary;
    Some(
        Figure::new(label, r.figure(metric)?, unit, digits, section)
            .with(Some(Spread::p5_p95(s, samples)))
            .from(r, metric),
    )
}

/// The one hook between the figures and the rules: a figure whose source record broke
/// a plausibility rule shows "implausible (rule …)", one whose record did not settle
/// shows "unsettled (…)", instead of its value; [`describe`] leaves both out.
pub fn vet(cards: &mut [Card], records: &[Record], flags: &[crate::plausible::Flag]) {
    for f in cards.iter_mut().flat_map(|c| c.figures.iter_mut()) {
        let Some(src) = &f.source else { continue };
        if let Some(flag) = flags.iter().find(|x| x.names(&src.key, &src.metric)) {
            f.verdict = Some(format!("implausible (rule {})", flag.rule));
        } else if let Some(r) = records
            .iter()
            .find(|r| !r.settled() && crate::plausible::key(r) == src.key)
        {
            let why = r.settle.as_ref().and_then(|s| s.why.clone());
            f.verdict = Some(match why {
                Some(w) => format!("unsettled ({w})"),
                None => "unsettled".into(),
            });
        }
    }
}

/// The cards with only the figures that are answers (no verdict); cards left empty go.
fn answer_cards(cards: &[Card]) -> Vec<Card> {
    cards
        .iter()
        .cloned()
        .filter_map(|mut c| {
            c.figures.retain(|f| f.verdict.is_none());
            (!c.figures.is_empty() || c.group == Group::Machine).then_some(c)
        })
        .collect()
}

/// Cards from several presenters merged: cards with the same group and title become
/// one (figures appended in order), so a cache level's latency and bandwidth, which
/// different experiments measure, share a card. Groups keep their order; within a
/// group, cards keep the order they first appeared in.
pub fn merge(cards: Vec<Card>) -> Vec<Card> {
    let mut out: Vec<Card> = Vec::new();
    for c in cards {
        match out
            .iter_mut()
            .find(|o| o.group == c.group && o.title == c.title)
        {
            Some(o) => {
                o.figures.extend(c.figures);
                if o.detail.is_none() {
                    o.detail = c.detail;
                }
                if o.remark.is_none() {
                    o.remark = c.remark;
                }
            }
            None => out.push(c),
        }
    }
    // Stable: cards keep their first-seen order inside a group.
    out.sort_by_key(|c| c.group);
    out
}

fn fig_of<'a>(cards: &'a [Card], group: Group, title: &str, label: &str) -> Option<&'a Figure> {
    cards
        .iter()
        .find(|c| c.group == group && c.title == title)?
        .figure(label)
}

fn ns(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.1} ns")
    } else {
        format!("{v:.0} ns")
    }
}

/// The paragraph: the machine's shape in words, from the cards' answers only (a
/// figure marked implausible or unsettled is never stated).
pub fn describe(cards: &[Card]) -> String {
    let cards = &answer_cards(cards);
    let mut s: Vec<String> = cards
        .iter()
        .filter(|c| c.group == Group::Machine)
        .filter_map(|c| c.remark.clone())
        .collect();
    hierarchy_sentence(cards, &mut s);
    memory_sentences(cards, &mut s);
    bandwidth_sentence(cards, &mut s);
    pair_sentence(cards, &mut s);
    mpi_sentence(cards, &mut s);
    // Other cards' remarks explain one figure: they sit beside it (html, text), not here.
    s.join(" ")
}

/// A load in the nearest and farthest level of the hierarchy, and the ones between.
/// A sweep plateau no cache explains ("unmatched, within L3": on a VM, the share of a
/// host's L3 this guest had that minute; "unmatched, beyond memory": TLB reach) is no
/// level of the machine: its card shows it, the sentence does not call it one. Memory
/// is the chase of unowned lines where that settled ([`UOWN`]): the sweep's memory
/// plateau is a median of per-size minima (the fastest pass of each size, which finds
/// the levels) over lines 64 B apart that the adjacent-line prefetcher helps, so on a
/// shared host it reads the host's best moment (a fresh clone's quiet survey: 83 ns,
/// its sizes' medians 81–135, the unowned chase 132 ns, the unloaded point 117). The
/// sweep's plateau stands where the chase is missing or not beyond every cache level.
fn hierarchy_sentence(cards: &[Card], out: &mut Vec<String>) {
    let mut levels: Vec<(&str, &Figure)> = cards
        .iter()
        .filter(|c| c.group == Group::Hierarchy && !c.title.starts_with("unmatched"))
        .filter_map(|c| Some((c.title.as_str(), c.figure("latency")?)))
        .collect();
    let mut how = "";
    let uown = fig_of(cards, Group::Coherence, UOWN, "latency");
    // Only beyond every cache level, so the sentence never orders the hierarchy wrongly.
    let beyond = |u: &&Figure| {
        levels
            .iter()
            .filter(|(t, _)| *t != "memory")
            .all(|(_, f)| f.value < u.value)
    };
    if let Some(u) = uown.filter(beyond) {
        levels.retain(|(t, _)| *t != "memory");
        levels.push(("memory", u));
        how = ", a chase of lines flushed from every cache";
    }
    if let (Some(first), Some(last)) = (levels.first(), levels.last()) {
        if levels.len() > 1 {
            let mid: Vec<String> = levels[1..levels.len() - 1]
                .iter()
                .map(|(t, f)| format!("{} in {t}", ns(f.value)))
                .collect();
            let mid = if mid.is_empty() {
                String::new()
            } else {
                format!(", {}", mid.join(", "))
            };
            out.push(format!(
                "A load takes {} in {}{mid} and {} in {} ({:.0}× {}{how}).",
                ns(first.1.value),
                first.0,
                ns(last.1.value),
                last.0,
                last.1.value / first.1.value,
                first.0
            ));
        }
    }
}

/// The card of a chase over unowned lines (flushed from every cache, chased far
/// enough apart that the adjacent-line prefetcher cannot help): a load from memory.
pub const UOWN: &str = "lines uown";

/// Each remote memory against local: latency, and bandwidth where measured.
fn memory_sentences(cards: &[Card], out: &mut Vec<String>) {
    let local = fig_of(cards, Group::Memory, "local", "latency");
    let local_bw = fig_of(cards, Group::Memory, "local", "bandwidth");
    for c in cards
        .iter()
        .filter(|c| c.group == Group::Memory && c.title != "local")
    {
        let (Some(l), Some(f)) = (local, c.figure("latency")) else {
            continue;
        };
        let mut line = format!(
            "Memory {} is {:.1}× slower than local ({} against {})",
            if c.title.starts_with("CPU-less") {
                format!("on the {}", c.title)
            } else {
                format!("{} away", c.title)
            },
            f.value / l.value,
            ns(f.value),
            ns(l.value)
        );
        if let (Some(lb), Some(b)) = (local_bw, c.figure("bandwidth")) {
            let _ = write!(line, " and gives {:.2}× its bandwidth", b.value / lb.value);
        }
        line.push('.');
        out.push(line);
    }
    let nodes = cards.iter().filter(|c| c.group == Group::Memory).count();
    if nodes <= 1 {
        out.push("No remote memory was measured.".into());
    }
}

/// One core's streaming bandwidth, and all cores' together.
fn bandwidth_sentence(cards: &[Card], out: &mut Vec<String>) {
    let bw1 = cards
        .iter()
        .filter(|c| c.group == Group::Hierarchy)
        .filter_map(|c| Some((c, c.figures.iter().find(|f| f.label.ends_with(", 1 core"))?)))
        .next_back();
    if let Some((c, one)) = bw1 {
        let all = c.figures.iter().find(|f| {
            f.label.contains(" cores")
                && f.label
                    .starts_with(one.label.split(',').next().unwrap_or(""))
        });
        let mut line = format!("One core streams {:.1} GB/s from {}", one.value, c.title);
        // Belt and braces beside the scaling rule: a ratio no core count explains is
        // never printed, whatever records the cards came from.
        let possible = |a: &&Figure| {
            let n: f64 = a
                .label
                .split(", ")
                .nth(1)
                .and_then(|t| t.split(' ').next()?.parse().ok())
                .unwrap_or(1.0);
            let x = a.value / one.value;
            let tol = crate::plausible::BANDWIDTH_SCALING_TOL;
            x >= 1.0 - tol && x <= n * (1.0 + tol)
        };
        if let Some(a) = all.filter(possible) {
            let _ = write!(
                line,
                "; {} together {:.1} GB/s ({:.1}×)",
                a.label.split(", ").nth(1).unwrap_or("all cores"),
                a.value,
                a.value / one.value
            );
        }
        line.push('.');
        out.push(line);
    }
}

/// The fastest (and slowest) hand-over of a line between two cores.
fn pair_sentence(cards: &[Card], out: &mut Vec<String>) {
    let first_pair = ["fastest pair", "the one pair"].into_iter().find_map(|t| {
        let c = cards
            .iter()
            .find(|c| c.group == Group::Cores && c.title == t)?;
        Some((c, c.figure("CAS round trip / 2")?))
    });
    if let Some((fc, fast)) = first_pair {
        let where_fast = fc.detail.clone().unwrap_or_default();
        let mut line = format!(
            "Two cores hand a line over in {} ({where_fast})",
            ns(fast.value)
        );
        if let Some(c) = cards.iter().find(|c| c.title == "slowest pair") {
            if let Some(slow) = c.figure("CAS round trip / 2") {
                let _ = write!(
                    line,
                    ", the slowest pair in {} ({})",
                    ns(slow.value),
                    c.detail.clone().unwrap_or_default()
                );
            }
        }
        line.push('.');
        out.push(line);
    }
}

/// The nearest relation's rank-to-rank message (cards come nearest first).
fn mpi_sentence(cards: &[Card], out: &mut Vec<String>) {
    if let Some((c, f)) = cards
        .iter()
        .filter(|c| c.group == Group::Cores)
        .find_map(|c| {
            Some((
                c,
                c.figures.iter().find(|f| f.label.ends_with("B one way"))?,
            ))
        })
    {
        let size = f.label.trim_end_matches(" one way");
        let rel = c.title.trim_start_matches("MPI ranks, ");
        out.push(format!(
            "An MPI message of {size} takes {} one way between ranks ({rel}).",
            ns(f.value)
        ));
    }
}

/// The summary as terminal text: the paragraph, the answer blocks, then one table
/// row per figure; a card's explanation is a numbered footnote, each said once.
pub fn text(cards: &[Card], blocks: &[Block]) -> String {
    if cards.is_empty() && blocks.is_empty() {
        return String::new();
    }
    let mut notes: Vec<&str> = Vec::new();
    let mut rows: Vec<Vec<String>> = Vec::new();
    for c in cards {
        let mut what = c.title.clone();
        if let Some(r) = c.remark.as_deref().filter(|_| c.group != Group::Machine) {
            let n = match notes.iter().position(|x| *x == r) {
                Some(i) => i + 1,
                None => {
                    notes.push(r);
                    notes.len()
                }
            };
            let _ = write!(what, " [{n}]");
        }
        for f in &c.figures {
            rows.push(vec![
                c.group.title().to_string(),
                what.clone(),
                f.label.clone(),
                f.verdict
                    .clone()
                    .unwrap_or_else(|| format!("{:.*}", f.digits, f.value)),
                f.unit.clone(),
                f.spread
                    .as_ref()
                    .map(|sp| format!("{} ({})", f.spread_text(), sp.what))
                    .unwrap_or_else(|| "-".into()),
            ]);
        }
    }
    let mut s = String::from(
        "\nSummary (medians, bandwidth the best pass as STREAM reports it; spread in the last column)\n",
    );
    if !cards.is_empty() {
        s.push_str(&wrap(&describe(cards), 100));
    }
    for b in blocks {
        s.push('\n');
        s.push_str(&b.text);
    }
    if !rows.is_empty() {
        s.push('\n');
        s.push_str(&crate::output::table(
            &["", "what", "figure", "value", "unit", "spread"],
            &rows,
        ));
    }
    if !s.ends_with('\n') {
        s.push('\n');
    }
    for (i, n) in notes.iter().enumerate() {
        s.push_str(&wrap(&format!("[{}] {n}", i + 1), 100));
    }
    s
}

/// `text` folded into lines of at most `width` characters.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for w in text.split_whitespace() {
        if line > 0 && line + 1 + w.chars().count() > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(w);
        line += w.chars().count();
    }
    out.push('\n');
    out
}

mod answer;
mod html;

pub use answer::{answers, held_back, is_answer, Block};
pub use html::{html, html_with};

#[cfg(test)]
mod tests;
