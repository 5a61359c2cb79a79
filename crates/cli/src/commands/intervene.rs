//! `numalab intervene`: snbench's three-party intervention placements (Tables 4.15–4.18).

use crate::common::{prepare, with_progress, CliError, CommonArgs};
use clap::Args;
use numalab_bench::intervene::{self, Options, Plan};

/// Arguments of `numalab intervene`.
#[derive(Args, Debug)]
pub struct InterveneArgs {
    #[command(flatten)]
    pub wait: crate::common::WaitArg,
    /// The requestor (one CPU); distances are counted from its node.
    #[arg(long = "cpu", default_value = "compact")]
    cpu: String,
    /// Owner states, comma-separated: cexh, cexm, dexd, dext.
    #[arg(long, default_value = "cexh,cexm,dexd,dext")]
    states: String,
    /// Distances in hops, comma-separated (default: every distance from the requestor's node).
    #[arg(long)]
    hops: Option<String>,
    /// Placements, comma-separated: x (xhops=0), y (yhops=0), z (zhops=0).
    #[arg(long, default_value = "x,y,z")]
    placements: String,
    /// Bytes of lines the owner holds (default: half the L2, so they fit its cache).
    #[arg(long)]
    size: Option<String>,
    /// Timed passes per measurement.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    #[command(flatten)]
    noise: crate::common::NoiseArgs,
    /// Print the placements without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

impl InterveneArgs {
    fn options(&self) -> Options {
        Options {
            cpu: self.cpu.clone(),
            states: self.states.clone(),
            hops: self.hops.clone(),
            placements: self.placements.clone(),
            size: self.size.clone(),
            iterations: self.iterations,
            noise: self.noise.options(),
        }
    }
}

/// Run `numalab intervene`.
pub fn run(a: InterveneArgs) -> Result<(), CliError> {
    let o = a.options();
    let (host, plan, ctx) = prepare(&a.common, a.dry_run, || o.check(), |m| Plan::resolve(m, &o))?;
    if a.dry_run {
        return a.common.show(&plan.records(&ctx));
    }
    let records = with_progress(|p| intervene::run(&host, &plan, &ctx, p))?;
    a.common.show(&records)
}
