//! Initiator domain × memory node matrices (MLC's latency and bandwidth matrices):
//! which CPUs initiate from each domain and how far each node is from them.

mod experiment;
mod present;
mod text;
pub use experiment::{run, Options, Plan};
pub use present::{
    MatrixPresenter, KIND_BANDWIDTH, KIND_BANDWIDTH_PLAN, KIND_LATENCY, KIND_LATENCY_PLAN,
};

use numalab_topo::{Error, Level, Machine, Result, ThreadPlacement};
use serde::Serialize;

/// One cell: initiators in a domain reading memory on a node.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Level of the initiator domains.
    pub level: String,
    /// Domain index (as `numalab topo` lists it).
    pub domain: u32,
    /// Initiator threads (one for latency; one per core for bandwidth).
    pub initiators: Vec<ThreadPlacement>,
    /// Memory node.
    pub node: u32,
    /// Hops from the first initiator's node to the memory node, when known.
    pub hops: Option<u32>,
}

/// Cells for every initiator domain at `level` × every node with memory. `per_core`:
/// one initiator per core of the domain (bandwidth); otherwise its first CPU (latency).
pub fn cells(m: &Machine, level: Level, per_core: bool) -> Result<Vec<Cell>> {
    let domains = m.domains(level).ok_or_else(|| {
        Error::bad(
            "level",
            level.name(),
            format!(
                "a level this topology has: {}",
                m.levels
                    .iter()
                    .map(|l| l.level.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let nodes = m.memory_nodes();
    let mut out = Vec::new();
    for d in domains.iter().filter(|d| !d.cpus.is_empty()) {
        let mut seen_cores = Vec::new();
        let mut init: Vec<ThreadPlacement> = Vec::new();
        // SMT siblings last: first hardware thread of each core.
        let mut pus: Vec<_> = d.cpus.iter().filter_map(|c| m.pu(*c)).collect();
        pus.sort_by_key(|p| (p.smt_rank, p.logical));
        for p in pus {
            if seen_cores.contains(&p.core) {
                continue;
            }
            seen_cores.push(p.core);
            init.push(ThreadPlacement {
                thread: init.len(),
                pu: p.clone(),
            });
            if !per_core {
                break;
            }
        }
        let from = init.first().and_then(|t| t.pu.node);
        for &n in &nodes {
            out.push(Cell {
                level: level.name().into(),
                domain: d.index,
                initiators: init.clone(),
                node: n,
                hops: from.and_then(|f| m.distances.hops_between(f, n)),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::{Host, TopologySource};

    #[test]
    fn every_domain_meets_every_memory_node() {
        let host = Host::load(&TopologySource::Synthetic(
            "pack:2 numa:2 core:4 pu:2".into(),
        ))
        .unwrap();
        let m = &host.machine;
        let c = cells(m, Level::Node, false).unwrap();
        assert_eq!(c.len(), 4 * 4);
        assert!(c.iter().all(|c| c.initiators.len() == 1));
        assert!(c.iter().filter(|c| c.hops == Some(0)).count() == 4);
        let b = cells(m, Level::Node, true).unwrap();
        assert!(
            b.iter().all(|c| c.initiators.len() == 4),
            "one initiator per core"
        );
        assert!(cells(m, Level::L3, false).is_err());
    }
}
