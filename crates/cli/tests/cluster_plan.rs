//! `numalab cluster` planned (issue 45, item 3): the plan for N hosts without a
//! cluster, its estimate and the bytes its figures take, and bad input refused in one
//! line before anything starts.

mod common;

use common::{bad_input, numalab, tmpdir, validate};

#[test]
fn ten_thousand_hosts_are_planned_with_an_estimate_and_the_bytes_per_pair() {
    let out = numalab(&["cluster", "--dry-run", "--hosts", "10000", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = validate(&out.stdout);
    let d = &v[0]["data"];
    assert_eq!(v[0]["kind"], "cluster-plan");
    assert_eq!(d["hosts"].as_array().unwrap().len(), 10_000);
    assert_eq!(d["latency_rounds"], 9_999);
    assert_eq!(d["shift_steps"], 9_999);
    assert_eq!(d["state_bytes"], 10_000u64 * 10_000 * 48);
    assert!(d["estimate_s"].as_f64().unwrap() > 0.0);
    let text = numalab(&["cluster", "--dry-run", "--hosts", "10000"]);
    let t = String::from_utf8_lossy(&text.stdout);
    for want in [
        "10000 hosts",
        "9999 rounds",
        "9999 shift steps",
        "estimate:",
        "48 B per host pair",
    ] {
        assert!(t.contains(want), "{want} not in {t}");
    }
}

#[test]
fn a_hostfile_plan_names_its_hosts() {
    let d = tmpdir("cluster-plan");
    let f = d.join("hosts");
    std::fs::write(&f, "node1 slots=1\nnode2\n").unwrap();
    let out = numalab(&["cluster", "--dry-run", "--hostfile", f.to_str().unwrap()]);
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        t.contains("2 hosts from the hostfile (node1, node2)"),
        "{t}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn bad_requests_are_one_line_and_exit_2() {
    let d = tmpdir("cluster-bad");
    let f = d.join("hosts");
    std::fs::write(&f, "node1 slots=4\nnode2\n").unwrap();
    let file = f.to_str().unwrap();
    for (args, want) in [
        (
            vec!["--dry-run", "--hosts", "0"],
            "invalid --hosts '0': 2 to",
        ),
        (
            vec!["--dry-run", "--hosts", "1"],
            "invalid --hosts '1': 2 to",
        ),
        (
            vec!["--dry-run", "--hosts", "junk"],
            "'junk' for '--hosts <N>'",
        ),
        (vec!["--hosts", "5"], "without --dry-run"),
        (vec!["--dry-run"], "give --hostfile"),
        (vec!["--dry-run", "--hostfile", file], "slots=4"),
        (
            vec!["--dry-run", "--hosts", "4", "--bw-window", "0"],
            "--bw-window '0'",
        ),
        (
            vec!["--dry-run", "--hosts", "4", "--mem-size", "512K"],
            "--mem-size '524288': at least 1 MiB",
        ),
        (
            vec!["--dry-run", "--hosts", "4", "--mem-size", "lots"],
            "--mem-size",
        ),
    ] {
        let mut a = vec!["cluster"];
        a.extend(args.iter().copied());
        bad_input(&numalab(&a), &[want], &format!("{a:?}"));
    }
    std::fs::remove_dir_all(&d).unwrap();
}
