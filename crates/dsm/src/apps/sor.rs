//! SOR: red-black successive over-relaxation on a grid (regular, barriers only). Each
//! thread owns a band of rows; neighbours' boundary rows are the only shared pages.

use super::{pages_for, App};
use crate::Ctx;

/// SOR on `rows × cols` doubles for `iters` red-black sweeps.
#[derive(Debug, Clone)]
pub struct Sor {
    /// Grid rows, the fixed first and last included.
    pub rows: usize,
    /// Grid columns, the fixed first and last included.
    pub cols: usize,
    /// Red-black iterations.
    pub iters: usize,
}

const W: f64 = 1.25;

fn init(i: usize, j: usize) -> f64 {
    ((i * 31 + j * 17) % 101) as f64 / 101.0
}

fn relax(g: &mut [f64], cols: usize, i: usize, colour: usize) {
    let start = 1 + (i + colour + 1) % 2;
    let mut j = start;
    while j < cols - 1 {
        let k = i * cols + j;
        let avg = (g[k - cols] + g[k + cols] + g[k - 1] + g[k + 1]) * 0.25;
        g[k] += W * (avg - g[k]);
        j += 2;
    }
}

impl App for Sor {
    fn name(&self) -> &'static str {
        "sor"
    }
    fn pages(&self) -> usize {
        pages_for(self.rows * self.cols * 8)
    }
    fn run(&self, c: &Ctx) {
        let (r, n) = (self.rows, self.cols);
        // SAFETY: the region holds rows × cols doubles (pages()); threads write disjoint
        // rows between barriers and read neighbours' rows only after a barrier.
        let g = unsafe { std::slice::from_raw_parts_mut(c.at::<f64>(0), r * n) };
        let (lo, hi) = c.share(r);
        for i in lo..hi {
            for j in 0..n {
                g[i * n + j] = init(i, j);
            }
        }
        c.barrier();
        let (lo, hi) = (lo.max(1), hi.min(r - 1));
        // The first row last: it reads the row above, which the thread before owns, and
        // whose new values the barrier's prefetch is still bringing while the rest is
        // relaxed (the last row, which reads the next thread's, comes last anyway). One
        // colour's cells read only the other's, so the order changes no value.
        let rows = || (lo + 1..hi).chain((lo < hi).then_some(lo));
        for _ in 0..self.iters {
            for colour in 0..2 {
                for i in rows() {
                    relax(g, n, i, colour);
                }
                c.barrier();
            }
        }
    }
    fn result(&self, c: &Ctx) -> Vec<f64> {
        // SAFETY: as in run; every thread has passed the final barrier.
        unsafe { std::slice::from_raw_parts(c.at::<f64>(0), self.rows * self.cols) }.to_vec()
    }
    fn sequential(&self) -> Vec<f64> {
        let (r, n) = (self.rows, self.cols);
        let mut g: Vec<f64> = (0..r * n).map(|k| init(k / n, k % n)).collect();
        for _ in 0..self.iters {
            for colour in 0..2 {
                for i in 1..r - 1 {
                    relax(&mut g, n, i, colour);
                }
            }
        }
        g
    }
}
