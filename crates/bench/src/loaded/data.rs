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
}
