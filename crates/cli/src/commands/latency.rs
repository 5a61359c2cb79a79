//! `numalab latency`: back-to-back and restart latency, composite coherence states,
//! and the memory-hierarchy sweep.

use crate::common::{prepare, with_progress, CliError, CommonArgs};
use crate::crew_args;
use clap::Args;
use numalab_bench::latency::{self, Options, Plan, DEFAULT_MAX_LOADS};

/// Arguments of `numalab latency`.
#[derive(Args, Debug)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub wait: crate::common::WaitArg,
    #[command(flatten)]
    crew: crew_args::CrewArgs,
    /// Line state before each pass: warm, uown, shrd:K, cexh, cexm, dexd, dext.
    #[arg(long, default_value = "warm")]
    state: String,
    /// Request: read (walk), rdex (modify), upgrade (modify on shared lines).
    /// Default: rdex for dext, read otherwise.
    #[arg(long)]
    kernel: Option<String>,
    /// Buffer size per requestor (default: 8× the last-level cache, at least 256M, for
    /// warm/uown; half the helper's L2 for states held in a helper's cache).
    #[arg(long)]
    size: Option<String>,
    /// Sweep sizes (default 4K-1G, two per octave) and report plateaus and cache sizes.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "4K-1G", value_name = "MIN-MAX")]
    sweep: Option<String>,
    /// Also find the restart latency (thesis §4.2.3).
    #[arg(long)]
    restart: bool,
    /// Restart search: moving-window length in steps.
    #[arg(long, default_value_t = 13)]
    restart_window: usize,
    /// Restart search: bound around the window mean, in ns.
    #[arg(long, default_value_t = 5.0)]
    restart_bound: f64,
    /// Restart search: consecutive stable steps needed.
    #[arg(long, default_value_t = 19)]
    restart_stable: usize,
    /// Restart search: largest number of dependent work operations tried.
    #[arg(long, default_value_t = latency::DEFAULT_RESTART_MAX_WORK)]
    restart_max_work: usize,
    /// Timed passes per requestor.
    #[arg(long, default_value_t = 10)]
    iterations: usize,
    /// Bytes between chase elements (a multiple of the line). Default: 256 at one size
    /// (multichase's: no adjacent-line prefetch pairs, half the elements per TLB window
    /// of a 128 B chase); 64 for --sweep, so the buffer size is the cache footprint.
    #[arg(long)]
    stride: Option<usize>,
    /// TLB-locality window in pages (0: random over the whole buffer, page walks included).
    #[arg(long, default_value_t = latency::DEFAULT_WINDOW)]
    window: usize,
    /// Chase order: random, or backward (lmbench's sequential backward stride).
    #[arg(long, default_value = "random")]
    order: String,
    /// Page size: 4k, thp, 2m or 1g.
    #[arg(long, default_value = "4k")]
    page_size: String,
    /// Seed of the random chase order (recorded).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Most loads per timed pass (and lines prepared per pass).
    #[arg(long, default_value_t = DEFAULT_MAX_LOADS)]
    max_loads: usize,
    /// A pass disturbed by the machine (involuntary switch, run-queue wait, steal,
    /// cgroup throttling, another numalab run): remeasure it (up to 3 times) and leave
    /// it out, exclude it, or keep it; every pass is flagged in the record either way.
    #[arg(
        long,
        default_value = "remeasure",
        value_name = "keep|remeasure|exclude"
    )]
    disturbed: String,
    #[command(flatten)]
    noise: crate::common::NoiseArgs,
    /// Print the plan (placements, sizes, loads, helpers) without measuring.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

impl LatencyArgs {
    fn options(&self) -> Options {
        Options {
            crew: self.crew.options(),
            state: self.state.clone(),
            kernel: self.kernel.clone(),
            size: self.size.clone(),
            sweep: self.sweep.clone(),
            restart: self.restart,
            restart_window: self.restart_window,
            restart_bound: self.restart_bound,
            restart_stable: self.restart_stable,
            restart_max_work: self.restart_max_work,
            iterations: self.iterations,
            stride: self.stride,
            window: self.window,
            order: self.order.clone(),
            page_size: self.page_size.clone(),
            seed: self.seed,
            max_loads: self.max_loads,
            disturbed: self.disturbed.clone(),
            noise: self.noise.options(),
        }
    }
}

/// Run `numalab latency`.
pub fn run(a: LatencyArgs) -> Result<(), CliError> {
    let o = a.options();
    let (host, plan, ctx) = prepare(&a.common, a.dry_run, || o.check(), |m| Plan::resolve(m, &o))?;
    if a.dry_run {
        let recs = plan.records(&host.machine, &ctx);
        return a.common.show(&recs);
    }
    let m = with_progress(|p| latency::run(&host, &plan, &ctx, p))?;
    a.common.show(&m.records)
}
