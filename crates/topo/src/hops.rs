//! Node distances and the hop counts derived from them.
//!
//! Hops are the rank of a distance among the distinct values of the matrix:
//! the local value is 0 hops, the next larger 1, and so on (10/20/40/80 → 0/1/2/3).
//! hwloc may hold several matrices (NUMA SLIT, or package/group matrices); the
//! one that distinguishes most distances between nodes is used, and named.

use crate::model::{Node, NodeDistances, Pu};
use hwlocality::object::distance::DistancesKind;
use hwlocality::object::types::ObjectType;
use hwlocality::Topology;
use std::collections::BTreeSet;

/// Rank every value of a square matrix among its distinct values.
pub fn hops_from_values(values: &[Vec<u64>]) -> Vec<Vec<u32>> {
    let distinct: BTreeSet<u64> = values.iter().flatten().copied().collect();
    let distinct: Vec<u64> = distinct.into_iter().collect();
    values
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| distinct.binary_search(v).unwrap_or(0) as u32)
                .collect()
        })
        .collect()
}

fn distinct_count(values: &[Vec<u64>]) -> usize {
    values.iter().flatten().collect::<BTreeSet<_>>().len()
}

/// Build the node distance matrix from hwloc, or fall back to the object tree.
pub fn node_distances(topology: &Topology, nodes: &[Node], pus: &[Pu]) -> NodeDistances {
    let ids: Vec<u32> = nodes.iter().map(|n| n.os).collect();
    let mut best: Option<NodeDistances> = None;
    for d in topology.distances(None).unwrap_or_default() {
        if d.kind().contains(DistancesKind::MEANS_BANDWIDTH) {
            continue;
        }
        let objs: Vec<_> = d.objects().collect();
        let n = objs.len();
        let raw = d.distances();
        if raw.len() != n * n {
            continue;
        }
        // For each node, the position in this matrix of the object that holds it.
        let pos: Option<Vec<usize>> = nodes
            .iter()
            .map(|node| {
                let hits: Vec<usize> = objs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, o)| {
                        let o = (*o)?;
                        let holds = if o.object_type() == ObjectType::NUMANode {
                            o.os_index() == Some(node.os as usize)
                        } else {
                            !node.local_cpus.is_empty()
                                && o.cpuset().is_some_and(|s| {
                                    node.local_cpus.iter().all(|c| s.is_set(*c as usize))
                                })
                        };
                        holds.then_some(i)
                    })
                    .collect();
                // The innermost holder is the one with the smallest cpuset.
                hits.into_iter().min_by_key(|&i| {
                    objs[i]
                        .and_then(|o| o.cpuset())
                        .and_then(|s| s.weight())
                        .unwrap_or(usize::MAX)
                })
            })
            .collect();
        let Some(pos) = pos else { continue };
        let values: Vec<Vec<u64>> = pos
            .iter()
            .map(|&a| pos.iter().map(|&b| raw[a * n + b]).collect())
            .collect();
        let ty = objs
            .first()
            .and_then(|o| *o)
            .map(|o| o.object_type().to_string())
            .unwrap_or_default();
        let name = d
            .name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "unnamed".into());
        let candidate = NodeDistances {
            source: format!("hwloc {ty} matrix '{name}'"),
            nodes: ids.clone(),
            hops: hops_from_values(&values),
            values,
        };
        let better = match &best {
            None => true,
            Some(b) => distinct_count(&candidate.values) > distinct_count(&b.values),
        };
        if better {
            best = Some(candidate);
        }
    }
    best.unwrap_or_else(|| tree_distances(nodes, pus))
}

/// Without a matrix: 0 hops within a node, 1 within a package, 2 across packages.
fn tree_distances(nodes: &[Node], pus: &[Pu]) -> NodeDistances {
    let package_of = |node: &Node| -> Option<u32> {
        node.local_cpus
            .iter()
            .find_map(|c| pus.iter().find(|p| p.os == *c).and_then(|p| p.package))
    };
    let hops = nodes
        .iter()
        .map(|a| {
            nodes
                .iter()
                .map(|b| {
                    if a.os == b.os {
                        0
                    } else {
                        match (package_of(a), package_of(b)) {
                            (Some(x), Some(y)) if x != y => 2,
                            _ => 1,
                        }
                    }
                })
                .collect()
        })
        .collect();
    NodeDistances {
        source: "topology tree (no distance matrix): 0 same node, 1 same package or unknown, 2 other package"
            .into(),
        nodes: nodes.iter().map(|n| n.os).collect(),
        values: Vec::new(),
        hops,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_distinct_values() {
        let v = vec![vec![10, 20, 40], vec![20, 10, 80], vec![40, 80, 10]];
        assert_eq!(
            hops_from_values(&v),
            vec![vec![0, 1, 2], vec![1, 0, 3], vec![2, 3, 0]]
        );
    }
}
