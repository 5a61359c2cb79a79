//! `numalab suite collectives`: the KSR collective-communication study (seed 002).

use super::mpi::{progress, run_job, MpiSuiteArgs};
use crate::common::{check_measurable, context, with_progress, CliError, CommonArgs};
use clap::Args;
use numalab_suites::collectives::{self, run::Plan, Options};

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
    /// Timed passes per measurement (after one untimed pass; more while it has not
    /// settled).
    #[arg(long, default_value_t = 9)]
    iterations: usize,
    #[command(flatten)]
    noise: crate::common::NoiseArgs,
    /// Print OSU micro-benchmark style blocks (size, avg/min/max latency over threads).
    #[arg(long)]
    osu: bool,
    /// With --mpi, what MPI's own collectives send: fresh (new values every pass,
    /// written before the timer) or same (the same values every pass, as OSU sends).
    #[arg(long)]
    data: Option<String>,
    /// Print the plan without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    mpi: MpiSuiteArgs,
    #[command(flatten)]
    common: CommonArgs,
}

impl CollectivesArgs {
    fn options(&self) -> Options {
        Options {
            level: self.level.clone(),
            threads: self.threads.clone(),
            sizes: self.sizes.clone(),
            barrier: self.barrier.clone(),
            only: self.only.clone(),
            iterations: self.iterations,
            noise: self.noise.options(),
        }
    }
}

/// Run `numalab suite collectives`.
pub fn run(a: CollectivesArgs) -> Result<(), CliError> {
    a.common.validate()?;
    let o = a.options();
    o.check()?;
    if a.data.is_some() && !a.mpi.mpi {
        return Err(crate::common::bad(
            "invalid --data: it chooses what MPI's own collectives send, so it needs --mpi",
        ));
    }
    a.mpi.job.options().without_mpi(a.mpi.mpi)?;
    if a.mpi.mpi {
        return run_mpi(&a, &o);
    }
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let plan = Plan::resolve(&host.machine, &o)?;
    if a.dry_run {
        let ctx = crate::common::describing(&host);
        return a.common.show(&[collectives::plan_record(&plan, &o, &ctx)]);
    }
    let ctx = context(&host);
    a.common.keep_on_signal();
    let res = with_progress(|p| collectives::run_suite(&host, &plan, &o, &ctx, p))?;
    let recs = collectives::records(&plan, &res, &o, &ctx);
    if a.osu {
        return a
            .common
            .emit(&recs, || collectives::osu_text(&recs).unwrap_or_default());
    }
    a.common.show(&recs)
}

/// Run `suite collectives --mpi`: the lists parse as the threads form's do.
fn run_mpi(a: &CollectivesArgs, threads: &Options) -> Result<(), CliError> {
    use numalab_suites::collectives::mpi;
    let (ranks, sizes, only) = threads.counts_sizes_only()?;
    let o = mpi::Options {
        job: a.mpi.job.options(),
        ranks,
        sizes,
        iterations: a.iterations,
        only,
        data: numalab_mpi::kernels::Data::parse(a.data.as_deref().unwrap_or("fresh"))?,
        noise: threads.noise.clone(),
    };
    o.check()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let mut launch = o.job.resolve(&host.machine, 2)?;
    let plan = mpi::Plan::resolve(&host.machine, &launch, &o)?;
    launch.req.estimate = Some(plan.estimate(launch.req.crowding()));
    run_job(
        (&a.common, a.dry_run),
        &host,
        &launch,
        |prov| plan.records(prov),
        |world| mpi::measure(world, &host, &plan, progress("collectives --mpi")),
        a.osu.then_some(mpi::osu_text as fn(&[_]) -> String),
    )
}
