//! `bandwidth`: bandwidth kernels per requestor, all starting on a barrier, with
//! lines prepared in a composite state and snbench's `bwmp` (first finisher stops all);
//! mixed read/write traffic and the injection table in [`mixed`].

mod experiment;
pub mod groups;
pub mod imc;
mod mix_present;
pub mod mixed;
mod present;
pub mod scaling;
pub mod stagger;
pub mod stream_table;
mod text;
pub use experiment::{run, Options, Plan};
pub use mix_present::MixPresenter;
pub use mixed::{MixData, MixPlan};
pub use present::{BandwidthData, BandwidthPresenter};

use crate::sizing;
use numalab_probe::bw::{self, BwKernel};
use numalab_probe::{span_ticks, Crew, LineState, Member, Timed, Timer};
use numalab_results::distance::{self, CpuDistance};
use numalab_results::disturb::{PassLog, Rules};
use numalab_results::{settle, Provenance, Record, Settle};
use numalab_topo::bind::PinProof;
use numalab_topo::buffer::{Buffer, MemProof};
use numalab_topo::{fmt_bytes, Error, Host, Machine, MemPlacement, Result, ThreadPlacement};
use serde::Serialize;
use serde_json::json;

/// A warm pass streams at least this many bytes (small buffers are repeated).
pub const MIN_PASS_BYTES: u64 = 64 << 20;
/// Line size of the kernels.
pub const LINE: usize = 64;

/// One bandwidth measurement, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct BwPlan {
    /// Requestors (each streams its own buffer).
    pub requestors: Vec<ThreadPlacement>,
    /// Helpers preparing the state.
    pub helpers: Vec<ThreadPlacement>,
    /// Home of the buffers.
    pub mem: MemPlacement,
    /// Line state before each pass.
    pub state: LineState,
    /// The kernel.
    pub kernel: BwKernel,
    /// Bytes per requestor.
    pub size: u64,
    /// Timed passes.
    pub iterations: usize,
    /// bwmp: the first requestor to finish stops the others.
    pub mp: bool,
    /// cexm eviction buffer bytes.
    pub evict_bytes: usize,
    /// Warnings about the plan.
    pub warnings: Vec<String>,
    /// Disturbed passes and how the best-of-N figure settles.
    pub rules: Rules,
}

impl BwPlan {
    /// Lines per requestor and repetitions per pass.
    pub fn shape(&self) -> Result<(usize, usize)> {
        let lines = (self.size as usize) / LINE;
        // One 4 KiB page per requestor at least (copy uses half for each side).
        if lines < 64 {
            return Err(Error::bad(
                "size",
                fmt_bytes(self.size),
                "at least 4 KiB per requestor",
            ));
        }
        let reps = if self.state.prepared() {
            1
        } else {
            MIN_PASS_BYTES.div_ceil(self.size).max(1) as usize
        };
        Ok((lines, reps))
    }

    /// Check the kernel against the state.
    pub fn check(&self) -> std::result::Result<(), String> {
        match (self.kernel, self.state) {
            (BwKernel::Upgrade, LineState::Shrd(_)) => Ok(()),
            (BwKernel::Upgrade, s) => Err(format!(
                "invalid state '{}' for kernel upgrade: an upgrade stores to lines the requestor shares; use --state shrd:K",
                s.name()
            )),
            _ => Ok(()),
        }
    }
}

/// The default state of a kernel: rdex needs lines not held (uown), upgrade shared lines.
pub fn default_state(k: BwKernel) -> LineState {
    match k {
        BwKernel::Rdex => LineState::Uown,
        BwKernel::Upgrade => LineState::Shrd(1),
        _ => LineState::Warm,
    }
}

/// Default bytes per requestor for a kernel: half a private cache for kernels on lines
/// a helper holds, else streaming past every cache.
pub fn default_size(m: &Machine, k: BwKernel, n: usize) -> u64 {
    if matches!(k, BwKernel::Rdex | BwKernel::Upgrade) {
        return sizing::half_private_cache(m);
    }
    sizing::streaming(m, n)
}

/// [`default_size`] for a kernel named as the CLI names it (None for an unknown name).
pub fn default_size_of(m: &Machine, kernel: &str, n: usize) -> Option<u64> {
    BwKernel::parse(kernel).ok().map(|k| default_size(m, k, n))
}

/// Result of one bandwidth measurement.
#[derive(Debug, Clone, Serialize)]
pub struct BwResult {
    /// GB/s (counted bytes) of every pass, per requestor (disturbed ones included).
    pub gbps: Vec<Vec<f64>>,
    /// Wall time of each pass per requestor, ns.
    pub ns: Vec<Vec<f64>>,
    /// Counted bytes of each pass per requestor.
    pub bytes: Vec<Vec<u64>>,
    /// Aggregate GB/s per pass: sum of the requestors' (bwmp), or all bytes over the
    /// span from the first requestor's start to the last one's end otherwise.
    pub aggregate: Vec<f64>,
    /// Pinning proof.
    pub pins: Vec<PinProof>,
    /// Where each buffer landed.
    pub memory: Vec<MemProof>,
    /// Lines per requestor and repetitions per pass.
    pub lines: usize,
    /// Repetitions of the buffer per pass.
    pub reps: usize,
    /// GB/s of the passes each requestor's statistics use (the undisturbed ones).
    pub used_gbps: Vec<Vec<f64>>,
    /// Every pass of each requestor: what disturbed it, and whether its statistics use it.
    pub logs: Vec<PassLog>,
    /// How each requestor's best-of-N settled, then the aggregate's when several.
    pub settle: Vec<Settle>,
    /// How far the first requestor was from the other requestors and the helpers
    /// ([`crate::pairs`]); empty on one CPU.
    pub distance: Vec<CpuDistance>,
    /// Why a distance could not be measured.
    pub warnings: Vec<String>,
}

/// One pass of one requestor: its wall time (ns), counted bytes, and the pass as timed
/// (its start and end lay requestors' passes side by side).
type Pass = (f64, u64, Timed);

/// Measure on this machine.
pub fn measure(host: &Host, timer: &Timer, plan: &BwPlan) -> Result<BwResult> {
    let (lines, reps) = plan.shape()?;
    let bufs: Vec<Buffer> = plan
        .requestors
        .iter()
        .map(|_| Buffer::allocate(host, &plan.mem, plan.size))
        .collect::<Result<_>>()?;
    let all: Vec<u32> = (0..lines as u32).collect();
    let crew = crew(host, timer, plan, &bufs, &all);
    let kernel = plan.kernel;
    let mp = plan.mp;
    let mut pins = None;
    let mut warnings = Vec::new();
    let cpus: Vec<u32> = crew
        .members
        .iter()
        .map(|m| m.cpu)
        .chain(crew.helpers.iter().copied())
        .collect();
    let distance = crate::pairs::probe(host, timer, &plan.mem, &cpus, &mut warnings);
    let step = settle::Step {
        metric: "bandwidth",
        figure: settle::Figure::Max,
        want: plan.iterations,
    };
    let gb = |p: &Pass| p.1 as f64 / p.0;
    let (clock, sleep) = (&mut settle::clock(), &mut std::thread::sleep);
    let runs = settle::measure(&plan.rules, step, gb, clock, sleep, |n| -> Result<_> {
        let res = crew.run(n, true, |i| {
            let base = crew.members[i].base;
            move |pass: &numalab_probe::Pass| {
                // SAFETY: base covers `lines` aligned lines of this requestor's buffer.
                unsafe { bw::run(kernel, base, lines, reps, mp.then_some(pass.stop)) }
            }
        })?;
        let rows = res.pass_rows(timer);
        pins.get_or_insert(res.pins);
        Ok(rows)
    })?;
    let used_gbps = runs
        .iter()
        .map(|r| r.passes.used().iter().map(gb).collect())
        .collect();
    // Every round ran all requestors together, so pass k of each lines up.
    let all: Vec<&Vec<Pass>> = runs.iter().map(|r| &r.passes.values).collect();
    let ns: Vec<Vec<f64>> = all
        .iter()
        .map(|v| v.iter().map(|p| p.0).collect())
        .collect();
    let bytes: Vec<Vec<u64>> = all
        .iter()
        .map(|v| v.iter().map(|p| p.1).collect())
        .collect();
    let gbps: Vec<Vec<f64>> = all.iter().map(|v| v.iter().map(gb).collect()).collect();
    let aggregate = aggregate(&all, mp, timer);
    let mut settles: Vec<Settle> = runs.iter().map(|r| r.settle.clone()).collect();
    if settles.len() > 1 {
        settles.push(aggregate_settle(&settles, &aggregate));
    }
    Ok(BwResult {
        gbps,
        ns,
        bytes,
        aggregate,
        pins: pins.unwrap_or_default(),
        memory: bufs.iter().map(|b| b.proof.clone()).collect(),
        lines,
        reps,
        used_gbps,
        logs: runs.into_iter().map(|r| r.passes.log).collect(),
        settle: settles,
        distance,
        warnings,
    })
}

/// The requestors (each on its own buffer's lines) and helpers of `plan`, as a crew.
fn crew<'a>(
    host: &'a Host,
    timer: &'a Timer,
    plan: &BwPlan,
    bufs: &[Buffer],
    lines: &'a [u32],
) -> Crew<'a> {
    Crew {
        host,
        timer,
        members: plan
            .requestors
            .iter()
            .zip(bufs)
            .map(|(t, b)| Member {
                cpu: t.pu.os,
                base: b.as_ptr(),
                lines,
                line: LINE,
            })
            .collect(),
        helpers: plan.helpers.iter().map(|h| h.pu.os).collect(),
        state: plan.state,
        preread: plan.kernel == BwKernel::Upgrade,
        evict_bytes: plan.evict_bytes,
        first_stops: plan.mp,
    }
}

/// Per pass k, all requestors' GB/s together: the sum of each one's rate when the first
/// to finish stopped the others (`--mp`), else all bytes over the span the passes took
/// together (see span_ticks).
fn aggregate(all: &[&Vec<Pass>], mp: bool, timer: &Timer) -> Vec<f64> {
    let gb = |p: &Pass| p.1 as f64 / p.0;
    let passes = all.iter().map(|v| v.len()).min().unwrap_or(0);
    (0..passes)
        .map(|s| {
            if mp {
                all.iter().map(|v| gb(&v[s])).sum()
            } else {
                let total: u64 = all.iter().map(|v| v[s].1).sum();
                let span = span_ticks(all.iter().map(|v| &v[s].2), timer);
                total as f64 / timer.ns(span)
            }
        })
        .collect()
}

/// The aggregate's best-of-N, judged like each requestor's: settled when every
/// requestor's did and its own top passes agree.
pub(crate) fn aggregate_settle(each: &[Settle], aggregate: &[f64]) -> Settle {
    let first = &each[0];
    let i = settle::Figure::Max.of(aggregate);
    let within = i.is_some_and(|i| i.within(first.tolerance_pct));
    let why = each.iter().find_map(|s| s.why.clone()).or_else(|| {
        (!within).then(|| "machine busy: the requestors' best passes did not coincide".into())
    });
    Settle {
        settled: within && each.iter().all(|s| s.settled),
        metric: "aggregate_bandwidth".into(),
        passes: aggregate.len() as u32,
        interval: i.map_or([f64::NAN; 2], |i| [i.lo, i.hi]),
        why,
        ..first.clone()
    }
}

/// Parameters of a plan's records.
pub fn parameters(plan: &BwPlan) -> serde_json::Value {
    json!({
        "kernel": plan.kernel.name(),
        "state": plan.state.name(),
        "state_how": plan.state.how(),
        "size_bytes": plan.size,
        "iterations": plan.iterations,
        "mp": plan.mp,
        "requestors": plan.requestors.len(),
        "page_size": plan.mem.page_size.name(),
        "vector_bits": bw::vector_bits(),
        "vector_isa": bw::vector_isa(),
        "counted_bytes_per_line": plan.kernel.counted_per_line(LINE),
        "traffic_bytes_per_line": plan.kernel.traffic_per_line(LINE),
        "bytes_convention": "counted: bytes the kernel asks for (STREAM's convention); traffic adds write-allocate reads and writebacks",
    })
}

/// One record per requestor, plus the aggregate when there are several.
pub fn records(
    prov: &Provenance,
    base_warnings: &[String],
    plan: &BwPlan,
    timer: &Timer,
    r: &BwResult,
) -> Vec<Record> {
    let traffic =
        plan.kernel.traffic_per_line(LINE) as f64 / plan.kernel.counted_per_line(LINE) as f64;
    let mut out: Vec<Record> = plan
        .requestors
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut p = parameters(plan);
            p["requestor_cpu"] = json!(t.pu.os);
            p["lines"] = json!(r.lines);
            p["reps_per_pass"] = json!(r.reps);
            p["timer"] = json!(timer);
            let name = format!("{} {} {} cpu{}", plan.kernel.name(), plan.state.name(), fmt_bytes(plan.size), t.pu.os);
            let mut rec = Record::new("bandwidth", &name, prov.clone(), p);
            rec.placement = Some(json!({
                "resolved": { "requestor_cpu": t.pu.os, "helper_cpus": plan.helpers.iter().map(|h| h.pu.os).collect::<Vec<_>>(), "memory": plan.mem },
                "verified": { "threads": r.pins, "memory": r.memory[i] },
            }));
            rec.add_samples("bandwidth", "GB/s", &r.used_gbps[i]);
            let t: Vec<f64> = r.used_gbps[i].iter().map(|g| g * traffic).collect();
            rec.add_samples("traffic", "GB/s", &t);
            rec.set_data(&BandwidthData {
                samples_gbps: r.gbps[i].clone(),
                samples_ns: Some(r.ns[i].clone()),
                samples_bytes: Some(r.bytes[i].clone()),
                aggregate_rule: None,
                disturbance: r.logs.get(i).cloned(),
            });
            rec.warnings = base_warnings.to_vec();
            rec.warnings.extend(plan.warnings.iter().cloned());
            rec.warnings.extend(r.logs.get(i).and_then(PassLog::warning));
            rec.warnings.extend(r.warnings.iter().cloned());
            distance::attach(&mut rec, &r.distance);
            if let Some(s) = r.settle.get(i) {
                settle::apply(&mut rec, s.clone());
            }
            rec
        })
        .collect();
    if plan.requestors.len() > 1 {
        let mut p = parameters(plan);
        p["requestor_cpus"] = json!(plan.requestors.iter().map(|t| t.pu.os).collect::<Vec<_>>());
        let name = format!(
            "{} {} {} aggregate of {}",
            plan.kernel.name(),
            plan.state.name(),
            fmt_bytes(plan.size),
            plan.requestors.len()
        );
        let mut rec = Record::new("bandwidth", &name, prov.clone(), p);
        rec.add_samples("aggregate_bandwidth", "GB/s", &r.aggregate);
        rec.set_data(&BandwidthData {
            samples_gbps: r.aggregate.clone(),
            samples_ns: None,
            samples_bytes: None,
            aggregate_rule: Some(
                if plan.mp {
                    "sum of the requestors' figures (bwmp: the first to finish stopped the others)"
                } else {
                    "all bytes over the span from the first requestor's start to the last one's end"
                }
                .into(),
            ),
            disturbance: None,
        });
        rec.placement = Some(
            json!({ "resolved": { "requestor_cpus": plan.requestors.iter().map(|t| t.pu.os).collect::<Vec<_>>(), "helper_cpus": plan.helpers.iter().map(|h| h.pu.os).collect::<Vec<_>>(), "memory": plan.mem } }),
        );
        distance::attach(&mut rec, &r.distance);
        rec.warnings = base_warnings.to_vec();
        rec.warnings.extend(r.warnings.iter().cloned());
        if let Some(s) = r.settle.last() {
            settle::apply(&mut rec, s.clone());
        }
        out.push(rec);
    }
    out
}

/// A bandwidth record's requestors and the metric that is its figure: the aggregate
/// with several threads, the one thread's bandwidth otherwise.
pub(crate) fn metric_of(r: &Record) -> (u64, &'static str) {
    let n = r.parameters["requestors"].as_u64().unwrap_or(1);
    (
        n,
        if n > 1 {
            "aggregate_bandwidth"
        } else {
            "bandwidth"
        },
    )
}
