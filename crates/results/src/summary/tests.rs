use super::*;

fn lat(group: Group, title: &str, v: f64, section: &str) -> Card {
    Card::one(group, title, Figure::new("latency", v, "ns", 1, section))
}

fn machine() -> Vec<Card> {
    let mut l1 = lat(Group::Hierarchy, "L1", 1.5, "hierarchy");
    l1.figures[0].spread = Spread::range(&[1.4, 1.5, 1.7], "sizes");
    let mem_bw = Card {
        group: Group::Hierarchy,
        title: "memory".into(),
        detail: None,
        figures: vec![
            Figure::new("read, 1 core", 10.0, "GB/s", 1, "bandwidth"),
            Figure::new("read, 4 cores", 30.0, "GB/s", 1, "bandwidth"),
        ],
        remark: None,
    };
    let mut remote = lat(Group::Memory, "1 hop", 150.0, "matrix");
    remote
        .figures
        .push(Figure::new("bandwidth", 40.0, "GB/s", 1, "matrix"));
    let mut local = lat(Group::Memory, "local", 90.0, "matrix");
    local
        .figures
        .push(Figure::new("bandwidth", 100.0, "GB/s", 1, "matrix"));
    let mut fast = Card::one(
        Group::Cores,
        "fastest pair",
        Figure::new("CAS round trip / 2", 40.0, "ns", 1, "c2c"),
    );
    fast.detail = Some("CPU 0 ↔ 1".into());
    vec![
        mem_bw,
        l1,
        remote,
        lat(Group::Hierarchy, "L2", 4.8, "hierarchy"),
        lat(Group::Hierarchy, "memory", 90.0, "hierarchy"),
        local,
        fast,
    ]
}

#[test]
fn merge_joins_a_levels_figures_and_orders_groups() {
    let m = merge(machine());
    let titles: Vec<(Group, &str)> = m.iter().map(|c| (c.group, c.title.as_str())).collect();
    assert_eq!(
        titles,
        vec![
            (Group::Hierarchy, "memory"),
            (Group::Hierarchy, "L1"),
            (Group::Hierarchy, "L2"),
            (Group::Memory, "1 hop"),
            (Group::Memory, "local"),
            (Group::Cores, "fastest pair"),
        ]
    );
    let mem = &m[0];
    assert_eq!(mem.figures.len(), 3);
    assert_eq!(mem.figure("latency").unwrap().value, 90.0);
}

#[test]
fn the_paragraph_states_ratios_from_the_figures() {
    let mut cards = merge(machine());
    // Hierarchy order as a presenter gives it: smallest level first.
    cards.rotate_left(1);
    cards.swap(1, 2);
    let p = describe(&cards);
    assert!(
        p.contains("1.7× slower than local (150 ns against 90 ns)"),
        "{p}"
    );
    assert!(p.contains("0.40× its bandwidth"), "{p}");
    assert!(
        p.contains("One core streams 10.0 GB/s from memory; 4 cores together 30.0 GB/s (3.0×)"),
        "{p}"
    );
    assert!(p.contains("in 40 ns (CPU 0 ↔ 1)"), "{p}");
    assert!(!p.contains("No remote memory"), "{p}");
    let one = vec![lat(Group::Memory, "local", 90.0, "hierarchy")];
    assert!(describe(&one).contains("No remote memory was measured."));
}

#[test]
fn every_figure_links_to_its_section_with_its_spread() {
    let cards = merge(machine());
    let h = html(&cards, &[]);
    let figs: usize = cards.iter().map(|c| c.figures.len()).sum();
    assert_eq!(h.matches("<a class=\"fig\" href=\"#").count(), figs);
    assert!(h.contains("href=\"#matrix\"") && h.contains("href=\"#c2c\""));
    assert!(
        h.contains(">1.5 ns</span><span class=\"s\" title=\"range over 3 sizes\"> 1.4–1.7</span>"),
        "{h}"
    );
    assert_eq!(h.matches("class=\"cardrow\"").count(), 3);
    assert!(html(&[], &[]).contains("No headline figures"));
    let t = text(&cards, &[]);
    assert!(t.contains("1.4–1.7 (range over 3 sizes)"), "{t}");
    assert_eq!(text(&[], &[]), "");
}

#[test]
fn spreads_need_samples() {
    assert!(Spread::range(&[1.0], "x").is_none());
    let s = Spread::range(&[3.0, 1.0, 2.0], "cells").unwrap();
    assert_eq!((s.lo, s.hi), (1.0, 3.0));
}

fn bw_rec(n: u64, gbps: f64) -> Record {
    let mut p = serde_json::json!({"kernel": "readv", "state": "warm", "size_bytes": 1u64 << 30, "requestors": n});
    let metric = if n > 1 {
        p["requestor_cpus"] = serde_json::json!([0, 1]);
        "aggregate_bandwidth"
    } else {
        "bandwidth"
    };
    let mut r = Record::new(
        "bandwidth",
        "readv",
        crate::Provenance::collect("test", "synthetic"),
        p,
    );
    r.add_samples(metric, "GB/s", &[gbps * 0.99, gbps, gbps * 1.01]);
    r
}

/// The cards a presenter would make of the two bandwidth records.
fn bw_cards(records: &[Record]) -> Vec<Card> {
    let fig = |r: &Record, metric: &str, label: &str| {
        stat_figure(r, metric, label, "GB/s", 1, "bandwidth", "passes").unwrap()
    };
    vec![Card {
        group: Group::Hierarchy,
        title: "memory".into(),
        detail: None,
        figures: vec![
            fig(&records[0], "bandwidth", "readv, 1 core"),
            fig(&records[1], "aggregate_bandwidth", "readv, 2 cores"),
        ],
        remark: None,
    }]
}

#[test]
fn a_superlinear_pair_is_shown_implausible_and_never_stated() {
    let records = [bw_rec(1, 6.7), bw_rec(2, 20.3)];
    let mut cards = bw_cards(&records);
    // Unvetted, the paragraph still refuses a ratio no core count explains.
    let p = describe(&cards);
    assert!(
        p.contains("One core streams 6.7 GB/s") && !p.contains("3.0×"),
        "{p}"
    );
    vet(&mut cards, &records, &crate::plausible::check(&records));
    let f = &cards[0].figures;
    assert_eq!(
        f[0].verdict.as_deref(),
        Some("implausible (rule bandwidth-scaling)")
    );
    assert_eq!(f[1].value_text(), "implausible (rule bandwidth-scaling)");
    let p = describe(&cards);
    assert!(!p.contains("streams"), "{p}");
    let t = text(&cards, &[]);
    assert!(
        t.contains("implausible (rule bandwidth-scaling)") && !t.contains("20.3"),
        "{t}"
    );
    assert!(html(&cards, &[]).contains("implausible (rule bandwidth-scaling)"));
    // A plausible pair stays a plain figure and is stated.
    let records = [bw_rec(1, 10.0), bw_rec(2, 18.0)];
    let mut cards = bw_cards(&records);
    vet(&mut cards, &records, &crate::plausible::check(&records));
    assert!(describe(&cards).contains("2 cores together 18.0 GB/s (1.8×)"));
}

#[test]
fn a_best_of_n_figure_is_stated_as_its_best_pass() {
    let mut records = [bw_rec(1, 10.0), bw_rec(2, 18.0)];
    records[0].settle = Some(crate::Settle {
        figure: Some(crate::settle::Figure::Max),
        ..crate::Settle::new("bandwidth", [10.0, 10.1], None)
    });
    let cards = bw_cards(&records);
    // Passes 9.9, 10.0 and 10.1: the settled figure is the best, 10.1; a figure
    // without a settled statistic stays the median.
    assert_eq!(cards[0].figures[0].value_text(), "10.1 GB/s");
    assert_eq!(cards[0].figures[1].value_text(), "18.0 GB/s");
}

#[test]
fn an_unsettled_figure_says_so_and_is_left_out_of_the_paragraph() {
    let mut records = [bw_rec(1, 10.0), bw_rec(2, 18.0)];
    records[1].settle = Some(crate::Settle {
        passes: 12,
        tolerance_pct: 5.0,
        budget_ms: 2000.0,
        ..crate::Settle::new(
            "aggregate_bandwidth",
            [9.0, 25.0],
            Some("machine busy: steal 30 %"),
        )
    });
    let mut cards = bw_cards(&records);
    vet(&mut cards, &records, &[]);
    assert_eq!(cards[0].figures[0].verdict, None);
    assert_eq!(
        cards[0].figures[1].value_text(),
        "unsettled (machine busy: steal 30 %)"
    );
    let p = describe(&cards);
    assert!(
        p.contains("One core streams 10.0 GB/s") && !p.contains("together"),
        "{p}"
    );
}

#[test]
fn a_shared_explanation_sits_beside_its_figures_once_and_not_in_the_paragraph() {
    let why = "Lines cexh and cexm are a chase of many lines a helper core holds.";
    let mut cards = merge(machine());
    for st in ["cexh", "cexm"] {
        let mut c = lat(Group::Coherence, &format!("lines {st}"), 100.0, "states");
        c.remark = Some(why.into());
        cards.push(c);
    }
    assert!(!describe(&cards).contains(why));
    let h = html(&cards, &[]);
    assert_eq!(h.matches(why).count(), 1, "{h}");
    let t = text(&cards, &[]);
    assert_eq!(t.matches(why).count(), 1, "{t}");
    assert!(
        t.contains("lines cexh [1]") && t.contains("lines cexm [1]"),
        "{t}"
    );
}

#[test]
fn only_settled_records_are_answers() {
    let p = crate::Provenance::collect("test", "none");
    let mut r = crate::Record::new("latency", "x", p, serde_json::json!({}));
    assert!(is_answer(&r, &[]));
    r.settle = Some(crate::record::Settle {
        tolerance_pct: 5.0,
        budget_ms: 500.0,
        ..crate::record::Settle::new("latency", [90.0, 180.0], Some("machine busy"))
    });
    assert!(!is_answer(&r, &[]));
    assert!(answers(std::slice::from_ref(&r)).is_empty());
}

#[test]
fn answer_blocks_open_the_summary_in_html_and_text() {
    let b = Block {
        html: "<table id=\"nodes\"></table>".into(),
        text: "node table\n".into(),
    };
    let h = html(&[], std::slice::from_ref(&b));
    assert!(
        h.contains("id=\"nodes\"") && !h.contains("No headline"),
        "{h}"
    );
    assert!(text(&[], &[b]).contains("node table"));
}

#[test]
fn a_hypervisor_signature_reads_as_its_name() {
    use crate::provenance::hypervisor_name;
    assert_eq!(hypervisor_name("KVMKVMKVM"), "KVM");
    assert_eq!(hypervisor_name("Microsoft Hv"), "Microsoft Hv");
    assert_eq!(hypervisor_name("VMwareVMware"), "VMware");
    assert_eq!(hypervisor_name(""), "");
}

#[test]
fn table_bytes_are_binary_units() {
    use crate::report::bytes;
    assert_eq!(bytes(256 << 20), "256 MiB");
    assert_eq!(bytes(1536 << 10), "1.5 MiB");
    assert_eq!(bytes(32 << 10), "32 KiB");
    assert_eq!(bytes(64), "64 B");
}

#[test]
fn a_record_a_plausibility_rule_flags_is_no_answer() {
    // 2 cores at 3.0× one core breaks bandwidth-scaling: neither figure may open the
    // first screen, though each settled.
    let records = vec![bw_rec(1, 6.7), bw_rec(2, 20.3)];
    let flags = crate::plausible::check(&records);
    assert!(!flags.is_empty(), "the superlinear pair is flagged");
    assert!(records.iter().any(|r| !is_answer(r, &flags)));
    assert!(answers(&records).len() < records.len());
    // A sound pair stays an answer.
    let sound = vec![bw_rec(1, 6.7), bw_rec(2, 12.0)];
    assert_eq!(answers(&sound).len(), 2);
}

#[test]
fn a_plateau_no_cache_explains_is_not_called_a_level_of_the_machine() {
    // A busy-core survey's sweep (issue 41): plateaus within L3 and beyond memory that
    // match no cache of the topology.
    let cards = vec![
        lat(Group::Hierarchy, "L1", 1.2, "hierarchy"),
        lat(Group::Hierarchy, "L3", 11.0, "hierarchy"),
        lat(Group::Hierarchy, "unmatched, within L3", 84.0, "hierarchy"),
        lat(Group::Hierarchy, "memory", 88.0, "hierarchy"),
        lat(
            Group::Hierarchy,
            "unmatched, beyond memory",
            142.0,
            "hierarchy",
        ),
    ];
    let p = describe(&cards);
    assert!(
        p.contains("A load takes 1.2 ns in L1, 11 ns in L3 and 88 ns in memory (73× L1)."),
        "{p}"
    );
    assert!(!p.contains("unmatched"), "{p}");
}

#[test]
fn memory_is_the_unowned_chase_when_it_settled_beyond_every_cache_level() {
    // A busy survey (issue 41): the sweep's memory plateau broke level-order, so only
    // the caches and an unmatched plateau are answers; the chase of unowned lines
    // settled at 124 ns.
    let mut cards = vec![
        lat(Group::Hierarchy, "L1", 1.7, "hierarchy"),
        lat(Group::Hierarchy, "L3", 18.0, "hierarchy"),
        lat(Group::Hierarchy, "unmatched, within L3", 121.6, "hierarchy"),
        lat(Group::Coherence, UOWN, 124.4, "states"),
    ];
    let p = describe(&cards);
    assert!(
        p.contains(
            "A load takes 1.7 ns in L1, 18 ns in L3 and 124 ns in memory (73× L1, a chase of lines flushed from every cache)."
        ),
        "{p}"
    );
    // Below a cache level it would follow: not called memory.
    cards[3] = lat(Group::Coherence, UOWN, 15.0, "states");
    let p = describe(&cards);
    assert!(
        p.contains("A load takes 1.7 ns in L1 and 18 ns in L3 (11× L1)."),
        "{p}"
    );
    // Beside a sweep's memory level (a median of per-size minima), the chase is the
    // one stated; without the chase, the sweep's level is.
    cards[3] = lat(Group::Coherence, UOWN, 131.7, "states");
    cards.push(lat(Group::Hierarchy, "memory", 83.2, "hierarchy"));
    let p = describe(&cards);
    assert!(
        p.contains("and 132 ns in memory (77× L1, a chase of lines flushed from every cache)."),
        "{p}"
    );
    cards.remove(3);
    let p = describe(&cards);
    assert!(p.contains("and 83 ns in memory (49× L1)."), "{p}");
}
