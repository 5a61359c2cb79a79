//! Text views of the placement suite: the plan and the seed-style curves.

use super::run::Point;
use super::{Curve, Plan};
use crate::domains::letter_of;
use numalab_results::output::table;
use numalab_results::stats::median;
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
pub fn placement_plan_text(plan: &Plan) -> String {
    let mut s = String::new();
    for c in &plan.curves {
        let (lo, hi) = (
            c.counts.first().copied().unwrap_or(0),
            c.counts.last().copied().unwrap_or(0),
        );
        let _ = writeln!(
            s,
            "\n{}\n  owners {:?}; readers {}..{} of: {}",
            curve_title(c),
            c.owners,
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
        "\n{} points in {} curves",
        plan.points(),
        plan.curves.len()
    );
    s + &not_run(plan)
}

fn fmt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into())
}

/// Every curve as a table: readers → median ns per unit, overall and per domain.
pub fn placement_text(plan: &Plan, points: &[Point]) -> String {
    let mut s = String::new();
    let unit = if plan.unit_lines == 2 {
        "line pair"
    } else {
        "line"
    };
    for (ci, c) in plan.curves.iter().enumerate() {
        let pts: Vec<&Point> = points.iter().filter(|p| p.curve == ci).collect();
        if pts.is_empty() {
            continue;
        }
        let mut letters: Vec<String> = pts
            .iter()
            .flat_map(|p| p.per_domain.iter().map(|d| d.0.clone()))
            .collect();
        letters.sort();
        letters.dedup();
        let x = if c.fixed > 0 {
            format!("remote readers (+{} local)", c.fixed)
        } else {
            "readers".into()
        };
        let mut header = vec![x, "newest".into(), "overall".into()];
        header.extend(letters.iter().map(|l| format!("domain {l}")));
        let rows: Vec<Vec<String>> = pts
            .iter()
            .map(|p| {
                let newest = c.readers[p.readers - 1];
                let mut row = vec![
                    (p.readers - c.fixed).to_string(),
                    format!("{newest} ({})", letter_of(&plan.domains, newest)),
                    fmt(median(&p.overall)),
                ];
                for l in &letters {
                    row.push(fmt(p
                        .per_domain
                        .iter()
                        .find(|d| &d.0 == l)
                        .and_then(|d| median(&d.1))));
                }
                row
            })
            .collect();
        let h: Vec<&str> = header.iter().map(|x| x.as_str()).collect();
        let _ = writeln!(
            s,
            "\n{} — median ns per {unit}, owners {:?}",
            curve_title(c),
            c.owners
        );
        s.push_str(&table(&h, &rows));
        s.push('\n');
    }
    s + &not_run(plan)
}
