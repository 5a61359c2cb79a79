//! Every figure settles or says it did not: one mechanism for every measuring step
//! ([`measure`]: passes added until the figure's interval is within the tolerance,
//! inside a time budget), the one pair of options every command spells the same
//! ([`Goal`]: `--noise-budget`, `--tolerance`), and the wording every presenter uses
//! for an unsettled figure ([`apply`], [`cell`], [`line`]). It sits in `results` so bench,
//! mpi and suites can all reach it.

mod goal;
mod measure;
mod show;

pub use goal::{
    median_interval, parse_duration, rank, Figure, Goal, Interval, NoiseOptions,
    DEFAULT_TOLERANCE_PCT, MAX_BUDGET, MAX_TOLERANCE_PCT,
};
pub use measure::{clock, measure, Settled, Step};
pub use show::{apply, cell, cell_of, combine, line, UNSETTLED};
