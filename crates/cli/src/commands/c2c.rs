//! `numalab c2c`: the core-to-core matrix (CAS RTT/2 and Modified-line reads).

use crate::common::{prepare, with_progress, CliError, CommonArgs};
use clap::Args;
use numalab_bench::c2c::{self, Options, Plan};

/// Arguments of `numalab c2c`.
#[derive(Args, Debug)]
pub struct C2cArgs {
    #[command(flatten)]
    pub wait: crate::common::WaitArg,
    /// CPUs to pair (OS numbers, e.g. 0-7,64-71; default: every usable CPU).
    #[arg(long)]
    cpus: Option<String>,
    /// What to measure: cas (ping-pong RTT/2), read (lines Modified in the other core), or both.
    #[arg(long, default_value = "both")]
    metric: String,
    /// Where the line lives: on the writer's (initiator's) node or the reader's.
    #[arg(long, default_value = "writer")]
    home: String,
    /// CAS round trips per pass.
    #[arg(long, default_value_t = 20_000)]
    round_trips: u64,
    /// Passes per pair.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    /// Bytes of Modified lines the reader reads per pass.
    #[arg(long, default_value = "64K")]
    read_size: String,
    /// A disturbed pass (see `numalab latency --help`): remeasure (up to 3 times), exclude or keep.
    #[arg(
        long,
        default_value = "remeasure",
        value_name = "keep|remeasure|exclude"
    )]
    disturbed: String,
    #[command(flatten)]
    noise: crate::common::NoiseArgs,
    /// Print the pairs and the concurrent rounds without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

impl C2cArgs {
    fn options(&self) -> Options {
        Options {
            cpus: self.cpus.clone(),
            metric: self.metric.clone(),
            home: self.home.clone(),
            round_trips: self.round_trips,
            iterations: self.iterations,
            read_size: self.read_size.clone(),
            disturbed: self.disturbed.clone(),
            noise: self.noise.options(),
        }
    }
}

/// Run `numalab c2c`.
pub fn run(a: C2cArgs) -> Result<(), CliError> {
    let o = a.options();
    let (host, plan, ctx) = prepare(&a.common, a.dry_run, || o.check(), |m| Plan::resolve(m, &o))?;
    if a.dry_run {
        return a.common.show(&[plan.record(&ctx)]);
    }
    let measured = with_progress(|p| c2c::run(&host, &plan, &ctx, p))?;
    a.common.show(&measured.records)
}
