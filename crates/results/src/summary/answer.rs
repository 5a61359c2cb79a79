//! Which records the first screen may state: answers. Today an answer is a record
//! whose figure settled; the plausibility rules will narrow it further, here and
//! nowhere else, so every headline (cards, paragraph, answer blocks) follows.

use crate::Record;

/// Whether `r`'s figure may be stated on the first screen as an answer.
pub fn is_answer(r: &Record) -> bool {
    r.settled()
}

/// The records of `records` that are answers, in order.
pub fn answers(records: &[Record]) -> Vec<Record> {
    records.iter().filter(|r| is_answer(r)).cloned().collect()
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
