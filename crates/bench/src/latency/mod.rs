//! `latency`: back-to-back (and restart) latency of a pointer chase, per requestor,
//! with lines prepared in a composite coherence state before every pass.

mod experiment;
mod outliers;
mod passes;
mod present;
mod restarts;
mod rounds;
mod text;
mod view;

pub use experiment::{
    parse_sweep_range, run, Measured, Options, Plan, DEFAULT_RESTART_MAX_WORK, DEFAULT_STRIDE,
    DEFAULT_WINDOW,
};
use passes::{mark_moved, placed_passes, NsTicks};
pub use present::{
    CoreClock, LatencyData, Remeasured, StatesPresenter, SweepData, SweepPoint, SweepPresenter,
    CLOCK_PASSES,
};
pub use text::{sweep_text, text};
pub use view::sweep_records;

use crate::restart::{RestartOutcome, RestartParams};
use numalab_probe::kernel::{self, UNROLL};
use numalab_probe::runner::clock_round;
use numalab_probe::{
    core_clock, flush, run_round, Chase, Layout, LineState, Request, Requestor, Round, RoundResult,
    Setup, Target, Timer,
};
use numalab_results::distance::{self, CpuDistance};
use numalab_results::disturb::{PassLog, Policy, Rules};
use numalab_results::settle;
use numalab_results::Settle;
use numalab_results::{Provenance, Record};
use numalab_topo::bind::PinProof;
use numalab_topo::buffer::{Buffer, MemProof};
use numalab_topo::{fmt_bytes, Error, Host, Machine, MemPlacement, Result, ThreadPlacement};
use serde::Serialize;
use serde_json::json;

/// A timed pass needs at least this many loads to dwarf the timer's overhead; small
/// warm buffers are chased round several times per pass.
pub const MIN_LOADS: usize = 1 << 16;
/// Default cap on the loads of one pass (and on the lines prepared for one pass).
pub const DEFAULT_MAX_LOADS: usize = 1 << 20;
/// Passes of the own-cache reference run beside helper-held states.
pub const OWN_CACHE_PASSES: usize = 5;
/// A helper-held state within this factor of the own-cache reference is implausible
/// (the results' rule `held-as-own-cache`).
pub const OWN_CACHE_FACTOR: f64 = numalab_results::plausible::HELD_OWN_CACHE_FACTOR;

/// Loads per pass in restart rounds: ~2×(window+stable) rounds must stay quick.
pub const RESTART_LOADS: usize = 1 << 16;

/// Default buffer size for a state: half a private cache for lines a helper holds,
/// 2 × the last-level cache for flushed lines, else beyond the caches.
pub fn default_size(m: &Machine, state: LineState) -> u64 {
    if state.helpers() > 0 {
        crate::sizing::half_private_cache(m)
    } else if state == LineState::Uown {
        crate::sizing::flushed_chase(m)
    } else {
        crate::sizing::beyond_caches(m)
    }
}

/// Everything one latency measurement needs, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct LatencyPlan {
    /// Requestor threads (timed simultaneously, each with its own chase).
    pub requestors: Vec<ThreadPlacement>,
    /// Helper threads preparing the line state.
    pub helpers: Vec<ThreadPlacement>,
    /// Home of every requestor's buffer.
    pub mem: MemPlacement,
    /// Line state.
    pub state: LineState,
    /// Request (kernel).
    pub request: Request,
    /// Chase layout (the seed is offset by the requestor index).
    pub layout: Layout,
    /// Timed passes per requestor.
    pub iterations: usize,
    /// Cap on loads (and prepared lines) per pass.
    pub max_loads: usize,
    /// Restart search, when asked for.
    pub restart: Option<RestartParams>,
    /// Bytes a cexm helper streams through to evict its private caches.
    pub evict_bytes: usize,
    /// Things the reader should know about this plan.
    pub warnings: Vec<String>,
    /// What is done with a disturbed pass.
    pub rules: Rules,
}

/// How one size will be run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// Buffer bytes per requestor.
    pub size: u64,
    /// Chase elements in the buffer.
    pub elements: usize,
    /// Elements prepared and visited per prepared pass (== elements for warm passes).
    pub visited: usize,
    /// Loads per timed pass.
    pub loads: usize,
}

impl LatencyPlan {
    /// A plain plan: one chase per requestor at a 128-byte stride (no adjacent-line
    /// prefetch pairs), 4 KiB pages, no restart search. Experiments built from
    /// latency measurements (c2c, matrices, invalidation, intervention) use this.
    pub fn basic(
        requestors: Vec<ThreadPlacement>,
        helpers: Vec<ThreadPlacement>,
        mem: MemPlacement,
        state: LineState,
        request: Request,
        iterations: usize,
        evict_bytes: usize,
    ) -> LatencyPlan {
        LatencyPlan {
            requestors,
            helpers,
            mem,
            state,
            request,
            layout: Layout {
                stride: 128,
                ..Layout::default_for(4096, 1)
            },
            iterations,
            max_loads: DEFAULT_MAX_LOADS,
            restart: None,
            evict_bytes,
            warnings: Vec::new(),
            // Experiments built on this plan record no pass log, so they keep every
            // pass (nothing is left out unsaid).
            rules: Rules {
                policy: Policy::Keep,
                ..Rules::default()
            },
        }
    }

    /// This plan walking lines at the plain chase's stride at one size
    /// ([`DEFAULT_STRIDE`], 256 B) instead of 128 B: for chases of memory (a matrix
    /// cell, a node's idle latency), so they read as `latency` and the loaded family do.
    pub fn memory_stride(mut self) -> LatencyPlan {
        self.layout.stride = DEFAULT_STRIDE;
        self
    }

    /// Lines visited and loads per pass for a buffer of `size` bytes.
    pub fn shape(&self, size: u64) -> Result<Shape> {
        let elements = self.layout.elements(size as usize);
        let cap = if self.restart.is_some() {
            self.max_loads.min(RESTART_LOADS)
        } else {
            self.max_loads
        };
        if self.state.prepared() {
            let visited = elements.min(cap) / UNROLL * UNROLL;
            if visited == 0 {
                return Err(Error::bad(
                    "size",
                    fmt_bytes(size),
                    format!(
                        "state {} visits each line once per pass and needs at least {UNROLL} elements ({} at a {}-byte stride)",
                        self.state.name(),
                        fmt_bytes((UNROLL * self.layout.stride) as u64),
                        self.layout.stride
                    ),
                ));
            }
            Ok(Shape {
                size,
                elements,
                visited,
                loads: visited,
            })
        } else {
            if elements == 0 {
                return Err(Error::bad(
                    "size",
                    fmt_bytes(size),
                    format!("at least one {}-byte stride", self.layout.stride),
                ));
            }
            let loads = if elements >= MIN_LOADS {
                elements.min(cap)
            } else {
                elements * MIN_LOADS.div_ceil(elements)
            };
            Ok(Shape {
                size,
                elements,
                visited: elements,
                loads,
            })
        }
    }

    /// Warnings about this size: prepared lines that cannot fit where the state puts them.
    pub fn size_warnings(&self, m: &Machine, shape: &Shape) -> Vec<String> {
        let mut w = Vec::new();
        let held = (shape.visited * self.layout.line * self.requestors.len()) as u64;
        let private = m
            .cache(2)
            .or_else(|| m.cache(1))
            .filter(|c| c.shared_by <= 2);
        if matches!(
            self.state,
            LineState::Shrd(_) | LineState::Cexh | LineState::Dexd | LineState::Dext
        ) {
            if let Some(c) = private {
                if held > c.bytes {
                    w.push(format!(
                        "the {} of prepared lines exceed a helper's L{} cache ({}): some will sit in a shared cache or memory instead of the helper's cache; use --size ≤ {}",
                        fmt_bytes(held),
                        c.level,
                        fmt_bytes(c.bytes),
                        fmt_bytes(c.bytes / 2)
                    ));
                }
            }
        }
        if shape.visited < shape.elements && self.state.prepared() {
            w.push(format!(
                "a pass visits {} of the {} elements (the first ones of the random cycle); raise --max-loads to visit more",
                shape.visited, shape.elements
            ));
        }
        w
    }
}

/// One requestor's result at one size.
#[derive(Debug, Clone, Serialize)]
pub struct RequestorResult {
    /// Requestor index.
    pub requestor: usize,
    /// ns per load of each pass the statistics use (the undisturbed ones, see `passes`).
    pub ns: Vec<f64>,
    /// Timer ticks (TSC cycles on x86) per load, as `ns`.
    pub ticks: Vec<f64>,
    /// ns per load of every pass, disturbed and re-measured ones included, as `passes`.
    pub all_ns: Vec<f64>,
    /// What disturbed each pass and which ones the statistics use.
    pub passes: PassLog,
    /// How its median settled (passes added until within the tolerance).
    pub settle: Settle,
    /// Where its buffer landed.
    pub memory: MemProof,
    /// Restart search, when asked for.
    pub restart: Option<RestartOutcome>,
    /// For states held in a helper's cache: the same chase with the lines in the
    /// requestor's own caches (ns per load, one per pass), to tell a remote hit from a local one.
    pub own_cache_ns: Option<Vec<f64>>,
    /// The core clock before and after the timed passes (None: no add chain here).
    pub clock: Option<CoreClock>,
}

/// The result of one size.
#[derive(Debug, Clone, Serialize)]
pub struct SizeResult {
    /// How it was run.
    pub shape: Shape,
    /// Per requestor.
    pub requestors: Vec<RequestorResult>,
    /// Pinning proof: requestors, then helpers.
    pub pins: Vec<PinProof>,
    /// Warnings for this size.
    pub warnings: Vec<String>,
    /// How far apart the requestor and each helper were (CAS round trips), when the
    /// state has helpers: `compare` reads it to tell a moved vCPU from a change.
    pub distance: Vec<CpuDistance>,
    /// The same pairs probed again after the timed passes.
    pub distance_after: Vec<CpuDistance>,
    /// Why the passes cannot stand for one placement (a pair moved between the probes
    /// in every try), when so: every requestor's median is then unsettled.
    pub moved: Option<String>,
}

/// Measure one size on this machine.
pub fn measure(host: &Host, timer: &Timer, plan: &LatencyPlan, size: u64) -> Result<SizeResult> {
    let shape = plan.shape(size)?;
    if plan.state.prepared() && !flush::available() {
        return Err(Error::Unsatisfiable(format!(
            "state {} needs a cache-flush instruction; this architecture has none implemented (use --state warm)",
            plan.state.name()
        )));
    }
    let chases = chases(host, plan, size, &shape)?;
    let setup = Setup {
        host,
        timer,
        requestors: plan
            .requestors
            .iter()
            .zip(&chases)
            .map(|(t, c)| Requestor {
                cpu: t.pu.os,
                chase: c,
            })
            .collect(),
        helpers: plan.helpers.iter().map(|h| h.pu.os).collect(),
        state: plan.state,
        request: plan.request,
        evict_bytes: plan.evict_bytes,
    };
    let mut warnings = plan.size_warnings(&host.machine, &shape);
    let before = clock_round(&setup, CLOCK_PASSES)?;
    let placed = placed_passes(&setup, plan, &shape, &mut warnings)?;
    let after = clock_round(&setup, CLOCK_PASSES)?;
    let restarts = match &plan.restart {
        Some(p) => {
            let loads = shape.loads.min(RESTART_LOADS);
            restarts::outcomes(&setup, p, plan.iterations, loads)?
        }
        None => vec![None; chases.len()],
    };
    let own = own_cache(setup, plan, &shape)?;
    let mut requestors = requestor_results(&chases, placed.main, restarts, own);
    for (i, q) in requestors.iter_mut().enumerate() {
        q.clock = clock_of(before.as_ref(), after.as_ref(), i);
    }
    let mut res = SizeResult {
        shape,
        requestors,
        pins: placed.pins,
        warnings,
        distance: placed.before,
        distance_after: placed.after,
        moved: placed.moved,
    };
    mark_moved(&mut res);
    Ok(res)
}

/// Requestor `i`'s core clock: the median of its passes before and after.
fn clock_of(
    before: Option<&Vec<Vec<f64>>>,
    after: Option<&Vec<Vec<f64>>>,
    i: usize,
) -> Option<CoreClock> {
    let med = |v: Option<&Vec<Vec<f64>>>| numalab_results::stats::median(v?.get(i)?);
    Some(CoreClock {
        before_ghz: med(before)?,
        after_ghz: med(after)?,
    })
}

/// One chase per requestor, each in its own buffer with its own seed.
fn chases(host: &Host, plan: &LatencyPlan, size: u64, shape: &Shape) -> Result<Vec<Chase>> {
    let mut chases = Vec::with_capacity(plan.requestors.len());
    for (i, _) in plan.requestors.iter().enumerate() {
        let buf = Buffer::allocate(host, &plan.mem, size)?;
        let layout = Layout {
            seed: plan.layout.seed.wrapping_add(i as u64),
            ..plan.layout.clone()
        };
        let chase = Chase::new(buf, layout, Some(shape.visited))
            .map_err(|e| Error::bad("layout", e, "see --stride, --window and --size"))?;
        chases.push(chase);
    }
    Ok(chases)
}

/// Reference for helper-held states: the same lines once the requestor holds them
/// (none for states no helper holds).
fn own_cache(setup: Setup, plan: &LatencyPlan, shape: &Shape) -> Result<Option<RoundResult>> {
    if plan.state.helpers() == 0 {
        return Ok(None);
    }
    let warm = Setup {
        helpers: Vec::new(),
        state: LineState::Warm,
        request: if plan.request == Request::Upgrade {
            Request::Rdex
        } else {
            plan.request
        },
        ..setup
    };
    let round = Round {
        work: 0,
        samples: OWN_CACHE_PASSES,
        loads: shape.loads,
        target: Target::Chase,
    };
    Ok(Some(run_round(&warm, &round)?))
}

/// Each requestor's result: its settled passes, where its buffer landed, its restart
/// search and its own-cache reference.
fn requestor_results(
    chases: &[Chase],
    main: Vec<NsTicks>,
    mut restarts: Vec<Option<RestartOutcome>>,
    own: Option<RoundResult>,
) -> Vec<RequestorResult> {
    chases
        .iter()
        .zip(main)
        .enumerate()
        .map(|(i, (c, s))| RequestorResult {
            requestor: i,
            ns: s.passes.used().iter().map(|v| v.0).collect(),
            ticks: s.passes.used().iter().map(|v| v.1).collect(),
            all_ns: s.passes.values.iter().map(|v| v.0).collect(),
            settle: s.settle,
            passes: s.passes.log,
            memory: c.buffer.proof.clone(),
            restart: restarts[i].take(),
            own_cache_ns: own.as_ref().map(|o| o.ns_per_load[i].clone()),
            clock: None,
        })
        .collect()
}

/// Parameters common to every record of a plan.
pub fn parameters(plan: &LatencyPlan, timer: Option<&Timer>, shape: &Shape) -> serde_json::Value {
    json!({
        "size_bytes": shape.size,
        "state": plan.state.name(),
        "state_how": plan.state.how(),
        "kernel": plan.request.name(),
        "stride_bytes": plan.layout.stride,
        "line_bytes": plan.layout.line,
        "window_pages": plan.layout.window_pages,
        "order": plan.layout.order,
        "page_size": plan.mem.page_size.name(),
        "seed": plan.layout.seed,
        "iterations": plan.iterations,
        "elements": shape.elements,
        "visited_per_pass": shape.visited,
        "loads_per_pass": shape.loads,
        "max_loads": plan.max_loads,
        "restart": plan.restart,
        "evict_bytes": (plan.state == LineState::Cexm).then_some(plan.evict_bytes),
        "kernel_impl": kernel::IMPLEMENTATION,
        "unroll": UNROLL,
        "flush": plan.state.prepared().then(flush::method),
        "timer": timer,
        "disturbed": plan.rules.policy.name(),
    })
}

/// The figure in core cycles (`latency_cycles`: each pass's ns × the core clock
/// measured beside it), or where no clock could be measured, why.
fn add_cycles(rec: &mut Record, q: &RequestorResult) {
    match q.clock {
        Some(c) => {
            let cycles: Vec<f64> = q.ns.iter().map(|ns| ns * c.ghz()).collect();
            rec.add_samples("latency_cycles", "core cycles", &cycles);
        }
        None => rec.unavailable.push(numalab_results::record::Unavailable {
            feature: "core clock".into(),
            reason: core_clock::UNAVAILABLE.into(),
        }),
    }
}

/// One record per requestor for one size.
pub fn records(
    prov: &Provenance,
    base_warnings: &[String],
    plan: &LatencyPlan,
    timer: &Timer,
    r: &SizeResult,
) -> Vec<Record> {
    r.requestors
        .iter()
        .map(|q| {
            let t = &plan.requestors[q.requestor];
            let name = format!(
                "{} {} {} cpu{} node{}",
                plan.request.name(),
                plan.state.name(),
                fmt_bytes(r.shape.size),
                t.pu.os,
                numalab_topo::cpulist::format(&plan.mem.nodes)
            );
            let mut params = parameters(plan, Some(timer), &r.shape);
            params["requestor"] = json!(q.requestor);
            params["requestor_cpu"] = json!(t.pu.os);
            params["helper_cpus"] = json!(plan.helpers.iter().map(|h| h.pu.os).collect::<Vec<_>>());
            let mut rec = Record::new("latency", &name, prov.clone(), params);
            rec.placement = Some(json!({
                "requested": { "requestor": t, "helpers": plan.helpers, "mem": plan.mem.spec },
                "resolved": { "requestor_cpu": t.pu.os, "helper_cpus": plan.helpers.iter().map(|h| h.pu.os).collect::<Vec<_>>(), "memory": plan.mem },
                "verified": { "threads": r.pins, "memory": q.memory },
            }));
            distance::attach(&mut rec, &r.distance);
            distance::attach_after(&mut rec, &r.distance_after);
            rec.add_samples("latency", "ns", &q.ns);
            if timer.ticks_are_tsc_cycles() {
                rec.add_samples("latency_tsc", "TSC cycles", &q.ticks);
            }
            add_cycles(&mut rec, q);
            rec.set_data(&LatencyData {
                samples_ns: q.all_ns.clone(),
                restart: None,
                disturbance: Some(q.passes.clone()),
                core_clock: q.clock,
            });
            rec.warnings.extend(q.passes.warning());
            settle::apply(&mut rec, q.settle.clone());
            if let Some(own) = &q.own_cache_ns {
                rec.add_samples("own_cache_reference", "ns", own);
                let med = |v: &[f64]| numalab_results::stats::median(v).unwrap_or(f64::NAN);
                let (state, own) = (med(&q.ns), med(own));
                if state <= own * OWN_CACHE_FACTOR {
                    rec.warnings.push(format!(
                        "state {} took {state:.1} ns, no more than {OWN_CACHE_FACTOR}× the {own:.1} ns of the same lines in the requestor's own caches: the helper (CPU {}) seems to share the requestor's caches (on a VM, vCPUs can be SMT siblings of one host core)",
                        plan.state.name(),
                        numalab_topo::cpulist::format(&plan.helpers.iter().map(|h| h.pu.os).collect::<Vec<_>>())
                    ));
                }
            }
            if let Some(o) = &q.restart {
                rec.add_samples("restart", "ns", &o.window_values);
                rec.set_data(&LatencyData {
                    samples_ns: q.all_ns.clone(),
                    restart: Some(o.clone()),
                    disturbance: Some(q.passes.clone()),
                    core_clock: q.clock,
                });
                if !o.converged {
                    rec.warnings.push(format!(
                        "restart search did not stabilise within k = 0 to {}; the figure is the minimum of the last window",
                        o.stable_to
                    ));
                }
            }
            rec.warnings.extend(base_warnings.iter().cloned());
            rec.warnings.extend(plan.warnings.iter().cloned());
            rec.warnings.extend(r.warnings.iter().cloned());
            rec
        })
        .collect()
}
