//! The one result record every numalab command emits.

use crate::provenance::Provenance;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Schema identifier written into every record; bump with incompatible changes.
pub const SCHEMA_ID: &str = "numalab.record/1";

/// The JSON Schema (draft 2020-12) for records and files of records.
pub const SCHEMA_JSON: &str = include_str!("../../../schema/record-v1.schema.json");

/// One metric's statistics with its unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    /// What was measured, e.g. "latency", "bandwidth".
    pub metric: String,
    /// Unit of every figure: "ns", "GB/s", "cycles", ...
    pub unit: String,
    /// The statistics.
    #[serde(flatten)]
    pub summary: Summary,
}

/// A feature that could not be used, and why (per feature, never a silent zero).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unavailable {
    /// The feature, e.g. "hardware counters", "second NUMA node", "2m huge pages".
    pub feature: String,
    /// Why it is unavailable here.
    pub reason: String,
}

/// A result record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Always [`SCHEMA_ID`].
    pub schema: String,
    /// The command that produced it: "topo", "plan", "latency", ...
    pub kind: String,
    /// The measurement's name within the command.
    pub name: String,
    /// Where and how it was produced.
    pub provenance: Provenance,
    /// The placement used: requested, resolved and, when bound, verified.
    pub placement: Option<Value>,
    /// Parameters (sizes, kernels, seeds, ...).
    pub parameters: Value,
    /// Statistics per metric (empty for descriptive records such as topo).
    pub stats: Vec<Stat>,
    /// Command-specific data (e.g. the topology).
    pub data: Option<Value>,
    /// Things the reader should know (VM detected, THP partial, ...).
    pub warnings: Vec<String>,
    /// Features not available on this run.
    pub unavailable: Vec<Unavailable>,
}

impl Record {
    /// A record with provenance and parameters, nothing measured yet.
    pub fn new(kind: &str, name: &str, provenance: Provenance, parameters: Value) -> Record {
        Record {
            schema: SCHEMA_ID.into(),
            kind: kind.into(),
            name: name.into(),
            provenance,
            placement: None,
            parameters,
            stats: Vec::new(),
            data: None,
            warnings: Vec::new(),
            unavailable: Vec::new(),
        }
    }

    /// Add statistics of samples; an empty or non-finite sample set is recorded as unavailable.
    pub fn add_samples(&mut self, metric: &str, unit: &str, samples: &[f64]) {
        match Summary::of(samples) {
            Some(summary) => self.stats.push(Stat {
                metric: metric.into(),
                unit: unit.into(),
                summary,
            }),
            None => self.unavailable.push(Unavailable {
                feature: metric.into(),
                reason: "no valid samples were taken".into(),
            }),
        }
    }
}
