//! `numalab dsm run` and `numalab suite cvm`: bad input, a real 2-rank run checked
//! against the sequential program, and a rank dying mid-run. Every run has a hard
//! timeout; nothing here compares timings.

mod common;

use common::validate;
use std::process::Output;

const LIMIT: &str = "180";

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    common::bounded(LIMIT, args, env)
}

fn one_line_usage_error(args: &[&str], needle: &str) {
    let out = run(args, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty());
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.contains(needle), "{needle:?} not in {err}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    one_line_usage_error(
        &["dsm", "run", "quicksort", "--ranks", "2"],
        "invalid app 'quicksort'",
    );
    one_line_usage_error(
        &["dsm", "run", "sor", "--ranks", "2", "--protocol", "tso"],
        "lmw, lsw or seq",
    );
    one_line_usage_error(
        &["dsm", "run", "sor", "--ranks", "2", "--threads", "0"],
        "1 to 64",
    );
    one_line_usage_error(
        &["dsm", "run", "sor", "--ranks", "2", "--threads", "65"],
        "1 to 64",
    );
    one_line_usage_error(
        &["dsm", "run", "sor", "--ranks", "2", "--net-delay", "fast"],
        "--net-delay 'fast'",
    );
    one_line_usage_error(
        &["dsm", "run", "sor", "--ranks", "2", "--input", "huge"],
        "small or paper",
    );
    one_line_usage_error(
        &["suite", "cvm", "--ranks", "2", "--threads", "1,x"],
        "--threads item 'x'",
    );
}

#[test]
fn two_ranks_four_threads_match_the_sequential_run() {
    let out = run(
        &[
            "dsm",
            "run",
            "water-nsq",
            "--ranks",
            "2",
            "--threads",
            "4",
            "--protocol",
            "lsw",
            "--json",
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = validate(&out.stdout);
    let recs = v.as_array().unwrap();
    assert_eq!(recs.len(), 3, "summary and one record per rank");
    assert_eq!(recs[0]["kind"], "dsm");
    let d = &recs[0]["data"];
    assert!(
        d["check"]["max_rel_diff"].as_f64().unwrap() <= d["check"]["tolerance"].as_f64().unwrap()
    );
    assert!(
        d["sum"]["remote_locks"].as_u64().unwrap() > 0,
        "WaterNsq takes remote locks"
    );
    assert!(d["sum"]["segv"].as_u64().unwrap() > 0);
}

#[test]
fn a_sigsegv_sent_to_a_rank_ends_the_job_as_any_fatal_signal() {
    // The DSM's fault handler must tell a sent SIGSEGV from an access fault.
    let out = run(
        &["dsm", "run", "sor", "--ranks", "2"],
        &[
            ("NUMALAB_DSM_KILL_RANK", "1"),
            ("NUMALAB_DSM_KILL_SIGNAL", "SEGV"),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(
        err.contains("rank 1") && err.contains("signal 11"),
        "stderr: {err}"
    );
}

#[test]
fn a_rank_dying_mid_run_ends_the_job_naming_it() {
    let out = run(
        &["dsm", "run", "sor", "--ranks", "2"],
        &[("NUMALAB_DSM_KILL_RANK", "1")],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("rank 1") && err.contains("signal 9"),
        "stderr: {err}"
    );
}
