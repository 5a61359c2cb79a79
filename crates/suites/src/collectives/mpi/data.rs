//! The typed `data` of a `collective-mpi` record.

use serde::{Deserialize, Serialize};

/// `data` of a `collective-mpi` record (`collective-mpi-model` data is a [`LinearFit`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveMpiData {
    /// Each rank's mean time over the passes, ns.
    pub rank_mean_ns: Vec<f64>,
    /// Whether the moved words were checked (blocks of zero lines move none).
    pub checked: bool,
}
