//! The text of `suite placement`, from its records alone: the plan of `--dry-run`
//! (whose record holds the whole plan) or every measured curve as a table.

use super::experiment::{head, unit_name};
use super::view::placement_plan_text;
use super::Plan;
use crate::domains::{describe, Ordered};
use numalab_results::output::table;
use numalab_results::present::{of, warning_lines};
use numalab_results::settle;
use numalab_results::Record;
use numalab_topo::{cpulist, fmt_bytes};
use serde_json::Value;
use std::fmt::Write;

/// The text of `suite-placement` and `suite-placement-plan` records.
pub fn text(records: &[Record]) -> Option<String> {
    let mut s = match of(records, "suite-placement-plan").next() {
        Some(r) => {
            let plan: Plan = serde_json::from_value(r.data.clone()?).ok()?;
            let iterations = r.parameters["iterations"].as_u64().unwrap_or(0);
            format!(
                "{}{}",
                head(&r.provenance.topology, &plan, iterations),
                placement_plan_text(&plan)
            )
        }
        None => measured(records)?,
    };
    s.push_str(&warning_lines(records));
    Some(s)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The measured points' text: the head, one table per curve, then what did not run.
fn measured(records: &[Record]) -> Option<String> {
    let points: Vec<&Record> = of(records, "suite-placement")
        .filter(|r| !r.parameters["readers"].is_null())
        .collect();
    let mut s = String::new();
    if let Some(first) = points.first() {
        s.push_str(&measured_head(first));
    }
    let mut curves: Vec<(String, String)> = Vec::new();
    for r in &points {
        let key = curve_key(r);
        if !curves.contains(&key) {
            curves.push(key);
        }
    }
    for key in &curves {
        let pts: Vec<&Record> = points
            .iter()
            .copied()
            .filter(|r| &curve_key(r) == key)
            .collect();
        s.push_str(&curve_table(&pts));
    }
    for r in of(records, "suite-placement") {
        for u in &r.unavailable {
            let _ = writeln!(s, "not run here: {}: {}", u.feature, u.reason);
        }
    }
    (!s.is_empty()).then_some(s)
}

fn curve_key(r: &Record) -> (String, String) {
    let p = &r.parameters;
    (
        p["suite"].as_str().unwrap_or("").to_string(),
        p["curve"].as_str().unwrap_or("").to_string(),
    )
}

/// The suite's first line, from a point's parameters and placement.
fn measured_head(r: &Record) -> String {
    let p = &r.parameters;
    let domains: Vec<Ordered> = r
        .placement
        .as_ref()
        .and_then(|pl| serde_json::from_value(pl["domains"].clone()).ok())
        .unwrap_or_default();
    let lines = u(&p["shared_lines"]);
    format!(
        "placement suite (KSR1 seed 000) on {}: level {}, domains {}; owner {}; data set {} ({} lines), unit {}, {} per point\n",
        r.provenance.topology,
        p["level"].as_str().unwrap_or("-"),
        describe(&domains),
        u(&p["owner"]),
        fmt_bytes(lines * u(&p["line_bytes"])),
        lines,
        unit_name(u(&p["unit_lines"]) as usize),
        numalab_results::words::passes(u(&p["iterations"]) as usize)
    )
}

fn ns(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".into())
}

/// One curve: readers → median ns per unit, overall and per domain.
fn curve_table(pts: &[&Record]) -> String {
    let Some(first) = pts.first() else {
        return String::new();
    };
    let p = &first.parameters;
    let mut letters: Vec<String> = pts
        .iter()
        .flat_map(|r| r.stats.iter())
        .filter_map(|st| st.metric.strip_prefix("read_time_").map(str::to_string))
        .collect();
    letters.sort();
    letters.dedup();
    let fixed = u(&p["fixed_readers"]);
    let x = if fixed > 0 {
        format!("remote readers (+{fixed} local)")
    } else {
        "readers".into()
    };
    let mut header = vec![x, "newest".into(), "overall".into()];
    header.extend(letters.iter().map(|l| format!("domain {l}")));
    let rows: Vec<Vec<String>> = pts
        .iter()
        .map(|r| {
            let q = &r.parameters;
            let last = |k: &str| {
                q[k].as_array()
                    .and_then(|a| a.last())
                    .map(|v| v.as_str().map_or(v.to_string(), str::to_string))
                    .unwrap_or_else(|| "-".into())
            };
            let mut row = vec![
                u(&q["x"]).to_string(),
                format!("{} ({})", last("reader_cpus"), last("reader_domains")),
                settle::cell(r, ns(r.median("read_time"))),
            ];
            for l in &letters {
                row.push(ns(r.median(&format!("read_time_{l}"))));
            }
            row
        })
        .collect();
    let mut title = format!(
        "{} — {}",
        p["suite"].as_str().unwrap_or("-"),
        p["curve"].as_str().unwrap_or("-")
    );
    if p["partitioned"].as_bool() == Some(true) {
        title.push_str(" (partitioned: each reader its own lines)");
    }
    let unit = if u(&p["unit_lines"]) == 2 {
        "line pair"
    } else {
        "line"
    };
    let h: Vec<&str> = header.iter().map(|x| x.as_str()).collect();
    format!(
        "\n{title} — median ns per {unit}, owners {}\n{}\n",
        cpulist::format_json(&p["owners"]),
        table(&h, &rows)
    )
}
