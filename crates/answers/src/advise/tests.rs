//! Advice on synthetic surveys with known right answers: a 2-socket machine (local
//! 90 ns, remote 150 ns) and one with a CPU-less tier (250 ns, 30 GB/s).

use super::*;
use numalab_prof::trace::{Entry, Header, NodeInfo, ObjKind, Object, Sample, FORMAT, VERSION};
use numalab_results::{Provenance, Record};
use numalab_topo::{Host, Machine, Node, TopologySource};
use serde_json::json;
use std::collections::BTreeMap;

const GIB: u64 = 1 << 30;

fn prov() -> Provenance {
    Provenance::collect("test", "synthetic")
}

/// 2 packages × 1 node × 2 cores; nodes 0 and 1 hold 16 GiB; `tier` adds CPU-less node 2 (64 GiB).
fn machine(tier: bool) -> Machine {
    let mut m = Host::load(&TopologySource::Synthetic(
        "pack:2 numa:1 core:2 pu:1".into(),
    ))
    .unwrap()
    .machine;
    for n in &mut m.nodes {
        n.total_bytes = 16 * GIB;
    }
    if tier {
        m.nodes.push(Node {
            os: 2,
            total_bytes: 64 * GIB,
            free_bytes: None,
            local_cpus: Vec::new(),
            cpu_less: true,
            subtype: None,
            pages: Vec::new(),
        });
    }
    m
}

fn cell(kind: &str, metric: &str, unit: &str, cpu: u32, node: u32, v: f64) -> Record {
    let mut r = Record::new(
        kind,
        &format!("node of cpu {cpu} → node {node}"),
        prov(),
        json!({ "level": "node", "initiator_cpus": [cpu], "mem_node": node }),
    );
    // Tight samples around the median: the prediction takes the median.
    r.add_samples(metric, unit, &[v * 0.99, v, v * 1.01]);
    r
}

/// A survey's records: topology and node × node matrices. CPU 0 is on node 0, CPU 2 on node 1.
fn survey(tier: bool) -> Vec<Record> {
    let mut topo = Record::new("topo", "topology", prov(), json!({}));
    topo.data = Some(serde_json::to_value(machine(tier)).unwrap());
    let mut v = vec![topo];
    let nodes: &[u32] = if tier { &[0, 1, 2] } else { &[0, 1] };
    for (cpu, from) in [(0u32, 0u32), (2, 1)] {
        for &to in nodes {
            let (lat, bw) = match (from == to, to) {
                (true, _) => (90.0, 100.0),
                (false, 2) => (250.0, 30.0),
                _ => (150.0, 40.0),
            };
            v.push(cell("matrix-latency", "latency", "ns", cpu, to, lat));
            v.push(cell("matrix-bandwidth", "bandwidth", "GB/s", cpu, to, bw));
        }
    }
    v
}

fn opts(threads: usize, footprint: &str, access: &str, shared: bool) -> Options {
    Options {
        threads: Some(threads),
        footprint: Some(footprint.into()),
        access: access.into(),
        shared,
        ..Default::default()
    }
}

fn advise(records: &[Record], o: &Options) -> Advice {
    Plan::resolve(records, None, o).unwrap().compute().unwrap()
}

fn best(a: &Advice) -> &Candidate {
    a.placements
        .iter()
        .find(|c| c.rank == 1)
        .expect("a ranked placement")
}

#[test]
fn latency_bound_private_slices_rank_local_first() {
    let a = advise(&survey(false), &opts(2, "1G", "random", false));
    let b = best(&a);
    assert_eq!(b.memory, Memory::Local);
    assert_eq!(b.latency_ns, Some(90.0));
    assert!(
        b.commands["numactl"].contains("--localalloc"),
        "{:?}",
        b.commands
    );
    assert!(b.basis.iter().all(|r| r.contains("→ node")));
    // Remote memory is priced at the remote cell.
    let remote = a
        .placements
        .iter()
        .find(|c| c.threads == "compact" && c.memory == Memory::Bind { node: 1 })
        .unwrap();
    assert_eq!(remote.latency_ns, Some(150.0));
    assert!(remote.rank > b.rank);
}

#[test]
fn bandwidth_bound_shared_footprint_ranks_interleave_first() {
    let a = advise(&survey(false), &opts(4, "8G", "stream", true));
    let b = best(&a);
    assert_eq!(b.memory, Memory::Interleave { nodes: vec![0, 1] });
    // Each node's 2 cores stream half from 100 GB/s, half from 40: 80 each, no node over 100.
    assert!((b.bandwidth_gbps.unwrap() - 160.0).abs() < 1e-9, "{b:?}");
    // One node's pages serve everyone: capped at what that node gave (100).
    let one = a
        .placements
        .iter()
        .find(|c| c.memory == Memory::Local)
        .unwrap();
    assert!(
        (one.bandwidth_gbps.unwrap() - 100.0).abs() < 1e-9,
        "{one:?}"
    );
    assert!(b.commands["numactl"].contains("--interleave=0,1"));
    assert!(b.commands["numalab"].contains("--mem-node interleave:0,1"));
}

#[test]
fn cpu_less_tier_takes_the_overflow_and_bind_that_cannot_fit_is_refused() {
    let a = advise(&survey(true), &opts(2, "24G", "random", false));
    let tier = a
        .placements
        .iter()
        .find(|c| c.threads == "compact" && c.memory == Memory::Tiered { tier: 2 })
        .expect("a tiered placement for the compact layout");
    // 16 of 24 GiB fit on node 0 at 90 ns, the rest goes to node 2 at 250 ns.
    let want = 2.0 / 3.0 * 90.0 + 1.0 / 3.0 * 250.0;
    assert!((tier.latency_ns.unwrap() - want).abs() < 1e-9, "{tier:?}");
    assert!(tier.commands["numactl"].contains("--membind=0,2"));
    let bind0 = a
        .placements
        .iter()
        .find(|c| c.threads == "compact" && c.memory == Memory::Bind { node: 0 })
        .unwrap();
    assert!(
        bind0
            .unavailable
            .as_deref()
            .unwrap()
            .contains("will not fit"),
        "{bind0:?}"
    );
    assert_eq!(bind0.rank, 0);
    // Scattered, each node holds its 12 GiB slice: local wins.
    let b = best(&a);
    assert_eq!(
        (b.threads.as_str(), &b.memory),
        ("scatter:node", &Memory::Local)
    );
    assert_eq!(b.latency_ns, Some(90.0));
}

#[test]
fn a_survey_without_matrices_says_so_instead_of_predicting() {
    let mut one = survey(false);
    one.retain(|r| r.kind == "topo");
    let mut step = Record::new(
        "survey",
        "latency and bandwidth matrices",
        prov(),
        json!({ "section": "matrix" }),
    );
    step.unavailable.push(numalab_results::Unavailable {
        feature: "latency and bandwidth matrices".into(),
        reason: "one NUMA node and one L3 domain".into(),
    });
    one.push(step);
    let a = advise(&one, &opts(2, "1G", "stream", false));
    assert!(a.placements.is_empty());
    assert!(
        a.notes.iter().any(|n| n.contains("one NUMA node")),
        "{:?}",
        a.notes
    );
    assert!(a
        .notes
        .iter()
        .any(|n| n.contains("no placement is predicted")));
    // Latency matrix without the bandwidth one: streaming placements are not predicted.
    let mut lat_only = survey(false);
    lat_only.retain(|r| r.kind != "matrix-bandwidth");
    let a = advise(&lat_only, &opts(2, "1G", "stream", false));
    assert!(a.placements.iter().all(|c| c.rank == 0));
    assert!(a.placements[0]
        .unavailable
        .as_deref()
        .unwrap()
        .contains("no measured bandwidth"));
}

#[test]
fn bad_input_is_named() {
    let s = survey(false);
    let err = |o: &Options| {
        Plan::resolve(&s, None, o)
            .err()
            .expect("an error")
            .to_string()
    };
    assert!(err(&opts(0, "1G", "stream", false)).contains("--threads"));
    assert!(err(&opts(9, "1G", "stream", false)).contains("1 to 4"));
    assert!(err(&opts(2, "lots", "stream", false)).contains("'lots'"));
    assert!(err(&opts(2, "1G", "sideways", false)).contains("stream"));
    // No workload at all is not an error: advise assumes every CPU over half a node.
    assert!(Plan::resolve(&s, None, &Options::default()).is_ok());
    let e = Plan::resolve(&s[1..], None, &opts(2, "1G", "stream", false))
        .err()
        .unwrap();
    assert!(e.to_string().contains("topology record"));
}

/// A trace of one thread on CPU 0 (node 0) whose process's 64 MiB sit on `pages`.
fn trace(counters: bool, pages: u32) -> numalab_prof::trace::Trace {
    let header = Header {
        format: FORMAT.into(),
        version: VERSION,
        mode: "record".into(),
        target: vec!["./first_touch".into()],
        interval_ms: 100,
        pages_every: 1,
        runon: None,
        nodes: vec![
            NodeInfo {
                id: 0,
                cpus: vec![0, 1],
                mem_bytes: 16 * GIB,
            },
            NodeInfo {
                id: 1,
                cpus: vec![2, 3],
                mem_bytes: 16 * GIB,
            },
        ],
        provenance: prov(),
        sources: Vec::new(),
        counters: Vec::new(),
        fields: Vec::new(),
    };
    let obj = |id: &str, kind, parent: Option<&str>| Object {
        t_ns: 0,
        id: id.into(),
        kind,
        pid: Some(100),
        tid: (kind == ObjKind::Thread).then_some(101),
        node: None,
        name: "reader0".into(),
        parent: parent.map(String::from),
    };
    let mut lines = vec![
        Entry::Header(Box::new(header)),
        Entry::Object(obj("p100", ObjKind::Process, None)),
        Entry::Object(obj("t101", ObjKind::Thread, Some("p100"))),
    ];
    for i in 1..=5u64 {
        let mut v = BTreeMap::from([
            ("cpu".to_string(), 0.0),
            ("run_ns".to_string(), i as f64 * 1e8),
        ]);
        if counters {
            v.insert("dram_local".into(), 0.0);
            v.insert("dram_remote".into(), i as f64 * 1000.0);
        }
        lines.push(Entry::Sample(Sample {
            t_ns: i * 100_000_000,
            obj: "t101".into(),
            v,
        }));
        lines.push(Entry::Sample(Sample {
            t_ns: i * 100_000_000,
            obj: "p100".into(),
            v: BTreeMap::from([(format!("mem.{pages}"), 64.0 * 1048576.0)]),
        }));
    }
    let text: String = lines
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect();
    numalab_prof::trace::parse(text.as_bytes()).unwrap()
}

#[test]
fn thread_on_socket_0_with_pages_on_socket_1_is_told_to_move_saving_the_matrix_difference() {
    let s = survey(false);
    let t = trace(false, 1);
    let a = Plan::resolve(&s, Some(&t), &Options::default())
        .unwrap()
        .compute()
        .unwrap();
    assert!(
        a.placements.is_empty(),
        "no workload flags: only the trace is advised"
    );
    let th = &a.threads[0];
    assert_eq!((th.node, th.remote_share), (Some(0), Some(1.0)));
    assert_eq!(th.latency_ns, Some(150.0));
    let b = th.best.as_ref().expect("a move");
    // Saving = remote cell − local cell = 150 − 90.
    assert_eq!(b.saving_ns, 60.0);
    let alt = th
        .alternative
        .as_ref()
        .expect("the other move saves as much");
    assert_eq!(alt.saving_ns, 60.0);
    let moves = [b.what.as_str(), alt.what.as_str()];
    assert!(moves.contains(&"move memory") && moves.contains(&"move thread"));
    let mem = if b.what == "move memory" { b } else { alt };
    assert_eq!(mem.to_node, 0);
    assert_eq!(mem.now, "migratepages 100 1 0");
    assert!(mem.next_run.contains("--membind=0") && mem.next_run.contains("first_touch"));
    let thr = if b.what == "move thread" { b } else { alt };
    assert_eq!((thr.to_node, thr.now.as_str()), (1, "taskset -pc 2-3 101"));
    // Without counters the proxy is named as such.
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("page locality is a proxy")),
        "{:?}",
        a.notes
    );
    let recs = records(&a, &prov());
    assert!(html(&recs).unwrap().contains("move"));
    assert!(text(&a, &recs).contains("saves 60.0 ns"));
    // With counters the measured ratio is carried and the proxy note is gone.
    let t = trace(true, 1);
    let a = Plan::resolve(&s, Some(&t), &Options::default())
        .unwrap()
        .compute()
        .unwrap();
    assert_eq!(a.threads[0].counter_local_ratio, Some(0.0));
    assert!(!a.notes.iter().any(|n| n.contains("proxy")));
}

#[test]
fn records_round_trip_into_the_html_section() {
    let a = advise(&survey(false), &opts(4, "8G", "stream", true));
    let recs = records(&a, &prov());
    assert!(recs
        .iter()
        .all(|r| r.kind == "advice" && r.stats.is_empty()));
    let back: Vec<Record> = serde_json::from_str(&serde_json::to_string(&recs).unwrap()).unwrap();
    let h = html(&back).unwrap();
    assert!(h.contains("interleave 0,1") && h.contains("numactl"), "{h}");
    assert!(html(&survey(false)).is_none());
}

#[test]
fn a_thread_with_its_pages_local_is_left_alone() {
    let s = survey(false);
    let t = trace(false, 0);
    let a = Plan::resolve(&s, Some(&t), &Options::default())
        .unwrap()
        .compute()
        .unwrap();
    let th = &a.threads[0];
    assert_eq!((th.remote_share, th.latency_ns), (Some(0.0), Some(90.0)));
    assert!(th.best.is_none());
    assert!(th.notes[0].contains("already where the matrix prices them lowest"));
    // Without a matrix a local thread is still told there is nothing to move.
    let mut topo_only = s.clone();
    topo_only.retain(|r| r.kind == "topo");
    let a = Plan::resolve(&topo_only, Some(&t), &Options::default())
        .unwrap()
        .compute()
        .unwrap();
    assert!(
        a.threads[0].notes[0].contains("nothing to move"),
        "{:?}",
        a.threads[0].notes
    );
    // Pages remote and no matrix: it cannot be priced, and says so.
    let t = trace(false, 1);
    let a = Plan::resolve(&topo_only, Some(&t), &Options::default())
        .unwrap()
        .compute()
        .unwrap();
    assert!(
        a.threads[0].notes[0].contains("cannot price"),
        "{:?}",
        a.threads[0].notes
    );
}

/// Matrices for a real topology: 90 ns local, 120 within the package, 150 across.
fn real_survey(file: &str) -> Vec<Record> {
    let m = Host::load(&TopologySource::Xml(numalab_fixtures::topology(file)))
        .unwrap()
        .machine;
    let mut topo = Record::new("topo", "topology", prov(), json!({}));
    topo.data = Some(serde_json::to_value(&m).unwrap());
    let mut v = vec![topo];
    let pkg = |n: u32| m.pus.iter().find(|p| p.node == Some(n)).map(|p| p.package);
    for from in m.nodes.iter().filter(|n| !n.cpu_less) {
        let cpu = m.pus.iter().find(|p| p.node == Some(from.os)).unwrap().os;
        for to in &m.nodes {
            let (lat, bw) = if from.os == to.os {
                (90.0, 100.0)
            } else if pkg(from.os) == pkg(to.os) {
                (120.0, 60.0)
            } else {
                (150.0, 40.0)
            };
            v.push(cell("matrix-latency", "latency", "ns", cpu, to.os, lat));
            v.push(cell(
                "matrix-bandwidth",
                "bandwidth",
                "GB/s",
                cpu,
                to.os,
                bw,
            ));
        }
    }
    v
}

#[test]
fn a_real_four_node_two_package_topology_gets_the_same_answers() {
    let s = real_survey("128arm-2pa2n8cluster4co.xml");
    let a = advise(&s, &opts(4, "1G", "random", false));
    let b = best(&a);
    assert_eq!((&b.memory, b.latency_ns), (&Memory::Local, Some(90.0)));
    // Scatter over packages and over nodes are both offered (different CPUs).
    let layouts: Vec<&str> = a.placements.iter().map(|c| c.threads.as_str()).collect();
    assert!(
        layouts.contains(&"scatter:pkg") && layouts.contains(&"scatter:node"),
        "{layouts:?}"
    );
    // Memory on the other package costs the cross-package cell for a compact layout.
    let far = a
        .placements
        .iter()
        .find(|c| c.threads == "compact" && c.memory == Memory::Bind { node: 3 })
        .unwrap();
    assert_eq!(far.latency_ns, Some(150.0));
    // Every core streaming one shared footprint: interleaving all four nodes wins.
    let all = Host::load(&TopologySource::Xml(numalab_fixtures::topology(
        "128arm-2pa2n8cluster4co.xml",
    )))
    .unwrap()
    .machine
    .pus
    .len();
    let a = advise(&s, &opts(all, "64G", "stream", true));
    assert_eq!(
        best(&a).memory,
        Memory::Interleave {
            nodes: vec![0, 1, 2, 3]
        }
    );
}

#[test]
fn weighted_interleave_with_measured_weights_is_ranked_and_its_gain_predicted() {
    // Two threads on node 0 streaming their slices: node 0 gives them 100 GB/s, node 1
    // 40, so the measured weights are 10:4 and the model adds the two flows: 140 GB/s,
    // against 100 bound locally and 80 under plain interleave (half from the 40).
    let a = advise(&survey(false), &opts(2, "1G", "stream", false));
    let b = best(&a);
    let want = Memory::Weighted {
        nodes: vec![0, 1],
        weights: vec![10, 4],
    };
    assert_eq!((b.threads.as_str(), &b.memory), ("compact", &want));
    assert!((b.bandwidth_gbps.unwrap() - 140.0).abs() < 1e-9, "{b:?}");
    assert!(
        b.commands["sysfs"]
            .contains("echo 10 > /sys/kernel/mm/mempolicy/weighted_interleave/node0")
            && b.commands["sysfs"]
                .contains("echo 4 > /sys/kernel/mm/mempolicy/weighted_interleave/node1"),
        "{:?}",
        b.commands
    );
    assert!(b.commands["numactl"].contains("--weighted-interleave=0,1"));
    // The weights are set before the command that uses them.
    let recs = records(&a, &prov());
    for t in [text(&a, &recs), html(&recs).unwrap()] {
        let sys = t.find("echo 10 &gt;").or_else(|| t.find("echo 10 >"));
        let numactl = t.find("--weighted-interleave=0,1");
        assert!(sys.unwrap() < numactl.unwrap(), "{t}");
    }
    let plain = a
        .placements
        .iter()
        .find(|c| c.threads == "compact" && matches!(c.memory, Memory::Interleave { .. }))
        .unwrap();
    assert!(
        (plain.bandwidth_gbps.unwrap() - 80.0).abs() < 1e-9,
        "{plain:?}"
    );
    // Threads on both nodes: the summed bandwidths are equal, so the weights are
    // plain interleave's and the placement is not offered twice.
    assert!(!a
        .placements
        .iter()
        .any(|c| c.threads != "compact" && matches!(c.memory, Memory::Weighted { .. })));
    // The same model, asked for node 0's cores under weights 10:4, as tiers quotes it.
    let m = Measured::from_records(&survey(false)).unwrap();
    let g = weighted_gain(&m, 0, &[(0, 10), (1, 4)]).unwrap();
    assert!((g.weighted_gbps - 140.0).abs() < 1e-9, "{g:?}");
    assert_eq!(g.bind.0, 0);
    assert!((g.bind.1 - 100.0).abs() < 1e-9 && (g.interleave_gbps - 80.0).abs() < 1e-9);
    assert!((g.gain_percent() - 40.0).abs() < 1e-9);
    // Weights off the bandwidth ratio predict less: 1:1 is plain interleave.
    let even = weighted_gain(&m, 0, &[(0, 1), (1, 1)]).unwrap();
    assert!(even.weighted_gbps < g.weighted_gbps);
    // Latency-bound, the remote share costs: local stays first.
    let a = advise(&survey(false), &opts(2, "1G", "random", false));
    assert_eq!(best(&a).memory, Memory::Local);
}

/// A loaded-latency family of node 0, reads only: idle 90 ns, 100 ns at 50 GB/s, 180 at 100.
fn family() -> Vec<Record> {
    let point = |delay: Option<u64>, gbps: f64, lat: f64| {
        let mut r = Record::new(
            "loaded-latency",
            "point",
            prov(),
            json!({ "mem_node": "0", "traffic": "mix" }),
        );
        let loaded = delay.is_some();
        r.data = Some(json!({ "samples": {
            "delay": delay, "mix": loaded.then_some(json!({ "reads": 1, "writes": 0 })),
            "latency_ns": [lat], "injected_gbps": if loaded { vec![gbps] } else { vec![] },
            "issued_gbps": [], "read_share": [1.0],
            "chase_gbps": [if loaded { 0.0 } else { gbps }], "pins": [] } }));
        r
    };
    vec![
        point(None, 0.0, 90.0),
        point(Some(100), 50.0, 100.0),
        point(Some(0), 100.0, 180.0),
    ]
}

#[test]
fn a_streaming_placement_is_priced_at_the_latency_of_its_load() {
    let mut s = survey(false);
    let idle = advise(&s, &opts(4, "8G", "stream", true));
    assert_eq!(best(&idle).latency_ns, Some(120.0));
    assert!(idle.notes.iter().any(|n| n.contains("latency at idle")));
    s.extend(family());
    let a = advise(&s, &opts(4, "8G", "stream", true));
    let b = best(&a);
    assert_eq!(b.memory, Memory::Interleave { nodes: vec![0, 1] });
    // Node 0 serves 80 GB/s: 148 ns on its curve, 58 above idle; node 1 has no family.
    assert!((b.latency_ns.unwrap() - 149.0).abs() < 1e-9, "{b:?}");
    assert!(b
        .basis
        .iter()
        .any(|x| x.contains("family, memory node 0: +58.0 ns")));
    // Latency-bound work is priced at idle as before.
    let r = advise(&s, &opts(2, "1G", "random", false));
    assert_eq!(best(&r).latency_ns, Some(90.0));
}

#[test]
fn a_program_pasted_into_printed_lines_is_shell_quoted() {
    assert_eq!(super::shell_word("./app"), "./app");
    assert_eq!(super::shell_word("$(rm -rf ~); x"), "'$(rm -rf ~); x'");
    assert_eq!(super::shell_word("it's"), "'it'\\''s'");
    assert_eq!(super::shell_word(""), "''");
    assert_eq!(super::program(Some("a b".into()), None), "'a b'");
    assert_eq!(super::program(None, None), "PROGRAM");
}
