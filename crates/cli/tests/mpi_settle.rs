//! `mpi latency|bandwidth` settle each step between the pair: passes are added while
//! the figure's interval is wide, inside `--noise-budget`, and every record says how
//! its figure settled. Two ranks on this host, every run bounded; no timing asserted.

mod common;

use common::validate;
use serde_json::Value;
use std::process::Output;

/// Runs numalab within the MPI tests' timeout (common::mpi::LIMIT): a hang fails.
fn run(args: &[&str]) -> Output {
    common::mpi::mpi_run(args, &[])
}

fn records(args: &[&str]) -> Vec<Value> {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    validate(&out.stdout).as_array().unwrap().clone()
}

/// The record's settle entry, checked against its pass log and parameters.
fn settle_of(r: &Value) -> &Value {
    let s = &r["settle"];
    assert!(s.is_object(), "no settle entry: {r}");
    let passes = s["passes"].as_u64().unwrap();
    let log = r["data"]["disturbance"]["passes"].as_array().unwrap();
    assert_eq!(log.len() as u64, passes, "{r}");
    assert_eq!(r["parameters"]["passes"], passes, "{r}");
    assert!(passes >= 5, "at least the first 5 passes: {s}");
    let [lo, hi] = [&s["interval"][0], &s["interval"][1]].map(|v| v.as_f64().unwrap());
    assert!(lo <= hi && lo > 0.0, "{s}");
    if s["settled"] == false {
        let w = r["warnings"].to_string();
        assert!(w.contains("unsettled*"), "{w}");
    }
    s
}

#[test]
fn every_p2p_step_settles_or_says_it_did_not() {
    let base = [
        "--ranks",
        "2",
        "--sizes",
        "8,4K",
        "--iterations",
        "500",
        "--json",
    ];
    let lat = records(&[&["mpi", "latency", "--ops", "pingpong,get"][..], &base].concat());
    assert_eq!(lat.len(), 4);
    for r in &lat {
        assert_eq!(r["kind"], "mpi-latency");
        assert_eq!(settle_of(r)["metric"], "latency");
        assert_eq!(settle_of(r)["tolerance_pct"], 10.0);
    }
    let bw = records(&[&["mpi", "bandwidth", "--tolerance", "20"][..], &base].concat());
    assert_eq!(bw.len(), 2);
    for r in &bw {
        assert_eq!(r["kind"], "mpi-bandwidth");
        assert_eq!(settle_of(r)["metric"], "bandwidth");
        assert_eq!(settle_of(r)["tolerance_pct"], 20.0);
    }
}

#[test]
fn a_tiny_budget_gives_the_first_passes_only_and_the_text_marks_what_did_not_settle() {
    // A tolerance no figure meets: every step is unsettled after its first passes.
    let args = [
        "mpi",
        "bandwidth",
        "--ranks",
        "2",
        "--sizes",
        "8,64K",
        "--iterations",
        "50",
        "--noise-budget",
        "1ns",
        "--tolerance",
        "0.000001",
    ];
    let file = std::env::temp_dir().join(format!("numalab-mpi-settle-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let path = file.to_str().unwrap();
    // One run: its text on stdout, its records in the file.
    let out = run(&[&args[..], &["-o", path]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = validate(&std::fs::read(&file).unwrap())
        .as_array()
        .unwrap()
        .clone();
    let _ = std::fs::remove_file(&file);
    assert_eq!(recs.len(), 2);
    for r in &recs {
        let s = settle_of(r);
        assert_eq!(s["passes"], 5, "first passes only: {s}");
        assert!(s["budget_ms"].as_f64().unwrap() < 1e-3, "{s}");
        if s["settled"] == false {
            let why = s["why"].as_str().unwrap();
            assert!(why.ends_with("(budget spent)"), "{why}");
        }
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let unsettled = recs
        .iter()
        .filter(|r| r["settle"]["settled"] == false)
        .count();
    // Each unsettled figure: its cell marked, and one warning line saying why.
    let warned = text.matches("warning: unsettled* ").count();
    assert_eq!(warned, unsettled, "{text}");
    assert_eq!(text.matches(" unsettled*").count(), 2 * unsettled, "{text}");
}

#[test]
fn a_bad_budget_or_tolerance_is_one_line_and_exit_2() {
    for (cmd, flag, bad) in [
        ("latency", "--tolerance", "0"),
        ("latency", "--tolerance", "NaN"),
        ("bandwidth", "--noise-budget", "0"),
        ("bandwidth", "--noise-budget", "-5ms"),
    ] {
        let out = run(&["mpi", cmd, "--ranks", "2", flag, bad]);
        common::bad_input(
            &out,
            &[&format!("invalid {flag} '")],
            &format!("{cmd} {flag} {bad}"),
        );
    }
    let out = run(&[
        "mpi",
        "latency",
        "--ranks",
        "2",
        "--sizes",
        "8",
        "--dry-run",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(5 passes of 2000, more while unsettled)"),
        "{text}"
    );
}
