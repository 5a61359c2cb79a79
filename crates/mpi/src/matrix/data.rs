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
    /// Host × host, when the ranks span hosts: each cell the median of the pair
    /// medians between the two hosts' ranks (the diagonal: pairs inside one host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_host: Option<Domains>,
    /// Node × node inside each host whose ranks sit on more than one NUMA node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_node: Vec<Domains>,
}

/// A matrix of domains (hosts, or one host's NUMA nodes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Domains {
    /// The host whose nodes these are (None: the hosts themselves).
    pub host: Option<String>,
    /// Row and column names ("nlab-h1", "node 0").
    pub labels: Vec<String>,
    /// Median of the pair medians between two domains' ranks, ns (None: no pair).
    pub median_ns: Vec<Vec<Option<f64>>>,
    /// Pairs behind each cell.
    pub pairs: Vec<Vec<usize>>,
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
