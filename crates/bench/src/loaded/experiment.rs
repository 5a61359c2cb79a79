//! Loaded latency as an experiment: options, plan, records and text.

use super::{measure, Landed, Load, LoadedPlan, Measured, Point, DEFAULT_DELAYS};
use crate::experiment::{Context, Progress};
use numalab_probe::inject::Traffic;
use numalab_probe::kernel::UNROLL;
use numalab_probe::mix::Mix;
use numalab_probe::Timer;
use numalab_results::settle::{self, NoiseOptions};
use numalab_results::{interrupt, Provenance, Record};
use numalab_topo::plan::{check_capacity, resolve_memory};
use numalab_topo::spec::parse_size;
use numalab_topo::{
    cpulist, Error, Host, Machine, MemSpec, PageSize, Result, ThreadPlacement, ThreadSpec,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Loads per timed pass at most (~40 ms at memory latency).
const MAX_LOADS: usize = 1 << 18;

/// What the user asks of `loaded-latency`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// The chasing thread (one CPU).
    pub cpu: String,
    /// Injector CPUs (None: every CPU off the chaser's core).
    pub injectors: Option<String>,
    /// Home of the chase and the injected traffic.
    pub mem_node: String,
    /// Injected traffic: read or write.
    pub traffic: String,
    /// Write percentages, comma-separated: one curve per mix (Mess's family); None:
    /// one curve of `traffic`.
    #[serde(default)]
    pub writes: Option<String>,
    /// Injector delays, comma-separated (None: 20000 down to 0).
    pub delays: Option<String>,
    /// Chase buffer bytes (None: streaming past every cache).
    pub size: Option<String>,
    /// Bytes per injector (None: as the chase, spread over the injectors).
    pub inject_size: Option<String>,
    /// Timed passes per point.
    pub iterations: usize,
    /// How long each point may take to settle its median latency (and issued
    /// bandwidth), and to what tolerance.
    #[serde(default)]
    pub noise: NoiseOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cpu: "compact".into(),
            injectors: None,
            mem_node: "local".into(),
            traffic: "read".into(),
            writes: None,
            delays: None,
            size: None,
            inject_size: None,
            iterations: 5,
            noise: NoiseOptions::default(),
        }
    }
}

/// The options, parsed.
struct Parsed {
    spec: ThreadSpec,
    inj_spec: Option<ThreadSpec>,
    mem_spec: MemSpec,
    traffic: Traffic,
    mixes: Option<Vec<Mix>>,
    delays: Vec<u64>,
    size: Option<u64>,
    inject_size: Option<u64>,
}

impl Options {
    fn parsed(&self) -> Result<Parsed> {
        let o = self;
        let spec = ThreadSpec::parse(&o.cpu)?;
        let inj_spec = o.injectors.as_deref().map(ThreadSpec::parse).transpose()?;
        let mem_spec = MemSpec::parse(&o.mem_node)?;
        let traffic = Traffic::parse(&o.traffic).map_err(Error::Input)?;
        let mixes = o.writes.as_deref().map(parse_writes).transpose()?;
        if mixes.is_some() && traffic != Traffic::Read {
            return Err(Error::input(format!(
                "invalid --traffic '{}' with --writes: the write percentages set the traffic; give one of them",
                o.traffic
            )));
        }
        let delays: Vec<u64> = match &o.delays {
            Some(d) => d
                .split(',')
                .map(|x| {
                    x.trim().parse::<u64>().map_err(|_| {
                        Error::input(format!(
                            "invalid delay '{x}': expected spin-loop counts such as 1000,100,0"
                        ))
                    })
                })
                .collect::<Result<_>>()?,
            None => DEFAULT_DELAYS.to_vec(),
        };
        if let Some(d) = &o.delays {
            numalab_topo::lists::once("--delays", d, &delays, |x| x.to_string())?;
        }
        crate::experiment::check_iterations(o.iterations)?;
        o.noise.goal().map_err(Error::Input)?;
        let size = o.size.as_deref().map(parse_size).transpose()?;
        let inject_size = o.inject_size.as_deref().map(parse_size).transpose()?;
        Ok(Parsed {
            spec,
            inj_spec,
            mem_spec,
            traffic,
            mixes,
            delays,
            size,
            inject_size,
        })
    }

    /// Check what can be checked without a machine.
    pub fn check(&self) -> Result<()> {
        self.parsed().map(|_| ())
    }
}

/// Write percentages ("0,25,50,75,100") as mixes, each named in the error if bad.
fn parse_writes(s: &str) -> Result<Vec<Mix>> {
    let valid = "expected write percentages from 0 to 100, comma-separated, such as 0,25,50,75,100";
    let mut v: Vec<(&str, Mix)> = Vec::new();
    for x in s.split(',') {
        let pct: f64 = x
            .trim()
            .parse()
            .map_err(|_| Error::input(format!("invalid write percentage '{x}': {valid}")))?;
        let mix = Mix::from_write_pct(pct)
            .map_err(|_| Error::input(format!("invalid write percentage '{x}': {valid}")))?;
        v.push((x.trim(), mix));
    }
    // Two spellings of one mix (50, 50.0) are one value.
    let key = |(_, m): &&(&str, Mix)| m.to_string();
    numalab_topo::lists::once_by("--writes", s, &v, key, |(x, _)| format!("'{x}'"))?;
    Ok(v.into_iter().map(|(_, m)| m).collect())
}

/// A CPU-less node's traffic comes from the CPUs nearest it: the default chaser
/// moves to the first CPU of the nearest node that has CPUs.
fn chaser_spec(m: &Machine, spec: ThreadSpec, mem: &MemSpec, given: &str) -> ThreadSpec {
    let MemSpec::Node(n) = mem else { return spec };
    if given != "compact" || m.pus.iter().any(|p| p.node == Some(*n)) {
        return spec;
    }
    let near = m
        .pus
        .iter()
        .filter_map(|p| Some((m.distances.distance(*n, p.node?)?, p.os)))
        .min();
    match near {
        Some((_, cpu)) => ThreadSpec::parse(&cpu.to_string()).unwrap_or(spec),
        None => spec,
    }
}

impl LoadedPlan {
    /// Resolve the options on a machine.
    pub fn resolve(m: &Machine, o: &Options) -> Result<LoadedPlan> {
        let Parsed {
            spec,
            inj_spec,
            mem_spec,
            traffic,
            mixes,
            delays,
            size,
            inject_size,
        } = o.parsed()?;
        let spec = chaser_spec(m, spec, &mem_spec, &o.cpu);
        let req = vec![crate::crew::one(m, spec, &o.cpu)?];
        let r = &req[0];
        let injectors: Vec<ThreadPlacement> = match inj_spec {
            Some(s) => {
                let natural = matches!(s, ThreadSpec::List(_));
                let v = crate::crew::threads(m, s, (!natural).then_some(1))?;
                if let Some(t) = v.iter().find(|t| t.pu.os == r.pu.os) {
                    return Err(Error::input(format!(
                    "invalid injector CPU '{}': it is the chasing CPU; choose others with --injectors",
                    t.pu.os
                )));
                }
                v
            }
            None => m
                .pus
                .iter()
                .filter(|p| p.core != r.pu.core)
                .enumerate()
                .map(|(i, p)| ThreadPlacement {
                    thread: i,
                    pu: p.clone(),
                })
                .collect(),
        };
        if injectors.is_empty() {
            return Err(Error::Unsatisfiable(format!(
            "loaded latency needs at least one injector CPU off the chaser's core (CPU {}); this machine has none",
            r.pu.os
        )));
        }
        let mem = resolve_memory(m, &mem_spec, PageSize::Base, &req)?;
        let chase_bytes = size.unwrap_or_else(|| crate::sizing::streaming(m, 1));
        let inject_bytes =
            inject_size.unwrap_or_else(|| crate::sizing::streaming(m, injectors.len()));
        for (what, given, v) in [
            ("--size", &o.size, chase_bytes),
            ("--inject-size", &o.inject_size, inject_bytes),
        ] {
            if v < 64 << 10 {
                return Err(Error::input(format!(
                    "invalid {what} '{}': at least 64K",
                    given.as_deref().unwrap_or_default()
                )));
            }
        }
        check_capacity(m, &mem, chase_bytes + inject_bytes * injectors.len() as u64)?;
        let elements = (chase_bytes / super::measure::STRIDE as u64) as usize;
        Ok(LoadedPlan {
            requestor: r.clone(),
            injectors,
            mem,
            traffic,
            family: mixes.is_some(),
            mixes: mixes.unwrap_or_else(|| vec![traffic_mix(traffic)]),
            delays,
            chase_bytes,
            inject_bytes,
            loads: (elements.min(MAX_LOADS) / UNROLL).max(1) * UNROLL,
            iterations: o.iterations,
            goal: o.noise.goal().map_err(Error::Input)?,
        })
    }

    /// Warnings about the plan.
    pub fn warnings(&self, ctx: &Context) -> Vec<String> {
        let mut warnings = ctx.warnings.clone();
        let r = &self.requestor;
        if self.injectors.iter().any(|t| t.pu.core == r.pu.core) {
            warnings.push("an injector shares the chaser's core (SMT sibling): it competes for the core as well as for memory".into());
        }
        warnings
    }

    fn params(&self, load: Load) -> serde_json::Value {
        let (plan, r) = (self, &self.requestor);
        let traffic = if plan.family {
            "mix"
        } else {
            plan.traffic.name()
        };
        let mut p = json!({
            "delay": load.map(|l| l.1), "delay_unit": "spin-loop iterations after each injected line",
            "traffic": traffic,
            "requestor_cpu": r.pu.os,
            "injector_cpus": cpulist::format(&plan.injectors.iter().map(|t| t.pu.os).collect::<Vec<_>>()),
            "injectors": if load.is_some() { plan.injectors.len() } else { 0 },
            "chase_bytes": plan.chase_bytes, "inject_bytes": plan.inject_bytes,
            "loads_per_pass": plan.loads, "iterations": plan.iterations,
            "chase": format!("random, {}-byte stride, 4 KiB pages, 256 KiB TLB windows", super::measure::STRIDE),
            "mem_node": cpulist::format(&plan.mem.nodes),
        });
        if !plan.family {
            p["traffic_bytes_per_line"] = plan.traffic.traffic_per_line().into();
        }
        if let Some((mix, _)) = load {
            p["mix"] = mix.to_string().into();
            p["write_pct"] = write_pct(mix).into();
        }
        p
    }

    /// A point's record name: "unloaded", "delay D", or "W% writes, delay D" in a family.
    fn point_name(&self, load: Load) -> String {
        match load {
            None => "unloaded".into(),
            Some((m, d)) if self.family => format!("{}% writes, delay {d}", write_pct(m)),
            Some((_, d)) => format!("delay {d}"),
        }
    }

    /// The plan as a record (what `--dry-run` emits).
    pub fn record(&self, ctx: &Context) -> Record {
        let plan = self;
        let mut rec = Record::new(
            "loaded-latency-plan",
            "plan",
            ctx.prov.clone(),
            self.params(None),
        );
        rec.set_data(&super::LoadedPlanData {
            delays: plan.delays.clone(),
            write_pcts: plan
                .family
                .then(|| plan.mixes.iter().map(|m| write_pct(*m)).collect()),
        });
        rec.placement = Some(
            json!({ "resolved": { "requestor": plan.requestor, "injectors": plan.injectors, "memory": plan.mem } }),
        );
        rec.warnings = self.warnings(ctx);
        rec
    }
}

/// The issued write percentage of a mix, rounded as Mess rounds it.
pub fn write_pct(m: Mix) -> u32 {
    (m.write_share() * 100.0).round() as u32
}

/// The one-mix curve `--traffic` asks for.
fn traffic_mix(t: Traffic) -> Mix {
    match t {
        Traffic::Read => Mix::READS,
        Traffic::Write => Mix::WRITES,
    }
}

/// Measure the unloaded point, then every mix's delays: the points and their records.
/// Each point's record is kept as the point ends, should a signal end the ones after it.
pub fn run(
    host: &Host,
    plan: &LoadedPlan,
    ctx: &Context,
    progress: Progress,
) -> Result<(Vec<Point>, Vec<Record>)> {
    let timer = Timer::best();
    let warnings = plan.warnings(ctx);
    let mut records = Vec::new();
    let (points, _) = measure(
        host,
        &timer,
        plan,
        |i, n| progress(&format!("loaded-latency: point {}/{n}", i + 1)),
        |i, m, landed| {
            let rec = plan.point_record(&ctx.prov, &warnings, m, landed);
            if i < records.len() {
                // The unloaded point measured again: its new record (a lower reading, or
                // the same one with the second reading beside it) replaces the kept one.
                interrupt::supersede([rec.clone()]);
                records[i] = rec;
            } else {
                interrupt::keep([rec.clone()]);
                records.push(rec);
            }
        },
    )?;
    Ok((points.into_iter().map(|m| m.point).collect(), records))
}

impl LoadedPlan {
    /// The record of one measured point.
    pub fn point_record(
        &self,
        prov: &Provenance,
        warnings: &[String],
        m: &Measured,
        landed: &Landed,
    ) -> Record {
        let p = &m.point;
        let load = p.mix.zip(p.delay);
        let mut rec = Record::new(
            "loaded-latency",
            &self.point_name(load),
            prov.clone(),
            self.params(load),
        );
        rec.add_samples("latency", "ns", &p.latency_ns);
        if load.is_some() {
            rec.add_samples("injected_bandwidth", "GB/s", &p.injected_gbps);
            rec.add_samples("issued_bandwidth", "GB/s", &p.issued_gbps);
            rec.add_samples("read_share", "fraction", &p.read_share);
        }
        rec.add_samples("chase_bandwidth", "GB/s", &p.chase_gbps);
        rec.placement = Some(json!({ "verified": { "threads": p.pins, "memory": landed } }));
        rec.set_data(&super::LoadedData {
            samples: p.clone(),
            disturbance: Some(m.log.clone()),
            bandwidth_settle: m.bandwidth.clone(),
            remeasured_below: m.remeasured_below,
            replaced_ns: m.replaced_ns,
            rechecked_ns: m.rechecked_ns,
        });
        rec.warnings = warnings.to_vec();
        rec.warnings.extend(m.log.warning());
        if let Some(first) = m.replaced_ns {
            rec.warnings.push(format!(
                "measured again after a loaded point stayed below it: the first reading, {first:.1} ns, was the odd one (the memory's latency moved since)"
            ));
        }
        if let Some(second) = m.rechecked_ns {
            rec.warnings.push(format!(
                "measured again after a loaded point stayed below it: read {second:.1} ns, not lower by more than {:.0} %, so this reading stands",
                numalab_results::plausible::LOADED_BELOW_TOL * 100.0
            ));
        }
        if m.remeasured_below > 0 {
            rec.warnings.push(format!(
                "read below the unloaded latency, so measured again {}",
                numalab_results::words::count(m.remeasured_below as u64, "time")
            ));
        }
        settle::apply(&mut rec, m.settle.clone());
        rec
    }
}
