//! The invalidation sweep as an experiment: options, plan, records and text.

use super::{measure, InvalidatePlan, Step};
use crate::experiment::{check_iterations, opt_size, Context, Progress};
use numalab_probe::Timer;
use numalab_results::disturb::{PassLog, Rules};
use numalab_results::settle::{self, NoiseOptions};
use numalab_results::{Record, Unavailable};
use numalab_topo::plan::resolve_memory;
use numalab_topo::{Error, Host, Machine, MemSpec, PageSize, Result, ThreadSpec};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the user asks of `invalidate`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// The requestor (one CPU; the language of `numalab plan`).
    pub cpu: String,
    /// Home node of the lines.
    pub mem_node: String,
    /// Sharers per node.
    pub per_node: usize,
    /// Largest sharer count (None: every node's sharers).
    pub sharers: Option<usize>,
    /// Bytes of shared lines (None: half the private cache).
    pub size: Option<String>,
    /// Timed passes per measurement.
    pub iterations: usize,
    /// How long each figure may take to settle, and to what tolerance.
    #[serde(default)]
    pub noise: NoiseOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cpu: "compact".into(),
            mem_node: "local".into(),
            per_node: 1,
            sharers: None,
            size: None,
            iterations: 5,
            noise: NoiseOptions::default(),
        }
    }
}

impl Options {
    /// Check what can be checked without a machine.
    pub fn check(&self) -> Result<()> {
        ThreadSpec::parse(&self.cpu)?;
        MemSpec::parse(&self.mem_node)?;
        if self.per_node == 0 {
            return Err(Error::input(
                "invalid --per-node '0': at least 1 sharer per node",
            ));
        }
        check_iterations(self.iterations)?;
        opt_size(self.size.as_deref())?;
        self.noise.goal().map_err(Error::Input)?;
        Ok(())
    }
}

impl InvalidatePlan {
    /// Resolve the options on a machine: the requestor, the home, sharers nearest-first.
    pub fn resolve(m: &Machine, o: &Options) -> Result<InvalidatePlan> {
        o.check()?;
        let req = vec![crate::crew::one(m, ThreadSpec::parse(&o.cpu)?, &o.cpu)?];
        let mem = resolve_memory(m, &MemSpec::parse(&o.mem_node)?, PageSize::Base, &req)?;
        let size =
            opt_size(o.size.as_deref())?.unwrap_or_else(|| crate::sizing::half_private_cache(m));
        if size < 4096 {
            return Err(Error::input(format!(
                "invalid --size '{}': at least 4K",
                o.size.as_deref().unwrap_or_default()
            )));
        }
        let mut plan = InvalidatePlan::new(
            m,
            req[0].clone(),
            mem,
            o.per_node,
            o.sharers,
            size,
            o.iterations,
        )?;
        plan.rules = Rules {
            settle: o.noise.goal().map_err(Error::Input)?,
            ..Rules::default()
        };
        Ok(plan)
    }

    /// The plan as a record (what `--dry-run` emits).
    pub fn record(&self, ctx: &Context) -> Record {
        let n = self.sharers.len();
        let mut r = Record::new(
            "invalidate-plan",
            &format!("1..{n} sharers"),
            ctx.prov.clone(),
            params(self, n),
        );
        r.placement = Some(
            json!({ "resolved": { "requestor": self.requestor, "sharers": self.sharers, "memory": self.mem } }),
        );
        r.warnings = warnings(self, ctx);
        r
    }
}

fn warnings(plan: &InvalidatePlan, ctx: &Context) -> Vec<String> {
    let mut w = ctx.warnings.clone();
    w.extend(plan.warnings.iter().cloned());
    w
}

fn params(p: &InvalidatePlan, k: usize) -> serde_json::Value {
    let s = &p.sharers[..k];
    json!({
        "sharers": k,
        "requestor_cpu": p.requestor.pu.os,
        "requestor_node": p.requestor.pu.node,
        "home_node": p.home(),
        "sharer_cpus": s.iter().map(|x| x.thread.pu.os).collect::<Vec<_>>(),
        "sharer_nodes": s.iter().map(|x| x.node).collect::<Vec<_>>(),
        "newest_node": s[k - 1].node,
        "hops": s[k - 1].hops,
        "size_bytes": p.size,
        "iterations": p.iterations,
        "disturbed": p.rules.policy.name(),
        "tolerance_pct": p.rules.settle.tolerance_pct,
        "noise_budget_ms": p.rules.settle.budget_ms,
        "state": format!("shrd:{k}"),
        "method": "lines flushed, then the sharers read them; rdex: the requestor's modify chase; upgrade: the requestor reads them too, untimed, then the modify chase; bandwidth kernels rdex/upgrade/zero store one word per line",
    })
}

/// Measure the sweep on this machine: the steps and one record per sharer count, each
/// kept as its figures end should a signal end the rest.
pub fn run(
    host: &Host,
    plan: &InvalidatePlan,
    ctx: &Context,
    progress: Progress,
) -> Result<(Vec<Step>, Vec<Record>)> {
    let timer = Timer::best();
    let warnings = warnings(plan, ctx);
    let record = |s: &Step| step_record(plan, ctx, &warnings, s);
    let keep = |s: &Step| numalab_results::interrupt::supersede([record(s)]);
    let steps = measure(
        host,
        &timer,
        plan,
        |k, n| progress(&format!("invalidate: {k}/{n} sharers")),
        &keep,
    )?;
    let records = steps.iter().map(record).collect();
    Ok((steps, records))
}

/// The record of one sharer count, with the figures measured so far.
fn step_record(plan: &InvalidatePlan, ctx: &Context, warnings: &[String], s: &Step) -> Record {
    let mut r = Record::new(
        "invalidate",
        &numalab_results::words::count(s.sharers as u64, "sharer"),
        ctx.prov.clone(),
        params(plan, s.sharers),
    );
    for (metric, unit, v) in [
        ("rdex_latency", "ns", &s.rdex_ns),
        ("upgrade_latency", "ns", &s.upgrade_ns),
        ("rdex_bandwidth", "GB/s", &s.rdex_gbps),
        ("upgrade_bandwidth", "GB/s", &s.upgrade_gbps),
        ("zero_bandwidth", "GB/s", &s.zero_gbps),
    ] {
        if s.settle_of(metric).is_some() {
            r.add_samples(metric, unit, v);
        }
    }
    match &s.uown_ns {
        Some(u) => r.add_samples("uown_rdex_latency", "ns", u),
        None => r.unavailable.push(Unavailable {
            feature: "uown_rdex_latency".into(),
            reason: "the newest sharer's node has no memory to home an unowned reference on".into(),
        }),
    }
    r.placement = Some(json!({ "verified": { "threads": s.pins } }));
    numalab_results::distance::attach(&mut r, &s.distance);
    let log = s.passes.first().map(|first| PassLog {
        rules: first.rules,
        passes: s.passes.iter().flat_map(|l| l.passes.clone()).collect(),
    });
    r.set_data(&super::InvalidateData {
        samples: s.clone(),
        disturbance: log.clone(),
    });
    r.warnings = warnings.to_vec();
    r.warnings.extend(log.and_then(|l| l.warning()));
    if let Some(c) = settle::combine(&s.settle) {
        settle::apply(&mut r, c);
    }
    r
}
