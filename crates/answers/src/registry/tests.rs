//! The registry covers every record kind the code can emit, once, and the sections
//! draw from their records.

use super::REGISTRY;
use numalab_results::{Provenance, Record};
use serde_json::json;
use std::collections::BTreeSet;
use std::path::Path;

/// Non-test source of every crate (`#[cfg(test)]` modules and `tests.rs` files cut).
fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            if name != "tests" && name != "target" {
                sources(&p, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            let text = std::fs::read_to_string(&p).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap().to_string();
            out.push((p.display().to_string(), code));
        }
    }
}

/// A string literal at the start of `s` (after whitespace).
fn literal(s: &str) -> Option<String> {
    let s = s.trim_start().strip_prefix('"')?;
    Some(s[..s.find('"')?].to_string())
}

/// Every kind the source emits: `Record::new("kind", …)` and `const KIND_…: &str =
/// "kind"` (for call sites that pick a kind at run time; such a file must name its
/// kinds so).
fn emitted_kinds() -> BTreeSet<String> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for c in std::fs::read_dir(&crates).unwrap() {
        let src = c.unwrap().path().join("src");
        if src.is_dir() {
            sources(&src, &mut files);
        }
    }
    let mut kinds = BTreeSet::new();
    for (path, code) in &files {
        for (i, _) in code.match_indices("Record::new(") {
            match literal(&code[i + "Record::new(".len()..]) {
                Some(k) => {
                    kinds.insert(k);
                }
                None => assert!(
                    code.contains("KIND_"),
                    "{path}: Record::new with a kind chosen at run time, but no KIND_ constant names the kinds it can be"
                ),
            }
        }
        for (i, _) in code.match_indices("const KIND_") {
            let rest = &code[i..];
            let eq = rest.find('=').unwrap();
            kinds.insert(literal(&rest[eq + 1..]).expect("a KIND_ constant is a string literal"));
        }
    }
    kinds
}

#[test]
fn every_emitted_kind_has_exactly_one_presenter() {
    let emitted = emitted_kinds();
    // Sanity: the scan sees kinds from every layer.
    for k in [
        "topo",
        "latency-sweep",
        "matrix-latency",
        "mpi-latency",
        "dsm",
        "suite-earth",
        "model",
    ] {
        assert!(
            emitted.contains(k),
            "the source scan missed {k}: {emitted:?}"
        );
    }
    let mut registered = BTreeSet::new();
    for p in REGISTRY {
        for k in p.kinds() {
            assert!(
                registered.insert(k.to_string()),
                "kind {k} is registered twice"
            );
        }
    }
    let missing: Vec<_> = emitted.difference(&registered).collect();
    assert!(
        missing.is_empty(),
        "kinds emitted but not registered: {missing:?}"
    );
    let stale: Vec<_> = registered.difference(&emitted).collect();
    assert!(
        stale.is_empty(),
        "kinds registered but never emitted: {stale:?}"
    );
    let ids: Vec<_> = REGISTRY
        .iter()
        .filter_map(|p| p.section())
        .map(|s| s.0)
        .collect();
    let unique: BTreeSet<_> = ids.iter().collect();
    assert_eq!(ids.len(), unique.len(), "section ids repeat: {ids:?}");
}

fn rec(kind: &str, name: &str, p: serde_json::Value, metric: &str, v: f64) -> Record {
    let mut r = Record::new(kind, name, Provenance::collect("test", "none"), p);
    r.add_samples(metric, "ns", &[v, v]);
    r
}

#[test]
fn multi_node_sections_draw_from_their_records() {
    let mut rs = Vec::new();
    for d in 0..2u64 {
        for n in 0..2u64 {
            let p = json!({ "domain": d, "mem_node": n, "hops": u64::from(d != n) });
            let v = if d == n { 100.0 } else { 160.0 };
            rs.push(rec(
                "matrix-latency",
                &format!("node {d} → node {n}"),
                p,
                "latency",
                v,
            ));
        }
    }
    for h in 0..2u64 {
        let u = 100.0 + 60.0 * h as f64;
        rs.push(rec(
            "intervene-uown",
            &format!("uown hops {h}"),
            json!({ "hops": h }),
            "latency",
            u,
        ));
        rs.push(rec(
            "intervene",
            &format!("dexd hops {h} xhops=0"),
            json!({ "hops": h, "state": "dexd", "placement": "xhops=0" }),
            "latency",
            180.0 + 50.0 * h as f64,
        ));
    }
    let points: Vec<numalab_results::model::Point> = [(0, 100.0), (1, 160.0)]
        .iter()
        .map(|&(hops, latency_ns)| numalab_results::model::Point { hops, latency_ns })
        .collect();
    let mut m = Record::new(
        "model",
        "fit",
        Provenance::collect("test", "none"),
        json!({}),
    );
    m.set_data(&numalab_results::model::ModelData {
        fit: numalab_results::model::fit(&points).unwrap(),
        points,
        prediction_ns: None,
    });
    rs.push(m);
    let secs = numalab_results::present::sections(REGISTRY, &rs);
    let body = |id: &str| secs.iter().find(|s| s.id == id).unwrap().body.clone();
    let matrix = body("matrix").expect("matrix section");
    assert!(matrix.contains("<svg") && matrix.contains("160.0"));
    let iv = body("intervene").expect("intervene section");
    // ΔU = 230 − 160 at one hop.
    assert!(iv.contains("70.0"), "{iv}");
    assert!(body("model").unwrap().contains("60.0"));
    assert!(body("c2c").is_none());
    let html = super::render(&rs, "t");
    // A section without data is not drawn; the one line under the sections says why.
    assert!(!html.contains("<section id=\"c2c\""));
    let line = &html[html.find("id=\"not-drawn\"").expect("not-measured line")..];
    assert!(
        line.contains("no c2c-matrix records in the input"),
        "{line}"
    );
    assert!(!html.contains("Absent"));
}

#[test]
fn data_that_does_not_match_its_kind_is_left_out_not_guessed() {
    let mut r = rec("latency-sweep", "sweep", json!({}), "plateau L1", 1.0);
    r.data = Some(json!({ "points": "not a list" }));
    let e = r
        .data_as::<numalab_bench::latency::SweepData>()
        .unwrap_err();
    assert!(e.to_string().contains("latency-sweep"), "{e}");
    let secs = numalab_results::present::sections(REGISTRY, &[r]);
    assert!(secs
        .iter()
        .find(|s| s.id == "hierarchy")
        .unwrap()
        .body
        .is_none());
}
