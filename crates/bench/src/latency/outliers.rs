//! Sweep outliers measured again: a size whose latency is far above or below both neighbours
//! (see [`crate::sweep::is_outlier`]) is run once more, and the second run is the one
//! the records keep; the sweep record says whether the outlier persisted.

use super::{measure, LatencyPlan, SizeResult};
use crate::experiment::Progress;
use crate::sweep::{is_outlier, outliers, Spread};
use numalab_probe::Timer;
use numalab_topo::{fmt_bytes, Host, Result};

/// Requestor `k`'s curve: each size's median and 95th-percentile pass.
pub fn curve(results: &[SizeResult], k: usize) -> Vec<Spread> {
    results
        .iter()
        .map(|r| {
            r.requestors
                .get(k)
                .and_then(|q| Spread::of(&q.ns))
                .unwrap_or(Spread {
                    p5_ns: f64::NAN,
                    median_ns: f64::NAN,
                    p95_ns: f64::NAN,
                })
        })
        .collect()
}

/// Sizes that are an outlier for any requestor, in size order.
pub fn outlier_sizes(results: &[SizeResult]) -> Vec<usize> {
    let n = results.first().map_or(0, |r| r.requestors.len());
    let mut idx: Vec<usize> = (0..n).flat_map(|k| outliers(&curve(results, k))).collect();
    idx.sort_unstable();
    idx.dedup();
    idx
}

/// Measure every outlier size once more; the second run replaces the first in
/// `results`, and the first runs are returned with their index.
pub fn remeasure(
    host: &Host,
    timer: &Timer,
    plan: &LatencyPlan,
    results: &mut [SizeResult],
    progress: Progress,
) -> Result<Vec<(usize, SizeResult)>> {
    let mut first = Vec::new();
    for i in outlier_sizes(results) {
        let size = results[i].shape.size;
        progress(&format!(
            "latency: {} is far from both neighbours: measuring it again",
            fmt_bytes(size)
        ));
        let again = measure(host, timer, plan, size)?;
        first.push((i, std::mem::replace(&mut results[i], again)));
    }
    Ok(first)
}

/// Whether requestor `k`'s point `i` is still an outlier after the re-measure.
pub fn persisted(results: &[SizeResult], k: usize, i: usize) -> bool {
    is_outlier(&curve(results, k), i)
}
