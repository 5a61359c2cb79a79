//! The invalidation sweep (snbench Table 4.19): the requestor sits on the home node
//! and lines are shared by 1, 2, … sharers added nearest-first by distance from the
//! home; each sharer count gets RDEX and UPGRD latency and bandwidth and `zero`
//! bandwidth, beside the unowned RDEX latency to the farthest sharer's node.

mod data;
mod experiment;
mod present;
mod text;
pub use data::InvalidateData;
pub use experiment::{run, Options};
pub use present::InvalidatePresenter;

/// The experiment's plan.
pub type Plan = InvalidatePlan;

use crate::bandwidth::{self, BwPlan};
use crate::helpers::closeness;
use crate::latency::{self, LatencyPlan};
use numalab_probe::bw::BwKernel;
use numalab_probe::{LineState, Request, Timer};
use numalab_results::disturb::{PassLog, Rules};
use numalab_results::Settle;
use numalab_topo::plan::resolve_memory;
use numalab_topo::{
    Error, Host, Machine, MemPlacement, MemSpec, PageSize, Result, ThreadPlacement,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One sharer in the sweep's order.
#[derive(Debug, Clone, Serialize)]
pub struct Sharer {
    /// Where it runs.
    pub thread: ThreadPlacement,
    /// Its NUMA node.
    pub node: Option<u32>,
    /// Hops from the home node to its node.
    pub hops: Option<u32>,
}

/// Every CPU that may share, nearest-first from `home`: nodes by (hops, distance,
/// number), at most `per_node` CPUs of each (other cores before SMT siblings, nearest
/// to the requestor first), never on the requestor's core.
pub fn sharer_order(
    m: &Machine,
    requestor: &ThreadPlacement,
    home: u32,
    per_node: usize,
) -> Vec<Sharer> {
    let d = &m.distances;
    let mut free: Vec<_> = m
        .pus
        .iter()
        .filter(|p| p.core != requestor.pu.core)
        .collect();
    free.sort_by_key(|p| {
        let node_key = p.node.map(|n| {
            (
                d.hops_between(home, n).unwrap_or(u32::MAX),
                d.distance(home, n).unwrap_or(u64::MAX),
                n,
            )
        });
        (node_key, p.smt_rank, closeness(m, &requestor.pu, p))
    });
    let mut taken: BTreeMap<Option<u32>, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for p in free {
        let t = taken.entry(p.node).or_default();
        if *t >= per_node {
            continue;
        }
        *t += 1;
        out.push(Sharer {
            thread: ThreadPlacement {
                thread: out.len(),
                pu: p.clone(),
            },
            node: p.node,
            hops: p.node.and_then(|n| d.hops_between(home, n)),
        });
    }
    out
}

/// The sweep, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct InvalidatePlan {
    /// The requestor (on the home node unless the user moved the memory).
    pub requestor: ThreadPlacement,
    /// Home of the lines.
    pub mem: MemPlacement,
    /// Sharers in the order they join; step k uses the first k.
    pub sharers: Vec<Sharer>,
    /// Bytes of shared lines per measurement.
    pub size: u64,
    /// Timed passes per measurement (at least; more until each figure settles).
    pub iterations: usize,
    /// What is done with disturbed passes, and what each figure settles to.
    pub rules: Rules,
    /// Things the reader should know.
    pub warnings: Vec<String>,
}

impl InvalidatePlan {
    /// Resolve: sharers nearest-first from the home node, `max` of them (default all).
    pub fn new(
        m: &Machine,
        requestor: ThreadPlacement,
        mem: MemPlacement,
        per_node: usize,
        max: Option<usize>,
        size: u64,
        iterations: usize,
    ) -> Result<InvalidatePlan> {
        let home = *mem
            .nodes
            .first()
            .ok_or_else(|| Error::System("memory placement has no node".into()))?;
        let mut sharers = sharer_order(m, &requestor, home, per_node);
        let available = sharers.len();
        if available == 0 {
            return Err(Error::Unsatisfiable(format!(
                "the invalidation sweep needs at least one sharer on a core other than the requestor's (CPU {}), and this machine has none",
                requestor.pu.os
            )));
        }
        if let Some(k) = max {
            if k == 0 || k > available {
                return Err(Error::bad(
                    "--sharers",
                    k.to_string(),
                    format!(
                        "1 to {available} ({} off the requestor's core, at most {per_node} per node; raise --per-node for more)",
                        numalab_results::words::count(available as u64, "CPU")
                    ),
                ));
            }
            sharers.truncate(k);
        }
        let mut warnings = Vec::new();
        if requestor.pu.node != Some(home) {
            warnings.push(format!(
                "the requestor (CPU {}) is not on the home node {home}, unlike snbench's sweep",
                requestor.pu.os
            ));
        }
        Ok(InvalidatePlan {
            requestor,
            mem,
            sharers,
            size,
            iterations,
            rules: Rules::default(),
            warnings,
        })
    }

    /// The home node.
    pub fn home(&self) -> u32 {
        self.mem.nodes[0]
    }
}

/// The figures of one sharer count (samples per pass).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    /// Sharers in this step.
    pub sharers: usize,
    /// RDEX latency, ns per load.
    pub rdex_ns: Vec<f64>,
    /// UPGRD latency, ns per load.
    pub upgrade_ns: Vec<f64>,
    /// RDEX bandwidth, GB/s.
    pub rdex_gbps: Vec<f64>,
    /// UPGRD bandwidth, GB/s.
    pub upgrade_gbps: Vec<f64>,
    /// zero bandwidth (stores to the shared lines), GB/s.
    pub zero_gbps: Vec<f64>,
    /// Unowned RDEX latency from the requestor to the newest sharer's node (when it
    /// has memory), ns per load: the reference Figure 4.12 draws.
    pub uown_ns: Option<Vec<f64>>,
    /// Pinning proof of the RDEX latency run (requestor, then sharers).
    pub pins: Vec<numalab_topo::bind::PinProof>,
    /// How each figure measured so far settled (latencies by their median, bandwidths
    /// by their best passes), named by metric.
    #[serde(default)]
    pub settle: Vec<Settle>,
    /// Every pass of every figure, in the order measured (what disturbed them).
    #[serde(default)]
    pub passes: Vec<PassLog>,
    /// How far apart the requestor and each sharer were, probed before the RDEX
    /// latency (the record's `placement.distance`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub distance: Vec<numalab_results::distance::CpuDistance>,
}

impl Step {
    fn new(sharers: usize) -> Step {
        Step {
            sharers,
            rdex_ns: Vec::new(),
            upgrade_ns: Vec::new(),
            rdex_gbps: Vec::new(),
            upgrade_gbps: Vec::new(),
            zero_gbps: Vec::new(),
            uown_ns: None,
            pins: Vec::new(),
            settle: Vec::new(),
            passes: Vec::new(),
            distance: Vec::new(),
        }
    }

    /// How the figure `metric` settled, if it was measured.
    pub fn settle_of(&self, metric: &str) -> Option<&Settle> {
        self.settle.iter().find(|s| s.metric == metric)
    }
}

/// A figure's settle entry named by its metric.
fn named(s: &Settle, metric: &str) -> Settle {
    Settle {
        metric: metric.into(),
        ..s.clone()
    }
}

/// Measure every sharer count; `progress(k, total)` before each, `on_part` with the
/// step so far after each of its figures.
pub fn measure(
    host: &Host,
    timer: &Timer,
    plan: &InvalidatePlan,
    mut progress: impl FnMut(usize, usize),
    on_part: &dyn Fn(&Step),
) -> Result<Vec<Step>> {
    // The unowned reference depends only on the sharer's node: measure each once.
    let mut uown: BTreeMap<u32, UownFigure> = BTreeMap::new();
    let mut out = Vec::new();
    for k in 1..=plan.sharers.len() {
        progress(k, plan.sharers.len());
        out.push(measure_step(host, timer, plan, k, &mut uown, on_part)?);
    }
    Ok(out)
}

/// What every measurement of one step shares: the requestor, the first `k` sharers
/// as helpers, their state (shared by `k`) and the eviction buffer's size, on this
/// machine with this timer and plan.
struct StepRun<'a> {
    host: &'a Host,
    timer: &'a Timer,
    plan: &'a InvalidatePlan,
    req: Vec<ThreadPlacement>,
    helpers: Vec<ThreadPlacement>,
    state: LineState,
    evict: usize,
}

/// A settled unowned-RDEX reference of one node: ns per load, how it settled, passes.
type UownFigure = (Vec<f64>, Settle, PassLog);

/// The figures of `k` sharers, each handed to `on_part` as it ends.
fn measure_step(
    host: &Host,
    timer: &Timer,
    plan: &InvalidatePlan,
    k: usize,
    uown: &mut BTreeMap<u32, UownFigure>,
    on_part: &dyn Fn(&Step),
) -> Result<Step> {
    let run = StepRun {
        host,
        timer,
        plan,
        req: vec![plan.requestor.clone()],
        helpers: plan.sharers[..k].iter().map(|s| s.thread.clone()).collect(),
        state: LineState::Shrd(k),
        evict: crate::sizing::eviction_buffer(&host.machine),
    };
    let mut st = Step::new(k);
    run.latencies(&mut st, on_part)?;
    run.bandwidths(&mut st, on_part)?;
    if let Some((ns, s, log)) = uown_reference(host, timer, plan, k, uown)? {
        st.uown_ns = Some(ns);
        st.settle.push(s);
        st.passes.push(log);
        on_part(&st);
    }
    Ok(st)
}

impl StepRun<'_> {
    /// RDEX and UPGRD latency of one step, into `st`.
    fn latencies(&self, st: &mut Step, on_part: &dyn Fn(&Step)) -> Result<()> {
        for (r, metric) in [
            (Request::Rdex, "rdex_latency"),
            (Request::Upgrade, "upgrade_latency"),
        ] {
            let mut p = LatencyPlan::basic(
                self.req.clone(),
                self.helpers.clone(),
                self.plan.mem.clone(),
                self.state,
                r,
                self.plan.iterations,
                self.evict,
            );
            p.rules = self.plan.rules;
            let mut res = latency::measure(self.host, self.timer, &p, self.plan.size)?;
            let q = res.requestors.remove(0);
            st.settle.push(named(&q.settle, metric));
            st.passes.push(q.passes);
            match r {
                Request::Rdex => {
                    st.rdex_ns = q.ns;
                    st.pins = res.pins;
                    st.distance = res.distance;
                }
                _ => st.upgrade_ns = q.ns,
            }
            on_part(st);
        }
        Ok(())
    }

    /// RDEX, UPGRD and zero bandwidth of one step, into `st`.
    fn bandwidths(&self, st: &mut Step, on_part: &dyn Fn(&Step)) -> Result<()> {
        for (kernel, metric) in [
            (BwKernel::Rdex, "rdex_bandwidth"),
            (BwKernel::Upgrade, "upgrade_bandwidth"),
            (BwKernel::Zero, "zero_bandwidth"),
        ] {
            let p = BwPlan {
                requestors: self.req.clone(),
                helpers: self.helpers.clone(),
                mem: self.plan.mem.clone(),
                state: self.state,
                kernel,
                size: self.plan.size,
                iterations: self.plan.iterations,
                mp: false,
                evict_bytes: self.evict,
                warnings: Vec::new(),
                rules: self.plan.rules,
            };
            let mut r = bandwidth::measure(self.host, self.timer, &p)?;
            let gbps = r.used_gbps.remove(0);
            st.settle.extend(r.settle.first().map(|s| named(s, metric)));
            st.passes.extend(r.logs.into_iter().next());
            match kernel {
                BwKernel::Rdex => st.rdex_gbps = gbps,
                BwKernel::Upgrade => st.upgrade_gbps = gbps,
                _ => st.zero_gbps = gbps,
            }
            on_part(st);
        }
        Ok(())
    }
}

/// The unowned RDEX latency to the newest sharer's node, when that node has memory:
/// measured the first time a step reaches the node, then taken from `uown`.
fn uown_reference(
    host: &Host,
    timer: &Timer,
    plan: &InvalidatePlan,
    k: usize,
    uown: &mut BTreeMap<u32, UownFigure>,
) -> Result<Option<UownFigure>> {
    let m = &host.machine;
    let newest = plan.sharers[k - 1].node;
    let Some(n) = newest.filter(|&n| m.node(n).is_some_and(|x| m.has_memory(x))) else {
        return Ok(None);
    };
    if let std::collections::btree_map::Entry::Vacant(e) = uown.entry(n) {
        let req = vec![plan.requestor.clone()];
        let mem = resolve_memory(m, &MemSpec::Node(n), PageSize::Base, &req)?;
        let mut p = LatencyPlan::basic(
            req,
            Vec::new(),
            mem,
            LineState::Uown,
            Request::Rdex,
            plan.iterations,
            0,
        );
        p.rules = plan.rules;
        let q = latency::measure(host, timer, &p, plan.size)?
            .requestors
            .remove(0);
        e.insert((q.ns, named(&q.settle, "uown_rdex_latency"), q.passes));
    }
    Ok(Some(uown[&n].clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_topo::{Host, TopologySource};

    fn machine(desc: &str) -> Machine {
        Host::load(&TopologySource::Synthetic(desc.into()))
            .unwrap()
            .machine
    }

    fn at(m: &Machine, cpu: u32) -> ThreadPlacement {
        ThreadPlacement {
            thread: 0,
            pu: m.pu(cpu).unwrap().clone(),
        }
    }

    #[test]
    fn one_sharer_per_node_never_on_the_requestors_core() {
        let m = machine("pack:2 numa:2 core:2 pu:2");
        let order = sharer_order(&m, &at(&m, 0), 0, 1);
        // Four nodes, one sharer each; the home node's sharer is another core.
        assert_eq!(order.len(), 4);
        assert_eq!(order[0].node, Some(0));
        assert_ne!(order[0].thread.pu.core, m.pu(0).unwrap().core);
        assert_eq!(order[0].thread.pu.smt_rank, 0);
        let mut nodes: Vec<_> = order.iter().map(|s| s.node).collect();
        nodes.dedup();
        assert_eq!(nodes.len(), 4);
        // More per node: the home node gives its other core (both PUs) only.
        let order = sharer_order(&m, &at(&m, 0), 0, 4);
        assert_eq!(order.iter().filter(|s| s.node == Some(0)).count(), 2);
        assert!(order
            .iter()
            .all(|s| s.thread.pu.core != m.pu(0).unwrap().core));
    }
}
