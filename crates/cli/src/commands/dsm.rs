//! `numalab dsm run APP`: one application on the software DSM, its ranks under MPI
//! (numalab starts mpirun itself with --ranks N outside a job), rank 0 emitting.

use super::mpi::{start, JobArgs};
use crate::common::{check_measurable, describing, CliError, CommonArgs};
use clap::{Args, Subcommand};
use numalab_dsm::experiment::{measure, Options, Plan};
use numalab_mpi::world::fail;
use numalab_mpi::Threading;

/// Arguments of `numalab dsm`.
#[derive(Args, Debug)]
pub struct DsmArgs {
    #[command(flatten)]
    pub wait: crate::common::WaitArg,
    #[command(subcommand)]
    cmd: DsmCmd,
}

#[derive(Subcommand, Debug)]
enum DsmCmd {
    /// Run one app (sor, swm, fft, water-nsq, ocean, barnes) on N ranks × T user-level
    /// threads under a protocol (lmw, lsw, seq, lmwc), checked against its sequential run.
    Run(RunArgs),
}

/// Arguments of `numalab dsm run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The application: sor, swm, fft, water-nsq, ocean or barnes.
    app: String,
    /// User-level threads per rank (1 to 64).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Consistency protocol: lmw, lsw, seq or lmwc.
    #[arg(long, default_value = "lmw")]
    protocol: String,
    /// Wire time added to every DSM message, e.g. 0, 0.5us, 2us, 30us, 1ms.
    #[arg(long, default_value = "0")]
    net_delay: String,
    /// Input size: small, or paper (the seed's Table 1).
    #[arg(long, default_value = "small")]
    input: String,
    /// The input's size × K (1, 2, 4 or 8): SOR's rows, water-nsq's molecules, barnes'
    /// bodies, the side of SWM's, ocean's and FFT's grids (to find where the DSM breaks even).
    #[arg(long, default_value_t = 1)]
    scale: usize,
    /// Print the plan without starting ranks.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    job: JobArgs,
    #[command(flatten)]
    common: CommonArgs,
}

/// Run `numalab dsm`.
pub fn run(a: DsmArgs) -> Result<(), CliError> {
    let DsmCmd::Run(a) = a.cmd;
    a.common.validate()?;
    let o = Options {
        job: a.job.options(),
        app: a.app.clone(),
        protocol: a.protocol.clone(),
        threads: a.threads,
        net_delay: a.net_delay.clone(),
        input: a.input.clone(),
        scale: a.scale,
    };
    o.check()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let mut launch = o.job.resolve(&host.machine, 1)?;
    launch.world.threading = Threading::Multiple;
    let plan = Plan::resolve(&host.machine, &launch, &o)?;
    launch.req.estimate = Some(plan.estimate(launch.req.crowding()));
    if a.dry_run {
        return a.common.show(&[plan.record(&describing(&host).prov)]);
    }
    let world = start(&host, &launch.req, &launch.world)?;
    if let Err(e) = world.require_multiple("the DSM's service thread") {
        // Every rank finds the same; rank 0 alone says so and aborts the job (exit 2),
        // while the others wait for that abort (two aborting ranks make Open MPI add
        // a line of its own).
        if world.rank == 0 {
            fail(Some(&world), &e);
        }
        world.barrier();
        fail(Some(&world), &numalab_mpi::Error::Usage(String::new()));
    }
    let recs = measure(&world, &host, &plan)
        .unwrap_or_else(|e| fail(Some(&world), &numalab_mpi::Error::System(e)));
    match recs {
        Some(recs) => a.common.show(&recs),
        None => Ok(()),
    }
}
