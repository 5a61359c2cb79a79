//! Bandwidth records as terminal text: one row per measurement, then the warnings.

use numalab_results::output::table;
use numalab_results::present::warning_lines;
use numalab_results::Record;
use numalab_topo::fmt_bytes;
use std::fmt::Write;

/// Bandwidth records as text.
pub(super) fn render(records: &[Record]) -> String {
    let mut s = String::new();
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            let p = &r.parameters;
            let st = r.stats.first();
            let g = |f: fn(&numalab_results::Stat) -> f64| {
                st.map(|x| format!("{:.2}", f(x)))
                    .unwrap_or_else(|| "-".into())
            };
            vec![
                r.name.clone(),
                p["state"].as_str().unwrap_or("").into(),
                fmt_bytes(p["size_bytes"].as_u64().unwrap_or(0)),
                p["vector_isa"].as_str().unwrap_or("").into(),
                g(|x| x.summary.median),
                // The best-of-N is the figure that settles (or says it did not).
                numalab_results::settle::cell(r, g(|x| x.summary.max)),
                g(|x| x.summary.min),
                r.median("traffic")
                    .map(|m| format!("{m:.2}"))
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let _ = writeln!(s, "Bandwidth (GB/s = 10^9 bytes/s; counted bytes as STREAM counts them, traffic adds write-allocate)\n");
    s.push_str(&table(
        &[
            "measurement",
            "state",
            "size",
            "vector",
            "median",
            "max",
            "min",
            "traffic median",
        ],
        &rows,
    ));
    s.push('\n');
    s.push_str(&super::scaling::text(records).unwrap_or_default());
    s.push_str(&warning_lines(records));
    s
}
