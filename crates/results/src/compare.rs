//! Side-by-side comparison of two sets of records: the same measurement (kind,
//! name, metric) in A and B, their medians and B/A, and whether B/A is beyond the
//! two runs' run-to-run spread (their p5–p95 ranges do not overlap) or within it.

use crate::disturb::PassLog;
use crate::record::{Record, Stat};
use crate::report::{esc, html_table};
use crate::summary::{self, Card};
use serde::Serialize;

/// One matched measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Record kind.
    pub kind: String,
    /// Record name.
    pub name: String,
    /// Metric.
    pub metric: String,
    /// Unit.
    pub unit: String,
    /// Median in A.
    pub a: f64,
    /// Median in B.
    pub b: f64,
    /// B / A (None when A is 0).
    pub ratio: Option<f64>,
    /// A's p5 and p95.
    pub a_spread: (f64, f64),
    /// B's p5 and p95.
    pub b_spread: (f64, f64),
    /// The ratio's interval from the spreads: B p5 / A p95 to B p95 / A p5 (None unless all are positive).
    pub ratio_interval: Option<(f64, f64)>,
    /// "beyond" the run-to-run spread, "within" it, or "few samples" (under 3 in a run,
    /// or a figure built mostly from disturbed passes).
    pub change: String,
    /// Size of the change: |ln(B/A)| (0 when there is no ratio).
    pub effect: f64,
}

/// How `change` is decided, for the legend of every view.
pub const RULE: &str = "change: beyond when the two runs' p5–p95 ranges do not overlap (B/A's interval, B p5/A p95 to B p95/A p5, excludes 1), within when they overlap, few samples when a run has under 3 or its figure comes mostly from disturbed passes; rows sorted beyond first, then by effect |ln(B/A)|";

/// Minimum samples per run for a verdict: with fewer, p5–p95 is not a spread.
const MIN_SAMPLES: usize = 3;

fn row(ra: &Record, rb: &Record, sa: &Stat, sb: &Stat) -> Row {
    let (a, b) = (&sa.summary, &sb.summary);
    let ratio = (a.median != 0.0).then(|| b.median / a.median);
    let positive = a.p5 > 0.0 && b.p5 > 0.0;
    // A figure built mostly from disturbed passes measured the machine's other work.
    let disturbed = |r: &Record| PassLog::of(r).is_some_and(|l| l.mostly_disturbed());
    let change = if a.n < MIN_SAMPLES || b.n < MIN_SAMPLES || disturbed(ra) || disturbed(rb) {
        "few samples"
    } else if b.p5 > a.p95 || b.p95 < a.p5 {
        "beyond"
    } else {
        "within"
    };
    Row {
        kind: ra.kind.clone(),
        name: ra.name.clone(),
        metric: sa.metric.clone(),
        unit: sa.unit.clone(),
        a: a.median,
        b: b.median,
        ratio,
        a_spread: (a.p5, a.p95),
        b_spread: (b.p5, b.p95),
        ratio_interval: positive.then(|| (b.p5 / a.p95, b.p95 / a.p5)),
        change: change.into(),
        effect: ratio.filter(|r| *r > 0.0).map_or(0.0, |r| r.ln().abs()),
    }
}

/// Every (kind, name, metric) present in both, beyond the spread first, then by effect;
/// and how many of A's and B's measurements found no partner.
pub fn compare(a: &[Record], b: &[Record]) -> (Vec<Row>, usize, usize) {
    let mut rows = Vec::new();
    let mut matched_b = 0;
    let mut unmatched_a = 0;
    for ra in a {
        for sa in &ra.stats {
            let hit = b.iter().find_map(|rb| {
                (rb.kind == ra.kind && rb.name == ra.name)
                    .then(|| {
                        rb.stats
                            .iter()
                            .find(|s| s.metric == sa.metric && s.unit == sa.unit)
                            .map(|s| (rb, s))
                    })
                    .flatten()
            });
            match hit {
                Some((rb, sb)) => {
                    matched_b += 1;
                    rows.push(row(ra, rb, sa, sb));
                }
                None => unmatched_a += 1,
            }
        }
    }
    let order = |r: &Row| match r.change.as_str() {
        "beyond" => 0,
        "within" => 1,
        _ => 2,
    };
    // Stable: equal effects keep A's order.
    rows.sort_by(|x, y| order(x).cmp(&order(y)).then(y.effect.total_cmp(&x.effect)));
    let total_b: usize = b.iter().map(|r| r.stats.len()).sum();
    (rows, unmatched_a, total_b - matched_b.min(total_b))
}

fn cells(r: &Row) -> Vec<String> {
    vec![
        r.kind.clone(),
        r.name.clone(),
        r.metric.clone(),
        r.unit.clone(),
        crate::report::num(Some(r.a), 3),
        crate::report::num(Some(r.b), 3),
        r.ratio.map(|x| format!("{x:.3}")).unwrap_or("-".into()),
        r.ratio_interval
            .map(|(lo, hi)| format!("{lo:.3}–{hi:.3}"))
            .unwrap_or("-".into()),
        r.change.clone(),
    ]
}

/// Header of the comparison table.
pub const HEADER: [&str; 9] = [
    "kind",
    "name",
    "metric",
    "unit",
    "A median",
    "B median",
    "B/A",
    "B/A interval",
    "change",
];

/// Table rows for text output.
pub fn text_rows(rows: &[Row]) -> Vec<Vec<String>> {
    rows.iter().map(cells).collect()
}

/// A self-contained HTML page of the comparison: the two runs' summary cards side by
/// side, then every matched measurement sorted by effect.
pub fn html(rows: &[Row], a: &str, b: &str, cards_a: &[Card], cards_b: &[Card]) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>numalab compare</title>\
<style>body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse;font-size:.85em}}td,th{{border:1px solid #ccc;padding:2px 6px}}\
.sides{{display:flex;gap:1.5em;align-items:flex-start}}.side{{flex:1 1 0;min-width:0}}.side h2{{font-size:1.1em}}</style></head>\
<body><h1>numalab compare</h1><div class=\"sides\"><div class=\"side\" id=\"run-a\"><h2>A: {}</h2>{}</div>\
<div class=\"side\" id=\"run-b\"><h2>B: {}</h2>{}</div></div><h2>Every matched measurement, largest effect first</h2>{}<p>{}</p></body></html>\n",
        esc(a),
        summary::html_with(cards_a, &[], false),
        esc(b),
        summary::html_with(cards_b, &[], false),
        html_table(&HEADER, &text_rows(rows)),
        esc(RULE)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::Provenance;

    fn rec(name: &str, metric: &str, v: &[f64]) -> Record {
        let mut r = Record::new(
            "latency",
            name,
            Provenance::collect("test", "none"),
            serde_json::json!({}),
        );
        r.add_samples(metric, "ns", v);
        r
    }

    #[test]
    fn matching_measurements_get_ratios() {
        let a = vec![
            rec("x", "latency", &[100.0, 100.0]),
            rec("only-a", "latency", &[1.0]),
        ];
        let b = vec![
            rec("x", "latency", &[150.0]),
            rec("only-b", "latency", &[1.0]),
            rec("x", "other", &[2.0]),
        ];
        let (rows, ua, ub) = compare(&a, &b);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].ratio, Some(1.5));
        assert_eq!((ua, ub), (1, 2));
        assert!(html(&rows, "a.json", "b.json", &[], &[]).contains("1.500"));
        // Two samples in A: no verdict on the spread.
        assert_eq!(rows[0].change, "few samples");
    }

    #[test]
    fn a_2x_move_with_tight_samples_is_beyond_and_3_percent_with_wide_ones_within() {
        let tight = |m: f64| [m * 0.99, m, m * 1.01, m * 0.995, m * 1.005];
        let wide = |m: f64| [m * 0.7, m * 0.85, m, m * 1.15, m * 1.3];
        let a = vec![
            rec("steady", "latency", &wide(100.0)),
            rec("moved", "latency", &tight(100.0)),
        ];
        let b = vec![
            rec("steady", "latency", &wide(103.0)),
            rec("moved", "latency", &tight(200.0)),
        ];
        let (rows, _, _) = compare(&a, &b);
        // Sorted by effect: the 2× move first although A lists it second.
        assert_eq!(
            (rows[0].name.as_str(), rows[0].change.as_str()),
            ("moved", "beyond")
        );
        assert_eq!(
            (rows[1].name.as_str(), rows[1].change.as_str()),
            ("steady", "within")
        );
        let (lo, hi) = rows[0].ratio_interval.unwrap();
        assert!(lo > 1.9 && hi < 2.1, "{lo} {hi}");
        let (lo, hi) = rows[1].ratio_interval.unwrap();
        assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
        assert!(rows[0].effect > rows[1].effect);
        // The marking survives into JSON and the views carry the rule.
        let j = serde_json::to_value(&rows).unwrap();
        assert_eq!(j[0]["change"], "beyond");
        assert!(html(&rows, "a", "b", &[], &[]).contains("do not overlap"));
        assert!(text_rows(&rows)[1].contains(&"within".to_string()));
        // A 2× slowdown is beyond too: the rule is symmetric.
        let (rows, _, _) = compare(&b, &a);
        assert_eq!(rows[0].change, "beyond");
    }
}
