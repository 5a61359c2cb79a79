//! A `numalab cluster` run with a folder, in both of its processes: the launching one
//! starts the job and, when it fails, writes the files from the journal and says how
//! to resume; every rank measures (rank 0 journalling each part as it ends).

use super::journal::{self as cj, Folder};
use super::measure::measure;
use super::plan::Plan;
use numalab_mpi::{Error, Launch, Launched, Result, World};
use numalab_results::Record;
use numalab_topo::Host;

/// Run the plan journalled in `f`. The launching process does not return: it ends
/// with the job's exit code (after a failure, not a refusal, with the rescue line on
/// stderr). A rank returns rank 0's records (None on the others); a refusal every rank
/// returned ends each cleanly, rank 0 with its one line.
pub fn journalled(
    host: &Host,
    launch: &Launch,
    plan: &Plan,
    f: &Folder,
    progress: impl FnMut(usize, usize),
) -> Result<Option<Vec<Record>>> {
    let since = std::time::SystemTime::now();
    if let Launched::Parent(code) = numalab_mpi::launch::ensure(&launch.req)? {
        // Not after a refusal (2): the folder may be another run's.
        if code != 0 && code != 2 {
            if let Some(line) = cj::rescue(plan, &f.dir, since) {
                eprintln!("numalab: {line}");
            }
        }
        std::process::exit(code);
    }
    let world =
        World::start(host, &launch.world).unwrap_or_else(|e| numalab_mpi::world::fail(None, &e));
    let say = |l: &str| eprintln!("numalab cluster: {l}");
    match measure(&world, host, plan, Some(f), say, progress) {
        Ok(r) => Ok(r),
        // The ranks with nothing to say end with 0: were they to exit 2 first, mpirun
        // would end rank 0 before its line is out.
        Err(e @ Error::Usage(_)) => {
            let silent = !world.is_root() && e.to_string().is_empty();
            drop(world);
            if silent {
                std::process::exit(0);
            }
            numalab_mpi::world::fail(None, &e)
        }
        Err(e) => numalab_mpi::world::fail(Some(&world), &e),
    }
}
