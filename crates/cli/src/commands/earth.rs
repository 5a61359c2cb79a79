//! `numalab suite earth`: remote operation costs and latency hiding (seed 001, with
//! seed 002 §6 and seed 003 §4.1).

use super::mpi::{progress, run_job, MpiSuiteArgs};
use crate::common::{bad, check_measurable, context, with_progress, CliError, CommonArgs};
use clap::Args;
use numalab_suites::earth::mpi as earth_mpi;
use numalab_suites::earth::{self, Options, Plan};

/// Arguments of `numalab suite earth`.
#[derive(Args, Debug)]
pub struct EarthArgs {
    /// Parts to run, comma-separated: ops, split, switch, mask, mlp, threads (with --mpi: ops, split, breakdown, mask, mlp).
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
    /// Timed passes per measurement (the initial ones, for mask and threads points).
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    /// Wall time each mask and threads point may take for more passes while its
    /// figure's interval is wide (ns, us, ms or s, above 0 and up to 60s; the same
    /// option as every measuring command's).
    #[arg(long, default_value = earth::NOISE_BUDGET)]
    noise_budget: String,
    /// Print the CPUs and parts without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    mpi: MpiSuiteArgs,
    #[command(flatten)]
    common: CommonArgs,
}

impl EarthArgs {
    fn options(&self) -> Options {
        Options {
            parts: self.parts.clone(),
            cpu: self.cpu,
            helper: self.helper,
            groups: self.groups.clone(),
            chunks: self.chunks.clone(),
            multipliers: self.multipliers.clone(),
            loop_n: self.loop_n,
            mlp_size: self.mlp_size.clone(),
            accesses: self.accesses,
            ratio: self.ratio,
            iterations: self.iterations,
            noise_budget: self.noise_budget.clone(),
        }
    }
}

/// Run `numalab suite earth`.
pub fn run(a: EarthArgs) -> Result<(), CliError> {
    a.common.validate()?;
    a.mpi.job.options().without_mpi(a.mpi.mpi)?;
    if a.mpi.mpi {
        return run_mpi(&a);
    }
    let o = a.options();
    o.check()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let plan = Plan::resolve(&host.machine, &o)?;
    if a.dry_run {
        return a
            .common
            .show(&[plan.record(&crate::common::describing(&host))]);
    }
    let ctx = context(&host);
    a.common.keep_on_signal();
    let recs = with_progress(|p| earth::run_suite(&host, &plan, &ctx, p))?;
    a.common.show(&recs)
}

/// `suite earth`'s default --parts; with --mpi it means every part the MPI form has.
const DEFAULT_PARTS: &str = "ops,split,switch,mask,mlp,threads";

impl EarthArgs {
    /// The MPI form's options: the lists parse as the threads form's do.
    fn mpi_options(&self) -> Result<earth_mpi::Options, CliError> {
        // Flags of the threads form only: refused with --mpi rather than ignored.
        let n = |v: Option<u64>| v.map(|v| v.to_string());
        for (flag, v) in [
            ("--cpu", n(self.cpu.map(u64::from))),
            ("--helper", n(self.helper.map(u64::from))),
            ("--mlp-size", self.mlp_size.clone()),
            ("--accesses", n(self.accesses.map(|v| v as u64))),
            ("--ratio", n((self.ratio != 1).then_some(self.ratio as u64))),
            (
                "--noise-budget",
                (self.noise_budget != earth::NOISE_BUDGET).then(|| self.noise_budget.clone()),
            ),
        ] {
            if let Some(v) = v {
                return Err(bad(format!(
                    "invalid {flag} '{v}': it applies without --mpi only"
                )));
            }
        }
        // The MPI form's parts differ (its options check them); the other flags parse here.
        let o = Options {
            parts: "ops".into(),
            ..self.options()
        };
        o.check()?;
        let (groups, chunks, multipliers) = o.groups_chunks_multipliers()?;
        let defaults = earth_mpi::Options::default();
        let parts = if self.parts == DEFAULT_PARTS {
            defaults.parts.clone()
        } else {
            self.parts
                .split(',')
                .map(|p| p.trim().to_string())
                .collect()
        };
        Ok(earth_mpi::Options {
            job: self.mpi.job.options(),
            parts,
            groups,
            chunks,
            multipliers,
            loop_n: self.loop_n,
            iterations: self.iterations,
            ..defaults
        })
    }
}

/// Run `suite earth --mpi`.
fn run_mpi(a: &EarthArgs) -> Result<(), CliError> {
    let o = a.mpi_options()?;
    o.check()?;
    check_measurable(&a.common, a.dry_run)?;
    let host = a.common.host()?;
    let mut launch = o.job.resolve(&host.machine, 2)?;
    let plan = earth_mpi::Plan::resolve(&launch, &o)?;
    launch.req.estimate = Some(plan.estimate(launch.req.crowding()));
    run_job(
        (&a.common, a.dry_run),
        &host,
        &launch,
        |prov| plan.records(prov),
        |world| earth_mpi::measure(world, &host, &plan, progress("earth --mpi")),
        None,
    )
}
