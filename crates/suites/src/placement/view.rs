//! The placement suite's plan as text (what `--dry-run` prints after the head).

use super::{Curve, Plan};
use crate::domains::letter_of;
use std::fmt::Write;

/// "A[0 1] B[8 9] …": readers in order, grouped by domain runs.
fn reader_order(plan: &Plan, c: &Curve) -> String {
    let mut out = String::new();
    let mut cur = "";
    for &r in &c.readers {
        let d = letter_of(&plan.domains, r);
        if d != cur {
            if !cur.is_empty() {
                out.push_str("] ");
            }
            let _ = write!(out, "{d}[{r}");
            cur = d;
        } else {
            let _ = write!(out, " {r}");
        }
    }
    if !cur.is_empty() {
        out.push(']');
    }
    out
}

fn curve_title(c: &Curve) -> String {
    let mut t = format!("{} — {}", c.part.name(), c.label);
    if c.partitioned {
        t.push_str(" (partitioned: each reader its own lines)");
    }
    t
}

fn not_run(plan: &Plan) -> String {
    let mut s = String::new();
    for (p, why) in &plan.skipped {
        let _ = writeln!(s, "not run here: {}: {why}", p.name());
    }
    s
}

/// The plan: every curve's owners, reader order and points.
pub(super) fn placement_plan_text(plan: &Plan) -> String {
    let mut s = String::new();
    for c in &plan.curves {
        let (lo, hi) = (
            c.counts.first().copied().unwrap_or(0),
            c.counts.last().copied().unwrap_or(0),
        );
        let _ = writeln!(
            s,
            "\n{}\n  owners {}; readers {} to {} of: {}",
            curve_title(c),
            numalab_topo::cpulist::format(&c.owners),
            lo,
            hi,
            reader_order(plan, c)
        );
        if c.stagger {
            let _ = writeln!(s, "  each reader starts at its own offset of the data set");
        }
    }
    let _ = writeln!(
        s,
        "\n{} in {}",
        numalab_results::words::count(plan.points() as u64, "point"),
        numalab_results::words::count(plan.curves.len() as u64, "curve")
    );
    s + &not_run(plan)
}
