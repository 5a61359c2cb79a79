//! Latency as an experiment: options, plan (sizes included), records and text.

use super::{
    default_size, measure, parameters, records as size_records, LatencyPlan, DEFAULT_MAX_LOADS,
};
use crate::crew::CrewOptions;
use crate::experiment::{Context, Progress};
use crate::restart::RestartParams;
use crate::sweep;
use numalab_probe::kernel::{MAX_WORK, UNROLL};
use numalab_probe::layout::DEFAULT_WINDOW_PAGES;
use numalab_probe::{Layout, LineState, Order, Request, Timer};
use numalab_results::disturb::{Policy, Rules};
use numalab_results::settle::{Goal, NoiseOptions};
use numalab_results::Record;
use numalab_topo::plan::{check_capacity, resolve_memory};
use numalab_topo::spec::parse_size;
use numalab_topo::{fmt_bytes, Error, Host, Machine, MemSpec, PageSize, Result, ThreadSpec};
use serde::{Deserialize, Serialize};

/// What the user asks of `latency`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// Requestors, helpers and memory.
    pub crew: CrewOptions,
    /// Line state before each pass.
    pub state: String,
    /// Request (None: the state's default).
    pub kernel: Option<String>,
    /// Buffer size per requestor (None: by state).
    pub size: Option<String>,
    /// Sweep range MIN-MAX.
    pub sweep: Option<String>,
    /// Also find the restart latency.
    pub restart: bool,
    /// Restart search: moving-window length in steps.
    pub restart_window: usize,
    /// Restart search: bound around the window mean, in ns.
    pub restart_bound: f64,
    /// Restart search: consecutive stable steps needed.
    pub restart_stable: usize,
    /// Restart search: largest number of dependent work operations tried.
    pub restart_max_work: usize,
    /// Timed passes per requestor.
    pub iterations: usize,
    /// Bytes between chase elements (None: 128 at one size, 64 for a sweep).
    pub stride: Option<usize>,
    /// TLB-locality window in pages.
    pub window: usize,
    /// Chase order: random or backward.
    pub order: String,
    /// Page size: 4k, thp, 2m or 1g.
    pub page_size: String,
    /// Seed of the random chase order.
    pub seed: u64,
    /// Most loads per timed pass.
    pub max_loads: usize,
    /// What is done with a disturbed pass: keep, remeasure (up to 3 times) or exclude.
    #[serde(default = "default_disturbed")]
    pub disturbed: String,
    /// How long each size may take to settle its median, and to what tolerance.
    #[serde(default)]
    pub noise: NoiseOptions,
}

/// Default of `Options::restart_max_work`.
pub const DEFAULT_RESTART_MAX_WORK: usize = MAX_WORK;
/// Default of `Options::window`.
pub const DEFAULT_WINDOW: usize = DEFAULT_WINDOW_PAGES;

impl Default for Options {
    fn default() -> Self {
        Options {
            crew: CrewOptions::default(),
            state: "warm".into(),
            kernel: None,
            size: None,
            sweep: None,
            restart: false,
            restart_window: 13,
            restart_bound: 5.0,
            restart_stable: 19,
            restart_max_work: MAX_WORK,
            iterations: 10,
            stride: None,
            window: DEFAULT_WINDOW_PAGES,
            order: "random".into(),
            page_size: "4k".into(),
            seed: 1,
            max_loads: DEFAULT_MAX_LOADS,
            disturbed: default_disturbed(),
            noise: NoiseOptions::default(),
        }
    }
}

fn default_disturbed() -> String {
    Policy::default().name().into()
}

/// A `--sweep` range, MIN-MAX (e.g. 4K-1G), as bytes: MIN at least 4 KiB, not above MAX.
pub fn parse_sweep_range(s: &str) -> Result<(u64, u64)> {
    let (a, b) = s.split_once('-').ok_or_else(|| {
        Error::input(format!(
            "invalid sweep range '{s}': expected MIN-MAX, e.g. 4K-1G"
        ))
    })?;
    let (a, b) = (parse_size(a)?, parse_size(b)?);
    if a > b || a < 4096 {
        return Err(Error::input(format!(
            "invalid sweep range '{s}': MIN must be at least 4K and not above MAX"
        )));
    }
    Ok((a, b))
}

/// The single-size chase's default stride: multichase's, and the one at which both tools
/// agree. A denser 128 B chase puts twice the elements in each TLB window and reads
/// lower at DRAM sizes (82.6-87.1 ns against 106.4-107.4 ns at 1 GiB on a 16-core
/// Emerald Rapids VM, where multichase read 103.5-104.0 ns), so it is not the default.
pub const DEFAULT_STRIDE: usize = 256;

fn stride(a: &Options) -> usize {
    a.stride.unwrap_or(if a.sweep.is_some() {
        64
    } else {
        DEFAULT_STRIDE
    })
}

/// What the arguments ask for, checked before the topology is loaded.
struct Parsed {
    spec: ThreadSpec,
    mem: MemSpec,
    state: LineState,
    request: Request,
    page: PageSize,
    order: Order,
    size: Option<u64>,
    sweep: Option<(u64, u64)>,
    restart: Option<RestartParams>,
    disturbed: Policy,
    goal: Goal,
}

fn parse(a: &Options) -> Result<Parsed> {
    let (spec, mem) = a.crew.specs()?;
    if matches!(mem, MemSpec::Interleave(_)) {
        return Err(Error::input(format!(
            "invalid --mem-node '{}': a latency chase needs one home node (number, local, hops:K or farthest)",
            a.crew.mem_node
        )));
    }
    let (state, request) = state_and_request(a)?;
    let page = PageSize::parse(&a.page_size)?;
    let order = Order::parse(&a.order).ok_or_else(|| {
        Error::input(format!(
            "invalid order '{}': expected random or backward",
            a.order
        ))
    })?;
    Layout {
        stride: stride(a),
        ..Layout::default_for(4096, 0)
    }
    .validate()
    .map_err(Error::Input)?;
    check_counts(a)?;
    check_combinations(a, state)?;
    let goal = a.noise.goal().map_err(Error::Input)?;
    let restart = restart_params(a)?;
    Ok(Parsed {
        spec,
        mem,
        state,
        request,
        page,
        order,
        size: a.size.as_deref().map(parse_size).transpose()?,
        sweep: a.sweep.as_deref().map(parse_sweep_range).transpose()?,
        restart,
        disturbed: Policy::parse(&a.disturbed).map_err(Error::Input)?,
        goal,
    })
}

/// The line state and the request timed (the state's own unless --kernel names one
/// the state allows).
fn state_and_request(a: &Options) -> Result<(LineState, Request)> {
    let state = LineState::parse(&a.state).map_err(Error::Input)?;
    let request = match &a.kernel {
        Some(k) => Request::parse(k).map_err(Error::Input)?,
        None => state.default_request(),
    };
    state.check_request(request).map_err(Error::Input)?;
    Ok((state, request))
}

/// --iterations and --max-loads within their bounds.
fn check_counts(a: &Options) -> Result<()> {
    if a.iterations == 0 {
        return Err(Error::input(
            "invalid --iterations '0': at least 1 timed pass",
        ));
    }
    if a.max_loads < UNROLL {
        return Err(Error::input(format!(
            "invalid --max-loads '{}': at least {}",
            a.max_loads, UNROLL
        )));
    }
    Ok(())
}

/// Options that cannot go together: --size or --restart with --sweep, --helpers
/// with a state that has none.
fn check_combinations(a: &Options, state: LineState) -> Result<()> {
    if a.size.is_some() && a.sweep.is_some() {
        return Err(Error::input(
            "invalid option '--size' with '--sweep': give one of them",
        ));
    }
    if a.restart && a.sweep.is_some() {
        return Err(Error::input(
            "invalid option '--restart' with '--sweep': the restart search runs at one size; use --size",
        ));
    }
    if state.helpers() == 0 && a.crew.helpers.is_some() {
        return Err(Error::input(format!(
            "invalid option '--helpers' with state {}: it needs no helper threads",
            state.name()
        )));
    }
    Ok(())
}

/// The restart search's parameters, checked, when --restart asks for it.
fn restart_params(a: &Options) -> Result<Option<RestartParams>> {
    a.restart
        .then(|| {
            let p = RestartParams {
                window: a.restart_window,
                bound_ns: a.restart_bound,
                stable: a.restart_stable,
                max_work: a.restart_max_work,
            };
            p.validate().map(|_| p)
        })
        .transpose()
        .map_err(Error::Input)
}

impl Options {
    /// Check what can be checked without a machine.
    pub fn check(&self) -> Result<()> {
        parse(self).map(|_| ())
    }
}

/// The latency measurement and its sizes, resolved.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Placements, state, layout and passes.
    pub latency: LatencyPlan,
    /// Buffer sizes, in the order measured.
    pub sizes: Vec<u64>,
    /// Whether the sizes are a sweep (then sweep summaries are recorded).
    pub sweep: bool,
}

impl Plan {
    /// Resolve the options on a machine.
    pub fn resolve(m: &Machine, o: &Options) -> Result<Plan> {
        let p = parse(o)?;
        let (latency, sizes) = build_plan(o, &p, m)?;
        Ok(Plan {
            latency,
            sizes,
            sweep: p.sweep.is_some(),
        })
    }

    /// The plan as records, one per size (what `--dry-run` emits).
    pub fn records(&self, m: &Machine, ctx: &Context) -> Vec<Record> {
        let (plan, sizes, prov, base_warnings) =
            (&self.latency, &self.sizes, &ctx.prov, &ctx.warnings);
        sizes
            .iter()
            .map(|&s| {
                let shape = plan.shape(s).expect("checked");
                let mut r = Record::new(
                    "latency-plan",
                    &format!(
                        "{} {} {}",
                        plan.request.name(),
                        plan.state.name(),
                        fmt_bytes(s)
                    ),
                    prov.clone(),
                    parameters(plan, None, &shape),
                );
                r.placement = Some(serde_json::json!({ "resolved": {
                "requestors": plan.requestors, "helpers": plan.helpers, "memory": plan.mem } }));
                r.warnings = base_warnings.clone();
                r.warnings.extend(plan.warnings.iter().cloned());
                r.warnings.extend(plan.size_warnings(m, &shape));
                r
            })
            .collect()
    }
}

/// What `run` measured: the timer used and the records.
pub struct Measured {
    /// The timer (its kind, frequency and resolution are printed).
    pub timer: Timer,
    /// One record per requestor and size, then the sweep summaries.
    pub records: Vec<Record>,
}

/// Measure every size on this machine.
pub fn run(host: &Host, plan: &Plan, ctx: &Context, progress: Progress) -> Result<Measured> {
    let (sizes, prov, base_warnings) = (&plan.sizes, &ctx.prov, &ctx.warnings);
    let timer = Timer::best();
    let many = sizes.len() > 1;
    let mut records = Vec::new();
    let mut results = Vec::new();
    let mut took = Vec::new();
    for (i, &s) in sizes.iter().enumerate() {
        if many {
            progress(&format!(
                "latency: {}/{} {:>10}",
                i + 1,
                sizes.len(),
                fmt_bytes(s)
            ));
        }
        let started = std::time::Instant::now();
        let r = measure(host, &timer, &plan.latency, s)?;
        took.push(started.elapsed());
        // Kept should a signal end the sizes after it (a sweep's summaries need them all).
        numalab_results::interrupt::keep(size_records(
            prov,
            base_warnings,
            &plan.latency,
            &timer,
            &r,
        ));
        results.push(r);
    }
    if plan.sweep {
        super::rounds::second(host, &timer, &plan.latency, &mut results, &took, progress)?;
    }
    // A sweep point far above both neighbours is measured once more (library, not
    // CLI: every sweep does it); the second run is the one kept.
    let first = if plan.sweep {
        super::outliers::remeasure(host, &timer, &plan.latency, &mut results, progress)?
    } else {
        Vec::new()
    };
    for (i, r) in results.iter().enumerate() {
        let mut recs = size_records(prov, base_warnings, &plan.latency, &timer, r);
        if let Some((_, f)) = first.iter().find(|(j, _)| *j == i) {
            for (k, rec) in recs.iter_mut().enumerate() {
                let was = f
                    .requestors
                    .get(k)
                    .and_then(|q| crate::sweep::Spread::of(&q.ns));
                rec.warnings.push(format!(
                    "measured twice: the first run of this size was far above both neighbouring sizes in the sweep (median {} ns); these are the second run's passes",
                    was.map_or("?".into(), |w| format!("{:.1}", w.median_ns))
                ));
            }
        }
        records.extend(recs);
    }
    if plan.sweep {
        records.extend(super::sweep_records(
            prov,
            host,
            &plan.latency,
            &results,
            &first,
        ));
    }
    Ok(Measured { timer, records })
}

fn build_plan(a: &Options, p: &Parsed, m: &Machine) -> Result<(LatencyPlan, Vec<u64>)> {
    let placed = a.crew.place(m, &p.spec, p.state)?;
    let (requestors, helpers, warnings) = (placed.requestors, placed.helpers, placed.warnings);
    let mem = resolve_memory(m, &p.mem, p.page, &requestors)?;
    let sizes = match (p.sweep, p.size) {
        (Some((lo, hi)), _) => sweep::sizes(lo, hi),
        (None, Some(s)) => vec![s],
        (None, None) => vec![default_size(m, p.state)],
    };
    let largest = *sizes.iter().max().expect("at least one size");
    check_capacity(m, &mem, largest * requestors.len() as u64)?;
    let line = m
        .cache(1)
        .and_then(|c| c.line_bytes)
        .map(|l| l as usize)
        .unwrap_or(64);
    let layout = Layout {
        line,
        stride: stride(a),
        window_pages: a.window,
        page_bytes: p.page.bytes() as usize,
        order: p.order,
        seed: a.seed,
    };
    layout.validate().map_err(Error::Input)?;
    let evict_bytes = crate::sizing::eviction_buffer(m);
    let plan = LatencyPlan {
        requestors,
        helpers,
        mem,
        state: p.state,
        request: p.request,
        layout,
        iterations: a.iterations,
        max_loads: a.max_loads,
        restart: p.restart,
        evict_bytes,
        warnings,
        rules: Rules {
            policy: p.disturbed,
            settle: p.goal,
            ..Rules::default()
        },
    };
    // Shapes are checked for every size before anything is measured.
    for &s in &sizes {
        plan.shape(s)?;
    }
    Ok((plan, sizes))
}
