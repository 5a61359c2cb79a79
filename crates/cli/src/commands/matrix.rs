//! `numalab matrix latency|bandwidth`: every initiator domain × memory node.

use crate::common::{prepare, CliError, CommonArgs};
use clap::Args;
use numalab_bench::matrix::{self, Options, Plan};

/// Arguments of `numalab matrix`.
#[derive(Args, Debug)]
pub struct MatrixArgs {
    #[command(flatten)]
    pub wait: crate::common::WaitArg,
    /// latency (one chase per cell, first CPU of the domain) or bandwidth (readv, one
    /// requestor per core of the domain, bwmp).
    what: String,
    /// Initiator domains: node, l3, die, pkg or group.
    #[arg(long, default_value = "node")]
    level: String,
    /// Buffer size (latency: per chase, default 256M; bandwidth: per requestor, default 64M).
    #[arg(long)]
    size: Option<String>,
    /// Timed passes per cell.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    /// Print the cells without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

impl MatrixArgs {
    fn options(&self) -> Options {
        Options {
            what: self.what.clone(),
            level: self.level.clone(),
            size: self.size.clone(),
            iterations: self.iterations,
        }
    }
}

/// Run `numalab matrix`.
pub fn run(a: MatrixArgs) -> Result<(), CliError> {
    let o = a.options();
    let (host, plan, ctx) = prepare(&a.common, a.dry_run, || o.check(), |m| Plan::resolve(m, &o))?;
    let records = if a.dry_run {
        plan.records(&ctx)
    } else {
        matrix::run(&host, &plan, &ctx)?
    };
    a.common.show(&records)
}
