//! `numalab mpi ranks`: where every rank runs, each rank describing itself in one
//! record and rank 0 gathering them — the launcher, pinning and gathering end to end.

mod measure;
mod plan;
mod present;

pub use measure::{measure, my_record};
pub use plan::*;
pub use present::{rank_rows, RanksPresenter, RANK_HEADER};
