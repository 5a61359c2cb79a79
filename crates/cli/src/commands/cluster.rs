//! `numalab cluster`: every host's settings and memory and every link between hosts,
//! one rank per host of the hostfile, the odd host, link or setting named. With `-o DIR`
//! rank 0 journals each part as it ends, and `--resume DIR` measures only what is
//! missing (`numalab_answers::cluster::journalled`).

use crate::commands::mpi::{progress, run_job};
use crate::common::{check_measurable, size_opt, CliError, CommonArgs};
use clap::Args;
use numalab_answers::cluster::journal::{self as cj, Folder};
use numalab_answers::cluster::{self, Options, Plan};
use numalab_mpi::JobOptions;
use std::path::PathBuf;

/// Arguments of `numalab cluster`.
#[derive(Args, Debug)]
pub struct ClusterArgs {
    /// The hosts, one per line (`host slots=1`): one rank each. Without it, inside a
    /// Slurm allocation, its nodes (one task each, started by srun).
    #[arg(long, value_name = "FILE")]
    hostfile: Option<PathBuf>,
    /// Plan for N hosts without a hostfile (with --dry-run): the plan, its estimate
    /// and the bytes its figures take.
    #[arg(long, value_name = "N")]
    hosts: Option<usize>,
    /// Timed 8-byte round trips per pair of hosts.
    #[arg(long, default_value_t = 1000)]
    lat_iterations: usize,
    /// Bytes per message of the bandwidth matrix.
    #[arg(long, default_value = "1M")]
    bw_size: String,
    /// Messages in flight per bandwidth sample.
    #[arg(long, default_value_t = 8)]
    bw_window: usize,
    /// Timed samples per shift step of the bandwidth matrix.
    #[arg(long, default_value_t = 5)]
    bw_iterations: usize,
    /// Timed passes of the allreduce and the barrier.
    #[arg(long, default_value_t = 20)]
    coll_iterations: usize,
    /// Timed passes of each memory figure per NUMA node.
    #[arg(long, default_value_t = 3)]
    mem_iterations: usize,
    /// Bytes the memory check chases, and streams per core (default: past every cache,
    /// 8 x the last-level cache and at least 256 MiB). Smaller when the hosts share one
    /// machine's memory; within reach of the caches, the figures say so.
    #[arg(long, value_name = "BYTES")]
    mem_size: Option<String>,
    /// Print the plan without starting ranks.
    #[arg(long)]
    dry_run: bool,
    /// Continue the run whose folder is DIR from its journal: only the parts not yet
    /// finished are measured. Give the hostfile and options it was started with.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["output", "force", "dry_run"])]
    resume: Option<PathBuf>,
    #[command(flatten)]
    common: CommonArgs,
}

impl ClusterArgs {
    fn options(&self) -> Result<Options, CliError> {
        Ok(Options {
            job: JobOptions {
                hostfile: self.hostfile.clone(),
                ..JobOptions::default()
            },
            hosts: self.hosts,
            lat_iterations: self.lat_iterations,
            bw_size: size_opt("--bw-size", &self.bw_size)?,
            bw_window: self.bw_window,
            bw_iterations: self.bw_iterations,
            coll_iterations: self.coll_iterations,
            mem_iterations: self.mem_iterations,
            mem_size: self
                .mem_size
                .as_deref()
                .map(|s| size_opt("--mem-size", s))
                .transpose()?,
        })
    }
}

/// The run's folder: `--resume DIR`, or an `-o` that names no record file (then taken
/// from the common flags, which write record files).
fn folder(a: &mut ClusterArgs) -> Option<Folder> {
    if let Some(d) = &a.resume {
        return Some(Folder {
            dir: d.clone(),
            resume: true,
            force: false,
        });
    }
    let dir = a.common.output.take_if(|p| cj::names_folder(p))?;
    Some(Folder {
        dir,
        resume: false,
        force: a.common.force,
    })
}

/// Run `numalab cluster`.
pub fn run(mut a: ClusterArgs) -> Result<(), CliError> {
    let folder = folder(&mut a);
    a.common.validate()?;
    let o = a.options()?;
    o.check()?;
    if let (Some(n), false) = (o.hosts, a.dry_run) {
        return Err(CliError::from(numalab_mpi::Error::Usage(format!(
            "invalid --hosts '{n}' without --dry-run: --hosts plans for N hosts; to measure, give --hostfile"
        ))));
    }
    check_measurable(&a.common, a.dry_run)?;
    let plan = Plan::resolve(&o)?;
    if a.dry_run && plan.options.hosts.is_some() {
        // A plan for N hosts needs no launcher and no machine beyond this one's provenance.
        let host = a.common.host()?;
        return a
            .common
            .show(&plan.records(&crate::common::describing(&host).prov));
    }
    let host = a.common.host()?;
    let mut launch = plan.job().resolve(&host.machine, 2)?;
    launch.req.estimate = Some(plan.estimate());
    if let (Some(f), false) = (&folder, a.dry_run) {
        let recs = cluster::journalled(&host, &launch, &plan, f, progress("cluster"))?;
        return recs.map_or(Ok(()), |r| a.common.show(&r));
    }
    run_job(
        (&a.common, a.dry_run),
        &host,
        &launch,
        |prov| plan.records(prov),
        |world| cluster::measure(world, &host, &plan, None, |_| {}, progress("cluster")),
        None,
    )
}
