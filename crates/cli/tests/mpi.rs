//! `numalab mpi`: launching ranks through mpirun, placement, gathering, bad input and
//! dead ranks. Every run has a hard timeout; nothing here compares timings.

mod common;

use common::mpi::{mpi_run, ok_json_in_limit as ok_json, usage_error as one_line_usage_error};

#[test]
fn two_ranks_are_launched_pinned_and_gathered_on_rank_0() {
    let v = ok_json(&["mpi", "ranks", "--ranks", "2", "--json"]);
    let recs = v.as_array().unwrap();
    assert_eq!(recs.len(), 2, "one record per rank, emitted once");
    for (r, rec) in recs.iter().enumerate() {
        assert_eq!(rec["kind"], "mpi-rank");
        assert_eq!(rec["data"]["rank"], r);
        assert_eq!(rec["data"]["verified"], true);
        assert_eq!(rec["data"]["observed_cpu"], rec["data"]["cpu"]);
        assert_eq!(rec["placement"]["ranks"], 2);
        assert_eq!(rec["placement"]["per_rank"].as_array().unwrap().len(), 2);
    }
    // Compact: two ranks on two different CPUs on a 2-CPU machine.
    assert_ne!(recs[0]["data"]["cpu"], recs[1]["data"]["cpu"]);
}

#[test]
fn four_ranks_on_two_cpus_are_oversubscribed_and_say_so() {
    let v = ok_json(&["mpi", "ranks", "--ranks", "4", "--json"]);
    let recs = v.as_array().unwrap();
    assert_eq!(recs.len(), 4);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 4 {
        assert!(recs.iter().any(|r| r["data"]["shares_cpu"] == true));
        assert!(recs
            .iter()
            .any(|r| r["warnings"].to_string().contains("shares CPU")));
    }
}

#[test]
fn a_hostfile_places_the_ranks_on_its_hosts() {
    // This machine under its own name: the path a cluster's hostfile takes, one host.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    let dir = std::env::temp_dir().join(format!("numalab-hosts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hosts");
    std::fs::write(&file, format!("{host} slots=2\n")).unwrap();
    let v = ok_json(&[
        "mpi",
        "ranks",
        "--ranks",
        "2",
        "--hostfile",
        file.to_str().unwrap(),
        "--json",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    let recs = v.as_array().unwrap();
    assert_eq!(recs.len(), 2);
    for rec in recs {
        assert_eq!(rec["data"]["host"], host.as_str(), "{rec}");
        assert_eq!(rec["data"]["verified"], true, "{rec}");
    }
}

#[test]
fn the_dry_run_shows_the_plan_without_starting_ranks() {
    let out = mpi_run(&["mpi", "ranks", "--ranks", "3", "--dry-run"], &[]);
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("3 ranks") && s.contains("--bind-to none"), "{s}");
}

#[test]
fn bad_ranks_hostfiles_placements_and_a_missing_mpirun_are_one_line_errors() {
    one_line_usage_error(&mpi_run(&["mpi", "ranks", "--ranks", "0"], &[]), "'0'");
    one_line_usage_error(
        &mpi_run(&["mpi", "ranks", "--ranks", "100000"], &[]),
        "at most",
    );
    one_line_usage_error(
        &mpi_run(
            &[
                "mpi",
                "ranks",
                "--ranks",
                "2",
                "--hostfile",
                "/nonexistent/hosts",
            ],
            &[],
        ),
        "--hostfile '/nonexistent/hosts'",
    );
    one_line_usage_error(
        &mpi_run(
            &["mpi", "ranks", "--ranks", "2", "--rank-cpus", "9999"],
            &[],
        ),
        "9999",
    );
    one_line_usage_error(
        &mpi_run(
            &["mpi", "ranks", "--ranks", "2"],
            &[("NUMALAB_MPIRUN", "/nonexistent/mpirun")],
        ),
        "openmpi-bin",
    );
}

#[test]
fn a_rank_killed_by_a_signal_ends_the_job_naming_rank_and_signal() {
    let out = mpi_run(
        &["mpi", "ranks", "--ranks", "2"],
        &[("NUMALAB_MPI_KILL_RANK", "1")],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("rank 1") && err.contains("signal 9"),
        "stderr: {err}"
    );
    assert!(
        !err.contains("-----"),
        "Open MPI's boxes are summarised: {err}"
    );
}
