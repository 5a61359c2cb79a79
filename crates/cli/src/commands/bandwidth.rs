//! `numalab bandwidth`: bandwidth kernels with one or many requestors, bwmp, states.

use crate::common::{prepare, CliError, CommonArgs};
use crate::crew_args;
use clap::Args;
use numalab_bench::bandwidth::{self, Options, Plan};

/// Arguments of `numalab bandwidth`.
#[derive(Args, Debug)]
pub struct BandwidthArgs {
    #[command(flatten)]
    pub wait: crate::common::WaitArg,
    /// Kernels, comma-separated, or `all`: read, readv, rdsh, rdex, zero, upgrade, nt, copy.
    #[arg(long, default_value = "readv")]
    kernel: String,
    #[command(flatten)]
    crew: crew_args::CrewArgs,
    /// Line state before each pass (default: uown for rdex, shrd:1 for upgrade, warm otherwise).
    #[arg(long)]
    state: Option<String>,
    /// Bytes per requestor (default: beyond every cache for streaming kernels; half an L2
    /// for rdex and upgrade, which work within the cache).
    #[arg(long)]
    size: Option<String>,
    /// Timed passes.
    #[arg(long, default_value_t = 10)]
    iterations: usize,
    /// snbench's bwmp: the first requestor to finish stops the others, so a shared
    /// resource's bandwidth is the sum of the requestors' figures.
    #[arg(long)]
    mp: bool,
    /// Page size: 4k, thp, 2m or 1g.
    #[arg(long, default_value = "4k")]
    page_size: String,
    /// Mixed read/write traffic instead of --kernel, comma-separated: READS:WRITES
    /// streams per requestor (1:0, 3:1, 2:1, 1:1, 0:1 …), triad (a = b + s*c) or
    /// update (read-modify-write).
    #[arg(long)]
    mix: Option<String>,
    /// Stores of the mixed kernels: regular, nt (non-temporal), or regular,nt for both.
    #[arg(long, default_value = "regular")]
    store: String,
    /// MLC-style injection table: all reads, 3:1, 2:1, 1:1, writes only (regular and nt)
    /// and stream-triad-like, one requestor per core (or --cpu/--count) against each
    /// memory node (or --mem-node); --mix replaces the rows.
    #[arg(long)]
    injection: bool,
    #[command(flatten)]
    noise: crate::common::NoiseArgs,
    /// Print the plan without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

impl BandwidthArgs {
    fn options(&self) -> Options {
        Options {
            kernel: self.kernel.clone(),
            crew: self.crew.options(),
            state: self.state.clone(),
            size: self.size.clone(),
            iterations: self.iterations,
            mp: self.mp,
            page_size: self.page_size.clone(),
            mix: self.mix.clone(),
            store: self.store.clone(),
            injection: self.injection,
            noise: self.noise.options(),
        }
    }
}

/// Run `numalab bandwidth`.
pub fn run(a: BandwidthArgs) -> Result<(), CliError> {
    let o = a.options();
    let (host, plan, ctx) = prepare(&a.common, a.dry_run, || o.check(), |m| Plan::resolve(m, &o))?;
    let records = if a.dry_run {
        plan.records(&ctx)
    } else {
        bandwidth::run(&host, &plan, &ctx)?
    };
    a.common.show(&records)
}
