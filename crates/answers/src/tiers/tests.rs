//! Tiers on fake sysfs trees and synthetic node records: the kernel's rule end to
//! end, and every finding rule with a case that triggers it and one that does not.

use super::data::TierNode;
use super::*;
use numalab_bench::experiment::Context;
use numalab_results::{Provenance, Record};
use numalab_topo::tiers::Access;
use std::fs;
use std::path::{Path, PathBuf};

fn put(root: &Path, rel: &str, body: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, body).unwrap();
}

/// A node with HMAT access1 values from node 0 (read = write, as QEMU's hmat-lb gives).
fn node(root: &Path, n: u32, cpus: &str, lat_bw: Option<(u32, u32)>) {
    let d = format!("sys/devices/system/node/node{n}");
    put(root, &format!("{d}/cpulist"), &format!("{cpus}\n"));
    put(
        root,
        &format!("{d}/meminfo"),
        &format!("Node {n} MemTotal: 1048576 kB\n"),
    );
    put(root, &format!("{d}/distance"), "10 20 30\n");
    if let Some((l, b)) = lat_bw {
        for class in [0, 1] {
            let a = format!("{d}/access{class}/initiators");
            for (f, v) in [
                ("read_latency", l),
                ("write_latency", l),
                ("read_bandwidth", b),
                ("write_bandwidth", b),
            ] {
                put(root, &format!("{a}/{f}"), &format!("{v}\n"));
            }
            fs::create_dir_all(root.join(format!("{a}/node0"))).unwrap();
        }
    }
}

/// The guest: DRAM 100 ns / 40 GB/s, CPU-less 120 ns / 32 GB/s and 300 ns / 10 GB/s.
fn guest(name: &str, kernel_tiers: &[(u32, &str)]) -> PathBuf {
    let root = std::env::temp_dir().join(format!("numalab-tiers-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    node(&root, 0, "0-1", Some((100, 40960)));
    node(&root, 1, "", Some((120, 32768)));
    node(&root, 2, "", Some((300, 10240)));
    for (k, nodes) in kernel_tiers {
        put(
            &root,
            &format!("sys/devices/virtual/memory_tiering/memory_tier{k}/nodelist"),
            &format!("{nodes}\n"),
        );
    }
    put(&root, "sys/kernel/mm/numa/demotion_enabled", "false\n");
    put(&root, "proc/sys/kernel/numa_balancing", "0\n");
    put(&root, "proc/sys/kernel/osrelease", "6.12.0-test\n");
    root
}

fn ctx() -> Context {
    Context {
        prov: Provenance::collect("test", "test"),
        warnings: Vec::new(),
    }
}

fn run_on(root: &Path, nodes: Option<Vec<u32>>) -> numalab_topo::Result<Vec<Record>> {
    let plan = Plan {
        options: Options {
            root: root.display().to_string(),
            ..Options::default()
        },
        nodes,
        measured: None,
        interleave: None,
    };
    let host = numalab_topo::Host::load(&numalab_topo::TopologySource::Synthetic(
        "numa:1 pu:1".into(),
    ))
    .unwrap();
    run(&host, &plan, &ctx())
}

fn tiers_of(records: &[Record]) -> Vec<(u32, Option<u32>, Option<i32>)> {
    records
        .iter()
        .filter(|r| r.kind == "tiers")
        .map(|r| {
            let n: TierNode = r.data_as().unwrap();
            (n.node, n.kernel_tier, n.firmware_tier)
        })
        .collect()
}

#[test]
fn the_guest_tree_predicts_tiers_4_6_54_and_agrees_with_its_kernel() {
    let root = guest("agree", &[(4, "0"), (6, "1"), (54, "2")]);
    let recs = run_on(&root, None).unwrap();
    assert_eq!(
        tiers_of(&recs),
        vec![
            (0, Some(4), Some(4)),
            (1, Some(6), Some(6)),
            (2, Some(54), Some(54))
        ]
    );
    let sys: TierSystem = recs.last().unwrap().data_as().unwrap();
    assert!(sys.findings.is_empty(), "{:?}", sys.findings);
    // Three tiers and demotion off: the recommendation turns it on, with the commands.
    assert!(sys.recommendations[0]
        .text
        .contains("no weights without measured bandwidth"));
    let demote = sys.recommendations.last().unwrap();
    assert!(demote
        .commands
        .contains(&"echo true > /sys/kernel/mm/numa/demotion_enabled".to_string()));
    let unavailable: Vec<&str> = recs
        .last()
        .unwrap()
        .unavailable
        .iter()
        .map(|u| u.feature.as_str())
        .collect();
    assert_eq!(unavailable, ["weighted interleave", "measured"]);
    assert!(recs.last().unwrap().unavailable[0].reason.contains("6.9"));
    let text = crate::registry::text(&recs);
    assert!(
        text.contains("measured reference: not given (run `numalab survey` or pass --from)"),
        "{text}"
    );
    // Said on the measured reference line, not again as an unavailable line.
    assert!(!text.contains("unavailable: measured:"), "{text}");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn a_kernel_that_differs_from_the_firmware_is_a_finding_and_a_missing_node_is_refused() {
    let root = guest("differ", &[(4, "0-1"), (54, "2")]);
    let recs = run_on(&root, None).unwrap();
    let sys: TierSystem = recs.last().unwrap().data_as().unwrap();
    let rules: Vec<(&str, Option<u32>)> = sys
        .findings
        .iter()
        .map(|f| (f.rule.as_str(), f.node))
        .collect();
    assert_eq!(rules, [("kernel-differs", Some(1))]);
    assert!(
        sys.findings[0].text.contains("memory_tier4")
            && sys.findings[0].text.contains("memory_tier6")
    );
    let only = run_on(&root, Some(vec![2])).unwrap();
    assert_eq!(tiers_of(&only), vec![(2, Some(54), Some(54))]);
    let err = run_on(&root, Some(vec![7])).unwrap_err();
    assert!(
        err.is_user_error() && err.to_string().contains('7'),
        "{err}"
    );
    assert_eq!(err.to_string().lines().count(), 1);
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn without_hmat_and_without_tiers_every_node_gets_the_default_and_features_are_unavailable() {
    let root = std::env::temp_dir().join(format!("numalab-tiers-bare-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    node(&root, 0, "0", None);
    let recs = run_on(&root, None).unwrap();
    assert_eq!(tiers_of(&recs), vec![(0, None, Some(4))]);
    let last = recs.last().unwrap();
    let features: Vec<&str> = last
        .unavailable
        .iter()
        .map(|u| u.feature.as_str())
        .collect();
    assert_eq!(
        features,
        [
            "memory tiers",
            "weighted interleave",
            "demotion",
            "NUMA balancing",
            "HMAT",
            "measured"
        ]
    );
    assert!(last.unavailable[0].reason.contains("6.1"));
    let sys: TierSystem = last.data_as().unwrap();
    assert_eq!(sys.findings.len(), 1);
    assert_eq!(sys.findings[0].rule, "no-hmat");
    let _ = fs::remove_dir_all(&root);
}

fn access(lat: u32, bw: u32) -> Option<Access> {
    Some(Access {
        initiators: vec![0],
        read_latency: Some(lat),
        write_latency: Some(lat),
        read_bandwidth: Some(bw),
        write_bandwidth: Some(bw),
    })
}

/// A synthetic node: firmware values, kernel and firmware tier, and a measurement.
fn tn(
    node: u32,
    fw: (u32, u32),
    tiers: (u32, i32),
    measured: Option<(f64, f64, i32)>,
    weight: Option<u32>,
) -> TierNode {
    TierNode {
        node,
        cpus: if node == 0 { vec![0] } else { Vec::new() },
        mem_bytes: Some(1 << 30),
        slit: vec![10],
        access0: access(fw.0, fw.1),
        access1: access(fw.0, fw.1),
        kernel_tier: Some(tiers.0),
        firmware_adistance: Some(tiers.1 << 7),
        firmware_tier: Some(tiers.1),
        firmware_basis: "test".into(),
        measured: measured.map(|(l, b, _)| MeasuredPerf {
            latency_from: 0,
            latency_ns: l,
            latency_record: "matrix-latency: test".into(),
            bandwidth_from: Some(0),
            bandwidth_gbps: Some(b),
            bandwidth_record: Some("matrix-bandwidth: test".into()),
        }),
        measured_adistance: measured.map(|m| m.2 << 7),
        measured_tier: measured.map(|m| m.2),
        weight,
    }
}

/// One package (node 0's CPUs) measuring each node's bandwidth as its record says.
fn one_package(nodes: &[TierNode]) -> Vec<PackageBandwidth> {
    let bandwidth: Vec<(u32, f64)> = nodes
        .iter()
        .filter_map(|n| Some((n.node, n.measured.as_ref()?.bandwidth_gbps?)))
        .collect();
    vec![PackageBandwidth {
        package: Some(0),
        initiators: vec![0],
        weights: weights_from(&bandwidth),
        bandwidth,
    }]
}

fn rules(nodes: &[TierNode]) -> Vec<String> {
    findings(nodes, &one_package(nodes))
        .into_iter()
        .map(|f| f.rule)
        .collect()
}

#[test]
fn each_finding_rule_fires_on_its_case_and_not_on_an_agreeing_one() {
    // Agreeing: firmware within 25 % of the measurement, same tiers, weights 5:4 for 40:32.
    let fine = [
        tn(0, (100, 40_000), (4, 4), Some((100.0, 40.0, 4)), Some(5)),
        tn(1, (120, 32_000), (6, 6), Some((110.0, 33.0, 6)), Some(4)),
    ];
    assert!(rules(&fine).is_empty(), "{:?}", findings(&fine, &[]));
    // The measurement puts node 1 a tier lower than its firmware.
    assert_eq!(
        rules(&[tn(1, (120, 32_000), (6, 6), Some((125.0, 30.0, 7)), None)]),
        ["measured-tier"]
    );
    // Firmware latency 40 % under the measurement; then bandwidth twice the measurement.
    assert_eq!(
        rules(&[tn(1, (120, 32_000), (6, 6), Some((200.0, 32.0, 6)), None)]),
        ["firmware-off"]
    );
    assert_eq!(
        rules(&[tn(1, (120, 32_000), (6, 6), Some((120.0, 16.0, 6)), None)]),
        ["firmware-off"]
    );
    // The kernel's tier is not the firmware's prediction.
    assert_eq!(
        rules(&[tn(1, (120, 32_000), (4, 6), None, None)]),
        ["kernel-differs"]
    );
    // No HMAT at all.
    let mut bare = tn(1, (120, 32_000), (6, 6), None, None);
    bare.access0 = None;
    bare.access1 = None;
    assert_eq!(rules(&[bare]), ["no-hmat"]);
    // Weights 1:1 for bandwidths 40:10: both nodes' shares are far off.
    let skew = [
        tn(0, (100, 40_000), (4, 4), Some((100.0, 40.0, 4)), Some(1)),
        tn(1, (300, 10_000), (54, 54), Some((300.0, 10.0, 54)), Some(1)),
    ];
    assert_eq!(rules(&skew), ["weights", "weights"]);
}

#[test]
fn recommendations_give_weights_from_measured_bandwidth_and_the_commands() {
    assert_eq!(
        weights_from(&[(0, 40.0), (1, 32.0), (2, 10.0)]),
        [(0, 10), (1, 8), (2, 3)]
    );
    let nodes = [
        tn(0, (100, 40_000), (4, 4), Some((100.0, 40.0, 4)), Some(1)),
        tn(1, (300, 10_000), (54, 54), Some((300.0, 10.0, 54)), Some(1)),
    ];
    let recs = recommendations(&nodes, &[], (Some(true), Some(2)), None);
    let w = &recs[0];
    assert!(w
        .commands
        .contains(&"echo 10 > /sys/kernel/mm/mempolicy/weighted_interleave/node0".to_string()));
    assert!(w
        .commands
        .contains(&"echo 3 > /sys/kernel/mm/mempolicy/weighted_interleave/node1".to_string()));
    assert!(w
        .commands
        .iter()
        .any(|c| c == "numactl --weighted-interleave=0-1 PROGRAM"));
    assert!(w
        .commands
        .iter()
        .any(|c| c.contains("set_mempolicy(MPOL_WEIGHTED_INTERLEAVE")));
    // Two tiers with demotion and tiering balancing already on: nothing to run.
    assert!(recs[1].commands.is_empty(), "{:?}", recs[1]);
    // One tier: no weights without two measured nodes, and nothing to demote to.
    let one = recommendations(&nodes[..1], &[], (Some(false), Some(0)), None);
    assert_eq!(one.len(), 1);
    assert!(one[0].text.contains("nothing to demote to") && one[0].commands.is_empty());
}

/// Package `p` (CPU node `p`) measuring `bw` GB/s to nodes 0 and 1.
fn package(p: u32, bw: [f64; 2]) -> PackageBandwidth {
    let bandwidth = vec![(0, bw[0]), (1, bw[1])];
    PackageBandwidth {
        package: Some(p),
        initiators: vec![p],
        weights: weights_from(&bandwidth),
        bandwidth,
    }
}

#[test]
fn each_package_gets_its_own_weights_and_packages_that_differ_are_named() {
    // Two sockets, each node local to one: kernel weights 1:1 (global), package 0
    // measured 100 GB/s to node 0 and 40 to node 1, package 1 the reverse.
    let nodes = [
        tn(0, (90, 100_000), (4, 4), Some((90.0, 100.0, 4)), Some(1)),
        tn(1, (90, 100_000), (4, 4), Some((90.0, 100.0, 4)), Some(1)),
    ];
    let two = [package(0, [100.0, 40.0]), package(1, [40.0, 100.0])];
    assert_eq!(
        (two[0].weights.clone(), two[1].weights.clone()),
        (vec![(0, 10), (1, 4)], vec![(0, 4), (1, 10)])
    );
    let f = findings(&nodes, &two);
    let rules: Vec<&str> = f.iter().map(|x| x.rule.as_str()).collect();
    // Both packages find the 50/50 split far from their 71/29: two nodes each, then the packages.
    assert_eq!(
        rules,
        [
            "weights",
            "weights",
            "weights",
            "weights",
            "weights-packages"
        ]
    );
    assert!(
        f[0].text.contains("package 0 (CPU node 0)"),
        "{}",
        f[0].text
    );
    assert!(
        f[2].text.contains("package 1 (CPU node 1)"),
        "{}",
        f[2].text
    );
    let last = &f[4].text;
    for want in [
        "package 0 (CPU node 0) wants node0=10 node1=4",
        "package 1 (CPU node 1) wants node0=4 node1=10",
        "global (node0=1 node1=1)",
    ] {
        assert!(last.contains(want), "{want} in {last}");
    }
    // Packages that agree, and kernel weights that match them: nothing to say.
    let mut agree = nodes.clone();
    agree[0].weight = Some(10);
    agree[1].weight = Some(4);
    let same = [package(0, [100.0, 40.0]), package(1, [95.0, 38.0])];
    assert!(
        findings(&agree, &same).is_empty(),
        "{:?}",
        findings(&agree, &same)
    );
    // The kernel weights fit package 0 but not package 1: only package 1's nodes, and the difference.
    let f = findings(&agree, &two);
    let about: Vec<(&str, Option<u32>)> = f.iter().map(|x| (x.rule.as_str(), x.node)).collect();
    assert_eq!(
        about,
        [
            ("weights", Some(0)),
            ("weights", Some(1)),
            ("weights-packages", None)
        ]
    );
    assert!(
        f.iter().take(2).all(|x| x.text.contains("package 1")),
        "{f:?}"
    );
    // The kernel holds one set: the recommendation follows the first package, and says so.
    let recs = recommendations(&nodes, &two, (Some(false), Some(0)), None);
    let want = "the bandwidth package 0 (CPU node 0)'s CPUs measured (node 0 100.00 GB/s, node 1 40.00 GB/s): weights node0=10 node1=4";
    assert!(recs[0].text.contains(want), "{}", recs[0].text);
}

#[test]
fn a_node_in_no_listed_tier_gets_no_demotion_claim() {
    let mut nodes = vec![
        tn(0, (100, 40_000), (4, 4), None, None),
        tn(1, (120, 32_000), (6, 6), None, None),
    ];
    nodes[1].kernel_tier = None;
    let recs = recommendations(&nodes, &[], (Some(false), Some(0)), None);
    let text: Vec<&str> = recs.iter().map(|r| r.text.as_str()).collect();
    assert!(
        text.iter()
            .any(|t| t.contains("node 1 is in no memory tier")),
        "{text:?}"
    );
    assert!(!text
        .iter()
        .any(|t| t.contains("every memory node is in one tier")));
}

#[test]
fn one_memory_node_says_why_no_measured_figure_is_possible_instead_of_asking_for_one() {
    let root = std::env::temp_dir().join(format!("numalab-tiers-one-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    node(&root, 0, "0-1", None);
    put(&root, "proc/sys/kernel/osrelease", "6.12.0-test\n");
    let recs = run_on(&root, None).unwrap();
    let text = crate::registry::text(&recs);
    assert!(!text.contains("--from"), "{text}");
    assert!(
        text.contains("none possible: one node with memory"),
        "{text}"
    );
    // Said once, on the measured reference line (the record keeps the entry).
    assert_eq!(text.matches("none possible").count(), 1, "{text}");
    assert!(text.contains("measured reference: none possible"), "{text}");
    let sys = recs.iter().find(|r| r.kind == "tiers-system").unwrap();
    assert!(sys.unavailable.iter().any(|u| u.feature == "measured"));
    let _ = fs::remove_dir_all(&root);
}
