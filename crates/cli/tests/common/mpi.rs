//! Running MPI commands under a hard timeout, shared by the mpi_* tests, and finding
//! a killed job's kept records and its ranks (rescue, cluster_kept).

use std::path::{Path, PathBuf};
use std::process::Output;

/// Seconds any one MPI run of the mpi_* tests may take before the test fails (a hang is
/// a defect).
pub const LIMIT: &str = "120";

/// [`run`] within [`LIMIT`].
pub fn mpi_run(args: &[&str], env: &[(&str, &str)]) -> Output {
    run(LIMIT, args, env)
}

/// [`ok_json`] within [`LIMIT`].
pub fn ok_json_in_limit(args: &[&str]) -> serde_json::Value {
    ok_json(LIMIT, args)
}

/// Runs numalab under `timeout LIMIT` (a hang is a defect, never a wait).
pub fn run(limit: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    super::bounded(limit, args, env)
}

/// Runs numalab, asserts success and returns its schema-checked JSON.
pub fn ok_json(limit: &str, args: &[&str]) -> serde_json::Value {
    let out = run(limit, args, &[]);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    super::validate(&out.stdout)
}

/// Asserts a one-line usage error (exit 2, no stdout) that contains `needle`.
pub fn usage_error(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.contains(needle), "{needle:?} not in: {err}");
}

/// numalab built with MPICH (`NUMALAB_MPICH_BIN`, which .ci/run sets), or None (and why,
/// printed).
pub fn mpich_build() -> Option<std::path::PathBuf> {
    let Some(p) = std::env::var_os("NUMALAB_MPICH_BIN").map(std::path::PathBuf::from) else {
        eprintln!("skipped: NUMALAB_MPICH_BIN is unset (it names numalab built with MPICC=mpicc.mpich; .ci/run sets it)");
        return None;
    };
    assert!(
        p.is_file(),
        "NUMALAB_MPICH_BIN '{}' is not a file",
        p.display()
    );
    Some(p)
}

/// `dsm run sor --ranks 2 EXTRA…`: the DSM job the dsm and liveness tests run.
pub fn dsm_sor<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["dsm", "run", "sor", "--ranks", "2"];
    args.extend_from_slice(extra);
    args
}

/// The launcher's kept-records file in `dir` (named `numalab-partial-*`) and its whole
/// lines.
pub fn partial_in(dir: &Path) -> Option<(PathBuf, usize)> {
    let f = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("numalab-partial-"))?;
    let n = std::fs::read_to_string(&f).map_or(0, |t| t.matches('\n').count());
    Some((f, n))
}

/// The process whose environment names `partial` and Open MPI rank `rank` (emulated
/// hosts are namespaces of this machine, so their processes are seen here too).
pub fn rank_pid(partial: &Path, rank: u32) -> Option<i32> {
    let want = format!("NUMALAB_PARTIAL={}", partial.display());
    let me = format!("OMPI_COMM_WORLD_RANK={rank}");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let env = std::fs::read(e.path().join("environ")).ok()?;
        let vars: Vec<&[u8]> = env.split(|b| *b == 0).collect();
        let has = |v: &str| vars.contains(&v.as_bytes());
        (has(&want) && has(&me)).then_some(pid)
    })
}

/// The count in a line that says "the job ended early: N …" (the test fails, naming
/// the line, when there is none).
pub fn kept_count(said: &str) -> usize {
    said.split("early: ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{said}"))
}
