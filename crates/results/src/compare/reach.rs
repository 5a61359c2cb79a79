//! A figure the other run's own passes reached. An interval comes from the figure's
//! passes, and where those are many and wide (a line another CPU held read 14.6–35.8 ns
//! over 17 passes, its median 17.7 ns) the interval of the median is narrow though
//! the passes are not: they come in stretches of one mode or another (the line still
//! in the helper's cache, or already written back to the L3), so the passes of a run
//! are not independent and the median's interval understates how far the next run's
//! figure may land. When the other run's figure lies within this run's own passes
//! (their least to their most), the machine already read that value in this run, and
//! the change is not called beyond. A figure of tight passes keeps its tight bar: its
//! passes' range is its interval.
//!
//! Over the survey pairs kept on the EPYC guest on 2026-11-29, re-compared (figures,
//! level shifts apart): 45 of 1497 comparable figures of 25 quiet quick pairs were
//! beyond, 36 with this rule (in the 18 later pairs 6 of the 7 it took were lines
//! another CPU held, read over 9–51 passes); 18 busy quick pairs 21 of 643, then 16;
//! four quiet full pairs 4 of 296, then 2.

use crate::record::Stat;

/// "within (…)" words when `b` lies within A's passes or `a` within B's (each run's
/// least to most pass of the metric); None otherwise.
pub fn reached(a: f64, b: f64, sa: &Stat, sb: &Stat) -> Option<String> {
    let inside = |x: f64, s: &Stat| x >= s.summary.min && x <= s.summary.max;
    let span = |s: &Stat| super::slope::span_text(s.summary.min, s.summary.max, &s.unit);
    if inside(b, sa) {
        Some(format!(
            "within (A's own passes reached B's figure: {} over {} passes)",
            span(sa),
            sa.summary.n
        ))
    } else if inside(a, sb) {
        Some(format!(
            "within (B's own passes reached A's figure: {} over {} passes)",
            span(sb),
            sb.summary.n
        ))
    } else {
        None
    }
}
