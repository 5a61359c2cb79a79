//! Placement plans on real topologies and synthetic ones.

use super::*;
use numalab_topo::{Host, TopologySource};

fn xml(name: &str) -> Machine {
    let p = numalab_fixtures::topology(name);
    Host::load(&TopologySource::Xml(p)).unwrap().machine
}

fn config() -> Config {
    Config {
        level: None,
        owner: None,
        parts: Part::ALL.to_vec(),
        batches: None,
        max_readers: None,
        size: 1 << 20,
        unit_lines: 1,
        line: 64,
    }
}

fn curve<'a>(p: &'a Plan, label: &str) -> &'a Curve {
    p.curves
        .iter()
        .find(|c| c.label == label)
        .unwrap_or_else(|| panic!("no curve {label}"))
}

#[test]
fn suite_three_alternates_batches_over_nodes_on_a_four_socket_machine() {
    let m = xml("64amd64-4s2n4ca2co.xml");
    let p = Plan::new(&m, &config()).unwrap();
    assert_eq!(p.level, Level::Node);
    assert_eq!(p.domains.len(), 8);
    assert_eq!(p.owner, 7);
    let dom = |cpu: u32| crate::domains::letter_of(&p.domains, cpu).to_string();
    // Batch 2: two from A, two from B, two from C, …; every other CPU once.
    let b2 = curve(&p, "batch 2");
    let letters: Vec<String> = b2.readers.iter().take(6).map(|&c| dom(c)).collect();
    assert_eq!(letters, ["A", "A", "B", "B", "C", "C"]);
    let mut all = b2.readers.clone();
    all.sort_unstable();
    assert_eq!(all, (0..64).filter(|&c| c != 7).collect::<Vec<u32>>());
    // Batch 8 fills A (7 readers besides the owner), then B.
    let b8 = curve(&p, "batch 8");
    assert!(b8.readers[..7].iter().all(|&c| dom(c) == "A"));
    assert!(b8.readers[7..15].iter().all(|&c| dom(c) == "B"));
    let batches: Vec<&str> = p
        .curves
        .iter()
        .filter(|c| c.part == Part::Suite3)
        .map(|c| c.label.as_str())
        .collect();
    assert_eq!(batches, ["batch 1", "batch 2", "batch 4", "batch 8"]);
    // B is the nearest other node: same package as A.
    let pkg = |c: u32| m.pu(c).unwrap().package;
    assert_eq!(pkg(p.domains[1].cpus[0]), pkg(7));
    assert!(p.skipped.is_empty());
}

#[test]
fn owners_vary_in_a_and_local_readers_are_fixed_in_suite_two() {
    let m = xml("64amd64-4s2n4ca2co.xml");
    let p = Plan::new(&m, &config()).unwrap();
    let owners: Vec<&str> = p
        .curves
        .iter()
        .filter(|c| c.part == Part::Suite1)
        .map(|c| c.label.as_str())
        .collect();
    assert_eq!(owners, ["owner 0", "owner 4", "owner 7"]);
    let s2: Vec<(usize, usize)> = p
        .curves
        .iter()
        .filter(|c| c.part == Part::Suite2 && c.owners == [7])
        .map(|c| (c.fixed, c.counts.len()))
        .collect();
    assert_eq!(s2, [(0, 56), (2, 56), (4, 56), (7, 56)]);
    let c = curve(&p, "owner 7, 4 local");
    assert!(c.readers[..4].iter().all(|x| (0..7).contains(x)));
    assert!(c.readers[4..].iter().all(|&x| x >= 8));
    assert_eq!(c.counts.first(), Some(&5));
    // Suite IV: four owners at either end of A, staggered or not.
    let four = curve(&p, "4 owners (last of A), staggered");
    assert_eq!(four.owners, [4, 5, 6, 7]);
    assert!(four.stagger && !four.readers.iter().any(|r| four.owners.contains(r)));
}

#[test]
fn line_splits_cover_the_set_and_staggered_readers_start_apart() {
    let m = xml("64amd64-4s2n4ca2co.xml");
    let p = Plan::new(&m, &config()).unwrap();
    let four = curve(&p, "4 owners (first of A), staggered");
    let mut next = 0;
    for j in 0..4 {
        let (first, count) = p.owner_lines(four, j, 10);
        assert_eq!(first, next);
        next += count;
    }
    assert_eq!(next, p.lines);
    let starts: Vec<usize> = (0..4).map(|i| p.reader_lines(four, i, 4).2).collect();
    assert_eq!(starts, [0, p.lines / 4, p.lines / 2, 3 * p.lines / 4]);
    let e0 = p.curves.iter().find(|c| c.part == Part::Exp0).unwrap();
    assert!(e0.partitioned);
    assert_eq!(
        p.reader_lines(e0, 3, 5),
        (3 * p.exp0_lines, p.exp0_lines, 0)
    );
    assert_eq!(p.point_lines(e0, 5).0, 5 * p.exp0_lines);
}

#[test]
fn one_domain_runs_what_it_can_and_names_the_rest() {
    let m = Host::load(&TopologySource::Synthetic("pack:1 l3:1 core:4 pu:1".into()))
        .unwrap()
        .machine;
    let c = Config {
        level: Some(Level::L3),
        ..config()
    };
    let p = Plan::new(&m, &c).unwrap();
    let skipped: Vec<Part> = p.skipped.iter().map(|s| s.0).collect();
    assert_eq!(skipped, [Part::Suite2, Part::Suite3, Part::Suite4]);
    assert!(
        p.skipped[0].1.contains("two l3 domains"),
        "{}",
        p.skipped[0].1
    );
    assert!(p.curves.iter().any(|c| c.part == Part::Exp0));
    assert!(p.curves.iter().any(|c| c.part == Part::Suite4 && c.stagger));
}

#[test]
fn bad_choices_name_the_value() {
    let m = xml("64amd64-4s2n4ca2co.xml");
    let e = Plan::new(
        &m,
        &Config {
            max_readers: Some(64),
            ..config()
        },
    )
    .unwrap_err();
    assert!(
        e.is_user_error() && e.to_string().contains("'64'") && e.to_string().contains("1 to 63"),
        "{e}"
    );
    let e = Plan::new(
        &m,
        &Config {
            batches: Some(vec![2, 0]),
            ..config()
        },
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("--batches") && e.to_string().contains("'0'"),
        "{e}"
    );
    let e = Plan::new(
        &m,
        &Config {
            owner: Some(99),
            ..config()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("'99'"), "{e}");
    let e = Plan::new(
        &m,
        &Config {
            size: 64,
            ..config()
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("--size"), "{e}");
    assert_eq!(Part::parse("iii"), Ok(Part::Suite3));
    assert!(Part::parse("5").unwrap_err().contains("'5'"));
}

#[test]
fn parts_that_are_one_point_on_two_cores_say_why() {
    let m = Host::load(&TopologySource::Synthetic("pack:1 l3:1 core:2 pu:1".into()))
        .unwrap()
        .machine;
    let p = Plan::new(&m, &config()).unwrap();
    let notes = super::experiment::one_point_notes(&p);
    let said: Vec<bool> = ["Experiment 0", "Suite I ", "Suite II ", "Suite III "]
        .iter()
        .map(|part| {
            notes
                .iter()
                .any(|n| n.starts_with(part) && n.contains("one point here"))
        })
        .collect();
    assert_eq!(said, [true; 4], "{notes:#?}");
    assert!(notes[0].contains("1 reader CPU besides"), "{notes:#?}");
    // Sixty-four cores: every curve has its points, nothing to say.
    let p = Plan::new(&xml("64amd64-4s2n4ca2co.xml"), &config()).unwrap();
    assert!(super::experiment::one_point_notes(&p).is_empty());
}

/// A point of curve 0 settled on fake passes (two readers, one fake ms per pass):
/// `f(i)` is pass i's ns per unit of both readers, with its disturbance.
fn fake_point(
    plan: &Plan,
    budget_ms: f64,
    f: impl Fn(usize) -> (f64, numalab_results::disturb::Disturbance),
) -> run::Point {
    use numalab_results::settle;
    use std::{cell::Cell, rc::Rc, time::Duration};
    let now = Rc::new(Cell::new(Duration::ZERO));
    let (c, s, r) = (now.clone(), now.clone(), now.clone());
    let rules = crate::settled::rules(&numalab_results::settle::NoiseOptions {
        noise_budget: Some(format!("{budget_ms}ms")),
        tolerance: Some("5".into()),
    })
    .unwrap();
    let step = settle::Step {
        metric: "read_time",
        figure: settle::Figure::Median,
        want: 5,
    };
    let mut i = 0;
    let mut out = settle::measure(
        &rules,
        step,
        |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64,
        &mut move || c.get(),
        &mut move |d| s.set(s.get() + d),
        |n| -> std::result::Result<_, ()> {
            let v = (0..n)
                .map(|_| {
                    i += 1;
                    r.set(r.get() + Duration::from_millis(1));
                    let (x, d) = f(i - 1);
                    (vec![x, x + 2.0], d)
                })
                .collect();
            Ok(vec![v])
        },
    )
    .unwrap();
    let readers: run::Readers = plan.curves[0].readers[..2]
        .iter()
        .map(|&c| (c, crate::domains::letter_of(&plan.domains, c).to_string()))
        .collect();
    let home = numalab_topo::buffer::MemProof {
        bytes: 0,
        page_size: numalab_topo::PageSize::Base,
        pages_checked: 0,
        pages_per_node: Default::default(),
        pages_missing: 0,
        thp_bytes: None,
        expected_nodes: Vec::new(),
    };
    run::point_of(0, &readers, out.remove(0), Vec::new(), home)
}

#[test]
fn a_point_settles_on_its_passes_and_an_unsettled_one_says_so_in_records_and_text() {
    use numalab_results::disturb::Disturbance;
    let m = xml("64amd64-4s2n4ca2co.xml");
    let plan = Plan::new(&m, &config()).unwrap();
    let busy = Disturbance {
        wall_ns: 1_000_000,
        runq_wait_ns: 500_000,
        involuntary_switches: 4,
        ..Default::default()
    };
    let quiet = Disturbance::default;
    // Two disturbed passes first: measured again, left out of the figure.
    let ok = fake_point(&plan, 1000.0, |i| {
        if i < 2 {
            (900.0, busy.clone())
        } else {
            (100.0, quiet())
        }
    });
    assert!(ok.settle.settled, "{:?}", ok.settle);
    assert!(ok.overall.iter().all(|&x| x == 101.0), "{:?}", ok.overall);
    assert_eq!(
        ok.per_reader.iter().map(|r| r.2).collect::<Vec<_>>(),
        [100.0, 102.0]
    );
    assert_eq!(ok.readers, 2);
    // Passes far apart on a busy machine: the budget ends it unsettled.
    let bad = fake_point(&plan, 30.0, |i| {
        (if i % 2 == 0 { 100.0 } else { 300.0 }, busy.clone())
    });
    assert!(!bad.settle.settled);
    let ctx = numalab_bench::experiment::Context {
        prov: numalab_results::Provenance::collect("t", "none"),
        warnings: Vec::new(),
    };
    let recs = point_records(&plan, &[ok, bad], &Options::default(), &ctx);
    assert!(recs[0].settle.as_ref().is_some_and(|s| s.settled));
    assert!(recs[1].settle.as_ref().is_some_and(|s| !s.settled));
    assert!(recs[1]
        .warnings
        .iter()
        .any(|w| w.starts_with("unsettled* ")));
    let t = text(&recs).unwrap();
    let rows = t
        .lines()
        .filter(|l| l.contains(" unsettled*") && !l.starts_with("warning"));
    assert_eq!(rows.count(), 1, "{t}");
    assert!(t.contains("machine busy: "), "{t}");
}
