//! `numalab latency`: back-to-back and restart latency, composite coherence states,
//! and the memory-hierarchy sweep.

use crate::common::{bad, check_measurable, provenance, CliError, CommonArgs};
use crate::crew_args;
use crate::latency_view;
use clap::Args;
use numalab_bench::latency::{self, LatencyPlan, DEFAULT_MAX_LOADS};
use numalab_bench::restart::RestartParams;
use numalab_bench::sweep;
use numalab_probe::{Layout, LineState, Order, Request, Timer};
use numalab_results::Record;
use numalab_topo::plan::{check_capacity, resolve_memory};
use numalab_topo::spec::parse_size;
use numalab_topo::{fmt_bytes, Host, MemSpec, PageSize, ThreadSpec};

/// Arguments of `numalab latency`.
#[derive(Args, Debug)]
pub struct LatencyArgs {
    #[command(flatten)]
    crew: crew_args::CrewArgs,
    /// Line state before each pass: warm, uown, shrd:K, cexh, cexm, dexd, dext.
    #[arg(long, default_value = "warm")]
    state: String,
    /// Request: read (walk), rdex (modify), upgrade (modify on shared lines).
    /// Default: rdex for dext, read otherwise.
    #[arg(long)]
    kernel: Option<String>,
    /// Buffer size per requestor (default: 8× the last-level cache, at least 256M, for
    /// warm/uown; half the helper's L2 for states held in a helper's cache).
    #[arg(long)]
    size: Option<String>,
    /// Sweep sizes (default 4K-1G, two per octave) and report plateaus and cache sizes.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "4K-1G", value_name = "MIN-MAX")]
    sweep: Option<String>,
    /// Also find the restart latency (thesis §4.2.3).
    #[arg(long)]
    restart: bool,
    /// Restart search: moving-window length in steps.
    #[arg(long, default_value_t = 13)]
    restart_window: usize,
    /// Restart search: bound around the window mean, in ns.
    #[arg(long, default_value_t = 5.0)]
    restart_bound: f64,
    /// Restart search: consecutive stable steps needed.
    #[arg(long, default_value_t = 19)]
    restart_stable: usize,
    /// Restart search: largest number of dependent work operations tried.
    #[arg(long, default_value_t = numalab_probe::kernel::MAX_WORK)]
    restart_max_work: usize,
    /// Timed passes per requestor.
    #[arg(long, default_value_t = 10)]
    iterations: usize,
    /// Bytes between chase elements (a multiple of the line). Default: 128 at one size,
    /// so every visited line's 128-byte buddy stays unused and adjacent-line prefetch
    /// cannot hide misses; 64 for --sweep, so the buffer size is the cache footprint.
    #[arg(long)]
    stride: Option<usize>,
    /// TLB-locality window in pages (0: random over the whole buffer, page walks included).
    #[arg(long, default_value_t = numalab_probe::layout::DEFAULT_WINDOW_PAGES)]
    window: usize,
    /// Chase order: random, or backward (lmbench's sequential backward stride).
    #[arg(long, default_value = "random")]
    order: String,
    /// Page size: 4k, thp, 2m or 1g.
    #[arg(long, default_value = "4k")]
    page_size: String,
    /// Seed of the random chase order (recorded).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Most loads per timed pass (and lines prepared per pass).
    #[arg(long, default_value_t = DEFAULT_MAX_LOADS)]
    max_loads: usize,
    /// Print the plan (placements, sizes, loads, helpers) without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

fn parse_range(s: &str) -> Result<(u64, u64), CliError> {
    let (a, b) = s.split_once('-').ok_or_else(|| {
        bad(format!(
            "invalid sweep range '{s}': expected MIN-MAX, e.g. 4K-1G"
        ))
    })?;
    let (a, b) = (parse_size(a)?, parse_size(b)?);
    if a > b || a < 4096 {
        return Err(bad(format!(
            "invalid sweep range '{s}': MIN must be at least 4K and not above MAX"
        )));
    }
    Ok((a, b))
}

fn stride(a: &LatencyArgs) -> usize {
    a.stride.unwrap_or(if a.sweep.is_some() { 64 } else { 128 })
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
}

fn parse(a: &LatencyArgs) -> Result<Parsed, CliError> {
    a.common.validate()?;
    let (spec, mem) = a.crew.specs()?;
    if matches!(mem, MemSpec::Interleave(_)) {
        return Err(bad(format!(
            "invalid --mem-node '{}': a latency chase needs one home node (number, local, hops:K or farthest)",
            a.crew.mem_node
        )));
    }
    let state = LineState::parse(&a.state).map_err(bad)?;
    let request = match &a.kernel {
        Some(k) => Request::parse(k).map_err(bad)?,
        None => state.default_request(),
    };
    state.check_request(request).map_err(bad)?;
    let page = PageSize::parse(&a.page_size)?;
    let order = Order::parse(&a.order).ok_or_else(|| {
        bad(format!(
            "invalid order '{}': expected random or backward",
            a.order
        ))
    })?;
    Layout {
        stride: stride(a),
        ..Layout::default_for(4096, 0)
    }
    .validate()
    .map_err(bad)?;
    if a.iterations == 0 {
        return Err(bad("invalid --iterations '0': at least 1 timed pass"));
    }
    if a.max_loads < numalab_probe::kernel::UNROLL {
        return Err(bad(format!(
            "invalid --max-loads '{}': at least {}",
            a.max_loads,
            numalab_probe::kernel::UNROLL
        )));
    }
    if a.size.is_some() && a.sweep.is_some() {
        return Err(bad(
            "invalid option '--size' with '--sweep': give one of them",
        ));
    }
    if a.restart && a.sweep.is_some() {
        return Err(bad(
            "invalid option '--restart' with '--sweep': the restart search runs at one size; use --size",
        ));
    }
    if state.helpers() == 0 && a.crew.helpers.is_some() {
        return Err(bad(format!(
            "invalid option '--helpers' with state {}: it needs no helper threads",
            state.name()
        )));
    }
    let restart = a
        .restart
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
        .map_err(bad)?;
    Ok(Parsed {
        spec,
        mem,
        state,
        request,
        page,
        order,
        size: a.size.as_deref().map(parse_size).transpose()?,
        sweep: a.sweep.as_deref().map(parse_range).transpose()?,
        restart,
    })
}

fn build_plan(
    a: &LatencyArgs,
    p: &Parsed,
    host: &Host,
) -> Result<(LatencyPlan, Vec<u64>), CliError> {
    let m = &host.machine;
    let placed = a.crew.place(m, &p.spec, p.state)?;
    let (requestors, helpers, warnings) = (placed.requestors, placed.helpers, placed.warnings);
    let mem = resolve_memory(m, &p.mem, p.page, &requestors)?;
    let sizes = match (p.sweep, p.size) {
        (Some((lo, hi)), _) => sweep::sizes(lo, hi),
        (None, Some(s)) => vec![s],
        (None, None) => vec![latency::default_size(m, p.state)],
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
    layout.validate().map_err(bad)?;
    let evict_bytes = numalab_bench::sizing::eviction_buffer(m);
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
    };
    // Shapes are checked for every size before anything is measured.
    for &s in &sizes {
        plan.shape(s)?;
    }
    Ok((plan, sizes))
}

/// Run `numalab latency`.
pub fn run(a: LatencyArgs) -> Result<(), CliError> {
    let p = parse(&a)?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let (plan, sizes) = build_plan(&a, &p, &host)?;
    let (prov, base_warnings) = provenance(&host);
    if a.dry_run {
        let recs: Vec<Record> = sizes
            .iter()
            .map(|&s| {
                let shape = plan.shape(s).expect("checked");
                let mut r = Record::new(
                    "latency-plan",
                    &format!("{} {} {}", plan.request.name(), plan.state.name(), fmt_bytes(s)),
                    prov.clone(),
                    latency::parameters(&plan, None, &shape),
                );
                r.placement = Some(serde_json::json!({ "resolved": {
                    "requestors": plan.requestors, "helpers": plan.helpers, "memory": plan.mem } }));
                r.warnings = base_warnings.clone();
                r.warnings.extend(plan.warnings.iter().cloned());
                r.warnings.extend(plan.size_warnings(&host.machine, &shape));
                r
            })
            .collect();
        return a
            .common
            .emit(&recs, || latency_view::render_plan(&plan, &sizes, &recs));
    }
    let timer = Timer::best();
    let mut records = Vec::new();
    let mut results = Vec::new();
    let progress = sizes.len() > 1 && std::io::IsTerminal::is_terminal(&std::io::stderr());
    for (i, &s) in sizes.iter().enumerate() {
        if progress {
            eprint!(
                "\rlatency: {}/{} {:>10}   ",
                i + 1,
                sizes.len(),
                fmt_bytes(s)
            );
        }
        let r = latency::measure(&host, &timer, &plan, s)?;
        records.extend(latency::records(&prov, &base_warnings, &plan, &timer, &r));
        results.push(r);
    }
    if progress {
        eprintln!();
    }
    if p.sweep.is_some() {
        records.extend(latency_view::sweep_records(&prov, &host, &plan, &results));
    }
    a.common
        .emit(&records, || latency_view::render(&plan, &timer, &records))
}
