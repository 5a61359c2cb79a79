//! Side-by-side comparison of two sets of records: the same measurement (kind,
//! name, metric) in A and B, their medians and B/A.

use crate::record::Record;
use crate::report::{esc, html_table};
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
}

/// Every (kind, name, metric) present in both, in A's order; and how many of A's and
/// B's measurements found no partner.
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
                    })
                    .flatten()
            });
            match hit {
                Some(sb) => {
                    matched_b += 1;
                    let (x, y) = (sa.summary.median, sb.summary.median);
                    rows.push(Row {
                        kind: ra.kind.clone(),
                        name: ra.name.clone(),
                        metric: sa.metric.clone(),
                        unit: sa.unit.clone(),
                        a: x,
                        b: y,
                        ratio: (x != 0.0).then(|| y / x),
                    });
                }
                None => unmatched_a += 1,
            }
        }
    }
    let total_b: usize = b.iter().map(|r| r.stats.len()).sum();
    (rows, unmatched_a, total_b - matched_b.min(total_b))
}

fn cells(r: &Row) -> Vec<String> {
    vec![
        r.kind.clone(),
        r.name.clone(),
        r.metric.clone(),
        r.unit.clone(),
        format!("{:.3}", r.a),
        format!("{:.3}", r.b),
        r.ratio.map(|x| format!("{x:.3}")).unwrap_or("-".into()),
    ]
}

/// Header of the comparison table.
pub const HEADER: [&str; 7] = [
    "kind", "name", "metric", "unit", "A median", "B median", "B/A",
];

/// Table rows for text output.
pub fn text_rows(rows: &[Row]) -> Vec<Vec<String>> {
    rows.iter().map(cells).collect()
}

/// A self-contained HTML page of the comparison.
pub fn html(rows: &[Row], a: &str, b: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>numalab compare</title>\
<style>body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse;font-size:.85em}}td,th{{border:1px solid #ccc;padding:2px 6px}}</style></head>\
<body><h1>numalab compare</h1><p>A: {}<br>B: {}</p>{}</body></html>\n",
        esc(a),
        esc(b),
        html_table(&HEADER, &text_rows(rows))
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
        assert!(html(&rows, "a.json", "b.json").contains("1.500"));
    }
}
