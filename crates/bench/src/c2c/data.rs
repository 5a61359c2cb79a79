//! The typed `data` of the c2c records.

use serde::{Deserialize, Serialize};

/// `data` of a `c2c-matrix` record: CPU × CPU medians (null: not measured).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cMatrixData {
    /// The CPUs, in row and column order.
    pub cpus: Vec<u32>,
    /// Median CAS round trip / 2, ns.
    pub cas_rtt_half_ns: Vec<Vec<Option<f64>>>,
    /// Median read of lines Modified in the other CPU, ns.
    pub modified_read_ns: Vec<Vec<Option<f64>>>,
    /// Pairs that are SMT siblings of one core.
    pub smt_sibling_pairs: Vec<[u32; 2]>,
    /// Which statistic the cells hold.
    pub statistic: String,
    /// Pairs whose CAS median did not settle (their cells say so).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cas_unsettled: Vec<[u32; 2]>,
    /// Pairs whose read median did not settle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_unsettled: Vec<[u32; 2]>,
}

/// `data` of a `c2c` record (one pair): what disturbed its passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cPairData {
    /// Every pass, CAS then read, as one log (what `compare` and the summary read).
    pub disturbance: numalab_results::disturb::PassLog,
    /// The CAS passes alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cas: Option<numalab_results::disturb::PassLog>,
    /// The modified-read passes alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<numalab_results::disturb::PassLog>,
    /// How each figure's median settled (CAS, then read; the record's own entry is
    /// the first that did not).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settle: Vec<numalab_results::Settle>,
}

/// `data` of a `c2c-plan` record: pairs in rounds that run at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct C2cPlanData {
    /// Each round's pairs share no core, L3 or package.
    pub rounds: Vec<Vec<super::Pair>>,
}
