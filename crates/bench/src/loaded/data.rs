//! The typed `data` of the loaded records.

use super::Point;
use numalab_results::disturb::PassLog;
use numalab_results::Settle;
use serde::{Deserialize, Serialize};

/// `data` of a `loaded-latency` record: the point's samples and pinning proof.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadedData {
    /// The passes the statistics use at this injector delay.
    pub samples: Point,
    /// Every pass: what disturbed it (the chase and the injectors together) and
    /// whether the statistics use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<PassLog>,
    /// How the injectors' issued bandwidth settled (loaded points; the record's own
    /// `settle` is the latency's unless only this one did not settle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_settle: Option<Settle>,
    /// Times the point was measured again because it read below the unloaded latency.
    #[serde(default)]
    pub remeasured_below: u32,
    /// The unloaded point: its first median, replaced by this lower reading after a
    /// loaded point stayed below it (None: not replaced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_ns: Option<f64>,
    /// The unloaded point: what it read when measured again after a loaded point stayed
    /// below it, not lower by more than the tolerance, so the first reading stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rechecked_ns: Option<f64>,
}

/// `data` of a `loaded-latency-plan` record: the injector delays to be run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedPlanData {
    /// Injector delays, in the order they run.
    pub delays: Vec<u64>,
    /// The family's write percentages, one curve each (None: one `traffic` curve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_pcts: Option<Vec<u32>>,
}

/// One measured point: its passes (those the statistics use), how it settled, and
/// every pass's disturbance.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The passes the statistics use.
    pub point: Point,
    /// The record's settle entry: the latency's, or the issued bandwidth's when only
    /// that one did not settle, or unsettled for reading below the unloaded latency.
    pub settle: Settle,
    /// How the latency settled, on its own.
    pub latency: Settle,
    /// How the issued bandwidth settled (loaded points only).
    pub bandwidth: Option<Settle>,
    /// Every pass: what disturbed it (chase and injectors together), which were used.
    pub log: PassLog,
    /// Times the point was measured again for reading below the unloaded latency.
    pub remeasured_below: u32,
    /// The unloaded point: its first median, when a loaded point that stayed below it
    /// had it measured again and this lower reading replaced it.
    pub replaced_ns: Option<f64>,
    /// The unloaded point: its second reading, when it was measured again and did not
    /// read lower by more than the tolerance (the first one stands).
    pub rechecked_ns: Option<f64>,
}
