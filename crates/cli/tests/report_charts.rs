//! The report's charts in a real browser (issue 20, part 2): log–log latency axes
//! with power-of-ten and power-of-four tick labels, cache sizes and plateaus marked, a
//! persisted outlier labelled; bandwidth charts that never mix a cache level with
//! memory; one-point sweeps as tables; c2c heatmaps in topology order with domain
//! boundaries. Structure only, never timings: the records are a fixture.
//!
//! `fixtures/report/charts.json`: the topology record of
//! `tests/topologies/64amd64-4s2n4ca2co.xml` (`numalab topo --topology … --json`:
//! 4 packages of 2 nodes, one L3 per node, 2 MiB L2 per 2 cores), a 2-core VM's survey
//! sweep, bandwidth, invalidation and loaded-latency records, two synthetic warm reads
//! that fit its L2, a synthetic outlier on the sweep (4 MiB, persisted after its
//! re-measure) and a synthetic c2c matrix over CPUs 0–31 listed round-robin over
//! the nodes (`--cpus 0,8,16,24,1,…`), so its order is not the topology's.

mod common;

use common::{browser, numalab, tmpdir};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/charts.json")
}

/// The fixture's report, rendered by `numalab report`.
fn report(tag: &str) -> PathBuf {
    let dir = tmpdir(tag);
    let html = dir.join("report.html");
    let out = numalab(&[
        "report",
        fixture().to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    html
}

/// What the page's script found, or None when the browser may be skipped.
fn probe(html: &Path, js: &str) -> Option<Value> {
    browser::eval_in_page(html, 1366, 900, js)
}

const HELPERS: &str = r#"
const texts = (root, cls) => Array.from(root.querySelectorAll('text.' + cls)).map(t => t.textContent);
const out = v => { document.getElementById('numalab-test').textContent = JSON.stringify(v); };
"#;

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn power_of(v: f64, base: f64) -> bool {
    let k = v.ln() / base.ln();
    v > 0.0 && (k - k.round()).abs() < 1e-9
}

/// "4K" → 4096, "16M" → 16 Mi, "512" → 512.
fn parse_bytes(s: &str) -> f64 {
    let (n, mul) = match s.chars().last() {
        Some('K') => (&s[..s.len() - 1], 1024.0),
        Some('M') => (&s[..s.len() - 1], 1048576.0),
        Some('G') => (&s[..s.len() - 1], 1073741824.0),
        _ => (s, 1.0),
    };
    n.parse::<f64>()
        .unwrap_or_else(|_| panic!("tick label {s:?} is not a size"))
        * mul
}

#[test]
fn latency_chart_is_log_log_with_caches_plateaus_and_the_outlier_marked() {
    let html = report("charts-latency");
    let Some(v) = probe(
        &html,
        &format!(
            "{HELPERS}
const s = document.querySelector('#hierarchy svg');
out({{ x: texts(s, 'tick-x'), y: texts(s, 'tick-y'), markers: texts(s, 'marker-label'),
      plateaus: texts(s, 'plateau-label'), outliers: texts(s, 'outlier-label'),
      width: s.getBoundingClientRect().width,
      table: document.querySelector('#hierarchy').innerText }});"
        ),
    ) else {
        return;
    };
    let x = strings(&v["x"]);
    let y = strings(&v["y"]);
    assert!(x.len() >= 4 && y.len() >= 2, "{v}");
    // Sizes are binary: every x tick a power of four (the sweep spans 4K–64M).
    for t in &x {
        assert!(power_of(parse_bytes(t), 4.0), "x tick {t} of {x:?}");
    }
    assert_eq!(x.first().map(String::as_str), Some("4K"), "{x:?}");
    // Latency spans decades: every y tick a power of ten, 1 to 100 ns here.
    for t in &y {
        let n: f64 = t.parse().unwrap_or_else(|_| panic!("y tick {t:?}"));
        assert!(power_of(n, 10.0), "y tick {t} of {y:?}");
    }
    assert_eq!(y, ["1", "10", "100"]);
    // The topology's caches (this VM's: 32K L1, 512K L2, 8M L3) and the plateaus
    // measured, both drawn: the L3 marker sits far beyond where memory begins.
    assert_eq!(strings(&v["markers"]), ["L1 32K", "L2 512K", "L3 8M"]);
    let plateaus = strings(&v["plateaus"]);
    assert!(
        plateaus.iter().any(|p| p == "L2 4.85 ns")
            && plateaus.iter().any(|p| p.starts_with("memory ")),
        "{plateaus:?}"
    );
    assert_eq!(
        strings(&v["outliers"]),
        ["outlier (persisted after re-measure)"]
    );
    assert!(v["width"].as_f64().unwrap() > 300.0, "{v}");
    // The table says it too, on the point's row.
    let table = v["table"].as_str().unwrap();
    assert!(
        table.contains("4 MiB\t190.00\t170.00\toutlier (persisted after re-measure)"),
        "{table}"
    );
}

#[test]
fn bandwidth_charts_never_mix_a_cache_level_with_memory() {
    let html = report("charts-bandwidth");
    let Some(v) = probe(
        &html,
        &format!(
            "{HELPERS}
out(Array.from(document.querySelectorAll('#bandwidth .bw-group')).map(g => ({{
  group: g.dataset.group, cache: g.dataset.cache === 'true',
  charts: g.querySelectorAll('svg').length,
  title: g.querySelector('svg') ? g.querySelector('svg').textContent : '',
  rows: Array.from(g.querySelectorAll('tbody tr, tr')).map(r => Array.from(r.cells).map(c => c.innerText))
        .filter(r => r.length === 5 && r[0] !== 'kernel') }})));"
        ),
    ) else {
        return;
    };
    let groups = v.as_array().unwrap();
    let names: Vec<&str> = groups
        .iter()
        .map(|g| g["group"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "L2 (2 MiB), 1 thread",
            "memory (node 0), 1 thread",
            "memory (node 0), 2 threads",
        ],
        "{v}"
    );
    for g in groups {
        let name = g["group"].as_str().unwrap();
        let rows = g["rows"].as_array().unwrap();
        assert!(!rows.is_empty(), "{name}: no rows");
        // Every bar of the group lives where the group says, with its thread count.
        for r in rows {
            assert_eq!(r[3].as_str().unwrap(), name, "{r}");
        }
        let cache = g["cache"].as_bool().unwrap();
        assert_eq!(cache, name.starts_with('L'), "{name}");
        // One chart per group of two or more, titled with the group.
        assert_eq!(g["charts"], if rows.len() >= 2 { 1 } else { 0 }, "{name}");
        if rows.len() >= 2 {
            assert!(g["title"].as_str().unwrap().contains(name), "{g}");
        }
    }
    // The in-cache upgrade on half an L2 of the VM is not among memory's bars.
    let upgrade = groups
        .iter()
        .find(|g| {
            g["rows"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r[0].as_str().unwrap().starts_with("upgrade"))
        })
        .unwrap();
    assert_eq!(upgrade["group"], "L2 (2 MiB), 1 thread");
}

#[test]
fn one_point_sweeps_are_tables_not_charts() {
    let html = report("charts-one-point");
    let Some(v) = probe(
        &html,
        &format!(
            "{HELPERS}
out(['invalidate', 'loaded'].map(id => {{ const s = document.getElementById(id);
  return {{ id, svgs: s.querySelectorAll('svg').length, tables: s.querySelectorAll('table').length,
           text: s.innerText }}; }}));"
        ),
    ) else {
        return;
    };
    for s in v.as_array().unwrap() {
        assert_eq!(s["svgs"], 0, "{s}");
        assert!(s["tables"].as_u64().unwrap() >= 1, "{s}");
    }
    assert!(v[0]["text"].as_str().unwrap().contains("RDEX"), "{v}");
}

/// The fixture's CPUs in topology order, and the number of domain changes between
/// neighbours in that order.
fn expected_order() -> (Vec<u64>, usize) {
    let recs: Value = serde_json::from_slice(&std::fs::read(fixture()).unwrap()).unwrap();
    let recs = recs.as_array().unwrap();
    let topo = recs.iter().find(|r| r["kind"] == "topo").unwrap();
    let c2c = recs.iter().find(|r| r["kind"] == "c2c-matrix").unwrap();
    let pus = topo["data"]["pus"].as_array().unwrap();
    let pu = |c: u64| pus.iter().find(|p| p["os"] == c).unwrap();
    let key = |c: u64| {
        let p = pu(c);
        ["package", "node", "l3", "core", "smt_rank", "os"].map(|k| p[k].as_u64().unwrap())
    };
    let mut cpus: Vec<u64> = c2c["data"]["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_u64().unwrap())
        .collect();
    let given = cpus.clone();
    cpus.sort_by_key(|&c| key(c));
    assert_ne!(
        cpus, given,
        "the fixture's own order must differ from topology order"
    );
    let changes = cpus
        .windows(2)
        .filter(|w| {
            let (a, b) = (key(w[0]), key(w[1]));
            a[..3] != b[..3]
        })
        .count();
    (cpus, changes)
}

#[test]
fn c2c_heatmap_rows_follow_the_topology_with_domain_boundaries() {
    let (order, changes) = expected_order();
    assert!(changes >= 2);
    let html = report("charts-c2c");
    let Some(v) = probe(
        &html,
        &format!(
            "{HELPERS}
out(Array.from(document.querySelectorAll('#c2c svg')).map(s => ({{
  rows: texts(s, 'row-label'), cols: texts(s, 'col-label'),
  package: s.querySelectorAll('line.domain-package').length,
  inner: s.querySelectorAll('line.domain-node, line.domain-l3').length,
  all: s.querySelectorAll('line.domain').length }})));"
        ),
    ) else {
        return;
    };
    let maps = v.as_array().unwrap();
    assert_eq!(maps.len(), 2, "{v}");
    let want: Vec<String> = order.iter().map(|c| c.to_string()).collect();
    for m in maps {
        assert_eq!(strings(&m["rows"]), want, "{m}");
        assert_eq!(strings(&m["cols"]), want, "{m}");
        // A horizontal and a vertical line at every domain change.
        assert_eq!(m["all"].as_u64().unwrap() as usize, 2 * changes, "{m}");
        assert!(m["package"].as_u64().unwrap() >= 2, "{m}");
        assert!(m["inner"].as_u64().unwrap() >= 2, "{m}");
    }
}
