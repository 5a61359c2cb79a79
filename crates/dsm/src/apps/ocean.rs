//! Ocean (simplified): Jacobi relaxation of an elliptic equation on a grid with fixed
//! boundaries, the residual of every iteration summed per node through a local barrier
//! and then across nodes under a lock (barriers and locks, as Splash-2 Ocean's solver;
//! Ocean's multigrid and its many other phases are not reproduced).

use super::{pages_for, App};
use crate::Ctx;

/// Ocean on an `n × n` grid (boundary included) for `iters` Jacobi iterations.
#[derive(Debug, Clone)]
pub struct Ocean {
    /// Grid points per side, boundary included.
    pub n: usize,
    /// Iterations.
    pub iters: usize,
}

fn init(i: usize, j: usize, n: usize) -> f64 {
    if i == 0 || j == 0 || i == n - 1 || j == n - 1 {
        ((i * 13 + j * 7) % 29) as f64
    } else {
        0.0
    }
}

fn rhs(i: usize, j: usize) -> f64 {
    ((i * j) % 11) as f64 * 1e-3
}

/// One sweep of rows lo..hi from `a` into `b`; the sum of |b - a|.
fn sweep(a: &[f64], b: &mut [f64], n: usize, lo: usize, hi: usize) -> f64 {
    let mut r = 0.0;
    for i in lo.max(1)..hi.min(n - 1) {
        for j in 1..n - 1 {
            let k = i * n + j;
            let v = 0.25 * (a[k - 1] + a[k + 1] + a[k - n] + a[k + n] - rhs(i, j));
            r += (v - a[k]).abs();
            b[k] = v;
        }
    }
    r
}

impl Ocean {
    fn offs(&self) -> (usize, usize) {
        let g = pages_for(self.n * self.n * 8) * 4096;
        (g, 2 * g)
    }
}

impl App for Ocean {
    fn name(&self) -> &'static str {
        "ocean"
    }
    fn pages(&self) -> usize {
        self.offs().1 / 4096 + pages_for(self.iters * 8)
    }
    fn locks(&self) -> usize {
        1
    }
    fn run(&self, c: &Ctx) {
        let n = self.n;
        let (go, ro) = self.offs();
        // SAFETY: grids A, B and the residual history are disjoint in the region; sweeps
        // write own rows, residuals are added under lock 0.
        let (a, b, res) = unsafe {
            (
                std::slice::from_raw_parts_mut(c.at::<f64>(0), n * n),
                std::slice::from_raw_parts_mut(c.at::<f64>(go), n * n),
                std::slice::from_raw_parts_mut(c.at::<f64>(ro), self.iters),
            )
        };
        let (lo, hi) = c.share(n);
        for i in lo..hi {
            for j in 0..n {
                a[i * n + j] = init(i, j, n);
                b[i * n + j] = init(i, j, n);
            }
        }
        c.barrier();
        for (it, slot) in res.iter_mut().enumerate() {
            let r = if it % 2 == 0 {
                sweep(a, b, n, lo, hi)
            } else {
                sweep(b, a, n, lo, hi)
            };
            c.with_scratch(|s| {
                s.resize(1, 0.0);
                s[0] += r;
            });
            if c.local_barrier() {
                let s = c.with_scratch(std::mem::take);
                c.lock(0);
                *slot += s[0];
                c.unlock(0);
            }
            c.barrier();
        }
    }
    fn result(&self, c: &Ctx) -> Vec<f64> {
        let (go, ro) = self.offs();
        let nn = self.n * self.n;
        let src = if self.iters % 2 == 1 { go } else { 0 };
        // SAFETY: after the final barrier.
        let mut v = unsafe { std::slice::from_raw_parts(c.at::<f64>(src), nn) }.to_vec();
        // SAFETY: as above.
        v.extend_from_slice(unsafe { std::slice::from_raw_parts(c.at::<f64>(ro), self.iters) });
        v
    }
    fn sequential(&self) -> Vec<f64> {
        let n = self.n;
        let mut a: Vec<f64> = (0..n * n).map(|k| init(k / n, k % n, n)).collect();
        let mut b = a.clone();
        let mut res = Vec::new();
        for it in 0..self.iters {
            res.push(if it % 2 == 0 {
                sweep(&a, &mut b, n, 0, n)
            } else {
                sweep(&b, &mut a, n, 0, n)
            });
        }
        let mut v = if self.iters % 2 == 1 { b } else { a };
        v.extend(res);
        v
    }
    fn tolerance(&self) -> f64 {
        // Residuals are summed in lock order.
        1e-9
    }
}
