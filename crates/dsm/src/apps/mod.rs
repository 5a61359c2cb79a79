//! Applications: plain shared-memory programs on the DSM, each with a sequential twin.

pub mod fft;
pub mod sor;
pub mod water;

use crate::Ctx;

/// A DSM application.
pub trait App: Sync {
    /// Command-line name.
    fn name(&self) -> &'static str;
    /// Pages of shared memory it needs.
    fn pages(&self) -> usize;
    /// Global locks it uses.
    fn locks(&self) -> usize {
        0
    }
    /// One thread's part (every thread of every rank runs it).
    fn run(&self, c: &Ctx);
    /// The result, read from shared memory on rank 0 after the run.
    fn result(&self, c: &Ctx) -> Vec<f64>;
    /// The same computation without the DSM.
    fn sequential(&self) -> Vec<f64>;
    /// Largest relative difference accepted against the sequential result.
    fn tolerance(&self) -> f64 {
        0.0
    }
}

/// Largest relative difference between two results (inf when the lengths differ).
pub fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            if x == y {
                0.0
            } else {
                (x - y).abs() / x.abs().max(y.abs()).max(1e-300)
            }
        })
        .fold(0.0, f64::max)
}

/// Pages holding `bytes`.
pub fn pages_for(bytes: usize) -> usize {
    bytes.div_ceil(crate::region::PAGE).max(1)
}
