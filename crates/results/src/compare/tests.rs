use super::*;
use crate::disturb::Disturbance;
use crate::disturb::{PassMark, Rules, DATA_KEY};
use crate::provenance::Provenance;
use crate::record::Settle;
use serde_json::json;

fn rec(name: &str, metric: &str, v: &[f64]) -> Record {
    let mut r = Record::new(
        "latency",
        name,
        Provenance::collect("test", "none"),
        json!({}),
    );
    r.add_samples(metric, "ns", v);
    r
}

fn tight(m: f64) -> [f64; 5] {
    [m * 0.99, m, m * 1.01, m * 0.995, m * 1.005]
}

fn change<'a>(c: &'a Comparison, name: &str) -> &'a str {
    &c.rows.iter().find(|r| r.name == name).unwrap().change
}

#[test]
fn a_2x_move_is_beyond_overlap_or_a_small_move_is_within_and_sorted_first() {
    let wide = |m: f64| [m * 0.7, m * 0.85, m, m * 1.15, m * 1.3];
    let a = vec![
        rec("steady", "latency", &wide(100.0)),
        rec("moved", "latency", &tight(100.0)),
        rec("nudged", "latency", &tight(100.0)),
    ];
    let b = vec![
        rec("steady", "latency", &wide(103.0)),
        rec("moved", "latency", &tight(200.0)),
        // 5 %: the intervals miss each other, but the move is under MIN_EFFECT.
        rec("nudged", "latency", &tight(105.0)),
    ];
    let c = compare(&a, &b, false);
    assert_eq!(
        (c.rows[0].name.as_str(), c.rows[0].change.as_str()),
        ("moved", "beyond")
    );
    assert_eq!(change(&c, "steady"), "within");
    assert_eq!(change(&c, "nudged"), "within");
    // The rule is symmetric: a 2× slowdown read the other way is beyond too.
    assert_eq!(change(&compare(&b, &a, false), "moved"), "beyond");
    let j = serde_json::to_value(&c.rows).unwrap();
    assert_eq!(j[0]["change"], "beyond");
    assert!(text_rows(&c.rows)[1].contains(&"within".to_string()));
}

#[test]
fn unsettled_implausible_few_and_disturbed_figures_are_not_comparable_never_beyond() {
    let mut unsettled = rec("unsettled", "latency", &tight(200.0));
    unsettled.settle = Some(Settle {
        passes: 20,
        tolerance_pct: 5.0,
        budget_ms: 500.0,
        ..Settle::new("latency", [150.0, 250.0], Some("machine busy"))
    });
    let mut disturbed = rec("disturbed", "latency", &tight(200.0));
    let mark = PassMark {
        attempt: 0,
        disturbed: true,
        used: true,
        counts: Disturbance::default(),
    };
    let log = PassLog {
        rules: Rules::default(),
        passes: vec![mark; 5],
    };
    disturbed.set_data(&json!({ DATA_KEY: log }));
    let a = vec![
        rec("unsettled", "latency", &tight(100.0)),
        rec("few", "latency", &[100.0, 100.0]),
        rec("disturbed", "latency", &tight(100.0)),
    ];
    let b = vec![unsettled, rec("few", "latency", &[200.0, 200.0]), disturbed];
    let c = compare(&a, &b, false);
    assert_eq!(change(&c, "unsettled"), "not comparable (B unsettled)");
    assert_eq!(change(&c, "few"), "not comparable (A 2 samples)");
    assert_eq!(
        change(&c, "disturbed"),
        "not comparable (B mostly disturbed passes)"
    );
    assert_eq!(
        c.rows
            .iter()
            .find(|r| r.name == "disturbed")
            .unwrap()
            .disturbed
            .1,
        "5 of 5"
    );
    assert!(
        verdict(&c)
            .starts_with("0 of 0 comparable figures changed beyond their spread; 3 not comparable"),
        "{}",
        verdict(&c)
    );
}

fn bw(n: u64, gbps: f64) -> Record {
    let mut p =
        json!({"kernel": "readv", "state": "warm", "size_bytes": 1u64 << 30, "requestors": n});
    let metric = if n > 1 {
        p["requestor_cpus"] = json!([0, 1]);
        "aggregate_bandwidth"
    } else {
        "bandwidth"
    };
    let mut r = Record::new(
        "bandwidth",
        &format!("readv {n}"),
        Provenance::collect("t", "none"),
        p,
    );
    r.add_samples(metric, "GB/s", &tight(gbps));
    r.add_samples("traffic", "GB/s", &tight(gbps));
    r
}

#[test]
fn a_figure_breaking_a_plausibility_rule_is_not_comparable() {
    let a = vec![bw(1, 10.0), bw(2, 18.0)];
    // B's two threads read 6.5× one thread: both figures broke the scaling rule.
    let b = vec![bw(1, 6.1), bw(2, 39.6)];
    let c = compare(&a, &b, false);
    assert_eq!(
        c.rows.len(),
        2,
        "traffic is a derived duplicate: {:?}",
        c.rows
    );
    assert!(
        c.rows
            .iter()
            .all(|r| r.change == "not comparable (B implausible, rule bandwidth-scaling)"),
        "{:?}",
        c.rows
    );
}

#[test]
fn derived_duplicates_are_dropped_unless_all_metrics() {
    let mut a = rec("x", "latency", &tight(100.0));
    a.add_samples("latency_tsc", "cycles", &tight(260.0));
    let mut b = rec("x", "latency", &tight(100.0));
    b.add_samples("latency_tsc", "cycles", &tight(261.0));
    let c = compare(std::slice::from_ref(&a), std::slice::from_ref(&b), false);
    assert_eq!(c.rows.len(), 1);
    assert_eq!((c.only_a, c.only_b), (0, 0));
    let c = compare(&[a], &[b], true);
    assert_eq!(c.rows.len(), 2);
}

#[test]
fn a_reference_metric_is_dropped_unless_all_metrics() {
    let mut a = rec("x", "latency", &tight(30.0));
    a.add_samples("own_cache_reference", "ns", &tight(12.0));
    let mut b = rec("x", "latency", &tight(30.0));
    b.add_samples("own_cache_reference", "ns", &tight(66.0));
    let c = compare(std::slice::from_ref(&a), std::slice::from_ref(&b), false);
    assert_eq!(c.rows.len(), 1, "{:?}", c.rows);
    let c = compare(&[a], &[b], true);
    assert_eq!(c.rows.len(), 2);
}

#[test]
fn the_verdict_counts_and_names_what_moved() {
    let a = vec![
        rec("moved", "latency", &tight(100.0)),
        rec("same", "latency", &tight(50.0)),
        rec("only-a", "latency", &tight(1.0)),
    ];
    let b = vec![
        rec("moved", "latency", &tight(150.0)),
        rec("same", "latency", &tight(50.2)),
    ];
    let c = compare(&a, &b, false);
    assert_eq!(
        verdict(&c),
        "1 of 2 comparable figures changed beyond their spread (50.0 %): latency moved latency +50 %; too few figures to measure this pair's scatter, so intervals alone decide; 0 not comparable; 1 only in A, 0 only in B"
    );
    let h = html(&c, "a", "b", &[], &[]);
    assert!(h.contains("1 of 2 comparable figures") && h.contains("intervals (settled"));
}

#[test]
fn identical_records_never_differ() {
    let a = vec![rec("x", "latency", &tight(100.0)), bw(1, 10.0)];
    let c = compare(&a, &a, false);
    assert!(c.rows.iter().all(|r| r.change == "within"), "{:?}", c.rows);
}

#[test]
fn huge_ratios_are_short_and_a_figure_repeated_in_b_is_not_only_in_b() {
    assert_eq!(ratio_text(1e308), "1.000e308");
    assert_eq!(ratio_text(1.5), "1.500");
    assert_eq!(ratio_text(1e-9), "1.000e-9");
    let a = vec![rec("x", "latency", &[10.0, 10.0, 10.0])];
    let b = vec![
        rec("x", "latency", &[11.0, 11.0, 11.0]),
        rec("x", "latency", &[12.0, 12.0, 12.0]),
        rec("y", "latency", &[1.0, 1.0, 1.0]),
    ];
    let c = compare(&a, &b, false);
    assert_eq!((c.rows.len(), c.only_a, c.only_b), (1, 0, 1));
    assert_eq!(c.duplicates, (0, 1));
    assert!(
        verdict(&c).contains("0 repeated in A and 1 in B"),
        "{}",
        verdict(&c)
    );
}

#[test]
fn one_cpus_share_of_a_concurrent_stream_is_not_comparable_but_the_aggregate_is() {
    let share = |gbps: f64| {
        let p = json!({"kernel": "readv", "requestors": 16, "requestor_cpu": 10});
        let mut r = Record::new(
            "bandwidth",
            "readv cpu10",
            Provenance::collect("t", "none"),
            p,
        );
        r.add_samples("bandwidth", "GB/s", &tight(gbps));
        r
    };
    // The share halves between runs while the aggregate holds: only the share is
    // excused, and a moved aggregate is still beyond.
    let a = vec![share(11.3), bw(16, 160.0)];
    let b = vec![share(6.2), bw(16, 100.0)];
    let c = compare(&a, &b, false);
    assert!(
        change(&c, "readv cpu10").starts_with("not comparable (A one CPU's share of 16"),
        "{}",
        change(&c, "readv cpu10")
    );
    assert_eq!(change(&c, "readv 16"), "beyond");
    // A single-requestor figure naming its CPU is compared as before.
    let solo = |gbps: f64| {
        let p = json!({"kernel": "readv", "requestors": 1, "requestor_cpu": 0});
        let mut r = Record::new(
            "bandwidth",
            "readv cpu0",
            Provenance::collect("t", "none"),
            p,
        );
        r.add_samples("bandwidth", "GB/s", &tight(gbps));
        r
    };
    let c = compare(&[solo(11.3)], &[solo(6.2)], false);
    assert_eq!(change(&c, "readv cpu0"), "beyond");
}

#[test]
fn a_two_cpu_figure_whose_cpus_moved_apart_is_not_comparable_never_beyond() {
    use crate::distance::{attach, CpuDistance};
    let at = |name: &str, ns: f64, rtt: f64| {
        let mut r = rec(name, "latency", &tight(ns));
        attach(
            &mut r,
            &[CpuDistance {
                cpus: [0, 1],
                rtt_ns: rtt,
                samples: 9,
                round_trips: 100,
            }],
        );
        r
    };
    // The helper-held line took 41 ns with the vCPUs 2 L3s apart, 17 ns as siblings.
    let a = vec![at("cexm", 41.0, 120.0), at("same place", 41.0, 100.0)];
    let b = vec![at("cexm", 17.0, 30.0), at("same place", 17.0, 110.0)];
    let c = compare(&a, &b, false);
    assert_eq!(
        change(&c, "cexm"),
        "not comparable (the two CPUs (0, 1) were 120 ns apart in A, 30 ns in B)"
    );
    // Placed alike (100 and 110 ns): the move is the figure's own, and beyond.
    assert_eq!(change(&c, "same place"), "beyond");
    // Unsettled or implausible still speak first.
    let mut u = at("cexm", 17.0, 30.0);
    u.settle = Some(Settle {
        settled: false,
        tolerance_pct: 5.0,
        ..Settle::new("latency", [10.0, 30.0], None)
    });
    let c = compare(&a[..1], &[u], false);
    assert_eq!(change(&c, "cexm"), "not comparable (B unsettled)");
}

#[test]
fn a_stream_on_two_cpus_that_moved_apart_is_not_comparable_never_beyond() {
    use crate::distance::{attach, CpuDistance};
    let on = |r: Record, rtt: f64| {
        let mut r = r;
        let d = CpuDistance {
            cpus: [0, 1],
            rtt_ns: rtt,
            samples: 9,
            round_trips: 100,
        };
        attach(&mut r, &[d]);
        r
    };
    let mix = |gbps: f64| {
        let p =
            json!({"kernel": "r1w1", "requestors": 2, "requestor_cpus": [0, 1], "read_share": 0.5});
        let mut r = Record::new(
            "bandwidth-mix",
            "mix r1w1 node 0 x2",
            Provenance::collect("t", "none"),
            p,
        );
        r.add_samples("bandwidth", "GB/s", &tight(gbps));
        r
    };
    // Two vCPUs as threads of one host core stream 9 GB/s together, on two cores 16:
    // the pair moved (52 → 215 ns), not the memory.
    let a = vec![on(bw(2, 9.0), 52.0), on(mix(6.0), 52.0)];
    let b = vec![on(bw(2, 16.0), 215.0), on(mix(11.0), 215.0)];
    let c = compare(&a, &b, false);
    for name in ["readv 2", "mix r1w1 node 0 x2"] {
        assert_eq!(
            change(&c, name),
            "not comparable (the two CPUs (0, 1) were 52 ns apart in A, 215 ns in B)",
            "{name}"
        );
    }
    // The same distance in both: the stream's move is its own, and beyond.
    let b = vec![on(bw(2, 16.0), 55.0), on(mix(11.0), 50.0)];
    let c = compare(&a, &b, false);
    assert_eq!(change(&c, "readv 2"), "beyond");
    assert_eq!(change(&c, "mix r1w1 node 0 x2"), "beyond");
}

#[test]
fn a_plateau_over_other_sizes_in_a_and_b_is_not_comparable_and_over_the_same_is() {
    let sweep = |l2: f64, mem: f64, mem_from: u64, mem_to: u64| {
        let mut r = Record::new(
            "latency-sweep",
            "read warm sweep cpu0",
            Provenance::collect("t", "none"),
            json!({"kernel": "read", "sizes": [4096, 8192]}),
        );
        r.add_samples("plateau L2", "ns", &tight(l2));
        r.add_samples("plateau memory", "ns", &tight(mem));
        r.data = Some(json!({"plateaus": [
            {"level": "L2", "from_bytes": 65536, "to_bytes": 262144},
            {"level": "memory", "from_bytes": mem_from, "to_bytes": mem_to},
        ]}));
        r
    };
    // The VM's pair: memory over 6–32 MiB at 247 ns, then over 8–48 MiB at 475 ns.
    let a = [sweep(3.8, 247.0, 6 << 20, 32 << 20)];
    let b = [sweep(5.0, 475.0, 8 << 20, 48 << 20)];
    let c = compare(&a, &b, false);
    let of = |m: &str| &c.rows.iter().find(|r| r.metric == m).unwrap().change;
    assert_eq!(
        of("plateau memory"),
        "not comparable (the plateau spans 6 MiB–32 MiB in A, 8 MiB–48 MiB in B: other sizes' minima)"
    );
    // The L2 plateau spans the same sizes: its move is its own.
    assert_eq!(of("plateau L2"), "beyond");
    // A sweep without plateau data (an older file) is compared as before.
    let mut old = sweep(5.0, 475.0, 0, 0);
    old.data = None;
    let c = compare(&a, &[old], false);
    assert!(c.rows.iter().all(|r| r.change == "beyond"), "{:?}", c.rows);
}

#[test]
fn figures_in_a_cores_own_caches_are_judged_apart_from_shared_ones_and_the_verdict_says_both() {
    let topo = || {
        let mut t = Record::new(
            "topo",
            "topology",
            Provenance::collect("t", "none"),
            json!({}),
        );
        t.data = Some(json!({"caches": [
            {"level": 1, "bytes": 49152, "shared_by": 1},
            {"level": 2, "bytes": 2097152, "shared_by": 1},
            {"level": 3, "bytes": 272629760, "shared_by": 2},
        ]}));
        t
    };
    let point = |i: usize, size: u64, m: f64| {
        let mut r = rec(&format!("read warm {i} {size}"), "latency", &tight(m));
        r.parameters = json!({"state": "warm", "size_bytes": size, "helper_cpus": []});
        r
    };
    let (mut a, mut b) = (vec![topo()], vec![topo()]);
    for i in 0..12 {
        let x = i as f64 / 11.0 * 2.0 - 1.0;
        a.push(point(i, 64 << 10, 10.0));
        b.push(point(i, 64 << 10, 10.0 * (1.0 + 0.02 * x)));
        a.push(point(i, 64 << 20, 100.0));
        b.push(point(i, 64 << 20, 100.0 * (1.0 + 0.3 * x)));
    }
    let c = compare(&a, &b, false);
    let scopes: Vec<Scope> = c.rows.iter().map(|r| r.scope).collect();
    assert_eq!(scopes.iter().filter(|s| **s == Scope::Core).count(), 12);
    // Each scope's own scatter: ±2 % is under the least effect, ±30 % is wider.
    let v = verdict(&c);
    assert!(
        v.contains("×1.10 from its kind's median for a core's own caches, ×")
            && v.contains(" for shared caches, memory latency and several CPUs"),
        "{v}"
    );
    assert!(c.rows.iter().all(|r| r.change != "beyond"), "{:?}", c.rows);
}

#[test]
fn a_best_of_n_figure_is_compared_by_its_best_pass_not_its_median() {
    use crate::settle::Figure;
    let best = |name: &str, gbps: &[f64], figure| {
        let mut r = rec(name, "bandwidth", gbps);
        let mut top: Vec<f64> = gbps.to_vec();
        top.sort_by(f64::total_cmp);
        r.settle = Some(Settle {
            settled: true,
            metric: "bandwidth".into(),
            passes: gbps.len() as u32,
            interval: [top[top.len() - 3], top[top.len() - 1]],
            tolerance_pct: 10.0,
            budget_ms: 100.0,
            why: None,
            figure,
        });
        r
    };
    // The same best passes (18.8 and 18.9 GB/s), though B had two slow ones.
    let a_passes = [18.8, 18.6, 18.7, 18.5, 18.4];
    let b_passes = [18.9, 18.7, 18.8, 9.0, 9.1];
    let a = vec![best("mix", &a_passes, Some(Figure::Max))];
    let b = vec![best("mix", &b_passes, Some(Figure::Max))];
    let c = compare(&a, &b, false);
    let r = &c.rows[0];
    assert_eq!((r.a, r.b), (18.8, 18.9));
    assert_eq!(r.change, "within");
    // Records from before the field: their medians, as then (18.6 against 18.7).
    let a = vec![best("mix", &a_passes, None)];
    let b = vec![best("mix", &b_passes, None)];
    let c = compare(&a, &b, false);
    assert_eq!((c.rows[0].a, c.rows[0].b), (18.6, 18.7));
}

#[test]
fn a_figure_the_other_runs_own_passes_reached_is_within_not_beyond() {
    // A line another CPU held, read over 17 passes in two stretches (in the helper's
    // cache, then written back): its median's interval is narrow, its passes are not.
    let mut stretches: Vec<f64> = (0..9).map(|i| 15.0 + 0.2 * i as f64).collect();
    stretches.extend([30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 35.5, 35.8]);
    let a = vec![
        rec("stretches", "latency", &stretches),
        rec("tight", "latency", &tight(16.6)),
    ];
    let b = vec![
        rec("stretches", "latency", &tight(32.7)),
        rec("tight", "latency", &tight(32.7)),
    ];
    let c = compare(&a, &b, false);
    let row = |n: &str| c.rows.iter().find(|r| r.name == n).unwrap();
    // The intervals are apart, and B's figure lies within A's passes.
    let s = row("stretches");
    assert!(s.a_interval.1 < s.b_interval.0, "{s:?}");
    assert_eq!(
        s.change,
        "within (A's own passes reached B's figure: 15.0–35.8 ns over 17 passes)"
    );
    // Tight passes keep the tight bar.
    assert_eq!(row("tight").change, "beyond");
    // Read the other way, B's passes reach A's figure.
    let c = compare(&b, &a, false);
    let s = c.rows.iter().find(|r| r.name == "stretches").unwrap();
    assert!(
        s.change
            .starts_with("within (B's own passes reached A's figure"),
        "{s:?}"
    );
}
