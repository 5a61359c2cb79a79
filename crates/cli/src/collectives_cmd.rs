//! `numalab suite collectives`: the KSR collective-communication study (seed 002).

use crate::collectives_view::{self, Results};
use crate::common::{bad, check_measurable, provenance, size_opt, CliError, CommonArgs};
use clap::Args;
use numalab_probe::sync::SyncKind;
use numalab_probe::Timer;
use numalab_results::{Provenance, Record, Unavailable};
use numalab_suites::collectives::Kind;
use numalab_suites::collectives_run::{self, fit_models, med, Config, Measured, PairResult, Plan};
use serde_json::json;

/// Arguments of `numalab suite collectives`.
#[derive(Args, Debug)]
pub struct CollectivesArgs {
    /// Level whose domains order the threads (default: the most informative level).
    #[arg(long)]
    level: Option<String>,
    /// Thread counts P, comma-separated (default: 2, 4, 8, … and every CPU).
    #[arg(long)]
    threads: Option<String>,
    /// Bytes of each thread's block, comma-separated.
    #[arg(long, default_value = "1K,4K,16K,64K")]
    sizes: String,
    /// Barrier between the stages of multi-stage collectives: central, tree, dissemination.
    #[arg(long, default_value = "dissemination")]
    barrier: String,
    /// Only collectives whose name starts with one of these, comma-separated
    /// (remote-read, barrier, broadcast, shift, gather, allgather, reduce).
    #[arg(long)]
    only: Option<String>,
    /// Timed passes per measurement (after one untimed pass).
    #[arg(long, default_value_t = 9)]
    iterations: usize,
    /// Print OSU micro-benchmark style blocks (size, avg/min/max latency over threads).
    #[arg(long)]
    osu: bool,
    /// Print the plan without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    mpi: crate::mpi_suite_cmd::MpiSuiteArgs,
    #[command(flatten)]
    common: CommonArgs,
}

const FAMILIES: [&str; 7] = [
    "remote-read",
    "barrier",
    "broadcast",
    "shift",
    "gather",
    "allgather",
    "reduce",
];

fn wanted(only: &[String], name: &str) -> bool {
    only.is_empty() || only.iter().any(|o| name.starts_with(o.as_str()))
}

fn params(plan: &Plan, m: &Measured, iterations: usize) -> serde_json::Value {
    let it = m.item;
    json!({
        "collective": it.kind.name(),
        "seed": it.kind.seed_name(),
        "threads": it.p,
        "cpus": plan.cpus[..it.p],
        "block_lines": it.lines,
        "block_bytes": it.lines * plan.line,
        "barrier": match it.kind { Kind::Barrier(s) => s.name(), _ => plan.sync.name() },
        "level": plan.level,
        "iterations": iterations,
        "method": "each thread first writes its own block (on its own node); the collective moves one word per line with loads and stores between barriers; time = the slowest thread's, per pass (per barrier for barriers); every moved word checked after the run",
    })
}

fn records(
    plan: &Plan,
    res: &Results,
    iterations: usize,
    prov: &Provenance,
    warnings: &[String],
) -> Vec<Record> {
    let mut out = Vec::new();
    for p in &res.pairs {
        let mut r = Record::new(
            "suite-collectives",
            &format!("remote-read CPU {}", p.pair.reader),
            prov.clone(),
            json!({ "collective": "remote-read", "root_cpu": plan.cpus[0], "reader_cpu": p.pair.reader,
                    "shares": p.pair.shares, "hops": p.pair.hops, "block_lines": plan.pair_lines,
                    "iterations": iterations }),
        );
        r.add_samples("read_time", "ns", &p.ns);
        r.placement = Some(json!({ "verified": { "threads": p.pins } }));
        r.warnings = warnings.to_vec();
        out.push(r);
    }
    for m in &res.items {
        let name = if m.item.lines == 0 {
            format!("{} P={}", m.item.kind.name(), m.item.p)
        } else {
            format!(
                "{} P={} {}B",
                m.item.kind.name(),
                m.item.p,
                m.item.lines * plan.line
            )
        };
        let mut r = Record::new(
            "suite-collectives",
            &name,
            prov.clone(),
            params(plan, m, iterations),
        );
        r.add_samples("time", "ns", &m.time_ns);
        r.placement =
            Some(json!({ "verified": { "threads": m.pins, "pages_per_node": m.pages_per_node } }));
        r.data = Some(json!({ "thread_mean_ns": m.thread_mean_ns, "data_checked": true }));
        r.warnings = warnings.to_vec();
        out.push(r);
    }
    for (kind, fits) in &res.fits {
        for f in fits {
            let name = f.as_ref().map(|f| f.formula.as_str()).unwrap_or("model");
            let mut rec = Record::new(
                "suite-collectives-model",
                &format!("{} {name}", kind.name()),
                prov.clone(),
                json!({ "collective": kind.name(), "unit": "µs", "lines": "lines per thread's block" }),
            );
            match f {
                Ok(f) => rec.data = Some(serde_json::to_value(f).unwrap_or_default()),
                Err(e) => rec.unavailable.push(Unavailable {
                    feature: "cost model".into(),
                    reason: e.clone(),
                }),
            }
            out.push(rec);
        }
    }
    out
}

/// Run `numalab suite collectives`.
pub fn run(a: CollectivesArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let level = crate::suite_cmd::level(&a.level)?;
    let threads = a
        .threads
        .as_deref()
        .map(|t| {
            t.split(',')
                .map(|x| {
                    x.trim().parse::<usize>().map_err(|_| {
                        bad(format!(
                            "invalid --threads item '{}': a thread count of at least 1",
                            x.trim()
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    let sizes = a
        .sizes
        .split(',')
        .map(|s| size_opt("--sizes item", s))
        .collect::<Result<Vec<_>, _>>()?;
    let sync = SyncKind::parse(&a.barrier).map_err(|e| bad(e.replace("barrier", "--barrier")))?;
    let only: Vec<String> = match &a.only {
        Some(o) => o
            .split(',')
            .map(|x| {
                let x = x.trim().to_string();
                if FAMILIES
                    .iter()
                    .any(|f| f.starts_with(&x) || x.starts_with(f))
                    && !x.is_empty()
                {
                    Ok(x)
                } else {
                    Err(bad(format!(
                        "invalid --only item '{x}': one of {}",
                        FAMILIES.join(", ")
                    )))
                }
            })
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    if a.iterations == 0 {
        return Err(bad("invalid --iterations '0': at least 1 timed pass"));
    }
    if a.mpi.mpi {
        let input = crate::mpi_suite_cmd::CollectivesInput {
            ranks: threads,
            sizes,
            only,
            iterations: a.iterations,
            osu: a.osu,
            dry_run: a.dry_run,
            common: &a.common,
        };
        return crate::mpi_suite_cmd::collectives(&a.mpi, input);
    }
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let m = &host.machine;
    let line = m.caches.first().and_then(|c| c.line_bytes).unwrap_or(64) as usize;
    let cfg = Config {
        level,
        threads,
        sizes,
        barriers: SyncKind::ALL.to_vec(),
        sync,
        line,
    };
    let mut plan = Plan::new(m, &cfg)?;
    plan.items.retain(|i| wanted(&only, &i.kind.name()));
    if !wanted(&only, "remote-read") {
        plan.pairs.clear();
    }
    let (prov, warnings) = provenance(&host);
    let head = collectives_view::head(m, &plan, a.iterations);
    if a.dry_run {
        let mut r = Record::new(
            "suite-collectives-plan",
            "collectives plan",
            prov,
            json!({ "iterations": a.iterations }),
        );
        r.data = Some(serde_json::to_value(&plan).unwrap_or_default());
        r.warnings = warnings;
        return a.common.emit(std::slice::from_ref(&r), || {
            format!("{head}{}", collectives_view::plan_text(&plan))
        });
    }
    let timer = Timer::best();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let total = plan.pairs.len() + plan.items.len();
    let mut pairs: Vec<PairResult> = Vec::new();
    for (i, p) in plan.pairs.iter().enumerate() {
        pairs.push(collectives_run::measure_pair(
            &host,
            &timer,
            &plan,
            p,
            a.iterations,
        )?);
        if tty {
            eprint!("\rcollectives: {}/{total}   ", i + 1);
        }
    }
    let mut items = Vec::new();
    for (i, it) in plan.items.iter().enumerate() {
        items.push(collectives_run::measure_item(
            &host,
            &timer,
            &plan,
            *it,
            a.iterations,
        )?);
        if tty {
            eprint!(
                "\rcollectives: {}/{total} {}   ",
                plan.pairs.len() + i + 1,
                it.kind.name()
            );
        }
    }
    if tty {
        eprintln!();
    }
    let mut fits = Vec::new();
    let mut kinds: Vec<Kind> = Vec::new();
    for it in &items {
        // Shifts are fitted at distance 1, the seed's model; other distances are Table 3.
        let k = it.item.kind;
        if !kinds.contains(&k) && !matches!(k, Kind::Shift(d) if d != 1) {
            kinds.push(k);
        }
    }
    for k in kinds {
        let pts: Vec<(usize, usize, f64)> = items
            .iter()
            .filter(|x| x.item.kind == k)
            .map(|x| (x.item.p, x.item.lines, med(&x.time_ns) / 1000.0))
            .collect();
        fits.push((k, fit_models(k, &pts)));
    }
    let res = Results { pairs, items, fits };
    let recs = records(&plan, &res, a.iterations, &prov, &warnings);
    a.common.emit(&recs, || {
        let body = if a.osu {
            collectives_view::osu_text(&plan, &res)
        } else {
            collectives_view::text(&plan, &res)
        };
        format!("{head}{body}")
    })
}
