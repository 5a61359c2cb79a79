//! The comparison's views: the one-line verdict, the table rows and the HTML page.

use super::{Comparison, Row, RULE};
use crate::report::{esc, html_table};
use crate::summary::{self, Card};
use std::fmt::Write;

/// The line a comparison opens with: "3 of 187 comparable figures changed beyond their
/// spread: latency x −12 %, …; 12 not comparable; 4 only in A, 2 only in B".
pub fn verdict(c: &Comparison) -> String {
    let beyond: Vec<&Row> = c.rows.iter().filter(|r| r.change == "beyond").collect();
    let comparable = c
        .rows
        .iter()
        .filter(|r| !r.change.starts_with("not comparable"))
        .count();
    let not = c.rows.len() - comparable;
    // A level that moved as a whole is one finding, however many points it holds.
    let found = beyond.len() + c.levels.len();
    let pct = if comparable > 0 {
        format!(" ({:.1} %)", 100.0 * found as f64 / comparable as f64)
    } else {
        String::new()
    };
    let against = match c.baselines {
        0 | 1 => String::new(),
        n => format!(" against each of {n} baseline runs"),
    };
    let mut s = format!(
        "{found} of {comparable} comparable figures changed beyond their spread{against}{pct}"
    );
    if !beyond.is_empty() {
        let _ = write!(s, ": {}", named_beyond(&beyond));
    }
    for l in &c.levels {
        let _ = write!(s, "; {}", l.sentence);
    }
    s.push_str(&super::slope::verdict_words(&c.rows));
    if let Some(k) = &c.clock {
        let _ = write!(
            s,
            "; the core clock moved {:.2} → {:.2} GHz (median of each run's probes): {} latency figures held in core cycles and are within",
            k.a_ghz, k.b_ghz, k.figures
        );
    }
    s.push_str(&scatter_words(c, comparable));
    let _ = write!(s, "; {not} not comparable");
    if c.only_a + c.only_b > 0 {
        let _ = write!(s, "; {} only in A, {} only in B", c.only_a, c.only_b);
    }
    if let Some(h) = &c.cluster_hosts {
        s.push_str(&super::cluster::hosts_words(h));
    }
    let (da, db) = c.duplicates;
    if da + db > 0 {
        let _ = write!(
            s,
            "; {da} repeated in A and {db} in B (only the first of each is compared)"
        );
    }
    s
}

/// The first three figures beyond, with their change ("latency x −12 %, …").
fn named_beyond(beyond: &[&Row]) -> String {
    let named: Vec<String> = beyond
        .iter()
        .take(3)
        .map(|r| {
            // A change beyond ten thousand percent reads as a factor.
            let pct = r.ratio.map_or("-".into(), |x| {
                if (x - 1.0).abs() < 100.0 {
                    format!("{:+.0} %", (x - 1.0) * 100.0)
                } else {
                    format!("×{}", ratio_text(x))
                }
            });
            format!("{} {} {} {pct}", r.kind, r.name, r.metric)
        })
        .collect();
    let more = if beyond.len() > 3 { ", …" } else { "" };
    format!("{}{more}", named.join(", "))
}

/// The verdict's clause on this pair's scatter and the kinds that shifted as a whole.
fn scatter_words(c: &Comparison, comparable: usize) -> String {
    let mut s = String::new();
    match &c.spread {
        Some(p) => {
            let own: Vec<String> = p
                .scopes
                .iter()
                .filter(|x| x.own)
                .enumerate()
                .map(|(i, x)| {
                    let from = if i == 0 {
                        " from its kind's median"
                    } else {
                        ""
                    };
                    format!("×{:.2}{from} for {}", x.factor, x.scope.words())
                })
                .collect();
            if own.is_empty() {
                let _ = write!(
                    s,
                    "; this pair's scatter: beyond means over ×{:.2} from its kind's median",
                    p.factor
                );
            } else {
                let _ = write!(
                    s,
                    "; this pair's scatter: beyond means over {}",
                    own.join(", ")
                );
                if own.len() < p.scopes.len() {
                    let _ = write!(s, ", ×{:.2} for the others", p.factor);
                }
            }
            for sh in &p.shifts {
                let _ = write!(
                    s,
                    "; {} figures as a whole {:+.0} % (median of {}), a shift one pair of runs cannot tell from a change",
                    sh.kind,
                    (sh.ratio - 1.0) * 100.0,
                    sh.figures
                );
            }
        }
        None if comparable > 0 => {
            s.push_str(
                "; too few figures to measure this pair's scatter, so intervals alone decide",
            );
        }
        None => {}
    }
    s
}

/// A ratio for a table cell: three decimals, or e-notation where fixed notation would
/// print hundreds of digits or only zeros (a 1e308 median).
pub fn ratio_text(x: f64) -> String {
    if x.is_finite() && x != 0.0 && !(1e-3..1e6).contains(&x.abs()) {
        format!("{x:.3e}")
    } else {
        format!("{x:.3}")
    }
}

fn cells(r: &Row) -> Vec<String> {
    let iv = |(lo, hi): (f64, f64)| {
        format!(
            "{}–{}",
            crate::report::num(Some(lo), 3),
            crate::report::num(Some(hi), 3)
        )
    };
    vec![
        r.kind.clone(),
        r.name.clone(),
        r.metric.clone(),
        r.unit.clone(),
        crate::report::num(Some(r.a), 3),
        iv(r.a_interval),
        crate::report::num(Some(r.b), 3),
        iv(r.b_interval),
        r.ratio.map(ratio_text).unwrap_or("-".into()),
        format!("{} / {}", r.disturbed.0, r.disturbed.1),
        r.change.clone(),
    ]
}

/// Header of the comparison table.
pub const HEADER: [&str; 11] = [
    "kind",
    "name",
    "metric",
    "unit",
    "A figure",
    "A interval",
    "B figure",
    "B interval",
    "B/A",
    "disturbed A / B",
    "change",
];

/// Table rows for text output.
pub fn text_rows(rows: &[Row]) -> Vec<Vec<String>> {
    rows.iter().map(cells).collect()
}

/// A self-contained HTML page of the comparison: the verdict, the two runs' summary
/// cards side by side, then every matched figure.
pub fn html(c: &Comparison, a: &str, b: &str, cards_a: &[Card], cards_b: &[Card]) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>numalab compare</title>\
<style>body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse;font-size:.85em}}td,th{{border:1px solid #ccc;padding:2px 6px}}\
.sides{{display:flex;gap:1.5em;align-items:flex-start}}.side{{flex:1 1 0;min-width:0}}.side h2{{font-size:1.1em}}</style></head>\
<body><h1>numalab compare</h1><p class=\"verdict\"><b>{}</b></p><div class=\"sides\"><div class=\"side\" id=\"run-a\"><h2>A: {}</h2>{}</div>\
<div class=\"side\" id=\"run-b\"><h2>B: {}</h2>{}</div></div><h2>Every matched figure, beyond first, largest effect first</h2>{}<p>{}</p></body></html>\n",
        esc(&verdict(c)),
        esc(a),
        summary::html_with(cards_a, &[], false),
        esc(b),
        summary::html_with(cards_b, &[], false),
        html_table(&HEADER, &text_rows(&c.rows)),
        esc(RULE)
    )
}
