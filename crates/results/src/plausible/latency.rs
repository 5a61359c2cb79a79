//! Latency rules: loaded latency against unloaded, a loaded curve that falls, the
//! order of the sweep's levels, and plateaus wider than their cache.

use super::{caches, Flag, Ref, LEVEL_ORDER_TOL, LOADED_BELOW_TOL, PLATEAU_SPAN_TOL};
use crate::interval;
use crate::record::Record;
use serde_json::Value;

/// The memory a loaded-latency record chases, and the CPU chasing it.
fn memory_of(r: &Record) -> (String, String) {
    let s = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    (
        s(&r.parameters["mem_node"]),
        s(&r.parameters["requestor_cpu"]),
    )
}

fn injectors(r: &Record) -> u64 {
    r.parameters["injectors"].as_u64().unwrap_or(0)
}

/// The sweep's memory plateau: its record, metric and median.
fn sweep_memory(records: &[Record]) -> Option<(&Record, String, f64)> {
    records
        .iter()
        .filter(|r| r.kind == "latency-sweep")
        .find_map(|r| {
            let p = plateaus(r)
                .into_iter()
                .find(|p| p["level"].as_str() == Some("memory"))?;
            Some((r, "plateau memory".to_string(), p["median_ns"].as_f64()?))
        })
}

/// Below `reference` by more than the tolerance.
fn below(v: f64, reference: f64) -> bool {
    v < reference * (1.0 - LOADED_BELOW_TOL)
}

/// Each loaded point below its curve's unloaded point, and every point of the family
/// (the unloaded one too) below the sweep's memory plateau, which chases the same
/// memory from smaller, prefetch-friendlier buffers and so reads lower if anything.
pub(super) fn loaded_below_unloaded(records: &[Record], flags: &mut Vec<Flag>) {
    let loaded: Vec<(&Record, f64)> = records
        .iter()
        .filter(|r| r.kind == "loaded-latency")
        .filter_map(|r| Some((r, r.median("latency")?)))
        .collect();
    let sweep = sweep_memory(records);
    for (r, lat) in &loaded {
        if injectors(r) > 0 {
            let base = loaded
                .iter()
                .find(|(u, _)| injectors(u) == 0 && memory_of(u) == memory_of(r));
            if let Some((u, ul)) = base {
                if below(*lat, *ul) {
                    flags.push(Flag {
                        rule: "loaded-below-unloaded",
                        records: vec![Ref::of(r, "latency"), Ref::of(u, "latency")],
                        why: format!(
                            "loaded point '{}' at {lat:.1} ns, below the unloaded {ul:.1} ns of the same memory",
                            r.name
                        ),
                    });
                }
            }
        }
        if let Some((s, metric, sl)) = &sweep {
            if below(*lat, *sl) {
                flags.push(Flag {
                    rule: "loaded-below-unloaded",
                    records: vec![Ref::of(r, "latency")],
                    why: format!(
                        "loaded-latency point '{}' at {lat:.1} ns, below the sweep's memory plateau of {sl:.1} ns ({} {metric})",
                        r.name, s.name
                    ),
                });
            }
        }
    }
}

/// Within one curve (memory, CPU, traffic mix), a point at higher injected bandwidth
/// whose latency interval lies wholly below a lighter point's and whose median reads
/// more than [`LOADED_BELOW_TOL`] below it: queueing only adds. The same tolerance as a
/// loaded point against the unloaded one (the curve's zero-load point), for the same
/// reason: light traffic keeps the memory fabric out of its power-saving states, so
/// light points can read a few percent below idle and below one another (a quiet
/// 2-vCPU EPYC guest's curve read 145.7 ns at 0.37 GB/s against 153.6 ns at 0.03 GB/s,
/// both intervals from settled passes).
pub(super) fn curve_falls(records: &[Record], flags: &mut Vec<Flag>) {
    let mut pts: Vec<(&Record, f64, (f64, f64), f64)> = records
        .iter()
        .filter(|r| r.kind == "loaded-latency" && injectors(r) > 0)
        .filter_map(|r| {
            Some((
                r,
                r.median("injected_bandwidth")?,
                interval::of(r, "latency")?,
                r.median("latency")?,
            ))
        })
        .collect();
    pts.sort_by(|a, b| a.1.total_cmp(&b.1));
    let curve = |r: &Record| {
        (
            memory_of(r),
            r.parameters["mix"].to_string(),
            r.parameters["write_pct"].to_string(),
        )
    };
    for (j, (rj, bj, (_, hij), mj)) in pts.iter().enumerate() {
        let lighter = pts[..j].iter().find(|(ri, bi, (loi, _), mi)| {
            bi < bj && curve(ri) == curve(rj) && hij < loi && below(*mj, *mi)
        });
        if let Some((ri, bi, (loi, _), _)) = lighter {
            flags.push(Flag {
                rule: "loaded-curve-falls",
                records: vec![Ref::of(rj, "latency"), Ref::of(ri, "latency")],
                why: format!(
                    "'{}' at {bj:.2} GB/s injected reads at most {hij:.1} ns, below the least {loi:.1} ns of '{}' at {bi:.2} GB/s",
                    rj.name, ri.name
                ),
            });
        }
    }
}

/// The plateaus of a sweep record's data.
fn plateaus(r: &Record) -> Vec<Value> {
    r.data
        .as_ref()
        .and_then(|d| d.get("plateaus")?.as_array().cloned())
        .unwrap_or_default()
}

/// A sweep level faster than the level above it (a smaller buffer), or a cache level
/// slower than memory.
pub(super) fn level_order(records: &[Record], flags: &mut Vec<Flag>) {
    for r in records.iter().filter(|r| r.kind == "latency-sweep") {
        let ps: Vec<(String, f64)> = plateaus(r)
            .iter()
            .filter_map(|p| Some((p["level"].as_str()?.to_string(), p["median_ns"].as_f64()?)))
            .collect();
        let flag = |level: &str, why: String| Flag {
            rule: "level-order",
            records: vec![Ref::of(r, &format!("plateau {level}"))],
            why,
        };
        for w in ps.windows(2) {
            let ((up, a), (down, b)) = (&w[0], &w[1]);
            if *b < a * (1.0 - LEVEL_ORDER_TOL) {
                flags.push(flag(
                    down,
                    format!("{down} at {b:.1} ns, faster than {up} before it at {a:.1} ns"),
                ));
            }
        }
        let mem = ps.iter().find(|(l, _)| l == "memory").map(|(_, v)| *v);
        for (l, v) in ps.iter().filter(|(l, _)| l.starts_with('L')) {
            match mem {
                Some(m) if *v > m * (1.0 + LEVEL_ORDER_TOL) => flags.push(flag(
                    l,
                    format!("cache level {l} at {v:.1} ns, slower than memory at {m:.1} ns"),
                )),
                _ => {}
            }
        }
    }
}

/// The cache level a plateau name refers to: "L3" and "unmatched, within L3" → 3.
fn cache_level(name: &str) -> Option<u64> {
    if name.contains("beyond") {
        return None;
    }
    let i = name.find('L')?;
    name[i + 1..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()
}

/// A plateau named after (or within) a cache that reaches past that cache's size.
pub(super) fn plateau_span(records: &[Record], flags: &mut Vec<Flag>) {
    let cs = caches(records);
    for r in records.iter().filter(|r| r.kind == "latency-sweep") {
        for p in plateaus(r) {
            let (Some(level), Some(to)) = (p["level"].as_str(), p["to_bytes"].as_u64()) else {
                continue;
            };
            let Some(n) = cache_level(level) else {
                continue;
            };
            let bytes = p["topology_bytes"]
                .as_u64()
                .filter(|_| level.starts_with('L'))
                .or_else(|| cs.iter().find(|c| c.0 == n).map(|c| c.1));
            let Some(bytes) = bytes else { continue };
            if to as f64 > bytes as f64 * (1.0 + PLATEAU_SPAN_TOL) {
                flags.push(Flag {
                    rule: "plateau-span",
                    records: vec![Ref::of(r, &format!("plateau {level}"))],
                    why: format!(
                        "plateau '{level}' reaches {} MiB, past the {} MiB L{n}",
                        to as f64 / 1048576.0,
                        bytes as f64 / 1048576.0
                    ),
                });
            }
        }
    }
}
