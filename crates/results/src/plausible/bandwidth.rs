//! Bandwidth rules: thread scaling (N threads between one thread's figure and N times
//! it) and writes no faster than reads from the same level.

use super::{caches, Flag, Ref, BANDWIDTH_SCALING_TOL, WRITE_OVER_READ_TOL};
use crate::record::Record;

/// A bandwidth record's figure: its metric, thread count and figure (its best pass).
struct Bw<'a> {
    r: &'a Record,
    metric: &'static str,
    threads: u64,
    kernel: String,
    state: String,
    level: String,
    gbps: f64,
}

/// Where a record's lines are when a pass starts: "L2", "memory", or, without a
/// topology, its buffer size (records of one size are then compared only).
fn level_of(r: &Record, cs: &[(u64, u64, u64)]) -> String {
    let p = &r.parameters;
    let threads = p["requestors"].as_u64().unwrap_or(1);
    let size = p["size_bytes"].as_u64().unwrap_or(0);
    let state = p["state"].as_str().unwrap_or("warm");
    if cs.is_empty() {
        return format!("a {size} B buffer");
    }
    // Flushed from every cache before each pass: the data comes from memory.
    if state == "uown" {
        return "memory".into();
    }
    cs.iter()
        .filter(|(_, _, shared)| state != "cexm" || *shared > 1)
        // Requestors sharing one cache instance all put their buffers in it.
        .find(|(_, bytes, shared)| size.saturating_mul(threads.min((*shared).max(1))) <= *bytes)
        .map_or_else(|| "memory".into(), |(l, _, _)| format!("L{l}"))
}

/// Every single-thread and aggregate bandwidth figure of `records`.
fn figures(records: &[Record]) -> Vec<Bw<'_>> {
    let cs = caches(records);
    records
        .iter()
        .filter(|r| r.kind == "bandwidth")
        .filter_map(|r| {
            let p = &r.parameters;
            let threads = p["requestors"].as_u64().unwrap_or(1);
            let aggregate = p.get("requestor_cpus").is_some();
            // Per-requestor records of a multi-thread run are parts of its aggregate.
            if threads > 1 && !aggregate {
                return None;
            }
            let metric = if aggregate {
                "aggregate_bandwidth"
            } else {
                "bandwidth"
            };
            Some(Bw {
                r,
                metric,
                threads,
                kernel: p["kernel"].as_str()?.to_string(),
                state: p["state"].as_str().unwrap_or("warm").to_string(),
                level: level_of(r, &cs),
                gbps: r.figure(metric)?,
            })
        })
        .collect()
}

/// N threads' aggregate above N × one thread's figure, or below one thread's, for the
/// same kernel, line state and level. A survey measures one thread more than once
/// (the kernels step, the scaling row), and on a shared host the same figure drifts
/// between steps a few seconds apart (one thread's reads from memory: 11.4 and
/// 12.5 GB/s in one quiet survey of the 2-vCPU guest, 14.6 and 12.4 in the next). What
/// one thread can do is its best figure, so N threads are held against N × the best
/// (else a quiet run's 25.9 GB/s on 2 threads read "2.3× one thread's 11.4" beside a
/// 12.5 of the same run), and "below one thread" against the worst.
pub(super) fn scaling(records: &[Record], flags: &mut Vec<Flag>) {
    let figs = figures(records);
    for n in figs.iter().filter(|f| f.threads > 1) {
        let ones: Vec<&Bw> = figs
            .iter()
            .filter(|f| {
                f.threads == 1
                    && f.kernel == n.kernel
                    && f.state == n.state
                    && f.level == n.level
                    && f.gbps > 0.0
            })
            .collect();
        let best = ones.iter().max_by(|a, b| a.gbps.total_cmp(&b.gbps));
        let worst = ones.iter().min_by(|a, b| a.gbps.total_cmp(&b.gbps));
        let (Some(best), Some(worst)) = (best, worst) else {
            continue;
        };
        let above = n.gbps > best.gbps * n.threads as f64 * (1.0 + BANDWIDTH_SCALING_TOL);
        let below = n.gbps < worst.gbps * (1.0 - BANDWIDTH_SCALING_TOL);
        let (one, what) = match (above, below) {
            // On a shared host the two figures come from different seconds (a
            // quiet survey read 2.4× once, its all-thread step at a fast moment), so
            // the flag says what it knows: the two do not fit together.
            (true, _) => (
                best,
                format!(
                    "more than {} threads can: one of the two is off, or the host's bandwidth moved between them",
                    n.threads
                ),
            ),
            (_, true) => (worst, "less than one thread alone".into()),
            _ => continue,
        };
        let x = n.gbps / one.gbps;
        flags.push(Flag {
            rule: "bandwidth-scaling",
            records: vec![Ref::of(n.r, n.metric), Ref::of(one.r, one.metric)],
            why: format!(
                "{} threads {} {:.1} GB/s from {}, {x:.1}× one thread's {}{:.1} GB/s ({what})",
                n.threads,
                n.kernel,
                n.gbps,
                n.level,
                match (ones.len() > 1, above) {
                    (false, _) => "",
                    (true, true) => "best ",
                    (true, false) => "lowest ",
                },
                one.gbps,
            ),
        });
    }
}

/// A write stream (RDEX, zero) faster than the best read stream from the same level
/// with the same threads: a write must at least fetch the line it writes.
pub(super) fn writes_over_reads(records: &[Record], flags: &mut Vec<Flag>) {
    let figs = figures(records);
    for w in figs
        .iter()
        .filter(|f| f.kernel == "rdex" || f.kernel == "zero")
    {
        let best = figs
            .iter()
            .filter(|f| {
                (f.kernel == "read" || f.kernel == "readv")
                    && f.level == w.level
                    && f.threads == w.threads
            })
            .max_by(|a, b| a.gbps.total_cmp(&b.gbps));
        let Some(rd) = best else { continue };
        if w.gbps > rd.gbps * (1.0 + WRITE_OVER_READ_TOL) {
            flags.push(Flag {
                rule: "write-faster-than-read",
                // A read disturbed low makes a sound write look too fast: both are named.
                records: vec![Ref::of(w.r, w.metric), Ref::of(rd.r, rd.metric)],
                why: format!(
                    "{} of {} lines at {:.1} GB/s from {}, faster than {} reads from it at {:.1} GB/s",
                    w.kernel, w.state, w.gbps, w.level, rd.kernel, rd.gbps
                ),
            });
        }
    }
}
