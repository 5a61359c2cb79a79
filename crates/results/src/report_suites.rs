//! Report sections of the seed suites: placement, collectives and earth.

use crate::plot::{self, LineChart, Series};
use crate::record::Record;
use crate::report::{figure, html_table, med, num};
use std::collections::BTreeMap;

fn of<'a>(records: &'a [Record], kind: &'a str) -> impl Iterator<Item = &'a Record> + 'a {
    records.iter().filter(move |r| r.kind == kind)
}

/// The placement suite: read time per unit against readers, one line per curve.
pub fn placement(records: &[Record]) -> Option<String> {
    let recs: Vec<&Record> = of(records, "suite-placement")
        .filter(|r| med(r, "read_time").is_some())
        .collect();
    if recs.is_empty() {
        return None;
    }
    let mut curves: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in &recs {
        let p = &r.parameters;
        let name = format!(
            "{} {}",
            p["part"].as_str().unwrap_or(""),
            p["curve"].as_str().unwrap_or("")
        );
        if let (Some(k), Some(v)) = (p["readers"].as_f64(), med(r, "read_time")) {
            curves.entry(name).or_default().push((k, v));
        }
    }
    let chart = plot::line_chart(&LineChart {
        title: "thread placement: read time per unit".into(),
        x_label: "readers".into(),
        y_label: "ns per unit per reader".into(),
        log_x: false,
        x_bytes: false,
        series: curves
            .into_iter()
            .map(|(name, points)| Series { name, points })
            .collect(),
        markers: Vec::new(),
    });
    let rows: Vec<Vec<String>> = recs
        .iter()
        .map(|r| {
            let p = &r.parameters;
            vec![
                p["part"].as_str().unwrap_or("").into(),
                p["curve"].as_str().unwrap_or("").into(),
                p["readers"].to_string(),
                num(med(r, "read_time"), 2),
            ]
        })
        .collect();
    Some(figure(
        chart,
        html_table(&["part", "curve", "readers", "ns per unit"], &rows),
    ))
}

/// The collectives suite: time against threads per collective (smallest block), and
/// every measurement's median.
pub fn collectives(records: &[Record]) -> Option<String> {
    let recs: Vec<&Record> = of(records, "suite-collectives")
        .filter(|r| med(r, "time").is_some() || med(r, "read_time").is_some())
        .collect();
    if recs.is_empty() {
        return None;
    }
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let smallest = recs
        .iter()
        .filter_map(|r| r.parameters["block_lines"].as_u64())
        .filter(|&l| l > 0)
        .min();
    for r in &recs {
        let p = &r.parameters;
        let lines_here = p["block_lines"].as_u64();
        if lines_here.is_some_and(|l| l > 0) && lines_here != smallest {
            continue;
        }
        if let (Some(c), Some(t), Some(v)) = (
            p["collective"].as_str(),
            p["threads"].as_f64(),
            med(r, "time"),
        ) {
            lines
                .entry(c.to_string())
                .or_default()
                .push((t, v / 1000.0));
        }
    }
    let chart = plot::line_chart(&LineChart {
        title: "collectives (smallest block)".into(),
        x_label: "threads P".into(),
        y_label: "µs".into(),
        log_x: false,
        x_bytes: false,
        series: lines
            .into_iter()
            .map(|(name, points)| Series { name, points })
            .collect(),
        markers: Vec::new(),
    });
    let rows: Vec<Vec<String>> = recs
        .iter()
        .map(|r| {
            let v = med(r, "time").or_else(|| med(r, "read_time"));
            vec![r.name.clone(), num(v.map(|x| x / 1000.0), 3)]
        })
        .collect();
    let mut body = figure(chart, html_table(&["measurement", "µs (median)"], &rows));
    let models: Vec<Vec<String>> = of(records, "suite-collectives-model")
        .filter_map(|r| {
            let d = r.data.as_ref()?;
            Some(vec![
                r.parameters["collective"].as_str().unwrap_or("").into(),
                d["formula"].as_str().unwrap_or("").into(),
                num(d["r2"].as_f64(), 3),
            ])
        })
        .collect();
    if !models.is_empty() {
        body.push_str(&html_table(
            &["collective", "fitted model (µs)", "R²"],
            &models,
        ));
    }
    Some(body)
}

/// The earth suite: every operation's median, and the MLP curve.
pub fn earth(records: &[Record]) -> Option<String> {
    let recs: Vec<&Record> = of(records, "suite-earth").collect();
    if recs.is_empty() {
        return None;
    }
    let mut modes: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in &recs {
        let p = &r.parameters;
        if p["part"] == "mlp" {
            if let (Some(g), Some(m), Some(v)) =
                (p["g"].as_f64(), p["mode"].as_str(), med(r, "access_time"))
            {
                if !r.name.contains("chains in L1") {
                    modes.entry(m.to_string()).or_default().push((g, v));
                }
            }
        }
    }
    let chart = plot::line_chart(&LineChart {
        title: "memory-level parallelism".into(),
        x_label: "independent chains G".into(),
        y_label: "ns per access".into(),
        log_x: false,
        x_bytes: false,
        series: modes
            .into_iter()
            .map(|(name, points)| Series { name, points })
            .collect(),
        markers: Vec::new(),
    });
    let rows: Vec<Vec<String>> = recs
        .iter()
        .filter_map(|r| {
            let metric = r.stats.first()?;
            Some(vec![
                r.name.clone(),
                metric.metric.clone(),
                num(Some(metric.summary.median), 1),
            ])
        })
        .collect();
    Some(figure(
        chart,
        html_table(&["measurement", "metric", "ns (median)"], &rows),
    ))
}
