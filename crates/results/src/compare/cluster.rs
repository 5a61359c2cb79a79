//! Two `numalab cluster` runs compared: the cluster's figures live in its records'
//! `data` (a memory check per host and node, host × host matrices), not in samples, so
//! they are matched here, by host and node and by host pair, into the same rows as
//! every other figure. Each is one median per run, so its interval is the point
//! itself: whether it changed beyond is decided by this pair's scatter (the figures of
//! both runs around each other, [`super::spread`]); with too few figures to measure
//! that, a moved cluster figure is "not comparable", never "beyond". Hosts in one run
//! only are named in the verdict.

use super::Row;
use crate::record::Record;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;

/// What a cluster-host record's data is (the answers' `cluster-host` kind).
const HOST: &str = "cluster-host";
/// What a cluster-links record's data is (the answers' `cluster-links` kind).
const LINKS: &str = "cluster-links";

/// Why a moved cluster figure is not judged when the pair's scatter is unknown.
pub const NO_SCATTER: &str =
    "not comparable (one median per run and too few figures for this pair's scatter)";

/// The hosts that only one of the two cluster runs measured.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Hosts {
    /// Hosts of A's run only.
    pub only_a: Vec<String>,
    /// Hosts of B's run only.
    pub only_b: Vec<String>,
}

/// One cluster figure: (kind, name, metric, unit, value).
type Fig = (String, String, String, String, f64);

/// The memory figures of one `cluster-host` record: per node, latency and reads.
fn host_figs(d: &Value, out: &mut Vec<Fig>) {
    let host = d["host"].as_str().unwrap_or("?");
    for n in d["memory"].as_array().into_iter().flatten() {
        let name = format!("{host} node {}", n["node"]);
        for (key, metric, unit) in [
            ("latency_ns", "idle latency", "ns"),
            ("read_1core_gbps", "read, 1 core", "GB/s"),
            ("read_all_gbps", "read, all cores", "GB/s"),
        ] {
            if let Some(v) = n[key].as_f64() {
                out.push((HOST.into(), name.clone(), metric.into(), unit.into(), v));
            }
        }
    }
}

/// The cells of a `cluster-links` record, named "from → to".
fn link_figs(d: &Value, out: &mut Vec<Fig>) {
    let hosts: Vec<&str> = d["hosts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| h.as_str().unwrap_or("?"))
        .collect();
    for (key, metric, unit) in [
        ("latency_ns", "latency", "ns"),
        ("send_gbps", "send bandwidth", "GB/s"),
        ("recv_gbps", "receive bandwidth", "GB/s"),
    ] {
        for (i, row) in d[key].as_array().into_iter().flatten().enumerate() {
            for (j, cell) in row.as_array().into_iter().flatten().enumerate() {
                let (Some(v), Some(a), Some(b)) = (cell.as_f64(), hosts.get(i), hosts.get(j))
                else {
                    continue;
                };
                // Latency is symmetric: one cell per pair.
                if key == "latency_ns" && j < i {
                    continue;
                }
                let name = format!("{a} → {b}");
                out.push((LINKS.into(), name, metric.into(), unit.into(), v));
            }
        }
    }
}

/// Every cluster figure of a run, in the records' order.
fn figures(recs: &[Record]) -> Vec<Fig> {
    let mut out = Vec::new();
    for r in recs {
        match (r.kind.as_str(), &r.data) {
            (HOST, Some(d)) => host_figs(d, &mut out),
            (LINKS, Some(d)) => link_figs(d, &mut out),
            _ => {}
        }
    }
    out
}

/// The hosts a run's cluster records name.
fn hosts(recs: &[Record]) -> BTreeSet<String> {
    recs.iter()
        .filter(|r| r.kind == HOST)
        .filter_map(|r| r.data.as_ref()?["host"].as_str().map(str::to_string))
        .collect()
}

fn row(fa: &Fig, b: f64, min_effect: f64) -> Row {
    let a = fa.4;
    let ratio = (a != 0.0).then(|| b / a);
    let effect = ratio.filter(|r| *r > 0.0).map_or(0.0, |r| r.ln().abs());
    let change = if a != b && effect > (1.0 + min_effect).ln() {
        "beyond"
    } else {
        "within"
    };
    Row {
        kind: fa.0.clone(),
        name: fa.1.clone(),
        metric: fa.2.clone(),
        unit: fa.3.clone(),
        a,
        b,
        ratio,
        a_interval: (a, a),
        b_interval: (b, b),
        disturbed: ("-".into(), "-".into()),
        change: change.into(),
        effect,
        scope: super::Scope::Shared,
        streams_memory: false,
    }
}

/// The matched cluster figures (a point interval each), how many of A's and of B's
/// have no partner, and the hosts of one run only (None: neither run is a cluster).
pub fn rows(
    a: &[Record],
    b: &[Record],
    min_effect: f64,
) -> (Vec<Row>, usize, usize, Option<Hosts>) {
    let (fa, fb) = (figures(a), figures(b));
    if fa.is_empty() && fb.is_empty() {
        return (Vec::new(), 0, 0, None);
    }
    let key = |f: &Fig| (f.0.clone(), f.1.clone(), f.2.clone());
    let mut rows = Vec::new();
    let mut only_a = 0;
    for f in &fa {
        match fb.iter().find(|g| key(g) == key(f)) {
            Some(g) => rows.push(row(f, g.4, min_effect)),
            None => only_a += 1,
        }
    }
    let only_b = fb
        .iter()
        .filter(|g| !fa.iter().any(|f| key(f) == key(g)))
        .count();
    let (ha, hb) = (hosts(a), hosts(b));
    let named = Hosts {
        only_a: ha.difference(&hb).cloned().collect(),
        only_b: hb.difference(&ha).cloned().collect(),
    };
    (rows, only_a, only_b, Some(named))
}

/// A cluster figure "beyond" by its point intervals alone is not judged when the
/// pair's scatter could not be measured.
pub fn unjudged(rows: &mut [Row]) {
    for r in rows
        .iter_mut()
        .filter(|r| (r.kind == HOST || r.kind == LINKS) && r.change == "beyond")
    {
        r.change = NO_SCATTER.into();
    }
}

/// "; hosts only in A: x; only in B: y" for the verdict (empty when both ran the same).
pub fn hosts_words(h: &Hosts) -> String {
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    if h.only_a.is_empty() && h.only_b.is_empty() {
        return String::new();
    }
    format!(
        "; hosts only in A: {}; only in B: {}",
        list(&h.only_a),
        list(&h.only_b)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::Provenance;
    use serde_json::json;

    /// A synthetic cluster-host record (a unit test's input, not a measurement).
    fn host(name: &str, lat: f64, read: f64) -> Record {
        let mut r = Record::new(HOST, name, Provenance::collect("test", "none"), json!({}));
        r.data = Some(json!({ "host": name, "memory": [
            { "node": 0, "latency_ns": lat, "read_1core_gbps": read, "read_all_gbps": read * 2.0 }
        ]}));
        r
    }

    /// A synthetic cluster-links record of `hosts` with every cell `f(from, to)`.
    fn links(hosts: &[&str], f: impl Fn(usize, usize) -> f64) -> Record {
        let n = hosts.len();
        let m: Vec<Vec<Option<f64>>> = (0..n)
            .map(|i| (0..n).map(|j| (i != j).then(|| f(i, j))).collect())
            .collect();
        let mut r = Record::new(
            LINKS,
            "hosts",
            Provenance::collect("test", "none"),
            json!({}),
        );
        r.data = Some(json!({ "hosts": hosts, "latency_ns": m, "send_gbps": m, "recv_gbps": m }));
        r
    }

    fn run(hosts: &[&str], slow: Option<(usize, usize)>) -> Vec<Record> {
        let mut v: Vec<Record> = hosts.iter().map(|h| host(h, 100.0, 10.0)).collect();
        v.push(links(hosts, |i, j| {
            // A tiny, varied scatter, and one link 3x slower where asked.
            let base = 1.0 + 0.01 * ((i * 7 + j * 3) % 5) as f64;
            if slow == Some((i, j)) {
                base * 3.0
            } else {
                base
            }
        }));
        v
    }

    #[test]
    fn host_figures_and_link_cells_match_by_host_and_pair_and_the_moved_link_is_beyond() {
        let hs = ["h1", "h2", "h3"];
        let a = run(&hs, None);
        let b = run(&hs, Some((2, 0)));
        let c = super::super::compare(&a, &b, false);
        // 3 hosts × 3 figures; 3 latency pairs, 6 send and 6 receive cells.
        assert_eq!(c.rows.len(), 9 + 3 + 6 + 6, "{:?}", c.rows);
        assert!(c.spread.is_some());
        let beyond: Vec<(&str, &str)> = c
            .rows
            .iter()
            .filter(|r| r.change == "beyond")
            .map(|r| (r.name.as_str(), r.metric.as_str()))
            .collect();
        // The (2, 0) cell: h3 → h1 in send and receive; latency keeps (0, 2) only.
        assert_eq!(
            beyond,
            [
                ("h3 → h1", "send bandwidth"),
                ("h3 → h1", "receive bandwidth")
            ]
        );
        assert!(c
            .rows
            .iter()
            .any(|r| r.name == "h2 node 0" && r.metric == "read, all cores"));
        assert_eq!(c.cluster_hosts, Some(Hosts::default()));
        assert!(!super::super::verdict(&c).contains("hosts only"));
    }

    #[test]
    fn hosts_of_one_run_only_are_named_and_their_figures_counted_apart() {
        let a = run(&["h1", "h2", "h3"], None);
        let b = run(&["h1", "h2", "h4"], None);
        let c = super::super::compare(&a, &b, false);
        let h = c.cluster_hosts.clone().unwrap();
        assert_eq!(
            (h.only_a, h.only_b),
            (vec!["h3".to_string()], vec!["h4".to_string()])
        );
        // h3's 3 memory figures and its 2 latency, 4 send and receive cells.
        assert_eq!((c.only_a, c.only_b), (3 + 2 + 8, 3 + 2 + 8));
        let v = super::super::verdict(&c);
        assert!(v.contains("; hosts only in A: h3; only in B: h4"), "{v}");
    }

    #[test]
    fn with_too_few_figures_a_moved_cluster_figure_is_not_comparable() {
        let a = vec![host("h1", 100.0, 10.0)];
        let b = vec![host("h1", 300.0, 10.0)];
        let c = super::super::compare(&a, &b, false);
        assert!(c.spread.is_none());
        let lat = c.rows.iter().find(|r| r.metric == "idle latency").unwrap();
        assert_eq!(lat.change, NO_SCATTER);
        let rest: Vec<&Row> = c
            .rows
            .iter()
            .filter(|r| r.metric != "idle latency")
            .collect();
        assert!(rest.len() == 2 && rest.iter().all(|r| r.change == "within"));
    }

    #[test]
    fn runs_without_cluster_records_have_no_cluster_hosts() {
        let (rows, a, b, h) = rows(&[], &[], 0.1);
        assert!(rows.is_empty() && a == 0 && b == 0 && h.is_none());
    }
}
