//! The run-time mix path: an R:W mix with no specialised driver (e.g. 5:3, 2:2).
//!
//! It walked the streams once per line (the stream loop's bound, each buffer's
//! pointer and the store kind tested again for every line) and on a 2-vCPU EPYC VM
//! (AVX2, loaded, 256 KiB in L2) read 2:2 at 0.68× and 5:3 at 0.86× of what this
//! path reads; 2:2 was 0.88× of the specialised 1:1. Here every stream does its
//! eight lines of a block in turn and the store kind is a constant of the loop. On
//! that VM, medians of 7 interleaved runs in L2: 2:2, 4:2, 6:2 and 2:0 read 0.98,
//! 0.99, 0.99 and 0.98× of the specialised 1:1, 2:1, 3:1 and 1:0; 0:2 read 0.83× of
//! 0:1. In memory (256 MiB, 5 pairs) each read 1.03–1.40× of its pair, with
//! run-to-run spread larger than that.

use super::{put, walk, Isa, Lines, Walk, LINE};
use crate::mix::{Mix, MAX_STREAMS};
use seq_macro::seq;

/// Every stream's eight lines of a block in turn: the stream loop runs once per block
/// and stream, not once per line, and its body is eight loads or stores at constant
/// offsets from the stream's pointer.
struct Runs<'a, I: Isa, const NT: bool> {
    reads: &'a [*mut u8],
    writes: &'a [*mut u8],
    accs: [I::V; 4],
}

impl<I: Isa, const NT: bool> Lines for Runs<'_, I, NT> {
    #[inline(always)]
    unsafe fn line(&mut self, at: usize, l: usize) {
        let v = I::splat(at as i64);
        for &b in self.reads {
            self.accs[0] = I::load_xor(self.accs[0], b.add(l * LINE));
        }
        for &b in self.writes {
            put::<I>(NT, b.add(l * LINE), v);
        }
    }

    #[inline(always)]
    #[allow(clippy::identity_op, clippy::erasing_op)]
    unsafe fn block(&mut self, at: usize) {
        let v = I::splat(at as i64);
        let o = at * LINE;
        for &b in self.reads {
            let p = b.add(o);
            seq!(K in 0..8 {
                self.accs[K % 4] = I::load_xor(self.accs[K % 4], p.add(K * LINE));
            });
        }
        for &b in self.writes {
            let p = b.add(o);
            seq!(K in 0..8 {
                put::<I>(NT, p.add(K * LINE), v);
            });
        }
    }
}

#[inline(always)]
unsafe fn drive_runs<I: Isa, const NT: bool>(m: Mix, w: &Walk) -> u64 {
    let mut local = [std::ptr::null_mut(); MAX_STREAMS as usize];
    local[..w.bufs.len()].copy_from_slice(w.bufs);
    let (reads, writes) = local[..w.bufs.len()].split_at(m.reads as usize);
    let mut op = Runs::<I, NT> {
        reads,
        writes,
        accs: [I::zero(); 4],
    };
    let done = walk(w, &mut op);
    for a in op.accs {
        std::hint::black_box(I::fold(a));
    }
    done
}

/// Run mix `m` over `w`, its store kind a constant of the loop.
#[inline(always)]
pub(super) unsafe fn drive<I: Isa>(m: Mix, nt: bool, w: &Walk) -> u64 {
    if nt {
        drive_runs::<I, true>(m, w)
    } else {
        drive_runs::<I, false>(m, w)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{drive_rw, run, MixKernel, Scalar, Walk, BLOCK_LINES, LINE};
    use super::*;
    use crate::mix::Store;

    /// `n` 64-byte aligned buffers of `lines` lines, buffer i's words all `i + 100`.
    fn buffers(n: usize, lines: usize) -> Vec<Vec<u64>> {
        (0..n).map(|i| vec![i as u64 + 100; lines * 8]).collect()
    }

    /// The buffers' 64-byte aligned starts (a `Vec<u64>` is 8-byte aligned: the
    /// vectors carry a spare line).
    fn starts(b: &mut [Vec<u64>]) -> Vec<*mut u8> {
        b.iter_mut()
            .map(|v| {
                let p = v.as_mut_ptr() as *mut u8;
                // SAFETY: within the vector, which has a spare line.
                unsafe { p.add(p.align_offset(LINE)) }
            })
            .collect()
    }

    /// The `lines` lines at `p` inside `v`.
    fn window(v: &[u64], p: *const u8, lines: usize) -> &[u64] {
        let off = (p as usize - v.as_ptr() as usize) / 8;
        &v[off..off + lines * 8]
    }

    fn walk_of(bufs: &[*mut u8], lines: usize, reps: usize) -> Walk<'_> {
        Walk {
            bufs,
            lines,
            reps,
            stop: None,
        }
    }

    #[test]
    fn a_run_time_mix_writes_what_the_specialised_one_writes() {
        // Lines past the last whole block take the per-line tail.
        let lines = 5 * BLOCK_LINES + 5;
        type Spec = unsafe fn(bool, &Walk) -> u64;
        let mix = |reads, writes| Mix { reads, writes };
        let cases: [(Mix, Spec); 5] = [
            (mix(1, 0), drive_rw::<Scalar, 1, 0>),
            (mix(0, 1), drive_rw::<Scalar, 0, 1>),
            (mix(1, 1), drive_rw::<Scalar, 1, 1>),
            (mix(2, 1), drive_rw::<Scalar, 2, 1>),
            (mix(3, 1), drive_rw::<Scalar, 3, 1>),
        ];
        for (m, spec) in cases {
            for nt in [false, true] {
                let n = m.streams() as usize;
                let (mut a, mut b) = (buffers(n, lines + 1), buffers(n, lines + 1));
                let (pa, pb) = (starts(&mut a), starts(&mut b));
                // SAFETY: separate aligned buffers of `lines` lines each.
                let (sa, sb) = unsafe {
                    (
                        spec(nt, &walk_of(&pa, lines, 2)),
                        drive::<Scalar>(m, nt, &walk_of(&pb, lines, 2)),
                    )
                };
                assert_eq!(
                    (sa, sb),
                    (2 * lines as u64, 2 * lines as u64),
                    "{m} nt {nt}"
                );
                for i in 0..n {
                    let (x, y) = (window(&a[i], pa[i], lines), window(&b[i], pb[i], lines));
                    assert_eq!(x, y, "{m} nt {nt} buffer {i}");
                }
            }
        }
    }

    /// Every line of a write buffer holds its block's first line number; read
    /// buffers keep what they held.
    fn check_lines(m: Mix, b: &[Vec<u64>], p: &[*mut u8], lines: usize) {
        for (i, (v, &s)) in b.iter().zip(p).enumerate() {
            for (l, line) in window(v, s, lines).chunks(8).enumerate() {
                let want = if i < m.reads as usize {
                    i as u64 + 100
                } else {
                    (l - l % BLOCK_LINES) as u64
                };
                assert!(line.iter().all(|&w| w == want), "{m} buffer {i} line {l}");
            }
        }
    }

    #[test]
    fn every_write_stream_of_a_run_time_mix_gets_every_line_at_every_width() {
        let lines = 7 * BLOCK_LINES + 3;
        for (mix, store) in [
            ("5:3", Store::Regular),
            ("4:3", Store::Nt),
            ("0:3", Store::Nt),
        ] {
            let k = MixKernel::parse(mix).unwrap();
            let mut b = buffers(k.buffers(), lines + 1);
            let p = starts(&mut b);
            // SAFETY: separate aligned buffers of `lines` lines each.
            let steps = unsafe { run(k, store, &p, lines, 3, None) };
            assert_eq!(steps, 3 * lines as u64, "{mix}");
            check_lines(k.mix(), &b, &p, lines);
            #[cfg(target_arch = "x86_64")]
            {
                let mut b = buffers(k.buffers(), lines + 1);
                let p = starts(&mut b);
                let w = walk_of(&p, lines, 1);
                // SAFETY: as above; SSE2 is in every x86-64.
                let steps = unsafe { super::super::x86::drive128(k, store == Store::Nt, w) };
                assert_eq!(steps, lines as u64);
                check_lines(k.mix(), &b, &p, lines);
            }
        }
    }
}
