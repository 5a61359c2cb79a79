//! The survey's headline figures: one line per thing a user asks first.

use numalab_results::output::table;
use numalab_results::report::med;
use numalab_results::stats::median;
use numalab_results::Record;

/// A table of headline figures found in `records` (absent ones are left out).
pub fn headline(records: &[Record]) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut add = |what: String, v: Option<f64>, unit: &str, digits: usize| {
        if let Some(v) = v {
            rows.push(vec![what, format!("{v:.digits$}"), unit.into()]);
        }
    };
    if let Some(sw) = records.iter().find(|r| r.kind == "latency-sweep") {
        let d = sw.data.as_ref();
        for p in d
            .and_then(|d| d["plateaus"].as_array())
            .into_iter()
            .flatten()
        {
            add(
                format!("{} latency (plateau)", p["level"].as_str().unwrap_or("?")),
                p["median_ns"].as_f64(),
                "ns",
                2,
            );
        }
        let last = d
            .and_then(|d| d["points"].as_array())
            .and_then(|p| p.last());
        add(
            format!(
                "latency at {} (largest sweep size)",
                last.and_then(|p| p["size_bytes"].as_u64())
                    .map(numalab_topo::fmt_bytes)
                    .unwrap_or_default()
            ),
            last.and_then(|p| p["median_ns"].as_f64()),
            "ns",
            1,
        );
    }
    for r in records.iter().filter(|r| r.kind == "latency") {
        let st = r.parameters["state"].as_str().unwrap_or("warm");
        if st != "warm" {
            add(format!("latency, lines {st}"), med(r, "latency"), "ns", 1);
        }
    }
    for r in records.iter().filter(|r| r.kind == "bandwidth") {
        let p = &r.parameters;
        let n = p["requestors"].as_u64().unwrap_or(1);
        let k = p["kernel"].as_str().unwrap_or("");
        if !matches!(k, "readv" | "copy") {
            continue;
        }
        let m = if n > 1 {
            "aggregate_bandwidth"
        } else {
            "bandwidth"
        };
        add(
            format!("{k} bandwidth, {n} thread(s)"),
            med(r, m),
            "GB/s",
            2,
        );
    }
    let cas: Vec<f64> = records
        .iter()
        .filter(|r| r.kind == "c2c")
        .filter_map(|r| med(r, "cas_rtt_half"))
        .collect();
    add(
        format!("CAS RTT/2, median of {} pair(s)", cas.len()),
        median(&cas),
        "ns",
        1,
    );
    if let Some(r) = records.iter().find(|r| r.kind == "invalidate") {
        add("RDEX with 1 sharer".into(), med(r, "rdex_latency"), "ns", 1);
    }
    let loaded: Vec<&Record> = records
        .iter()
        .filter(|r| r.kind == "loaded-latency")
        .collect();
    if let Some(top) = loaded
        .iter()
        .filter_map(|r| Some((med(r, "injected_bandwidth")?, med(r, "latency")?)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
    {
        add(
            format!("latency under {:.1} GB/s of injected traffic", top.0),
            Some(top.1),
            "ns",
            1,
        );
    }
    if rows.is_empty() {
        return String::new();
    }
    let mut s = String::from("\nHeadline figures (medians)\n");
    s.push_str(&table(&["measurement", "value", "unit"], &rows));
    s.push('\n');
    s
}
