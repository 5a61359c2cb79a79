//! `numalab tiers`: the kernel's memory tiers beside the firmware's and the measured.

use crate::common::{prepare, CliError, CommonArgs};
use clap::Args;
use numalab_answers::tiers::{self, Options, Plan};

/// Arguments of `numalab tiers`.
#[derive(Args, Debug)]
pub struct TiersArgs {
    /// Nodes to show (e.g. 0-2; default: every memory node).
    #[arg(long)]
    nodes: Option<String>,
    /// The measured matrices: a survey folder (numalab survey -o DIR) or a results file.
    #[arg(long, value_name = "PATH")]
    from: Option<String>,
    /// Also write this machine's hwloc XML with the measured latency and bandwidth (needs --from).
    #[arg(long, value_name = "FILE.xml")]
    export_hwloc: Option<String>,
    /// Allocate SIZE (e.g. 64M) under weighted interleave over the memory nodes; count its pages per node.
    #[arg(long, value_name = "SIZE")]
    verify_interleave: Option<String>,
    /// Read sysfs and procfs under DIR instead of / (a recorded or fake tree).
    #[arg(long, default_value = "/", value_name = "DIR")]
    root: String,
    /// Print what would be read and compared, without reading it.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    common: CommonArgs,
}

/// Run `numalab tiers`.
pub fn run(a: TiersArgs) -> Result<(), CliError> {
    let o = Options {
        nodes: a.nodes,
        from: a.from,
        root: a.root,
        export_hwloc: a.export_hwloc,
        verify_interleave: a.verify_interleave,
    };
    let (host, plan, _) = prepare(&a.common, a.dry_run, || o.check(), |m| Plan::resolve(m, &o))?;
    // Tiers measure nothing: no warning that their figures may be disturbed.
    let ctx = crate::common::describing(&host);
    if let Some(x) = &o.export_hwloc {
        let x: &std::path::Path = x.as_ref();
        numalab_results::output::check_fresh(x, a.common.force)?;
        let mut outs = vec![("--export-hwloc", x)];
        outs.extend(a.common.output.as_deref().map(|o| ("-o", o)));
        let results = o
            .from
            .as_ref()
            .map(|f| std::path::Path::new(f).join("results.json"));
        let mut from: Vec<&std::path::Path> = o.from.iter().map(|f| f.as_ref()).collect();
        from.extend(results.as_deref());
        numalab_results::outpath::check_distinct(&outs, &from)?;
    }
    if a.dry_run {
        return a.common.show(&[plan.record(&ctx)]);
    }
    a.common.show(&tiers::run(&host, &plan, &ctx)?)
}
