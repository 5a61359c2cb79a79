//! What `numalab mpi ranks` would start: how many ranks, where this host's run, and
//! the mpirun line.

use crate::error::Result;
use crate::job::{JobOptions, Launch};
use numalab_results::{Provenance, Record};
use numalab_topo::Machine;
use serde::{Deserialize, Serialize};

/// Record kind of the plan (`--dry-run`).
pub const KIND_PLAN: &str = "mpi-ranks-plan";

/// The user's request: the job alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// The job: ranks, hosts and where they run.
    pub job: JobOptions,
}

impl Options {
    /// Check what needs no machine.
    pub fn check(&self) -> Result<()> {
        self.job.check()
    }
}

/// The launch, resolved: this host's CPU for each of its ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Ranks in the job.
    pub ranks: usize,
    /// The placement asked for.
    pub rank_cpus: String,
    /// Whether a hostfile spreads the ranks (each host places its own).
    pub per_host: bool,
    /// mpirun's arguments, as the launcher would give them.
    pub mpirun: String,
    /// The CPU of each rank on this host.
    pub cpus: Vec<u32>,
}

impl Plan {
    /// Resolve the options for the job `launch` starts on `m`.
    pub fn resolve(m: &Machine, launch: &Launch, o: &Options) -> Result<Plan> {
        let req = &launch.req;
        let cpus = crate::place::host_cpus(m, &launch.world.rank_cpus, req.ranks)?;
        Ok(Plan {
            ranks: req.ranks,
            rank_cpus: o.job.rank_cpus.clone(),
            per_host: req.hostfile.is_some(),
            mpirun: req
                .launcher_args()
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            cpus,
        })
    }

    /// The plan as one record (its `data` is the plan), what `--dry-run` emits.
    pub fn records(&self, prov: &Provenance) -> Vec<Record> {
        let mut r = Record::new(
            KIND_PLAN,
            "mpi ranks plan",
            prov.clone(),
            serde_json::json!({ "ranks": self.ranks }),
        );
        r.set_data(self);
        vec![r]
    }
}
