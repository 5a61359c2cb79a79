//! Bandwidth kernels as an experiment: options, plan, records and text.

use super::mixed::{self, MixPlan};
use super::{default_size, default_state, measure, parameters, records, BwPlan};
use crate::crew::CrewOptions;
use crate::experiment::{check_iterations, opt_size, Context};
use numalab_probe::bw::BwKernel;
use numalab_probe::{LineState, Timer};
use numalab_results::disturb::Rules;
use numalab_results::settle::NoiseOptions;
use numalab_results::Record;
use numalab_topo::plan::{check_capacity, resolve_memory};
use numalab_topo::{Error, Host, Machine, PageSize, Result};
use serde::{Deserialize, Serialize};

/// What the user asks of `bandwidth`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// Kernels, comma-separated, or `all`.
    pub kernel: String,
    /// Requestors, helpers and memory.
    pub crew: CrewOptions,
    /// Line state before each pass (None: the kernel's default).
    pub state: Option<String>,
    /// Bytes per requestor (None: by kernel).
    pub size: Option<String>,
    /// Timed passes.
    pub iterations: usize,
    /// bwmp: the first requestor to finish stops the others.
    pub mp: bool,
    /// Page size: 4k, thp, 2m or 1g.
    pub page_size: String,
    /// Mixed kernels instead of `kernel`: "R:W", "triad" or "update", comma-separated.
    #[serde(default)]
    pub mix: Option<String>,
    /// Stores of the mixed kernels: regular, nt, or both comma-separated.
    #[serde(default = "regular")]
    pub store: String,
    /// The injection table: all cores against each memory node, MLC's mixes.
    #[serde(default)]
    pub injection: bool,
    /// How long each kernel may take to settle its best-of-N, and to what tolerance.
    #[serde(default)]
    pub noise: NoiseOptions,
}

fn regular() -> String {
    "regular".into()
}

impl Default for Options {
    fn default() -> Self {
        Options {
            kernel: "readv".into(),
            crew: CrewOptions::default(),
            state: None,
            size: None,
            iterations: 10,
            mp: false,
            page_size: "4k".into(),
            mix: None,
            store: regular(),
            injection: false,
            noise: NoiseOptions::default(),
        }
    }
}

fn kernels(s: &str) -> Result<Vec<BwKernel>> {
    if s == "all" {
        return Ok(BwKernel::ALL.to_vec());
    }
    let v: Vec<BwKernel> = s
        .split(',')
        .map(|k| BwKernel::parse(k).map_err(Error::Input))
        .collect::<Result<_>>()?;
    numalab_topo::lists::once("--kernel", s, &v, |k| k.name().to_string())?;
    Ok(v)
}

impl Options {
    /// Check what can be checked without a machine.
    pub fn check(&self) -> Result<()> {
        kernels(&self.kernel)?;
        self.crew.specs()?;
        PageSize::parse(&self.page_size)?;
        self.state
            .as_deref()
            .map(LineState::parse)
            .transpose()
            .map_err(Error::Input)?;
        opt_size(self.size.as_deref())?;
        check_iterations(self.iterations)?;
        self.noise.goal().map_err(Error::Input)?;
        mixed::check(self)
    }
}

/// One measurement per kernel, resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The measurements, in the order of the kernels.
    pub runs: Vec<BwPlan>,
    /// Mixed measurements (`--mix`, `--injection`): per memory node, per mix.
    pub mixes: Vec<MixPlan>,
}

/// The placement's warnings for kernel `k`: the upgrade kernel's requestor reads its
/// lines after the helpers (a second sharer), so shrd:1 holds them Shared there.
fn sharer_warnings(k: BwKernel, mut w: Vec<String>) -> Vec<String> {
    if k == BwKernel::Upgrade {
        w.retain(|x| x != crate::crew::SINGLE_SHARER);
    }
    w
}

impl Plan {
    /// Resolve the options on a machine.
    pub fn resolve(m: &Machine, o: &Options) -> Result<Plan> {
        o.check()?;
        if o.mix.is_some() || o.injection {
            return Ok(Plan {
                runs: Vec::new(),
                mixes: mixed::resolve(m, o)?,
            });
        }
        let a = o;
        let ks = kernels(&o.kernel)?;
        let (spec, mem) = o.crew.specs()?;
        let page = PageSize::parse(&o.page_size)?;
        let state = o
            .state
            .as_deref()
            .map(LineState::parse)
            .transpose()
            .map_err(Error::Input)?;
        let size = opt_size(o.size.as_deref())?;
        let mut plans = Vec::new();
        for k in ks {
            let st = state.unwrap_or(default_state(k));
            let placed = a.crew.place(m, &spec, st)?;
            let n = placed.requestors.len();
            let memp = resolve_memory(m, &mem, page, &placed.requestors)?;
            let sz = size.unwrap_or_else(|| default_size(m, k, n));
            check_capacity(m, &memp, sz * n as u64)?;
            let plan = BwPlan {
                requestors: placed.requestors,
                helpers: placed.helpers,
                mem: memp,
                state: st,
                kernel: k,
                size: sz,
                iterations: a.iterations,
                mp: a.mp,
                evict_bytes: crate::sizing::eviction_buffer(m),
                warnings: sharer_warnings(k, placed.warnings),
                rules: Rules {
                    settle: o.noise.goal().map_err(Error::Input)?,
                    ..Rules::default()
                },
            };
            plan.check().map_err(Error::Input)?;
            plan.shape()?;
            plans.push(plan);
        }
        Ok(Plan {
            runs: plans,
            mixes: Vec::new(),
        })
    }

    /// The plan as records (what `--dry-run` emits).
    pub fn records(&self, ctx: &Context) -> Vec<Record> {
        self.runs
            .iter()
            .map(|p| {
                let mut r = Record::new("bandwidth-plan", p.kernel.name(), ctx.prov.clone(), parameters(p));
                r.placement = Some(serde_json::json!({ "resolved": { "requestors": p.requestors, "helpers": p.helpers, "memory": p.mem } }));
                r.warnings = ctx.warnings.clone();
                r
            })
            .chain(
                self.mixes
                    .iter()
                    .map(|p| mixed::plan_record(&ctx.prov, &ctx.warnings, p)),
            )
            .collect()
    }
}

/// Measure every kernel on this machine.
pub fn run(host: &Host, plan: &Plan, ctx: &Context) -> Result<Vec<Record>> {
    let timer = Timer::best();
    let mut out = Vec::new();
    // Each kernel's records are kept as it ends, should a signal end the ones after it.
    let keep = |recs: &[Record]| numalab_results::interrupt::keep(recs.iter().cloned());
    for p in &plan.runs {
        let r = measure(host, &timer, p)?;
        let recs = records(&ctx.prov, &ctx.warnings, p, &timer, &r);
        keep(&recs);
        out.extend(recs);
    }
    for p in &plan.mixes {
        let r = mixed::measure(host, &timer, p)?;
        let rec = mixed::record(&ctx.prov, &ctx.warnings, p, &timer, &r);
        keep(std::slice::from_ref(&rec));
        out.push(rec);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warnings(kernel: &str, state: Option<&str>) -> Vec<String> {
        let src = numalab_topo::TopologySource::Synthetic("pack:1 numa:1 core:4 pu:1".into());
        let m = Host::load(&src).unwrap().machine;
        let o = Options {
            kernel: kernel.into(),
            state: state.map(String::from),
            ..Options::default()
        };
        Plan::resolve(&m, &o).unwrap().runs[0].warnings.clone()
    }

    #[test]
    fn the_upgrade_kernels_default_does_not_warn_against_itself() {
        let single = |w: &[String]| w.iter().any(|x| x == crate::crew::SINGLE_SHARER);
        assert!(!single(&warnings("upgrade", None)));
        assert!(!single(&warnings("upgrade", Some("shrd:1"))));
        // Where the requestor does not read the lines, one sharer still warns.
        assert!(single(&warnings("read", Some("shrd:1"))));
    }
}
