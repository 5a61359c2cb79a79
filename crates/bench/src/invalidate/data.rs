//! The typed `data` of the invalidate records.

use super::Step;
use serde::{Deserialize, Serialize};

/// `data` of an `invalidate` record: the step's samples and pinning proof.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InvalidateData {
    /// Every pass of this sharer count.
    pub samples: Step,
    /// Every figure's passes as one log (what `compare` and the summary read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<numalab_results::disturb::PassLog>,
}
