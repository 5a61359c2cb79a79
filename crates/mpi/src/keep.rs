//! A job of many configurations keeps what it finished: its ranks append each finished
//! configuration to the file the launcher names (`numalab_results::partial`), and when
//! the job fails (a rank killed, Ctrl-C, `NUMALAB_MPI_TIMEOUT`) the launcher writes
//! them to the output, or to a named fallback file, and says how many. A rank on
//! another host, which cannot see the launcher's file, sends them on its stdout.

use crate::error::Result;
use crate::launch::{ensure, LaunchRequest, Launched};
use numalab_results::partial;
use std::path::Path;

/// [`ensure`] for a job of `total` configurations (when known) whose records go to
/// `output` (when given): a job that fails has the finished ones kept, and one line
/// on stderr says how many and where.
pub fn ensure_keeping(
    req: &LaunchRequest,
    output: Option<&Path>,
    total: Option<usize>,
) -> Result<Launched> {
    let kept = partial::path_for_launcher();
    let launcher = crate::env::JobEnv::detect().is_none();
    if launcher {
        // Ranks on this host append to the file; ranks elsewhere send their lines on
        // stdout, which the launcher appends to it (`launch_stdout`).
        partial::prepare_for_ranks(&kept);
    }
    let launched = ensure(req).inspect_err(|_| {
        // Refused before the job started (a bad hostfile, no mpirun): nothing to keep,
        // and no file of ours left in the temp dir.
        if launcher {
            let _ = std::fs::remove_file(&kept);
        }
    })?;
    if let Launched::Parent(code) = launched {
        let salvaged = (code != 0).then(|| partial::salvage(&kept, output, total));
        match (code, salvaged.flatten()) {
            (_, Some(msg)) => eprintln!("numalab: {msg}"),
            // Interrupted (128 + the signal) before anything finished: said, not guessed.
            (129.., None) => eprintln!("numalab: nothing had finished, so no records were written"),
            _ => {}
        }
        let _ = std::fs::remove_file(&kept);
    }
    Ok(launched)
}
