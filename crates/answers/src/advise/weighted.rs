//! The gain weighted interleave with measured weights predicts over bind and plain
//! interleave, priced by the same bandwidth model as every policy (what `tiers` quotes).

use super::measured::Measured;
use super::weights::weight_shares;
use super::workload::{bandwidth, Workload};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the bandwidth model predicts for every core of one initiator node streaming
/// reads under weighted interleave, beside the best bind and plain interleave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeightedGain {
    /// The initiator node (its every core streaming).
    pub initiator: u32,
    /// Predicted GB/s under the weights.
    pub weighted_gbps: f64,
    /// The best single node to bind to, and its predicted GB/s.
    pub bind: (u32, f64),
    /// Predicted GB/s under plain interleave over the same nodes.
    pub interleave_gbps: f64,
    /// The matrix cells the predictions used.
    pub basis: Vec<String>,
}

impl WeightedGain {
    /// The gain over the better of bind and plain interleave, percent.
    pub fn gain_percent(&self) -> f64 {
        let other = self.bind.1.max(self.interleave_gbps);
        (self.weighted_gbps / other - 1.0) * 100.0
    }
}

/// The model's prediction for node `d`'s cores streaming under `weights` (node,
/// weight) against binding to each of those nodes and interleaving over them; None
/// when a bandwidth cell is missing.
pub fn weighted_gain(m: &Measured, d: u32, weights: &[(u32, u32)]) -> Option<WeightedGain> {
    let cores = m.cores(d).max(1);
    let w = Workload {
        threads: cores,
        footprint: 1,
        reads: 100,
        streaming: true,
        shared: false,
    };
    let t = BTreeMap::from([(d, cores)]);
    let mut basis = Vec::new();
    let mut predict = |row: BTreeMap<u32, f64>| {
        bandwidth(m, &w, &t, &BTreeMap::from([(d, row)]), &mut basis)
            .ok()
            .map(|b| b.0)
    };
    let nodes: Vec<u32> = weights.iter().map(|x| x.0).collect();
    let ws: Vec<u32> = weights.iter().map(|x| x.1).collect();
    let weighted = predict(weight_shares(&nodes, &ws))?;
    let interleave = predict(weight_shares(&nodes, &vec![1; nodes.len()]))?;
    let mut bind: Option<(u32, f64)> = None;
    for x in &nodes {
        let b = predict(BTreeMap::from([(*x, 1.0)]))?;
        if bind.is_none_or(|(_, best)| b > best) {
            bind = Some((*x, b));
        }
    }
    basis.sort();
    basis.dedup();
    Some(WeightedGain {
        initiator: d,
        weighted_gbps: weighted,
        bind: bind?,
        interleave_gbps: interleave,
        basis,
    })
}
