//! Mixed-traffic bandwidth (`bandwidth --mix`, `--injection`): every requestor runs a
//! mixed kernel (R read and W write streams, triad, update) over its own buffers on
//! the target node; one record per measurement, with the bytes issued, the read
//! share issued, and the memory traffic they imply (an estimate) or that counters saw.

use super::stagger::Staggered;
use super::{Options, LINE, MIN_PASS_BYTES};
use crate::crew::threads;
use crate::sizing;
use numalab_probe::mix::{Mix, Store};
use numalab_probe::mixed::{self, MixKernel};
use numalab_probe::{bw, span_ticks, Crew, LineState, Member, Timed, Timer};
use numalab_results::disturb::{PassLog, Rules};
use numalab_results::{settle, Provenance, Record, Settle};
use numalab_topo::bind::PinProof;
use numalab_topo::buffer::MemProof;
use numalab_topo::plan::{check_capacity, resolve_memory};
use numalab_topo::MemPlacement;
use numalab_topo::{
    fmt_bytes, Error, Host, Level, Machine, MemSpec, PageSize, Result, ThreadPlacement, ThreadSpec,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The injection table's rows, MLC's and more: all reads, 3:1, 2:1, 1:1, writes only
/// with regular and with non-temporal stores, stream-triad-like.
pub fn injection_rows() -> Vec<(MixKernel, Store)> {
    let r = |reads, writes| MixKernel::Ratio(Mix { reads, writes });
    vec![
        (r(1, 0), Store::Regular),
        (r(3, 1), Store::Regular),
        (r(2, 1), Store::Regular),
        (r(1, 1), Store::Regular),
        (r(0, 1), Store::Regular),
        (r(0, 1), Store::Nt),
        (MixKernel::Triad, Store::Regular),
    ]
}

/// One mixed measurement, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct MixPlan {
    /// Requestors (each walks its own buffers).
    pub requestors: Vec<ThreadPlacement>,
    /// Home of the buffers.
    pub mem: MemPlacement,
    /// The kernel.
    pub kernel: MixKernel,
    /// How stores are issued.
    pub store: Store,
    /// Bytes per requestor, all its buffers together.
    pub size: u64,
    /// Timed passes.
    pub iterations: usize,
    /// bwmp: the first requestor to finish stops the others.
    pub mp: bool,
    /// "injection" (a row of the injection table) or "mix".
    pub table: &'static str,
    /// Disturbed passes and how the best-of-N figure settles.
    pub rules: Rules,
}

impl MixPlan {
    /// Lines per buffer and repetitions per pass.
    pub fn shape(&self) -> Result<(usize, usize)> {
        let lines = self.size as usize / LINE / self.kernel.buffers();
        if lines < 64 {
            return Err(Error::bad(
                "size",
                fmt_bytes(self.size),
                format!(
                    "at least 4 KiB per buffer ({} for mix {})",
                    fmt_bytes(4096 * self.kernel.buffers() as u64),
                    self.kernel.name()
                ),
            ));
        }
        Ok((lines, MIN_PASS_BYTES.div_ceil(self.size).max(1) as usize))
    }
}

/// The mixes and stores asked for: `--mix` crossed with `--store` (a mix without
/// writes once, update with regular stores only), or the injection table's rows.
fn rows(o: &Options) -> Result<Vec<(MixKernel, Store)>> {
    let stores: Vec<Store> = o
        .store
        .split(',')
        .map(|s| Store::parse(s.trim()).map_err(Error::Input))
        .collect::<Result<_>>()?;
    numalab_topo::lists::once("--store", &o.store, &stores, |s| s.name().to_string())?;
    let Some(list) = &o.mix else {
        return Ok(if o.injection {
            injection_rows()
        } else {
            Vec::new()
        });
    };
    for s in &stores {
        s.check().map_err(Error::Input)?;
    }
    let mut out = Vec::new();
    let kernels = MixKernel::parse_list(list).map_err(Error::Input)?;
    numalab_topo::lists::once("--mix", list, &kernels, |k| k.name())?;
    for k in kernels {
        for &s in &stores {
            // In a list of stores, each mix takes those that apply to it.
            if stores.len() > 1 && k.check_store(s).is_err() {
                continue;
            }
            k.check_store(s).map_err(Error::Input)?;
            let s = if k.mix().writes == 0 {
                Store::Regular
            } else {
                s
            };
            if !out.contains(&(k, s)) {
                out.push((k, s));
            }
        }
    }
    Ok(out)
}

/// Check the mix options without a machine.
pub fn check(o: &Options) -> Result<()> {
    if o.mix.is_none() && !o.injection {
        Store::parse(&o.store).map_err(Error::Input)?;
        if o.store != Options::default().store {
            return Err(Error::input(format!(
                "invalid --store '{}' without --mix or --injection: only mixed kernels choose their stores; add --mix R:W or drop --store",
                o.store
            )));
        }
        return Ok(());
    }
    if let Some(h) = &o.crew.helpers {
        return Err(Error::input(format!(
            "invalid --helpers '{h}' with --mix/--injection: mixed runs place no helpers; drop --helpers"
        )));
    }
    if o.kernel != Options::default().kernel {
        return Err(Error::input(format!(
            "invalid --kernel '{}' with --mix/--injection: mixed runs choose their own kernels; drop --kernel",
            o.kernel
        )));
    }
    if let Some(s) = &o.state {
        return Err(Error::input(format!(
            "invalid --state '{s}' with --mix/--injection: mixed runs stream warm buffers; drop --state"
        )));
    }
    for (_, s) in rows(o)? {
        s.check().map_err(Error::Input)?;
    }
    Ok(())
}

/// Requestors of a mixed run: as the crew flags say, or for the injection table with
/// no --count, one per core.
fn requestors(m: &Machine, o: &Options) -> Result<Vec<ThreadPlacement>> {
    let spec = ThreadSpec::parse(&o.crew.cpu)?;
    let count = match (&spec, o.crew.count) {
        (_, Some(n)) => Some(n),
        (ThreadSpec::List(_), None) => None,
        (_, None) if o.injection => Some(m.domains(Level::Core).map_or(1, |d| d.len()).max(1)),
        (_, None) => Some(1),
    };
    threads(m, spec, count)
}

/// Memory of a mixed run: the --mem-node, or for the injection table left at `local`,
/// every node with memory.
fn memories(m: &Machine, o: &Options, req: &[ThreadPlacement]) -> Result<Vec<MemPlacement>> {
    let page = PageSize::parse(&o.page_size)?;
    let spec = MemSpec::parse(&o.crew.mem_node)?;
    if o.injection && spec == MemSpec::Local {
        return m
            .memory_nodes()
            .into_iter()
            .map(|n| resolve_memory(m, &MemSpec::Node(n), page, req))
            .collect();
    }
    Ok(vec![resolve_memory(m, &spec, page, req)?])
}

/// Resolve the mixed measurements (none when neither --mix nor --injection is given).
pub fn resolve(m: &Machine, o: &Options) -> Result<Vec<MixPlan>> {
    let rows = rows(o)?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let req = requestors(m, o)?;
    let n = req.len();
    let size =
        crate::experiment::opt_size(o.size.as_deref())?.unwrap_or_else(|| sizing::streaming(m, n));
    let rules = Rules {
        settle: o.noise.goal().map_err(Error::Input)?,
        ..Rules::default()
    };
    let mut out = Vec::new();
    for mem in memories(m, o, &req)? {
        check_capacity(m, &mem, size * n as u64)?;
        for &(kernel, store) in &rows {
            let p = MixPlan {
                requestors: req.clone(),
                mem: mem.clone(),
                kernel,
                store,
                size,
                iterations: o.iterations,
                mp: o.mp,
                table: if o.injection { "injection" } else { "mix" },
                rules,
            };
            p.shape()?;
            out.push(p);
        }
    }
    Ok(out)
}

/// Result of one mixed measurement.
#[derive(Debug, Clone)]
pub struct MixResult {
    /// Steps (lines of every buffer) of each pass, per requestor.
    pub steps: Vec<Vec<u64>>,
    /// Wall time of each pass per requestor, ns.
    pub ns: Vec<Vec<f64>>,
    /// Per pass, ns from the first requestor's start to the last one's end
    /// ([`numalab_probe::span_ticks`]).
    pub span_ns: Vec<f64>,
    /// Pinning proof.
    pub pins: Vec<PinProof>,
    /// Where every buffer landed, per requestor.
    pub memory: Vec<Vec<MemProof>>,
    /// Where every stream starts in its mapping, per requestor ([`super::stagger`]).
    pub offsets: Vec<Vec<u64>>,
    /// Lines per buffer and repetitions per pass.
    pub lines: usize,
    /// Repetitions per pass.
    pub reps: usize,
    /// What memory-controller counters saw, or why there is no figure.
    pub counters: super::imc::CounterFigure,
    /// Every pass of each requestor: what disturbed it, and whether it is used.
    pub logs: Vec<PassLog>,
    /// How each requestor's best-of-N settled, then the aggregate's when several.
    pub settle: Vec<Settle>,
    /// How far apart the requestors were ([`crate::pairs`]), and why not when a probe failed.
    pub distance: (Vec<numalab_results::distance::CpuDistance>, Vec<String>),
}

/// Measure on this machine.
pub fn measure(host: &Host, timer: &Timer, plan: &MixPlan) -> Result<MixResult> {
    let (lines, reps) = plan.shape()?;
    let bufs = buffers(host, plan, (lines * LINE) as u64)?;
    let crew = Crew {
        host,
        timer,
        members: plan
            .requestors
            .iter()
            .zip(&bufs)
            .map(|(t, b)| Member {
                cpu: t.pu.os,
                base: b[0].as_ptr(),
                lines: &[],
                line: LINE,
            })
            .collect(),
        helpers: Vec::new(),
        state: LineState::Warm,
        preread: false,
        evict_bytes: 0,
        first_stops: plan.mp,
    };
    let (kernel, store, mp) = (plan.kernel, plan.store, plan.mp);
    let bufs_ref = &bufs;
    let m = &host.machine;
    let window = super::imc::Window::open(&plan.mem.nodes, |c| m.pu(c).and_then(|p| p.node));
    let step = settle::Step {
        metric: "bandwidth",
        figure: settle::Figure::Max,
        want: plan.iterations,
    };
    let gb = |p: &(f64, u64, Timed)| kernel.bytes(p.1) as f64 / p.0;
    let mut pins = None;
    let cpus: Vec<u32> = crew.members.iter().map(|m| m.cpu).collect();
    let mut why = Vec::new();
    let distance = (
        crate::pairs::probe(host, timer, &plan.mem, &cpus, &mut why),
        why,
    );
    let (clock, sleep) = (&mut settle::clock(), &mut std::thread::sleep);
    let runs = settle::measure(&plan.rules, step, gb, clock, sleep, |n| -> Result<_> {
        let res = crew.run(n, false, |i| {
            let ptrs: Vec<*mut u8> = bufs_ref[i].iter().map(|b| b.as_ptr()).collect();
            move |pass: &numalab_probe::Pass| {
                // SAFETY: separate buffers of `lines` aligned lines each, as many as the
                // kernel walks; nt stores were checked available when the plan resolved.
                unsafe { mixed::run(kernel, store, &ptrs, lines, reps, mp.then_some(pass.stop)) }
            }
        })?;
        let rows = res.pass_rows(timer);
        pins.get_or_insert(res.pins);
        Ok(rows)
    })?;
    let counters = match window {
        Ok(w) => w.close("the warm-up and timed passes, all traffic on the node"),
        Err(why) => why,
    };
    let shape = (lines, reps, pins.unwrap_or_default());
    Ok(assemble(
        plan, timer, runs, &bufs, shape, counters, distance,
    ))
}

/// Each requestor's buffers, staggered across all of them (requestor-major).
fn buffers(host: &Host, plan: &MixPlan, per_buffer: u64) -> Result<Vec<Vec<Staggered>>> {
    let nb = plan.kernel.buffers();
    (0..plan.requestors.len())
        .map(|r| {
            (0..nb)
                .map(|i| Staggered::allocate(host, &plan.mem, per_buffer, r * nb + i))
                .collect::<Result<Vec<_>>>()
        })
        .collect()
}

/// The result from every requestor's settled passes, with the aggregate's settle entry
/// last.
fn assemble(
    plan: &MixPlan,
    timer: &Timer,
    runs: Vec<settle::Settled<(f64, u64, Timed)>>,
    bufs: &[Vec<Staggered>],
    (lines, reps, pins): (usize, usize, Vec<PinProof>),
    counters: super::imc::CounterFigure,
    distance: (Vec<numalab_results::distance::CpuDistance>, Vec<String>),
) -> MixResult {
    // Every round ran all requestors together, so pass k of each lines up.
    let all: Vec<&Vec<(f64, u64, Timed)>> = runs.iter().map(|r| &r.passes.values).collect();
    let mut settles: Vec<Settle> = runs.iter().map(|r| r.settle.clone()).collect();
    let res = MixResult {
        counters,
        steps: all
            .iter()
            .map(|v| v.iter().map(|p| p.1).collect())
            .collect(),
        ns: all
            .iter()
            .map(|v| v.iter().map(|p| p.0).collect())
            .collect(),
        span_ns: (0..all.iter().map(|v| v.len()).min().unwrap_or(0))
            .map(|s| timer.ns(span_ticks(all.iter().map(|v| &v[s].2), timer)))
            .collect(),
        pins,
        memory: bufs
            .iter()
            .map(|b| b.iter().map(|x| x.buf.proof.clone()).collect())
            .collect(),
        offsets: bufs
            .iter()
            .map(|b| b.iter().map(|x| x.offset).collect())
            .collect(),
        lines,
        reps,
        logs: Vec::new(),
        settle: Vec::new(),
        distance,
    };
    let agg = aggregates(plan, &res);
    let mut whole = super::aggregate_settle(&settles, &agg);
    whole.metric = "bandwidth".into();
    settles.push(whole);
    MixResult {
        logs: runs.into_iter().map(|r| r.passes.log).collect(),
        settle: settles,
        ..res
    }
}

/// `data` of a `bandwidth-mix` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixData {
    /// Issued GB/s of every pass, all requestors together.
    pub samples_gbps: Vec<f64>,
    /// Issued GB/s of every pass, per requestor.
    pub per_requestor_gbps: Vec<Vec<f64>>,
    /// Bytes issued as reads, all passes and requestors.
    pub issued_read_bytes: u64,
    /// Bytes issued as writes, all passes and requestors.
    pub issued_write_bytes: u64,
    /// Issued read bytes over issued bytes (Mess's `rd_percentage_actual`, as a fraction).
    pub read_share_issued: f64,
    /// Estimated memory traffic (read, write bytes) of the issued bytes.
    pub traffic_estimate_bytes: (u64, u64),
    /// Estimated memory traffic, GB/s per pass.
    pub traffic_estimate_gbps: Vec<f64>,
    /// Memory-controller counters: their figures and source, or why there are none.
    pub counters: super::imc::CounterFigure,
    /// How the aggregate was formed.
    pub aggregate_rule: String,
    /// Every pass of every requestor, one after another: what disturbed it and
    /// whether its requestor's figure uses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<PassLog>,
}

/// Issued GB/s of every pass, per requestor.
fn per_requestor(plan: &MixPlan, r: &MixResult) -> Vec<Vec<f64>> {
    let k = plan.kernel;
    r.steps
        .iter()
        .zip(&r.ns)
        .map(|(s, n)| {
            s.iter()
                .zip(n)
                .map(|(s, n)| k.bytes(*s) as f64 / n)
                .collect()
        })
        .collect()
}

/// Aggregate issued GB/s of every pass: the sum of the requestors' (bwmp), or all
/// bytes over the span the requestors' passes took together (never over each one's own
/// time: requestors run one after another would add up to more than they moved
/// together).
fn aggregates(plan: &MixPlan, r: &MixResult) -> Vec<f64> {
    let per_req = per_requestor(plan, r);
    let passes = r.steps.iter().map(Vec::len).min().unwrap_or(0);
    (0..passes)
        .map(|s| {
            if plan.mp {
                return per_req.iter().map(|g| g[s]).sum();
            }
            let bytes: u64 = r.steps.iter().map(|v| plan.kernel.bytes(v[s])).sum();
            let slowest = r.ns.iter().map(|n| n[s]).fold(0.0, f64::max);
            bytes as f64 / r.span_ns.get(s).copied().unwrap_or(slowest).max(slowest)
        })
        .collect()
}

/// Parameters of a mixed plan's records.
pub fn parameters(p: &MixPlan) -> serde_json::Value {
    let m = p.kernel.mix();
    json!({
        "mix": p.kernel.name(),
        "mix_label": p.kernel.label(),
        "reads": m.reads,
        "writes": m.writes,
        "read_share": m.read_share(),
        "store": p.store.name(),
        "table": p.table,
        "buffers_per_requestor": p.kernel.buffers(),
        "size_bytes": p.size,
        "iterations": p.iterations,
        "mp": p.mp,
        "requestors": p.requestors.len(),
        "requestor_cpus": p.requestors.iter().map(|t| t.pu.os).collect::<Vec<_>>(),
        "nodes": p.mem.nodes,
        "page_size": p.mem.page_size.name(),
        "vector_bits": bw::vector_bits(),
        "vector_isa": bw::vector_isa(),
        "bytes_convention": "issued: bytes the kernel loads and stores (STREAM's and likwid's convention); traffic estimate adds a write-allocate read per regular store",
    })
}

/// The record of one mixed measurement.
pub fn record(
    prov: &Provenance,
    warnings: &[String],
    plan: &MixPlan,
    timer: &Timer,
    r: &MixResult,
) -> Record {
    let k = plan.kernel;
    let per_req = per_requestor(plan, r);
    let agg = aggregates(plan, r);
    let steps: u64 = r.steps.iter().flatten().sum();
    let (rd, wr) = k.issued(steps);
    let (trd, twr) = k.traffic(plan.store, rd, wr);
    let ratio = (trd + twr) as f64 / (rd + wr).max(1) as f64;
    let traffic: Vec<f64> = agg.iter().map(|g| g * ratio).collect();
    let share = rd as f64 / (rd + wr).max(1) as f64;
    let mut p = parameters(plan);
    p["lines_per_buffer"] = json!(r.lines);
    p["buffer_offsets"] = json!(r.offsets);
    p["reps_per_pass"] = json!(r.reps);
    p["timer"] = json!(timer);
    let nodes = numalab_topo::cpulist::format(&plan.mem.nodes);
    let name = format!(
        "mix {} {} node {nodes} x{}",
        k.name(),
        plan.store.name(),
        plan.requestors.len()
    );
    let mut rec = Record::new("bandwidth-mix", &name, prov.clone(), p);
    rec.placement = Some(json!({
        "resolved": { "requestors": plan.requestors, "memory": plan.mem },
        "verified": { "threads": r.pins, "memory": r.memory },
    }));
    rec.add_samples("bandwidth", "GB/s", &agg);
    rec.add_samples("read_bandwidth", "GB/s", &scaled(&agg, share));
    rec.add_samples("write_bandwidth", "GB/s", &scaled(&agg, 1.0 - share));
    rec.add_samples("traffic_estimate", "GB/s", &traffic);
    rec.set_data(&MixData {
        samples_gbps: agg,
        per_requestor_gbps: per_req,
        issued_read_bytes: rd,
        issued_write_bytes: wr,
        read_share_issued: share,
        traffic_estimate_bytes: (trd, twr),
        traffic_estimate_gbps: traffic,
        counters: r.counters.clone(),
        aggregate_rule: if plan.mp {
            "sum of the requestors' figures (bwmp: the first to finish stopped the others)"
        } else {
            "all bytes over the span from the first requestor's start to the last one's end"
        }
        .into(),
        disturbance: joined(&r.logs),
    });
    numalab_results::distance::attach(&mut rec, &r.distance.0);
    rec.warnings = warnings.to_vec();
    rec.warnings.extend(r.distance.1.iter().cloned());
    let log = joined(&r.logs);
    rec.warnings.extend(log.as_ref().and_then(PassLog::warning));
    if let Some(s) = r.settle.last() {
        settle::apply(&mut rec, s.clone());
    }
    rec
}

/// The requestors' pass logs as one (None: none).
fn joined(logs: &[PassLog]) -> Option<PassLog> {
    let first = logs.first()?;
    Some(PassLog {
        rules: first.rules,
        passes: logs.iter().flat_map(|l| l.passes.clone()).collect(),
    })
}

fn scaled(v: &[f64], f: f64) -> Vec<f64> {
    v.iter().map(|x| x * f).collect()
}

/// The plan as a dry-run record.
pub fn plan_record(prov: &Provenance, warnings: &[String], p: &MixPlan) -> Record {
    let name = format!("mix {} {}", p.kernel.name(), p.store.name());
    let mut r = Record::new("bandwidth-mix-plan", &name, prov.clone(), parameters(p));
    r.placement = Some(json!({ "resolved": { "requestors": p.requestors, "memory": p.mem } }));
    r.warnings = warnings.to_vec();
    r
}
