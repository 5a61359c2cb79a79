//! How mixed-traffic records are shown: one row per measurement (issued bandwidth, the
//! read share issued, the traffic estimate, counters), and the injection table (mixes
//! down, memory nodes across), as text and HTML.

use super::MixData;
use numalab_results::output::table;
use numalab_results::plot;
use numalab_results::present::{of, warning_lines, Presenter};
use numalab_results::report::{esc, figure, html_table};
use numalab_results::{settle, Record};
use numalab_topo::fmt_bytes;
use std::collections::BTreeSet;

/// Mixed-traffic bandwidth and the injection table.
pub struct MixPresenter;

fn s(r: &Record, k: &str) -> String {
    r.parameters[k].as_str().unwrap_or("").to_string()
}

fn nodes(r: &Record) -> String {
    let v: Vec<u32> = serde_json::from_value(r.parameters["nodes"].clone()).unwrap_or_default();
    numalab_topo::cpulist::format(&v)
}

fn data(r: &Record) -> Option<MixData> {
    serde_json::from_value(r.data.clone()?).ok()
}

fn f2(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2}"))
}

/// The row label of a record: its mix, and the stores when they are not regular.
fn row_label(r: &Record) -> String {
    let st = s(r, "store");
    let l = s(r, "mix_label");
    if st == "nt" {
        format!("{l}, nt stores")
    } else {
        l
    }
}

/// The counters' figure, or why there is none.
fn counters(d: &Option<MixData>) -> String {
    match d.as_ref().map(|d| &d.counters) {
        Some(c) => match (c.gbps, &c.source) {
            (Some(g), Some(src)) => format!("{g:.2} GB/s ({src})"),
            _ => "unavailable".into(),
        },
        None => "-".into(),
    }
}

fn rows(records: &[Record]) -> Vec<Vec<String>> {
    of(records, "bandwidth-mix")
        .map(|r| {
            let d = data(r);
            vec![
                row_label(r),
                s(r, "store"),
                nodes(r),
                r.parameters["requestors"].to_string(),
                fmt_bytes(r.parameters["size_bytes"].as_u64().unwrap_or(0)),
                settle::cell(r, f2(r.median("bandwidth"))),
                settle::cell(r, f2(r.stats.first().map(|x| x.summary.max))),
                d.as_ref().map_or("-".into(), |d| {
                    format!("{:.1}%", 100.0 * d.read_share_issued)
                }),
                f2(r.median("traffic_estimate")),
                counters(&d),
            ]
        })
        .collect()
}

/// The injection table: row labels, node columns, and per row its label then the
/// issued GB/s on each node (its best pass, the settled figure).
struct Injection {
    labels: Vec<String>,
    cols: Vec<String>,
    cells: Vec<Vec<String>>,
}

fn injection(records: &[Record]) -> Option<Injection> {
    let recs: Vec<&Record> = of(records, "bandwidth-mix")
        .filter(|r| s(r, "table") == "injection")
        .collect();
    if recs.is_empty() {
        return None;
    }
    let mut labels: Vec<String> = Vec::new();
    for r in &recs {
        if !labels.contains(&row_label(r)) {
            labels.push(row_label(r));
        }
    }
    let cols: Vec<String> = recs
        .iter()
        .map(|r| nodes(r))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let cells = labels
        .iter()
        .map(|l| {
            let mut row = vec![l.clone()];
            for c in &cols {
                // An unsettled figure reads "unsettled*" (and draws no bar).
                let v = recs
                    .iter()
                    .find(|r| &row_label(r) == l && &nodes(r) == c)
                    .map_or("-".into(), |r| settle::cell(r, f2(r.figure("bandwidth"))));
                row.push(v);
            }
            row
        })
        .collect();
    Some(Injection {
        labels,
        cols,
        cells,
    })
}

/// The mixes' thread counts with their noun: "1 thread", "2/4 threads".
fn threads(records: &[Record]) -> String {
    let n: BTreeSet<String> = of(records, "bandwidth-mix")
        .map(|r| r.parameters["requestors"].to_string())
        .collect();
    let one = n.len() == 1 && n.contains("1");
    let noun = numalab_results::words::noun(if one { 1 } else { 2 }, "thread");
    format!("{} {noun}", n.into_iter().collect::<Vec<_>>().join("/"))
}

fn text(records: &[Record]) -> String {
    let mut out = String::new();
    let plans: Vec<Vec<String>> = of(records, "bandwidth-mix-plan")
        .map(|r| {
            vec![
                row_label(r),
                s(r, "store"),
                nodes(r),
                r.parameters["requestors"].to_string(),
                fmt_bytes(r.parameters["size_bytes"].as_u64().unwrap_or(0)),
                r.parameters["buffers_per_requestor"].to_string(),
            ]
        })
        .collect();
    if !plans.is_empty() {
        out.push_str("Mixed-traffic bandwidth plan\n\n");
        let h = [
            "mix",
            "store",
            "node",
            "threads",
            "bytes/thread",
            "buffers/thread",
        ];
        out.push_str(&table(&h, &plans));
        out.push('\n');
    }
    let rows = rows(records);
    if !rows.is_empty() {
        out.push_str("Mixed-traffic bandwidth (GB/s = 10^9 bytes/s; issued = bytes loaded and stored, as STREAM and likwid count; traffic = estimate adding a write-allocate read per regular store)\n\n");
        let h = [
            "mix",
            "store",
            "node",
            "threads",
            "bytes/thread",
            "issued median",
            "issued max",
            "read share",
            "traffic est.",
            "counters",
        ];
        out.push_str(&table(&h, &rows));
        out.push('\n');
    }
    if let Some(Injection { cols, cells, .. }) = injection(records) {
        out.push_str(&format!(
            "Injection table: issued GB/s (best pass), {} against each memory node\n\n",
            threads(records)
        ));
        let h: Vec<String> = std::iter::once("mix".to_string())
            .chain(cols.iter().map(|c| format!("node {c}")))
            .collect();
        let h: Vec<&str> = h.iter().map(|x| x.as_str()).collect();
        out.push_str(&table(&h, &cells));
        out.push('\n');
    }
    if let Some(t) = super::stream_table::text(records) {
        out.push_str(&t);
        out.push('\n');
    }
    out.push_str(&unavailable_lines(records));
    out.push_str(&warning_lines(records));
    out
}

/// Why counters gave no figure, each reason once.
fn unavailable_lines(records: &[Record]) -> String {
    let why: BTreeSet<String> = of(records, "bandwidth-mix")
        .filter_map(|r| data(r)?.counters.unavailable)
        .collect();
    why.into_iter().map(|w| format!("note: {w}\n")).collect()
}

impl Presenter for MixPresenter {
    fn kinds(&self) -> &'static [&'static str] {
        &["bandwidth-mix", "bandwidth-mix-plan"]
    }
    fn text(&self, records: &[Record]) -> Option<String> {
        Some(text(records))
    }
    fn section(&self) -> Option<(&'static str, &'static str)> {
        Some((
            "bandwidth-mix",
            "Mixed read/write traffic and the injection table",
        ))
    }
    fn html(&self, records: &[Record]) -> Option<String> {
        let rows = rows(records);
        if rows.is_empty() {
            return None;
        }
        let mut out = String::new();
        if let Some(Injection {
            labels,
            cols,
            cells,
        }) = injection(records)
        {
            for (i, c) in cols.iter().enumerate() {
                let bars: Vec<(String, f64)> = labels
                    .iter()
                    .zip(&cells)
                    .filter_map(|(l, row)| Some((l.clone(), row[i + 1].parse().ok()?)))
                    .collect();
                let chart = plot::bar_chart(
                    &format!("Injection bandwidth, memory node {c}: issued GB/s (best pass)"),
                    "GB/s",
                    &bars,
                );
                let h: Vec<String> = std::iter::once("mix".to_string())
                    .chain(cols.iter().map(|c| format!("node {c} GB/s")))
                    .collect();
                let h: Vec<&str> = h.iter().map(|x| x.as_str()).collect();
                out.push_str(&format!(
                    "<div class=\"mix-injection\" data-node=\"{}\"><h3>Injection table, {}</h3>{}</div>",
                    esc(c),
                    esc(&threads(records)),
                    figure(chart, html_table(&h, &cells))
                ));
            }
        }
        let h = [
            "mix",
            "store",
            "node",
            "threads",
            "bytes/thread",
            "issued median GB/s",
            "issued max",
            "read share issued",
            "traffic estimate GB/s",
            "memory-controller counters",
        ];
        out.push_str(&super::stream_table::html(records).unwrap_or_default());
        out.push_str(&format!(
            "<div class=\"mix-runs\">{}</div>",
            html_table(&h, &rows)
        ));
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::Provenance;

    fn mixes(requestors: &[u64]) -> Vec<Record> {
        requestors
            .iter()
            .map(|n| {
                let prov = Provenance::collect("1 node", "this machine");
                Record::new(
                    "bandwidth-mix",
                    "m",
                    prov,
                    serde_json::json!({ "requestors": n }),
                )
            })
            .collect()
    }

    #[test]
    fn the_injection_title_counts_its_threads_in_words() {
        assert_eq!(threads(&mixes(&[1])), "1 thread");
        assert_eq!(threads(&mixes(&[2, 2])), "2 threads");
        assert_eq!(threads(&mixes(&[1, 4])), "1/4 threads");
    }
}
