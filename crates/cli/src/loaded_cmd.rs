//! `numalab loaded-latency`: chase latency while other threads inject traffic.

use crate::common::{bad, check_measurable, provenance, CliError, CommonArgs};
use clap::Args;
use numalab_bench::bandwidth;
use numalab_bench::loaded::{self, LoadedPlan, Point, DEFAULT_DELAYS};
use numalab_probe::bw::BwKernel;
use numalab_probe::inject::Traffic;
use numalab_probe::kernel::UNROLL;
use numalab_probe::Timer;
use numalab_results::output::table;
use numalab_results::stats::{median, percentile};
use numalab_results::Record;
use numalab_topo::plan::{check_capacity, resolve_memory};
use numalab_topo::spec::parse_size;
use numalab_topo::{cpulist, fmt_bytes, MemSpec, PageSize, ThreadPlacement, ThreadSpec};
use serde_json::json;
use std::fmt::Write;

/// Loads per timed pass at most (~40 ms at memory latency).
const MAX_LOADS: usize = 1 << 18;

/// Arguments of `numalab loaded-latency`.
#[derive(Args, Debug)]
pub struct LoadedArgs {
    /// The chasing thread (one CPU).
    #[arg(long = "cpu", default_value = "compact")]
    cpu: String,
    /// Injector CPUs, a plan spec or list (default: every CPU off the chaser's core).
    #[arg(long)]
    injectors: Option<String>,
    /// Home of the chase and the injected traffic: node, local, hops:K, farthest.
    #[arg(long = "mem-node", default_value = "local")]
    mem_node: String,
    /// Injected traffic: read (loads) or write (stores: read-for-ownership plus writeback).
    #[arg(long, default_value = "read")]
    traffic: String,
    /// Injector delays (spin-loop iterations after each line), comma-separated, in the
    /// order measured (default: 20000 down to 0, as MLC).
    #[arg(long)]
    delays: Option<String>,
    /// Chase buffer bytes (default: four times every L3 together, at least 64 MiB).
    #[arg(long)]
    size: Option<String>,
    /// Bytes per injector (default: as the chase, spread over the injectors).
    #[arg(long)]
    inject_size: Option<String>,
    /// Timed passes per point.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    /// Print the plan without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

/// Run `numalab loaded-latency`.
pub fn run(a: LoadedArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let spec = ThreadSpec::parse(&a.cpu)?;
    let inj_spec = a.injectors.as_deref().map(ThreadSpec::parse).transpose()?;
    let mem_spec = MemSpec::parse(&a.mem_node)?;
    let traffic = Traffic::parse(&a.traffic).map_err(bad)?;
    let delays: Vec<u64> = match &a.delays {
        Some(d) => d
            .split(',')
            .map(|x| {
                x.trim().parse::<u64>().map_err(|_| {
                    bad(format!(
                        "invalid delay '{x}': expected spin-loop counts such as 1000,100,0"
                    ))
                })
            })
            .collect::<Result<_, _>>()?,
        None => DEFAULT_DELAYS.to_vec(),
    };
    if a.iterations == 0 {
        return Err(bad("invalid --iterations '0': at least 1 timed pass"));
    }
    let size = a.size.as_deref().map(parse_size).transpose()?;
    let inject_size = a.inject_size.as_deref().map(parse_size).transpose()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let m = &host.machine;
    let req = vec![crate::crew_args::one(m, spec)?];
    let r = &req[0];
    let injectors: Vec<ThreadPlacement> = match inj_spec {
        Some(s) => {
            let natural = matches!(s, ThreadSpec::List(_));
            let v = crate::crew_args::threads(m, s, (!natural).then_some(1))?;
            if let Some(t) = v.iter().find(|t| t.pu.os == r.pu.os) {
                return Err(bad(format!(
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
        return Err(CliError::from(numalab_topo::Error::Unsatisfiable(format!(
            "loaded latency needs at least one injector CPU off the chaser's core (CPU {}); this machine has none",
            r.pu.os
        ))));
    }
    let mem = resolve_memory(m, &mem_spec, PageSize::Base, &req)?;
    let chase_bytes = size.unwrap_or_else(|| bandwidth::default_size(m, BwKernel::Read, 1));
    let inject_bytes =
        inject_size.unwrap_or_else(|| bandwidth::default_size(m, BwKernel::Read, injectors.len()));
    for (what, given, v) in [
        ("--size", &a.size, chase_bytes),
        ("--inject-size", &a.inject_size, inject_bytes),
    ] {
        if v < 64 << 10 {
            return Err(bad(format!(
                "invalid {what} '{}': at least 64K",
                given.as_deref().unwrap_or_default()
            )));
        }
    }
    check_capacity(m, &mem, chase_bytes + inject_bytes * injectors.len() as u64)?;
    let elements = (chase_bytes / 128) as usize;
    let plan = LoadedPlan {
        requestor: r.clone(),
        injectors,
        mem,
        traffic,
        delays,
        chase_bytes,
        inject_bytes,
        loads: (elements.min(MAX_LOADS) / UNROLL).max(1) * UNROLL,
        iterations: a.iterations,
    };
    let (prov, mut warnings) = provenance(&host);
    if plan.injectors.iter().any(|t| t.pu.core == r.pu.core) {
        warnings.push("an injector shares the chaser's core (SMT sibling): it competes for the core as well as for memory".into());
    }
    let params = |d: Option<u64>| {
        json!({
            "delay": d, "delay_unit": "spin-loop iterations after each injected line",
            "traffic": traffic.name(), "traffic_bytes_per_line": traffic.traffic_per_line(),
            "requestor_cpu": r.pu.os,
            "injector_cpus": cpulist::format(&plan.injectors.iter().map(|t| t.pu.os).collect::<Vec<_>>()),
            "injectors": if d.is_some() { plan.injectors.len() } else { 0 },
            "chase_bytes": plan.chase_bytes, "inject_bytes": plan.inject_bytes,
            "loads_per_pass": plan.loads, "iterations": plan.iterations,
            "chase": "random, 128-byte stride, 4 KiB pages, 256 KiB TLB windows",
        })
    };
    if a.dry_run {
        let mut rec = Record::new("loaded-latency-plan", "plan", prov, params(None));
        rec.data = Some(json!({ "delays": plan.delays }));
        rec.placement = Some(
            json!({ "resolved": { "requestor": plan.requestor, "injectors": plan.injectors, "memory": plan.mem } }),
        );
        rec.warnings = warnings;
        return a.common.emit(std::slice::from_ref(&rec), || {
            let mut s = format!(
                "loaded latency: chase on CPU {} over {}, {} {} injector(s) on CPUs {} with {} each, memory {}; an unloaded point, then delays {:?}\n",
                r.pu.os,
                fmt_bytes(plan.chase_bytes),
                plan.injectors.len(),
                traffic.name(),
                rec.parameters["injector_cpus"].as_str().unwrap_or(""),
                fmt_bytes(plan.inject_bytes),
                cpulist::format(&plan.mem.nodes),
                plan.delays
            );
            for w in &rec.warnings {
                let _ = writeln!(s, "warning: {w}");
            }
            s
        });
    }
    let timer = Timer::best();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (points, landed) = loaded::measure(&host, &timer, &plan, |i, n| {
        if tty {
            eprint!("\rloaded-latency: point {}/{n}   ", i + 1);
        }
    })?;
    if tty {
        eprintln!();
    }
    let records: Vec<Record> = points
        .iter()
        .map(|p| {
            let name = p
                .delay
                .map(|d| format!("delay {d}"))
                .unwrap_or_else(|| "unloaded".into());
            let mut rec = Record::new("loaded-latency", &name, prov.clone(), params(p.delay));
            rec.add_samples("latency", "ns", &p.latency_ns);
            if p.delay.is_some() {
                rec.add_samples("injected_bandwidth", "GB/s", &p.injected_gbps);
            }
            rec.add_samples("chase_bandwidth", "GB/s", &p.chase_gbps);
            rec.placement = Some(json!({ "verified": { "threads": p.pins, "memory": landed } }));
            rec.data = Some(json!({ "samples": p }));
            rec.warnings = warnings.clone();
            rec
        })
        .collect();
    a.common
        .emit(&records, || render(&plan, &points, &warnings))
}

fn render(plan: &LoadedPlan, points: &[Point], warnings: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Loaded latency: chase on CPU {} over {}; {} {} injector(s); median of {} passes\n",
        plan.requestor.pu.os,
        fmt_bytes(plan.chase_bytes),
        plan.injectors.len(),
        plan.traffic.name(),
        plan.iterations
    );
    let f = |v: Option<f64>, p: usize| v.map(|x| format!("{x:.p$}")).unwrap_or("-".into());
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            let mut l = p.latency_ns.clone();
            l.sort_by(f64::total_cmp);
            vec![
                p.delay.map(|d| d.to_string()).unwrap_or("unloaded".into()),
                if p.delay.is_some() {
                    f(median(&p.injected_gbps), 2)
                } else {
                    "-".into()
                },
                f(median(&p.latency_ns), 1),
                f(l.first().copied(), 1),
                f(Some(percentile(&l, 0.9)), 1),
            ]
        })
        .collect();
    s.push_str(&table(
        &["delay", "injected GB/s", "latency ns", "min", "p90"],
        &rows,
    ));
    s.push('\n');
    let _ = writeln!(s, "\ninjected GB/s counts memory traffic: 64 bytes per line read, 128 per line written (read-for-ownership plus writeback)");
    for w in warnings {
        let _ = writeln!(s, "warning: {w}");
    }
    s
}
