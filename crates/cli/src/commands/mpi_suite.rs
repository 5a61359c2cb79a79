//! `numalab suite collectives --mpi` (and `suite earth --mpi`): the seed suites
//! between MPI ranks. The suites' own commands parse their flags and hand over here.

use super::mpi::{progress, run_job, JobArgs};
use crate::common::{bad, check_measurable, CliError, CommonArgs};
use clap::Args;
use numalab_results::linfit::LinearFit;
use numalab_results::output::table;
use numalab_results::Record;
use numalab_suites::collectives::mpi::CollectiveMpiData;
use numalab_suites::collectives::mpi::{self as collectives_mpi, Options, Plan};
use std::fmt::Write;

/// Flags that move a suite onto MPI ranks.
#[derive(Args, Debug, Clone)]
pub struct MpiSuiteArgs {
    /// Run between MPI ranks instead of threads (with --ranks N, numalab starts mpirun).
    #[arg(long)]
    pub mpi: bool,
    #[command(flatten)]
    pub job: JobArgs,
}

/// What `suite collectives` parsed, for its MPI form.
pub struct CollectivesInput<'a> {
    /// Rank counts (--threads).
    pub ranks: Option<Vec<usize>>,
    /// Block sizes.
    pub sizes: Vec<u64>,
    /// --only prefixes.
    pub only: Vec<String>,
    /// Timed passes.
    pub iterations: usize,
    /// What MPI's own collectives send.
    pub data: numalab_mpi::kernels::Data,
    /// OSU layout.
    pub osu: bool,
    /// Plan only.
    pub dry_run: bool,
    /// Output options.
    pub common: &'a CommonArgs,
}

/// Run `suite collectives --mpi`.
pub fn collectives(m: &MpiSuiteArgs, c: CollectivesInput) -> Result<(), CliError> {
    check_measurable(c.common, c.dry_run)?;
    let host = c.common.host()?;
    let (req, wopts) = m.job.request(&host, 2)?;
    let line = host
        .machine
        .caches
        .first()
        .and_then(|x| x.line_bytes)
        .unwrap_or(64) as usize;
    let opts = Options {
        ranks: c.ranks,
        sizes: c.sizes,
        iterations: c.iterations,
        only: c.only,
        line,
        data: c.data,
    };
    let plan = Plan::resolve(req.ranks, &opts)?;
    if plan.items.is_empty() {
        return Err(bad(
            "invalid --only: no collective of the MPI suite matches",
        ));
    }
    let osu = c.osu;
    run_job(
        c.common,
        &host,
        (&req, &wopts),
        c.dry_run.then(|| plan.text()),
        |world| collectives_mpi::measure(world, &host, &plan, progress("collectives --mpi")),
        |recs| {
            if osu {
                osu_text(recs)
            } else {
                collectives_text(recs)
            }
        },
    )
}

fn median_us(r: &Record) -> Option<f64> {
    r.median("time").map(|m| m / 1000.0)
}

/// Seed algorithm beside MPI's own, per P and block size.
fn collectives_text(recs: &[Record]) -> String {
    let runs: Vec<&Record> = recs.iter().filter(|r| r.kind == "collective-mpi").collect();
    let native = |p: &serde_json::Value, fam: &str, lines: &serde_json::Value| {
        runs.iter()
            .find(|r| {
                r.parameters["ranks"] == *p
                    && r.parameters["lines"] == *lines
                    && r.parameters["implementation"]
                        .as_str()
                        .is_some_and(|i| i.starts_with("MPI_"))
                    && fam.starts_with(r.parameters["collective"].as_str().unwrap_or("?"))
            })
            .copied()
    };
    let mut rows = Vec::new();
    for r in runs.iter().filter(|r| {
        !r.parameters["implementation"]
            .as_str()
            .unwrap_or("")
            .starts_with("MPI_")
    }) {
        let fam = r.parameters["collective"].as_str().unwrap_or("?");
        let n = native(&r.parameters["ranks"], fam, &r.parameters["lines"]);
        let (s, m) = (median_us(r), n.and_then(median_us));
        rows.push(vec![
            r.parameters["ranks"].to_string(),
            fam.to_string(),
            r.parameters["block_bytes"].to_string(),
            s.map_or("-".into(), |v| format!("{v:.2}")),
            n.map_or("-".into(), |n| {
                n.parameters["implementation"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string()
            }),
            m.map_or("-".into(), |v| format!("{v:.2}")),
            match (s, m) {
                (Some(s), Some(m)) if m > 0.0 => format!("{:.2}", s / m),
                _ => "-".into(),
            },
        ]);
    }
    let mut s = String::from("collectives between MPI ranks: median completion time (µs, slowest rank per pass); every moved word checked\n");
    s.push_str(&table(
        &[
            "P",
            "collective",
            "block B",
            "seed µs",
            "MPI's own",
            "MPI µs",
            "seed/MPI",
        ],
        &rows,
    ));
    s.push_str("\n\nseed cost models (µs)\n");
    for r in recs.iter().filter(|r| r.kind == "collective-mpi-model") {
        match r.data_as::<LinearFit>() {
            Ok(d) => {
                let coef: Vec<String> = d
                    .coefficients
                    .iter()
                    .map(|c| match c.value {
                        Some(x) => format!("{}={x:.4}", c.name),
                        None => format!("{}=n/a", c.name),
                    })
                    .collect();
                let _ = writeln!(
                    s,
                    "  {:<20} {:<38} {}  (R² {:.3})",
                    r.name,
                    d.formula,
                    coef.join(" "),
                    d.r2.unwrap_or(f64::NAN)
                );
            }
            Err(_) => {
                let _ = writeln!(
                    s,
                    "  {:<22} not fitted: {}",
                    r.name,
                    r.unavailable.first().map_or("", |u| u.reason.as_str())
                );
            }
        }
    }
    push_warnings(&mut s, recs);
    s
}

/// OSU's layout: one block per collective and implementation, size and the average,
/// smallest and largest of the ranks' mean latencies.
fn osu_text(recs: &[Record]) -> String {
    let mut s = String::new();
    let mut heads: Vec<(String, String)> = Vec::new();
    for r in recs.iter().filter(|r| r.kind == "collective-mpi") {
        let h = (
            r.parameters["collective"]
                .as_str()
                .unwrap_or("?")
                .to_string(),
            r.parameters["implementation"]
                .as_str()
                .unwrap_or("?")
                .to_string(),
        );
        if !heads.contains(&h) {
            heads.push(h);
        }
    }
    for (c, i) in heads {
        let _ = writeln!(
            s,
            "# numalab {c} ({i})\n# {:<10}{:>6}{:>18}{:>18}{:>18}{:>12}",
            "Size", "P", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations"
        );
        for r in recs
            .iter()
            .filter(|r| r.parameters["collective"] == *c && r.parameters["implementation"] == *i)
        {
            let means: Vec<f64> = r
                .data_as::<CollectiveMpiData>()
                .map(|d| d.rank_mean_ns)
                .unwrap_or_default();
            if means.is_empty() {
                continue;
            }
            let avg = means.iter().sum::<f64>() / means.len() as f64 / 1000.0;
            let min = means.iter().copied().fold(f64::INFINITY, f64::min) / 1000.0;
            let max = means.iter().copied().fold(f64::NEG_INFINITY, f64::max) / 1000.0;
            let _ = writeln!(
                s,
                "  {:<10}{:>6}{:>18.2}{:>18.2}{:>18.2}{:>12}",
                r.parameters["block_bytes"],
                r.parameters["ranks"],
                avg,
                min,
                max,
                r.parameters["iterations"]
            );
        }
        s.push('\n');
    }
    s
}

/// What `suite earth` parsed, for its MPI form.
pub struct EarthInput<'a> {
    /// --parts as given.
    pub parts: &'a str,
    /// Outstanding-get counts G.
    pub groups: Vec<usize>,
    /// Loop 7 iterations.
    pub loop_n: usize,
    /// Loop 7 chunk sizes T.
    pub chunks: Vec<usize>,
    /// Loop 7 communication multipliers.
    pub multipliers: Vec<usize>,
    /// Timed passes.
    pub iterations: usize,
    /// Plan only.
    pub dry_run: bool,
    /// Output options.
    pub common: &'a CommonArgs,
}

/// `suite earth`'s default --parts; with --mpi it means every part the MPI form has.
const EARTH_DEFAULT_PARTS: &str = "ops,split,switch,mask,mlp,threads";

/// Run `suite earth --mpi`.
pub fn earth(m: &MpiSuiteArgs, e: EarthInput) -> Result<(), CliError> {
    use numalab_suites::earth::mpi as earth_mpi;
    check_measurable(e.common, e.dry_run)?;
    let parts: Vec<String> = if e.parts == EARTH_DEFAULT_PARTS {
        vec![
            "ops".into(),
            "split".into(),
            "breakdown".into(),
            "mask".into(),
            "mlp".into(),
        ]
    } else {
        e.parts.split(',').map(|p| p.trim().to_string()).collect()
    };
    let host = e.common.host()?;
    let (req, wopts) = m.job.request(&host, 2)?;
    let opts = earth_mpi::Options {
        pair: (0, 1),
        ops_per_pass: 512,
        iterations: e.iterations,
        blocks: vec![64, 4096, 65536, 1 << 20],
        groups: e.groups,
        parts,
        loop_n: e.loop_n,
        chunks: e.chunks,
        multipliers: e.multipliers,
    };
    let plan = earth_mpi::Plan::resolve(req.ranks, &opts)?;
    run_job(
        e.common,
        &host,
        (&req, &wopts),
        e.dry_run.then(|| plan.text()),
        |world| earth_mpi::measure(world, &host, &plan, progress("earth --mpi")),
        earth_text,
    )
}

fn earth_text(recs: &[Record]) -> String {
    use numalab_suites::earth::mpi::SEED_TABLE1;
    let find = |part: &str, op: &str, place: &str, mode: &str| {
        recs.iter().find(|r| {
            r.kind == "suite-earth-mpi"
                && r.parameters["part"] == part
                && r.parameters["op"] == op
                && r.parameters["place"] == place
                && r.parameters["mode"] == mode
        })
    };
    let cell = |r: Option<&Record>, metric: &str| {
        r.and_then(|r| r.median(metric))
            .map_or("-".to_string(), |v| format!("{v:.0}"))
    };
    let rel = recs
        .iter()
        .find_map(|r| r.parameters["relation"].as_str())
        .unwrap_or("?");
    let mut s = String::new();
    if recs.iter().any(|r| r.parameters["part"] == "ops") {
        s.push_str(&format!("EARTH Table 1 between MPI ranks (ns, median of passes; remote rank = {rel}) beside EARTH-MANNA's\n"));
        let mut rows = Vec::new();
        for (op, seed) in SEED_TABLE1 {
            let local = |mode| cell(find("ops", op, "local rank", mode), "time");
            let remote = |mode| cell(find("ops", op, "remote rank", mode), "time");
            rows.push(vec![
                op.to_string(),
                local("sequential"),
                remote("sequential"),
                local("pipelined"),
                remote("pipelined"),
                format!("{:.0}", seed[0]),
                format!("{:.0}", seed[1]),
                format!("{:.0}", seed[2]),
                format!("{:.0}", seed[3]),
            ]);
        }
        s.push_str(&table(
            &[
                "operation",
                "seq local",
                "seq remote",
                "pipe local",
                "pipe remote",
                "seed seq L",
                "seed seq R",
                "seed pipe L",
                "seed pipe R",
            ],
            &rows,
        ));
        s.push_str("\n('-': call and spawn go to the remote rank's server only; the local column of the RMA rows aims at the issuer's own window)\n\nblock moves (MPI_Get from the remote rank)\n");
        let blocks: Vec<Vec<String>> = recs
            .iter()
            .filter(|r| r.parameters["op"] == "block move (get)")
            .map(|r| {
                vec![
                    r.parameters["bytes"].to_string(),
                    r.parameters["mode"].as_str().unwrap_or("?").to_string(),
                    cell(Some(r), "time"),
                    r.median("bandwidth")
                        .map_or("-".into(), |v| format!("{v:.2}")),
                ]
            })
            .collect();
        s.push_str(&table(&["bytes", "mode", "ns per block", "GB/s"], &blocks));
    }
    let split: Vec<Vec<String>> = recs
        .iter()
        .filter(|r| r.parameters["part"] == "split")
        .map(|r| {
            vec![
                r.parameters["op"].as_str().unwrap_or("?").to_string(),
                r.parameters["mode"].as_str().unwrap_or("?").to_string(),
                cell(Some(r), "issuer_overhead"),
                cell(Some(r), "server_cost"),
                cell(Some(r), "time"),
            ]
        })
        .collect();
    if !split.is_empty() {
        s.push_str("\n\nissuer and server (Table 2; seed: EU overhead 800–1500 ns, remote SU 500–2000 ns for INVOKE)\n");
        s.push_str(&table(
            &[
                "operation",
                "mode",
                "issuer send ns",
                "server handling ns",
                "total ns per op",
            ],
            &split,
        ));
    }
    let mask: Vec<Vec<String>> = recs
        .iter()
        .filter(|r| r.kind == "suite-earth-mpi-mask")
        .map(|r| {
            vec![
                format!("×{}", r.parameters["multiplier"]),
                cell(Some(r), "baseline_comm"),
                cell(Some(r), "baseline_comp"),
                numalab_suites::earth::mpi::mask_curve(r),
            ]
        })
        .collect();
    if !mask.is_empty() {
        s.push_str("\n\nLoop 7 with u on the remote rank: % of the baseline's communication hidden by coroutines of T iterations (MPI_Rget, yield until done), or how many times the baseline's whole time the masked loop took\n");
        s.push_str(&table(
            &[
                "comm",
                "baseline comm ns",
                "baseline comp ns",
                "masked by T",
            ],
            &mask,
        ));
    }
    let mlp: Vec<Vec<String>> = recs
        .iter()
        .filter(|r| r.parameters["part"] == "mlp")
        .map(|r| vec![r.parameters["groups"].to_string(), cell(Some(r), "time")])
        .collect();
    if !mlp.is_empty() {
        s.push_str("\n\nG outstanding remote gets (MPI_Rget, 8 B at random lines of 64 MiB)\n");
        s.push_str(&table(&["G", "ns per get"], &mlp));
    }
    s.push('\n');
    let breakdown = numalab_suites::earth::mpi::breakdown::text(recs);
    if !breakdown.is_empty() {
        s.push('\n');
        s.push_str(&breakdown);
    }
    push_warnings(&mut s, recs);
    s
}

/// Each distinct warning of the records, once.
fn push_warnings(s: &mut String, recs: &[Record]) {
    let mut seen: Vec<&String> = Vec::new();
    for w in recs.iter().flat_map(|r| &r.warnings) {
        if !seen.contains(&w) {
            seen.push(w);
            let _ = writeln!(s, "warning: {w}");
        }
    }
}
