//! `suite collectives --mpi` and `suite earth --mpi`: the seed algorithms and the MPI
//! library's own between ranks. Every run has a hard timeout; nothing here compares timings.

mod common;

use common::mpi::{mpi_run, ok_json_in_limit as ok_json, usage_error as one_line_usage_error};

#[test]
fn collectives_run_as_the_seed_algorithms_and_mpi_own_on_two_and_four_ranks() {
    let v = ok_json(&[
        "suite",
        "collectives",
        "--mpi",
        "--ranks",
        "4",
        "--threads",
        "2,4",
        "--sizes",
        "256",
        "--iterations",
        "2",
        "--json",
    ]);
    let recs = v.as_array().unwrap();
    let runs: Vec<&serde_json::Value> = recs
        .iter()
        .filter(|r| r["kind"] == "collective-mpi")
        .collect();
    for p in [2, 4] {
        for c in [
            "barrier",
            "broadcast-same",
            "gather-tree",
            "allgather-ring",
            "reduce-max-tree",
        ] {
            assert!(
                runs.iter().any(|r| r["parameters"]["ranks"] == p
                    && r["parameters"]["collective"] == c
                    && r["parameters"]["implementation"]
                        .as_str()
                        .unwrap()
                        .starts_with("seed")),
                "seed {c} P={p}"
            );
        }
        for n in [
            "MPI_Barrier",
            "MPI_Bcast",
            "MPI_Gather",
            "MPI_Allgather",
            "MPI_Allreduce max",
        ] {
            assert!(
                runs.iter().any(
                    |r| r["parameters"]["ranks"] == p && r["parameters"]["implementation"] == n
                ),
                "{n} P={p}"
            );
        }
    }
    // 2 passes first (too few to settle), more while the budget lasts.
    assert!(runs
        .iter()
        .all(|r| r["stats"][0]["n"] == r["settle"]["passes"]
            && r["parameters"]["passes"].as_u64() >= Some(2)));
    assert!(recs.iter().any(|r| r["kind"] == "collective-mpi-model"));
    let out = mpi_run(
        &[
            "suite",
            "collectives",
            "--mpi",
            "--ranks",
            "2",
            "--sizes",
            "128",
            "--iterations",
            "1",
            "--only",
            "broadcast",
            "--osu",
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Avg Latency(us)"));
    one_line_usage_error(
        &mpi_run(
            &[
                "suite",
                "collectives",
                "--mpi",
                "--ranks",
                "2",
                "--threads",
                "3",
            ],
            &[],
        ),
        "'3'",
    );
}

#[test]
fn mpi_own_collectives_can_send_the_same_data_every_pass_and_still_check_it() {
    let v = ok_json(&[
        "suite",
        "collectives",
        "--mpi",
        "--ranks",
        "2",
        "--only",
        "broadcast-same,allgather,reduce-sum",
        "--sizes",
        "4K",
        "--iterations",
        "3",
        "--data",
        "same",
        "--json",
    ]);
    let native: Vec<&serde_json::Value> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["kind"] == "collective-mpi"
                && r["parameters"]["implementation"]
                    .as_str()
                    .is_some_and(|i| i.starts_with("MPI_"))
        })
        .collect();
    assert_eq!(native.len(), 3, "MPI_Bcast, MPI_Allgather, MPI_Allreduce");
    for r in native {
        assert_eq!(r["parameters"]["data"], "same");
        assert_eq!(r["data"]["checked"], true);
    }
    let out = mpi_run(&["suite", "collectives", "--data", "same"], &[]);
    one_line_usage_error(&out, "--mpi");
    let out = mpi_run(&["suite", "collectives", "--mpi", "--data", "x"], &[]);
    one_line_usage_error(&out, "'x'");
}

#[test]
fn earth_runs_table_1_split_and_mlp_between_ranks_with_the_seed_beside() {
    let v = ok_json(&[
        "suite",
        "earth",
        "--mpi",
        "--ranks",
        "2",
        "--iterations",
        "2",
        "--groups",
        "1,4",
        "--loop-n",
        "256",
        "--chunks",
        "16,256",
        "--multipliers",
        "1,2",
        "--json",
    ]);
    let recs = v.as_array().unwrap();
    let find = |op: &str, place: &str, mode: &str| {
        recs.iter()
            .find(|r| {
                r["kind"] == "suite-earth-mpi"
                    && r["parameters"]["part"] == "ops"
                    && r["parameters"]["op"] == op
                    && r["parameters"]["place"] == place
                    && r["parameters"]["mode"] == mode
            })
            .unwrap_or_else(|| panic!("{op} {place} {mode}"))
    };
    for op in ["load word", "store word", "call function", "spawn thread"] {
        for mode in ["sequential", "pipelined"] {
            let r = find(op, "remote rank", mode);
            let med = r["stats"][0]["median"].as_f64().unwrap();
            assert!(med > 1.0 && med < 1e9, "{op} {mode}: {med}");
        }
    }
    let split = recs
        .iter()
        .find(|r| r["parameters"]["part"] == "split")
        .unwrap();
    let metrics: Vec<&str> = split["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["metric"].as_str().unwrap())
        .collect();
    assert!(metrics.contains(&"issuer_overhead") && metrics.contains(&"server_cost"));
    assert_eq!(
        recs.iter()
            .filter(|r| r["parameters"]["part"] == "mlp")
            .count(),
        2
    );
    assert!(recs.iter().any(|r| r["kind"] == "suite-earth-seed"));
    let masks: Vec<&serde_json::Value> = recs
        .iter()
        .filter(|r| r["kind"] == "suite-earth-mpi-mask")
        .collect();
    assert_eq!(masks.len(), 2, "one curve per multiplier");
    assert_eq!(masks[0]["data"]["points"].as_array().unwrap().len(), 2);
    one_line_usage_error(
        &mpi_run(
            &[
                "suite", "earth", "--mpi", "--ranks", "2", "--parts", "switch",
            ],
            &[],
        ),
        "'switch'",
    );
}
