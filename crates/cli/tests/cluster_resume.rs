//! `numalab cluster -o DIR` journalled like the survey (issue 45): each part kept as it
//! ends, `--resume DIR` measures only the parts the journal lacks (the same hosts
//! required), a folder another run holds is refused, and an interrupted run keeps its
//! parts and says how to resume. On the emulated cluster (`scripts/test-cluster`);
//! skipped with the reason where it cannot run. Records, journal lines and exit codes
//! are asserted, never timings.

mod common;

use common::cluster::{
    cluster_test, cut, journal_lines, matrices_whole, of, parts, quick, results, Cluster,
};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// 3 hosts: 3 host parts, 3 latency rounds, 2 shift steps, the collectives.
const PARTS: usize = 9;

fn run(c: &Cluster, hosts: &Path, how: &[&str], opts: &[&str]) -> Output {
    let mut args = vec!["cluster", "--hostfile", hosts.to_str().unwrap()];
    args.extend(opts);
    args.extend(how);
    c.numalab("200", &args, &[("NUMALAB_MPI_TIMEOUT", "180")])
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A refusal: exit 2 and one error line holding `what`.
fn refused(o: &Output, what: &str) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(lines.len(), 1, "one error line: {err}");
    assert!(lines[0].contains(what), "{what}: {err}");
}

#[test]
fn a_resume_measures_only_the_missing_parts_of_the_same_hosts_and_a_held_folder_is_refused() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(3, &[]);
    let hosts = c.hostfile(3, 1);
    let q = quick("50", "64K");
    let whole = c.dir.join("whole");
    let o = run(&c, &hosts, &["-o", whole.to_str().unwrap()], &q);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{PARTS} parts; writing")),
        "{}",
        stderr(&o)
    );
    // The header, then one line per part.
    assert_eq!(journal_lines(&whole).len(), 1 + PARTS);
    let first = results(&whole);
    assert_eq!(of(&first, "cluster-host").len(), 3);
    assert_eq!(
        parts(&first),
        serde_json::json!({"planned": PARTS, "finished": PARTS, "resumed": 0, "measured": PARTS})
    );
    // The same folder again: its results are not replaced without --force.
    let again = run(&c, &hosts, &["-o", whole.to_str().unwrap()], &q);
    refused(&again, "already holds results");

    // A run stopped after its hosts and first latency round: the resume measures the
    // other 5 parts, and leaves the 4 journal lines it found as they were.
    let part = c.dir.join("part");
    cut(&whole, &part, 4);
    let before = journal_lines(&part);
    let o = run(&c, &hosts, &["--resume", part.to_str().unwrap()], &q);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "continuing {} (4 of {PARTS} finished before)",
            part.display()
        )),
        "{err}"
    );
    let after = journal_lines(&part);
    assert_eq!(after.len(), 1 + PARTS);
    assert_eq!(
        after[..5],
        before[..],
        "the journal's lines are kept as they were"
    );
    let recs = results(&part);
    assert_eq!(
        parts(&recs),
        serde_json::json!({"planned": PARTS, "finished": PARTS, "resumed": 4, "measured": 5})
    );
    // The hosts' records are the first run's (not measured again), the matrices whole.
    let hosts_of =
        |r: &[Value]| -> Vec<Value> { of(r, "cluster-host").into_iter().cloned().collect() };
    assert_eq!(hosts_of(&recs), hosts_of(&first));
    matrices_whole(
        &of(&recs, "cluster-links")[0]["data"],
        &["nlab-h1", "nlab-h2", "nlab-h3"],
    );
    assert_eq!(of(&recs, "cluster-collectives").len(), 1);

    // Other hosts than the journal's: refused, naming the difference.
    let other = c.dir.join("other");
    cut(&whole, &other, 4);
    let two = c.hostfile(2, 1);
    let o = run(&c, &two, &["--resume", other.to_str().unwrap()], &q);
    refused(&o, "other hosts: nlab-h3 in the journal only");
    assert_eq!(journal_lines(&other).len(), 5, "nothing added");

    // A folder whose lock another process holds: refused, naming it.
    let lock = std::fs::File::create(other.join(".numalab-cluster.lock")).unwrap();
    std::fs::write(
        other.join(".numalab-cluster.lock"),
        format!("{}\n", std::process::id()),
    )
    .unwrap();
    // SAFETY: flock on a descriptor this test owns.
    let held = unsafe {
        libc::flock(
            std::os::fd::AsRawFd::as_raw_fd(&lock),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    };
    assert_eq!(held, 0);
    let o = run(&c, &hosts, &["--resume", other.to_str().unwrap()], &q);
    refused(
        &o,
        &format!(
            "being written by another numalab cluster (pid {})",
            std::process::id()
        ),
    );
    assert_eq!(journal_lines(&other).len(), 5, "nothing added");
}

#[test]
fn an_interrupted_run_keeps_its_finished_parts_and_its_resume_measures_the_rest() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(3, &[]);
    let hosts = c.hostfile(3, 1);
    let dir = c.dir.join("cut");
    // Latency rounds long enough to be interrupted in: the pair of hosts that share a
    // CPU takes milliseconds per round trip, so its round takes seconds.
    let opts = quick("3000", "64K");
    let mut args = vec![
        "cluster",
        "--hostfile",
        hosts.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
    ];
    args.extend(opts);
    let mut child = c
        .command("200", &args, &[("NUMALAB_MPI_TIMEOUT", "180")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the three hosts' parts are journalled, Ctrl-C.
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(dir.join("journal.jsonl")).map_or(0, |t| t.lines().count()) < 4 {
        assert!(t0.elapsed().as_secs() < 150, "the hosts' parts never came");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before its hosts' parts"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signalling our own child (timeout, which passes it on to numalab).
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(
        err.contains(&format!("numalab cluster --resume {}", dir.display())),
        "{err}"
    );
    let kept = journal_lines(&dir).len() - 1;
    assert!((3..PARTS).contains(&kept), "{kept} parts kept: {err}");
    assert!(
        err.contains(&format!("{kept} of {PARTS} parts had finished")),
        "{err}"
    );
    // The files hold what finished: every host, a matrix with the rest left empty.
    let recs = results(&dir);
    assert_eq!(of(&recs, "cluster-host").len(), 3);
    assert_eq!(parts(&recs)["finished"], kept);

    let o = run(&c, &hosts, &["--resume", dir.to_str().unwrap()], &opts);
    assert!(o.status.success(), "{}", stderr(&o));
    let recs = results(&dir);
    assert_eq!(
        parts(&recs),
        serde_json::json!({"planned": PARTS, "finished": PARTS, "resumed": kept, "measured": PARTS - kept})
    );
    assert_eq!(journal_lines(&dir).len(), 1 + PARTS);
}
