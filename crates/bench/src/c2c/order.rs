//! CPUs in topology order (package → NUMA node → L3 → core → PU) with the boundaries
//! between domains, for CPU × CPU heatmaps: neighbours in the matrix are neighbours in
//! the machine, so its blocks are the machine's domains.

use numalab_results::plot::{boundaries, Boundary};
use numalab_results::Record;
use numalab_topo::Pu;

/// The records' topology PUs (empty when they hold no topology record).
pub fn pus(records: &[Record]) -> Vec<Pu> {
    records
        .iter()
        .find(|r| r.kind == "topo")
        .and_then(|r| r.data.as_ref()?.get("pus").cloned())
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// The order to show `cpus` in (indices into `cpus`) and the domain boundaries in that
/// order. CPUs the topology does not know keep their given order, after the others;
/// with no topology the given order stands and no boundary is drawn.
pub fn topology_order(cpus: &[u32], pus: &[Pu]) -> (Vec<usize>, Vec<Boundary>) {
    let of = |c: u32| pus.iter().find(|p| p.os == c);
    let key = |i: usize| {
        of(cpus[i]).map(|p| {
            (
                p.package.unwrap_or(u32::MAX),
                p.node.unwrap_or(u32::MAX),
                p.l3.unwrap_or(u32::MAX),
                p.core,
                p.smt_rank,
                p.os,
            )
        })
    };
    let mut idx: Vec<usize> = (0..cpus.len()).collect();
    // None sorts first; unknown CPUs go last, so compare (is unknown, key).
    idx.sort_by_key(|&i| (key(i).is_none(), key(i), i));
    let bounds = boundaries(&idx, |i| {
        of(cpus[i]).map(|p| vec![("package", p.package), ("node", p.node), ("l3", p.l3)])
    });
    (idx, bounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pu(os: u32, package: u32, node: u32, l3: u32, core: u32) -> Pu {
        Pu {
            os,
            logical: os,
            core,
            smt_rank: 0,
            l2: Some(core),
            l3: Some(l3),
            die: None,
            package: Some(package),
            group: None,
            node: Some(node),
            kind: None,
        }
    }

    #[test]
    fn cpus_follow_the_topology_and_domains_are_bounded() {
        // Linux numbers CPUs round-robin over packages on many 2-socket machines.
        let pus = [
            pu(0, 0, 0, 0, 0),
            pu(1, 1, 1, 2, 4),
            pu(2, 0, 0, 1, 2),
            pu(3, 1, 1, 3, 6),
            pu(4, 0, 0, 0, 1),
            pu(5, 1, 1, 2, 5),
        ];
        let cpus = [5, 4, 3, 2, 1, 0, 9];
        let (order, bounds) = topology_order(&cpus, &pus);
        let shown: Vec<u32> = order.iter().map(|&i| cpus[i]).collect();
        assert_eq!(shown, [0, 4, 2, 1, 5, 3, 9]);
        assert_eq!(
            bounds,
            [
                Boundary {
                    after: 1,
                    kind: "l3"
                },
                Boundary {
                    after: 2,
                    kind: "package"
                },
                Boundary {
                    after: 4,
                    kind: "l3"
                },
            ]
        );
        let m = vec![vec![Some(1.0), Some(2.0)], vec![Some(3.0), None]];
        assert_eq!(
            numalab_results::plot::permute(&m, &[1, 0]),
            vec![vec![None, Some(3.0)], vec![Some(2.0), Some(1.0)]]
        );
        let (same, none) = topology_order(&[3, 1], &[]);
        assert_eq!(same, [0, 1]);
        assert!(none.is_empty());
    }
}
