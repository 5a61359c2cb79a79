//! `--launcher` (issue 44 item 3): a bad value and `srun` outside a Slurm allocation are
//! one line, exit 2, nothing started; the launcher chosen gets its own command line and
//! its ranks learn which launcher started them. The launcher is a script this test
//! writes (`NUMALAB_MPIRUN`) that records its arguments and environment and exits.
//! Every run is under a timeout (common::mpi::run): a launch that hung fails the test.

mod common;

/// Seconds any one run may take: the stand-in launcher starts no ranks and exits.
const LIMIT: &str = "60";

/// A stand-in launcher that writes its arguments and `NUMALAB_LAUNCHED_BY` into its
/// folder and exits 0 (the ranks it would start are not needed to see its line).
fn recording_launcher(tag: &str) -> std::path::PathBuf {
    let dir = common::tmpdir(tag);
    let script = dir.join("launcher");
    let body = "#!/bin/sh\nd=\"$(dirname \"$0\")\"\nprintf '%s ' \"$@\" > \"$d/args\"\necho \"$NUMALAB_LAUNCHED_BY\" > \"$d/by\"\necho \"${OMPI_MCA_op:-unset}\" > \"$d/op\"\ntouch \"$NUMALAB_LAUNCH_TOKEN\"\n";
    std::fs::write(&script, body).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    dir
}

fn one_line_exit_2(args: &[&str], env: &[(&str, &str)], names: &str) {
    let out = common::mpi::run(LIMIT, args, env);
    common::bad_input(&out, &[names], &format!("{args:?}"));
}

#[test]
fn a_bad_launcher_or_srun_outside_an_allocation_is_one_line_exit_2() {
    let latency = ["mpi", "latency", "--ranks", "2", "--sizes", "8"];
    let with = |l: &'static str| {
        let mut a = latency.to_vec();
        a.extend(["--launcher", l]);
        a
    };
    one_line_exit_2(&with("ssh"), &[], "'ssh'");
    // The test's own environment may sit in an allocation: the child's is cleared of it.
    let dir = recording_launcher("launcher-srun-outside");
    let fake = dir.join("launcher");
    let env = [
        ("NUMALAB_MPIRUN", fake.to_str().unwrap()),
        ("SLURM_JOB_ID", ""),
    ];
    one_line_exit_2(&with("srun"), &env, "not inside a Slurm allocation");
    assert!(!dir.join("args").exists(), "nothing was started");
    one_line_exit_2(
        &["dsm", "run", "sor", "--ranks", "2", "--launcher", "srun"],
        &env,
        "--launcher 'srun'",
    );
}

/// `mpi latency` on 2 ranks through the recording launcher as `launcher`: the
/// arguments it was given.
fn launch_with(dir: &std::path::Path, launcher: &str) -> String {
    let fake = dir.join("launcher");
    let args = [
        "mpi",
        "latency",
        "--ranks",
        "2",
        "--sizes",
        "8",
        "--launcher",
        launcher,
    ];
    let out = common::mpi::run(LIMIT, &args, &[("NUMALAB_MPIRUN", fake.to_str().unwrap())]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(dir.join("args")).unwrap()
}

#[test]
fn hydra_gets_its_own_line_without_open_mpis_settings_and_the_ranks_are_told() {
    let dir = recording_launcher("launcher-hydra-line");
    let line = launch_with(&dir, "hydra");
    assert!(line.starts_with("-n 2 -bind-to none "), "{line}");
    assert!(
        !line.contains("--mca") && !line.contains("--oversubscribe"),
        "{line}"
    );
    let by = std::fs::read_to_string(dir.join("by")).unwrap();
    assert_eq!(by.trim(), "hydra (--launcher)");
    if std::env::var_os("OMPI_MCA_op").is_none() {
        let op = std::fs::read_to_string(dir.join("op")).unwrap();
        assert_eq!(op.trim(), "unset", "OMPI_MCA_op is Open MPI's alone");
    }
    // The same job under mpirun gets Open MPI's line.
    let line = launch_with(&dir, "mpirun");
    assert!(line.starts_with("-np 2 "), "{line}");
    assert!(line.contains("--bind-to none"), "{line}");
    let by = std::fs::read_to_string(dir.join("by")).unwrap();
    assert_eq!(by.trim(), "mpirun (--launcher)");
}
