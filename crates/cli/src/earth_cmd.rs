//! `numalab suite earth`: remote operation costs and latency hiding (seed 001, with
//! seed 002 §6 and seed 003 §4.1).

use crate::common::{bad, check_measurable, provenance, size_opt, CliError, CommonArgs};
use crate::earth_view::{self, EarthResults};
use clap::Args;
use numalab_probe::Timer;
use numalab_results::{Provenance, Record, Unavailable};
use numalab_suites::earth::{self, Part};
use numalab_suites::earth_hide;
use numalab_suites::earth_ops::{self, Cell};
use serde_json::json;

/// Arguments of `numalab suite earth`.
#[derive(Args, Debug)]
pub struct EarthArgs {
    /// Parts to run, comma-separated: ops, split, switch, mask, mlp, threads.
    #[arg(long, default_value = "ops,split,switch,mask,mlp,threads")]
    parts: String,
    /// The worker (issuing) CPU (default: the first CPU).
    #[arg(long)]
    cpu: Option<u32>,
    /// The helper CPU serving requests and owning remote lines (default: the nearest
    /// CPU in another domain; never the worker's core).
    #[arg(long)]
    helper: Option<u32>,
    /// MLP chain counts G, comma-separated, 1..64.
    #[arg(long, default_value = "1,2,4,8,12,16,24,32,48,64")]
    groups: String,
    /// Loop 7 chunk sizes T (iterations per coroutine), comma-separated (default: powers of two up to the loop).
    #[arg(long)]
    chunks: Option<String>,
    /// Loop 7 communication multipliers, comma-separated.
    #[arg(long, default_value = "1,2,4,8,16")]
    multipliers: String,
    /// Loop 7 iterations.
    #[arg(long, default_value_t = 4096)]
    loop_n: usize,
    /// Bytes the MLP chains run through (default 8 × the last-level cache, at least
    /// 256M, so no pass finds lines an earlier one left in the caches).
    #[arg(long)]
    mlp_size: Option<String>,
    /// Accesses per MLP pass (default 2^18, or the buffer's lines when fewer).
    #[arg(long)]
    accesses: Option<usize>,
    /// Computation : communication of the threads table is 1 : RATIO (the seed's 1, 3, 6).
    #[arg(long, default_value_t = 1)]
    ratio: usize,
    /// Timed passes per measurement.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    /// Print the CPUs and parts without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    mpi: crate::mpi_suite_cmd::MpiSuiteArgs,
    #[command(flatten)]
    common: CommonArgs,
}

fn nums(what: &str, s: &str) -> Result<Vec<usize>, CliError> {
    s.split(',')
        .map(|x| {
            x.trim().parse::<usize>().map_err(|_| {
                bad(format!(
                    "invalid {what} item '{}': a whole number of at least 1",
                    x.trim()
                ))
            })
        })
        .collect()
}

fn cell_records(
    part: Part,
    cells: &[Cell],
    base: &serde_json::Value,
    prov: &Provenance,
) -> Vec<Record> {
    cells
        .iter()
        .map(|c| {
            let mut p = base.clone();
            p["part"] = json!(part.name());
            p["op"] = json!(c.op);
            p["place"] = json!(c.place);
            p["mode"] = json!(c.mode);
            p["method"] = json!(c.how);
            let mut r = Record::new(
                "suite-earth",
                &format!("{}: {}, {}, {}", part.name(), c.op, c.place, c.mode),
                prov.clone(),
                p,
            );
            r.add_samples("time", "ns", &c.ns);
            r
        })
        .collect()
}

/// Run `numalab suite earth`.
pub fn run(a: EarthArgs) -> Result<(), CliError> {
    a.common.validate()?;
    if a.mpi.mpi {
        let groups = nums("--groups", &a.groups)?;
        let chunks = match &a.chunks {
            Some(c) => nums("--chunks", c)?,
            None => (0..)
                .map(|i| 1usize << i)
                .take_while(|&t| t <= a.loop_n)
                .collect(),
        };
        earth::check_list(
            "--chunks",
            &chunks,
            a.loop_n,
            "iterations of the loop, --loop-n",
        )?;
        let multipliers = nums("--multipliers", &a.multipliers)?;
        earth::check_list(
            "--multipliers",
            &multipliers,
            1024,
            "times the communication",
        )?;
        let input = crate::mpi_suite_cmd::EarthInput {
            parts: &a.parts,
            groups,
            loop_n: a.loop_n,
            chunks,
            multipliers,
            iterations: a.iterations,
            dry_run: a.dry_run,
            common: &a.common,
        };
        return crate::mpi_suite_cmd::earth(&a.mpi, input);
    }
    let parts: Vec<Part> = a
        .parts
        .split(',')
        .map(|s| Part::parse(s.trim()).map_err(bad))
        .collect::<Result<_, _>>()?;
    let groups = nums("--groups", &a.groups)?;
    earth::check_list("--groups", &groups, 64, "independent chains")?;
    if a.loop_n == 0 {
        return Err(bad("invalid --loop-n '0': at least 1 iteration"));
    }
    let chunks = match &a.chunks {
        Some(c) => nums("--chunks", c)?,
        None => (0..)
            .map(|i| 1usize << i)
            .take_while(|&t| t <= a.loop_n)
            .collect(),
    };
    earth::check_list(
        "--chunks",
        &chunks,
        a.loop_n,
        "iterations of the loop, --loop-n",
    )?;
    let multipliers = nums("--multipliers", &a.multipliers)?;
    earth::check_list(
        "--multipliers",
        &multipliers,
        1024,
        "times the communication",
    )?;
    let mlp_size = match &a.mlp_size {
        Some(s) => {
            let v = size_opt("--mlp-size", s)?;
            if v < (64 * 64 * 64) as u64 {
                return Err(bad(format!(
                    "invalid --mlp-size '{s}': at least 256K (64 chains of 64 lines)"
                )));
            }
            Some(v)
        }
        None => None,
    };
    if let Some(n) = a.accesses.filter(|&n| n < 64) {
        return Err(bad(format!("invalid --accesses '{n}': at least 64")));
    }
    if a.iterations == 0 || a.ratio == 0 {
        return Err(bad("invalid --iterations or --ratio '0': at least 1"));
    }
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let cpus = earth::cpus(&host.machine, a.cpu, a.helper)?;
    let mlp_size = mlp_size.unwrap_or_else(|| numalab_suites::memory::beyond_caches(&host.machine));
    let lines = (mlp_size / 64) as usize;
    let accesses = match a.accesses {
        Some(n) if n > lines => {
            return Err(bad(format!(
                "invalid --accesses '{n}': at most the {lines} lines of --mlp-size (more would walk lines twice in one pass)"
            )))
        }
        Some(n) => n,
        None => lines.min(1 << 18),
    };
    let (prov, warnings) = provenance(&host);
    let base = json!({
        "worker_cpu": cpus.worker.pu.os,
        "helper_cpu": cpus.helper.pu.os,
        "worker_node": cpus.worker.pu.node,
        "helper_node": cpus.helper.pu.node,
        "remote_node": cpus.remote_node,
        "iterations": a.iterations,
    });
    let head = earth_view::head(&host.machine, &cpus, &parts, a.iterations);
    if a.dry_run {
        let mut r = Record::new("suite-earth-plan", "earth plan", prov, base);
        r.data = Some(
            json!({ "parts": parts, "cpus": cpus, "groups": groups, "chunks": chunks, "multipliers": multipliers, "loop_n": a.loop_n }),
        );
        r.warnings = warnings;
        return a.common.emit(std::slice::from_ref(&r), || head.clone());
    }
    let timer = Timer::best();
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let note = |p: Part| {
        if tty {
            eprint!("\rearth: {}        ", p.name());
        }
    };
    let mut res = EarthResults::default();
    let mut recs = Vec::new();
    for &p in &parts {
        note(p);
        match p {
            Part::Ops => {
                let (cells, missing) = earth_ops::ops(&host, &timer, &cpus, a.iterations)?;
                recs.extend(cell_records(p, &cells, &base, &prov));
                for (what, why) in &missing {
                    let mut r = Record::new(
                        "suite-earth",
                        &format!("ops: {what}"),
                        prov.clone(),
                        base.clone(),
                    );
                    r.unavailable.push(Unavailable {
                        feature: what.clone(),
                        reason: why.clone(),
                    });
                    recs.push(r);
                }
                res.ops = Some((cells, missing));
            }
            Part::Split => {
                let cells = earth_ops::split(&host, &timer, &cpus, a.iterations)?;
                recs.extend(cell_records(p, &cells, &base, &prov));
                res.split = Some(cells);
            }
            Part::Switch => {
                let cells = earth_ops::switches(&host, &timer, &cpus, a.iterations)?;
                recs.extend(cell_records(p, &cells, &base, &prov));
                res.switch = Some(cells);
            }
            Part::Mask => {
                let mut curves = earth_hide::mask(
                    &host,
                    &timer,
                    &cpus,
                    a.loop_n,
                    &chunks,
                    &multipliers,
                    a.iterations,
                )?;
                curves.extend(earth_hide::mask_memory(
                    &host,
                    &timer,
                    &cpus,
                    a.loop_n,
                    &chunks,
                    &multipliers,
                    a.iterations,
                )?);
                recs.extend(earth_view::mask_records(&curves, a.loop_n, &base, &prov));
                res.mask = Some(curves);
            }
            Part::Mlp => {
                let curve = earth_hide::mlp(
                    &host,
                    &timer,
                    &cpus,
                    mlp_size,
                    &groups,
                    accesses,
                    a.iterations,
                )?;
                recs.extend(earth_view::mlp_records(&curve, mlp_size, &base, &prov));
                res.mlp = Some(curve);
            }
            Part::Threads => {
                let (rows, iters) =
                    earth_hide::threads(&host, &timer, &cpus, a.ratio, a.iterations)?;
                recs.extend(earth_view::threads_records(
                    &rows, a.ratio, iters, &base, &prov,
                ));
                res.threads = Some(rows);
            }
        }
    }
    if tty {
        eprintln!();
    }
    for r in &mut recs {
        r.warnings = warnings.clone();
    }
    a.common
        .emit(&recs, || format!("{head}{}", earth_view::text(&res)))
}
