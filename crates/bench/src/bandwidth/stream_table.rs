//! STREAM's layout from the mixed kernels: Copy, Scale, Add and Triad with the best
//! rate and the average, fastest and slowest time of one sweep over the arrays, per
//! memory node and thread count, as `stream.c` prints them.
//!
//! The rows come from kernels that move STREAM's bytes: Copy (c = a) from the 1:1 mix
//! (one read stream, one write stream), Add (c = a + b) from the 2:1 mix, Triad
//! (a = b + s·c) from the triad kernel. Scale (b = s·c) moves Copy's bytes with a
//! multiply numalab's kernels do not do: its row says so rather than repeat Copy.

use numalab_results::output::table;
use numalab_results::present::of;
use numalab_results::report::{esc, html_table};
use numalab_results::Record;
use std::collections::BTreeSet;

/// STREAM's functions, with the mix that moves their bytes (None: not measured).
const FUNCTIONS: [(&str, Option<&str>); 4] = [
    ("Copy", Some("1:1")),
    ("Scale", None),
    ("Add", Some("2:1")),
    ("Triad", Some("triad")),
];

/// Why Scale has no figure.
const NO_SCALE: &str =
    "Scale: not measured (it moves Copy's bytes with a multiply numalab's kernels do not do)";

/// One STREAM row's figures: best MB/s, then average, fastest and slowest seconds of one
/// sweep over all threads' arrays (bytes over each pass's rate).
fn figures(r: &Record) -> Option<[f64; 4]> {
    let st = r.stat("bandwidth")?;
    let (lo, hi) = (st.summary.min, st.summary.max);
    if lo <= 0.0 {
        return None;
    }
    let per = r.parameters["size_bytes"].as_f64()?;
    let threads = r.parameters["requestors"].as_f64()?;
    let bytes = per * threads;
    // The passes the statistics use: every pass within their range.
    let used: Vec<f64> = r
        .data
        .as_ref()
        .and_then(|d| serde_json::from_value::<Vec<f64>>(d["samples_gbps"].clone()).ok())
        .unwrap_or_default()
        .into_iter()
        .filter(|g| *g >= lo && *g <= hi)
        .collect();
    let secs = |gbps: f64| bytes / (gbps * 1e9);
    let avg = if used.is_empty() {
        secs(st.summary.mean)
    } else {
        used.iter().map(|g| secs(*g)).sum::<f64>() / used.len() as f64
    };
    Some([hi * 1e3, avg, secs(hi), secs(lo)])
}

/// The (memory nodes, threads) groups the mixed records hold, and their records.
fn groups(records: &[Record]) -> Vec<((String, String), Vec<&Record>)> {
    let recs: Vec<&Record> = of(records, "bandwidth-mix")
        .filter(|r| r.parameters["store"] == "regular")
        .collect();
    let key = |r: &Record| {
        (
            r.parameters["nodes"].to_string(),
            r.parameters["requestors"].to_string(),
        )
    };
    let keys: BTreeSet<(String, String)> = recs.iter().map(|r| key(r)).collect();
    keys.into_iter()
        .map(|k| {
            let rs = recs.iter().copied().filter(|r| key(r) == k).collect();
            (k, rs)
        })
        .filter(|(_, rs): &(_, Vec<&Record>)| {
            FUNCTIONS
                .iter()
                .any(|(_, m)| m.is_some_and(|m| rs.iter().any(|r| r.parameters["mix"] == m)))
        })
        .collect()
}

/// The rows of one group: function, best rate MB/s, avg, min and max time (s).
fn rows(rs: &[&Record]) -> Vec<Vec<String>> {
    FUNCTIONS
        .iter()
        .map(|(name, mix)| {
            let f = mix.and_then(|m| {
                let r = rs.iter().find(|r| r.parameters["mix"] == m)?;
                figures(r)
            });
            let mut row = vec![format!("{name}:")];
            match f {
                Some([rate, avg, min, max]) => row.extend([
                    format!("{rate:.1}"),
                    format!("{avg:.6}"),
                    format!("{min:.6}"),
                    format!("{max:.6}"),
                ]),
                None => row.extend(["-".into(), "-".into(), "-".into(), "-".into()]),
            }
            row
        })
        .collect()
}

const HEADER: [&str; 5] = [
    "Function",
    "Best Rate MB/s",
    "Avg time",
    "Min time",
    "Max time",
];

/// A group's title: the memory nodes and threads.
fn title((nodes, threads): &(String, String)) -> String {
    let nodes = nodes.trim_matches(|c| c == '[' || c == ']');
    let n = threads.parse::<u64>().ok();
    let threads = n.map_or(format!("{threads} threads"), |n| {
        numalab_results::words::count(n, "thread")
    });
    format!("STREAM layout, memory node {nodes}, {threads}")
}

/// What the rows are, said once under the tables.
fn note() -> String {
    format!("Rates are issued bytes (STREAM's count) in 10^6 bytes/s; times are seconds for one sweep over every thread's arrays at each pass's rate. Copy is the 1:1 mix, Add the 2:1 mix, Triad the triad kernel. {NO_SCALE}.")
}

/// The STREAM tables as text, or None without a 1:1, 2:1 or triad measurement.
pub fn text(records: &[Record]) -> Option<String> {
    let gs = groups(records);
    if gs.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (k, rs) in &gs {
        out.push_str(&format!("{}\n\n", title(k)));
        out.push_str(&table(&HEADER, &rows(rs)));
        out.push_str("\n\n");
    }
    out.push_str(&note());
    out.push('\n');
    Some(out)
}

/// The STREAM tables as HTML, or None without a 1:1, 2:1 or triad measurement.
pub fn html(records: &[Record]) -> Option<String> {
    let gs = groups(records);
    if gs.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (k, rs) in &gs {
        out.push_str(&format!(
            "<div class=\"stream-table\"><h3>{}</h3>{}</div>",
            esc(&title(k)),
            html_table(&HEADER, &rows(rs))
        ));
    }
    out.push_str(&format!("<p>{}</p>", esc(&note())));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::{Provenance, Stat, Summary};

    fn rec(mix: &str, samples: &[f64]) -> Record {
        let params = serde_json::json!({
            "mix": mix, "store": "regular", "nodes": [0], "requestors": 2,
            "size_bytes": 1_000_000_000u64,
        });
        let mut r = Record::new("bandwidth-mix", mix, Provenance::collect("t", "t"), params);
        r.stats.push(Stat {
            metric: "bandwidth".into(),
            unit: "GB/s".into(),
            summary: Summary::of(samples).unwrap(),
        });
        r.data = Some(serde_json::json!({ "samples_gbps": samples }));
        r
    }

    #[test]
    fn one_thread_is_singular_in_the_title() {
        let one = title(&("[0]".to_string(), "1".to_string()));
        assert_eq!(one, "STREAM layout, memory node 0, 1 thread");
    }

    #[test]
    fn stream_rows_come_from_the_mixes_that_move_streams_bytes() {
        let recs = vec![
            rec("1:1", &[10.0, 20.0]),
            rec("2:1", &[15.0]),
            rec("triad", &[16.0, 16.0]),
            rec("1:0", &[30.0]),
        ];
        let t = text(&recs).unwrap();
        assert!(t.contains("STREAM layout, memory node 0, 2 threads"), "{t}");
        // Copy: best 20 GB/s = 20000 MB/s; 2 GB per sweep: 0.1 s fastest, 0.2 s slowest,
        // 0.15 s on average.
        let copy = t
            .lines()
            .find(|l| l.trim_start().starts_with("Copy:"))
            .unwrap();
        for want in ["20000.0", "0.150000", "0.100000", "0.200000"] {
            assert!(copy.contains(want), "{copy}");
        }
        let scale = t
            .lines()
            .find(|l| l.trim_start().starts_with("Scale:"))
            .unwrap();
        assert!(
            scale.contains('-') && t.contains("Scale: not measured"),
            "{t}"
        );
        assert!(t
            .lines()
            .any(|l| l.trim_start().starts_with("Triad:") && l.contains("16000.0")));
        assert!(text(&[rec("1:0", &[30.0])]).is_none());
        assert!(html(&recs).unwrap().contains("Best Rate MB/s"));
    }
}
