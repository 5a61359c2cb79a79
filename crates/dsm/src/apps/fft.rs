//! FFT: 3-D complex FFT of an n³ array (barriers, a transpose). Each thread transforms its
//! planes in x and y, then, after a barrier, gathers z-lines across every plane (the
//! all-to-all communication) for its rows and writes them transposed into a second array.

use super::{pages_for, App};
use crate::Ctx;

/// FFT of an `n × n × n` complex array (n a power of two).
#[derive(Debug, Clone)]
pub struct Fft {
    /// Points per dimension.
    pub n: usize,
}

fn init(k: usize) -> (f64, f64) {
    (
        ((k * 37) % 97) as f64 / 97.0,
        ((k * 11) % 89) as f64 / 89.0 - 0.5,
    )
}

/// In-place radix-2 FFT of `re`/`im` (interleaved pairs, stride 1).
fn fft1(v: &mut [f64]) {
    let n = v.len() / 2;
    let mut j = 0;
    for i in 1..n {
        let mut bit = n >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            v.swap(2 * i, 2 * j);
            v.swap(2 * i + 1, 2 * j + 1);
        }
    }
    let mut len = 2;
    while len <= n {
        let ang = -2.0 * std::f64::consts::PI / len as f64;
        for s in (0..n).step_by(len) {
            for k in 0..len / 2 {
                let (wr, wi) = ((ang * k as f64).cos(), (ang * k as f64).sin());
                let (a, b) = (s + k, s + k + len / 2);
                let (xr, xi) = (
                    v[2 * b] * wr - v[2 * b + 1] * wi,
                    v[2 * b] * wi + v[2 * b + 1] * wr,
                );
                v[2 * b] = v[2 * a] - xr;
                v[2 * b + 1] = v[2 * a + 1] - xi;
                v[2 * a] += xr;
                v[2 * a + 1] += xi;
            }
        }
        len <<= 1;
    }
}

/// FFT of plane `z` of `a` (A[z][y][x]) along x, then y.
fn plane(a: &mut [f64], n: usize, z: usize) {
    let p = &mut a[z * n * n * 2..(z + 1) * n * n * 2];
    for y in 0..n {
        fft1(&mut p[y * n * 2..(y + 1) * n * 2]);
    }
    let mut col = vec![0.0; 2 * n];
    for x in 0..n {
        for y in 0..n {
            col[2 * y] = p[(y * n + x) * 2];
            col[2 * y + 1] = p[(y * n + x) * 2 + 1];
        }
        fft1(&mut col);
        for y in 0..n {
            p[(y * n + x) * 2] = col[2 * y];
            p[(y * n + x) * 2 + 1] = col[2 * y + 1];
        }
    }
}

/// Row `y`: z-lines of `a` for every x, transformed, into B[y][x][z].
fn zrow(a: &[f64], b: &mut [f64], n: usize, y: usize) {
    let mut line = vec![0.0; 2 * n];
    for x in 0..n {
        for z in 0..n {
            let k = ((z * n + y) * n + x) * 2;
            line[2 * z] = a[k];
            line[2 * z + 1] = a[k + 1];
        }
        fft1(&mut line);
        let o = (y * n + x) * n * 2;
        b[o..o + 2 * n].copy_from_slice(&line);
    }
}

impl App for Fft {
    fn name(&self) -> &'static str {
        "fft"
    }
    fn pages(&self) -> usize {
        2 * pages_for(self.n.pow(3) * 16)
    }
    fn run(&self, c: &Ctx) {
        let n = self.n;
        let len = n.pow(3) * 2;
        let off = pages_for(len * 8) * 4096;
        // SAFETY: A and B are disjoint in the region; threads write their own planes of A,
        // then (after a barrier) read all of A and write their own rows of B.
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts_mut(c.at::<f64>(0), len),
                std::slice::from_raw_parts_mut(c.at::<f64>(off), len),
            )
        };
        let (lo, hi) = c.share(n);
        for k in lo * n * n..hi * n * n {
            (a[2 * k], a[2 * k + 1]) = init(k);
        }
        for z in lo..hi {
            plane(a, n, z);
        }
        c.barrier();
        for y in lo..hi {
            zrow(a, b, n, y);
        }
    }
    fn result(&self, c: &Ctx) -> Vec<f64> {
        let len = self.n.pow(3) * 2;
        let off = pages_for(len * 8) * 4096;
        // SAFETY: after the final barrier.
        unsafe { std::slice::from_raw_parts(c.at::<f64>(off), len) }.to_vec()
    }
    fn sequential(&self) -> Vec<f64> {
        let n = self.n;
        let len = n.pow(3) * 2;
        let mut a = vec![0.0; len];
        for k in 0..n.pow(3) {
            (a[2 * k], a[2 * k + 1]) = init(k);
        }
        for z in 0..n {
            plane(&mut a, n, z);
        }
        let mut b = vec![0.0; len];
        for y in 0..n {
            zrow(&a, &mut b, n, y);
        }
        b
    }
}
