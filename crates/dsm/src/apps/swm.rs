//! SWM: the shallow-water model (Sadourny's scheme, as in SPEC swim) on a periodic grid:
//! three stencil phases per step separated by barriers; threads own bands of rows.

use super::{pages_for, App};
use crate::Ctx;

/// SWM on an `n × n` periodic grid for `steps` time steps.
#[derive(Debug, Clone)]
pub struct Swm {
    /// Grid points per side.
    pub n: usize,
    /// Time steps.
    pub steps: usize,
}

const ARRAYS: usize = 13;
const U: usize = 0;
const V: usize = 1;
const P: usize = 2;
const UN: usize = 3;
const VN: usize = 4;
const PN: usize = 5;
const UO: usize = 6;
const VO: usize = 7;
const PO: usize = 8;
const CU: usize = 9;
const CV: usize = 10;
const Z: usize = 11;
const H: usize = 12;

struct Grid<'a> {
    a: &'a mut [f64],
    n: usize,
    stride: usize,
}

impl Grid<'_> {
    #[inline]
    fn at(&self, k: usize, i: usize, j: usize) -> f64 {
        let n = self.n;
        self.a[k * self.stride + (i % n) * n + (j % n)]
    }
    #[inline]
    fn set(&mut self, k: usize, i: usize, j: usize, v: f64) {
        let n = self.n;
        self.a[k * self.stride + i * n + j] = v;
    }
}

const DT: f64 = 90.0;
const DX: f64 = 1e5;
const ALPHA: f64 = 0.001;

fn init(g: &mut Grid, lo: usize, hi: usize) {
    let n = g.n;
    let (a, di, dj) = (
        1e6,
        2.0 * std::f64::consts::PI / n as f64,
        2.0 * std::f64::consts::PI / n as f64,
    );
    let psi =
        |i: usize, j: usize| a * ((i as f64 + 0.5) * di).sin() * ((j as f64 + 0.5) * dj).sin();
    for i in lo..hi {
        for j in 0..n {
            let p = 5000.0 * ((2.0 * i as f64 * di).cos() + (2.0 * j as f64 * dj).cos()) + 50000.0;
            let u = -(psi(i, j + 1) - psi(i, j)) / DX;
            let v = (psi(i + 1, j) - psi(i, j)) / DX;
            for (k, x) in [(U, u), (V, v), (P, p), (UO, u), (VO, v), (PO, p)] {
                g.set(k, i, j, x);
            }
        }
    }
}

fn calc1(g: &mut Grid, lo: usize, hi: usize) {
    let n = g.n;
    let fsdx = 4.0 / DX;
    for i in lo..hi {
        for j in 0..n {
            let (im, jm) = (i + n - 1, j + n - 1);
            let cu = 0.5 * (g.at(P, i, j) + g.at(P, im, j)) * g.at(U, i, j);
            let cv = 0.5 * (g.at(P, i, j) + g.at(P, i, jm)) * g.at(V, i, j);
            let z = (fsdx * (g.at(V, i, j) - g.at(V, im, j))
                - fsdx * (g.at(U, i, j) - g.at(U, i, jm)))
                / (g.at(P, im, jm) + g.at(P, i, jm) + g.at(P, i, j) + g.at(P, im, j));
            let h = g.at(P, i, j)
                + 0.25
                    * (g.at(U, i + 1, j).powi(2)
                        + g.at(U, i, j).powi(2)
                        + g.at(V, i, j + 1).powi(2)
                        + g.at(V, i, j).powi(2));
            g.set(CU, i, j, cu);
            g.set(CV, i, j, cv);
            g.set(Z, i, j, z);
            g.set(H, i, j, h);
        }
    }
}

fn calc2(g: &mut Grid, lo: usize, hi: usize, first: bool) {
    let n = g.n;
    let tdt = if first { DT } else { 2.0 * DT };
    let (tdts8, tdtsdx) = (tdt / 8.0, tdt / DX);
    for i in lo..hi {
        for j in 0..n {
            let (im, jm) = (i + n - 1, j + n - 1);
            let un = g.at(UO, i, j)
                + tdts8
                    * (g.at(Z, i, j + 1) + g.at(Z, i, j))
                    * (g.at(CV, i, j + 1) + g.at(CV, im, j + 1) + g.at(CV, im, j) + g.at(CV, i, j))
                - tdtsdx * (g.at(H, i, j) - g.at(H, im, j));
            let vn = g.at(VO, i, j)
                - tdts8
                    * (g.at(Z, i + 1, j) + g.at(Z, i, j))
                    * (g.at(CU, i + 1, j) + g.at(CU, i, j) + g.at(CU, i, jm) + g.at(CU, i + 1, jm))
                - tdtsdx * (g.at(H, i, j) - g.at(H, i, jm));
            let pn = g.at(PO, i, j)
                - tdtsdx * (g.at(CU, i + 1, j) - g.at(CU, i, j))
                - tdtsdx * (g.at(CV, i, j + 1) - g.at(CV, i, j));
            g.set(UN, i, j, un);
            g.set(VN, i, j, vn);
            g.set(PN, i, j, pn);
        }
    }
}

fn calc3(g: &mut Grid, lo: usize, hi: usize) {
    for i in lo..hi {
        for j in 0..g.n {
            for (cur, new, old) in [(U, UN, UO), (V, VN, VO), (P, PN, PO)] {
                let (c, nw, o) = (g.at(cur, i, j), g.at(new, i, j), g.at(old, i, j));
                g.set(old, i, j, c + ALPHA * (nw - 2.0 * c + o));
                g.set(cur, i, j, nw);
            }
        }
    }
}

impl Swm {
    fn stride(&self) -> usize {
        // Each array starts on its own page.
        pages_for(self.n * self.n * 8) * 512
    }
}

impl App for Swm {
    fn name(&self) -> &'static str {
        "swm"
    }
    fn pages(&self) -> usize {
        ARRAYS * self.stride() / 512
    }
    fn run(&self, c: &Ctx) {
        let stride = self.stride();
        // SAFETY: the region holds ARRAYS arrays of `stride` doubles; each phase writes only
        // the thread's own rows and reads neighbours' rows written before a barrier.
        let a = unsafe { std::slice::from_raw_parts_mut(c.at::<f64>(0), ARRAYS * stride) };
        let mut g = Grid {
            a,
            n: self.n,
            stride,
        };
        let (lo, hi) = c.share(self.n);
        init(&mut g, lo, hi);
        c.barrier();
        for s in 0..self.steps {
            calc1(&mut g, lo, hi);
            c.barrier();
            calc2(&mut g, lo, hi, s == 0);
            c.barrier();
            calc3(&mut g, lo, hi);
            c.barrier();
        }
    }
    fn result(&self, c: &Ctx) -> Vec<f64> {
        let st = self.stride();
        let nn = self.n * self.n;
        // SAFETY: after the final barrier.
        let a = unsafe { std::slice::from_raw_parts(c.at::<f64>(0), ARRAYS * st) };
        [U, V, P]
            .iter()
            .flat_map(|&k| a[k * st..k * st + nn].to_vec())
            .collect()
    }
    fn sequential(&self) -> Vec<f64> {
        let st = self.stride();
        let mut v = vec![0.0; ARRAYS * st];
        let mut g = Grid {
            a: &mut v,
            n: self.n,
            stride: st,
        };
        let n = self.n;
        init(&mut g, 0, n);
        for s in 0..self.steps {
            calc1(&mut g, 0, n);
            calc2(&mut g, 0, n, s == 0);
            calc3(&mut g, 0, n);
        }
        let nn = n * n;
        [U, V, P]
            .iter()
            .flat_map(|&k| v[k * st..k * st + nn].to_vec())
            .collect()
    }
}
