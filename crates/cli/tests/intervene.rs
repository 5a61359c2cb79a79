//! `numalab intervene`: placements on the shared topologies, bad input, a live run.

mod common;

use common::{bad_input, numalab, run_json, stat, topology};
use serde_json::Value;

fn u(p: &Value, k: &str) -> u64 {
    p[k].as_u64().unwrap_or_else(|| panic!("no {k} in {p}"))
}

/// Every resolved placement puts exactly the named pair of parties on one node.
fn check_placements(v: &Value) -> usize {
    let mut remote = 0;
    for r in v.as_array().unwrap() {
        let p = &r["parameters"];
        if p.get("home_node").is_none() {
            assert!(!r["unavailable"].as_array().unwrap().is_empty());
            continue;
        }
        let (req, own, home) = (
            u(p, "requestor_node"),
            u(p, "owner_node"),
            u(p, "home_node"),
        );
        let (x, y, z, h) = (u(p, "xhops"), u(p, "yhops"), u(p, "zhops"), u(p, "hops"));
        assert_ne!(u(p, "requestor_cpu"), u(p, "owner_cpu"));
        match p["placement"].as_str().unwrap() {
            "local" => assert!(h == 0 && req == own && own == home),
            "xhops=0" => assert!(req == home && x == 0 && y == h && z == h, "{p}"),
            "yhops=0" => assert!(own == home && y == 0 && x == h && z == h, "{p}"),
            "zhops=0" => assert!(req == own && z == 0 && x == h && y == h, "{p}"),
            other => panic!("unknown placement {other}"),
        }
        if h > 0 {
            remote += 1;
        }
    }
    remote
}

#[test]
fn placements_resolve_on_the_shared_topologies() {
    for (file, distances) in [
        ("16amd64-4distances.xml", 3),
        ("8intel64-4n2t-memattrs.xml", 1),
        ("64amd64-4s2n4ca2co.xml", 2),
        ("96em64t-4n4d3ca2co-pci.xml", 1),
        ("128arm-2pa2n8cluster4co.xml", 3),
    ] {
        let topo = topology(file);
        let v = run_json("intervene", &["--dry-run", "--topology", &topo]);
        let remote = check_placements(&v);
        // Three placements at every remote distance.
        assert_eq!(remote, 3 * distances, "{file}");
    }
    // A requestor without a node is refused, one with a node works.
    let topo = topology("offline-cpu0-node0.xml");
    let out = numalab(&["intervene", "--dry-run", "--topology", &topo]);
    bad_input(&out, &["--cpu"], "no node for the requestor");
    let v = run_json(
        "intervene",
        &["--dry-run", "--topology", &topo, "--cpu", "5"],
    );
    check_placements(&v);
}

#[test]
fn a_placement_with_no_distinct_nodes_is_refused() {
    let one = topology("16em64t-4s2c2t.xml");
    let out = numalab(&["intervene", "--dry-run", "--topology", &one, "--hops", "1"]);
    bad_input(
        &out,
        &["'1'", "no placement with distinct nodes"],
        "--hops 1 on one node",
    );
    assert!(out.stdout.is_empty());
    let four = topology("16amd64-4distances.xml");
    for bad in [
        vec!["--hops", "4"],
        vec!["--states", "uown"],
        vec!["--placements", "w"],
        vec!["--hops", "x"],
    ] {
        let mut a = vec!["intervene", "--dry-run", "--topology", &four];
        a.extend(bad.iter());
        let out = numalab(&a);
        bad_input(&out, &[&format!("'{}'", bad[1])], &format!("{bad:?}"));
    }
    // Asked distances only.
    let v = run_json(
        "intervene",
        &[
            "--dry-run",
            "--topology",
            &four,
            "--hops",
            "2",
            "--placements",
            "y",
        ],
    );
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["parameters"]["placement"], "yhops=0");
}

#[test]
fn measured_local_row_with_unowned_reference() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: an owner needs a second core");
        return;
    }
    let v = run_json(
        "intervene",
        &["--hops", "0", "--states", "cexh,dexd", "--iterations", "2"],
    );
    let recs = v.as_array().unwrap();
    let uown = recs.iter().find(|r| r["kind"] == "intervene-uown").unwrap();
    assert!(stat(uown, "latency", "min") > 0.0);
    let cells: Vec<&Value> = recs.iter().filter(|r| r["kind"] == "intervene").collect();
    assert_eq!(cells.len(), 2);
    for c in cells {
        // The fastest pass, below 1 ms per line whatever the scheduling.
        let l = stat(c, "latency", "min");
        assert!(l > 0.0 && l < 1e6, "{l}");
        assert!(c["data"]["delta_u_ns"].is_number());
        assert_eq!(
            c["placement"]["verified"]["threads"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }
}
