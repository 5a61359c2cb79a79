//! `numalab suite placement`: the KSR1 thread-placement study (seed 000).

use crate::common::{bad, check_measurable, provenance, size_opt, CliError, CommonArgs};
use crate::suite_view::{placement_plan_text, placement_text};
use clap::{Args, Subcommand};
use numalab_probe::Timer;
use numalab_results::Record;
use numalab_suites::placement::{Config, Part, Plan};
use numalab_suites::placement_run::{self, Point};
use numalab_topo::{fmt_bytes, Level};
use serde_json::json;

/// Arguments of `numalab suite`.
#[derive(Args, Debug)]
pub struct SuiteArgs {
    #[command(subcommand)]
    which: Which,
}

#[derive(Subcommand, Debug)]
enum Which {
    /// KSR1 thread placement: owners write a data set, readers added one at a time
    /// read it (Experiment 0, Suites I–IV); ns per line, overall and per domain.
    Placement(PlacementArgs),
    /// KSR collectives: remote read by distance, barriers, broadcast, shifts,
    /// concatenation and reduction over P threads, with fitted cost models.
    Collectives(crate::collectives_cmd::CollectivesArgs),
    /// EARTH-MANNA and KSR threads: remote operation costs (local/remote, sequential/
    /// pipelined, through a helper thread), switch costs, Loop 7 latency masking, MLP
    /// with coroutines, and compute/communication overlap.
    Earth(crate::earth_cmd::EarthArgs),
    /// Multithreaded CVM (seed 003): the software DSM's apps × protocols × threads per
    /// rank under MPI: normalised time and breakdown, speedups, DSM actions, switch classes.
    Cvm(crate::cvm_cmd::CvmArgs),
}

/// Run `numalab suite …`.
pub fn run(a: SuiteArgs) -> Result<(), CliError> {
    match a.which {
        Which::Placement(p) => run_placement(p),
        Which::Collectives(c) => crate::collectives_cmd::run(c),
        Which::Earth(e) => crate::earth_cmd::run(e),
        Which::Cvm(c) => crate::cvm_cmd::run(c),
    }
}

/// Arguments of `numalab suite placement`.
#[derive(Args, Debug)]
pub struct PlacementArgs {
    /// Level whose domains play the KSR's rings (default: the most informative level).
    #[arg(long)]
    level: Option<String>,
    /// Owner CPU of Experiment 0 and Suites II–IV (default: the last core of the first domain).
    #[arg(long)]
    owner: Option<u32>,
    /// Parts to run, comma-separated: 0 (Experiment 0), 1, 2, 3, 4.
    #[arg(long, default_value = "0,1,2,3,4")]
    parts: String,
    /// Suite III batch sizes, comma-separated (default: 1, 2, 4, … up to the largest domain).
    #[arg(long)]
    batches: Option<String>,
    /// Largest number of readers (default: every CPU that is not an owner).
    #[arg(long)]
    readers: Option<usize>,
    /// Bytes of the shared data set (default: half the private cache, so the owner holds it).
    #[arg(long)]
    size: Option<String>,
    /// What a read moves: a cache line, or a pair of lines (the KSR's 128-byte subpage).
    #[arg(long, default_value = "line")]
    unit: String,
    /// Timed passes per point (after one untimed pass).
    #[arg(long, default_value_t = 7)]
    iterations: usize,
    /// Print the plan (domains, owners, reader order of every curve) without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

fn list<T>(
    what: &str,
    s: &str,
    f: impl Fn(&str) -> Option<T>,
    valid: &str,
) -> Result<Vec<T>, CliError> {
    s.split(',')
        .map(|x| {
            f(x.trim()).ok_or_else(|| bad(format!("invalid {what} item '{}': {valid}", x.trim())))
        })
        .collect()
}

/// Parse `--level`.
pub fn level(s: &Option<String>) -> Result<Option<Level>, CliError> {
    s.as_deref()
        .map(|l| {
            Level::parse(l).ok_or_else(|| {
                bad(format!(
                    "invalid --level '{l}': one of {}",
                    Level::valid_names()
                ))
            })
        })
        .transpose()
}

fn params(plan: &Plan, c: usize, k: usize, iterations: usize) -> serde_json::Value {
    let cv = &plan.curves[c];
    json!({
        "part": cv.part.id(),
        "suite": cv.part.name(),
        "curve": cv.label,
        "readers": k,
        "x": k - cv.fixed,
        "fixed_readers": cv.fixed,
        "owners": cv.owners,
        "reader_cpus": cv.readers[..k],
        "reader_domains": cv.readers[..k].iter().map(|&r| numalab_suites::domains::letter_of(&plan.domains, r)).collect::<Vec<_>>(),
        "staggered": cv.stagger,
        "partitioned": cv.partitioned,
        "level": plan.level,
        "unit_lines": plan.unit_lines,
        "line_bytes": plan.line,
        "lines_per_reader": plan.point_lines(cv, k).1,
        "data_set_lines": plan.point_lines(cv, k).0,
        "iterations": iterations,
        "method": "owners write one word per line (lines end Modified in the owner's cache, or its memory when larger), a barrier releases the readers, each reader reads one word per line sequentially; time per unit per reader, averaged over readers",
    })
}

fn records(
    plan: &Plan,
    points: &[Point],
    iterations: usize,
    prov: &numalab_results::Provenance,
    warnings: &[String],
) -> Vec<Record> {
    points
        .iter()
        .map(|p| {
            let cv = &plan.curves[p.curve];
            let mut r = Record::new(
                "suite-placement",
                &format!("{} {}: {} readers", cv.part.id(), cv.label, p.readers),
                prov.clone(),
                params(plan, p.curve, p.readers, iterations),
            );
            r.add_samples("read_time", "ns", &p.overall);
            for (d, s) in &p.per_domain {
                r.add_samples(&format!("read_time_{d}"), "ns", s);
            }
            r.placement = Some(json!({
                "domains": plan.domains,
                "verified": { "threads": p.pins, "memory": p.home },
            }));
            r.data = Some(json!({
                "per_reader": p.per_reader.iter().map(|(c, d, ns)| json!({"cpu": c, "domain": d, "median_ns": ns})).collect::<Vec<_>>(),
                "data_checked": true,
            }));
            r.warnings = warnings.to_vec();
            r
        })
        .collect()
}

fn skipped_record(plan: &Plan, prov: &numalab_results::Provenance) -> Option<Record> {
    if plan.skipped.is_empty() {
        return None;
    }
    let mut r = Record::new(
        "suite-placement",
        "not run here",
        prov.clone(),
        json!({ "level": plan.level }),
    );
    for (part, why) in &plan.skipped {
        r.unavailable.push(numalab_results::Unavailable {
            feature: part.name().into(),
            reason: why.clone(),
        });
    }
    Some(r)
}

fn run_placement(a: PlacementArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let level = level(&a.level)?;
    let parts = list(
        "--parts",
        &a.parts,
        |s| Part::parse(s).ok(),
        "one of 0, 1, 2, 3, 4 (or i, ii, iii, iv)",
    )?;
    let batches = a
        .batches
        .as_deref()
        .map(|b| {
            list(
                "--batches",
                b,
                |s| s.parse::<usize>().ok(),
                "a batch size of at least 1",
            )
        })
        .transpose()?;
    let unit_lines = match a.unit.as_str() {
        "line" => 1,
        "pair" => 2,
        u => return Err(bad(format!("invalid --unit '{u}': line or pair"))),
    };
    if a.iterations == 0 {
        return Err(bad("invalid --iterations '0': at least 1 timed pass"));
    }
    let size = a
        .size
        .as_deref()
        .map(|s| size_opt("--size", s))
        .transpose()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let m = &host.machine;
    let line = m.caches.first().and_then(|c| c.line_bytes).unwrap_or(64) as usize;
    let cfg = Config {
        level,
        owner: a.owner,
        parts,
        batches,
        max_readers: a.readers,
        size: size.unwrap_or_else(|| numalab_bench::bandwidth::half_private_cache(m)),
        unit_lines,
        line,
    };
    let plan = Plan::new(m, &cfg)?;
    let (prov, warnings) = provenance(&host);
    let head = format!(
        "placement suite (KSR1 seed 000) on {}: level {}, domains {}; owner {}; data set {} ({} lines), unit {}, {} passes per point\n",
        m.summary(),
        plan.level,
        numalab_suites::domains::describe(&plan.domains),
        plan.owner,
        fmt_bytes((plan.lines * line) as u64),
        plan.lines,
        a.unit,
        a.iterations
    );
    if a.dry_run {
        let mut r = Record::new(
            "suite-placement-plan",
            "placement plan",
            prov.clone(),
            json!({ "iterations": a.iterations }),
        );
        r.data = Some(serde_json::to_value(&plan).unwrap_or_default());
        r.warnings = warnings;
        let mut recs = vec![r];
        recs.extend(skipped_record(&plan, &prov));
        return a
            .common
            .emit(&recs, || format!("{head}{}", placement_plan_text(&plan)));
    }
    let timer = Timer::best();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let points = placement_run::measure(&host, &timer, &plan, a.iterations, |d, n| {
        if tty {
            eprint!("\rplacement: {d}/{n} points   ");
        }
    })?;
    if tty {
        eprintln!();
    }
    let mut recs = records(&plan, &points, a.iterations, &prov, &warnings);
    recs.extend(skipped_record(&plan, &prov));
    a.common.emit(&recs, || {
        format!("{head}{}", placement_text(&plan, &points))
    })
}
