//! WaterNsq: O(N²) molecular dynamics (locks for reductions). Pair forces are those of
//! three-site water molecules ([`super::water_model`]); each thread sums its pairs privately, the
//! rank's threads merge through a local barrier, and one thread per rank adds the rank's
//! sums into the shared forces under one lock per block of molecules (the seed's
//! per-node reduction).

use super::water_model::{advance, bonds, init_sites, pairs, SITES};
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

/// Molecule `i`'s bond forces added to its summed pair forces, one step of it, and its
/// force zeroed for the next step's sums.
fn move_molecule(pos: &mut [f64], vel: &mut [f64], force: &mut [f64], i: usize, n: usize) {
    let m = SITES * i..SITES * (i + 1);
    bonds(&pos[m.clone()], &init_sites(i, n), &mut force[m.clone()]);
    advance(
        &mut pos[m.clone()],
        &mut vel[m.clone()],
        &force[m.clone()],
        DT,
    );
    force[m].fill(0.0);
}

impl Water {
    fn layout(&self) -> (usize, usize, usize, usize) {
        let v = self.n * SITES * 8;
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
                std::slice::from_raw_parts_mut(c.at::<f64>(po), SITES * n),
                std::slice::from_raw_parts_mut(c.at::<f64>(vo), SITES * n),
                std::slice::from_raw_parts_mut(c.at::<f64>(fo), SITES * n),
                &mut *c.at::<f64>(eo),
            )
        };
        let (lo, hi) = c.share(n);
        for i in lo..hi {
            pos[SITES * i..SITES * (i + 1)].copy_from_slice(&init_sites(i, n));
        }
        c.barrier();
        for step in 0..self.steps {
            // The forces and the energy are zero here: the region starts zeroed, and each
            // step's update zeroes them (no barrier of their own, which cost every step
            // an interval and a round trip).
            let mut f = vec![0.0; SITES * n];
            let e = pairs(pos, n, lo, hi, &mut f);
            c.with_scratch(|s| {
                s.resize(SITES * n + 1, 0.0);
                for (a, b) in s.iter_mut().zip(&f) {
                    *a += b;
                }
                s[SITES * n] += e;
            });
            if c.local_barrier() {
                let s = c.with_scratch(std::mem::take);
                for b in 0..BLOCKS {
                    let (blo, bhi) = (n * b / BLOCKS, n * (b + 1) / BLOCKS);
                    c.lock(b);
                    for k in SITES * blo..SITES * bhi {
                        force[k] += s[k];
                    }
                    c.unlock(b);
                }
                c.lock(BLOCKS);
                *energy += s[SITES * n];
                c.unlock(BLOCKS);
            }
            c.barrier();
            for i in lo..hi {
                move_molecule(pos, vel, force, i, n);
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
        let mut r = unsafe { std::slice::from_raw_parts(c.at::<f64>(po), SITES * self.n) }.to_vec();
        // SAFETY: as above.
        r.push(unsafe { *c.at::<f64>(eo) });
        r
    }
    fn sequential(&self) -> Vec<f64> {
        let n = self.n;
        let mut pos: Vec<f64> = (0..n).flat_map(|i| init_sites(i, n)).collect();
        let mut vel = vec![0.0; SITES * n];
        let mut e = 0.0;
        for _ in 0..self.steps {
            let mut f = vec![0.0; SITES * n];
            e = pairs(&pos, n, 0, n, &mut f);
            for i in 0..n {
                move_molecule(&mut pos, &mut vel, &mut f, i, n);
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
