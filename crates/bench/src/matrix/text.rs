//! Matrix records as terminal text: initiator domains down, memory nodes across, then
//! every cell grouped by hops (Table 4.13's view). A plan's cells show their hops.

use numalab_results::output::table;
use numalab_results::present::warning_lines;
use numalab_results::Record;
use numalab_topo::fmt_bytes;
use std::collections::BTreeMap;
use std::fmt::Write;

fn u(r: &Record, key: &str) -> Option<u64> {
    r.parameters[key].as_u64()
}

/// The matrix of `records` (cells of one kind, in plan order).
pub(super) fn render(records: &[Record]) -> String {
    let Some(first) = records.first() else {
        return String::new();
    };
    let bw = first.kind.starts_with(super::KIND_BANDWIDTH);
    let what = if bw { "bandwidth" } else { "latency" };
    let level = first.parameters["level"].as_str().unwrap_or("?");
    let value = |r: &Record| r.median(what);
    let hops = |r: &Record| u(r, "hops");
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} matrix: {} domains × memory nodes, {} per {}, median of {} ({})\n",
        what,
        level,
        fmt_bytes(u(first, "size_bytes").unwrap_or(0)),
        if bw { "requestor" } else { "chase" },
        numalab_results::words::passes(u(first, "iterations").unwrap_or(0) as usize),
        if bw {
            "GB/s, one requestor per core, bwmp".to_string()
        } else {
            // Records before the stride was kept chased 128 B apart.
            format!(
                "ns, random chase, stride {}",
                u(first, "stride_bytes").unwrap_or(128)
            )
        }
    );
    let nodes: std::collections::BTreeSet<u64> =
        records.iter().filter_map(|r| u(r, "mem_node")).collect();
    let mut header = vec![format!("{level} \\ node")];
    header.extend(nodes.iter().map(|n| n.to_string()));
    let mut rows: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for r in records {
        let domain = u(r, "domain").unwrap_or(0);
        let row = rows
            .entry(domain)
            .or_insert_with(|| vec![domain.to_string()]);
        let cell = |v: f64| numalab_results::settle::cell(r, format!("{v:.1}"));
        row.push(value(r).map(cell).unwrap_or_else(|| {
            format!(
                "hops {}",
                hops(r).map(|h| h.to_string()).unwrap_or("?".into())
            )
        }));
    }
    let h: Vec<&str> = header.iter().map(|x| x.as_str()).collect();
    s.push_str(&table(&h, &rows.into_values().collect::<Vec<_>>()));
    s.push('\n');
    s.push_str(&by_hops(records, what));
    s.push_str(&warning_lines(records));
    s
}

/// Every measured cell grouped by hops: cells and their mean.
fn by_hops(records: &[Record], metric: &str) -> String {
    let mut by: BTreeMap<Option<u64>, Vec<f64>> = BTreeMap::new();
    for r in records {
        if let Some(v) = r.median(metric) {
            by.entry(u(r, "hops")).or_default().push(v);
        }
    }
    if by.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = by
        .iter()
        .map(|(h, v)| {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            vec![
                h.map(|h| h.to_string()).unwrap_or("?".into()),
                v.len().to_string(),
                format!("{mean:.1}"),
            ]
        })
        .collect();
    format!(
        "\n{}\n",
        table(&["hops", "cells", &format!("mean {metric}")], &rows)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cell(stride: Option<u64>) -> Record {
        let mut p = json!({"level": "node", "domain": 0, "mem_node": 0, "hops": 0,
            "size_bytes": 1u64 << 28, "iterations": 5});
        if let Some(s) = stride {
            p["stride_bytes"] = json!(s);
        }
        let prov = numalab_results::Provenance::collect("test", "synthetic");
        let mut r = Record::new(super::super::KIND_LATENCY, "node 0 → node 0", prov, p);
        r.add_samples("latency", "ns", &[120.0, 121.0, 122.0]);
        r
    }

    #[test]
    fn the_heading_names_the_stride_the_cells_were_chased_at() {
        assert!(render(&[cell(Some(256))]).contains("(ns, random chase, stride 256)"));
        // Older records kept no stride: they chased 128 B apart.
        assert!(render(&[cell(None)]).contains("(ns, random chase, stride 128)"));
    }
}
