use super::*;
use numalab_results::Provenance;
use serde_json::json;

fn rec(kind: &str, p: serde_json::Value, metric: &str, v: &[f64]) -> Record {
    let mut r = Record::new(kind, kind, Provenance::collect("test", "synthetic"), p);
    r.add_samples(metric, "x", v);
    r
}

fn loaded(node: &str, injectors: u64, bw: f64, ns: f64) -> Record {
    let p = json!({"mem_node": node, "injectors": injectors, "write_pct": 0});
    let mut r = rec("loaded-latency", p, "latency", &[ns, ns, ns]);
    r.add_samples("injected_bandwidth", "GB/s", &[bw, bw, bw]);
    r
}

#[test]
fn each_node_gets_its_own_figures_and_unsettled_ones_are_not_answers() {
    let mut records = vec![
        loaded("0", 0, 0.0, 90.0),
        loaded("0", 1, 5.0, 120.0),
        loaded("0", 1, 0.06, 95.0),
        loaded("1", 0, 0.0, 150.0),
        rec(
            "bandwidth-mix",
            json!({"mix": "3:1", "store": "regular", "nodes": [1], "requestors": 2}),
            "bandwidth",
            &[20.0, 21.0, 22.0],
        ),
        rec("c2c", json!({}), "cas_rtt_half", &[40.0]),
        rec("c2c", json!({}), "cas_rtt_half", &[60.0]),
        rec("c2c", json!({}), "cas_rtt_half", &[80.0]),
    ];
    let n = nodes(&records);
    assert_eq!(n.len(), 2);
    assert_eq!(n[0].idle_ns.map(|x| x.0), Some(90.0));
    assert_eq!(n[0].curve, vec![(0.0, 90.0), (0.06, 95.0), (5.0, 120.0)]);
    assert_eq!(n[1].idle_ns.map(|x| x.0), Some(150.0));
    assert_eq!(n[1].mixes[1], Some(21.0));
    assert_eq!(n[0].mixes[1], None);
    assert_eq!(c2c_range(&records), Some((40.0, 60.0, 80.0, 3)));
    let b = AnswerPresenter.answer(&records).unwrap();
    assert!(
        b.html.contains("<svg") && b.html.contains("node 1"),
        "{}",
        b.html
    );
    assert!(
        b.text.contains("min 40.0 ns, median 60.0 ns, max 80.0 ns"),
        "{}",
        b.text
    );
    assert!(b.text.contains("90.0 → 120 ns at 5.0 GB/s"), "{}", b.text);
    // An unsettled node-1 point is not an answer: the registry never hands it over.
    records[3].settle = Some(numalab_results::record::Settle {
        tolerance_pct: 5.0,
        ..numalab_results::record::Settle::new("latency", [100.0, 300.0], Some("busy"))
    });
    let kept = numalab_results::summary::answers(&records);
    assert_eq!(nodes(&kept)[1].idle_ns, None);
    // Node 1's unowned chase, where no unloaded point is an answer, is its idle latency;
    // node 0's unloaded point stays its own.
    let mut kept = kept;
    for n in [0, 1] {
        let mut u = rec(
            "latency",
            json!({"state": "uown"}),
            "latency",
            &[140.0 + n as f64; 3],
        );
        u.placement = Some(json!({"resolved": {"memory": {"nodes": [n]}}}));
        kept.push(u);
    }
    let n = nodes(&kept);
    assert_eq!(n[0].idle_ns.map(|x| x.0), Some(90.0));
    assert_eq!(
        n[1].idle_ns,
        Some((141.0, "a chase of unowned lines, flushed from every cache"))
    );
}

#[test]
fn figures_keep_the_precision_they_need() {
    assert_eq!(render::fig(0.06), "0.060");
    assert_eq!(render::fig(0.25), "0.25");
    assert_eq!(render::fig(13.94), "13.9");
    assert_eq!(render::fig(187.9), "188");
    assert!(render::sparkline(&[(0.0, 1.0)]).is_none());
}
