//! `numalab model` end to end.

mod common;

use common::{bad_input, numalab, tmpdir, validate};

#[test]
fn fit_recovers_coefficients_from_csv_and_refuses_bad_files() {
    let dir = tmpdir("model");
    let csv = dir.join("m.csv");
    // local 90, penalty 30, 20 per hop.
    std::fs::write(&csv, "hops,latency_ns\n0,90\n1,140\n2,160\n3,180\n").unwrap();
    let p = csv.display().to_string();
    let out = numalab(&["model", "predict", &p, "--hops", "4", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = validate(&out.stdout);
    let f = &v[0]["data"]["fit"];
    assert!((f["local_ns"].as_f64().unwrap() - 90.0).abs() < 1e-6);
    assert!((f["remote_penalty_ns"].as_f64().unwrap() - 30.0).abs() < 1e-6);
    assert!((f["per_hop_ns"].as_f64().unwrap() - 20.0).abs() < 1e-6);
    assert!((v[0]["data"]["prediction_ns"].as_f64().unwrap() - 200.0).abs() < 1e-6);

    std::fs::write(&csv, "0,90\n1,abc\n").unwrap();
    let out = numalab(&["model", "fit", &p]);
    bad_input(&out, &["'1,abc'"], "a bad csv line");
    let missing = dir.join("none.json").display().to_string();
    let out = numalab(&["model", "fit", &missing]);
    bad_input(&out, &[&missing], "a missing file");
}
