//! `numalab mpi latency|bandwidth|matrix` between ranks: records, plans, data checks and
//! bad input. Every run has a hard timeout; nothing here compares timings.

mod common;

use common::validate;

use common::mpi::{mpi_run, ok_json_in_limit as ok_json, usage_error as one_line_usage_error};

/// Passes of a step whose samples make its figure.
fn used_passes(r: &serde_json::Value) -> u64 {
    let log = r["data"]["disturbance"]["passes"].as_array().unwrap();
    log.iter().filter(|p| p["used"] == true).count() as u64
}

#[test]
fn latency_over_sizes_gives_two_sided_and_rma_records_between_two_ranks() {
    let v = ok_json(&[
        "mpi",
        "latency",
        "--ranks",
        "2",
        "--sizes",
        "1:64",
        "--iterations",
        "50",
        "--warmup",
        "5",
        "--json",
    ]);
    let recs = v.as_array().unwrap();
    assert_eq!(recs.len(), 4 * 7, "4 operations × 7 sizes");
    for r in recs {
        assert_eq!(r["kind"], "mpi-latency");
        let s = &r["stats"][0];
        // 5 passes of 10 first, more while unsettled; the used ones are the figure's.
        assert_eq!(r["parameters"]["iterations_per_pass"], 10);
        assert_eq!(
            (s["metric"].as_str(), s["n"].as_u64()),
            (Some("latency"), Some(10 * used_passes(r)))
        );
        // Physical bounds only: above 1 ns, below a second.
        let med = s["median"].as_f64().unwrap();
        assert!(med > 1.0 && med < 1e9, "{}: {med}", r["name"]);
        assert_eq!(r["placement"]["measured_ranks"], serde_json::json!([0, 1]));
    }
}

#[test]
fn latency_says_its_plan_first_and_prints_a_table_or_an_osu_block_per_operation() {
    let args = |extra: &[&'static str]| {
        let mut v = vec![
            "mpi",
            "latency",
            "--ranks",
            "2",
            "--sizes",
            "8,64",
            "--ops",
            "pingpong,get",
            "--iterations",
            "20",
            "--warmup",
            "2",
        ];
        v.extend_from_slice(extra);
        v
    };
    let out = mpi_run(&args(&[]), &[]);
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{err}");
    // The plan and its estimate come before the run, once.
    assert_eq!(err.matches("mpi plan: rank 0 times").count(), 1, "{err}");
    assert!(
        err.contains("pingpong, get × 2 sizes") && err.contains("estimate"),
        "{err}"
    );
    // One table per operation, not one wide one.
    for op in ["pingpong", "get"] {
        assert_eq!(
            text.matches(&format!("{op}: latency (ns)")).count(),
            1,
            "{text}"
        );
    }
    let out = mpi_run(&args(&["--osu"]), &[]);
    let osu = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        osu.matches("# Size            Latency (us)").count(),
        2,
        "{osu}"
    );
    assert!(osu.lines().any(|l| l.starts_with("64 ")), "{osu}");
    let out = mpi_run(
        &[
            "mpi",
            "bandwidth",
            "--ranks",
            "2",
            "--sizes",
            "4K",
            "--iterations",
            "3",
            "--window",
            "4",
            "--osu",
        ],
        &[],
    );
    let osu = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(osu.contains("# Size        Bandwidth (MB/s)"), "{osu}");
    assert!(osu.lines().any(|l| l.starts_with("4096 ")), "{osu}");
}

#[test]
fn the_peers_method_sends_the_same_data_and_times_batches() {
    let v = ok_json(&[
        "mpi",
        "latency",
        "--ranks",
        "2",
        "--sizes",
        "8,4K",
        "--iterations",
        "50",
        "--warmup",
        "5",
        "--data",
        "same",
        "--batch",
        "10",
        "--json",
    ]);
    let recs = v.as_array().unwrap();
    assert_eq!(recs.len(), 4 * 2, "4 operations × 2 sizes");
    for r in recs {
        assert_eq!(r["parameters"]["data"], "same");
        assert_eq!(r["parameters"]["batch"], 10);
        // 50 iterations as 5 passes of one sample of 10 (more while unsettled).
        assert_eq!(r["stats"][0]["n"], used_passes(r), "{r}");
        let m = r["parameters"]["method"].as_str().unwrap();
        assert!(
            m.contains("batches of 10") && m.contains("same bytes"),
            "{m}"
        );
    }
    let v = ok_json(&[
        "mpi",
        "bandwidth",
        "--ranks",
        "2",
        "--sizes",
        "4K",
        "--iterations",
        "3",
        "--window",
        "4",
        "--data",
        "same",
        "--json",
    ]);
    let r = &v.as_array().unwrap()[0];
    assert_eq!(r["parameters"]["data"], "same");
    assert!(r["stats"][0]["median"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_accumulate_wraps_on_the_ranks_numalab_starts() {
    // 300 byte sums of 1 on 0xA5 wrap past 255. Open MPI 4.1's op/avx saturates
    // them instead; numalab leaves that component out of the ranks it starts.
    let v = ok_json(&[
        "mpi",
        "latency",
        "--ranks",
        "2",
        "--ops",
        "acc",
        "--sizes",
        "4K",
        "--iterations",
        "300",
        "--warmup",
        "0",
        "--json",
    ]);
    let r = &v.as_array().unwrap()[0];
    assert_eq!(r["parameters"]["ompi_mca_op"], "^avx");
    assert!(r["stats"][0]["median"].as_f64().unwrap() > 0.0, "{r}");
}

#[test]
fn a_failed_data_check_loses_that_step_only_and_never_hangs() {
    // With only op/avx allowed, a library whose MPI_SUM on uint8 saturates fails the
    // target's check: the job must neither hang in the window's free nor drop the
    // ping-pong measured before it. A library that wraps measures both.
    let out = mpi_run(
        &[
            "mpi",
            "latency",
            "--ranks",
            "2",
            "--ops",
            "pingpong,acc",
            "--sizes",
            "4K",
            "--iterations",
            "300",
            "--warmup",
            "0",
            "--json",
        ],
        &[("OMPI_MCA_op", "avx")],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v = validate(&out.stdout);
    let recs = v.as_array().unwrap();
    assert_eq!(recs.len(), 2, "{v}");
    let of = |op: &str| recs.iter().find(|r| r["parameters"]["op"] == op).unwrap();
    assert!(of("pingpong")["stats"][0]["median"].as_f64().unwrap() > 0.0);
    let acc = of("acc");
    if acc["stats"].as_array().unwrap().is_empty() {
        let why = acc["unavailable"].to_string();
        assert!(
            why.contains("data check failed") && why.contains("saturated sum"),
            "{why}"
        );
    }
}

#[test]
fn bandwidth_and_the_matrix_run_on_four_ranks() {
    let v = ok_json(&[
        "mpi",
        "bandwidth",
        "--ranks",
        "4",
        "--pair",
        "3,0",
        "--sizes",
        "4K",
        "--iterations",
        "5",
        "--window",
        "8",
        "--json",
    ]);
    let r = &v.as_array().unwrap()[0];
    assert_eq!(r["kind"], "mpi-bandwidth");
    assert_eq!(r["parameters"]["from_rank"], 3);
    assert!(r["stats"][0]["median"].as_f64().unwrap() > 0.0);
    let v = ok_json(&[
        "mpi",
        "matrix",
        "--ranks",
        "4",
        "--iterations",
        "20",
        "--warmup",
        "2",
        "--json",
    ]);
    let recs = v.as_array().unwrap();
    assert_eq!(recs.len(), 6 + 1, "six pairs and the matrix");
    let m = recs.last().unwrap();
    assert_eq!(m["kind"], "mpi-matrix");
    let lat = &m["data"]["latency_ns"];
    for a in 0..4 {
        assert!(lat[a][a].is_null());
        for b in 0..4 {
            if a != b {
                assert!(lat[a][b].as_f64().unwrap() > 0.0);
                assert_eq!(lat[a][b], lat[b][a]);
            }
        }
    }
    let groups = m["data"]["groups"].as_array().unwrap();
    let pairs: u64 = groups.iter().map(|g| g["pairs"].as_u64().unwrap()).sum();
    assert_eq!(pairs, 6);
}

#[test]
fn bidirectional_bandwidth_streams_both_ways_between_two_ranks() {
    let v = ok_json(&[
        "mpi",
        "bandwidth",
        "--bidirectional",
        "--ranks",
        "2",
        "--sizes",
        "64,64K",
        "--iterations",
        "5",
        "--window",
        "8",
        "--json",
    ]);
    let recs = v.as_array().unwrap();
    assert_eq!(recs.len(), 2, "one record per size");
    for r in recs {
        assert_eq!(r["kind"], "mpi-bandwidth");
        assert_eq!(r["parameters"]["op"], "bistream");
        assert_eq!(r["parameters"]["bidirectional"], true);
        let median = common::stat(r, "bandwidth", "median");
        assert!(median.is_finite() && median > 0.0, "{median}");
    }
    let out = mpi_run(
        &[
            "mpi",
            "bandwidth",
            "--bidirectional",
            "--ranks",
            "2",
            "--sizes",
            "8",
            "--dry-run",
        ],
        &[],
    );
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("bistream"));
}

#[test]
fn bad_sizes_pairs_and_operations_are_one_line_errors() {
    one_line_usage_error(&mpi_run(&["mpi", "latency", "--sizes", "0"], &[]), "'0'");
    one_line_usage_error(
        &mpi_run(&["mpi", "latency", "--sizes", "1T"], &[]),
        "available",
    );
    one_line_usage_error(&mpi_run(&["mpi", "latency", "--pair", "0,2"], &[]), "'0,2'");
    one_line_usage_error(&mpi_run(&["mpi", "latency", "--ops", "cas"], &[]), "'cas'");
    one_line_usage_error(&mpi_run(&["mpi", "matrix", "--ranks", "1"], &[]), "'1'");
    one_line_usage_error(
        &mpi_run(&["mpi", "latency", "--data", "warm"], &[]),
        "'warm'",
    );
    // A batch of fresh data would write the new bytes inside the timed batch.
    one_line_usage_error(&mpi_run(&["mpi", "latency", "--batch", "5"], &[]), "'5'");
    one_line_usage_error(&mpi_run(&["mpi", "latency", "--batch", "0"], &[]), "'0'");
    one_line_usage_error(
        &mpi_run(&["mpi", "latency", "--bidirectional"], &[]),
        "--bidirectional",
    );
    one_line_usage_error(
        &mpi_run(&["mpi", "bandwidth", "--ops", "get"], &[]),
        "'--ops'",
    );
    let out = mpi_run(&["mpi", "latency", "--ranks", "2", "--dry-run"], &[]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("4 MiB"));
}
