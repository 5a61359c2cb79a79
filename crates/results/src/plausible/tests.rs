use super::*;
use crate::provenance::Provenance;
use serde_json::{json, Value};

fn rec(kind: &str, name: &str, p: Value, stats: &[(&str, &[f64])]) -> Record {
    let mut r = Record::new(kind, name, Provenance::collect("test", "synthetic"), p);
    for (m, v) in stats {
        r.add_samples(m, "x", v);
    }
    r
}

fn topo() -> Record {
    let mut r = rec("topo", "topo", json!({}), &[]);
    r.data = Some(json!({"caches": [
        {"level": 1, "bytes": 32 << 10, "shared_by": 1},
        {"level": 2, "bytes": 1 << 20, "shared_by": 1},
        {"level": 3, "bytes": 32 << 20, "shared_by": 2},
    ]}));
    r
}

fn bw(kernel: &str, state: &str, size: u64, n: u64, gbps: f64) -> Record {
    let mut p = json!({"kernel": kernel, "state": state, "size_bytes": size, "requestors": n});
    let metric = if n > 1 {
        p["requestor_cpus"] = json!((0..n).collect::<Vec<u64>>());
        "aggregate_bandwidth"
    } else {
        "bandwidth"
    };
    rec(
        "bandwidth",
        kernel,
        p,
        &[(metric, &[gbps * 0.98, gbps, gbps * 1.02])],
    )
}

fn rules(records: &[Record]) -> Vec<&'static str> {
    check(records).iter().map(|f| f.rule).collect()
}

#[test]
fn two_threads_at_three_times_one_or_below_one_are_flagged_and_1_8_times_is_not() {
    let mem = 128 << 20;
    let good = [
        topo(),
        bw("readv", "warm", mem, 1, 10.0),
        bw("readv", "warm", mem / 2, 2, 18.0),
    ];
    assert!(check(&good).is_empty(), "{:?}", check(&good));
    let over = [
        topo(),
        bw("readv", "warm", mem, 1, 6.7),
        bw("readv", "warm", mem / 2, 2, 20.3),
    ];
    let f = check(&over);
    assert_eq!(rules(&over), ["bandwidth-scaling"]);
    // Both figures are named: either may be the disturbed one.
    assert_eq!(f[0].records.len(), 2);
    assert!(f[0].why.contains("3.0×"), "{}", f[0].why);
    assert!(flag_of(&f, &over[2], "aggregate_bandwidth").is_some());
    assert!(flag_of(&f, &over[1], "bandwidth").is_some());
    let under = [
        topo(),
        bw("readv", "warm", mem, 1, 10.0),
        bw("readv", "warm", mem / 2, 2, 8.0),
    ];
    assert_eq!(rules(&under), ["bandwidth-scaling"]);
    // 79.6 GB/s one thread from L3 against 22 GB/s two threads from memory: other
    // levels, no rule between them.
    let levels = [
        topo(),
        bw("readv", "warm", 8 << 20, 1, 79.6),
        bw("readv", "warm", mem, 2, 22.0),
    ];
    assert!(check(&levels).is_empty());
}

#[test]
fn n_threads_are_held_against_the_best_one_thread_figure_and_below_against_the_worst() {
    let mem = 128 << 20;
    // A quiet survey on a shared host: one thread read 11.4 in one step, 12.5 in
    // another; two threads 25.9 is 2.07× the best, which two threads can do.
    let drift = [
        topo(),
        bw("readv", "warm", mem, 1, 11.4),
        bw("readv", "warm", 2 * mem, 1, 12.5),
        bw("readv", "warm", mem / 2, 2, 25.9),
    ];
    assert!(check(&drift).is_empty(), "{:?}", check(&drift));
    // Past twice the best is flagged once (not once per one-thread figure), naming the
    // best.
    let mut over = drift.to_vec();
    over[3] = bw("readv", "warm", mem / 2, 2, 30.0);
    let f = check(&over);
    assert_eq!(rules(&over), ["bandwidth-scaling"]);
    assert!(f[0].why.contains("best 12.5 GB/s"), "{}", f[0].why);
    assert!(flag_of(&f, &over[2], "bandwidth").is_some());
    assert!(flag_of(&f, &over[1], "bandwidth").is_none());
    // Below one thread only when below every one-thread figure, naming the lowest.
    let mut low = drift.to_vec();
    low[3] = bw("readv", "warm", mem / 2, 2, 10.8);
    assert!(check(&low).is_empty(), "{:?}", check(&low));
    low[3] = bw("readv", "warm", mem / 2, 2, 9.0);
    let f = check(&low);
    assert_eq!(rules(&low), ["bandwidth-scaling"]);
    assert!(f[0].why.contains("lowest 11.4 GB/s"), "{}", f[0].why);
    assert!(flag_of(&f, &low[1], "bandwidth").is_some());
}

/// `r`'s figure settled as its best pass (best-of-N bandwidth), within `interval`.
fn best_of(mut r: Record, metric: &str, interval: [f64; 2]) -> Record {
    r.settle = Some(crate::record::Settle {
        figure: Some(crate::settle::Figure::Max),
        ..crate::record::Settle::new(metric, interval, None)
    });
    r
}

#[test]
fn bandwidth_rules_judge_the_settled_best_pass_not_the_median() {
    let mem = 128 << 20;
    let p = |n: u64| {
        let mut p = json!({"kernel": "readv", "state": "warm", "size_bytes": mem, "requestors": n});
        if n > 1 {
            p["requestor_cpus"] = json!([0, 1]);
        }
        p
    };
    // One thread's passes 5, 6, 10 (a disturbed pair); two threads' 17, 18, 19: 3× one
    // thread's median, 1.9× its best pass.
    let one = rec(
        "bandwidth",
        "readv",
        p(1),
        &[("bandwidth", &[5.0, 6.0, 10.0])],
    );
    let two = rec(
        "bandwidth",
        "readv",
        p(2),
        &[("aggregate_bandwidth", &[17.0, 18.0, 19.0])],
    );
    // Without a settled statistic the figure is the median: flagged.
    let medians = [topo(), one.clone(), two.clone()];
    assert_eq!(rules(&medians), ["bandwidth-scaling"]);
    // Settled best-of-N, the figures the cards state are 10 and 19: they fit.
    let best = [
        topo(),
        best_of(one, "bandwidth", [6.0, 10.0]),
        best_of(two, "aggregate_bandwidth", [18.0, 19.0]),
    ];
    assert!(check(&best).is_empty(), "{:?}", check(&best));
}

#[test]
fn rdex_of_flushed_lines_faster_than_reads_from_memory_is_flagged() {
    let reads = [topo(), bw("read", "warm", 128 << 20, 1, 17.0)];
    let mut bad = reads.to_vec();
    bad.push(bw("rdex", "uown", 512 << 10, 1, 37.0));
    assert_eq!(rules(&bad), ["write-faster-than-read"]);
    let f = check(&bad);
    assert!(f[0].why.contains("37.0"));
    assert!(
        flag_of(&f, &bad[2], "bandwidth").is_some() && flag_of(&f, &bad[1], "bandwidth").is_some()
    );
    let mut ok = reads.to_vec();
    ok.push(bw("rdex", "uown", 512 << 10, 1, 12.0));
    ok.push(bw("zero", "warm", 128 << 20, 1, 17.5));
    assert!(check(&ok).is_empty(), "{:?}", check(&ok));
}

fn loaded(name: &str, injectors: u64, mix: &str, inj: f64, lat: &[f64]) -> Record {
    let p = json!({"mem_node": "0", "requestor_cpu": 0, "injectors": injectors, "mix": mix, "write_pct": 0});
    if injectors == 0 {
        rec("loaded-latency", name, p, &[("latency", lat)])
    } else {
        rec(
            "loaded-latency",
            name,
            p,
            &[("latency", lat), ("injected_bandwidth", &[inj; 3])],
        )
    }
}

#[test]
fn loaded_below_unloaded_is_flagged_and_above_is_not() {
    let unloaded = loaded("unloaded", 0, "", 0.0, &[320.0, 324.0, 330.0]);
    let low = loaded("delay 10", 1, "1:0", 5.0, &[180.0, 188.0, 190.0]);
    let f = check(&[unloaded.clone(), low.clone()]);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].rule, "loaded-below-unloaded");
    assert!(
        f[0].why.contains("188.0") && f[0].why.contains("324.0"),
        "{}",
        f[0].why
    );
    let high = loaded("delay 10", 1, "1:0", 5.0, &[340.0, 350.0, 360.0]);
    assert!(check(&[unloaded, high]).is_empty());
}

fn sweep(plateaus: Value) -> Record {
    let mut r = rec("latency-sweep", "sweep", json!({"kernel": "read"}), &[]);
    r.data = Some(json!({ "plateaus": plateaus }));
    r
}

fn plateau(level: &str, from: u64, to: u64, ns: f64) -> Value {
    json!({"level": level, "from_bytes": from, "to_bytes": to, "median_ns": ns, "topology_bytes": null})
}

#[test]
fn a_loaded_point_below_the_sweeps_memory_plateau_is_flagged() {
    let s = sweep(json!([
        plateau("L1", 4096, 32768, 1.1),
        plateau("memory", 64 << 20, 256 << 20, 188.0)
    ]));
    let p = loaded("delay 0", 1, "1:0", 8.0, &[150.0, 160.0, 170.0]);
    assert_eq!(rules(&[s.clone(), p]), ["loaded-below-unloaded"]);
    let p = loaded("delay 0", 1, "1:0", 8.0, &[190.0, 200.0, 210.0]);
    assert!(rules(&[s, p]).is_empty());
}

#[test]
fn a_curve_that_falls_beyond_its_intervals_is_flagged_and_within_them_is_not() {
    let light = loaded("50 %", 1, "1:0", 2.0, &[510.0, 518.8, 525.0]);
    let heavy = loaded("90 %", 1, "1:0", 4.0, &[450.0, 457.3, 465.0]);
    let f = check(&[light.clone(), heavy.clone()]);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].rule, "loaded-curve-falls");
    assert!(flag_of(&f, &heavy, "latency").is_some() && flag_of(&f, &light, "latency").is_some());
    // Overlapping intervals: noise, not a fall.
    let noisy = loaded("90 %", 1, "1:0", 4.0, &[430.0, 457.3, 515.0]);
    assert!(check(&[light.clone(), noisy]).is_empty());
    // Another mix is another curve.
    let other = loaded("90 % writes", 1, "0:1", 4.0, &[450.0, 457.3, 465.0]);
    assert!(check(&[light, other]).is_empty());
}

#[test]
fn a_light_load_reading_a_few_percent_below_a_lighter_one_is_not_a_fall() {
    // A quiet guest's curve: 0.37 GB/s read 140–145.7 ns against 153.6–158.1 ns at
    // 0.03 GB/s (light traffic wakes the fabric); disjoint, but 6 % apart: not flagged.
    let idle_ish = loaded("delay 5000", 1, "1:1", 0.03, &[153.6, 153.7, 158.1]);
    let light = loaded("delay 400", 1, "1:1", 0.37, &[140.0, 144.0, 145.7]);
    assert!(check(&[idle_ish.clone(), light]).is_empty());
    // 15 % below with disjoint intervals is a fall.
    let fell = loaded("delay 400", 1, "1:1", 0.37, &[128.0, 130.0, 132.0]);
    assert_eq!(rules(&[idle_ish, fell]), ["loaded-curve-falls"]);
}

#[test]
fn a_level_faster_than_the_one_above_or_a_cache_slower_than_memory_is_flagged() {
    let good = sweep(json!([
        plateau("L1", 4096, 32768, 1.1),
        plateau("L2", 49152, 393216, 3.8),
        plateau("L3", 1 << 20, 16 << 20, 11.0),
        plateau("memory", 64 << 20, 256 << 20, 96.0),
    ]));
    assert!(check(&[topo(), good]).is_empty());
    let inverted = sweep(json!([
        plateau("L1", 4096, 32768, 1.1),
        plateau("L2", 49152, 393216, 3.8),
        plateau("L3", 1 << 20, 16 << 20, 120.0),
        plateau("memory", 64 << 20, 256 << 20, 96.0),
    ]));
    let f = check(&[topo(), inverted.clone()]);
    assert_eq!(
        rules(&[topo(), inverted.clone()]),
        ["level-order", "level-order"],
        "{f:?}"
    );
    assert!(f
        .iter()
        .all(|f| f.records[0].metric == "plateau L3" || f.records[0].metric == "plateau memory"));
    assert!(flag_of(&f, &inverted, "plateau L3").is_some());
}

#[test]
fn a_plateau_past_its_cache_is_flagged() {
    // The sweep: "unmatched, within L3" over 8–64 MiB with a 32 MiB L3.
    let wide = sweep(json!([
        plateau("L2", 49152, 393216, 3.8),
        plateau("unmatched, within L3", 8 << 20, 64 << 20, 101.0),
        plateau("memory", 96 << 20, 256 << 20, 110.0),
    ]));
    let f = check(&[topo(), wide]);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].rule, "plateau-span");
    assert!(
        f[0].why.contains("64 MiB") && f[0].why.contains("32 MiB"),
        "{}",
        f[0].why
    );
    let fits = sweep(json!([
        plateau("L2", 49152, 393216, 3.8),
        plateau("L3", 1 << 20, 32 << 20, 11.0),
        plateau("memory", 64 << 20, 256 << 20, 110.0),
    ]));
    assert!(check(&[topo(), fits]).is_empty());
}

#[test]
fn flags_render_with_their_rule() {
    let over = [
        topo(),
        bw("readv", "warm", 1 << 30, 1, 6.7),
        bw("readv", "warm", 1 << 29, 2, 20.3),
    ];
    let f = check(&over);
    assert!(
        text(&f).contains("rule bandwidth-scaling: 2 threads"),
        "{}",
        text(&f)
    );
    assert!(html(&f).contains("<code>bandwidth-scaling</code>"));
    assert!(text(&[]).is_empty() && html(&[]).is_empty());
}

fn held(state: &str, ns: f64, own: f64) -> Record {
    let p = json!({"state": state, "size_bytes": 512 << 10, "helper_cpus": [1]});
    rec(
        "latency",
        &format!("{state} 512 KiB"),
        p,
        &[
            ("latency", &[ns * 0.99, ns, ns * 1.01]),
            ("latency_cycles", &[ns * 2.9, ns * 3.0, ns * 3.1]),
            ("own_cache_reference", &[own * 0.99, own, own * 1.01]),
        ],
    )
}

#[test]
fn a_held_line_read_as_fast_as_the_requestors_own_cache_is_flagged() {
    // The guest's dexd at 5.6 ns against its own-cache 6.0 ns (the host ran the two
    // vCPUs on SMT siblings), and its usual 85 ns.
    let shared = [held("dexd", 5.6, 6.0)];
    let f = check(&shared);
    assert_eq!(rules(&shared), ["held-as-own-cache"]);
    assert!(flag_of(&f, &shared[0], "latency").is_some());
    assert!(flag_of(&f, &shared[0], "latency_cycles").is_some());
    assert!(flag_of(&f, &shared[0], "own_cache_reference").is_none());
    assert!(
        f[0].why.contains("5.6 ns") && f[0].why.contains("dexd"),
        "{}",
        f[0].why
    );
    assert!(check(&[held("dexd", 85.0, 6.0)]).is_empty());
    // Just past the factor is a line from another core, however close.
    assert!(check(&[held("cexh", 6.0 * HELD_OWN_CACHE_FACTOR * 1.05, 6.0)]).is_empty());
    // A latency record without the reference (warm, uown) is not judged.
    let warm = rec(
        "latency",
        "warm",
        json!({"state": "warm"}),
        &[("latency", &[5.0])],
    );
    assert!(check(&[warm]).is_empty());
}
