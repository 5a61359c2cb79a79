//! `numalab advise` on the synthetic two-socket survey and wrong-node trace in
//! tests/fixtures/advise (known right answers), and on bad input (exit 2, one line).

mod common;

use common::{bad_input, numalab, tmpdir, validate};
use serde_json::Value;
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/advise")
        .join(name)
        .display()
        .to_string()
}

fn ok(args: &[&str]) -> String {
    let out = numalab(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_shared_streaming_footprint_is_told_to_interleave_both_nodes() {
    let s = fixture("two-socket.json");
    let args = [
        "advise",
        &s,
        "--threads",
        "4",
        "--footprint",
        "8G",
        "--shared",
    ];
    let text = ok(&args);
    assert!(text.contains("#1 compact + interleave 0,1"), "{text}");
    assert!(
        text.contains("numactl --physcpubind=0-3 --interleave=0,1 PROGRAM"),
        "{text}"
    );
    let mut j = args.to_vec();
    j.push("--json");
    let out = numalab(&j);
    let recs = validate(&out.stdout);
    let best = recs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["data"]["candidate"]["rank"] == 1)
        .expect("a ranked placement");
    assert_eq!(
        best["data"]["candidate"]["memory"]["nodes"],
        serde_json::json!([0, 1])
    );
}

#[test]
fn latency_bound_slices_stay_local() {
    let s = fixture("two-socket.json");
    let text = ok(&[
        "advise",
        &s,
        "--threads",
        "2",
        "--footprint",
        "1G",
        "--access",
        "random",
    ]);
    assert!(
        text.contains("#1 compact + local (first touch): 90.0 ns"),
        "{text}"
    );
    assert!(text.contains("taskset -c 0-1 PROGRAM"), "{text}");
}

#[test]
fn the_wrong_node_trace_is_told_to_move_saving_the_matrix_difference() {
    let dir = tmpdir("advise");
    let o = dir.join("advice.json");
    let (s, t) = (fixture("two-socket.json"), fixture("wrong-node.trace"));
    let text = ok(&["advise", &s, "--trace", &t, "-o", o.to_str().unwrap()]);
    assert!(
        text.contains("saves 60.0 ns per load (150.0 → 90.0 ns)"),
        "{text}"
    );
    assert!(text.contains("migratepages 100 1 0"), "{text}");
    assert!(text.contains("page locality is a proxy"), "{text}");
    let recs: Value = serde_json::from_str(&std::fs::read_to_string(&o).unwrap()).unwrap();
    let th = recs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["data"]["section"] == "thread")
        .unwrap();
    assert_eq!(th["data"]["thread"]["node"], 0);
    assert_eq!(th["data"]["thread"]["best"]["saving_ns"], 60.0);
    // The report section renders from the saved records.
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn no_workload_advises_for_all_cpus_and_half_a_node_and_says_so() {
    let s = fixture("two-socket.json");
    let text = ok(&["advise", &s]);
    let said = text
        .lines()
        .filter(|l| l.contains("no workload given"))
        .collect::<Vec<_>>();
    assert_eq!(said.len(), 1, "{text}");
    assert!(
        said[0].contains("all 4 CPUs") && said[0].contains("half of node"),
        "{text}"
    );
    // Advice follows, as for a workload given by flags.
    let v: Value = serde_json::from_str(&ok(&["advise", &s, "--json"])).unwrap();
    let recs = v.as_array().unwrap();
    assert!(
        recs.iter().any(|r| r["name"] != "notes"),
        "no placement: {v}"
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tmpdir("advise-bad");
    let garbled = dir.join("results.json");
    std::fs::write(&garbled, "{ not json").unwrap();
    let s = fixture("two-socket.json");
    let o = dir.join("out.json");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "/nonexistent-survey".into(),
                "--threads".into(),
                "2".into(),
                "--footprint".into(),
                "1G".into(),
            ],
            "/nonexistent-survey",
        ),
        (
            vec![
                dir.display().to_string(),
                "--threads".into(),
                "2".into(),
                "--footprint".into(),
                "1G".into(),
            ],
            "not JSON",
        ),
        (
            vec![
                s.clone(),
                "--threads".into(),
                "0".into(),
                "--footprint".into(),
                "1G".into(),
            ],
            "--threads",
        ),
        (
            vec![
                s.clone(),
                "--threads".into(),
                "64".into(),
                "--footprint".into(),
                "1G".into(),
            ],
            "1 to 4",
        ),
        (
            vec![
                s.clone(),
                "--threads".into(),
                "2".into(),
                "--footprint".into(),
                "huge".into(),
            ],
            "'huge'",
        ),
        (
            vec![
                s.clone(),
                "--threads".into(),
                "2".into(),
                "--footprint".into(),
                "1G".into(),
                "--reads".into(),
                "150".into(),
            ],
            "0 to 100",
        ),
        (
            vec![
                s.clone(),
                "--threads".into(),
                "2".into(),
                "--footprint".into(),
                "1G".into(),
                "--access".into(),
                "sideways".into(),
            ],
            "sideways",
        ),
        (
            vec![s.clone(), "--threads".into(), "2".into()],
            "--footprint SIZE",
        ),
        (
            vec![s.clone(), "--trace".into(), s.clone()],
            "not a numalab trace",
        ),
        // A record file without a topology record is not a survey.
        (
            vec![
                fixture("wrong-node.trace"),
                "--threads".into(),
                "2".into(),
                "--footprint".into(),
                "1G".into(),
            ],
            "wrong-node.trace",
        ),
    ];
    for (args, needle) in cases {
        let mut a = vec!["advise"];
        a.extend(args.iter().map(|s| s.as_str()));
        a.extend(["-o", o.to_str().unwrap()]);
        bad_input(&numalab(&a), &[needle], &format!("{a:?}"));
        assert!(!o.exists(), "{a:?} left a partial file");
    }
    let _ = std::fs::remove_dir_all(dir);
}
