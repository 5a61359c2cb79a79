//! The summary cards of bench's experiments: one card per level of the hierarchy
//! (latency from the sweep's plateaus, bandwidth per core and for all cores from the
//! bandwidth records whose buffer lands in that level), one per memory node class
//! (from the matrices), the fastest and slowest core pair, coherence states and
//! latency under load. Each presenter's `cards` calls one function here.

use crate::bandwidth::groups::{self, Place};
use crate::latency::SweepData;
use numalab_results::present::of;
use numalab_results::summary::{stat_figure, Card, Figure, Group, Spread};
use numalab_results::Record;
use numalab_topo::{Level, Machine};

fn size(b: u64) -> String {
    numalab_topo::fmt_bytes(b)
}

/// The machine the records were measured on, when they include its topology.
fn machine(records: &[Record]) -> Option<Machine> {
    of(records, "topo").find_map(|r| r.data_as::<Machine>().ok())
}

/// Hierarchy cards from the first latency sweep: one per plateau, with the range of
/// its points as spread, and a remark where the measured level disagrees with the
/// cache size the topology reports.
pub fn sweep(records: &[Record]) -> Vec<Card> {
    let Some((r, d)) =
        of(records, "latency-sweep").find_map(|r| Some((r, r.data_as::<SweepData>().ok()?)))
    else {
        return Vec::new();
    };
    d.plateaus
        .iter()
        .map(|p| {
            let fig = Figure::new("latency", p.median_ns, "ns", 2, "hierarchy")
                .with(Spread::range(&p.values_ns, "sizes"))
                .from(r, &format!("plateau {}", p.level));
            let mut c = Card::one(Group::Hierarchy, &p.level, fig);
            c.detail = Some(format!("{} – {}", size(p.from_bytes), size(p.to_bytes)));
            if let (Some(topo), Some(past)) = (p.topology_bytes, p.exceeded_at) {
                // A plateau that ends well before the level's size (or starts well past
                // it) means the level the topology reports is not the one measured.
                if past * 2 <= topo || p.from_bytes >= topo * 2 {
                    c.remark = Some(format!(
                        "The measured {} plateau spans {} – {}, though the topology reports {} for {}.",
                        p.level,
                        size(p.from_bytes),
                        size(p.to_bytes),
                        size(topo),
                        p.level
                    ));
                }
            }
            c
        })
        .collect()
}

/// Bandwidth figures on the hierarchy cards: for each level a read kernel's buffer
/// landed in, one core's and all requestors' aggregate (the vector read kernel when
/// measured, else the scalar one), with p5–p95 of passes. A survey measures the same
/// figure in more than one step (one core in the kernels step and the scaling row);
/// the card shows the best settled one, as STREAM and likwid report bandwidth and as
/// the per-node table does, so the paragraph and the table never disagree (a quiet
/// survey's paragraph once said "2 cores together 14.9 GB/s (1.0×)" from the first of
/// two 2-core figures while its table said 24.2 from the second). When the figures of
/// one label differ by more than the scaling rule's tolerance, the card says so.
pub fn bandwidth(records: &[Record]) -> Vec<Card> {
    let caches = groups::caches(records);
    let bw: Vec<&Record> = of(records, "bandwidth")
        .filter(|r| r.parameters["state"].as_str().unwrap_or("warm") == "warm")
        .collect();
    let kernel = ["readv", "read"]
        .into_iter()
        .find(|k| bw.iter().any(|r| r.parameters["kernel"] == *k));
    let Some(kernel) = kernel else {
        return Vec::new();
    };
    // (level, figure, settled), in record order.
    let mut found: Vec<(String, Figure, bool)> = Vec::new();
    for r in bw.iter().filter(|r| r.parameters["kernel"] == kernel) {
        let n = r.parameters["requestors"].as_u64().unwrap_or(1);
        let aggregate = r.parameters.get("requestor_cpus").is_some();
        // Per-requestor records of a multi-thread run are parts of its aggregate.
        if n > 1 && !aggregate {
            continue;
        }
        let (metric, label) = if n > 1 {
            ("aggregate_bandwidth", format!("{kernel}, {n} cores"))
        } else {
            ("bandwidth", format!("{kernel}, 1 core"))
        };
        let Some(fig) = stat_figure(r, metric, &label, "GB/s", 1, "bandwidth", "passes") else {
            continue;
        };
        // Where the chart puts the record, so the card and the chart name one level.
        let level = match groups::group_of(r, records, caches.as_deref()).place {
            Place::Cache(l, _) => format!("L{l}"),
            Place::Memory(_) => "memory".into(),
            // Without a topology the level is unknown: no card rather than a guess.
            Place::Unknown(_) => continue,
        };
        found.push((level, fig, r.settled()));
    }
    let mut cards: Vec<Card> = Vec::new();
    for (level, fig, _) in &found {
        if cards
            .iter()
            .any(|c| c.title == *level && c.figure(&fig.label).is_some())
        {
            continue;
        }
        let same: Vec<&(String, Figure, bool)> = found
            .iter()
            .filter(|(l, f, _)| l == level && f.label == fig.label)
            .collect();
        // Settled figures first, then the highest median.
        let best = same
            .iter()
            .max_by(|a, b| a.2.cmp(&b.2).then(a.1.value.total_cmp(&b.1.value)))
            .expect("the figure itself is among them");
        let fig = best.1.clone();
        match cards.iter_mut().find(|c| c.title == *level) {
            Some(c) => c.figures.push(fig),
            None => cards.push(Card::one(Group::Hierarchy, level, fig)),
        }
    }
    remark_varied(&mut cards, &found);
    cards
}

/// Each card's remark naming the figures whose measurements in this run differ by
/// more than the scaling rule's tolerance.
fn remark_varied(cards: &mut [Card], found: &[(String, Figure, bool)]) {
    for c in cards {
        let varied: Vec<String> = c
            .figures
            .iter()
            .filter_map(|f| {
                let same: Vec<f64> = found
                    .iter()
                    .filter(|(l, g, _)| *l == c.title && g.label == f.label)
                    .map(|(_, g, _)| g.value)
                    .collect();
                spread_words(&f.label, &same)
            })
            .collect();
        if !varied.is_empty() {
            c.remark = Some(format!(
                "Measured more than once in this run, the best shown (bandwidth is best-of, as STREAM reports it): {}.",
                varied.join("; ")
            ));
        }
    }
}

/// "readv, 2 cores 14.9–24.2 GB/s over 2 measurements" when a label's figures at one
/// level differ by more than the scaling rule's tolerance.
fn spread_words(label: &str, values: &[f64]) -> Option<String> {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let tol = numalab_results::plausible::BANDWIDTH_SCALING_TOL;
    (values.len() > 1 && lo < hi * (1.0 - tol)).then(|| {
        format!(
            "{label} {lo:.1}–{hi:.1} GB/s over {} measurements",
            values.len()
        )
    })
}

/// The nearest level at which two CPUs share a domain, in words.
fn relation(m: Option<&Machine>, a: u32, b: u32) -> Option<&'static str> {
    let m = m?;
    let (pa, pb) = (m.pu(a)?, m.pu(b)?);
    [
        (Level::Core, "SMT siblings"),
        (Level::L2, "same L2"),
        (Level::L3, "same L3"),
        (Level::Node, "same node"),
        (Level::Package, "same package"),
    ]
    .into_iter()
    .find(|(l, _)| pa.domain(*l).is_some() && pa.domain(*l) == pb.domain(*l))
    .map(|(_, n)| n)
    .or(Some("other package"))
}

/// The fastest and the slowest core pair by CAS round trip / 2, and where they sit.
pub fn c2c(records: &[Record]) -> Vec<Card> {
    let m = machine(records);
    let mut pairs: Vec<(Figure, u32, u32)> = of(records, "c2c")
        .filter_map(|r| {
            let f = stat_figure(
                r,
                "cas_rtt_half",
                "CAS round trip / 2",
                "ns",
                1,
                "c2c",
                "passes",
            )?;
            Some((
                f,
                r.parameters["writer_cpu"].as_u64()? as u32,
                r.parameters["reader_cpu"].as_u64()? as u32,
            ))
        })
        .collect();
    pairs.sort_by(|a, b| a.0.value.total_cmp(&b.0.value));
    let n = pairs.len();
    let card = |title: &str, (f, a, b): &(Figure, u32, u32)| {
        let mut c = Card::one(Group::Cores, title, f.clone());
        c.detail = Some(match relation(m.as_ref(), *a, *b) {
            Some(rel) => format!("CPU {a} ↔ {b}, {rel}"),
            None => format!("CPU {a} ↔ {b}"),
        });
        c
    };
    match (pairs.first(), pairs.last()) {
        (Some(f), Some(l)) if n > 1 => vec![card("fastest pair", f), card("slowest pair", l)],
        (Some(f), _) => vec![card("the one pair", f)],
        _ => Vec::new(),
    }
}

/// One card per memory node class from the initiator × node matrices: local (0 hops),
/// each hop count, and each CPU-less node on its own (a far tier is not a hop class).
/// Latency and bandwidth are medians over the class's cells, spread their range.
pub fn matrix(records: &[Record]) -> Vec<Card> {
    let m = machine(records);
    let cpu_less = |node: u64| {
        m.as_ref()
            .and_then(|m| m.node(node as u32))
            .is_some_and(|n| n.cpu_less)
    };
    let mut classes: Vec<(String, u64)> = Vec::new();
    let class_of = |r: &Record| -> Option<(String, u64)> {
        let node = r.parameters["mem_node"].as_u64()?;
        let hops = r.parameters["hops"].as_u64()?;
        Some(if cpu_less(node) {
            (format!("CPU-less node {node}"), 100 + node)
        } else if hops == 0 {
            ("local".into(), 0)
        } else {
            (
                format!("{hops} hop{}", if hops == 1 { "" } else { "s" }),
                hops,
            )
        })
    };
    for kind in ["matrix-latency", "matrix-bandwidth"] {
        for r in of(records, kind) {
            if let Some(c) = class_of(r) {
                if !classes.contains(&c) {
                    classes.push(c);
                }
            }
        }
    }
    classes.sort_by_key(|c| c.1);
    classes
        .into_iter()
        .filter_map(|(title, _)| {
            let mut card = Card {
                group: Group::Memory,
                title: title.clone(),
                detail: None,
                figures: Vec::new(),
                remark: None,
            };
            for (kind, metric, unit) in [
                ("matrix-latency", "latency", "ns"),
                ("matrix-bandwidth", "bandwidth", "GB/s"),
            ] {
                let v: Vec<f64> = of(records, kind)
                    .filter(|r| class_of(r).is_some_and(|c| c.0 == title))
                    .filter_map(|r| r.median(metric))
                    .collect();
                if let Some(med) = numalab_results::stats::median(&v) {
                    card.figures.push(
                        Figure::new(metric, med, unit, 1, "matrix")
                            .with(Spread::range(&v, "cells")),
                    );
                }
            }
            (!card.figures.is_empty()).then_some(card)
        })
        .collect()
}

/// One card per prepared coherence state's latency.
pub fn states(records: &[Record]) -> Vec<Card> {
    let sweep = of(records, "latency-sweep").next();
    let sweep_stride = sweep.and_then(|r| r.parameters["stride_bytes"].as_u64());
    let sweep_memory = sweep
        .and_then(|r| r.data_as::<SweepData>().ok())
        .and_then(|d| {
            d.plateaus
                .iter()
                .rfind(|p| p.level == "memory")
                .map(|p| p.median_ns)
        });
    let c2c = of(records, "c2c").next().is_some() || of(records, "c2c-matrix").next().is_some();
    let held: Vec<&str> = of(records, "latency")
        .filter_map(|r| r.parameters["state"].as_str())
        .filter(|s| HELD.contains(s))
        .collect();
    of(records, "latency")
        .filter(|r| r.parameters["state"].as_str().is_some_and(|s| s != "warm"))
        .filter_map(|r| {
            let st = r.parameters["state"].as_str()?;
            let f = stat_figure(r, "latency", "latency", "ns", 1, "states", "passes")?;
            let stride = r.parameters["stride_bytes"].as_u64();
            let bytes = r.parameters["size_bytes"].as_u64();
            let remark = if st == "uown" {
                uown_remark(f.value, stride, sweep_stride, sweep_memory)
            } else {
                (c2c && HELD.contains(&st)).then(|| held_remark(&held))
            };
            let mut c = Card::one(Group::Coherence, &format!("lines {st}"), f);
            if let (Some(st), Some(b)) = (stride, bytes) {
                c.detail = Some(format!("{} at stride {st} B", size(b)));
            }
            c.remark = remark;
            Some(c)
        })
        .collect()
}

/// The states whose lines a helper core holds.
const HELD: [&str; 4] = ["cexh", "cexm", "dexd", "dext"];

/// Why unowned lines read slower than the sweep's memory plateau (another stride);
/// None when they do not, so the words never contradict the figures.
fn uown_remark(
    uown: f64,
    stride: Option<u64>,
    sweep: Option<u64>,
    plateau: Option<f64>,
) -> Option<String> {
    match (stride, sweep, plateau) {
        (Some(a), Some(b), Some(p)) if a != b && p < uown => Some(format!(
            "Unowned lines are chased {a} B apart, flushed from every cache, so the adjacent-line prefetcher cannot fetch the next one; the sweep's memory plateau ({p:.1} ns) comes from smaller buffers chased {b} B apart, where that prefetcher helps and some lines may still sit in a shared cache."
        )),
        _ => None,
    }
}

/// Why lines a helper core holds differ from the core-to-core figure, once for every
/// such state measured (the list names them).
fn held_remark(states: &[&str]) -> String {
    let list = match states {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    format!(
        "Lines {list} are a chase of many lines a helper core holds, each read a miss served by its cache; the core-to-core figure is one line handed back and forth (half a CAS round trip). On a VM the helper's vCPU may share a host core with the requestor, which makes these figures vary from run to run."
    )
}

/// Reading lines another core holds, with one sharer.
pub fn invalidate(records: &[Record]) -> Vec<Card> {
    of(records, "invalidate")
        .next()
        .and_then(|r| {
            stat_figure(
                r,
                "rdex_latency",
                "RDEX latency",
                "ns",
                1,
                "invalidate",
                "passes",
            )
        })
        .map(|f| Card::one(Group::Coherence, "1 sharer", f))
        .into_iter()
        .collect()
}

/// Latency under the heaviest injected traffic measured.
pub fn loaded(records: &[Record]) -> Vec<Card> {
    of(records, "loaded-latency")
        .filter_map(|r| Some((r.median("injected_bandwidth")?, r)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .and_then(|(gbps, r)| {
            let f = stat_figure(r, "latency", "latency", "ns", 1, "loaded", "passes")?;
            let mut c = Card::one(Group::Coherence, "under load", f);
            c.detail = Some(format!("{gbps:.1} GB/s injected"));
            Some(c)
        })
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_results::Provenance;
    use serde_json::json;

    fn topo() -> Record {
        let mut r = Record::new(
            "topo",
            "topo",
            Provenance::collect("test", "synthetic"),
            json!({}),
        );
        r.data = Some(json!({"caches": [
            {"level": 1, "bytes": 32 << 10, "line_bytes": 64, "shared_by": 1},
            {"level": 2, "bytes": 512 << 10, "line_bytes": 64, "shared_by": 1},
            {"level": 3, "bytes": 8 << 20, "line_bytes": 64, "shared_by": 2},
        ]}));
        r
    }

    fn bw(size: u64, n: u64, gbps: f64) -> Record {
        let mut p = json!({"kernel": "read", "state": "warm", "size_bytes": size, "requestors": n, "mp": n > 1});
        if n > 1 {
            p["requestor_cpus"] = json!([0, 1]);
        }
        let mut r = Record::new(
            "bandwidth",
            "read",
            Provenance::collect("test", "synthetic"),
            p,
        );
        let metric = if n > 1 {
            "aggregate_bandwidth"
        } else {
            "bandwidth"
        };
        r.add_samples(metric, "GB/s", &[gbps; 5]);
        r
    }

    fn titles(records: &[Record]) -> Vec<(String, String)> {
        bandwidth(records)
            .into_iter()
            .flat_map(|c| {
                let t = c.title.clone();
                c.figures.into_iter().map(move |f| (t.clone(), f.label))
            })
            .collect()
    }

    #[test]
    fn bandwidth_lands_on_the_level_the_chart_groups_it_in() {
        let recs = vec![
            topo(),
            bw(16 << 10, 1, 100.0),
            bw(256 << 10, 1, 50.0),
            bw(4 << 20, 1, 30.0),
            // Two threads' 6 MiB buffers do not fit one shared 8 MiB L3 together.
            bw(6 << 20, 2, 20.0),
            bw(64 << 20, 1, 10.0),
        ];
        assert_eq!(
            titles(&recs),
            [
                ("L1".to_string(), "read, 1 core".to_string()),
                ("L2".into(), "read, 1 core".into()),
                ("L3".into(), "read, 1 core".into()),
                ("memory".into(), "read, 2 cores".into()),
                ("memory".into(), "read, 1 core".into()),
            ]
        );
        // Without a topology record no level can be named, so no card is made.
        assert!(titles(&recs[1..]).is_empty());
    }

    #[test]
    fn a_figure_measured_twice_shows_its_best_settled_value_and_says_they_differ() {
        // A quiet survey: one core 14.6 then 12.4; two cores 14.9 then 24.2.
        let mut recs = vec![
            topo(),
            bw(1 << 30, 1, 14.6),
            bw(520 << 20, 2, 14.9),
            bw(1 << 30, 1, 12.4),
            bw(520 << 20, 2, 24.2),
        ];
        let cards = bandwidth(&recs);
        assert_eq!(cards.len(), 1, "{cards:?}");
        let c = &cards[0];
        assert_eq!(c.figure("read, 1 core").unwrap().value, 14.6);
        assert_eq!(c.figure("read, 2 cores").unwrap().value, 24.2);
        let remark = c.remark.as_deref().unwrap_or_default();
        assert!(
            remark.contains("the best shown")
                && remark.contains("read, 1 core 12.4–14.6 GB/s over 2 measurements; read, 2 cores 14.9–24.2 GB/s over 2"),
            "{remark}"
        );
        // A figure that did not settle gives way to a settled one, however high.
        recs[4].settle = Some(numalab_results::record::Settle::new(
            "aggregate_bandwidth",
            [12.0, 30.0],
            Some("busy"),
        ));
        let c = &bandwidth(&recs)[0];
        assert_eq!(c.figure("read, 2 cores").unwrap().value, 14.9);
        // Figures within the tolerance of each other need no remark.
        let close = vec![topo(), bw(1 << 30, 1, 14.6), bw(1 << 30, 1, 13.9)];
        assert_eq!(bandwidth(&close)[0].remark, None);
    }

    fn state(st: &str, stride: u64) -> Record {
        let p = json!({"kernel": "read", "state": st, "size_bytes": 256u64 << 20, "stride_bytes": stride});
        let mut r = Record::new("latency", st, Provenance::collect("test", "synthetic"), p);
        r.add_samples("latency", "ns", &[130.0, 136.0, 140.0]);
        r
    }

    fn sweep_with_memory(ns: f64) -> Record {
        let mut r = Record::new(
            "latency-sweep",
            "sweep",
            Provenance::collect("test", "synthetic"),
            json!({"stride_bytes": 64}),
        );
        let plateau = crate::sweep::Plateau {
            from_bytes: 64 << 20,
            to_bytes: 1 << 30,
            exceeded_at: None,
            median_ns: ns,
            values_ns: vec![ns],
            level: "memory".into(),
            topology_bytes: None,
        };
        r.set_data(&SweepData {
            points: Vec::new(),
            plateaus: vec![plateau],
            topology_caches: Vec::new(),
        });
        r
    }

    #[test]
    fn state_cards_say_why_they_differ_from_the_sweep_and_the_handover() {
        let c2c = Record::new(
            "c2c",
            "c2c",
            Provenance::collect("test", "synthetic"),
            json!({}),
        );
        let sweep = sweep_with_memory(90.0);
        let recs = [
            state("uown", 128),
            state("cexh", 128),
            state("dext", 128),
            sweep.clone(),
            c2c.clone(),
        ];
        let cards = states(&recs);
        assert_eq!(cards.len(), 3);
        // The title the summary states memory from when the sweep gives none.
        assert_eq!(cards[0].title, numalab_results::summary::UOWN);
        assert_eq!(cards[0].detail.as_deref(), Some("256 MiB at stride 128 B"));
        let uown = cards[0].remark.as_deref().unwrap_or("");
        assert!(
            uown.contains("128 B apart") && uown.contains("64 B apart") && uown.contains("90.0 ns"),
            "{uown}"
        );
        // One explanation for every held state, naming them all: said once beside them.
        let held = cards[1].remark.as_deref().unwrap_or("");
        assert!(
            held.contains("Lines cexh and dext are") && held.contains("core-to-core"),
            "{held}"
        );
        assert_eq!(cards[2].remark, cards[1].remark);
        // A sweep plateau slower than unowned lines: no "reads lower" to contradict it.
        let cards = states(&[state("uown", 128), sweep_with_memory(187.9), c2c]);
        assert!(cards[0].remark.is_none(), "{:?}", cards[0].remark);
        // The same stride, and no handover measured: nothing to explain.
        let cards = states(&[state("uown", 64), state("cexh", 128), sweep]);
        assert!(
            cards.iter().all(|c| c.remark.is_none()),
            "{:?}",
            cards[0].remark
        );
    }
}
