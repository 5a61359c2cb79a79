//! The domain × node matrices as an experiment: options, plan, records and text.

use super::{cells, Cell};
use crate::bandwidth::{self, BwPlan};
use crate::experiment::{check_iterations, opt_size, Context};
use crate::latency::{self, LatencyPlan};
use numalab_probe::bw::BwKernel;
use numalab_probe::{LineState, Request, Timer};
use numalab_results::Record;
use numalab_topo::plan::{check_capacity, resolve_memory};
use numalab_topo::{Error, Host, Level, Machine, MemPlacement, MemSpec, PageSize, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the user asks of `matrix`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// latency or bandwidth.
    pub what: String,
    /// Initiator domains: node, l3, die, pkg, group.
    pub level: String,
    /// Buffer size (None: 256M per chase, 64M per bandwidth requestor).
    pub size: Option<String>,
    /// Timed passes per cell.
    pub iterations: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            what: "latency".into(),
            level: "node".into(),
            size: None,
            iterations: 5,
        }
    }
}

impl Options {
    fn parsed(&self) -> Result<(bool, Level, u64)> {
        let bw = match self.what.as_str() {
            "latency" => false,
            "bandwidth" => true,
            w => {
                return Err(Error::input(format!(
                    "invalid matrix '{w}': expected latency or bandwidth"
                )))
            }
        };
        let level = Level::parse(&self.level).ok_or_else(|| {
            Error::input(format!(
                "invalid level '{}': expected node, l3, l2, die, pkg, group or core",
                self.level
            ))
        })?;
        let size = opt_size(self.size.as_deref())?.unwrap_or(if bw { 64 << 20 } else { 256 << 20 });
        check_iterations(self.iterations)?;
        Ok((bw, level, size))
    }

    /// Check what can be checked without a machine.
    pub fn check(&self) -> Result<()> {
        self.parsed().map(|_| ())
    }
}

/// The cells, resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Bandwidth (true) or latency.
    pub bw: bool,
    /// Level of the initiator domains.
    pub level: Level,
    /// Bytes per chase or per requestor.
    pub size: u64,
    /// Timed passes per cell.
    pub iterations: usize,
    /// Every initiator domain × memory node.
    pub cells: Vec<Cell>,
    /// Memory nodes (the columns).
    pub nodes: Vec<u32>,
    /// Each cell's memory, resolved.
    pub mems: Vec<MemPlacement>,
}

impl Plan {
    /// Resolve the options on a machine.
    pub fn resolve(m: &Machine, o: &Options) -> Result<Plan> {
        let (bw, level, size) = o.parsed()?;
        let cells = cells(m, level, bw)?;
        let mems = cells
            .iter()
            .map(|c| resolve_memory(m, &MemSpec::Node(c.node), PageSize::Base, &c.initiators))
            .collect::<Result<Vec<_>>>()?;
        // Each cell's buffers (one per initiator) are on its node at once.
        for (c, mem) in cells.iter().zip(&mems) {
            let need = size.saturating_mul(c.initiators.len().max(1) as u64);
            check_capacity(m, mem, need)?;
        }
        Ok(Plan {
            mems,
            bw,
            level,
            size,
            iterations: o.iterations,
            cells,
            nodes: m.memory_nodes(),
        })
    }

    fn kind(&self) -> &'static str {
        if self.bw {
            super::KIND_BANDWIDTH
        } else {
            super::KIND_LATENCY
        }
    }

    /// The cells as plan records, without samples (what `--dry-run` emits).
    pub fn records(&self, ctx: &Context) -> Vec<Record> {
        let kind = if self.bw {
            super::KIND_BANDWIDTH_PLAN
        } else {
            super::KIND_LATENCY_PLAN
        };
        self.cells
            .iter()
            .map(|c| {
                let mut rec = cell_record(kind, c, &ctx.prov, self.extra());
                rec.warnings = ctx.warnings.clone();
                rec
            })
            .collect()
    }

    fn extra(&self) -> serde_json::Value {
        let mut e = json!({ "size_bytes": self.size, "iterations": self.iterations });
        if !self.bw {
            e["stride_bytes"] = json!(crate::latency::DEFAULT_STRIDE);
        }
        e
    }
}

fn cell_record(
    kind: &str,
    c: &Cell,
    prov: &numalab_results::Provenance,
    extra: serde_json::Value,
) -> Record {
    let mut p = json!({
        "level": c.level, "domain": c.domain, "mem_node": c.node, "hops": c.hops,
        "initiator_cpus": c.initiators.iter().map(|t| t.pu.os).collect::<Vec<_>>(),
    });
    if let (Some(o), Some(e)) = (p.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    Record::new(
        kind,
        &format!("{} {} → node {}", c.level, c.domain, c.node),
        prov.clone(),
        p,
    )
}

/// Measure every cell on this machine, one after another.
pub fn run(host: &Host, plan: &Plan, ctx: &Context) -> Result<Vec<Record>> {
    let (bw, size, kind, prov, warnings) =
        (plan.bw, plan.size, plan.kind(), &ctx.prov, &ctx.warnings);
    let timer = Timer::best();
    let mut records = Vec::new();
    for (c, mem) in plan.cells.iter().zip(&plan.mems) {
        let mem = mem.clone();
        let mut rec = cell_record(kind, c, prov, plan.extra());
        rec.warnings = warnings.clone();
        {
            if bw {
                let plan = BwPlan {
                    requestors: c.initiators.clone(),
                    helpers: Vec::new(),
                    mem,
                    state: LineState::Warm,
                    kernel: BwKernel::Readv,
                    size,
                    iterations: plan.iterations,
                    mp: true,
                    evict_bytes: 0,
                    warnings: Vec::new(),
                    // Passes as before: these records carry no settle entry yet.
                    rules: numalab_results::disturb::Rules {
                        policy: numalab_results::disturb::Policy::Keep,
                        settle: numalab_results::settle::Goal::FIRST_PASSES_ONLY,
                        ..Default::default()
                    },
                };
                let r = bandwidth::measure(host, &timer, &plan)?;
                rec.add_samples("bandwidth", "GB/s", &r.aggregate);
                rec.placement =
                    Some(json!({ "verified": { "threads": r.pins, "memory": r.memory } }));
            } else {
                let plan = LatencyPlan::basic(
                    c.initiators.clone(),
                    Vec::new(),
                    mem,
                    LineState::Warm,
                    Request::Read,
                    plan.iterations,
                    0,
                )
                .memory_stride();
                let r = latency::measure(host, &timer, &plan, size)?;
                rec.add_samples("latency", "ns", &r.requestors[0].ns);
                rec.placement = Some(
                    json!({ "verified": { "threads": r.pins, "memory": r.requestors[0].memory } }),
                );
                // The cell's median settled as every latency does: say when it did not.
                numalab_results::settle::apply(&mut rec, r.requestors[0].settle.clone());
            }
        }
        // Kept should a signal end the cells after it.
        numalab_results::interrupt::keep([rec.clone()]);
        records.push(rec);
    }
    Ok(records)
}
