//! WaterNsq: O(N²) molecular dynamics (locks for reductions). Pair forces use a
//! Lennard-Jones potential on point molecules; each thread sums its pairs privately, the
//! rank's threads merge through a local barrier, and one thread per rank adds the rank's
//! sums into the shared forces under one lock per block of molecules (the seed's
//! per-node reduction).

use super::{pages_for, App};
use crate::Ctx;

/// WaterNsq with `n` molecules for `steps` time steps.
#[derive(Debug, Clone)]
pub struct Water {
    /// Molecules.
    pub n: usize,
    /// Time steps.
    pub steps: usize,
}

const BLOCKS: usize = 8;
const DT: f64 = 1e-3;

fn init_pos(i: usize, n: usize) -> [f64; 3] {
    let side = (n as f64).cbrt().ceil() as usize;
    let (x, y, z) = (i % side, (i / side) % side, i / (side * side));
    let jit = |k: usize| ((i * 7919 + k * 104729) % 1000) as f64 * 1e-4;
    [
        x as f64 * 1.2 + jit(0),
        y as f64 * 1.2 + jit(1),
        z as f64 * 1.2 + jit(2),
    ]
}

/// Forces and energy of pairs (i, j) for i in `lo..hi`, half shell as in Splash.
fn pairs(pos: &[f64], n: usize, lo: usize, hi: usize, f: &mut [f64]) -> f64 {
    let mut e = 0.0;
    for i in lo..hi {
        for k in 1..=n / 2 {
            if n.is_multiple_of(2) && k == n / 2 && i >= n / 2 {
                continue;
            }
            let j = (i + k) % n;
            let d = [
                pos[3 * i] - pos[3 * j],
                pos[3 * i + 1] - pos[3 * j + 1],
                pos[3 * i + 2] - pos[3 * j + 2],
            ];
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            let s6 = 1.0 / (r2 * r2 * r2);
            e += 4.0 * (s6 * s6 - s6);
            let g = 24.0 * (2.0 * s6 * s6 - s6) / r2;
            for a in 0..3 {
                f[3 * i + a] += g * d[a];
                f[3 * j + a] -= g * d[a];
            }
        }
    }
    e
}

impl Water {
    fn layout(&self) -> (usize, usize, usize, usize) {
        let v = self.n * 3 * 8;
        // pos, vel, force, energy: each on its own pages.
        let p = pages_for(v) * 4096;
        (0, p, 2 * p, 3 * p)
    }
}

impl App for Water {
    fn name(&self) -> &'static str {
        "water-nsq"
    }
    fn pages(&self) -> usize {
        self.layout().3 / 4096 + 1
    }
    fn locks(&self) -> usize {
        BLOCKS + 1
    }
    fn run(&self, c: &Ctx) {
        let n = self.n;
        let (po, vo, fo, eo) = self.layout();
        // SAFETY: disjoint arrays inside the region; writes are to owned molecules between
        // barriers, or under the block's lock.
        let (pos, vel, force, energy) = unsafe {
            (
                std::slice::from_raw_parts_mut(c.at::<f64>(po), 3 * n),
                std::slice::from_raw_parts_mut(c.at::<f64>(vo), 3 * n),
                std::slice::from_raw_parts_mut(c.at::<f64>(fo), 3 * n),
                &mut *c.at::<f64>(eo),
            )
        };
        let (lo, hi) = c.share(n);
        for i in lo..hi {
            pos[3 * i..3 * i + 3].copy_from_slice(&init_pos(i, n));
        }
        c.barrier();
        for step in 0..self.steps {
            // The forces and the energy are zero here: the region starts zeroed, and each
            // step's update zeroes them (no barrier of their own, which cost every step
            // an interval and a round trip).
            let mut f = vec![0.0; 3 * n];
            let e = pairs(pos, n, lo, hi, &mut f);
            c.with_scratch(|s| {
                s.resize(3 * n + 1, 0.0);
                for (a, b) in s.iter_mut().zip(&f) {
                    *a += b;
                }
                s[3 * n] += e;
            });
            if c.local_barrier() {
                let s = c.with_scratch(std::mem::take);
                for b in 0..BLOCKS {
                    let (blo, bhi) = (n * b / BLOCKS, n * (b + 1) / BLOCKS);
                    c.lock(b);
                    for k in 3 * blo..3 * bhi {
                        force[k] += s[k];
                    }
                    c.unlock(b);
                }
                c.lock(BLOCKS);
                *energy += s[3 * n];
                c.unlock(BLOCKS);
            }
            c.barrier();
            for k in 3 * lo..3 * hi {
                vel[k] += force[k] * DT;
                pos[k] += vel[k] * DT;
                force[k] = 0.0;
            }
            // The last step's energy is the result.
            if c.id() == 0 && step + 1 < self.steps {
                *energy = 0.0;
            }
            c.barrier();
        }
    }
    fn result(&self, c: &Ctx) -> Vec<f64> {
        let (po, _, _, eo) = self.layout();
        // SAFETY: as in run, after the final barrier.
        let mut r = unsafe { std::slice::from_raw_parts(c.at::<f64>(po), 3 * self.n) }.to_vec();
        // SAFETY: as above.
        r.push(unsafe { *c.at::<f64>(eo) });
        r
    }
    fn sequential(&self) -> Vec<f64> {
        let n = self.n;
        let mut pos: Vec<f64> = (0..n).flat_map(|i| init_pos(i, n)).collect();
        let mut vel = vec![0.0; 3 * n];
        let mut e = 0.0;
        for _ in 0..self.steps {
            let mut f = vec![0.0; 3 * n];
            e = pairs(&pos, n, 0, n, &mut f);
            for k in 0..3 * n {
                vel[k] += f[k] * DT;
                pos[k] += vel[k] * DT;
            }
        }
        pos.push(e);
        pos
    }
    fn tolerance(&self) -> f64 {
        // Sums are merged in lock order, not the sequential order.
        1e-9
    }
}
