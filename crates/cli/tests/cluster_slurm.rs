//! `numalab cluster` inside a Slurm allocation (issue 45): `salloc -N 2 numalab cluster
//! -o DIR` in the emulated cluster's head host (`scripts/test-slurm` on
//! `scripts/test-cluster`) names its hosts from the allocation, starts one task per
//! node with srun, measures both, journals each part, and `--resume DIR` in a new
//! allocation of the same nodes measures only what the journal lacks. Needs root, `ip
//! netns` and Slurm's and munge's programs; skipped with the reason otherwise. Records,
//! journal lines and exit codes are asserted, never timings; every run is bounded.

mod common;

use common::cluster::{cut, journal_lines, matrices_whole, of, parts, quick, results};
use common::slurm::{hosts_and_launcher, slurm_cluster, Slurm};

/// 2 hosts: 2 host parts, 1 latency round, 1 shift step, the collectives.
const PARTS: usize = 5;

#[test]
fn salloc_runs_cluster_on_the_allocations_nodes_journalled_and_resumed() {
    let Some((_one, c)) = slurm_cluster() else {
        return;
    };
    let slurm = Slurm::up(&c);
    let exe = c.exe();
    let salloc = ["salloc", "-N", "2", exe.to_str().unwrap(), "cluster"];
    let q = quick("50", "64K");
    // The plan names the allocation and its nodes; nothing is started.
    let out = slurm.run(&c, "60", &[&salloc[..], &["--dry-run"]].concat());
    let text = common::ok_text(&out);
    assert!(
        text.contains("cluster plan: 2 hosts from Slurm allocation "),
        "{text}"
    );
    assert!(text.contains("(nlab-h1, nlab-h2), one rank each"), "{text}");

    let whole = c.dir.join("whole");
    let run = [&salloc[..], &q, &["-o", whole.to_str().unwrap()]].concat();
    let out = slurm.run(&c, "200", &run);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("{PARTS} parts; writing")), "{err}");
    assert_eq!(journal_lines(&whole).len(), 1 + PARTS);
    let first = results(&whole);
    let hosts = of(&first, "cluster-host");
    let mut named: Vec<&str> = hosts
        .iter()
        .map(|r| r["data"]["host"].as_str().unwrap())
        .collect();
    named.sort();
    assert_eq!(named, ["nlab-h1", "nlab-h2"]);
    for r in &hosts {
        assert!(!r["data"]["memory"].as_array().unwrap().is_empty(), "{r}");
        let (ranks, launcher) = hosts_and_launcher(r);
        assert_eq!(ranks, ["nlab-h1", "nlab-h2"], "one task per node");
        assert!(
            launcher.starts_with("srun (inside Slurm allocation "),
            "{launcher}"
        );
    }
    matrices_whole(
        &of(&first, "cluster-links")[0]["data"],
        &["nlab-h1", "nlab-h2"],
    );
    assert_eq!(of(&first, "cluster-collectives").len(), 1);
    assert_eq!(
        parts(&first),
        serde_json::json!({"planned": PARTS, "finished": PARTS, "resumed": 0, "measured": PARTS})
    );

    // Stopped after its hosts and its latency round: a new allocation of the same
    // nodes measures the shift step and the collectives only.
    let part = c.dir.join("part");
    cut(&whole, &part, 3);
    let resume = [&salloc[..], &q, &["--resume", part.to_str().unwrap()]].concat();
    let out = slurm.run(&c, "200", &resume);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "continuing {} (3 of {PARTS} finished before)",
            part.display()
        )),
        "{err}"
    );
    let recs = results(&part);
    assert_eq!(
        parts(&recs),
        serde_json::json!({"planned": PARTS, "finished": PARTS, "resumed": 3, "measured": 2})
    );
    let host_recs = |r: &[serde_json::Value]| -> Vec<serde_json::Value> {
        of(r, "cluster-host").into_iter().cloned().collect()
    };
    assert_eq!(
        host_recs(&recs),
        host_recs(&first),
        "the hosts kept as measured"
    );
    matrices_whole(
        &of(&recs, "cluster-links")[0]["data"],
        &["nlab-h1", "nlab-h2"],
    );
    slurm.down();
    let left = c.left_running();
    assert!(
        left.is_empty(),
        "left running after Slurm stopped: {left:?}"
    );
}
