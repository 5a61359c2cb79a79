//! Barnes: Barnes-Hut N-body (irregular sharing). As in the seed's version, the octree
//! is built by one thread (a serialised section) in shared memory each step; every thread
//! then walks it to compute its bodies' forces, and updates its own bodies.

use super::{pages_for, App};
use crate::Ctx;

/// Barnes-Hut with `n` bodies for `steps` steps.
#[derive(Debug, Clone)]
pub struct Barnes {
    /// Bodies.
    pub n: usize,
    /// Time steps.
    pub steps: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Cell {
    com: [f64; 3],
    mass: f64,
    center: [f64; 3],
    half: f64,
    /// -1 empty, ≥ 0 a cell, ≤ -2 body (-2 - b).
    child: [i64; 8],
}

const THETA: f64 = 0.6;
const EPS2: f64 = 1e-4;
const DT: f64 = 1e-3;

fn init(b: usize, n: usize) -> [f64; 3] {
    let h = |k: usize| (((b * 2654435761 + k * 40503) % 100003) as f64 / 100003.0) - 0.5;
    let _ = n;
    [h(1), h(2), h(3) * 0.5]
}

fn octant(c: &Cell, p: &[f64]) -> usize {
    (p[0] > c.center[0]) as usize
        | ((p[1] > c.center[1]) as usize) << 1
        | ((p[2] > c.center[2]) as usize) << 2
}

fn sub(c: &Cell, o: usize) -> Cell {
    let h = c.half / 2.0;
    let mut s = Cell {
        half: h,
        child: [-1; 8],
        ..Default::default()
    };
    for a in 0..3 {
        s.center[a] = c.center[a] + if o >> a & 1 == 1 { h } else { -h };
    }
    s
}

/// Build the tree of `pos` into `cells`; returns the number of cells used.
fn build(cells: &mut [Cell], pos: &[f64], n: usize) -> usize {
    let mut half: f64 = 0.0;
    for p in &pos[..3 * n] {
        half = half.max(p.abs());
    }
    cells[0] = Cell {
        half: half * 1.0001 + 1e-9,
        child: [-1; 8],
        ..Default::default()
    };
    let mut used = 1;
    for b in 0..n {
        let p = &pos[3 * b..3 * b + 3];
        let mut c = 0usize;
        for _depth in 0..64 {
            let o = octant(&cells[c], p);
            match cells[c].child[o] {
                -1 => {
                    cells[c].child[o] = -2 - b as i64;
                    break;
                }
                x if x >= 0 => c = x as usize,
                x => {
                    let other = (-2 - x) as usize;
                    assert!(used < cells.len(), "Barnes tree overflow");
                    cells[used] = sub(&cells[c], o);
                    cells[c].child[o] = used as i64;
                    let oo = octant(&cells[used], &pos[3 * other..3 * other + 3]);
                    cells[used].child[oo] = x;
                    c = used;
                    used += 1;
                }
            }
        }
    }
    summarise(cells, pos, 0);
    used
}

fn summarise(cells: &mut [Cell], pos: &[f64], c: usize) {
    let (mut m, mut com) = (0.0, [0.0; 3]);
    for o in 0..8 {
        let x = cells[c].child[o];
        let (bm, bp) = if x >= 0 {
            summarise(cells, pos, x as usize);
            (cells[x as usize].mass, cells[x as usize].com)
        } else if x <= -2 {
            let b = (-2 - x) as usize;
            (1.0, [pos[3 * b], pos[3 * b + 1], pos[3 * b + 2]])
        } else {
            continue;
        };
        m += bm;
        for a in 0..3 {
            com[a] += bm * bp[a];
        }
    }
    cells[c].mass = m;
    cells[c].com = com.map(|v| if m > 0.0 { v / m } else { 0.0 });
}

fn force(cells: &[Cell], pos: &[f64], b: usize, c: usize, acc: &mut [f64; 3]) {
    let p = [pos[3 * b], pos[3 * b + 1], pos[3 * b + 2]];
    for o in 0..8 {
        let x = cells[c].child[o];
        let (m, q, open) = if x >= 0 {
            let s = &cells[x as usize];
            let d2: f64 = (0..3).map(|a| (s.com[a] - p[a]).powi(2)).sum();
            (s.mass, s.com, 4.0 * s.half * s.half > THETA * THETA * d2)
        } else if x <= -2 && (-2 - x) as usize != b {
            let j = (-2 - x) as usize;
            (1.0, [pos[3 * j], pos[3 * j + 1], pos[3 * j + 2]], false)
        } else {
            continue;
        };
        if open {
            force(cells, pos, b, x as usize, acc);
        } else {
            let d = [q[0] - p[0], q[1] - p[1], q[2] - p[2]];
            let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + EPS2;
            let f = m / (r2 * r2.sqrt());
            for a in 0..3 {
                acc[a] += f * d[a];
            }
        }
    }
}

impl Barnes {
    fn offs(&self) -> (usize, usize, usize) {
        let v = pages_for(3 * self.n * 8) * 4096;
        (
            v,
            2 * v,
            2 * v + pages_for(self.max_cells() * std::mem::size_of::<Cell>()) * 4096,
        )
    }
    fn max_cells(&self) -> usize {
        4 * self.n + 64
    }
}

impl App for Barnes {
    fn name(&self) -> &'static str {
        "barnes"
    }
    fn pages(&self) -> usize {
        self.offs().2 / 4096
    }
    fn run(&self, c: &Ctx) {
        let n = self.n;
        let (vo, co, _) = self.offs();
        // SAFETY: positions, velocities and cells are disjoint in the region; the tree is
        // written by one thread between barriers, bodies by their owners.
        let (pos, vel, cells) = unsafe {
            (
                std::slice::from_raw_parts_mut(c.at::<f64>(0), 3 * n),
                std::slice::from_raw_parts_mut(c.at::<f64>(vo), 3 * n),
                std::slice::from_raw_parts_mut(c.at::<Cell>(co), self.max_cells()),
            )
        };
        let (lo, hi) = c.share(n);
        for b in lo..hi {
            pos[3 * b..3 * b + 3].copy_from_slice(&init(b, n));
        }
        c.barrier();
        for _ in 0..self.steps {
            if c.id() == 0 {
                build(cells, pos, n);
            }
            c.barrier();
            let accs: Vec<[f64; 3]> = (lo..hi)
                .map(|b| {
                    let mut a = [0.0; 3];
                    force(cells, pos, b, 0, &mut a);
                    a
                })
                .collect();
            c.barrier();
            for (b, a) in (lo..hi).zip(accs) {
                for k in 0..3 {
                    vel[3 * b + k] += a[k] * DT;
                    pos[3 * b + k] += vel[3 * b + k] * DT;
                }
            }
            c.barrier();
        }
    }
    fn result(&self, c: &Ctx) -> Vec<f64> {
        // SAFETY: after the final barrier.
        unsafe { std::slice::from_raw_parts(c.at::<f64>(0), 3 * self.n) }.to_vec()
    }
    fn sequential(&self) -> Vec<f64> {
        let n = self.n;
        let mut pos: Vec<f64> = (0..n).flat_map(|b| init(b, n)).collect();
        let mut vel = vec![0.0; 3 * n];
        let mut cells = vec![Cell::default(); self.max_cells()];
        for _ in 0..self.steps {
            build(&mut cells, &pos, n);
            let accs: Vec<[f64; 3]> = (0..n)
                .map(|b| {
                    let mut a = [0.0; 3];
                    force(&cells, &pos, b, 0, &mut a);
                    a
                })
                .collect();
            for (b, a) in accs.into_iter().enumerate() {
                for k in 0..3 {
                    vel[3 * b + k] += a[k] * DT;
                    pos[3 * b + k] += vel[3 * b + k] * DT;
                }
            }
        }
        pos
    }
}
