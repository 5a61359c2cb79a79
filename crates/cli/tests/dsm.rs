//! `numalab dsm run` and `numalab suite cvm`: bad input, a real 2-rank run checked
//! against the sequential program, and a rank dying mid-run. Every run has a hard
//! timeout; nothing here compares timings.

mod common;

use common::mpi::dsm_sor;
use common::validate;
use std::process::Output;

const LIMIT: &str = "180";

fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    common::bounded(LIMIT, args, env)
}

fn one_line_usage_error(args: &[&str], needle: &str) {
    common::bad_input(&run(args, &[]), &[needle], &format!("{args:?}"));
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    one_line_usage_error(
        &["dsm", "run", "quicksort", "--ranks", "2"],
        "invalid app 'quicksort'",
    );
    one_line_usage_error(
        &["dsm", "run", "sor", "--ranks", "2", "--protocol", "tso"],
        "lmw, lsw, seq or lmwc",
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
fn a_scale_other_than_1_2_4_or_8_is_refused_and_a_scaled_plan_says_it() {
    for k in ["0", "3", "16"] {
        one_line_usage_error(
            &["dsm", "run", "sor", "--ranks", "2", "--scale", k],
            &format!("invalid --scale '{k}': 1, 2, 4 or 8"),
        );
    }
    let plan = |k: &str| {
        let out = run(
            &dsm_sor(&["--input", "paper", "--scale", k, "--dry-run", "--json"]),
            &[],
        );
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        validate(&out.stdout).as_array().unwrap()[0].clone()
    };
    let (one, four) = (plan("1"), plan("4"));
    assert!(!one["name"].as_str().unwrap().contains("--scale"), "{one}");
    assert!(
        four["name"]
            .as_str()
            .unwrap()
            .contains("--input paper --scale 4"),
        "{four}"
    );
    assert_eq!(four["data"]["scale"].as_u64(), Some(4), "{four}");
    // SOR's rows × 4: four times the shared grid.
    let bytes = |v: &serde_json::Value| v["data"]["shared_bytes"].as_u64().unwrap();
    assert_eq!(bytes(&four), 4 * bytes(&one));
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
        &dsm_sor(&[]),
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
    let out = run(&dsm_sor(&[]), &[("NUMALAB_DSM_KILL_RANK", "1")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("rank 1") && err.contains("signal 9"),
        "stderr: {err}"
    );
}

/// `dsm run sor --ranks 2 EXTRA…` (text, or JSON with `json`), asserting it succeeded.
fn sor_run(extra: &[&str], json: bool) -> Output {
    let mut args = dsm_sor(extra);
    if json {
        args.push("--json");
    }
    let out = run(&args, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `dsm run sor --ranks 2 --threads 2 --protocol seq`.
fn sor_seq(json: bool) -> Output {
    sor_run(&["--threads", "2", "--protocol", "seq"], json)
}

#[test]
fn a_run_says_when_threads_share_cores_and_costs_its_faults() {
    let v = validate(&sor_seq(true).stdout);
    let recs = v.as_array().unwrap();
    let d = &recs[0]["data"];
    // SOR's boundary rows are remote pages on both ranks.
    assert!(d["sum"]["remote_faults"].as_u64().unwrap() > 0);
    assert!(d["sum"]["remote_fault_ns"].as_u64().unwrap() > 0);
    assert!(d["per_remote_fault_ns"].as_f64().unwrap() > 0.0);
    for k in ["fault_idle_ns", "fault_busy_ns"] {
        assert!(d["costs"][k].as_f64().unwrap() > 0.0, "{k}: {}", d["costs"]);
    }
    let mut any = false;
    for r in recs.iter().filter(|r| r["kind"] == "dsm-rank") {
        let c = &r["data"]["cores"];
        let n = |k: &str| c[k].as_u64().unwrap();
        let shared = n("cpus") < n("busy_threads")
            || n("ranks_on_host") * n("busy_threads") > n("host_cpus");
        assert_eq!(c["shared"].as_bool(), Some(shared), "{c}");
        assert_eq!(n("busy_threads"), 2, "compute and service");
        // numalab pins each rank to one CPU, which its service thread shares.
        assert_eq!(n("cpus"), 1, "{c}");
        any |= shared;
    }
    assert_eq!(d["cores_shared"].as_bool(), Some(any));
    assert_eq!(d["cores_shared"].as_bool(), Some(true));
}

/// `dsm run sor --ranks 2 --protocol lmwc` (1 thread), text or JSON.
fn sor_lmwc(json: bool) -> Output {
    sor_run(&["--protocol", "lmwc"], json)
}

#[test]
fn an_lmwc_run_says_what_an_interval_moved_beside_the_sequential_compute() {
    let v = validate(&sor_lmwc(true).stdout);
    let d = &v.as_array().unwrap()[0]["data"];
    let per = &d["per_interval"];
    // SOR's boundary rows are shared: every interval sends diffs and asks for some.
    for k in [
        "intervals_per_rank",
        "bytes",
        "round_trips",
        "sequential_ns",
    ] {
        assert!(per[k].as_f64().unwrap() > 0.0, "{k}: {per}");
    }
    assert_eq!(per["ranks"].as_u64(), Some(2), "{per}");
    // Ranks on one host: the service threads sleep on their doorbells, and say how
    // often they woke.
    assert!(d["sum"]["service_wakeups"].as_u64().unwrap() > 0, "{d}");
    // Every rank says its compute and service threads' CPU time over the run.
    let ranks: Vec<_> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "dsm-rank")
        .collect();
    assert_eq!(ranks.len(), 2, "{v}");
    for r in ranks {
        let s = &r["data"]["stats"];
        assert!(s["compute_cpu_ns"].as_u64().unwrap() > 0, "{s}");
        assert!(s["service_cpu_ns"].as_u64().is_some(), "{s}");
    }
    let text = String::from_utf8(sor_lmwc(false).stdout).unwrap();
    assert!(
        text.contains("CPU time (the ranks' together): compute threads "),
        "{text}"
    );
    assert!(text.contains("per interval and rank:"), "{text}");
    assert!(text.contains("service threads: "), "{text}");
    assert!(text.contains("communication under"), "{text}");
}

#[test]
fn a_runs_text_parts_add_up_to_its_time() {
    let out = sor_seq(false);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.ends_with('\n'));
    assert!(text.contains("cores shared:"), "{text}");
    assert!(text.contains("per fault in this run"), "{text}");
    let header: Vec<&str> = text
        .lines()
        .next()
        .unwrap()
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for line in text.lines().skip(1).take(2) {
        let f: Vec<f64> = line
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(f64::NAN))
            .collect();
        let parts: f64 = ["app", "barrier", "fault", "lock", "segv"]
            .iter()
            .map(|p| f[col(p)])
            .sum();
        // Printed to 0.01 ms: five roundings.
        assert!(
            (parts - f[col("time ms")]).abs() <= 0.03,
            "parts {parts} against {line}"
        );
    }
}

#[test]
fn the_cvm_suite_text_ends_with_a_newline_and_costs_its_faults() {
    let out = run(
        &[
            "suite",
            "cvm",
            "--ranks",
            "2",
            "--apps",
            "sor",
            "--protocols",
            "seq",
            "--threads",
            "1,2",
        ],
        &[],
    );
    let text = common::ok_text(&out);
    assert!(text.ends_with('\n'), "no final newline: {text:?}");
    assert!(text.contains("Remote faults: µs per fault"), "{text}");
    assert!(text.contains("IO (overlapped)"), "{text}");
}
