//! A job of many configurations across hosts keeps what finished when a rank dies
//! (issue 44), without a folder the hosts share: rank 0 runs on another emulated host,
//! whose /tmp is its own, so it cannot see the launcher's kept-records file and sends
//! each finished configuration on its stdout, marked; the launcher keeps those lines
//! and writes them to `-o` when the job fails. On `scripts/test-cluster` (root and
//! `ip netns`; skipped with the reason otherwise); every run is bounded.

mod common;

use common::cluster::{cluster_test, Cluster};
use common::mpi::{kept_count, partial_in, rank_pid};
use numalab_results::words::count_are;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// `mpi latency` over many sizes between nlab-h1 (rank 0) and nlab-h2 (rank 1), the
/// launcher in the head host with its `$TMPDIR` under /tmp (which the hosts do not
/// share). Rank 1 is SIGKILLed once two sizes have finished: the finished sizes are in
/// `-o`, said in one line.
#[test]
fn a_rank_killed_across_hosts_keeps_the_sizes_that_finished_without_a_shared_folder() {
    let Some(_one) = cluster_test() else { return };
    let c = Cluster::up(2, &[]);
    let hosts = c.hostfile(2, 1);
    // Under /tmp whatever the test's own TMPDIR: each emulated host has a /tmp of its own.
    let tmp = Path::new("/tmp").join(format!("numalab-kept-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let file = c.dir.join("lat.json");
    let sizes = "8,16,32,64,128,256,512,1K,2K,4K,8K,16K,32K,64K,128K,256K,512K,1M";
    let args = [
        "mpi",
        "latency",
        "--hostfile",
        hosts.to_str().unwrap(),
        "--ranks",
        "2",
        "--ops",
        "pingpong",
        "--sizes",
        sizes,
        "--iterations",
        "500",
        "-o",
        file.to_str().unwrap(),
    ];
    let env = [
        ("TMPDIR", tmp.to_str().unwrap()),
        ("NUMALAB_MPI_TIMEOUT", "240"),
    ];
    let mut child = c
        .command("300", &args, &env)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let partial = loop {
        if let Some((p, _)) = partial_in(&tmp).filter(|(_, n)| *n >= 2) {
            break p;
        }
        if child.try_wait().unwrap().is_some() || t0.elapsed() > Duration::from_secs(250) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "the job ended, or no two sizes were kept in 250 s: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Rank 0's host does not see the launcher's file: its lines came on stdout.
    c.on_host("nlab-h1", &format!("test ! -e '{}'", partial.display()));
    let pid = rank_pid(&partial, 1).expect("rank 1 is running");
    // SAFETY: signalling a rank this test's job started, as a crash would.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        !out.stdout.contains(&0x1e),
        "a marked line reached the user: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("the job ended early: "))
        .collect();
    assert_eq!(said.len(), 1, "said once: {err}");
    let n = kept_count(said[0]);
    assert!((2..18).contains(&n), "{}", said[0]);
    let recs: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(recs.len(), n, "one record per finished size");
    assert!(
        said[0].contains(&format!(
            "their {} written to '{}'",
            count_are(n as u64, "record"),
            file.display()
        )),
        "{}",
        said[0]
    );
    for r in &recs {
        assert_eq!(r["kind"], "mpi-latency", "{r}");
        let at: Vec<&str> = r["placement"]["per_rank"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["host"].as_str().unwrap())
            .collect();
        assert_eq!(at, ["nlab-h1", "nlab-h2"]);
    }
    assert!(
        !partial.exists(),
        "the launcher leaves no kept-records file"
    );
    assert!(c.left_running().is_empty(), "{:?}", c.left_running());
    let _ = std::fs::remove_dir_all(&tmp);
}
