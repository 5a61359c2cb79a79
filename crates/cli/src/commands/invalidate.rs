//! `numalab invalidate`: snbench's sharer-count sweep (Table 4.19).

use crate::common::{prepare, with_progress, CliError, CommonArgs};
use clap::Args;
use numalab_bench::invalidate::{self, InvalidatePlan, Options};

/// Arguments of `numalab invalidate`.
#[derive(Args, Debug)]
pub struct InvalidateArgs {
    #[command(flatten)]
    pub wait: crate::common::WaitArg,
    /// The requestor (one CPU; the language of `numalab plan`).
    #[arg(long = "cpu", default_value = "compact")]
    cpu: String,
    /// Home node of the lines (default: the requestor's node, as in snbench).
    #[arg(long = "mem-node", default_value = "local")]
    mem_node: String,
    /// Sharers per node (snbench: 1, a node at a time).
    #[arg(long, default_value_t = 1)]
    per_node: usize,
    /// Largest sharer count (default: every node's sharers).
    #[arg(long)]
    sharers: Option<usize>,
    /// Bytes of shared lines (default: half the L2, so each sharer holds them all).
    #[arg(long)]
    size: Option<String>,
    /// Timed passes per measurement.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    #[command(flatten)]
    noise: crate::common::NoiseArgs,
    /// Print the sharer order without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

impl InvalidateArgs {
    fn options(&self) -> Options {
        Options {
            cpu: self.cpu.clone(),
            mem_node: self.mem_node.clone(),
            per_node: self.per_node,
            sharers: self.sharers,
            size: self.size.clone(),
            iterations: self.iterations,
            noise: self.noise.options(),
        }
    }
}

/// Run `numalab invalidate`.
pub fn run(a: InvalidateArgs) -> Result<(), CliError> {
    let o = a.options();
    let (host, plan, ctx) = prepare(
        &a.common,
        a.dry_run,
        || o.check(),
        |m| InvalidatePlan::resolve(m, &o),
    )?;
    if a.dry_run {
        return a.common.show(&[plan.record(&ctx)]);
    }
    let (_, records) = with_progress(|p| invalidate::run(&host, &plan, &ctx, p))?;
    a.common.show(&records)
}
