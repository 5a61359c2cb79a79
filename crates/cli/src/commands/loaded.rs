//! `numalab loaded-latency`: chase latency while other threads inject traffic.

use crate::common::{prepare, with_progress, CliError, CommonArgs};
use clap::Args;
use numalab_bench::loaded::{self, Options, Plan};
use numalab_results::outpath::check_distinct;
use numalab_results::output::{check_creatable, check_fresh, write_atomic};

/// Arguments of `numalab loaded-latency`.
#[derive(Args, Debug)]
pub struct LoadedArgs {
    #[command(flatten)]
    pub wait: crate::common::WaitArg,
    /// The chasing thread (one CPU).
    #[arg(long = "cpu", default_value = "compact")]
    cpu: String,
    /// Injector CPUs, a plan spec or list (default: every CPU off the chaser's core).
    #[arg(long)]
    injectors: Option<String>,
    /// Home of the chase and the injected traffic: node, local, hops:K, farthest.
    #[arg(long = "mem-node", default_value = "local")]
    mem_node: String,
    /// Injected traffic: read (loads) or write (stores: read-for-ownership plus writeback).
    #[arg(long, default_value = "read")]
    traffic: String,
    /// Write percentages (e.g. 0,25,50,75,100): one curve per mix (default: --traffic).
    #[arg(long)]
    writes: Option<String>,
    /// Also write the curves in Mess's memory_curves.csv columns to FILE.
    #[arg(long, value_name = "FILE.csv")]
    mess_csv: Option<std::path::PathBuf>,
    /// Injector delays (spin-loop iterations after each line), comma-separated, in the
    /// order measured (default: 20000 down to 0, as MLC).
    #[arg(long)]
    delays: Option<String>,
    /// Chase buffer bytes (default: four times every L3 together, at least 64 MiB).
    #[arg(long)]
    size: Option<String>,
    /// Bytes per injector (default: as the chase, spread over the injectors).
    #[arg(long)]
    inject_size: Option<String>,
    /// Timed passes per point first; more are added until the point settles.
    #[arg(long, default_value_t = 5)]
    iterations: usize,
    #[command(flatten)]
    noise: crate::common::NoiseArgs,
    /// Print the plan without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

impl LoadedArgs {
    fn options(&self) -> Options {
        Options {
            cpu: self.cpu.clone(),
            injectors: self.injectors.clone(),
            mem_node: self.mem_node.clone(),
            traffic: self.traffic.clone(),
            writes: self.writes.clone(),
            delays: self.delays.clone(),
            size: self.size.clone(),
            inject_size: self.inject_size.clone(),
            iterations: self.iterations,
            noise: self.noise.options(),
        }
    }
}

/// Run `numalab loaded-latency`.
pub fn run(a: LoadedArgs) -> Result<(), CliError> {
    let o = a.options();
    let csv = a.mess_csv.as_deref();
    csv.map(|p| check_creatable(p).and(check_fresh(p, a.common.force)))
        .transpose()?;
    let outs: Vec<(&str, &std::path::Path)> =
        [("--mess-csv", csv), ("-o", a.common.output.as_deref())]
            .into_iter()
            .filter_map(|(o, p)| p.map(|p| (o, p)))
            .collect();
    check_distinct(&outs, &[])?;
    let (host, plan, ctx) = prepare(&a.common, a.dry_run, || o.check(), |m| Plan::resolve(m, &o))?;
    if a.dry_run {
        return a.common.show(&[plan.record(&ctx)]);
    }
    let (_, records) = with_progress(|p| loaded::run(&host, &plan, &ctx, p))?;
    // The records are shown (and written) first: a Mess CSV that cannot be made or
    // written is an error after them, never a silent success.
    let mess = csv.map(|p| {
        let text = loaded::mess_csv(&records).map_err(|why| CliError {
            code: 1,
            msg: format!("--mess-csv '{}' not written: {why}", p.display()),
        })?;
        write_atomic(p, text.as_bytes()).map_err(CliError::from)
    });
    a.common.show(&records)?;
    mess.transpose().map(|_| ())
}
