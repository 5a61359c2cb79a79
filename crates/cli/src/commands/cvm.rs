//! `numalab suite cvm`: the seed's multithreaded-CVM study (seed 003) as one MPI job of
//! `dsm run`s; rank 0 prints the seed's tables.

use super::mpi::{start, JobArgs};
use crate::common::{bad, check_measurable, CliError, CommonArgs};
use clap::Args;
use numalab_mpi::world::fail;
use numalab_mpi::Threading;
use numalab_suites::cvm::{self, CvmOptions};

/// Arguments of `numalab suite cvm`.
#[derive(Args, Debug)]
pub struct CvmArgs {
    /// Apps, comma-separated (sor, swm, fft, water-nsq, ocean, barnes).
    #[arg(long, default_value = "sor,swm,fft,water-nsq,ocean,barnes")]
    apps: String,
    /// Protocols, comma-separated.
    #[arg(long, default_value = "lmw,lsw,seq")]
    protocols: String,
    /// Threads per rank, comma-separated.
    #[arg(long, default_value = "1,2,4,8")]
    threads: String,
    /// Net delays to sweep, comma-separated (0, 0.5us, 2us, 30us, 1ms …).
    #[arg(long, default_value = "0")]
    net_delay: String,
    /// Input size: small, or paper (the seed's Table 1).
    #[arg(long, default_value = "small")]
    input: String,
    /// Print the plan without starting ranks.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    job: JobArgs,
    #[command(flatten)]
    common: CommonArgs,
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

/// Run `numalab suite cvm`.
pub fn run(a: CvmArgs) -> Result<(), CliError> {
    a.common.validate()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let (req, mut opts) = a.job.request(&host, 2)?;
    opts.threading = Threading::Multiple;
    let threads = list(&a.threads)
        .iter()
        .map(|t| {
            t.parse::<usize>()
                .map_err(|_| bad(format!("invalid --threads '{t}': counts such as 1,2,4,8")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let o = CvmOptions {
        apps: list(&a.apps),
        protocols: list(&a.protocols),
        threads,
        net_delays: list(&a.net_delay),
        input: a.input.clone(),
        ranks: req.ranks,
    };
    let plans = cvm::resolve(&host.machine, &o).map_err(bad)?;
    if a.dry_run {
        for p in &plans {
            println!("{}", p.describe());
        }
        return Ok(());
    }
    let world = start(&host, &req, &opts)?;
    let n = plans.len();
    let recs = cvm::run(&world, &host, &plans, &|i, p| {
        eprintln!("[{}/{n}] {}", i + 1, p.describe())
    })
    .unwrap_or_else(|e| fail(Some(&world), &numalab_mpi::Error::System(e)));
    if let Some(recs) = recs {
        a.common.emit(&recs, || cvm::text(&recs))?;
    }
    Ok(())
}
