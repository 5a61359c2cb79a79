//! The collectives suite as an experiment: options, plan, records and text.

use super::run::{fit_models, measure_item, measure_pair, Config, Measured, PairResult, Plan};
use super::view::Results;
use super::Kind;
use numalab_bench::experiment::{level, size_opt, Context, Progress};
use numalab_probe::sync::SyncKind;
use numalab_probe::Timer;
use numalab_results::settle::{self, NoiseOptions};
use numalab_results::stats::median;
use numalab_results::{Provenance, Record, Unavailable};
use numalab_topo::{fmt_bytes, Error, Host, Machine, Result};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What the user asks of `suite collectives`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Options {
    /// Level whose domains order the threads (None: the most informative level).
    pub level: Option<String>,
    /// Thread counts P, comma-separated (None: 2, 4, 8, … and every CPU).
    pub threads: Option<String>,
    /// Bytes of each thread's block, comma-separated.
    pub sizes: String,
    /// Barrier between stages: central, tree, dissemination.
    pub barrier: String,
    /// Only collectives whose name starts with one of these, comma-separated.
    pub only: Option<String>,
    /// Timed passes per measurement (first passes: more are added until it settles).
    pub iterations: usize,
    /// How long each measurement may take to settle its median, and to what tolerance.
    #[serde(default)]
    pub noise: NoiseOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            level: None,
            threads: None,
            sizes: "1K,4K,16K,64K".into(),
            barrier: "dissemination".into(),
            only: None,
            iterations: 9,
            noise: NoiseOptions::default(),
        }
    }
}

/// Thread (rank) counts, block sizes and `--only` prefixes, as parsed.
pub type CountsSizesOnly = (Option<Vec<usize>>, Vec<u64>, Vec<String>);

/// The options, parsed.
struct Parsed {
    level: Option<numalab_topo::Level>,
    threads: Option<Vec<usize>>,
    sizes: Vec<u64>,
    sync: SyncKind,
    only: Vec<String>,
}

impl Options {
    fn parsed(&self) -> Result<Parsed> {
        let a = self;
        let level = level(a.level.as_deref())?;
        let threads = a
            .threads
            .as_deref()
            .map(|t| {
                t.split(',')
                    .map(|x| {
                        x.trim().parse::<usize>().map_err(|_| {
                            Error::input(format!(
                                "invalid --threads item '{}': a thread count of at least 1",
                                x.trim()
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .transpose()?;
        let sizes = a
            .sizes
            .split(',')
            .map(|s| size_opt("--sizes item", s))
            .collect::<Result<Vec<_>>>()?;
        let sync = SyncKind::parse(&a.barrier)
            .map_err(|e| Error::input(e.replace("barrier", "--barrier")))?;
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
                        Err(Error::input(format!(
                            "invalid --only item '{x}': one of {}",
                            FAMILIES.join(", ")
                        )))
                    }
                })
                .collect::<Result<_>>()?,
            None => Vec::new(),
        };
        if a.iterations == 0 {
            return Err(Error::input(
                "invalid --iterations '0': at least 1 timed pass",
            ));
        }
        crate::settled::rules(&a.noise)?;
        use numalab_topo::lists::{once, once_by};
        if let (Some(t), Some(v)) = (&a.threads, &threads) {
            once("--threads", t, v, |p| p.to_string())?;
        }
        once_by("--sizes", &a.sizes, &sizes, |b| **b, |b| fmt_bytes(**b))?;
        if let Some(o) = &a.only {
            once("--only", o, &only, |x| format!("'{x}'"))?;
        }
        Ok(Parsed {
            level,
            threads,
            sizes,
            sync,
            only,
        })
    }

    /// Check what can be checked without a machine.
    pub fn check(&self) -> Result<()> {
        self.parsed().map(|_| ())
    }

    /// Thread (rank) counts, block sizes and `--only` prefixes, parsed: what the suite
    /// between MPI ranks takes from the same flags.
    pub fn counts_sizes_only(&self) -> Result<CountsSizesOnly> {
        let p = self.parsed()?;
        Ok((p.threads, p.sizes, p.only))
    }
}

impl Plan {
    /// Resolve the options on a machine (only the collectives asked for).
    pub fn resolve(m: &Machine, o: &Options) -> Result<Plan> {
        let Parsed {
            level,
            threads,
            sizes,
            sync,
            only,
        } = o.parsed()?;
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
        Ok(plan)
    }
}

/// The plan as a record (what `--dry-run` emits).
pub fn plan_record(plan: &Plan, a: &Options, ctx: &Context) -> Record {
    let (prov, warnings) = (ctx.prov.clone(), ctx.warnings.clone());
    let mut r = Record::new(
        "suite-collectives-plan",
        "collectives plan",
        prov,
        json!({ "iterations": a.iterations }),
    );
    r.data = Some(serde_json::to_value(plan).unwrap_or_default());
    r.warnings = warnings;
    r
}

/// Keep one finished measurement's record, should a signal end the ones after it
/// (`numalab_results::interrupt`); the models are fitted only from a whole run.
fn keep(plan: &Plan, a: &Options, ctx: &Context, pairs: Vec<PairResult>, items: Vec<Measured>) {
    let one = Results {
        pairs,
        items,
        fits: Vec::new(),
    };
    numalab_results::interrupt::keep(records(plan, &one, a, ctx));
}

/// Measure the remote reads and every collective, then fit the cost models.
pub fn run(
    host: &Host,
    plan: &Plan,
    a: &Options,
    ctx: &Context,
    progress: Progress,
) -> Result<Results> {
    let timer = Timer::best();
    let rules = crate::settled::rules(&a.noise)?;
    let total = plan.pairs.len() + plan.items.len();
    let mut pairs: Vec<PairResult> = Vec::new();
    for (i, p) in plan.pairs.iter().enumerate() {
        let r = measure_pair(host, &timer, plan, p, &rules, a.iterations)?;
        keep(plan, a, ctx, vec![r.clone()], Vec::new());
        pairs.push(r);
        progress(&format!("collectives: {}/{total}", i + 1));
    }
    let mut items = Vec::new();
    for (i, it) in plan.items.iter().enumerate() {
        let m = measure_item(host, &timer, plan, *it, &rules, a.iterations)?;
        keep(plan, a, ctx, Vec::new(), vec![m.clone()]);
        items.push(m);
        progress(&format!(
            "collectives: {}/{total} {}",
            plan.pairs.len() + i + 1,
            it.kind.name()
        ));
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
            .map(|x| {
                (
                    x.item.p,
                    x.item.lines,
                    median(&x.time_ns).unwrap_or(f64::NAN) / 1000.0,
                )
            })
            .collect();
        fits.push((k, fit_models(k, &pts)));
    }
    Ok(Results { pairs, items, fits })
}

/// The measured results as records.
pub fn records(plan: &Plan, res: &Results, a: &Options, ctx: &Context) -> Vec<Record> {
    result_records(plan, res, a.iterations, &ctx.prov, &ctx.warnings)
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

/// What every record of a run shares: the suite's plan, as its text's head shows it.
fn shared(plan: &Plan, iterations: usize) -> serde_json::Value {
    json!({
        "level": plan.level,
        "domains": crate::domains::describe(&plan.domains),
        "thread_counts": plan.threads,
        "block_sizes": plan.block_lines,
        "sync": plan.sync.name(),
        "line_bytes": plan.line,
        "iterations": iterations,
    })
}

fn with(mut v: serde_json::Value, shared: &serde_json::Value) -> serde_json::Value {
    for (k, x) in shared.as_object().into_iter().flatten() {
        v[k] = x.clone();
    }
    v
}

fn params(plan: &Plan, m: &Measured, iterations: usize) -> serde_json::Value {
    let it = m.item;
    with(
        json!({
            "kind": it.kind,
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
        }),
        &shared(plan, iterations),
    )
}

fn result_records(
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
            with(
                json!({ "collective": "remote-read", "root_cpu": plan.cpus[0], "reader_cpu": p.pair.reader,
                    "shares": p.pair.shares, "hops": p.pair.hops, "block_lines": plan.pair_lines }),
                &shared(plan, iterations),
            ),
        );
        r.add_samples("read_time", "ns", &p.ns);
        r.placement = Some(json!({ "verified": { "threads": p.pins } }));
        r.warnings = warnings.to_vec();
        settle::apply(&mut r, p.settle.clone());
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
        r.set_data(&super::CollectiveData {
            thread_mean_ns: m.thread_mean_ns.clone(),
            data_checked: true,
        });
        r.warnings = warnings.to_vec();
        settle::apply(&mut r, m.settle.clone());
        out.push(r);
    }
    for (kind, fits) in &res.fits {
        for f in fits {
            let name = f.as_ref().map(|f| f.formula.as_str()).unwrap_or("model");
            let mut rec = Record::new(
                "suite-collectives-model",
                &format!("{} {name}", kind.name()),
                prov.clone(),
                json!({ "collective": kind.name(), "kind": kind, "unit": "µs", "lines": "lines per thread's block" }),
            );
            match f {
                Ok(f) => rec.set_data(f),
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
