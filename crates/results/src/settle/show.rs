//! How an unsettled figure is shown, the same way in every table, text and card:
//! the figure is never given as a plain number; the row reads "unsettled*" beside it
//! and the record's warning, printed under every table, is the footnote saying why
//! ("unsettled* NAME: … machine busy: …").

use crate::record::{Record, Settle};

/// How the warning of an unsettled record begins.
pub const UNSETTLED: &str = "unsettled";

/// Puts `s` on the record and, when it did not settle, one warning line saying so
/// (the tolerance and budget that could not be met, and why): the footnote of the
/// "unsettled*" a table shows.
pub fn apply(rec: &mut Record, s: Settle) {
    if !s.settled {
        // A zero budget: judged on its first passes, none added (MPI figures).
        let budget = if s.budget_ms > 0.0 {
            format!("in its {:.0} ms budget", s.budget_ms)
        } else {
            "from its first passes".into()
        };
        rec.warnings.push(format!(
            "{UNSETTLED}* {}: {} not within ±{} % {budget} ({}, interval {}…{}): {}",
            rec.name,
            s.metric,
            s.tolerance_pct,
            crate::words::count_as(s.passes as u64, "pass", "passes"),
            short(s.interval[0]),
            short(s.interval[1]),
            s.why.as_deref().unwrap_or("no reason recorded")
        ));
    }
    rec.settle = Some(s);
}

/// The entry of a record that holds several figures, each settled on its own: the
/// first figure that did not settle (its metric and interval), with `why` naming every
/// one that did not; or the first figure when all did. None when there is none.
pub fn combine(figures: &[Settle]) -> Option<Settle> {
    let unsettled: Vec<&Settle> = figures.iter().filter(|s| !s.settled).collect();
    let Some(first) = unsettled.first() else {
        return figures.first().cloned();
    };
    let mut out = (*first).clone();
    if unsettled.len() > 1 {
        let whys: Vec<String> = unsettled
            .iter()
            .map(|s| {
                format!(
                    "{}: {}",
                    s.metric,
                    s.why.as_deref().unwrap_or("no reason recorded")
                )
            })
            .collect();
        out.why = Some(whys.join("; "));
    }
    Some(out)
}

/// A figure as a table cell by its own entry (a record of several figures keeps one
/// per figure): as it is when settled or without an entry, else "FIGURE unsettled*".
pub fn cell_of(s: Option<&Settle>, figure: String) -> String {
    match s {
        Some(s) if !s.settled => format!("{figure} {UNSETTLED}*"),
        _ => figure,
    }
}

/// A figure as a table cell: as it is when settled, else "FIGURE unsettled*" (the
/// star points to the record's warning).
pub fn cell(r: &Record, figure: String) -> String {
    if r.settled() {
        figure
    } else {
        format!("{figure} {UNSETTLED}*")
    }
}

/// A figure on a line of its own: "unsettled (machine busy: …; FIGURE)" when it did
/// not settle.
pub fn line(r: &Record, figure: String) -> String {
    match &r.settle {
        Some(s) if !s.settled => format!(
            "{UNSETTLED} ({}; {figure})",
            s.why.as_deref().unwrap_or("no reason recorded")
        ),
        _ => figure,
    }
}

/// Four significant figures, as tables print them.
fn short(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let digits = (3 - x.abs().max(1e-9).log10().floor() as i32).clamp(0, 6) as usize;
    format!("{x:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(settled: bool) -> Record {
        let mut r = Record::new(
            "latency",
            "read warm 32M cpu0",
            crate::Provenance::collect("t", "none"),
            serde_json::json!({}),
        );
        apply(
            &mut r,
            Settle {
                passes: 40,
                tolerance_pct: 5.0,
                budget_ms: 200.0,
                ..Settle::new(
                    "latency",
                    [101.25, 187.5],
                    (!settled).then_some("machine busy: 9 of 40 passes disturbed"),
                )
            },
        );
        r
    }

    fn figure(metric: &str, settled: bool) -> Settle {
        Settle {
            passes: 5,
            budget_ms: 50.0,
            ..Settle::new(
                metric,
                [1.0, 2.0],
                ((!settled).then(|| format!("{metric} spread"))).as_deref(),
            )
        }
    }

    #[test]
    fn a_record_of_several_figures_is_unsettled_when_any_is() {
        assert_eq!(combine(&[]), None);
        let all = combine(&[figure("a", true), figure("b", true)]).unwrap();
        assert!(all.settled && all.metric == "a");
        let one = combine(&[figure("a", true), figure("b", false)]).unwrap();
        assert!(!one.settled);
        assert_eq!(
            (one.metric.as_str(), one.why.as_deref()),
            ("b", Some("b spread"))
        );
        let two = combine(&[figure("a", false), figure("b", true), figure("c", false)]).unwrap();
        assert_eq!(two.metric, "a");
        assert_eq!(two.why.as_deref(), Some("a: a spread; c: c spread"));
        assert_eq!(
            cell_of(Some(&figure("a", false)), "3.0".into()),
            "3.0 unsettled*"
        );
        assert_eq!(cell_of(Some(&figure("a", true)), "3.0".into()), "3.0");
        assert_eq!(cell_of(None, "3.0".into()), "3.0");
    }

    #[test]
    fn an_unsettled_figure_is_never_a_plain_number() {
        let (ok, busy) = (rec(true), rec(false));
        assert_eq!(cell(&ok, "98.1".into()), "98.1");
        assert_eq!(cell(&busy, "98.1".into()), "98.1 unsettled*");
        assert_eq!(line(&ok, "98.1 ns".into()), "98.1 ns");
        assert_eq!(
            line(&busy, "98.1 ns".into()),
            "unsettled (machine busy: 9 of 40 passes disturbed; 98.1 ns)"
        );
        assert!(ok.warnings.is_empty());
        assert_eq!(busy.warnings.len(), 1);
        assert!(busy.warnings[0].starts_with("unsettled* read warm 32M cpu0: latency not within ±5 % in its 200 ms budget (40 passes, interval 101.2…187.5): machine busy: 9 of 40"), "{}", busy.warnings[0]);
    }
}
