//! `numalab matrix` end to end, and its records feeding `numalab model fit`.

mod common;

use common::{bad_input, numalab, run_json, tmpdir, topology};

#[test]
fn dry_run_covers_every_domain_and_node_with_hops() {
    let topo = topology("16amd64-4distances.xml");
    let v = run_json("matrix", &["latency", "--dry-run", "--topology", &topo]);
    let cells = v.as_array().unwrap();
    assert_eq!(cells.len(), 64);
    let hops = |d: u64, n: u64| {
        cells
            .iter()
            .find(|c| c["parameters"]["domain"] == d && c["parameters"]["mem_node"] == n)
            .unwrap()["parameters"]["hops"]
            .as_u64()
            .unwrap()
    };
    for d in 0..8 {
        assert_eq!(hops(d, d), 0);
        for n in 0..8 {
            assert_eq!(hops(d, n), hops(n, d), "hops are symmetric");
        }
    }
    let out = numalab(&["matrix", "latencies"]);
    bad_input(&out, &["'latencies'"], "matrix latencies");
    let out = numalab(&["matrix", "latency", "--level", "rack"]);
    bad_input(&out, &["'rack'", "node, l3"], "--level rack");
}

#[test]
fn measured_matrix_feeds_the_model() {
    let dir = tmpdir("matrix");
    let f = dir.join("m.json").display().to_string();
    let v = run_json(
        "matrix",
        &["latency", "--size", "64M", "--iterations", "3", "-o", &f],
    );
    // The fastest pass of a single-thread chase: preemption adds milliseconds to a
    // pass of many loads, a few ns to each; 10 µs per load is past any memory.
    let l = common::stat(&v[0], "latency", "min");
    assert!(l > 0.0 && l < 10_000.0, "{l}");
    let fit = run_json("model", &["fit", &f]);
    let local = fit[0]["data"]["fit"]["local_ns"].as_f64().unwrap();
    assert!(local > 0.0);
}
