//! `numalab c2c` end to end.

mod common;

use common::{bad_input, numalab, topology, validate};

#[test]
fn plan_and_bad_input() {
    let topo = topology("64amd64-4s2n4ca2co.xml");
    let out = numalab(&[
        "c2c",
        "--dry-run",
        "--topology",
        &topo,
        "--cpus",
        "0-15",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = validate(&out.stdout);
    assert_eq!(v[0]["parameters"]["pairs"], 120);
    let rounds = v[0]["data"]["rounds"].as_array().unwrap();
    let n: usize = rounds.iter().map(|r| r.as_array().unwrap().len()).sum();
    assert_eq!(n, 120);
    // Within a round no CPU appears twice.
    for r in rounds {
        let mut cpus: Vec<u64> = r
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| [p["a"].as_u64().unwrap(), p["b"].as_u64().unwrap()])
            .collect();
        let len = cpus.len();
        cpus.sort_unstable();
        cpus.dedup();
        assert_eq!(cpus.len(), len);
    }
    for (args, names) in [
        (vec!["c2c", "--metric", "rtt"], "'rtt'"),
        (vec!["c2c", "--home", "middle"], "'middle'"),
        (vec!["c2c", "--cpus", "0"], "'0'"),
        (vec!["c2c", "--cpus", "0,77"], "'77'"),
    ] {
        bad_input(&numalab(&args), &[names], &format!("{args:?}"));
    }
}

#[test]
fn measured_pair_is_positive_and_bounded() {
    let out = numalab(&[
        "c2c",
        "--json",
        "--round-trips",
        "5000",
        "--iterations",
        "3",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = validate(&out.stdout);
    let pair = &v[0];
    assert_eq!(pair["kind"], "c2c");
    // The fastest pass: a partner thread descheduled on a shared 2-core VM slows a
    // pass by milliseconds, never the best of them below what a line transfer takes;
    // 1 ms per round trip is far past any machine's and still catches a wrong unit.
    for s in pair["stats"].as_array().unwrap() {
        let m = s["min"].as_f64().unwrap();
        assert!(m > 0.0 && m < 1e6, "{}: {m}", s["metric"]);
    }
    assert_eq!(pair["stats"].as_array().unwrap().len(), 2);
    assert_eq!(v.as_array().unwrap().last().unwrap()["kind"], "c2c-matrix");
}
