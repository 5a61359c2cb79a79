//! Intervention placements (snbench Tables 4.15–4.18): a requestor, an owner holding
//! the lines (cexh, cexm, dexd, dext) and a home node, with two of the three on one
//! node — xhops = 0 (requestor on the home), yhops = 0 (owner on the home), zhops = 0
//! (requestor and owner together, home away) — at every available distance, each
//! beside the unowned latency at that distance (ΔU).

mod experiment;
mod present;
mod text;
pub use experiment::{run, Options, Plan};
pub use present::{InterveneData, IntervenePresenter};

use crate::helpers::closeness;
use crate::latency::{self, LatencyPlan};
use numalab_probe::{LineState, Request, Timer};
use numalab_results::disturb::{PassLog, Rules};
use numalab_results::Settle;
use numalab_topo::bind::PinProof;
use numalab_topo::plan::resolve_memory;
use numalab_topo::{Error, Host, Machine, MemSpec, PageSize, Result, ThreadPlacement};
use serde::Serialize;

/// Which two parties share a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Placement {
    /// All three on one node (the zero-hop row).
    #[serde(rename = "local")]
    Local,
    /// Requestor on the home node, owner `hops` away.
    #[serde(rename = "xhops=0")]
    X,
    /// Owner on the home node, requestor `hops` away.
    #[serde(rename = "yhops=0")]
    Y,
    /// Requestor and owner together, home `hops` away.
    #[serde(rename = "zhops=0")]
    Z,
}

impl Placement {
    /// Parse `x`, `y`, `z` (or `xhops=0` …).
    pub fn parse(s: &str) -> std::result::Result<Placement, String> {
        match s {
            "x" | "xhops=0" => Ok(Placement::X),
            "y" | "yhops=0" => Ok(Placement::Y),
            "z" | "zhops=0" => Ok(Placement::Z),
            _ => Err(format!(
                "invalid placement '{s}': expected x, y or z (xhops=0, yhops=0, zhops=0)"
            )),
        }
    }

    /// Name as snbench's tables head it.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Local => "local",
            Placement::X => "xhops=0",
            Placement::Y => "yhops=0",
            Placement::Z => "zhops=0",
        }
    }
}

/// Three resolved parties.
#[derive(Debug, Clone, Serialize)]
pub struct Party {
    /// The timed reader/writer.
    pub requestor: ThreadPlacement,
    /// The helper holding the lines.
    pub owner: ThreadPlacement,
    /// Home node of the lines.
    pub home: u32,
    /// Hops requestor → home.
    pub xhops: Option<u32>,
    /// Hops home → owner.
    pub yhops: Option<u32>,
    /// Hops owner → requestor.
    pub zhops: Option<u32>,
}

/// One placement at one distance: resolved, or why it cannot be here.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Which parties share a node.
    pub placement: Placement,
    /// The parties, or the reason there are none.
    pub party: std::result::Result<Party, String>,
}

/// Every placement at one distance.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The distance varied, in hops.
    pub hops: u32,
    /// Home of the unowned reference (requestor → a node `hops` away).
    pub uown_home: Option<u32>,
    /// The placements.
    pub cells: Vec<Cell>,
}

/// Distinct hop counts from `base` to the nodes that have CPUs or memory.
pub fn available_hops(m: &Machine, base: u32) -> Vec<u32> {
    let mut v: Vec<u32> = m
        .nodes
        .iter()
        .filter_map(|n| m.distances.hops_between(base, n.os))
        .collect();
    if v.is_empty() {
        v.push(0);
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// The owner on `node`: another core than the requestor's, first hardware threads
/// first, nearest to the requestor first.
fn owner_on(m: &Machine, r: &ThreadPlacement, node: u32) -> Option<ThreadPlacement> {
    m.pus
        .iter()
        .filter(|p| p.node == Some(node) && p.core != r.pu.core)
        .min_by_key(|p| (p.smt_rank, closeness(m, &r.pu, p)))
        .map(|p| ThreadPlacement {
            thread: 0,
            pu: p.clone(),
        })
}

/// Why no owner can sit on `nodes` when none of them has a usable CPU (CPU-less nodes,
/// such as CXL memory): said so, rather than blamed on the requestor's core.
fn cpu_less_reason(m: &Machine, nodes: &[u32]) -> Option<String> {
    let with_cpus = nodes
        .iter()
        .any(|&n| m.pus.iter().any(|p| p.node == Some(n)));
    (!nodes.is_empty() && !with_cpus).then(|| {
        let list: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
        format!(
            "the only {} at that distance, {}, {} no usable CPUs (CPU-less memory), so no owner can sit there",
            if list.len() == 1 { "node" } else { "nodes" },
            list.join(","),
            if list.len() == 1 { "has" } else { "have" }
        )
    })
}

/// Nodes `hops` from `base`, by number.
fn nodes_at(m: &Machine, base: u32, hops: u32) -> Vec<u32> {
    m.nodes
        .iter()
        .map(|n| n.os)
        .filter(|&n| m.distances.hops_between(base, n) == Some(hops))
        .collect()
}

fn has_memory(m: &Machine, n: u32) -> bool {
    m.node(n).is_some_and(|x| m.has_memory(x))
}

/// Resolve every asked placement at every asked distance from the requestor's node.
pub fn plan(
    m: &Machine,
    requestor: &ThreadPlacement,
    hops: Option<&[u32]>,
    placements: &[Placement],
) -> Result<Vec<Row>> {
    let base = requestor.pu.node.ok_or_else(|| {
        Error::Unsatisfiable(format!(
            "the requestor (CPU {}) has no NUMA node in this topology, so distances cannot be counted from it; choose a CPU of a node with --cpu",
            requestor.pu.os
        ))
    })?;
    let p = Parties { m, requestor, base };
    Ok(asked_hops(m, base, hops)?
        .into_iter()
        .map(|h| p.row(h, placements))
        .collect())
}

/// The distances asked for (`--hops`), checked against those the machine has from
/// `base`; all of them by default.
fn asked_hops(m: &Machine, base: u32, hops: Option<&[u32]>) -> Result<Vec<u32>> {
    let avail = available_hops(m, base);
    let Some(h) = hops else {
        return Ok(avail);
    };
    if let Some(bad) = h.iter().find(|x| !avail.contains(x)) {
        let why = if avail == [0] {
            "0 only: this machine has one node, so no placement with distinct nodes exists"
                .to_string()
        } else {
            format!(
                "{} (the distances from the requestor's node {base})",
                avail
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        return Err(Error::bad("--hops", bad.to_string(), why));
    }
    Ok(h.to_vec())
}

/// Who takes part in each cell: the requestor on node `base`, owners and homes.
struct Parties<'a> {
    m: &'a Machine,
    requestor: &'a ThreadPlacement,
    base: u32,
}

impl Parties<'_> {
    /// Requestor, owner and home with the hops between them, or why there is none.
    fn party(
        &self,
        owner: Option<ThreadPlacement>,
        home: Option<u32>,
    ) -> std::result::Result<Party, String> {
        let d = |a: u32, b: u32| self.m.distances.hops_between(a, b);
        let owner = owner.ok_or("no CPU off the requestor's core on such a node")?;
        let home = home.ok_or("no node with memory at that distance")?;
        let on = owner.pu.node.unwrap_or(self.base);
        Ok(Party {
            requestor: self.requestor.clone(),
            xhops: d(self.base, home),
            yhops: d(home, on),
            zhops: d(on, self.base),
            owner,
            home,
        })
    }

    /// The row of distance `h`: one local cell at 0 hops, else one cell per placement.
    fn row(&self, h: u32, placements: &[Placement]) -> Row {
        let (m, requestor, base) = (self.m, self.requestor, self.base);
        let at = nodes_at(m, base, h);
        let mem_at = at.iter().copied().find(|&n| has_memory(m, n));
        let base_mem = has_memory(m, base).then_some(base);
        let cells = if h == 0 {
            vec![Cell {
                placement: Placement::Local,
                party: self.party(owner_on(m, requestor, base), base_mem),
            }]
        } else {
            placements
                .iter()
                .map(|&p| Cell {
                    placement: p,
                    party: self.cell(p, &at, mem_at, base_mem),
                })
                .collect()
        };
        Row {
            hops: h,
            uown_home: if h == 0 { base_mem } else { mem_at },
            cells,
        }
    }

    /// The party of placement `p` among the nodes `at` this distance.
    fn cell(
        &self,
        p: Placement,
        at: &[u32],
        mem_at: Option<u32>,
        base_mem: Option<u32>,
    ) -> std::result::Result<Party, String> {
        let (m, requestor, base) = (self.m, self.requestor, self.base);
        match p {
            Placement::X => self
                .party(at.iter().find_map(|&n| owner_on(m, requestor, n)), base_mem)
                .map_err(|e| cpu_less_reason(m, at).unwrap_or(e)),
            Placement::Y => {
                // The first node at this distance with both memory and an owner.
                let found = at.iter().find_map(|&n| {
                    has_memory(m, n)
                        .then(|| owner_on(m, requestor, n).map(|o| (o, n)))
                        .flatten()
                });
                self.party(found.as_ref().map(|f| f.0.clone()), found.map(|f| f.1))
                    .map_err(|e| cpu_less_reason(m, at).unwrap_or(e))
            }
            _ => self.party(owner_on(m, requestor, base), mem_at),
        }
    }
}

/// One measured latency: its passes, how its median settled and its pass log.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    /// Latency, ns per load, one per pass the statistics use.
    pub ns: Vec<f64>,
    /// Pinning proof (requestor, owner).
    pub pins: Vec<PinProof>,
    /// How its median settled.
    pub settle: Settle,
    /// Every pass and what disturbed it.
    pub passes: PassLog,
    /// How far apart the requestor and the owner were (none for the unowned reference).
    pub distance: Vec<numalab_results::distance::CpuDistance>,
}

fn measured(host: &Host, timer: &Timer, plan: &LatencyPlan, size: u64) -> Result<Measured> {
    let mut res = latency::measure(host, timer, plan, size)?;
    let q = res.requestors.remove(0);
    Ok(Measured {
        ns: q.ns,
        pins: res.pins,
        settle: q.settle,
        passes: q.passes,
        distance: res.distance,
    })
}

/// Latency of `state` for one party (the request the state implies), passes added
/// until its median settles as `rules` say.
pub fn measure_party(
    host: &Host,
    timer: &Timer,
    p: &Party,
    state: LineState,
    size: u64,
    iterations: usize,
    rules: Rules,
) -> Result<Measured> {
    let m = &host.machine;
    let r = vec![p.requestor.clone()];
    let mem = resolve_memory(m, &MemSpec::Node(p.home), PageSize::Base, &r)?;
    let evict = crate::sizing::eviction_buffer(m);
    let mut plan = LatencyPlan::basic(
        r,
        vec![p.owner.clone()],
        mem,
        state,
        state.default_request(),
        iterations,
        evict,
    );
    plan.rules = rules;
    measured(host, timer, &plan, size)
}

/// Unowned read latency from the requestor to `home`.
pub fn measure_uown(
    host: &Host,
    timer: &Timer,
    requestor: &ThreadPlacement,
    home: u32,
    size: u64,
    iterations: usize,
    rules: Rules,
) -> Result<Measured> {
    let r = vec![requestor.clone()];
    let mem = resolve_memory(&host.machine, &MemSpec::Node(home), PageSize::Base, &r)?;
    let mut plan = LatencyPlan::basic(
        r,
        Vec::new(),
        mem,
        LineState::Uown,
        Request::Read,
        iterations,
        0,
    );
    plan.rules = rules;
    measured(host, timer, &plan, size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::{Host, TopologySource};

    #[test]
    fn two_parties_share_a_node_in_every_placement() {
        let m = Host::load(&TopologySource::Synthetic(
            "pack:2 numa:2 core:2 pu:1".into(),
        ))
        .unwrap()
        .machine;
        let r = ThreadPlacement {
            thread: 0,
            pu: m.pu(0).unwrap().clone(),
        };
        let all = [Placement::X, Placement::Y, Placement::Z];
        let rows = plan(&m, &r, None, &all).unwrap();
        assert!(
            rows.len() >= 2,
            "a local row and at least one remote distance"
        );
        assert_eq!(rows[0].cells.len(), 1);
        for row in &rows[1..] {
            for c in &row.cells {
                let p = c.party.as_ref().unwrap();
                let (x, y, z) = (p.xhops.unwrap(), p.yhops.unwrap(), p.zhops.unwrap());
                match c.placement {
                    Placement::X => assert_eq!((x, y, z), (0, row.hops, row.hops)),
                    Placement::Y => assert_eq!((x, y, z), (row.hops, 0, row.hops)),
                    Placement::Z => assert_eq!((x, y, z), (row.hops, row.hops, 0)),
                    Placement::Local => unreachable!(),
                }
                assert_ne!(p.owner.pu.core, p.requestor.pu.core);
            }
        }
        assert!(plan(&m, &r, Some(&[9]), &all).unwrap_err().is_user_error());
    }
}
