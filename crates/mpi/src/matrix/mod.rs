//! `numalab mpi matrix`: one-way ping-pong latency between every pair of ranks, like
//! `c2c` for ranks, each pair's relation named and the cells grouped by relation.

mod data;
mod domains;
mod measure;
mod plan;
mod present;

pub use data::{Domains, Group, MatrixData};
pub use measure::{group, measure};
pub use plan::*;
pub use present::{matrix_cards, rank_order, MatrixPresenter};
