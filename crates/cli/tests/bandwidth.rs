//! `numalab bandwidth` end to end.

mod common;

use common::{bad_input, numalab, tmpdir, topology};
use serde_json::Value;

fn bw(args: &[&str]) -> Value {
    common::run_json("bandwidth", args)
}

fn median(rec: &Value, metric: &str) -> f64 {
    common::stat(rec, metric, "median")
}

#[test]
fn bad_input_exits_2_naming_the_value() {
    let dir = tmpdir("bw-bad");
    let f = dir.join("o.json").display().to_string();
    let topo = topology("16amd64-4distances.xml");
    for (args, names) in [
        (vec!["--kernel", "triad"], "'triad'"),
        (vec!["--kernel", "read,bogus"], "'bogus'"),
        (vec!["--kernel", "upgrade", "--state", "uown"], "'uown'"),
        (vec!["--size", "0"], "'0'"),
        (vec!["--size", "1K"], "1 KiB"),
        (vec!["--state", "shrd:64"], "shrd:64"),
        (vec!["--iterations", "0"], "'0'"),
        (vec!["--topology", &topo], "--dry-run"),
    ] {
        let mut a = vec!["bandwidth"];
        a.extend_from_slice(&args);
        a.extend_from_slice(&["-o", &f]);
        bad_input(&numalab(&a), &[names], &format!("{args:?}"));
        assert!(!dir.join("o.json").exists());
    }
}

#[test]
fn dry_run_on_a_big_machine_spreads_requestors() {
    let topo = topology("64amd64-4s2n4ca2co.xml");
    let v = bw(&[
        "--dry-run",
        "--topology",
        &topo,
        "--cpu",
        "scatter:node",
        "-n",
        "8",
        "--kernel",
        "all",
    ]);
    assert_eq!(v.as_array().unwrap().len(), 8);
    let req = v[0]["placement"]["resolved"]["requestors"]
        .as_array()
        .unwrap();
    let nodes: std::collections::BTreeSet<u64> =
        req.iter().map(|t| t["node"].as_u64().unwrap()).collect();
    assert_eq!(nodes.len(), 8);
    assert_eq!(
        v[7]["parameters"]["counted_bytes_per_line"], 128,
        "copy counts read + write"
    );
    assert_eq!(
        v[7]["parameters"]["traffic_bytes_per_line"], 192,
        "copy's write-allocate"
    );
}

/// One test so that measurements do not run beside each other.
#[test]
fn measured_bandwidth_is_positive_and_physical() {
    // A generous physical bound: no single socket today streams 2 TB/s to one core.
    let v = bw(&[
        "--kernel",
        "read,readv,zero,nt,copy",
        "--size",
        "16M",
        "--iterations",
        "3",
    ]);
    for rec in v.as_array().unwrap() {
        let g = median(rec, "bandwidth");
        assert!(g > 0.0 && g < 2000.0, "{}: {g} GB/s", rec["name"]);
        // Traffic is the counted figure scaled by the kernel's bytes per line, sample
        // by sample: an exact relation, not a comparison of two measurements.
        let p = &rec["parameters"];
        let scale = p["traffic_bytes_per_line"].as_f64().unwrap()
            / p["counted_bytes_per_line"].as_f64().unwrap();
        let t = median(rec, "traffic");
        assert!(
            (t - g * scale).abs() <= 1e-9 * t,
            "{}: traffic {t} GB/s, {g} × {scale}",
            rec["name"]
        );
    }
    // bwmp: the aggregate is the sum of the requestors' figures, pass by pass.
    let v = bw(&[
        "--kernel",
        "readv",
        "--cpu",
        "0,1",
        "--mp",
        "--size",
        "16M",
        "--iterations",
        "3",
    ]);
    let recs = v.as_array().unwrap();
    assert_eq!(recs.len(), 3);
    let per = |i: usize| -> Vec<f64> {
        recs[i]["data"]["samples_gbps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let (a, b, agg) = (per(0), per(1), per(2));
    // Passes may be added until the best-of-N settles; every one is kept.
    assert!(agg.len() >= 3 && agg.len() == a.len() && a.len() == b.len());
    for ((a, b), agg) in a.iter().zip(&b).zip(&agg) {
        assert!(*a > 0.0 && *b > 0.0);
        assert!((agg - (a + b)).abs() <= 1e-9 * agg, "{agg} != {a} + {b}");
    }
    // Each requestor did at least one chunk before the stop reached it.
    let bytes = |r: &Value| r["data"]["samples_bytes"][0].as_u64().unwrap();
    assert!(bytes(&recs[0]) > 0 && bytes(&recs[1]) > 0);
    // Every record of the two CPUs says how far apart they were, for compare.
    for r in recs {
        let d = r["placement"]["distance"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no placement.distance", r["name"]));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0]["cpus"], serde_json::json!([0, 1]));
        assert!(d[0]["rtt_ns"].as_f64().is_some_and(|x| x > 0.0), "{d:?}");
    }
    // One CPU without helpers: no pair, no distance.
    let v = bw(&["--kernel", "readv", "--size", "1M", "--iterations", "3"]);
    assert!(
        v[0]["placement"].get("distance").is_none(),
        "{}",
        v[0]["placement"]
    );
}
