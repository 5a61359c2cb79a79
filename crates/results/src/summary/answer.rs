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
