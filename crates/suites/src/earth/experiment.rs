//! The earth suite as an experiment: options, plan, records and text.

use super::hide as earth_hide;
use super::ops::{self as earth_ops, Cell};
use super::sizing::Rule;
use super::view::{mask_records, mlp_records, threads_records};
use super::{check_list, cpus, Cpus, Part};
use numalab_bench::experiment::{size_opt, Context, Progress};
use numalab_probe::Timer;
use numalab_results::{Provenance, Record, Unavailable};
use numalab_topo::{Error, Host, Machine, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Duration;

/// What the user asks of `suite earth`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// Parts to run, comma-separated: ops, split, switch, mask, mlp, threads.
    pub parts: String,
    /// The worker (issuing) CPU (None: the first CPU).
    pub cpu: Option<u32>,
    /// The helper CPU (None: the nearest CPU in another domain).
    pub helper: Option<u32>,
    /// MLP chain counts G, comma-separated, 1..64.
    pub groups: String,
    /// Loop 7 chunk sizes T, comma-separated (None: powers of two up to the loop).
    pub chunks: Option<String>,
    /// Loop 7 communication multipliers, comma-separated.
    pub multipliers: String,
    /// Loop 7 iterations.
    pub loop_n: usize,
    /// Bytes the MLP chains run through (None: beyond the caches).
    pub mlp_size: Option<String>,
    /// Accesses per MLP pass (None: 2^18, or the buffer's lines when fewer).
    pub accesses: Option<usize>,
    /// Computation : communication of the threads table is 1 : ratio.
    pub ratio: usize,
    /// Timed passes per measurement.
    pub iterations: usize,
    /// Wall time each mask and threads point may take to settle its figure (passes
    /// beyond `iterations` are added while its interval is wide): "0" for none.
    #[serde(default = "default_noise_budget")]
    pub noise_budget: String,
}

/// The default `noise_budget`.
pub const NOISE_BUDGET: &str = "100ms";

fn default_noise_budget() -> String {
    NOISE_BUDGET.into()
}

impl Default for Options {
    fn default() -> Self {
        Options {
            parts: "ops,split,switch,mask,mlp,threads".into(),
            cpu: None,
            helper: None,
            groups: "1,2,4,8,12,16,24,32,48,64".into(),
            chunks: None,
            multipliers: "1,2,4,8,16".into(),
            loop_n: 4096,
            mlp_size: None,
            accesses: None,
            ratio: 1,
            iterations: 5,
            noise_budget: default_noise_budget(),
        }
    }
}

/// The options, parsed.
struct Parsed {
    parts: Vec<Part>,
    groups: Vec<usize>,
    chunks: Vec<usize>,
    multipliers: Vec<usize>,
    mlp_size: Option<u64>,
    budget: Duration,
}

/// `--mlp-size`: at least 64 chains of 64 lines, at most half the available memory.
fn mlp_size(s: &str) -> Result<u64> {
    let v = size_opt("--mlp-size", s)?;
    if v < (64 * 64 * 64) as u64 {
        return Err(Error::input(format!(
            "invalid --mlp-size '{s}': at least 256K (64 chains of 64 lines)"
        )));
    }
    if let Some((_, avail)) = numalab_topo::sysfs::system_memory() {
        if v > avail / 2 {
            return Err(Error::input(format!(
                "invalid --mlp-size '{s}': more than half of the {} available",
                numalab_topo::fmt_bytes(avail)
            )));
        }
    }
    Ok(v)
}

impl Options {
    fn parsed(&self) -> Result<Parsed> {
        let a = self;
        let parts: Vec<Part> = a
            .parts
            .split(',')
            .map(|s| Part::parse(s.trim()).map_err(Error::Input))
            .collect::<Result<_>>()?;
        numalab_topo::lists::once_by(
            "--parts",
            &a.parts,
            &parts,
            |p| format!("{p:?}"),
            |p| format!("{p:?}").to_lowercase(),
        )?;
        let groups = nums("--groups", &a.groups)?;
        check_list("--groups", &groups, 64, "independent chains")?;
        if a.loop_n == 0 {
            return Err(Error::input("invalid --loop-n '0': at least 1 iteration"));
        }
        numalab_probe::loop7::check_memory(a.loop_n, 1).map_err(Error::Input)?;
        let chunks = match &a.chunks {
            Some(c) => nums("--chunks", c)?,
            None => (0..)
                .map(|i| 1usize << i)
                .take_while(|&t| t <= a.loop_n)
                .collect(),
        };
        check_list(
            "--chunks",
            &chunks,
            a.loop_n,
            "iterations of the loop, --loop-n",
        )?;
        let multipliers = nums("--multipliers", &a.multipliers)?;
        check_list(
            "--multipliers",
            &multipliers,
            1024,
            "times the communication",
        )?;
        let mlp_size = a.mlp_size.as_deref().map(mlp_size).transpose()?;
        if let Some(n) = a.accesses.filter(|&n| n < 64) {
            return Err(Error::input(format!(
                "invalid --accesses '{n}': at least 64"
            )));
        }
        if a.iterations == 0 || a.ratio == 0 {
            return Err(Error::input(
                "invalid --iterations or --ratio '0': at least 1",
            ));
        }
        // The one parser every command's --noise-budget goes through.
        let goal = numalab_results::settle::Goal::parse(Some(&a.noise_budget), None)
            .map_err(Error::input)?;
        let budget = Duration::from_secs_f64(goal.budget_ms.unwrap_or(0.0) / 1e3);
        Ok(Parsed {
            parts,
            groups,
            chunks,
            multipliers,
            mlp_size,
            budget,
        })
    }

    /// Check what can be checked without a machine.
    pub fn check(&self) -> Result<()> {
        self.parsed().map(|_| ())
    }

    /// MLP groups, Loop 7 chunk sizes and communication multipliers, parsed: what the
    /// suite between MPI ranks takes from the same flags.
    pub fn groups_chunks_multipliers(&self) -> Result<(Vec<usize>, Vec<usize>, Vec<usize>)> {
        let p = self.parsed()?;
        Ok((p.groups, p.chunks, p.multipliers))
    }
}

/// The data of a `suite-earth-plan` record: what the plan resolved to (written for the
/// reader of the JSON; numalab shows the plan from the record's placement).
#[derive(Debug, Clone, Serialize)]
pub struct PlanData {
    /// Parts in the order run.
    pub parts: Vec<Part>,
    /// Worker, helper and remote node.
    pub cpus: Cpus,
    /// MLP chain counts.
    pub groups: Vec<usize>,
    /// Loop 7 chunk sizes.
    pub chunks: Vec<usize>,
    /// Loop 7 communication multipliers.
    pub multipliers: Vec<usize>,
    /// Loop 7 iterations.
    pub loop_n: usize,
    /// Wall time a mask or threads point may take to settle its figure, ms.
    pub noise_budget_ms: f64,
    /// Points that budget applies to.
    pub sized_points: usize,
    /// The most the budget can add to the run: every sized point spending it, s.
    pub noise_bound_s: f64,
}

/// The suite, resolved: CPUs, parts and their sizes.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Worker, helper and remote node.
    pub cpus: Cpus,
    /// Parts in the order run.
    pub parts: Vec<Part>,
    /// MLP chain counts.
    pub groups: Vec<usize>,
    /// Loop 7 chunk sizes.
    pub chunks: Vec<usize>,
    /// Loop 7 communication multipliers.
    pub multipliers: Vec<usize>,
    /// Bytes the MLP chains run through.
    pub mlp_size: u64,
    /// Accesses per MLP pass.
    pub accesses: usize,
    /// Wall time a mask or threads point may take to settle its figure.
    pub noise_budget: Duration,
    /// The options (loop, ratio, passes).
    pub options: Options,
}

impl Plan {
    /// Resolve the options on a machine.
    pub fn resolve(m: &Machine, o: &Options) -> Result<Plan> {
        let a = o;
        let Parsed {
            parts,
            groups,
            chunks,
            multipliers,
            mlp_size,
            budget,
        } = o.parsed()?;
        let cpus = cpus(m, a.cpu, a.helper)?;
        let mlp_size = mlp_size.unwrap_or_else(|| numalab_bench::sizing::beyond_caches(m));
        let lines = (mlp_size / 64) as usize;
        let accesses = match a.accesses {
        Some(n) if n > lines => {
            return Err(Error::input(format!(
                "invalid --accesses '{n}': at most the {lines} lines of --mlp-size (more would walk lines twice in one pass)"
            )))
        }
        Some(n) => n,
        None => lines.min(1 << 18),
    };
        Ok(Plan {
            cpus,
            parts,
            groups,
            chunks,
            multipliers,
            mlp_size,
            accesses,
            noise_budget: budget,
            options: o.clone(),
        })
    }

    /// The rule sizing the mask and threads points' passes.
    pub fn rule(&self) -> Rule {
        Rule::pct(self.options.iterations, self.noise_budget)
    }

    /// Points sized to their noise: each Loop 7 baseline and T, both ways u travels,
    /// and each threads row.
    pub fn sized_points(&self) -> usize {
        let mask = 2 * self.multipliers.len() * (self.chunks.len() + 1);
        let has = |p: Part| usize::from(self.parts.contains(&p));
        has(Part::Mask) * mask + has(Part::Threads) * 5
    }

    /// The most the noise budget can add to a run: every sized point spending all of
    /// it (each stops within one pass of it), seconds.
    pub fn noise_bound_s(&self) -> f64 {
        self.sized_points() as f64 * self.noise_budget.as_secs_f64()
    }

    /// Parameters every record of the suite carries.
    fn base(&self) -> serde_json::Value {
        let (cpus, a) = (&self.cpus, &self.options);
        json!({
        "worker_cpu": cpus.worker.pu.os,
        "helper_cpu": cpus.helper.pu.os,
        "worker_node": cpus.worker.pu.node,
        "helper_node": cpus.helper.pu.node,
        "remote_node": cpus.remote_node,
        "iterations": a.iterations,
        "noise_budget_ms": self.noise_budget.as_secs_f64() * 1e3,
        "parts": self.parts.iter().map(|p| p.name()).collect::<Vec<_>>(),
        })
    }

    /// The plan as a record (what `--dry-run` emits).
    pub fn record(&self, ctx: &Context) -> Record {
        let (prov, warnings, base, a) = (
            ctx.prov.clone(),
            ctx.warnings.clone(),
            self.base(),
            &self.options,
        );
        let (parts, cpus, groups, chunks, multipliers) = (
            &self.parts,
            &self.cpus,
            &self.groups,
            &self.chunks,
            &self.multipliers,
        );
        let mut r = Record::new("suite-earth-plan", "earth plan", prov, base);
        r.set_data(&PlanData {
            parts: parts.clone(),
            cpus: cpus.clone(),
            groups: groups.clone(),
            chunks: chunks.clone(),
            multipliers: multipliers.clone(),
            loop_n: a.loop_n,
            noise_budget_ms: self.noise_budget.as_secs_f64() * 1e3,
            sized_points: self.sized_points(),
            noise_bound_s: self.noise_bound_s(),
        });
        r.warnings = warnings;
        r
    }
}

/// Loop 7 with u behind the helper, then with u homed on another node.
fn mask_curves(host: &Host, timer: &Timer, plan: &Plan) -> Result<Vec<earth_hide::MaskCurve>> {
    let (a, cpus, chunks, multipliers) =
        (&plan.options, &plan.cpus, &plan.chunks, &plan.multipliers);
    let rule = plan.rule();
    let mut curves = earth_hide::mask(host, timer, cpus, a.loop_n, chunks, multipliers, &rule)?;
    curves.extend(earth_hide::mask_memory(
        host,
        timer,
        cpus,
        a.loop_n,
        chunks,
        multipliers,
        &rule,
    )?);
    Ok(curves)
}

/// One record per operation the machine could not measure, saying why.
fn missing_records(
    missing: &[(String, String)],
    base: &serde_json::Value,
    prov: &Provenance,
) -> Vec<Record> {
    missing
        .iter()
        .map(|(what, why)| {
            let mut r = Record::new(
                "suite-earth",
                &format!("ops: {what}"),
                prov.clone(),
                base.clone(),
            );
            r.unavailable.push(Unavailable {
                feature: what.clone(),
                reason: why.clone(),
            });
            r
        })
        .collect()
}

/// Run every part on this machine: its records.
pub fn run(host: &Host, plan: &Plan, ctx: &Context, progress: Progress) -> Result<Vec<Record>> {
    let (a, cpus, base, prov) = (&plan.options, &plan.cpus, plan.base(), &ctx.prov);
    let (parts, groups, mlp_size, accesses) =
        (&plan.parts, &plan.groups, plan.mlp_size, plan.accesses);
    let timer = Timer::best();
    let mut note = |p: Part| progress(&format!("earth: {}     ", p.name()));
    let mut recs = Vec::new();
    for &p in parts {
        note(p);
        let start = recs.len();
        match p {
            Part::Ops => {
                let (cells, missing) = earth_ops::ops(host, &timer, cpus, a.iterations)?;
                recs.extend(cell_records(p, &cells, &base, prov));
                recs.extend(missing_records(&missing, &base, prov));
            }
            Part::Split => {
                let cells = earth_ops::split(host, &timer, cpus, a.iterations)?;
                recs.extend(cell_records(p, &cells, &base, prov));
            }
            Part::Switch => {
                let cells = earth_ops::switches(host, &timer, cpus, a.iterations)?;
                recs.extend(cell_records(p, &cells, &base, prov));
            }
            Part::Mask => {
                let curves = mask_curves(host, &timer, plan)?;
                recs.extend(mask_records(&curves, a.loop_n, &base, prov));
            }
            Part::Mlp => {
                let curve =
                    earth_hide::mlp(host, &timer, cpus, mlp_size, groups, accesses, a.iterations)?;
                recs.extend(mlp_records(&curve, mlp_size, &base, prov));
            }
            Part::Threads => {
                let (rows, iters) = earth_hide::threads(host, &timer, cpus, a.ratio, &plan.rule())?;
                recs.extend(threads_records(&rows, a.ratio, iters, &base, prov));
            }
        }
        for r in &mut recs[start..] {
            r.warnings = ctx.warnings.clone();
            r.provenance.timer_step_ns = Some(timer.resolution_ns);
        }
        // Kept should a signal end the parts after it.
        numalab_results::interrupt::keep(recs[start..].iter().cloned());
    }
    Ok(recs)
}

fn nums(what: &str, s: &str) -> Result<Vec<usize>> {
    let v: Vec<usize> = s
        .split(',')
        .map(|x| {
            x.trim().parse::<usize>().map_err(|_| {
                Error::input(format!(
                    "invalid {what} item '{}': a whole number of at least 1",
                    x.trim()
                ))
            })
        })
        .collect::<Result<_>>()?;
    numalab_topo::lists::once(what, s, &v, |n| n.to_string())?;
    Ok(v)
}

fn cell_records(
    part: Part,
    cells: &[Cell],
    base: &serde_json::Value,
    prov: &Provenance,
) -> Vec<Record> {
    cells
        .iter()
        .map(|c| {
            let mut p = base.clone();
            p["part"] = json!(part.name());
            p["op"] = json!(c.op);
            p["place"] = json!(c.place);
            p["mode"] = json!(c.mode);
            p["method"] = json!(c.how);
            let mut r = Record::new(
                "suite-earth",
                &format!("{}: {}, {}, {}", part.name(), c.op, c.place, c.mode),
                prov.clone(),
                p,
            );
            r.add_samples("time", "ns", &c.ns);
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::earth::EarthData;
    use numalab_topo::{Host, TopologySource};

    #[test]
    fn options_and_records_from_before_sizing_still_read() {
        let mut v = serde_json::to_value(Options::default()).unwrap();
        v.as_object_mut().unwrap().remove("noise_budget");
        let o: Options = serde_json::from_value(v).unwrap();
        assert_eq!(o.noise_budget, NOISE_BUDGET);
        let old: EarthData = serde_json::from_value(json!({ "data_checked": true })).unwrap();
        assert_eq!(old.noise(), None);
    }

    #[test]
    fn the_noise_budget_is_a_duration_with_its_unit_and_bounds_the_plan() {
        for bad in ["5", "2min", "61s", "-1ms", "0", "NaNms"] {
            let o = Options {
                noise_budget: bad.into(),
                ..Default::default()
            };
            let e = o.check().unwrap_err();
            assert!(
                e.is_user_error() && e.to_string().contains(&format!("--noise-budget '{bad}'")),
                "{e}"
            );
        }
        let m = Host::load(&TopologySource::Synthetic("pack:1 core:2 pu:1".into()))
            .unwrap()
            .machine;
        let o = Options {
            parts: "mask,threads".into(),
            chunks: Some("64,1024".into()),
            multipliers: "1,4".into(),
            noise_budget: "0.5s".into(),
            ..Default::default()
        };
        let p = Plan::resolve(&m, &o).unwrap();
        // 2 ways u travels × 2 multipliers × (baseline + 2 T), and 5 threads rows.
        assert_eq!(p.sized_points(), 12 + 5);
        assert_eq!(p.noise_bound_s(), 8.5);
        assert_eq!(p.rule(), Rule::pct(5, Duration::from_millis(500)));
        let ops = Plan::resolve(
            &m,
            &Options {
                parts: "ops".into(),
                ..o
            },
        )
        .unwrap();
        assert_eq!(ops.noise_bound_s(), 0.0);
    }
}
