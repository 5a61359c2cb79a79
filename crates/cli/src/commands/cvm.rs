//! `numalab suite cvm`: the seed's multithreaded-CVM study (seed 003) as one MPI job of
//! `dsm run`s; rank 0 prints the seed's tables.

use super::mpi::{start_keeping, JobArgs};
use crate::common::{check_measurable, describing, CliError, CommonArgs};
use clap::Args;
use numalab_mpi::sizes::{parse_counts, parse_list};
use numalab_mpi::world::fail;
use numalab_mpi::Threading;
use numalab_suites::cvm::{self, CvmOptions};

/// Arguments of `numalab suite cvm`.
#[derive(Args, Debug)]
pub struct CvmArgs {
    /// Apps, comma-separated (sor, swm, fft, water-nsq, ocean, barnes).
    #[arg(long, default_value = "sor,swm,fft,water-nsq,ocean,barnes")]
    apps: String,
    /// Protocols, comma-separated (lmw, lsw, seq: the seed's; lmwc: LMW with page classification).
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

/// Run `numalab suite cvm`.
pub fn run(a: CvmArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let o = CvmOptions {
        job: a.job.options(),
        apps: parse_list("--apps", &a.apps)?,
        protocols: parse_list("--protocols", &a.protocols)?,
        threads: parse_counts("--threads", &a.threads)?,
        net_delays: parse_list("--net-delay", &a.net_delay)?,
        input: a.input.clone(),
    };
    o.check()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let mut launch = o.job.resolve(&host.machine, 2)?;
    launch.world.threading = Threading::Multiple;
    let plans = cvm::resolve(&host.machine, &launch, &o)?;
    let crowding = launch.req.crowding();
    launch.req.estimate = Some(plans.iter().map(|p| p.estimate(crowding)).sum());
    if a.dry_run {
        return a
            .common
            .show(&cvm::plan_records(&plans, &describing(&host).prov));
    }
    let n = plans.len();
    let world = start_keeping(&host, &launch, &a.common, Some(n))?;
    let recs = cvm::run(&world, &host, &plans, &|i, p| {
        eprintln!("[{}/{n}] {}", i + 1, p.describe())
    })
    .unwrap_or_else(|e| fail(Some(&world), &numalab_mpi::Error::System(e)));
    let Some(recs) = recs else { return Ok(()) };
    let shown = a.common.show(&recs);
    numalab_results::partial::delivered();
    shown
}
