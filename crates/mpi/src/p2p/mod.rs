//! `numalab mpi latency|bandwidth`: point-to-point and one-sided costs between two
//! ranks over a size sweep, in the project's shape: [`Options`] → [`Plan::resolve`]
//! (what `--dry-run` prints) → [`measure`] → records, shown by [`P2pPresenter`].

mod measure;
mod plan;
mod present;
mod settle;

pub use measure::{harmonic_mean, measure};
pub use plan::*;
pub use present::{osu_text, P2pPresenter};
