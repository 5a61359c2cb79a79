//! Weighted interleave with measured weights: pages spread over the memory nodes in
//! proportion to the bandwidth the threads' nodes measured to each.

use super::measured::Measured;
use std::collections::BTreeMap;

/// Weights in proportion to bandwidth: the fastest node 10, none below 1 (the kernel's
/// weights are 1 to 255).
pub fn weights_from(bw: &[(u32, f64)]) -> Vec<(u32, u32)> {
    let max = bw.iter().map(|x| x.1).fold(0.0, f64::max);
    bw.iter()
        .map(|(n, b)| (*n, ((10.0 * b / max).round() as u32).clamp(1, 255)))
        .collect()
}

/// Measured weights for threads on `used` nodes: each memory node's weight follows
/// the sum of the bandwidths the used nodes measured to it; None when a cell is
/// missing or fewer than two memory nodes were measured.
pub fn measured_weights(m: &Measured, used: &[u32]) -> Option<Vec<(u32, u32)>> {
    let bw: Option<Vec<(u32, f64)>> = m
        .mem_nodes
        .iter()
        .map(|x| {
            let sum: Option<f64> = used.iter().map(|d| Some(m.bw(*d, *x)?.median)).sum();
            Some((*x, sum?))
        })
        .collect();
    let bw = bw?;
    if bw.len() < 2 || bw.iter().any(|x| x.1 <= 0.0) || used.is_empty() {
        return None;
    }
    Some(weights_from(&bw))
}

/// Each node's share of the pages under these weights.
pub fn weight_shares(nodes: &[u32], weights: &[u32]) -> BTreeMap<u32, f64> {
    let sum: u32 = weights.iter().sum();
    nodes
        .iter()
        .zip(weights)
        .map(|(n, w)| (*n, *w as f64 / sum.max(1) as f64))
        .collect()
}
