//! `--verify-interleave SIZE`: an allocation under `MPOL_WEIGHTED_INTERLEAVE` over the
//! memory nodes, the pages counted per node, and the split the weights the kernel holds
//! under /sys/kernel/mm/mempolicy/weighted_interleave imply.

use numalab_topo::interleave::weighted_interleave;
use numalab_topo::{fmt_bytes, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the allocation showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterleaveCheck {
    /// The size asked for, bytes.
    pub size_bytes: u64,
    /// The base page size, bytes.
    pub page_bytes: u64,
    /// Pages allocated.
    pub pages: u64,
    /// The node mask of the policy.
    pub nodes: Vec<u32>,
    /// Each node's weight, as read from sysfs before allocating.
    pub weights: BTreeMap<u32, u32>,
    /// Pages per node, as move_pages(2) found them.
    pub pages_per_node: BTreeMap<u32, u64>,
    /// Pages per node the weights imply: whole rounds of the weights, the rest in node
    /// order (where a round starts depends on the address, so a node may be off by up
    /// to its weight).
    pub expected_per_node: BTreeMap<u32, u64>,
    /// Pages not found on any node.
    pub pages_missing: u64,
    /// Whether every node is within its weight of the expected count, none missing.
    pub matches: bool,
}

/// The split `weights` imply for `pages` pages over `nodes`: whole rounds of the
/// weights (exact), then the remainder handed out in node order.
pub fn expected(pages: u64, nodes: &[u32], weights: &BTreeMap<u32, u32>) -> BTreeMap<u32, u64> {
    let w = |n: &u32| u64::from(weights.get(n).copied().unwrap_or(1).max(1));
    let total: u64 = nodes.iter().map(w).sum();
    let mut rest = pages % total.max(1);
    nodes
        .iter()
        .map(|n| {
            let extra = rest.min(w(n));
            rest -= extra;
            (*n, pages / total.max(1) * w(n) + extra)
        })
        .collect()
}

/// Allocate `size` bytes under weighted interleave over `nodes` with their `weights`
/// and compare where the pages landed with the split the weights imply.
pub fn check(size: u64, nodes: &[u32], weights: &BTreeMap<u32, u32>) -> Result<InterleaveCheck> {
    let landed = weighted_interleave(size, nodes)?;
    let weights: BTreeMap<u32, u32> = nodes
        .iter()
        .map(|n| (*n, weights.get(n).copied().unwrap_or(1)))
        .collect();
    let want = expected(landed.pages, nodes, &weights);
    let matches = landed.missing == 0
        && nodes.iter().all(|n| {
            let got = landed.per_node.get(n).copied().unwrap_or(0);
            got.abs_diff(want[n]) <= u64::from(weights[n])
        })
        && landed.per_node.keys().all(|n| nodes.contains(n));
    Ok(InterleaveCheck {
        size_bytes: size,
        page_bytes: landed.page_bytes,
        pages: landed.pages,
        nodes: nodes.to_vec(),
        weights,
        pages_per_node: landed.per_node,
        expected_per_node: want,
        pages_missing: landed.missing,
        matches,
    })
}

/// The check in one line of text.
pub fn words(c: &InterleaveCheck) -> String {
    let per: Vec<String> = c
        .nodes
        .iter()
        .map(|n| {
            format!(
                "node {n} {} (expected {}, weight {})",
                numalab_results::words::count(
                    c.pages_per_node.get(n).copied().unwrap_or(0),
                    "page"
                ),
                c.expected_per_node.get(n).copied().unwrap_or(0),
                c.weights.get(n).copied().unwrap_or(0)
            )
        })
        .collect();
    format!(
        "{} in {} of {}: {}{}; {}",
        fmt_bytes(c.size_bytes),
        numalab_results::words::count(c.pages, "page"),
        fmt_bytes(c.page_bytes),
        per.join(", "),
        if c.pages_missing > 0 {
            format!(", {} not placed", c.pages_missing)
        } else {
            String::new()
        },
        if c.matches {
            "the split follows the weights"
        } else {
            "the split does NOT follow the weights"
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_rounds_split_exactly_and_the_rest_goes_in_node_order() {
        let w: BTreeMap<u32, u32> = [(0, 3), (1, 1)].into();
        let e = expected(16384, &[0, 1], &w);
        assert_eq!(e, [(0, 12288), (1, 4096)].into());
        let w: BTreeMap<u32, u32> = [(0, 3), (1, 1), (2, 1)].into();
        // 16384 = 3276 rounds of 5 + 4: node 0 takes 3 of the rest, node 1 one.
        let e = expected(16384, &[0, 1, 2], &w);
        assert_eq!(e, [(0, 9831), (1, 3277), (2, 3276)].into());
        assert_eq!(e.values().sum::<u64>(), 16384);
    }
}
