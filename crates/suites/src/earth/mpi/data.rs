//! The typed `data` of `suite-earth-mpi-mask` and `suite-earth-seed` records.

use serde::{Deserialize, Serialize};

/// One T of the masking curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaskPoint {
    /// Iterations per coroutine.
    pub t: usize,
    /// Median time of the masked loop, ns.
    pub median_ns: Option<f64>,
    /// Share of the baseline's communication hidden, % (null when not finite).
    pub masked_pct: Option<f64>,
}

/// The best T of the masking curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaskBest {
    /// Iterations per coroutine.
    pub t: usize,
    /// Share hidden, %.
    pub masked_pct: f64,
}

/// `data` of a `suite-earth-mpi-mask` record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaskData {
    /// Every T measured.
    pub points: Vec<MaskPoint>,
    /// The T that hid the most.
    pub best: Option<MaskBest>,
}

/// One row of the seed's Table 1 (`suite-earth-seed` data is a list of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedRow {
    /// The operation.
    pub op: String,
    /// Sequential, local, ns.
    pub sequential_local_ns: f64,
    /// Sequential, remote, ns.
    pub sequential_remote_ns: f64,
    /// Pipelined, local, ns.
    pub pipelined_local_ns: f64,
    /// Pipelined, remote, ns.
    pub pipelined_remote_ns: f64,
}
