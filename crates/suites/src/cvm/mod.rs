//! `suite cvm`: the seed's multithreaded-CVM study as a plan of `dsm run`s — every app ×
//! protocol × threads per rank × net delay in one MPI job — and its tables: execution
//! time normalised to T = 1 with the breakdown (Figures 3, 5, 6), the speedup over the
//! sequential program (Figure 2), the DSM actions (Tables 2 and 3) and the thread-switch
//! classes (Figure 7). Each run's result is checked against its sequential twin.

mod present;
mod tables;
pub use present::{run_text, text, CvmPresenter};

use numalab_dsm::experiment::{measure, Options, Plan};
use numalab_mpi::World;
use numalab_results::Record;
use numalab_topo::{Host, Machine};
use serde::{Deserialize, Serialize};

/// What the user asked for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CvmOptions {
    /// Apps (default: all).
    pub apps: Vec<String>,
    /// Protocols (default: lmw, lsw, seq).
    pub protocols: Vec<String>,
    /// Threads per rank (default 1, 2, 4, 8).
    pub threads: Vec<usize>,
    /// Net delays (default "0").
    pub net_delays: Vec<String>,
    /// small or paper.
    pub input: String,
    /// Ranks.
    pub ranks: usize,
}

/// Every run of the suite, in order.
pub fn resolve(m: &Machine, o: &CvmOptions) -> Result<Vec<Plan>, String> {
    let mut plans = Vec::new();
    for d in &o.net_delays {
        for app in &o.apps {
            for p in &o.protocols {
                for &t in &o.threads {
                    plans.push(Plan::resolve(
                        m,
                        &Options {
                            app: app.clone(),
                            protocol: p.clone(),
                            threads: t,
                            net_delay: d.clone(),
                            input: o.input.clone(),
                            ranks: o.ranks,
                        },
                    )?);
                }
            }
        }
    }
    Ok(plans)
}

/// Run every plan in this job (collective); rank 0 gets all records. `progress` is
/// called on rank 0 before each run.
pub fn run(
    world: &World,
    host: &Host,
    plans: &[Plan],
    progress: &dyn Fn(usize, &Plan),
) -> Result<Option<Vec<Record>>, String> {
    let mut all = Vec::new();
    for (i, p) in plans.iter().enumerate() {
        if world.rank == 0 {
            progress(i, p);
        }
        if let Some(r) = measure(world, host, p)? {
            all.extend(r);
        }
    }
    Ok((world.rank == 0).then_some(all))
}
