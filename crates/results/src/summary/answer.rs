//! Which records the first screen may state: answers. An answer is a record whose
//! figure settled and that no plausibility rule flags; decided here and nowhere else,
//! so every block of the first screen follows. (The cards keep every figure and mark
//! the others: see `summary::vet`.)

use crate::plausible::{self, Flag};
use crate::Record;

/// Whether `r`'s figures may be stated on the first screen as an answer, given the
/// plausibility flags of the record set it belongs to.
pub fn is_answer(r: &Record, flags: &[Flag]) -> bool {
    let key = plausible::key(r);
    r.settled()
        && !flags
            .iter()
            .any(|f| r.stats.iter().any(|s| f.names(&key, &s.metric)))
}

/// The records of `records` that are answers, in order.
pub fn answers(records: &[Record]) -> Vec<Record> {
    let flags = plausible::check(records);
    records
        .iter()
        .filter(|r| is_answer(r, &flags))
        .cloned()
        .collect()
}

/// One block of the first screen, built by a presenter from answers: its HTML and the
/// same content as terminal text.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Block {
    /// HTML shown after the summary paragraph.
    pub html: String,
    /// The same as terminal text (a table, a line).
    pub text: String,
}

/// The first screen's line naming what it holds back: each measuring record that is no
/// answer, with why (did not settle, or the plausibility rule it broke), so a "-" in
/// the per-node table is never left unexplained. None when every figure is an answer.
pub fn held_back(records: &[Record]) -> Option<Block> {
    let flags = plausible::check(records);
    let why = |r: &Record| {
        let key = plausible::key(r);
        match flags
            .iter()
            .find(|f| r.stats.iter().any(|s| f.names(&key, &s.metric)))
        {
            Some(f) => format!("implausible, rule {}", f.rule),
            None => "did not settle".to_string(),
        }
    };
    let held: Vec<String> = records
        .iter()
        .filter(|r| !r.stats.is_empty() && !is_answer(r, &flags))
        .map(|r| format!("{} {} ({})", r.kind, r.name, why(r)))
        .collect();
    if held.is_empty() {
        return None;
    }
    let shown = held.len().min(4);
    let more = match held.len() - shown {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let n = held.len();
    let line = format!(
        "Not stated here: {n} {} did not settle or broke a plausibility rule: {}{more}; their cards and sections say so.",
        if n == 1 { "figure" } else { "figures" },
        held[..shown].join("; ")
    );
    Some(Block {
        html: format!(
            "<p class=\"held-back\" id=\"held-back\">{}</p>",
            crate::report::esc(&line)
        ),
        text: format!("{line}\n"),
    })
}
