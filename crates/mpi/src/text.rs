//! Readable tables of the MPI records (what `numalab mpi …` prints by default).

use crate::present::MatrixData;
use numalab_results::output::table;
use numalab_results::Record;
use std::fmt::Write;

fn stat<'a>(r: &'a Record, metric: &str) -> Option<&'a numalab_results::stats::Summary> {
    r.stat(metric).map(|s| &s.summary)
}

fn warnings(recs: &[Record]) -> String {
    let mut seen: Vec<&String> = Vec::new();
    let mut s = String::new();
    for w in recs.iter().flat_map(|r| &r.warnings) {
        if !seen.contains(&w) {
            seen.push(w);
            let _ = writeln!(s, "warning: {w}");
        }
    }
    s
}

/// Sizes down, operations across: median and p95 of each.
pub fn sweep(recs: &[Record], metric: &str, unit: &str) -> String {
    let mut ops: Vec<&str> = Vec::new();
    let mut sizes: Vec<u64> = Vec::new();
    for r in recs {
        if let (Some(op), Some(sz)) = (r.parameters["op"].as_str(), r.parameters["size"].as_u64()) {
            if !ops.contains(&op) {
                ops.push(op);
            }
            if !sizes.contains(&sz) {
                sizes.push(sz);
            }
        }
    }
    sizes.sort_unstable();
    let mut header = vec!["size".to_string()];
    for op in &ops {
        header.push(format!("{op} median"));
        header.push(format!("{op} p95"));
    }
    let prec = if unit == "ns" { 1 } else { 3 };
    let rows: Vec<Vec<String>> = sizes
        .iter()
        .map(|&sz| {
            let mut row = vec![numalab_topo::fmt_bytes(sz)];
            for op in &ops {
                let s = recs
                    .iter()
                    .find(|r| r.parameters["op"] == *op && r.parameters["size"] == sz)
                    .and_then(|r| stat(r, metric));
                match s {
                    Some(s) => {
                        row.push(format!("{:.prec$}", s.median));
                        row.push(format!("{:.prec$}", s.p95));
                    }
                    None => row.extend(["-".into(), "-".into()]),
                }
            }
            row
        })
        .collect();
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut s = String::new();
    if let Some(r) = recs.first() {
        let _ = writeln!(
            s,
            "{metric} ({unit}) from rank {} to rank {} ({}), per iteration",
            r.parameters["from_rank"],
            r.parameters["to_rank"],
            r.parameters["relation"].as_str().unwrap_or("?")
        );
    }
    s.push_str(&table(&h, &rows));
    s.push('\n');
    s.push_str(&warnings(recs));
    s
}

/// The rank × rank matrix and its groups by relation.
pub fn matrix(recs: &[Record]) -> String {
    let Some(m) = recs.iter().find(|r| r.kind == "mpi-matrix") else {
        return String::new();
    };
    let d: Option<MatrixData> = m.data_as().ok();
    let n = m.parameters["ranks"].as_u64().unwrap_or(0) as usize;
    let cell = |a: usize, b: usize| d.as_ref().and_then(|d| *d.latency_ns.get(a)?.get(b)?);
    let mut header = vec!["rank".to_string()];
    header.extend((0..n).map(|r| r.to_string()));
    let rows: Vec<Vec<String>> = (0..n)
        .map(|a| {
            let mut row = vec![a.to_string()];
            row.extend((0..n).map(|b| match cell(a, b) {
                Some(v) => format!("{v:.1}"),
                None => "-".into(),
            }));
            row
        })
        .collect();
    let h: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut s = format!(
        "one-way latency (ns) of {} B ping-pong, median per pair\n",
        m.parameters["size"]
    );
    s.push_str(&table(&h, &rows));
    s.push_str("\n\nby relation\n");
    let g: Vec<Vec<String>> = d
        .iter()
        .flat_map(|d| &d.groups)
        .map(|g| {
            vec![
                g.relation.clone(),
                g.pairs.to_string(),
                format!("{:.1}", g.min_ns),
                format!("{:.1}", g.median_ns),
                format!("{:.1}", g.max_ns),
            ]
        })
        .collect();
    s.push_str(&table(
        &["relation", "pairs", "min ns", "median ns", "max ns"],
        &g,
    ));
    s.push('\n');
    s.push_str(&warnings(recs));
    s
}
