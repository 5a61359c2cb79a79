//! The findings: a host's figure, a host's links or one link beyond the others by a
//! robust rule, and the settings that differ between hosts. Pure functions of the
//! records' data, so the rule is tested on synthetic figures.
//!
//! The rule: a value is odd when it lies on the worse side of the others' median by
//! more than [`K`] times their scaled median absolute deviation and by at least the
//! factor [`FACTOR`], both on a log scale (rates and times vary by factors, and a
//! factor is what a reader compares). Each value is held against the others only
//! (leave one out), so an odd value does not widen its own yardstick.
//!
//! Apart from that rule, a host whose memory passes its CPU quota throttled is named
//! (with the throttled time, its passes' time and the quota), whatever its figures:
//! how far throttled figures move depends on how long a pass is against the quota's
//! slice, and on a loaded machine the others' figures may move as far.

use super::data::{
    FindingsData, HostData, LinksData, OddHost, OddLink, SettingDiff, ThrottledHost,
    THROTTLED_SHARE,
};
use numalab_results::stats::median;

/// Deviations (scaled MADs) beyond the median that make a value odd.
pub const K: f64 = 3.0;
/// A value must also be this factor worse than the median.
pub const FACTOR: f64 = 1.5;
/// MAD's scale to a normal distribution's standard deviation.
const SCALE: f64 = 1.4826;
/// The least deviation assumed on the log scale (5 %), so that identical others do
/// not make any difference odd (the factor rules those out too).
const MAD_FLOOR: f64 = 0.05;
/// Up to this many hosts a row is held against the cells not touching its host;
/// beyond, against every cell (one host's cells are then under 1 % of them).
const EXACT_UP_TO: usize = 200;
/// Fewest hosts the rule judges: with two, neither is "the others".
pub const MIN_HOSTS: usize = 3;

/// The rule in words, for the findings record.
pub fn rule_words() -> String {
    format!(
        "odd: beyond the others' median by more than {K} scaled MADs and by at least {FACTOR}x, on a log scale, each value held against the others only; at least {MIN_HOSTS} hosts; and a host whose memory passes its CPU quota throttled for {:.0} % of their time or more, whatever its figures",
        THROTTLED_SHARE * 100.0
    )
}

/// Whether `x` is worse than the values `base` by the rule (`higher_worse`: latency).
pub fn beyond(x: f64, base: &[f64], higher_worse: bool) -> bool {
    let logs: Vec<f64> = base.iter().filter(|v| **v > 0.0).map(|v| v.ln()).collect();
    let Some(med) = median(&logs) else {
        return false;
    };
    if x <= 0.0 || logs.len() < 2 {
        return false;
    }
    let dev: Vec<f64> = logs.iter().map(|l| (l - med).abs()).collect();
    let mad = (median(&dev).unwrap_or(0.0) * SCALE).max(MAD_FLOOR);
    let d = x.ln() - med;
    let worse = if higher_worse { d } else { -d };
    worse > K * mad && worse > FACTOR.ln()
}

fn range(v: &[f64]) -> (f64, f64) {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// The hosts whose value is odd among `values` (one per host, None: not measured):
/// (host index, value, the others' range).
pub fn odd_values(values: &[Option<f64>], higher_worse: bool) -> Vec<(usize, f64, (f64, f64))> {
    if values.iter().flatten().count() < MIN_HOSTS {
        return Vec::new();
    }
    values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            let v = (*v)?;
            let others: Vec<f64> = values
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .filter_map(|(_, o)| *o)
                .collect();
            beyond(v, &others, higher_worse).then(|| (i, v, range(&others)))
        })
        .collect()
}

/// One odd part of a matrix: "from" (row), "to" (column) or "pair", the host (the
/// cell's sender), the peer of a pair, its value and the range held against.
pub type Part = (&'static str, usize, Option<usize>, f64, (f64, f64));

fn cells(m: &[Vec<Option<f64>>], keep: impl Fn(usize, usize) -> bool) -> Vec<f64> {
    let mut out = Vec::new();
    for (i, row) in m.iter().enumerate() {
        for (j, c) in row.iter().enumerate() {
            if i != j && keep(i, j) {
                out.extend(*c);
            }
        }
    }
    out
}

/// The odd rows ("from": what a host sends), columns ("to": what it receives) and,
/// among the cells of neither, single odd cells of a host × host matrix. A symmetric
/// matrix (latency) has rows only, named "from" (every link of the host).
pub fn odd_parts(m: &[Vec<Option<f64>>], higher_worse: bool, symmetric: bool) -> Vec<Part> {
    let n = m.len();
    if n < MIN_HOSTS {
        return Vec::new();
    }
    let all = cells(m, |_, _| true);
    let mut out: Vec<Part> = Vec::new();
    for h in 0..n {
        let base = if n <= EXACT_UP_TO {
            cells(m, |i, j| i != h && j != h)
        } else {
            all.clone()
        };
        let row = cells(m, |i, _| i == h);
        let col = cells(m, |_, j| j == h);
        let parts: &[(&'static str, &[f64])] = if symmetric {
            &[("from", &row)]
        } else {
            &[("from", &row), ("to", &col)]
        };
        for (part, v) in parts {
            if let Some(med) = median(v) {
                if beyond(med, &base, higher_worse) {
                    out.push((part, h, None, med, range(&base)));
                }
            }
        }
    }
    let taken = |h: usize| out.iter().any(|p| p.1 == h);
    let rest = cells(m, |i, j| !taken(i) && !taken(j) && (!symmetric || i < j));
    if rest.len() >= 6 {
        let mut pairs = Vec::new();
        for (i, row) in m.iter().enumerate() {
            for (j, c) in row.iter().enumerate() {
                let Some(c) = *c else { continue };
                if i == j || taken(i) || taken(j) || (symmetric && i > j) {
                    continue;
                }
                if beyond(c, &rest, higher_worse) {
                    pairs.push(("pair", i, Some(j), c, range(&rest)));
                }
            }
        }
        out.extend(pairs);
    }
    out
}

/// The settings whose values differ between `hosts` (name, settings), each value with
/// its hosts, most hosts first.
pub fn differing(hosts: &[(String, Vec<super::data::Setting>)]) -> Vec<SettingDiff> {
    let mut names: Vec<&str> = Vec::new();
    for (_, s) in hosts {
        for x in s {
            if !names.contains(&x.name.as_str()) {
                names.push(&x.name);
            }
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let mut values: Vec<(String, Vec<String>)> = Vec::new();
            for (host, s) in hosts {
                let v = s
                    .iter()
                    .find(|x| x.name == name)
                    .map(|x| x.value.clone())
                    .unwrap_or_else(|| "not read".into());
                match values.iter_mut().find(|(w, _)| *w == v) {
                    Some((_, hs)) => hs.push(host.clone()),
                    None => values.push((v, vec![host.clone()])),
                }
            }
            values.sort_by_key(|v| std::cmp::Reverse(v.1.len()));
            (values.len() > 1).then(|| SettingDiff {
                setting: name.to_string(),
                values,
            })
        })
        .collect()
}

/// The memory figures of every host: (figure, unit, higher is worse, one value per host).
type Figure = (String, &'static str, bool, Vec<Option<f64>>);

/// A host × host matrix (None: not measured).
type Matrix = Vec<Vec<Option<f64>>>;

fn memory_figures(hosts: &[HostData]) -> Vec<Figure> {
    let mut nodes: Vec<u32> = hosts
        .iter()
        .flat_map(|h| h.memory.iter().map(|m| m.node))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut out = Vec::new();
    for n in nodes {
        let of = |f: fn(&super::data::NodeMemory) -> Option<f64>| -> Vec<Option<f64>> {
            hosts
                .iter()
                .map(|h| h.memory.iter().find(|m| m.node == n).and_then(f))
                .collect()
        };
        out.push((
            format!("node {n} idle latency"),
            "ns",
            true,
            of(|m| m.latency_ns),
        ));
        out.push((
            format!("node {n} read, 1 core"),
            "GB/s",
            false,
            of(|m| m.read_1core_gbps),
        ));
        out.push((
            format!("node {n} read, all cores"),
            "GB/s",
            false,
            of(|m| m.read_all_gbps),
        ));
    }
    out
}

/// The findings of a run: odd hosts by their memory figures, odd links in each matrix,
/// and the differing settings.
pub fn findings(hosts: &[HostData], links: Option<&LinksData>) -> FindingsData {
    let mut f = FindingsData {
        rule: rule_words(),
        ..FindingsData::default()
    };
    if hosts.len() < MIN_HOSTS {
        f.notes.push(format!(
            "{} hosts: no host or link is called odd (the rule holds each against at least two others)",
            hosts.len()
        ));
    }
    f.throttled_hosts = hosts
        .iter()
        .filter(|h| h.throttling.throttled())
        .map(|h| ThrottledHost {
            host: h.host.clone(),
            throttling: h.throttling.clone(),
        })
        .collect();
    for (figure, unit, higher_worse, values) in memory_figures(hosts) {
        for (i, value, others) in odd_values(&values, higher_worse) {
            f.odd_hosts.push(OddHost {
                figure: figure.clone(),
                unit: unit.into(),
                host: hosts[i].host.clone(),
                value,
                others,
            });
        }
    }
    if let Some(l) = links {
        let matrices: [(&str, &str, bool, bool, &Matrix); 3] = [
            ("send bandwidth", "GB/s", false, false, &l.send_gbps),
            ("receive bandwidth", "GB/s", false, false, &l.recv_gbps),
            ("latency", "ns", true, true, &l.latency_ns),
        ];
        for (matrix, unit, higher_worse, symmetric, m) in matrices {
            for (part, h, peer, value, others) in odd_parts(m, higher_worse, symmetric) {
                f.odd_links.push(OddLink {
                    matrix: matrix.into(),
                    part: part.into(),
                    host: l.hosts[h].clone(),
                    peer: peer.map(|p| l.hosts[p].clone()),
                    value,
                    unit: unit.into(),
                    others,
                });
            }
        }
    }
    let named: Vec<(String, Vec<super::data::Setting>)> = hosts
        .iter()
        .map(|h| (h.host.clone(), h.settings.clone()))
        .collect();
    f.settings = differing(&named);
    f
}

#[cfg(test)]
mod tests {
    use super::super::data::{NodeMemory, Setting};
    use super::*;

    fn host(name: &str, bw: f64, thp: &str) -> HostData {
        HostData {
            host: name.into(),
            rank: 0,
            settings: vec![
                Setting {
                    name: "THP".into(),
                    value: thp.into(),
                },
                Setting {
                    name: "kernel".into(),
                    value: "6.1".into(),
                },
            ],
            settings_root: "/".into(),
            memory: vec![NodeMemory {
                node: 0,
                cores: 4,
                latency_ns: Some(90.0 + bw / 100.0),
                read_1core_gbps: Some(12.0),
                read_all_gbps: Some(bw),
                unavailable: Vec::new(),
                chase_bytes: None,
                caveat: None,
            }],
            throttling: Default::default(),
        }
    }

    #[test]
    fn the_host_beyond_the_others_is_named_with_its_value_and_their_range() {
        let hosts: Vec<HostData> = [40.0, 41.0, 39.5, 20.0, 40.5]
            .iter()
            .enumerate()
            .map(|(i, bw)| host(&format!("n{i}"), *bw, "always"))
            .collect();
        let f = findings(&hosts, None);
        assert_eq!(f.odd_hosts.len(), 1, "{:?}", f.odd_hosts);
        let o = &f.odd_hosts[0];
        assert_eq!((o.host.as_str(), o.value), ("n3", 20.0));
        assert_eq!(o.figure, "node 0 read, all cores");
        assert_eq!(o.others, (39.5, 41.0));
        assert!(f.settings.is_empty(), "{:?}", f.settings);
    }

    #[test]
    fn ordinary_spread_and_a_better_host_are_not_odd() {
        // 20 % apart, and one host faster: neither is named.
        assert!(odd_values(&[Some(40.0), Some(48.0), Some(44.0)], false).is_empty());
        assert!(odd_values(&[Some(40.0), Some(40.0), Some(90.0)], false).is_empty());
        // Latency: higher is worse.
        let o = odd_values(&[Some(90.0), Some(91.0), Some(300.0)], true);
        assert_eq!(o.iter().map(|x| x.0).collect::<Vec<_>>(), [2]);
        // Two hosts: neither is "the others".
        assert!(odd_values(&[Some(1.0), Some(100.0)], false).is_empty());
    }

    #[test]
    fn a_slow_hosts_row_and_column_are_named_and_no_one_elses() {
        // Host 2 sends and receives at a hundredth of the others' rate.
        let n = 3;
        let m: Vec<Vec<Option<f64>>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| match (i, j) {
                        _ if i == j => None,
                        (2, _) | (_, 2) => Some(0.02),
                        (0, 1) => Some(2.0),
                        _ => Some(3.5),
                    })
                    .collect()
            })
            .collect();
        let parts = odd_parts(&m, false, false);
        let named: Vec<(&str, usize)> = parts.iter().map(|p| (p.0, p.1)).collect();
        assert_eq!(named, [("from", 2), ("to", 2)], "{parts:?}");
    }

    #[test]
    fn one_slow_link_among_many_is_a_pair() {
        let n = 6;
        let mut m: Vec<Vec<Option<f64>>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| (i != j).then_some(3.0 + (i * j) as f64 * 0.01))
                    .collect()
            })
            .collect();
        m[1][4] = Some(0.3);
        let parts = odd_parts(&m, false, false);
        assert_eq!(parts.len(), 1, "{parts:?}");
        assert_eq!((parts[0].0, parts[0].1, parts[0].2), ("pair", 1, Some(4)));
    }

    #[test]
    fn a_throttled_host_is_named_whatever_its_figures_and_a_grazed_one_is_not() {
        use super::super::data::Throttling;
        use numalab_results::disturb::CpuQuota;
        // Identical figures: the MAD rule names no one; the throttling names n2.
        let mut hosts: Vec<HostData> = (0..3)
            .map(|i| host(&format!("n{i}"), 40.0, "always"))
            .collect();
        hosts[2].throttling = Throttling {
            quota: Some(CpuQuota {
                quota_us: 1000,
                period_us: 20000,
            }),
            passes: 30,
            throttled_passes: 28,
            throttled_us: 812_000,
            wall_us: 905_000,
        };
        // One throttled pass of 3 µs in 900 ms: under 1 %, not named.
        hosts[1].throttling = Throttling {
            passes: 30,
            throttled_passes: 1,
            throttled_us: 3,
            wall_us: 900_000,
            ..Throttling::default()
        };
        let f = findings(&hosts, None);
        assert!(f.odd_hosts.is_empty(), "{:?}", f.odd_hosts);
        let named: Vec<&str> = f.throttled_hosts.iter().map(|t| t.host.as_str()).collect();
        assert_eq!(named, ["n2"]);
        assert_eq!(
            f.throttled_hosts[0].throttling.words(),
            "its cgroup was throttled 812 ms of the 905 ms its memory passes took (28 of 30 passes); CPU quota 1 ms of CPU per 20 ms (5 % of a CPU)"
        );
        // A quota that never throttled a pass names no one.
        hosts[2].throttling.throttled_passes = 0;
        hosts[2].throttling.throttled_us = 0;
        assert!(findings(&hosts, None).throttled_hosts.is_empty());
    }

    #[test]
    fn differing_settings_name_which_hosts_hold_which_value() {
        let hosts = vec![
            host("a", 40.0, "always"),
            host("b", 40.0, "never"),
            host("c", 40.0, "always"),
        ];
        let f = findings(&hosts, None);
        assert_eq!(f.settings.len(), 1);
        let d = &f.settings[0];
        assert_eq!(d.setting, "THP");
        assert_eq!(
            d.values,
            [
                ("always".to_string(), vec!["a".to_string(), "c".to_string()]),
                ("never".to_string(), vec!["b".to_string()])
            ]
        );
    }
}
