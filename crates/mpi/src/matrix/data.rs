//! The typed `data` of an `mpi-matrix` record: rank × rank medians and their groups.

use serde::{Deserialize, Serialize};

/// `data` of an `mpi-matrix` record: rank × rank medians and their groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixData {
    /// Median one-way latency of each pair, ns (null on the diagonal).
    pub latency_ns: Vec<Vec<Option<f64>>>,
    /// How each pair of ranks relates ("smt-sibling", "same-l3", …).
    pub relations: Vec<Vec<String>>,
    /// The cells grouped by relation, nearest first.
    pub groups: Vec<Group>,
    /// Which statistic the cells hold.
    pub statistic: String,
}

/// Cells of one relation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// The relation's name.
    pub relation: String,
    /// Pairs in it.
    pub pairs: usize,
    /// Smallest, median and largest cell (ns).
    pub min_ns: f64,
    /// Median cell.
    pub median_ns: f64,
    /// Largest cell.
    pub max_ns: f64,
}
