//! A job whose rank stops answering ends, naming it (issue 35 item 5, issue 33 item
//! 5): the launcher watches its ranks. Also what the user sees when a rank dies mid-
//! message and when a user's own mpirun runs numalab with a bad option. Every run has
//! a hard bound; no test compares timings (the bounds are minutes, the stall 1 s).

mod common;

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const ROOT_OK: [(&str, &str); 2] = [
    ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
    ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
];

fn have_mpirun() -> bool {
    let ok = Command::new("mpirun").arg("--version").output().is_ok();
    if !ok {
        eprintln!("skipped: mpirun not found (Debian package openmpi-bin)");
    }
    ok
}

/// Start numalab with `args` and extra environment, its stderr piped.
fn spawn(args: &[&str], env: &[(&str, &str)]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_numalab"))
        .args(args)
        .envs(ROOT_OK)
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start numalab")
}

/// The pid of the process under `root` that is MPI rank `rank`, once it exists.
fn rank_pid(root: u32, rank: usize) -> u32 {
    let t = Instant::now();
    loop {
        if let Some(p) = descendants(root).into_iter().find(|&p| {
            std::fs::read(format!("/proc/{p}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|v| v == format!("OMPI_COMM_WORLD_RANK={rank}").as_bytes())
            })
        }) {
            return p;
        }
        assert!(
            t.elapsed() < Duration::from_secs(90),
            "rank {rank} never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn parent_of(pid: u32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn descendants(root: u32) -> Vec<u32> {
    let all: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter_map(|p| Some((p, parent_of(p)?)))
        .collect();
    let mut family = vec![root];
    let mut i = 0;
    while i < family.len() {
        let p = family[i];
        family.extend(all.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    family.split_off(1)
}

/// Wait for `job` at most `limit`; a job still running then is killed and fails the test.
fn finish(mut job: Child, limit: Duration) -> Output {
    let t = Instant::now();
    while job.try_wait().unwrap().is_none() {
        if t.elapsed() > limit {
            let family = descendants(job.id());
            let _ = job.kill();
            for p in family {
                // SAFETY: ending the processes this test started.
                unsafe { libc::kill(p as i32, libc::SIGKILL) };
            }
            panic!("the job still ran {} s after the fault", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    job.wait_with_output().unwrap()
}

fn state(pid: u32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit_once(')')?
        .1
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// Stop rank 1 of the job `args` starts once it runs; the job must end, exit 1, with
/// a first line naming rank 1 and its pid, and leave no stopped rank behind.
fn a_stopped_rank_ends(args: &[&str]) {
    let job = spawn(args, &[("NUMALAB_MPI_STALL", "1")]);
    let rank1 = rank_pid(job.id(), 1);
    std::thread::sleep(Duration::from_secs(1));
    // SAFETY: stopping a process this test started, as a user's kill -STOP would.
    unsafe { libc::kill(rank1 as i32, libc::SIGSTOP) };
    let out = finish(job, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    let first = err
        .lines()
        .find(|l| l.starts_with("numalab:"))
        .unwrap_or("");
    assert!(
        first.starts_with(&format!(
            "numalab: error: rank 1 (pid {rank1}) stopped answering"
        )) && first.contains("(state: stopped)"),
        "{args:?}: {err}"
    );
    assert!(
        !err.contains("died on signal"),
        "the kill is not news: {err}"
    );
    // Killed, not left stopped (a zombie waiting for its reaper is gone).
    std::thread::sleep(Duration::from_secs(1));
    assert_ne!(state(rank1), Some('T'), "rank 1 was left stopped");
}

#[test]
fn a_stopped_rank_in_mpi_latency_is_named_and_ends_the_job() {
    if have_mpirun() {
        a_stopped_rank_ends(&[
            "mpi",
            "latency",
            "--ranks",
            "2",
            "--sizes",
            "64K",
            "--ops",
            "pingpong",
            "--iterations",
            "3000000",
        ]);
    }
}

#[test]
fn a_stopped_rank_in_a_dsm_run_is_named_and_ends_the_job() {
    if have_mpirun() {
        a_stopped_rank_ends(&common::mpi::dsm_sor(&[
            "--input",
            "paper",
            "--net-delay",
            "1ms",
        ]));
    }
}

#[test]
fn a_rank_killed_mid_message_is_named_before_anything_open_mpi_echoes() {
    if !have_mpirun() {
        return;
    }
    let args = [
        "mpi",
        "latency",
        "--ranks",
        "2",
        "--sizes",
        "64K",
        "--ops",
        "pingpong",
        "--iterations",
        "3000000",
    ];
    let job = spawn(&args, &[]);
    let rank1 = rank_pid(job.id(), 1);
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: killing a process this test started, as the red team's kill -9 did.
    unsafe { libc::kill(rank1 as i32, libc::SIGKILL) };
    let out = finish(job, Duration::from_secs(120));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    let dead = lines
        .iter()
        .position(|l| l.starts_with("numalab: error: rank 1 on host") && l.contains("signal 9"))
        .unwrap_or_else(|| panic!("no line names rank 1: {err}"));
    // Transport lines, if Open MPI printed any, are one note after it.
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("numalab: ") || !l.contains("errno = ")),
        "{err}"
    );
    assert!(
        lines[..dead].iter().all(|l| !l.contains("numalab: note")),
        "{err}"
    );
}

#[test]
fn a_bad_option_under_a_users_mpirun_is_said_once() {
    if !have_mpirun() {
        return;
    }
    let out = Command::new("timeout")
        .args(["-k", "10", "120", "mpirun", "-np", "2", "--oversubscribe"])
        .args(["--allow-run-as-root", env!("CARGO_BIN_EXE_numalab")])
        .args(["mpi", "latency", "--sizes", "8,,16"])
        .envs(ROOT_OK)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(124), "hung");
    let err = String::from_utf8_lossy(&out.stderr);
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("numalab:")).collect();
    assert_eq!(ours.len(), 1, "{err}");
    assert!(ours[0].contains("--sizes"), "{err}");
    assert!(!out.status.success() && out.stdout.is_empty(), "{err}");
}

/// A stand-in for mpirun that says the ranks started, prints `stderr` and exits `code`.
fn fake_mpirun(tag: &str, stderr: &str, code: i32) -> std::path::PathBuf {
    let script = common::tmpdir(tag).join("mpirun");
    let text = format!(
        "#!/bin/sh\ntouch \"$NUMALAB_LAUNCH_TOKEN\"\ncat >&2 <<'END'\n{stderr}END\nexit {code}\n"
    );
    std::fs::write(&script, text).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    script
}

#[test]
fn transport_lines_follow_the_dead_rank_as_one_note_and_pass_otherwise() {
    let rule = "-".repeat(74);
    let echo = "[vm:4242] Read -1, expected 65536, errno = 14";
    let died = format!(
        "{echo}\n{echo}\n{rule}\nmpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n{rule}\n"
    );
    let args = ["mpi", "latency", "--ranks", "2", "--sizes", "8"];
    let launcher = fake_mpirun("transport-died", &died, 137);
    let out = common::bounded(
        "60",
        &args,
        &[("NUMALAB_MPIRUN", launcher.to_str().unwrap())],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // The plan is said once, by numalab before it launches; the rest is the job's news.
    assert_eq!(err.matches("mpi plan: rank 0 times").count(), 1, "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("mpi plan:"))
        .collect();
    assert_eq!(
        lines,
        [
            "numalab: error: rank 1 on host vm died on signal 9 (Killed); the job was ended",
            &format!("numalab: note: Open MPI printed 2 transport lines as the job lost that rank, e.g. '{echo}'"),
        ]
    );
    // Nothing died: the line is the transport's own news, passed on as it came.
    let launcher = fake_mpirun("transport-alive", &format!("{echo}\n"), 0);
    let out = common::bounded(
        "60",
        &args,
        &[("NUMALAB_MPIRUN", launcher.to_str().unwrap())],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let news: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("mpi plan:"))
        .collect();
    assert_eq!((out.status.code(), news), (Some(0), vec![echo]), "{err}");
}
