//! The rank matrix folded into domains: host × host when the ranks span hosts, and
//! node × node inside each host whose ranks sit on more than one NUMA node.

use super::data::Domains;
use crate::place::RankPlacement;
use numalab_results::stats::median;

/// One measured pair: ranks a and b and their median, ns.
pub type Cell = (usize, usize, f64);

/// Fold `cells` by `label` (a rank's domain; None: left out), domains in the order
/// their first rank comes.
fn fold(
    placed: &[RankPlacement],
    cells: &[Cell],
    host: Option<String>,
    label: &dyn Fn(&RankPlacement) -> Option<String>,
) -> Domains {
    let mut labels: Vec<String> = Vec::new();
    for p in placed {
        if let Some(l) = label(p).filter(|l| !labels.contains(l)) {
            labels.push(l);
        }
    }
    let at = |r: usize| {
        let l = label(placed.get(r)?)?;
        labels.iter().position(|x| *x == l)
    };
    let n = labels.len();
    let mut values: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n]; n];
    for &(a, b, v) in cells {
        if let (Some(i), Some(j)) = (at(a), at(b)) {
            values[i][j].push(v);
            if i != j {
                values[j][i].push(v);
            }
        }
    }
    Domains {
        host,
        labels,
        median_ns: values
            .iter()
            .map(|row| row.iter().map(|v| median(v)).collect())
            .collect(),
        pairs: values
            .iter()
            .map(|row| row.iter().map(Vec::len).collect())
            .collect(),
    }
}

/// Host × host, when the ranks are on more than one host.
pub fn by_host(placed: &[RankPlacement], cells: &[Cell]) -> Option<Domains> {
    let d = fold(placed, cells, None, &|p| Some(p.host.clone()));
    (d.labels.len() > 1).then_some(d)
}

/// Node × node inside each host whose ranks are on more than one node.
pub fn by_node(placed: &[RankPlacement], cells: &[Cell]) -> Vec<Domains> {
    let mut hosts: Vec<&str> = Vec::new();
    for p in placed {
        if !hosts.contains(&p.host.as_str()) {
            hosts.push(&p.host);
        }
    }
    hosts
        .into_iter()
        .map(|h| {
            let label = |p: &RankPlacement| {
                (p.host == h)
                    .then(|| format!("node {}", p.node.map_or("?".into(), |n| n.to_string())))
            };
            fold(placed, cells, Some(h.to_string()), &label)
        })
        .filter(|d| d.labels.len() > 1)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rp(rank: usize, host: &str, node: u32) -> RankPlacement {
        RankPlacement {
            rank,
            host: host.into(),
            local_rank: 0,
            cpu: rank as u32,
            core: rank as u32,
            l3: None,
            node: Some(node),
            package: Some(0),
            observed_cpu: None,
            verified: true,
            shares_cpu: false,
        }
    }

    #[test]
    fn pairs_fold_into_host_by_host_and_node_by_node() {
        // Ranks 0, 1 on host a (nodes 0, 1); ranks 2, 3 on host b (node 0).
        let placed = [rp(0, "a", 0), rp(1, "a", 1), rp(2, "b", 0), rp(3, "b", 0)];
        let cells = [
            (0, 1, 100.0),
            (0, 2, 1000.0),
            (0, 3, 1200.0),
            (1, 2, 1100.0),
            (1, 3, 1300.0),
            (2, 3, 50.0),
        ];
        let h = by_host(&placed, &cells).unwrap();
        assert_eq!(h.labels, ["a", "b"]);
        assert_eq!(h.median_ns[0][1], Some(1150.0));
        assert_eq!(h.median_ns[1][0], Some(1150.0));
        assert_eq!(
            (h.median_ns[0][0], h.median_ns[1][1]),
            (Some(100.0), Some(50.0))
        );
        assert_eq!(h.pairs[0][1], 4);
        let n = by_node(&placed, &cells);
        assert_eq!(n.len(), 1, "host b has one node");
        assert_eq!(n[0].host.as_deref(), Some("a"));
        assert_eq!(n[0].labels, ["node 0", "node 1"]);
        assert_eq!(n[0].median_ns[0][1], Some(100.0));
        assert_eq!(n[0].median_ns[0][0], None);
        assert!(by_host(&placed[..2], &cells[..1]).is_none());
    }
}
