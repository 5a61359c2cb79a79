//! The launcher numalab starts is watched and cleaned up after (issue 40 items 11 and
//! 15): a launcher that stops itself ends the job, naming it, whatever command started
//! it; a child the launcher left behind does not outlive the job. The launchers are
//! scripts this test writes (`NUMALAB_MPIRUN`); every run is bounded by `timeout`.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A short `suite cvm` job: 2 ranks, SOR, 1 thread.
const CVM: [&str; 8] = [
    "suite",
    "cvm",
    "--ranks",
    "2",
    "--apps",
    "sor",
    "--threads",
    "1",
];

/// A stand-in for mpirun running `body`, in a fresh folder of its own.
fn launcher(tag: &str, body: &str) -> (PathBuf, PathBuf) {
    let dir = common::tmpdir(tag);
    let script = dir.join("mpirun");
    let text = format!("#!/bin/sh\n{body}\n");
    std::fs::write(&script, text).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    (script, dir)
}

/// The pid a script wrote to `file`.
fn pid_in(file: &Path) -> i32 {
    std::fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
        .trim()
        .parse()
        .unwrap()
}

/// Whether `pid` still runs (a zombie its new parent has not reaped yet does not).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().to_string()))
        .is_some_and(|r| !r.starts_with('Z'))
}

/// Waits up to 10 s for `pid` to be gone; kills it (so the test leaves nothing) and
/// fails when it is not.
fn assert_gone(pid: i32, what: &str) {
    let t = Instant::now();
    while running(pid) && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    if running(pid) {
        // SAFETY: ending a process this test's script started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("{what} (pid {pid}) outlived the job");
    }
}

/// A launcher that stops itself must end the job within the stall bound, naming the
/// launcher, exit 1, and leave no stopped process behind. With `kept` (one finished
/// configuration's records, as a rank appends them), those are written to `-o`.
fn a_stopped_launcher_ends(tag: &str, args: &[&str], env: &[(&str, &str)], kept: Option<&str>) {
    // It says the ranks started, as mpirun's rank 0 would, keeps what a rank finished,
    // then stops.
    let body = "touch \"$NUMALAB_LAUNCH_TOKEN\"\nd=\"$(dirname \"$0\")\"\necho $$ > \"$d/launcher.pid\"\n[ -f \"$d/kept.jsonl\" ] && cat \"$d/kept.jsonl\" >> \"$NUMALAB_PARTIAL\"\nkill -STOP $$\nexit 0";
    let (script, dir) = launcher(tag, body);
    let out_file = dir.join("out.json");
    let mut args = args.to_vec();
    if let Some(line) = kept {
        std::fs::write(dir.join("kept.jsonl"), format!("{line}\n")).unwrap();
        args.extend(["-o", out_file.to_str().unwrap()]);
    }
    let mut all = vec![("NUMALAB_MPIRUN", script.to_str().unwrap())];
    all.extend_from_slice(env);
    let out = common::bounded("120", &args, &all);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    let pid = pid_in(&dir.join("launcher.pid"));
    assert!(
        err.contains(&format!(
            "numalab: error: the launcher (mpirun) (pid {pid}) stopped answering"
        )) && err.contains("NUMALAB_MPI_STALL sets how long"),
        "{args:?}: {err}"
    );
    assert_gone(pid, "the stopped launcher");
    assert!(out.stdout.is_empty(), "{args:?}");
    if let Some(line) = kept {
        assert!(err.contains("the job ended early: "), "{err}");
        let want: serde_json::Value = serde_json::from_str(line).unwrap();
        let got: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
        assert_eq!(got, want, "the finished configuration was not kept");
    }
}

#[test]
fn a_stopped_launcher_of_mpi_latency_is_named_and_ends_the_job() {
    a_stopped_launcher_ends(
        "stopped-launcher-latency",
        &["mpi", "latency", "--ranks", "2", "--sizes", "8"],
        &[("NUMALAB_MPI_STALL", "1")],
        None,
    );
}

#[test]
fn a_stopped_launcher_of_suite_cvm_ends_the_job_keeping_what_finished() {
    // One finished configuration's records: the plan's, which are valid records.
    let cvm = CVM;
    let plan = common::numalab(&[&cvm[..], &["--dry-run", "--json"]].concat());
    assert!(plan.status.success());
    let recs: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    // No NUMALAB_MPI_STALL nor NUMALAB_MPI_TIMEOUT: the default stall bound (10 s)
    // ends it, well inside the test's bound.
    a_stopped_launcher_ends("stopped-launcher-cvm", &cvm, &[], Some(&recs.to_string()));
}

#[test]
fn a_child_the_launcher_backgrounded_does_not_outlive_the_job() {
    for (tag, end, code) in [("stray-ok", "exit 0", 1), ("stray-fail", "exit 3", 3)] {
        let (script, dir) = launcher(
            tag,
            &format!("sleep 600 &\necho $! > \"$(dirname \"$0\")/child.pid\"\n{end}"),
        );
        let out = common::bounded(
            "120",
            &["mpi", "latency", "--ranks", "2", "--sizes", "8"],
            &[("NUMALAB_MPIRUN", script.to_str().unwrap())],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        // It started no rank: a failure whatever it returned (its own status, if one).
        assert_eq!(out.status.code(), Some(code), "{tag}: {err}");
        assert!(
            err.contains("without starting numalab's ranks"),
            "{tag}: {err}"
        );
        assert_gone(pid_in(&dir.join("child.pid")), "the launcher's child");
    }
}

/// A launch that is refused (no such mpirun) or whose launcher fails after rank 0 said
/// it started leaves nothing of numalab's in the temp dir: not the token rank 0 leaves,
/// not the file a job of many configurations keeps them in.
#[test]
fn a_failed_or_refused_launch_leaves_nothing_in_the_temp_dir() {
    let (script, _dir) = launcher(
        "failing-launcher",
        "touch \"$NUMALAB_LAUNCH_TOKEN\"\nexit 3",
    );
    let lat = ["mpi", "latency", "--ranks", "2", "--sizes", "8"];
    let cvm = CVM;
    for (i, (args, mpirun, code)) in [
        (&lat[..], "/nonexistent/mpirun", 2),
        (&cvm[..], "/nonexistent/mpirun", 2),
        (&lat[..], script.to_str().unwrap(), 3),
        (&cvm[..], script.to_str().unwrap(), 3),
    ]
    .into_iter()
    .enumerate()
    {
        let tmp = common::tmpdir(&format!("launch-tmp-{i}"));
        let out = common::bounded(
            "120",
            args,
            &[
                ("NUMALAB_MPIRUN", mpirun),
                ("TMPDIR", tmp.to_str().unwrap()),
            ],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?} with {mpirun}: {err}"
        );
        // The folder where measuring runs announce themselves stays, empty, as it is
        // meant to (numalab_results::runlock).
        let runs = tmp.join("numalab-runs");
        let announced = std::fs::read_dir(&runs).map_or(0, |d| d.count());
        assert_eq!(
            announced, 0,
            "{args:?} with {mpirun}: a run still announced"
        );
        let _ = std::fs::remove_dir(&runs);
        let left: Vec<_> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(
            left.is_empty(),
            "{args:?} with {mpirun} left {left:?}: {err}"
        );
    }
}
