//! The typed `data` of the loaded records.

use super::Point;
use serde::{Deserialize, Serialize};

/// `data` of a `loaded-latency` record: the point's samples and pinning proof.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadedData {
    /// Every pass at this injector delay.
    pub samples: Point,
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
