//! The water model of water-nsq: three charged sites a molecule (O, H, H) in a periodic
//! box, the pair interaction over the nine site pairs of two molecules whose oxygens are
//! within the cutoff (nearest image), and flexible bonds inside a molecule.
//!
//! Why three sites and exponentials, not a Lennard-Jones point: Splash-2's
//! WATER-NSQUARED (the seed's WaterNsq) computes each pair of molecules over their
//! sites with Coulomb terms and, near, 13 exponentials. A point-molecule stand-in took
//! 6.7 ms for the paper's 512 molecules × 3 steps on the 2-vCPU development VM, where
//! Splash-3's program (gcc -O2, 1 process) computed for 52–57 ms (5 runs): the
//! stand-in's communication against its compute was not the paper program's. This
//! model takes 42–46 ms there (quiet). The form is the MCY one (charges plus A·e^(−B·r) terms
//! by site kind), its constants chosen for a stable short run, not fitted to water.
//! Splash's cutoff is a quarter of the box, with its pair loop mostly spent on the
//! cutoff test (5 passes over the pairs in 3 steps); here every pair within half the
//! box interacts, in one pass a step, for about the same time.

/// Coordinates of one molecule: O, H1, H2, each x, y, z.
pub const SITES: usize = 9;
/// Distance between neighbouring molecules' oxygens at the start (Å).
const SPACING: f64 = 3.1;
/// Charges (e) of O and H.
const Q: [f64; 2] = [-0.8, 0.4];
/// Masses (u) of O and H.
const MASS: [f64; 2] = [16.0, 1.0];
/// Short-range terms by site kind pair (OO, OH, HH): A, B of a repulsion A·e^(−B·r)
/// and C, D of an attraction −C·e^(−D·r).
const SHORT: [[f64; 4]; 3] = [
    [1100.0, 2.8, 0.0, 1.0],
    [60.0, 3.2, 9.0, 1.9],
    [8.0, 2.6, 0.0, 1.0],
];
/// Bond stiffness inside a molecule (O–H and H–H springs).
const BOND_K: f64 = 500.0;

/// The box side for `n` molecules on a cubic lattice.
pub fn box_side(n: usize) -> f64 {
    (n as f64).cbrt().ceil() * SPACING
}

/// The squared cutoff on the oxygens' distance: half the box (Splash's is a quarter;
/// see the module's note).
fn cutoff2(side: f64) -> f64 {
    (side / 2.0) * (side / 2.0)
}

/// Molecule `i`'s starting sites: its oxygen on a lattice point (jittered), the
/// hydrogens at the bond length in a plane turned by a per-molecule angle.
pub fn init_sites(i: usize, n: usize) -> [f64; SITES] {
    let side = (n as f64).cbrt().ceil() as usize;
    let (x, y, z) = (i % side, (i / side) % side, i / (side * side));
    let jit = |k: usize| ((i * 7919 + k * 104729) % 1000) as f64 * 1e-4;
    let o = [
        x as f64 * SPACING + jit(0),
        y as f64 * SPACING + jit(1),
        z as f64 * SPACING + jit(2),
    ];
    let (a, b) = ((i % 17) as f64 * 0.37, (i % 11) as f64 * 0.53);
    // Bond 0.9572 Å, angle 104.52°: the hydrogens at ±52.26° about an axis.
    let (h, half) = (0.9572, 52.26f64.to_radians());
    let axis = [a.cos() * b.cos(), a.sin() * b.cos(), b.sin()];
    let perp = [-a.sin(), a.cos(), 0.0];
    let mut s = [0.0; SITES];
    s[..3].copy_from_slice(&o);
    for (k, sign) in [(3, 1.0), (6, -1.0)] {
        for d in 0..3 {
            s[k + d] = o[d] + h * (half.cos() * axis[d] + sign * half.sin() * perp[d]);
        }
    }
    s
}

/// Kind (0 = O, 1 = H) of site `s` of a molecule.
fn kind(s: usize) -> usize {
    s.min(1)
}

/// Energy and −(dU/dr)/r of one site pair of kinds `a`, `b` at distance `r`.
#[inline]
fn site_pair(a: usize, b: usize, r2: f64) -> (f64, f64) {
    let r = r2.sqrt();
    let inv = 1.0 / r;
    let qq = Q[a] * Q[b];
    let [ra, rb, ac, ad] = SHORT[a + b];
    let rep = ra * (-rb * r).exp();
    let mut u = qq * inv + rep;
    let mut dudr = -qq * inv * inv - rb * rep;
    if ac != 0.0 {
        let att = ac * (-ad * r).exp();
        u -= att;
        dudr += ad * att;
    }
    (u, -dudr * inv)
}

/// Forces into `f` and the energy of pairs (i, j) for i in `lo..hi`, each i with the
/// n/2 molecules after it (the half shell, as Splash's).
pub fn pairs(pos: &[f64], n: usize, lo: usize, hi: usize, f: &mut [f64]) -> f64 {
    let side = box_side(n);
    let mut e = 0.0;
    for i in lo..hi {
        for k in 1..=n / 2 {
            if n.is_multiple_of(2) && k == n / 2 && i >= n / 2 {
                continue;
            }
            e += pair(pos, f, i, (i + k) % n, side);
        }
    }
    e
}

/// Molecules `i` and `j`: the energy, and the forces added to `f`, over the nine site
/// pairs with j at the nearest image of its oxygen; nothing past the cutoff.
#[inline]
fn pair(pos: &[f64], f: &mut [f64], i: usize, j: usize, side: f64) -> f64 {
    let pi = &pos[SITES * i..SITES * i + SITES];
    let pj = &pos[SITES * j..SITES * j + SITES];
    let mut shift = [0.0; 3];
    let mut r2 = 0.0;
    for d in 0..3 {
        let x = pi[d] - pj[d];
        shift[d] = -(x / side).round() * side;
        r2 += (x + shift[d]) * (x + shift[d]);
    }
    if r2 > cutoff2(side) {
        return 0.0;
    }
    let mut e = 0.0;
    for sa in 0..3 {
        for sb in 0..3 {
            let mut dv = [0.0; 3];
            let mut r2 = 0.0;
            for d in 0..3 {
                dv[d] = pi[3 * sa + d] - pj[3 * sb + d] + shift[d];
                r2 += dv[d] * dv[d];
            }
            let (u, g) = site_pair(kind(sa), kind(sb), r2);
            e += u;
            for d in 0..3 {
                f[SITES * i + 3 * sa + d] += g * dv[d];
                f[SITES * j + 3 * sb + d] -= g * dv[d];
            }
        }
    }
    e
}

/// Add one molecule's bond forces (springs O–H1, O–H2, H1–H2 at their lengths in
/// `rest`) to `f`, its nine force components.
pub fn bonds(sites: &[f64], rest: &[f64], f: &mut [f64]) {
    for (a, b) in [(0, 1), (0, 2), (1, 2)] {
        let (len, len0) = (dist(sites, a, b), dist(rest, a, b));
        let g = -BOND_K * (len - len0) / len;
        for d in 0..3 {
            let x = sites[3 * a + d] - sites[3 * b + d];
            f[3 * a + d] += g * x;
            f[3 * b + d] -= g * x;
        }
    }
}

fn dist(s: &[f64], a: usize, b: usize) -> f64 {
    (0..3)
        .map(|d| (s[3 * a + d] - s[3 * b + d]).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// One Euler step of one molecule (its nine coordinates in `pos`, `vel`, `f`).
pub fn advance(pos: &mut [f64], vel: &mut [f64], f: &[f64], dt: f64) {
    for (c, ((x, v), g)) in pos.iter_mut().zip(vel.iter_mut()).zip(f).enumerate() {
        *v += g / MASS[kind(c / 3)] * dt;
        *x += *v * dt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_pulls_and_pushes_equally() {
        // Newton's third law over the nine site pairs: the forces on two molecules sum
        // to zero, and a molecule never acts on itself.
        let n = 8;
        let pos: Vec<f64> = (0..n).flat_map(|i| init_sites(i, n)).collect();
        let mut f = vec![0.0; SITES * n];
        let e = pairs(&pos, n, 0, n, &mut f);
        assert!(e.is_finite() && e != 0.0);
        for d in 0..3 {
            let total: f64 = (0..3 * n).map(|s| f[3 * s + d]).sum();
            let scale: f64 = (0..3 * n).map(|s| f[3 * s + d].abs()).sum();
            assert!(total.abs() <= 1e-9 * scale, "net force {total} of {scale}");
        }
    }

    #[test]
    fn bonds_at_rest_length_exert_nothing() {
        let s = init_sites(5, 64);
        let mut f = [0.0; SITES];
        bonds(&s, &s, &mut f);
        assert!(f.iter().all(|x| x.abs() < 1e-12), "{f:?}");
        let mut stretched = s;
        stretched[3] += 0.1;
        bonds(&stretched, &s, &mut f);
        assert!(f[3] < 0.0 && f[0] > 0.0, "{f:?}");
    }

    #[test]
    fn the_half_shell_visits_each_pair_once() {
        // Every unordered pair once, whether n is odd or even: the half shell's energy
        // and forces equal a plain double loop over i < j.
        for n in [27, 64] {
            let pos: Vec<f64> = (0..n).flat_map(|i| init_sites(i, n)).collect();
            let mut f = vec![0.0; SITES * n];
            let shell = pairs(&pos, n, 0, n, &mut f);
            let mut g = vec![0.0; SITES * n];
            let mut all = 0.0;
            for i in 0..n {
                for j in i + 1..n {
                    all += pair(&pos, &mut g, i, j, box_side(n));
                }
            }
            assert!(
                (shell - all).abs() <= 1e-9 * all.abs(),
                "{shell} against {all}"
            );
            for (a, b) in f.iter().zip(&g) {
                assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "{a} against {b}");
            }
        }
    }
}
