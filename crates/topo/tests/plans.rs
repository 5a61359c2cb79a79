//! Placement plans against real machines' topologies (tests/topologies, through numalab-fixtures).

use numalab_topo::plan::{resolve_memory, resolve_threads, spread_note};
use numalab_topo::*;
use std::collections::BTreeSet;

fn load(name: &str) -> Machine {
    let p = numalab_fixtures::topology(name);
    Host::load(&TopologySource::Xml(p)).unwrap().machine
}

fn req(spec: &str, n: Option<usize>) -> ThreadRequest {
    ThreadRequest {
        spec: ThreadSpec::parse(spec).unwrap(),
        count: n,
        smt: Smt::Last,
        kind: CoreKind::Any,
    }
}

fn cpus(m: &Machine, spec: &str, n: Option<usize>) -> Vec<Pu> {
    resolve_threads(m, &req(spec, n))
        .unwrap()
        .into_iter()
        .map(|t| t.pu)
        .collect()
}

#[test]
fn every_fixture_topology_loads_and_plans() {
    let mut seen = 0;
    for entry in std::fs::read_dir(numalab_fixtures::topologies_dir()).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().and_then(|e| e.to_str()) != Some("xml") {
            continue;
        }
        seen += 1;
        let m = Host::load(&TopologySource::Xml(p.clone())).unwrap().machine;
        assert!(!m.pus.is_empty(), "{}", p.display());
        assert!(!m.this_system);
        let n = m.distances.nodes.len();
        assert_eq!(n, m.nodes.len());
        assert!(m.distances.hops.iter().all(|r| r.len() == n));
        for i in 0..n {
            assert_eq!(m.distances.hops[i][i], 0, "{}", p.display());
        }
        // Every policy uses each CPU at most once and only usable CPUs.
        for spec in ["compact", "scatter", "batch:2", "scatter:core"] {
            let got = cpus(&m, spec, None);
            let set: BTreeSet<u32> = got.iter().map(|p| p.os).collect();
            assert_eq!(set.len(), got.len(), "{spec} on {}", p.display());
            assert!(got.iter().all(|p| m.pu(p.os).is_some()));
        }
        assert_eq!(cpus(&m, "compact", None).len(), m.pus.len());
    }
    assert!(seen >= 8, "expected the shared topologies, found {seen}");
}

#[test]
fn scatter_node_spreads_over_eight_nodes() {
    let m = load("64amd64-4s2n4ca2co.xml");
    let got = cpus(&m, "scatter:node", Some(8));
    let nodes: BTreeSet<u32> = got.iter().map(|p| p.node.unwrap()).collect();
    assert_eq!(nodes.len(), 8);
    // The ninth thread goes back to the first node.
    let got = cpus(&m, "scatter:node", Some(9));
    assert_eq!(got[8].node, got[0].node);
    assert_ne!(got[8].os, got[0].os);
}

#[test]
fn batch_alternates_packages_in_blocks() {
    let m = load("64amd64-4s2n4ca2co.xml");
    let got = cpus(&m, "batch:4:package", Some(32));
    let pkgs: Vec<u32> = got.iter().map(|p| p.package.unwrap()).collect();
    for (b, block) in pkgs.chunks(4).enumerate() {
        assert!(block.iter().all(|&p| p == block[0]), "block {b}: {block:?}");
        if b > 0 {
            assert_ne!(
                block[0],
                pkgs[(b - 1) * 4],
                "block {b} repeats the previous package"
            );
        }
    }
    let order: Vec<u32> = pkgs.chunks(4).map(|c| c[0]).collect();
    assert_eq!(order, vec![0, 1, 2, 3, 0, 1, 2, 3]);
}

#[test]
fn compact_uses_smt_siblings_last() {
    let m = Host::load(&TopologySource::Synthetic("pack:2 l3:2 core:4 pu:2".into()))
        .unwrap()
        .machine;
    let got = cpus(&m, "compact", Some(16));
    let cores: BTreeSet<u32> = got.iter().map(|p| p.core).collect();
    assert_eq!(cores.len(), 16);
    assert!(got.iter().all(|p| p.smt_rank == 0));
    let together = resolve_threads(
        &m,
        &ThreadRequest {
            smt: Smt::Together,
            ..req("compact", Some(2))
        },
    )
    .unwrap();
    assert_eq!(together[0].pu.core, together[1].pu.core);
}

#[test]
fn offline_cpus_are_never_chosen() {
    let m = load("offline-cpu0-node0.xml");
    assert!(m.offline_cpus.contains(&0));
    for spec in ["compact", "scatter:l3", "batch:3:package", "pkg:0", "4-20"] {
        let got = cpus(&m, spec, None);
        assert!(
            got.iter().all(|p| !m.offline_cpus.contains(&p.os)),
            "{spec}"
        );
    }
    let e = resolve_threads(&m, &req("0", None))
        .unwrap_err()
        .to_string();
    assert!(e.contains("CPU 0 is offline") && e.contains("4-20"), "{e}");
}

/// Scatter wraps round the nodes that have usable CPUs until those CPUs run out; the error
/// then counts only those CPUs and names the CPUs that belong to no node.
#[test]
fn scatter_counts_only_cpus_its_domains_reach() {
    let m = load("offline-cpu0-node0.xml");
    // Node 1 holds the odd CPUs 5-19; the even usable CPUs belong to no node object.
    assert_eq!(cpus(&m, "scatter:node", Some(8)).len(), 8);
    let e = resolve_threads(&m, &req("scatter:node", Some(9)))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("reaches only 8 usable CPUs (5,7,9,11,13,15,17,19)")
            && e.contains("CPUs 4,6,8,10,12,14,16,18,20 are usable but in no node"),
        "{e}"
    );
}

#[test]
fn scatter_names_nodes_without_cpus() {
    let m = load("8intel64-4n2t-memattrs.xml");
    assert!(spread_note(&m, &req("scatter:node", Some(4))).is_none());
    let two_cpu_less = TopologySource::Synthetic("pack:2 [numa] [numa] core:2 pu:1".into());
    let m = Host::load(&two_cpu_less).unwrap().machine;
    // Two CPU-less nodes: -n 4 (every node) wraps round the two nodes with CPUs.
    let four = cpus(&m, "scatter:node", Some(4));
    let nodes: Vec<Option<u32>> = four.iter().map(|p| p.node).collect();
    assert_eq!(nodes, [Some(0), Some(2), Some(0), Some(2)]);
    let note = spread_note(&m, &req("scatter:node", Some(4))).unwrap();
    assert!(note.contains("skips node:1,3"), "{note}");
    let e = resolve_threads(&m, &req("scatter:node", Some(5)))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("reaches only 4 usable CPUs (0-3)")
            && e.contains("node:1,3 without usable CPUs"),
        "{e}"
    );
}

#[test]
fn hops_follow_the_10_20_40_80_matrix() {
    let m = load("16amd64-4distances.xml");
    let d = &m.distances;
    assert!(d.source.contains("Package"), "{}", d.source);
    let rank = |v: u64| [10, 20, 40, 80].iter().position(|&x| x == v).unwrap() as u32;
    for (i, row) in d.values.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            assert_eq!(d.hops[i][j], rank(v));
        }
    }
    let all: BTreeSet<u32> = d.hops.iter().flatten().copied().collect();
    assert_eq!(all, BTreeSet::from([0, 1, 2, 3]));
    // hops:K and farthest resolve to nodes at that distance from the first thread.
    let t = resolve_threads(&m, &req("node:0", Some(1))).unwrap();
    for k in 0..4 {
        let mem = resolve_memory(&m, &MemSpec::Hops(k), PageSize::Base, &t).unwrap();
        assert_eq!(d.hops_between(0, mem.nodes[0]), Some(k));
        assert_eq!(mem.hops_from_threads, vec![Some(k)]);
    }
    let far = resolve_memory(&m, &MemSpec::Farthest, PageSize::Base, &t).unwrap();
    assert_eq!(d.distance(0, far.nodes[0]), Some(80));
    let e = resolve_memory(&m, &MemSpec::Hops(4), PageSize::Base, &t).unwrap_err();
    assert!(e.to_string().contains("0-3"), "{e}");
}

#[test]
fn hybrid_uses_big_cores_then_little_then_smt() {
    // 6 P-cores with 2 threads each (CPUs 0-11) and 8 E-cores (12-19).
    let m = load("20em64t-hybrid-1p6c2t+2ca4co1t.xml");
    assert_eq!(m.cpu_kinds.len(), 2);
    let big = m.cpu_kinds.iter().max_by_key(|k| k.rank).unwrap();
    assert!(big.cpus.contains(&0) && !big.cpus.contains(&12));
    let got = cpus(&m, "compact", None);
    let kinds: Vec<u32> = got.iter().map(|p| p.kind.unwrap()).collect();
    let smt: Vec<u32> = got.iter().map(|p| p.smt_rank).collect();
    // First the 6 P-cores' first threads, then the 8 E-cores, then the 6 SMT siblings.
    assert!(kinds[..6].iter().all(|&k| k == big.rank));
    assert!(kinds[6..14].iter().all(|&k| k != big.rank));
    assert!(smt[..14].iter().all(|&s| s == 0) && smt[14..].iter().all(|&s| s == 1));
    let little = resolve_threads(
        &m,
        &ThreadRequest {
            kind: CoreKind::Little,
            ..req("compact", None)
        },
    )
    .unwrap();
    assert_eq!(little.len(), 8);
    assert!(little.iter().all(|t| t.pu.os >= 12));
}

#[test]
fn memory_attributes_and_cpu_less_nodes() {
    let m = load("8intel64-4n2t-memattrs.xml");
    assert!(m.memattrs.iter().any(|a| a.name == "Bandwidth"));
    let m = load("128arm-2pa2n8cluster4co.xml");
    assert_eq!(m.nodes.len(), 4);
    assert!(m.nodes.iter().all(|n| !n.cpu_less));
    let got = cpus(&m, "scatter:l3", None);
    assert_eq!(got.len(), m.domains(Level::L3).unwrap().len());
}

#[test]
fn bad_requests_name_the_value() {
    let m = load("64amd64-4s2n4ca2co.xml");
    let cases = [
        ("compact", Some(65), "65"),
        ("l3:99", None, "l3:99"),
        ("node:12", None, "node:12"),
        ("scatter:die", None, "die"),
    ];
    for (spec, n, needle) in cases {
        let e = resolve_threads(&m, &req(spec, n)).unwrap_err();
        assert!(e.is_user_error());
        assert!(e.to_string().contains(needle), "{spec}: {e}");
    }
    let t = resolve_threads(&m, &req("0", None)).unwrap();
    let e = resolve_memory(&m, &MemSpec::Node(8), PageSize::Base, &t).unwrap_err();
    assert!(
        e.to_string().contains("node 8") && e.to_string().contains("0-7"),
        "{e}"
    );
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Parsing and resolving arbitrary specs never panics.
        #[test]
        fn specs_never_panic(s in "[a-z0-9:,\\-]{0,16}", n in proptest::option::of(0usize..200)) {
            let m = Host::load(&TopologySource::Synthetic("pack:2 numa:2 core:2 pu:2".into())).unwrap().machine;
            if let Ok(spec) = ThreadSpec::parse(&s) {
                let _ = resolve_threads(&m, &ThreadRequest { spec, count: n, smt: Smt::Last, kind: CoreKind::Any });
            }
            if let Ok(ms) = MemSpec::parse(&s) {
                let t = resolve_threads(&m, &req("compact", Some(1))).unwrap();
                let _ = resolve_memory(&m, &ms, PageSize::Base, &t);
            }
        }
    }
}
