//! The one result record every numalab command emits.

use crate::provenance::Provenance;
use crate::stats::Summary;
use serde::de::DeserializeOwned;
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
    /// Whether the record's headline figure settled inside its step's budget; absent
    /// for records that measure nothing or were made before figures were settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<Settle>,
}

/// How a record's headline figure settled: passes were added until its interval was
/// within the tolerance, inside a time budget, or the budget ran out (`settled: false`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settle {
    /// The interval was within the tolerance when the step ended.
    pub settled: bool,
    /// The metric the interval is of (a stat's `metric`).
    pub metric: String,
    /// Passes measured, disturbed ones included.
    pub passes: u32,
    /// The interval's lower and upper bounds, in the metric's unit.
    pub interval: [f64; 2],
    /// The interval's half-width the step accepts, in percent of the figure.
    pub tolerance_pct: f64,
    /// The time the step was allowed, in milliseconds.
    pub budget_ms: f64,
    /// Why it did not settle (the machine was busy: what was seen), when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Which statistic of the passes the figure is, the one the interval bounds (None:
    /// the median, as in records from before this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure: Option<crate::settle::Figure>,
}

impl Settle {
    /// A settle entry of `metric` with its interval: settled when `why` is None, else
    /// not, for that reason; its figure the median, 9 passes within 10 % in 100 ms (set
    /// the public fields for others). For fixtures and tests; steps build theirs.
    pub fn new(metric: &str, interval: [f64; 2], why: Option<&str>) -> Settle {
        Settle {
            settled: why.is_none(),
            metric: metric.into(),
            passes: 9,
            interval,
            tolerance_pct: 10.0,
            budget_ms: 100.0,
            why: why.map(Into::into),
            figure: None,
        }
    }
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
            settle: None,
        }
    }

    /// False only when the record says its figure did not settle; a record without
    /// a `settle` entry (descriptive, or older) is taken as it stands.
    pub fn settled(&self) -> bool {
        self.settle.as_ref().is_none_or(|s| s.settled)
    }

    /// Set `data` from the kind's typed data (its JSON keys are the struct's fields).
    pub fn set_data<T: Serialize>(&mut self, data: &T) {
        // The data types are plain structs of numbers, strings and vectors; their
        // serialisation cannot fail, and a record without its data would be a lie.
        self.data = Some(serde_json::to_value(data).expect("record data serialises"));
    }

    /// `data` read as the kind's typed data; the error names the kind and the record.
    pub fn data_as<T: DeserializeOwned>(&self) -> Result<T, DataError> {
        let err = |why: String| DataError {
            kind: self.kind.clone(),
            name: self.name.clone(),
            why,
        };
        let v = self
            .data
            .as_ref()
            .ok_or_else(|| err("it has no data".into()))?;
        T::deserialize(v).map_err(|e| err(e.to_string()))
    }

    /// The statistics of `metric`, if this record measured it.
    pub fn stat(&self, metric: &str) -> Option<&Stat> {
        self.stats.iter().find(|s| s.metric == metric)
    }

    /// The median of `metric`, if this record measured it.
    pub fn median(&self, metric: &str) -> Option<f64> {
        self.stat(metric).map(|s| s.summary.median)
    }

    /// The figure of `metric`: the statistic its step settled, the one its interval
    /// bounds (a best-of-N bandwidth's largest pass, a best-of-N time's smallest), else
    /// the median; None when the record lacks the metric. What cards, answers,
    /// plausibility rules and `compare` state as this record's figure. A best-of-N
    /// record's median can lie below its own interval (a 2-CPU mix's passes 8.6–18.8
    /// GB/s: median 16.4, interval 16.9–18.8), so the two are never mixed. A step that
    /// did not settle keeps its median: its best pass is one the others never came near
    /// (a busy survey's 2:1 mix: best of 7 passes 42.4 GB/s, median 18.9), and the
    /// plausibility rules would hold it against the settled figures beside it.
    pub fn figure(&self, metric: &str) -> Option<f64> {
        use crate::settle::Figure;
        let s = &self.stat(metric)?.summary;
        let settled = self
            .settle
            .as_ref()
            .filter(|x| x.metric == metric && x.settled);
        Some(match settled.and_then(|x| x.figure) {
            Some(Figure::Max) => s.max,
            Some(Figure::Min) => s.min,
            _ => s.median,
        })
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

/// A record whose `data` does not match its kind's typed data.
#[derive(Debug, Clone, PartialEq)]
pub struct DataError {
    /// The record's kind.
    pub kind: String,
    /// The record's name.
    pub name: String,
    /// What did not match.
    pub why: String,
}

impl std::fmt::Display for DataError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "record '{}' of kind '{}': data does not match the kind's schema: {}",
            self.name, self.kind, self.why
        )
    }
}

impl std::error::Error for DataError {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Point {
        size_bytes: u64,
        median_ns: f64,
    }

    #[test]
    fn typed_data_round_trips_and_a_mismatch_names_the_kind() {
        let mut r = Record::new(
            "k-sweep",
            "one",
            Provenance::collect("t", "none"),
            json!({}),
        );
        let p = Point {
            size_bytes: 64,
            median_ns: 1.5,
        };
        r.set_data(&p);
        assert_eq!(r.data, Some(json!({"size_bytes": 64, "median_ns": 1.5})));
        assert_eq!(r.data_as::<Point>().unwrap(), p);
        r.data = Some(json!({"size_bytes": "x"}));
        let e = r.data_as::<Point>().unwrap_err().to_string();
        assert!(e.contains("'k-sweep'") && e.contains("'one'"), "{e}");
        r.data = None;
        assert!(r
            .data_as::<Point>()
            .unwrap_err()
            .to_string()
            .contains("no data"));
    }
}
