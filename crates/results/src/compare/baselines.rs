//! B held against several baseline runs at once (`compare A B --baseline A2`): a figure
//! is beyond only when it is beyond against every one of them.
//!
//! Why: on a shared host a figure moves between runs far more than within one (another
//! tenant's use of the L3 and memory, the cores the hypervisor gave), and one run per
//! side cannot tell that from a change. The tenth session's kept surveys on the 2-vCPU
//! Emerald Rapids guest, each compared with the run before it, alone and with the run
//! before that as a second baseline (6 triples per set): quiet quick surveys 5.1 % of
//! comparable figures beyond → 0.9 %, quiet full 7.1 % → 1.0 %, quick with a busy CPU
//! 4.7 % → 2.4 %. A figure that moved between the baseline
//! runs is within the moves the machine makes on its own.

use super::slope::EDGE;
use super::{Comparison, Row};

/// What names a row across comparisons.
fn key(r: &Row) -> (&str, &str, &str, &str) {
    (&r.kind, &r.name, &r.metric, &r.unit)
}

/// Hold `c` (B against the first baseline, A) against `others` (B against each further
/// baseline, in order): a row beyond in `c` stays beyond only where it is beyond in
/// every other; where another calls it within, it is within and says so; where
/// another cannot judge it, it is not comparable and says why. A sweep point whose
/// edge moved against A is held the same way, and where every other baseline confirms
/// it, it stays an edge that moved: named, not counted, as one pair of the same runs
/// (`--baseline A` changes nothing). Rows already within or not comparable, and
/// whole-level shifts, stay as `c` found them.
pub fn hold(c: &mut Comparison, others: &[Comparison]) {
    let judged = |x: &str| x == "beyond" || x.starts_with(EDGE);
    for r in c.rows.iter_mut().filter(|r| judged(&r.change)) {
        let against_a = if r.change == "beyond" {
            "beyond".to_string()
        } else {
            "its edge moved".to_string()
        };
        for (i, o) in others.iter().enumerate() {
            let n = i + 2;
            match o.rows.iter().find(|x| key(x) == key(r)) {
                Some(x) if judged(&x.change) => continue,
                Some(x) if x.change.starts_with("not comparable") => {
                    r.change = format!("not comparable (against baseline {n}: {})", x.change);
                }
                Some(x) => {
                    let moved = x
                        .ratio
                        .map_or("-".into(), |q| format!("{:+.0} %", (q - 1.0) * 100.0));
                    r.change = format!(
                        "within ({against_a} against A, {} against baseline {n}: B/A there {moved})",
                        x.change
                    );
                }
                None => r.change = format!("not comparable (not in baseline {n})"),
            }
            break;
        }
    }
    c.baselines = 1 + others.len();
    // Beyond first again: a row that became within moves down.
    super::sort_rows(&mut c.rows);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Scope;

    fn row(name: &str, change: &str, ratio: f64) -> Row {
        Row {
            kind: "latency".into(),
            name: name.into(),
            metric: "latency".into(),
            unit: "ns".into(),
            a: 100.0,
            b: 100.0 * ratio,
            ratio: Some(ratio),
            a_interval: (99.0, 101.0),
            b_interval: (99.0 * ratio, 101.0 * ratio),
            disturbed: Default::default(),
            change: change.into(),
            effect: ratio.ln().abs(),
            scope: Scope::Shared,
            streams_memory: false,
        }
    }

    fn comparison(rows: Vec<Row>) -> Comparison {
        Comparison {
            rows,
            only_a: 0,
            only_b: 0,
            duplicates: (0, 0),
            spread: None,
            clock: None,
            levels: Vec::new(),
            cluster_hosts: None,
            baselines: 1,
        }
    }

    #[test]
    fn a_figure_is_beyond_only_against_every_baseline() {
        let mut c = comparison(vec![
            row("moved", "beyond", 1.5),
            row("baseline moved", "beyond", 1.4),
            row("unjudged", "beyond", 1.3),
            row("missing", "beyond", 1.3),
            row("steady", "within", 1.01),
        ]);
        let other = comparison(vec![
            row("moved", "beyond", 1.45),
            row("baseline moved", "within", 1.05),
            row("unjudged", "not comparable (A unsettled)", 1.3),
            row("steady", "beyond", 1.6),
        ]);
        hold(&mut c, &[other]);
        let change = |n: &str| c.rows.iter().find(|r| r.name == n).unwrap().change.clone();
        assert_eq!(change("moved"), "beyond");
        assert_eq!(
            change("baseline moved"),
            "within (beyond against A, within against baseline 2: B/A there +5 %)"
        );
        assert_eq!(
            change("unjudged"),
            "not comparable (against baseline 2: not comparable (A unsettled))"
        );
        assert_eq!(change("missing"), "not comparable (not in baseline 2)");
        // Only A's judgement makes a row beyond: one within against A stays within.
        assert_eq!(change("steady"), "within");
        assert_eq!(c.rows[0].name, "moved", "beyond first");
        assert_eq!(c.baselines, 2);
    }

    #[test]
    fn an_edge_that_moved_is_held_like_a_figure_beyond_and_never_counted() {
        let edge =
            "edge moved (between its neighbouring sizes only across both runs, 1.7–5.5 ns: …)";
        let mut c = comparison(vec![row("slid", edge, 2.7), row("held", edge, 2.7)]);
        let other = comparison(vec![
            row("slid", "beyond", 2.6),
            row("held", "within", 1.02),
        ]);
        hold(&mut c, &[other]);
        let change = |n: &str| c.rows.iter().find(|r| r.name == n).unwrap().change.clone();
        assert_eq!(change("slid"), edge);
        assert_eq!(
            change("held"),
            "within (its edge moved against A, within against baseline 2: B/A there +2 %)"
        );
        // With no other baseline an edge stays an edge.
        let mut alone = comparison(vec![row("slid", edge, 2.7)]);
        hold(&mut alone, &[]);
        assert_eq!(alone.rows[0].change, edge);
    }

    #[test]
    fn the_first_baseline_that_does_not_confirm_decides() {
        let mut c = comparison(vec![row("x", "beyond", 2.0)]);
        let yes = comparison(vec![row("x", "beyond", 2.0)]);
        let no = comparison(vec![row("x", "within", 1.02)]);
        hold(&mut c, &[yes, no]);
        assert!(
            c.rows[0].change.contains("against baseline 3"),
            "{}",
            c.rows[0].change
        );
        assert_eq!(c.baselines, 3);
    }
}
