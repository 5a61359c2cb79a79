//! The thread-scaling table: per memory node, each memory-bound kernel's bandwidth
//! with 1 … N threads (the survey measures `readv` at 1, 2, 4 … threads per node),
//! with the bandwidth per thread and the factor over one thread.

use super::groups::{self, Place};
use numalab_results::output::table;
use numalab_results::plausible::{self, Flag};
use numalab_results::present::of;
use numalab_results::report::{esc, html_table};
use numalab_results::Record;
use std::collections::BTreeMap;

/// The GB/s of a bandwidth record (its best pass, the settled figure) (the aggregate with several threads), and whether
/// a plausibility rule names it.
fn figure(r: &Record, flags: &[Flag]) -> Option<(u64, Cell)> {
    let (n, metric) = super::metric_of(r);
    let implausible = plausible::flag_of(flags, r, metric).is_some();
    Some((n, (r.figure(metric)?, implausible)))
}

/// A table: its title, header and rows.
type Table = (String, Vec<String>, Vec<Vec<String>>);

/// A figure and whether it breaks a plausibility rule.
type Cell = (f64, bool);

/// `v` to two places, marked when it (or the figure it is over) breaks a rule: the
/// table shows every figure, but never one that cannot be as if it could.
fn shown(v: f64, implausible: bool) -> String {
    if implausible {
        format!("{v:.2} {MARK}")
    } else {
        format!("{v:.2}")
    }
}

/// The mark beside a figure a plausibility rule names.
const MARK: &str = "✗";

/// Per (memory nodes, kernel): GB/s by thread count, for memory-bound regular passes
/// measured at two thread counts or more.
type Curves = BTreeMap<(Vec<u32>, String), BTreeMap<u64, Cell>>;

fn curves(records: &[Record]) -> Curves {
    let caches = groups::caches(records);
    let flags = plausible::check(records);
    let mut out: Curves = BTreeMap::new();
    for r in of(records, "bandwidth") {
        let Some((n, v)) = figure(r, &flags) else {
            continue;
        };
        // Without the topology (text gets only bandwidth records) the cache levels are
        // unknown: the buffers' home node stands for where the data lives.
        let nodes = match groups::group_of(r, records, caches.as_deref()).place {
            Place::Memory(nodes) => nodes,
            Place::Unknown(_) => groups::nodes(r, records),
            Place::Cache(..) => continue,
        };
        if r.parameters["state"] != "warm" {
            continue;
        }
        let k = r.parameters["kernel"].as_str().unwrap_or("?").to_string();
        out.entry((nodes, k)).or_default().entry(n).or_insert(v);
    }
    out.retain(|_, by| by.len() >= 2);
    out
}

/// One table per memory node: threads down, and per kernel GB/s, GB/s per thread and
/// the factor over one thread.
fn tables(records: &[Record]) -> Vec<Table> {
    let cs = curves(records);
    let mut nodes: Vec<&Vec<u32>> = cs.keys().map(|(n, _)| n).collect();
    nodes.dedup();
    nodes
        .into_iter()
        .map(|node| {
            let kernels: Vec<(&String, &BTreeMap<u64, Cell>)> = cs
                .iter()
                .filter(|((n, _), _)| n == node)
                .map(|((_, k), by)| (k, by))
                .collect();
            let mut threads: Vec<u64> = kernels
                .iter()
                .flat_map(|(_, by)| by.keys().copied())
                .collect();
            threads.sort_unstable();
            threads.dedup();
            let mut header = vec!["threads".to_string()];
            for (k, _) in &kernels {
                header.extend([
                    format!("{k} GB/s"),
                    "per thread".into(),
                    "× 1 thread".into(),
                ]);
            }
            let rows = threads
                .iter()
                .map(|t| {
                    let mut row = vec![t.to_string()];
                    for (_, by) in &kernels {
                        match by.get(t) {
                            Some(&(v, bad)) => row.extend([
                                shown(v, bad),
                                shown(v / *t as f64, bad),
                                by.get(&1).map_or("-".into(), |&(one, bad_one)| {
                                    shown(v / one, bad || bad_one)
                                }),
                            ]),
                            None => row.extend(["-".into(), "-".into(), "-".into()]),
                        }
                    }
                    row
                })
                .collect();
            let title = match node.as_slice() {
                [] => "Thread scaling, memory".to_string(),
                n => format!(
                    "Thread scaling, memory node{} {}",
                    if n.len() > 1 { "s" } else { "" },
                    numalab_topo::cpulist::format(n)
                ),
            };
            (title, header, rows)
        })
        .collect()
}

/// What the figures are, said once.
const NOTE: &str = "GB/s (10^9 bytes/s), best pass: every thread's bytes over the time from the first thread's start to the last one's end of a pass, each thread streaming its own buffer from the node's memory; × 1 thread: over the one-thread figure";

/// Said under a table only when a figure in it is marked.
const MARK_NOTE: &str = "✗: the figure breaks a plausibility rule (listed under Implausible figures) and is not an answer";

/// The notes under the tables: what the figures are, and what the mark means if used.
fn notes(ts: &[Table]) -> Vec<&'static str> {
    let marked = ts
        .iter()
        .any(|(_, _, rows)| rows.iter().flatten().any(|c| c.ends_with(MARK)));
    let mut out = vec![NOTE];
    if marked {
        out.push(MARK_NOTE);
    }
    out
}

/// The scaling tables as text, or None without a kernel measured at two thread counts.
pub fn text(records: &[Record]) -> Option<String> {
    let ts = tables(records);
    if ts.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (title, header, rows) in &ts {
        let h: Vec<&str> = header.iter().map(String::as_str).collect();
        out.push_str(&format!("\n{title}\n\n{}\n", table(&h, rows)));
    }
    for n in notes(&ts) {
        out.push_str(&format!("({n})\n"));
    }
    Some(out)
}

/// The scaling tables as HTML, or None without a kernel measured at two thread counts.
pub fn html(records: &[Record]) -> Option<String> {
    let ts = tables(records);
    if ts.is_empty() {
        return None;
    }
    let mut out = String::new();
    for (title, header, rows) in &ts {
        let h: Vec<&str> = header.iter().map(String::as_str).collect();
        out.push_str(&format!(
            "<div class=\"bw-scaling\"><h3>{}</h3>{}</div>",
            esc(title),
            html_table(&h, rows)
        ));
    }
    for n in notes(&ts) {
        out.push_str(&format!("<p>{}</p>", esc(n)));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::{Provenance, Stat, Summary};
    use serde_json::json;

    fn rec(kernel: &str, n: u64, gbps: f64) -> Record {
        let params = json!({
            "kernel": kernel, "state": "warm", "requestors": n, "mp": true,
            "size_bytes": 1u64 << 30,
        });
        let mut r = Record::new("bandwidth", kernel, Provenance::collect("t", "t"), params);
        r.placement = Some(json!({"resolved": {"memory": {"nodes": [0]}}}));
        let metric = if n > 1 {
            "aggregate_bandwidth"
        } else {
            "bandwidth"
        };
        r.stats.push(Stat {
            metric: metric.into(),
            unit: "GB/s".into(),
            summary: Summary::of(&[gbps]).unwrap(),
        });
        r
    }

    fn topo() -> Record {
        let mut t = Record::new("topo", "topo", Provenance::collect("t", "t"), json!({}));
        t.data = Some(json!({"caches": [
            {"level": 3, "bytes": 32u64 << 20, "line_bytes": 64, "shared_by": 8}
        ]}));
        t
    }

    #[test]
    fn threads_down_with_per_thread_and_the_factor_over_one() {
        let recs = vec![
            topo(),
            rec("readv", 1, 10.0),
            rec("readv", 2, 18.0),
            rec("readv", 4, 30.0),
        ];
        // Without the topology record, the home node still groups them.
        assert!(text(&recs[1..]).unwrap().contains("memory node 0"));
        let t = text(&recs).unwrap();
        assert!(t.contains("Thread scaling, memory node 0"), "{t}");
        let four = t
            .lines()
            .find(|l| l.trim_start().starts_with("4 "))
            .unwrap();
        for want in ["30.00", "7.50", "3.00"] {
            assert!(four.contains(want), "{four}");
        }
        // One thread count is no scaling.
        assert!(text(&[topo(), rec("readv", 1, 10.0)]).is_none());
        assert!(html(&recs).unwrap().contains("× 1 thread"));
    }
}
